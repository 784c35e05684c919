//! Loads of a file of pages, for a profiler: every page stored in a tier (lz4, no budget, in
//! order, in batches of `STORE_BATCH`, as the main job's side-by-side row stores them), then
//! passes of one mode over every page, each pass's time per page printed:
//!
//! - `load`: `Zswap::load` of every offset in order;
//! - `churn`: the same after churn: every other page (by a hash of its offset)
//!   invalidated, the pool compacted, and those pages stored again;
//! - `decompress`: acomp's own decompression of each page's frame (one fragment each side)
//!   out of one contiguous buffer in the same order: the decoder alone;
//! - `cut`: the same, with the frame of each page whose object straddles two backing pages
//!   in the tier given as two fragments (cut at its middle): the decoder and the copy onto
//!   the stack that a straddling load pays;
//! - `gather`: the same frames copied onto the stack first and decompressed as one fragment:
//!   the copy without the two-fragment path.
//!
//! ```sh
//! target/release/examples/zswap --pid PID --alg lz4 --threads 1 --save-pages pages.raw
//! cargo build --release -p acomp-zswap --example load_profile
//! target/release/examples/load_profile pages.raw load 30
//! perf record -D 3500 -g target/release/examples/load_profile pages.raw load 30  # past the set-up
//! ```
//!
//! Built as an example of the crate, the tier has its `test-hooks` feature on (the crate's
//! dev-dependency on itself): a load reads the hook's lock once, which a user's build does not.

use std::hint::black_box;
use std::io::{IoSlice, IoSliceMut};
use std::time::Instant;

use acomp::Acomp;
use acomp_zswap::{PAGE_SIZE, Page, STORE_BATCH, Zswap, same_filled};

const USAGE: &str = "usage: load_profile PAGES_FILE load|churn|decompress|cut|gather [PASSES]";

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let path = args.next().ok_or(USAGE)?;
    let mode = args.next().ok_or(USAGE)?;
    let churn = mode == "churn";
    let mode = if churn { "load".to_string() } else { mode };
    if !matches!(mode.as_str(), "load" | "decompress" | "cut" | "gather") {
        return Err(format!("unknown mode {mode:?}; {USAGE}").into());
    }
    let passes: usize = match args.next() {
        Some(s) => s.parse().map_err(|e| format!("PASSES {s:?}: {e}"))?,
        None => 5,
    };
    let bytes = std::fs::read(&path).map_err(|e| format!("{path}: {e}"))?;
    let pages: Vec<&Page> = bytes
        .chunks_exact(PAGE_SIZE)
        .map(|c| c.try_into().expect("a page-sized chunk"))
        .collect();
    if pages.is_empty() {
        return Err(format!("{path}: not one whole page").into());
    }
    let tier = Zswap::builder(Acomp::new("lz4")?)
        .max_pool_bytes(u64::MAX)
        .build()?;
    let batch: Vec<(u64, &Page)> = (0..).zip(pages.iter().copied()).collect();
    for chunk in batch.chunks(STORE_BATCH) {
        for r in tier.store_batch(chunk) {
            r?;
        }
    }
    if churn {
        // Every other page (by a hash of its offset) invalidated, the pool compacted, and
        // those pages stored again: zspages reused and taken from the arena after frees.
        let mixed = |o: u64| o.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 63 == 1;
        for &(o, _) in batch.iter().filter(|(o, _)| mixed(*o)) {
            tier.invalidate(o);
        }
        tier.compact();
        let again: Vec<(u64, &Page)> = batch.iter().copied().filter(|(o, _)| mixed(*o)).collect();
        for chunk in again.chunks(STORE_BATCH) {
            for r in tier.store_batch(chunk) {
                r?;
            }
        }
    }
    // Each compressed page's frame, one after the other as the pool holds them, and
    // whether the tier hands its object out in two fragments.
    let tfm = Acomp::new("lz4")?;
    let (mut frames, mut index) = (Vec::new(), Vec::new());
    let mut dst = [0u8; PAGE_SIZE];
    for (i, p) in (0..).zip(&pages) {
        if same_filled(p).is_some() {
            continue;
        }
        let Ok(n) = tfm.compress(&[IoSlice::new(&p[..])], &mut [IoSliceMut::new(&mut dst)]) else {
            continue; // kept as it is: no frame
        };
        index.push((frames.len(), n, tier.straddles(i)));
        frames.extend_from_slice(&dst[..n]);
    }
    let straddling = index.iter().filter(|f| f.2).count();
    eprintln!(
        "{} pages, {} frames, {straddling} of them in two fragments in the tier",
        pages.len(),
        index.len()
    );
    let mut out = [0u8; PAGE_SIZE];
    for pass in 0..passes {
        let start = Instant::now();
        let n = match mode.as_str() {
            "load" => {
                for i in 0..pages.len() as u64 {
                    tier.load(i, &mut out)?;
                }
                pages.len()
            }
            _ => {
                for &(at, n, straddles) in &index {
                    let f = &frames[at..at + n];
                    let dst = &mut [IoSliceMut::new(&mut out)];
                    let r = if straddles && mode == "cut" {
                        let (a, b) = f.split_at(n / 2);
                        tfm.decompress(&[IoSlice::new(a), IoSlice::new(b)], dst)
                    } else if straddles && mode == "gather" {
                        let mut stack = [0u8; PAGE_SIZE];
                        stack[..n].copy_from_slice(black_box(f));
                        tfm.decompress(&[IoSlice::new(&stack[..n])], dst)
                    } else {
                        tfm.decompress(&[IoSlice::new(f)], dst)
                    };
                    black_box(r?);
                }
                index.len()
            }
        };
        let ns = start.elapsed().as_nanos() as f64 / n as f64;
        println!("pass {pass} {mode} {ns:.1} ns/page");
    }
    // Of the loads' objects that straddled two backing pages, those on neighbouring pages
    // of one chunk, handed to acomp as one fragment.
    let s = tier.pool_stats();
    eprintln!(
        "straddling reads {}, of them one fragment {}; backing pages {}, chunks in use {}, \
         free pages resident {}, given back {}",
        s.straddled_reads, s.joined_reads, s.pages, s.chunks, s.cached_pages, s.released_pages
    );
    Ok(())
}
