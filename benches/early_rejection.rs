//! Early rejection (`ZstdParams::early_rejection`): what the probe costs and saves, on the
//! bench's 4 KiB pages compressed into a one-page destination (zswap's case), with it off and
//! on, by instructions:
//!
//! ```sh
//! cargo bench --bench early_rejection --no-run       # names target/release/deps/early_rejection-<hash>
//! ACOMP_CALLGRIND=on/random valgrind --tool=callgrind --toggle-collect='*callgrind_loop*' \
//!     target/release/deps/early_rejection-<hash>       # "Collected" / ACOMP_CALLGRIND_N
//! ```
//!
//! Without `ACOMP_CALLGRIND` it prints, for each page, the outcome with rejection off and
//! on, and the median time of each (a quick look; the instruction counts are the measure).

use std::hint::black_box;
use std::time::Instant;

use acomp::{Acomp, ZstdParams};

use acomp_pages::PAGE_SIZE as PAGE;
use acomp_pages::kinds as pages;

fn transform(on: bool) -> Acomp {
    Acomp::with_zstd(ZstdParams::default().early_rejection(on)).expect("zstd transform")
}

/// `n` compressions of `page` into a one-page destination; the code callgrind counts.
#[inline(never)]
fn callgrind_loop(tfm: &Acomp, page: &[u8], dst: &mut [u8], n: u64) {
    for _ in 0..n {
        let _ = black_box(tfm.compress_to_buffer(black_box(page), dst));
    }
}

fn main() {
    let pages = pages::pages();
    let mut dst = vec![0u8; PAGE];
    if let Ok(spec) = std::env::var("ACOMP_CALLGRIND") {
        let (mode, kind) = spec.split_once('/').expect("ACOMP_CALLGRIND=on|off/<page>");
        let n = std::env::var("ACOMP_CALLGRIND_N").map_or(10_000, |v| v.parse().expect("N"));
        let tfm = transform(mode == "on");
        let page = &pages
            .iter()
            .find(|(k, _)| *k == kind)
            .expect("a page kind")
            .1;
        // Warm-up outside the collected function: the workspace's first use, caches.
        for _ in 0..100 {
            let _ = black_box(tfm.compress_to_buffer(black_box(page), &mut dst));
        }
        callgrind_loop(&tfm, page, &mut dst, n);
        return;
    }
    if std::env::args().all(|a| a != "--bench") {
        return; // `cargo test` runs benches as tests: nothing to time there
    }
    println!("| page | off: outcome | on: outcome | off (ns) | on (ns) |");
    println!("|---|---|---|---:|---:|");
    for (kind, page) in &pages {
        let mut row = format!("| {kind} |");
        let mut times = Vec::new();
        for on in [false, true] {
            let tfm = transform(on);
            let outcome = match tfm.compress_to_buffer(page, &mut dst) {
                Ok(n) => format!("{n} bytes"),
                Err(e) => e.to_string(),
            };
            row += &format!(" {outcome} |");
            let mut samples: Vec<f64> = (0..301)
                .map(|_| {
                    let t = Instant::now();
                    callgrind_loop(&tfm, page, &mut dst, 20);
                    t.elapsed().as_nanos() as f64 / 20.0
                })
                .collect();
            samples.sort_by(f64::total_cmp);
            times.push(samples[150]);
        }
        println!("{row} {:.0} | {:.0} |", times[0], times[1]);
    }
}
