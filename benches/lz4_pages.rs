//! lz4 decoding of many distinct pages, one after the other, as a swap layer's loads meet
//! them: acomp's one-shot path and its block decoder beside liblz4's `LZ4_decompress_safe`,
//! on the same blocks (acomp's lz4 transform writes them, acceleration 1).
//!
//! `acomp_4k` decodes one page over and over, so the branch predictor learns that page's
//! sequences; here every page is new to it, as in a real load pass. Criterion's time is
//! for the whole pass over the pages: divide by the page count printed first.
//!
//! ```text
//! cargo bench --bench lz4_pages                           # pages of this bench's executable
//! ACOMP_PAGES=heap.pages cargo bench --bench lz4_pages    # or of any file, e.g. one written by
//! cargo run --release --example zswap -- --pid PID --save-pages heap.pages
//! ACOMP_PAGES=heap.pages ACOMP_INTERLEAVED=31 cargo bench --bench lz4_pages   # interleaved
//! ```
//!
//! `ACOMP_PAGES_MAX` (default 20,000) bounds the pages taken from the front of the file;
//! all-zero pages are skipped (a swap layer keeps them as same-filled, without lz4).
//!
//! `ACOMP_INTERLEAVED=ROUNDS` runs the variants interleaved instead of criterion: ROUNDS
//! rounds of one pass each, in an order that turns every round, so that a change of load
//! on a shared machine falls on all of them; it prints each variant's median ns per page
//! and the median of the per-round ratios to liblz4, with their spread.

use std::hint::black_box;
use std::io::{IoSlice, IoSliceMut};
use std::time::Instant;

use acomp::Acomp;
use criterion::{Criterion, Throughput};

use acomp_pages::PAGE_SIZE as PAGE;
use acomp_pages::file as page_file;

/// A variant: its name and its decode of one block into a page, returning the bytes written.
type Variant<'a> = (&'static str, &'a dyn Fn(&[u8], &mut [u8]) -> usize);

fn main() {
    let (path, bytes) = page_file::read();
    let max = page_file::max_pages(20_000);
    let tfm = Acomp::new("lz4").expect("acomp lz4 transform");
    let blocks: Vec<Vec<u8>> = bytes
        .chunks_exact(PAGE)
        .filter(|p| p.iter().any(|&b| b != 0))
        .take(max)
        .map(|p| {
            let mut b = vec![0; PAGE + PAGE / 255 + 16];
            let n = tfm.compress_to_buffer(p, &mut b).expect("lz4 compression");
            b.truncate(n);
            b
        })
        .collect();
    assert!(!blocks.is_empty(), "{path}: no non-zero page");
    let stored: usize = blocks.iter().map(Vec::len).sum();
    println!(
        "{} pages of {path}, {stored} bytes of lz4 blocks ({:.2}x)",
        blocks.len(),
        (blocks.len() * PAGE) as f64 / stored as f64
    );
    let mut out = vec![0u8; PAGE];
    let one_shot = |blk: &[u8], out: &mut [u8]| {
        tfm.decompress(&[IoSlice::new(blk)], &mut [IoSliceMut::new(out)])
            .expect("a block acomp wrote")
    };
    let decoder = |blk: &[u8], out: &mut [u8]| {
        acomp::lz4::decompress_block(blk, out).expect("a block acomp wrote")
    };
    let liblz4 = |blk: &[u8], out: &mut [u8]| {
        // SAFETY: `blk` and `out` are valid for their lengths, which fit an i32.
        let n = unsafe {
            lz4_sys::LZ4_decompress_safe(
                blk.as_ptr().cast(),
                out.as_mut_ptr().cast(),
                blk.len() as i32,
                out.len() as i32,
            )
        };
        assert_eq!(n, PAGE as i32, "LZ4_decompress_safe");
        PAGE
    };
    let variants: [Variant<'_>; 3] = [
        ("acomp-one-shot", &one_shot),
        ("acomp-decoder", &decoder),
        ("liblz4", &liblz4),
    ];
    if let Some(rounds) = std::env::var("ACOMP_INTERLEAVED")
        .ok()
        .and_then(|r| r.parse::<usize>().ok())
    {
        interleaved(&variants, &blocks, &mut out, rounds.max(1));
        return;
    }
    let mut c = Criterion::default().configure_from_args();
    let mut g = c.benchmark_group("lz4-decode-pages");
    g.throughput(Throughput::Elements(blocks.len() as u64));
    for (name, decode) in variants {
        g.bench_function(name, |b| {
            b.iter(|| {
                for blk in &blocks {
                    black_box(decode(blk, &mut out));
                }
            });
        });
    }
    g.finish();
    c.final_summary();
}

/// `rounds` rounds of one pass of each variant over `blocks`, the order turned each round;
/// prints the medians (ns per page) and the per-round ratios to the last variant.
fn interleaved(variants: &[Variant<'_>], blocks: &[Vec<u8>], out: &mut [u8], rounds: usize) {
    let k = variants.len();
    let mut ns = vec![Vec::with_capacity(rounds); k];
    for r in 0..rounds {
        for i in 0..k {
            let v = (r + i) % k;
            let t = Instant::now();
            for blk in blocks {
                black_box((variants[v].1)(blk, out));
            }
            ns[v].push(t.elapsed().as_nanos() as f64 / blocks.len() as f64);
        }
    }
    let median = |x: &mut Vec<f64>| {
        x.sort_by(f64::total_cmp);
        x[x.len() / 2]
    };
    let base = k - 1;
    println!(
        "{rounds} interleaved rounds, ns per page (median) and ratio to {} (median, min-max of rounds):",
        variants[base].0
    );
    for v in 0..k {
        let mut ratios: Vec<f64> = (0..rounds).map(|r| ns[v][r] / ns[base][r]).collect();
        let m = median(&mut ratios);
        let (lo, hi) = (ratios[0], ratios[rounds - 1]);
        let t = median(&mut ns[v].clone());
        println!("{:16} {t:8.1} ns  {m:.3}x ({lo:.3}-{hi:.3})", variants[v].0);
    }
}
