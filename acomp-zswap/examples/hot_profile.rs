//! The main job's recompression row's hot loads (issue 51), with the plain tier's beside
//! them: a file of pages stored in two tiers (lz4, no budget, a store a page, as the row
//! stores them), one with idle recompression (zstd at `LEVEL`, no dictionary, in units of
//! `UNIT_PAGES`); there every page is marked idle, one in ten loaded (hot), the rest
//! recompressed (`recompress_idle`, which compacts). Then passes over the hot pages in order,
//! the recompressed tier's first, as the row loads them right after the pass; each load timed
//! alone and its page checked, as the row does. Each pass prints its time per page on each
//! tier (the loads' wall clock, and the thread's CPU time over the whole pass, checks
//! included: what a busy machine's other work does not inflate) and their ratio; the first also the system's TLB shootdowns during it
//! (`/proc/interrupts`) and the backing pages the arena's thread gave back during it.
//!
//! ```sh
//! target/release/examples/zswap --pid PID --threads 1 --save-pages pages.raw  # ^C once saved
//! cargo build --release -p acomp-zswap --example hot_profile
//! target/release/examples/hot_profile pages.raw 9 1 3      # zstd level, unit pages, passes
//! HOT_SLEEP_MS=2000 target/release/examples/hot_profile pages.raw 9 64 3
//! ```
//!
//! `HOT_SLEEP_MS`: a pause between the pass and the loads; `HOT_NO_THREAD`: the recompressed
//! tier without the arena's thread (`Builder::arena_thread(false)`).
//!
//! Built as an example of the crate, the tier has its `test-hooks` feature on (the crate's
//! dev-dependency on itself): a load reads the hook's lock once, which a user's build does not.

use std::time::{Duration, Instant};

use acomp::{Acomp, ZstdParams};
use acomp_zswap::{PAGE_SIZE, Page, Zswap};

const USAGE: &str = "usage: hot_profile PAGES_FILE LEVEL UNIT_PAGES [PASSES]";
/// One page in this many is hot, as the main job's `HOT_EVERY`.
const HOT_EVERY: usize = 10;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let path = args.next().ok_or(USAGE)?;
    let level: i32 = args.next().ok_or(USAGE)?.parse()?;
    let unit: usize = args.next().ok_or(USAGE)?.parse()?;
    let passes: usize = args.next().map_or(Ok(3), |s| s.parse())?;
    let bytes = std::fs::read(&path).map_err(|e| format!("{path}: {e}"))?;
    let pages: Vec<&Page> = bytes
        .chunks_exact(PAGE_SIZE)
        .map(|c| c.try_into().expect("a page-sized chunk"))
        .collect();
    let n = pages.len();
    let hot: Vec<u64> = (0..n as u64).step_by(HOT_EVERY).collect();
    let plain = Zswap::builder(Acomp::new("lz4")?)
        .max_pool_bytes(u64::MAX)
        .build()?;
    let recomp = Zswap::builder(Acomp::new("lz4")?)
        .max_pool_bytes(u64::MAX)
        .recompress(Acomp::with_zstd(ZstdParams::default().level(level))?)
        .recompress_unit_pages(unit)
        .arena_thread(std::env::var_os("HOT_NO_THREAD").is_none())
        .build()?;
    let mut out = [0u8; PAGE_SIZE];
    for tier in [&plain, &recomp] {
        for (i, p) in (0..).zip(&pages) {
            tier.store(i, p)?;
        }
    }
    recomp.mark_idle();
    for &i in &hot {
        recomp.load(i, &mut out)?;
    }
    let t = Instant::now();
    recomp.recompress_idle(usize::MAX);
    let pass_s = t.elapsed().as_secs_f64();
    if let Some(ms) = std::env::var_os("HOT_SLEEP_MS") {
        let ms: u64 = ms.to_str().unwrap_or("0").parse()?;
        std::thread::sleep(Duration::from_millis(ms));
    }
    let released = recomp.pool_stats().released_pages;
    for pass in 0..passes {
        let mut line = format!("pass {pass}");
        let mut ns = [0.0; 2];
        for (k, name, tier) in [(1, "recomp", &recomp), (0, "plain", &plain)] {
            let tlb = tlb_shootdowns();
            let cpu = thread_cpu_ns();
            let mut total = 0u128;
            for &i in &hot {
                let want = pages[i as usize];
                out[0] = !want[0];
                let start = Instant::now();
                tier.load(i, &mut out)?;
                total += start.elapsed().as_nanos();
                assert!(out == *want, "page {i} came back changed");
            }
            let cpu = (thread_cpu_ns() - cpu) as f64 / hot.len() as f64;
            ns[k] = total as f64 / hot.len() as f64;
            line += &format!(" {name} {:.1} ns/page (CPU {cpu:.1})", ns[k]);
            if pass == 0 {
                line += &format!(" ({} TLB shootdowns)", tlb_shootdowns() - tlb);
            }
        }
        line += &format!(" recomp/plain {:.3}", ns[1] / ns[0]);
        if pass == 0 {
            line += &format!(
                " (pages given back during it {}, before it {released})",
                recomp.pool_stats().released_pages - released
            );
        }
        println!("{line}");
    }
    let s = recomp.stats();
    let split = |z: &Zswap| hot.iter().filter(|&&i| z.straddles(i)).count();
    eprintln!(
        "{n} pages, {} hot; {} recompressed in {pass_s:.1} s; pool {} bytes (plain {}); \
         hot pages in two fragments {} (plain {})",
        hot.len(),
        s.recompressed_pages,
        s.pool_total_size,
        plain.stats().pool_total_size,
        split(&recomp),
        split(&plain)
    );
    Ok(())
}

/// The system's TLB shootdowns so far, over every CPU (`/proc/interrupts`' `TLB` line).
fn tlb_shootdowns() -> u64 {
    let text = std::fs::read_to_string("/proc/interrupts").unwrap_or_default();
    text.lines()
        .find(|l| l.trim_start().starts_with("TLB:"))
        .map_or(0, |l| {
            l.split_whitespace()
                .skip(1)
                .map_while(|w| w.parse::<u64>().ok())
                .sum()
        })
}

/// This thread's CPU time, in nanoseconds (`CLOCK_THREAD_CPUTIME_ID`).
fn thread_cpu_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid `timespec` to write; the clock id is one every Linux has.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}
