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
//! ```
//!
//! `ACOMP_PAGES_MAX` (default 20,000) bounds the pages taken from the front of the file;
//! all-zero pages are skipped (a swap layer keeps them as same-filled, without lz4).

use std::hint::black_box;
use std::io::{IoSlice, IoSliceMut};

use acomp::Acomp;
use criterion::{Criterion, Throughput};

#[path = "pages/file.rs"]
mod page_file;

/// Bytes in a page.
const PAGE: usize = 4096;

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
    let mut c = Criterion::default().configure_from_args();
    let mut g = c.benchmark_group("lz4-decode-pages");
    g.throughput(Throughput::Elements(blocks.len() as u64));
    g.bench_function("acomp-one-shot", |b| {
        b.iter(|| {
            for blk in &blocks {
                let n = tfm
                    .decompress(&[IoSlice::new(blk)], &mut [IoSliceMut::new(&mut out)])
                    .expect("a block acomp wrote");
                black_box(n);
            }
        });
    });
    g.bench_function("acomp-decoder", |b| {
        b.iter(|| {
            for blk in &blocks {
                let n = acomp::lz4::decompress_block(blk, &mut out).expect("a block acomp wrote");
                black_box(n);
            }
        });
    });
    g.bench_function("liblz4", |b| {
        b.iter(|| {
            for blk in &blocks {
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
            }
        });
    });
    g.finish();
    c.final_summary();
}
