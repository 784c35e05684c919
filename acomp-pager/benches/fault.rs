//! A fault's cost, side by side in one run: a fault on plain anonymous memory (the kernel
//! maps its zero page), a pager region's fault on a page never written (the pager maps the
//! zero page: the round trip through a handler thread and nothing else), and a pager
//! region's swap-in (the same, plus the tier's load and the copy into place), lz4 and
//! zstd, each also served on the faulting thread (`Builder::signal_faults`); beside them
//! `page_out`'s cost per page, and a sweep in order with fault-around off and on. Each iteration is one page's first
//! access, timed over a run of `iters` pages in a fixed random order (the setup, mapping
//! and paging out, is outside the timing).
//!
//! `cargo bench -p acomp-pager --bench fault`; the kernel's own swap-in, beside zram, is
//! the main job's (`--pager --vs-zram`: it needs root).

use rand::SeedableRng;
use rand::rngs::StdRng;
use rand::seq::SliceRandom;
use std::hint::black_box;
use std::sync::Arc;
use std::time::{Duration, Instant};

use acomp_pager::{PAGE_SIZE, Pager, Region};
use criterion::{Criterion, Throughput};

/// Pages of text-like bytes that compress as a heap does (about 2-3x with lz4).
fn fill(region: &Region, pages: usize) {
    let ptr = region.as_ptr();
    let mut x = 0x2545_F491_4F6C_DD1Du64;
    for p in 0..pages {
        let mut page = [0u8; PAGE_SIZE];
        for (i, b) in page.iter_mut().enumerate() {
            if i % 64 == 0 {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
            }
            *b = b"the quick brown fox jumps over the lazy dog "[(i + (x as usize % 8)) % 44];
        }
        page[..8].copy_from_slice(&(p as u64).to_le_bytes());
        // SAFETY: page `p` is inside the region, which is readable and writable.
        unsafe { std::ptr::copy_nonoverlapping(page.as_ptr(), ptr.add(p * PAGE_SIZE), PAGE_SIZE) };
    }
}

fn order(pages: usize) -> Vec<usize> {
    let mut o: Vec<usize> = (0..pages).collect();
    o.shuffle(&mut StdRng::seed_from_u64(1));
    o
}

/// Touches each page of `order` once (one byte read), timing the whole run.
fn touch(ptr: *const u8, order: &[usize]) -> Duration {
    let start = Instant::now();
    for &p in order {
        // SAFETY: the callers' mappings hold every page of `order`.
        black_box(unsafe { std::ptr::read_volatile(ptr.add(p * PAGE_SIZE)) });
    }
    start.elapsed()
}

/// A region of `order.len()` pages of `p`, filled and paged out, then each page touched in
/// `order`: the touches' time.
fn swap_ins(p: &Pager, order: &[usize]) -> Duration {
    let pages = order.len();
    let region = p.region(pages * PAGE_SIZE).unwrap();
    fill(&region, pages);
    region.page_out(0, pages * PAGE_SIZE).unwrap();
    touch(region.as_ptr(), order)
}

fn pager(alg: &str) -> Pager {
    pager_with(alg, false)
}

/// A pager over a tier of `alg`, its faults served on the faulting thread with `signal`
/// (`Builder::signal_faults`).
fn pager_with(alg: &str, signal: bool) -> Pager {
    pager_around(alg, signal, 16)
}

/// [`pager_with`], fault-around at most `around` pages (`Builder::fault_around`).
fn pager_around(alg: &str, signal: bool, around: usize) -> Pager {
    let tier = Arc::new(
        acomp_zswap::Zswap::builder(acomp::Acomp::new(alg).unwrap())
            .max_pool_bytes(4 << 30)
            .build()
            .unwrap(),
    );
    Pager::builder(tier)
        .signal_faults(signal)
        .fault_around(around)
        .build()
        .expect("userfaultfd")
}

/// An anonymous mapping of `len` bytes the kernel has not touched: a large zeroed `Vec`
/// is `calloc`'s fresh `mmap`, so each page's first access is a fault.
fn fresh(len: usize) -> Vec<u8> {
    vec![0; len.max(1 << 20)]
}

fn faults(c: &mut Criterion) {
    let mut g = c.benchmark_group("fault");
    g.throughput(Throughput::Elements(1));
    g.bench_function("kernel_zero_page", |b| {
        b.iter_custom(|iters| {
            let pages = iters as usize;
            let map = fresh(pages * PAGE_SIZE);
            touch(map.as_ptr(), &order(pages))
        })
    });
    let zero = pager("lz4");
    g.bench_function("pager_zero_page", |b| {
        b.iter_custom(|iters| {
            let pages = iters as usize;
            let region = zero.region(pages * PAGE_SIZE).unwrap();
            touch(region.as_ptr(), &order(pages))
        })
    });
    // The same faults served on the faulting thread, beside those of the handler threads.
    let signal_zero = pager_with("lz4", true);
    g.bench_function("pager_zero_page_signal", |b| {
        b.iter_custom(|iters| {
            let pages = iters as usize;
            let region = signal_zero.region(pages * PAGE_SIZE).unwrap();
            touch(region.as_ptr(), &order(pages))
        })
    });
    for (alg, signal) in [("lz4", false), ("lz4", true), ("zstd", false)] {
        let p = pager_with(alg, signal);
        let name = format!("pager_swap_in_{alg}{}", if signal { "_signal" } else { "" });
        g.bench_function(name, |b| {
            b.iter_custom(|iters| swap_ins(&p, &order(iters as usize)))
        });
    }
    g.finish();

    let mut g = c.benchmark_group("page_out");
    g.throughput(Throughput::Bytes(PAGE_SIZE as u64));
    for alg in ["lz4", "zstd"] {
        let p = pager(alg);
        g.bench_function(alg, |b| {
            b.iter_custom(|iters| {
                let pages = iters as usize;
                let region = p.region(pages * PAGE_SIZE).unwrap();
                fill(&region, pages);
                let start = Instant::now();
                region.page_out(0, pages * PAGE_SIZE).unwrap();
                start.elapsed()
            })
        });
    }
    g.finish();
}

/// A sparse region (issue 48's goal): 1 TiB with 64 pages touched, spread over it. `sparse/
/// lifetime` makes it, writes the 64 pages, reads them and drops it; `sparse/page_out`
/// pages out the whole range (the 64 pages move).
fn sparse(c: &mut Criterion) {
    const LEN: usize = 1 << 40;
    const TOUCHED: usize = 64;
    let at = |i: usize| (LEN / TOUCHED) * i + (i % 7) * PAGE_SIZE;
    let write = |region: &Region| {
        for i in 0..TOUCHED {
            region.write_at(at(i), &[i as u8 + 1; 64]).unwrap();
        }
    };
    let p = pager("lz4");
    let mut g = c.benchmark_group("sparse");
    g.sample_size(10);
    g.bench_function("lifetime_1TiB_64_pages", |b| {
        b.iter(|| {
            let region = p.region(LEN).unwrap();
            write(&region);
            let mut byte = [0u8; 1];
            for i in 0..TOUCHED {
                region.read_at(at(i), &mut byte).unwrap();
                assert_eq!(byte[0], i as u8 + 1);
            }
        })
    });
    g.bench_function("page_out_1TiB_64_pages", |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                let region = p.region(LEN).unwrap();
                write(&region);
                let start = Instant::now();
                assert_eq!(region.page_out(0, LEN).unwrap(), TOUCHED);
                total += start.elapsed();
            }
            total
        })
    });
    g.finish();
}

/// A sweep in order over pages out (`Builder::fault_around`'s case): each iteration one
/// page, read in order, with fault-around off and on, on the handler threads and on the
/// faulting thread.
fn sweep(c: &mut Criterion) {
    let mut g = c.benchmark_group("sweep");
    g.throughput(Throughput::Elements(1));
    for (around, signal) in [(0, false), (16, false), (0, true), (16, true)] {
        let p = pager_around("lz4", signal, around);
        let name = format!("lz4_around_{around}{}", if signal { "_signal" } else { "" });
        g.bench_function(name, |b| {
            b.iter_custom(|iters| swap_ins(&p, &(0..iters as usize).collect::<Vec<_>>()))
        });
    }
    g.finish();
}

fn main() {
    let mut c = Criterion::default()
        .configure_from_args()
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(3));
    faults(&mut c);
    sweep(&mut c);
    sparse(&mut c);
    c.final_summary();
}
