//! The tier's costs, side by side in one run (BENCHMARKS.md, "The tier: acomp-zswap"):
//!
//! - `per_page`: store and in-memory load per page, against acomp's own calls on the same
//!   pages (the embedding's overhead): up to 2048 pages of this bench's own binary that are
//!   not same-filled, lz4.
//! - `threads`: 8192 such pages stored and loaded by 2 threads, then by 64.
//! - `folio`: those pages as 32 lz4 folios of 64 pages, loaded whole, page by page in order
//!   and page by page across the folios.
//! - `recompress`: `recompress_idle` over the `per_page` pages stored with lz4 and marked
//!   idle (a fresh tier per iteration, set up untimed), recompressed with zstd at level 3,
//!   against acomp's own calls on the same frames (lz4 decompression, zstd compression): the
//!   tier's overhead on recompression (the entries' locks, the pool's allocation and copy,
//!   the swap of objects and the compaction that ends the pass).
//! - `heap`: the live Python heap (`../shared/workloads/python_heap.py`, read as the main
//!   job's `--pid` reads it; its first `ACOMP_TIER_PAGES` pages, default 16384), stored with
//!   no budget (beside acomp's own compression of the same pages) and under a quarter of its compressed size with a `SwapFile` on the local
//!   disk (the target directory). After the timed runs, one budgeted run loads every page in
//!   a random order and prints the latency by source (memory, device: p50, p99) and the pages
//!   written back. Needs python3 and `../shared`; skipped without them, and under
//!   `cargo test --benches` (it takes a minute).
//!
//! ```sh
//! cargo bench -p acomp-zswap --bench tier
//! ```
//!
//! Instructions per page (the embedding's overhead without the machine's noise): with
//! `ACOMP_TIER_CALLGRIND` set to `compress`, `store`, `store_batch` (the pages in batches of
//! `STORE_BATCH`), `decompress` or `load`, the bench runs
//! that mode of `per_page` once as a warm-up and once inside `callgrind_loop`, and nothing
//! else:
//!
//! ```sh
//! cargo bench -p acomp-zswap --bench tier --no-run   # names target/release/deps/tier-<hash>
//! ACOMP_TIER_CALLGRIND=store valgrind --tool=callgrind \
//!     --toggle-collect='*callgrind_loop*' target/release/deps/tier-<hash>
//! ```
//!
//! Two builds compared (before and after a change) read the pages of one file:
//! `ACOMP_TIER_INPUT=PATH` (the pages of that file instead of the bench's own binary).
//! `ACOMP_TIER_PAGES=N` sets how many of its pages the `per_page` set takes (default 2,048,
//! which stay in the caches; more, for a pool larger than the last-level cache).

use std::hint::black_box;
use std::io::{BufRead, BufReader, IoSlice, IoSliceMut};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use acomp::Acomp;
use acomp_pages::snapshot;
use acomp_zswap::{LoadKind, PAGE_SIZE, Page, STORE_BATCH, SwapFile, Zswap, same_filled};
use criterion::{BatchSize, Criterion, Throughput};

mod heap;

fn lz4() -> Acomp {
    Acomp::new("lz4").expect("lz4")
}

fn zstd() -> Acomp {
    Acomp::new("zstd").expect("zstd (level 3)")
}

/// Up to `n` pages of this binary that are not same-filled; of the file
/// `ACOMP_TIER_INPUT` names instead, where set, so that two builds' instruction counts are
/// taken on the same pages.
fn own_pages(n: usize) -> Vec<Box<Page>> {
    let path = match std::env::var_os("ACOMP_TIER_INPUT") {
        Some(p) => PathBuf::from(p),
        None => std::env::current_exe().expect("the bench's path"),
    };
    let bytes = std::fs::read(&path).expect("the input's bytes");
    bytes
        .chunks_exact(PAGE_SIZE)
        .map(|c| Box::new(<Page>::try_from(c).expect("a page")))
        .filter(|p| same_filled(p).is_none())
        .take(n)
        .collect()
}

/// acomp's own compression of each page into `dst`, as a store's first step.
fn compress_each(tfm: &Acomp, pages: &[Box<Page>], dst: &mut [u8]) {
    for p in pages {
        let _ = black_box(tfm.compress(&[IoSlice::new(&p[..])], &mut [IoSliceMut::new(dst)]));
    }
}

fn unbudgeted(tfm: Acomp) -> Zswap {
    Zswap::builder(tfm)
        .max_pool_bytes(u64::MAX)
        .build()
        .expect("a tier")
}

/// The `per_page` set: the pages, acomp's transform, a tier holding every page, and each
/// page's frame as acomp's own call writes it (the page itself where it does not shrink).
fn per_page_fixture() -> (Vec<Box<Page>>, Acomp, Zswap, Vec<Vec<u8>>) {
    let n = std::env::var("ACOMP_TIER_PAGES").map_or(2048, |v| {
        v.parse().expect("ACOMP_TIER_PAGES: a number of pages")
    });
    let pages = own_pages(n);
    let tfm = lz4();
    let z = unbudgeted(lz4());
    let mut dst = vec![0u8; PAGE_SIZE];
    let frames: Vec<Vec<u8>> = pages
        .iter()
        .map(|p| {
            let n = tfm
                .compress(&[IoSlice::new(&p[..])], &mut [IoSliceMut::new(&mut dst)])
                .unwrap_or(PAGE_SIZE);
            dst[..n].to_vec()
        })
        .collect();
    for (i, p) in pages.iter().enumerate() {
        z.store(i as u64, p).expect("no budget");
    }
    (pages, tfm, z, frames)
}

fn per_page(c: &mut Criterion) {
    let (pages, tfm, z, frames) = per_page_fixture();
    let mut dst = vec![0u8; PAGE_SIZE];
    let mut g = c.benchmark_group("per_page");
    g.throughput(Throughput::Elements(pages.len() as u64));
    g.bench_function("acomp/compress", |b| {
        b.iter(|| compress_each(&tfm, &pages, &mut dst))
    });
    g.bench_function("tier/store", |b| {
        b.iter(|| {
            for (i, p) in pages.iter().enumerate() {
                z.store(i as u64, p).expect("no budget");
            }
        })
    });
    let mut out = [0u8; PAGE_SIZE];
    g.bench_function("acomp/decompress", |b| {
        b.iter(|| {
            for f in &frames {
                if f.len() < PAGE_SIZE {
                    let _ = black_box(
                        tfm.decompress(&[IoSlice::new(f)], &mut [IoSliceMut::new(&mut out)]),
                    );
                } else {
                    out.copy_from_slice(f);
                }
            }
        })
    });
    g.bench_function("tier/load", |b| {
        b.iter(|| {
            for i in 0..pages.len() {
                z.load(i as u64, &mut out).expect("stored");
            }
        })
    });
    g.finish();
}

fn threads(c: &mut Criterion) {
    let pages = own_pages(2048);
    let total = 8192;
    let mut g = c.benchmark_group("threads");
    g.throughput(Throughput::Elements(2 * total as u64));
    for n in [2usize, 64] {
        g.bench_function(format!("{n}"), |b| {
            b.iter_batched(
                || unbudgeted(lz4()),
                |z| {
                    std::thread::scope(|s| {
                        for t in 0..n {
                            let (z, pages) = (&z, &pages);
                            s.spawn(move || {
                                let mut out = [0u8; PAGE_SIZE];
                                let mine = (t..total).step_by(n);
                                for i in mine.clone() {
                                    z.store(i as u64, &pages[i % pages.len()])
                                        .expect("no budget");
                                }
                                for i in mine {
                                    z.load(i as u64, &mut out).expect("stored");
                                }
                            });
                        }
                    });
                    z
                },
                BatchSize::PerIteration,
            )
        });
    }
    g.finish();
}

/// `folio`: the `per_page` pages as 32 folios of 64 pages (`store_folio`, lz4), loaded
/// whole (`load_pages`), page by page in order (the thread's copy of the last folio decoded
/// serves a folio's next pages), and page by page across the folios (each load another
/// folio: a decode each, lz4 having no range reads).
fn folio(c: &mut Criterion) {
    let pages = own_pages(2048);
    let folios: Vec<Vec<Page>> = pages
        .chunks_exact(64)
        .map(|c| c.iter().map(|p| **p).collect())
        .collect();
    let z = unbudgeted(lz4());
    for (f, folio) in folios.iter().enumerate() {
        z.store_folio((f * 64) as u64, folio).expect("no budget");
    }
    let n = folios.len() * 64;
    let mut g = c.benchmark_group("folio");
    g.throughput(Throughput::Elements(n as u64));
    g.sample_size(10);
    let mut whole: Vec<Page> = vec![[0; PAGE_SIZE]; 64];
    g.bench_function("lz4/load_pages", |b| {
        b.iter(|| {
            for f in 0..folios.len() {
                z.load_pages((f * 64) as u64, &mut whole).expect("stored");
            }
        })
    });
    let mut out = [0u8; PAGE_SIZE];
    g.bench_function("lz4/pages-in-order", |b| {
        b.iter(|| {
            for i in 0..n {
                z.load(i as u64, &mut out).expect("stored");
            }
        })
    });
    g.bench_function("lz4/pages-across-folios", |b| {
        b.iter(|| {
            for k in 0..64 {
                for f in 0..folios.len() {
                    z.load((f * 64 + k) as u64, &mut out).expect("stored");
                }
            }
        })
    });
    g.finish();
}

fn recompress(c: &mut Criterion) {
    let (pages, tfm, _, frames) = per_page_fixture();
    let recomp = zstd();
    // The tier tries only compressed frames: pages kept as they are are not recompressed.
    let compressed: Vec<&Vec<u8>> = frames.iter().filter(|f| f.len() < PAGE_SIZE).collect();
    let idle_tier = || {
        let z = Zswap::builder(lz4())
            .max_pool_bytes(u64::MAX)
            .recompress(zstd())
            .build()
            .expect("a tier");
        for (i, p) in pages.iter().enumerate() {
            z.store(i as u64, p).expect("no budget");
        }
        z.mark_idle();
        z
    };
    let mut g = c.benchmark_group("recompress");
    g.throughput(Throughput::Elements(compressed.len() as u64));
    // A pass takes tens of milliseconds and a fresh tier each: 10 samples, as `heap`.
    g.sample_size(10);
    let (mut page, mut dst) = ([0u8; PAGE_SIZE], [0u8; PAGE_SIZE]);
    g.bench_function("acomp/decompress+compress", |b| {
        b.iter(|| {
            for f in &compressed {
                let _ = black_box(
                    tfm.decompress(&[IoSlice::new(f)], &mut [IoSliceMut::new(&mut page)]),
                );
                let _ = black_box(
                    recomp.compress(&[IoSlice::new(&page)], &mut [IoSliceMut::new(&mut dst)]),
                );
            }
        })
    });
    g.bench_function("tier/recompress_idle", |b| {
        b.iter_batched(
            idle_tier,
            |z| {
                black_box(z.recompress_idle(usize::MAX));
                z
            },
            BatchSize::PerIteration,
        )
    });
    g.finish();
    // What one pass did, for BENCHMARKS.md.
    let z = idle_tier();
    let before = z.stats();
    let t = Instant::now();
    let n = z.recompress_idle(usize::MAX);
    let took = t.elapsed();
    let s = z.stats();
    eprintln!(
        "recompress: {} pages, {} compressed frames tried: {n} recompressed, {} skipped, \
         pool {:.2} -> {:.2} MiB, one pass {:.1} ms",
        pages.len(),
        compressed.len(),
        s.recompress_skipped_pages,
        before.pool_total_size as f64 / (1 << 20) as f64,
        s.pool_total_size as f64 / (1 << 20) as f64,
        took.as_secs_f64() * 1e3,
    );
}

/// The pass callgrind counts (`--toggle-collect='*callgrind_loop*'`).
#[inline(never)]
fn callgrind_loop(mode: &str, z: &Zswap, tfm: &Acomp, pages: &[Box<Page>], frames: &[Vec<u8>]) {
    pass(mode, z, tfm, pages, frames);
}

/// One pass of a `per_page` mode over every page.
#[inline(never)]
fn pass(mode: &str, z: &Zswap, tfm: &Acomp, pages: &[Box<Page>], frames: &[Vec<u8>]) {
    let mut dst = [0u8; PAGE_SIZE];
    if mode == "store_batch" {
        let batch: Vec<(u64, &Page)> = pages
            .iter()
            .enumerate()
            .map(|(i, p)| (i as u64, &**p))
            .collect();
        for chunk in batch.chunks(STORE_BATCH) {
            for r in z.store_batch(chunk) {
                r.expect("no budget");
            }
        }
        return;
    }
    for (i, (p, f)) in pages.iter().zip(frames).enumerate() {
        match mode {
            "compress" => {
                let _ = black_box(
                    tfm.compress(&[IoSlice::new(&p[..])], &mut [IoSliceMut::new(&mut dst)]),
                );
            }
            "store" => {
                z.store(i as u64, p).expect("no budget");
            }
            "decompress" if f.len() < PAGE_SIZE => {
                let _ =
                    black_box(tfm.decompress(&[IoSlice::new(f)], &mut [IoSliceMut::new(&mut dst)]));
            }
            "decompress" => dst.copy_from_slice(f),
            "load" => {
                z.load(i as u64, &mut dst).expect("stored");
            }
            other => panic!(
                "ACOMP_TIER_CALLGRIND={other}: compress, store, store_batch, decompress or load"
            ),
        }
    }
    black_box(&dst);
}

fn callgrind(mode: &str) {
    let (pages, tfm, z, frames) = per_page_fixture();
    // The warm-up, then the pass callgrind counts.
    pass(mode, &z, &tfm, &pages, &frames);
    callgrind_loop(mode, &z, &tfm, &pages, &frames);
    eprintln!("{mode}: {} pages per pass", pages.len());
}

fn main() {
    if let Ok(mode) = std::env::var("ACOMP_TIER_CALLGRIND") {
        callgrind(&mode);
        return;
    }
    let mut c = Criterion::default().configure_from_args();
    per_page(&mut c);
    threads(&mut c);
    folio(&mut c);
    recompress(&mut c);
    heap::heap(&mut c);
    c.final_summary();
}
