//! The tier's cost as the pool grows (issue 41's curve; BENCHMARKS.md, "The tier as the pool
//! grows"): for each size `n` from 2^14 pages up, a tier holding `n` distinct pages (lz4, no
//! budget), then side by side in one run, per page, `PER_ITER` pages an iteration:
//!
//! - `scale/n/acomp/compress` and `scale/n/tier/store`: the same pages, compressed by acomp's
//!   own call into one buffer, and stored by the tier at random offsets of the `n` it holds
//!   (each replacing the page there: the pool stays at `n` pages), one by one and in
//!   batches of `STORE_BATCH` (`tier/store_batch`), and at offsets that hold no page
//!   (`tier/store_fresh`: invalidated before each iteration, untimed), a store that frees
//!   no old entry;
//! - `scale/n/acomp/decompress` and `scale/n/tier/load`: acomp's own decompression of those
//!   pages' frames (one allocation each, `PER_ITER` of them: they sit in the cache, as the
//!   tier's objects do not), and the tier's loads of random offsets;
//! - `scale/n/acomp/decompress_cold`: acomp's own decompression of the frames of the same
//!   offsets as `tier/load`'s, in the same order, out of one buffer that holds the frames of
//!   all `n` pages back to back (as large as the pool): the floor of a load whose bytes are
//!   not in the caches, which `tier/load`'s are not either;
//! - `scale/n/acomp/decompress_cold_2`: the same, each frame's place found through a table
//!   of 8 bytes an offset first (a random permutation of the offsets): the floor of a load
//!   that takes two dependent lookups, each a miss, before its frame, where
//!   `decompress_cold` takes one (its table of the frames' places);
//! - `scale/n/tier/invalidate`: invalidating `PER_ITER` random offsets (stored again between
//!   iterations, untimed).
//!
//! Printed after filling each size: the heap bytes the tier holds beyond the pool's chunks
//! per page (glibc's `mallinfo2`, exact: the index, the entries, the zspages' bookkeeping),
//! the process's resident memory beyond the pool's chunks
//! per page (`/proc/self/statm` before and after the fill, each after `malloc_trim`, less the
//! arena's mapped chunks: the map, the entries and the LRU; and less the backing pages
//! resident as the kernel counts them, `mincore`, where the arena's thread leaves part of
//! the mapped chunks not resident), the arena's kept free pages, and
//! the minor page faults per page (`getrusage`) of the fill and of a second pass storing
//! every page again over itself (the steady state); and after the timed runs, what the
//! arena keeps once half the pages (picked by a hash) are invalidated and the pool
//! compacted.
//!
//! The pages: those of this bench's own binary that are not same-filled (or of the file
//! `ACOMP_SCALE_INPUT` names: two builds compared on the same pages), made distinct by
//! writing each page's number into its first 8 bytes, made on the fly (4 GiB of input at 2^20
//! is never held).
//!
//! ```sh
//! cargo bench -p acomp-zswap --bench scale -- --warm-up-time 1 --measurement-time 3
//! ACOMP_SCALE_MAX_LOG2=20 cargo bench -p acomp-zswap --bench scale   # up to 2^20 (4 GiB of input)
//! ```
//!
//! Sizes run: 2^14, 2^16, 2^18, 2^20, those up to `ACOMP_SCALE_MAX_LOG2` (default 16) and
//! from `ACOMP_SCALE_MIN_LOG2` (default 14). The memory line of a size after the first in a
//! run may count the last size's chunks, which the arena's thread lets go of after the
//! tier is gone (it reads low, even below 0): for memory, one size a process, e.g.
//! `ACOMP_SCALE_MIN_LOG2=18 ACOMP_SCALE_MAX_LOG2=18 target/release/deps/scale-<hash> --bench
//! no-timed-run` (the fill and its lines only).
//! Under `cargo test --benches` only 2^14 is filled, each routine run once.

use std::hint::black_box;
use std::io::{IoSlice, IoSliceMut};

use acomp::Acomp;
use acomp_zswap::{PAGE_SIZE, Page, STORE_BATCH, Zswap, same_filled};
use criterion::{BatchSize, Criterion, Throughput};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

/// Pages each timed iteration stores, loads or invalidates.
const PER_ITER: usize = 1024;

fn lz4() -> Acomp {
    Acomp::new("lz4").expect("lz4")
}

/// This binary's pages that are not same-filled (or those of the file `ACOMP_SCALE_INPUT`
/// names, so that two builds run on the same pages): the bodies of the pages made distinct.
fn base_pages() -> Vec<Box<Page>> {
    let path = std::env::var_os("ACOMP_SCALE_INPUT").map_or_else(
        || std::env::current_exe().expect("the bench's path"),
        std::path::PathBuf::from,
    );
    let bytes = std::fs::read(path).expect("the input's bytes");
    bytes
        .chunks_exact(PAGE_SIZE)
        .map(|c| Box::new(<Page>::try_from(c).expect("a page")))
        .filter(|p| same_filled(p).is_none())
        .take(8192)
        .collect()
}

/// Page `i`: base page `i % len` with `i` in its first 8 bytes.
fn page(base: &[Box<Page>], i: u64, out: &mut Page) {
    out.copy_from_slice(&base[(i % base.len() as u64) as usize][..]);
    out[..8].copy_from_slice(&i.to_le_bytes());
}

/// `page`'s frame by acomp's own call, into `dst`, or the page as it is where it does not
/// compress (as the tier keeps it).
fn frame_of<'a>(tfm: &Acomp, page: &'a Page, dst: &'a mut [u8]) -> &'a [u8] {
    match tfm.compress(&[IoSlice::new(page)], &mut [IoSliceMut::new(dst)]) {
        Ok(len) if len < PAGE_SIZE => &dst[..len],
        _ => page,
    }
}

/// Decompresses `frame` into `out` as the tier's load would, or copies it where it is a
/// page kept as it is.
fn decode(tfm: &Acomp, frame: &[u8], out: &mut Page) {
    if frame.len() < PAGE_SIZE {
        let _ = black_box(tfm.decompress(&[IoSlice::new(frame)], &mut [IoSliceMut::new(out)]));
    } else {
        out.copy_from_slice(frame);
    }
}

/// The next of the random offsets below `n` that `tier/load` and `acomp/decompress_cold`
/// take, in turn, from `at`.
fn next_offset(at: &mut u64, n: u64) -> u64 {
    *at = (*at + 0x9e37_79b9) % n;
    *at * 0x2545_f491 % n
}

/// The resident set in bytes, from `/proc/self/statm`, after glibc has given its free memory
/// back (`malloc_trim`), so that a size's fill is not counted into memory the last size freed.
fn rss() -> Option<usize> {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY:
    // - malloc_trim only releases memory malloc holds free; it takes no pointer.
    unsafe {
        libc::malloc_trim(0);
    }
    let statm = std::fs::read_to_string("/proc/self/statm").ok()?;
    let pages: usize = statm.split_whitespace().nth(1)?.parse().ok()?;
    Some(pages * 4096)
}

/// Bytes the process's allocator has handed out and not had back (glibc's `mallinfo2`:
/// `uordblks`, the arenas' chunks in use, and `hblkhd`, the blocks it mapped on its own):
/// the tier's memory beyond the pool's chunks, which it maps itself, counted exactly where
/// the resident set also moves with glibc's free lists and the chunks' given-back pages.
fn heap_in_use() -> Option<usize> {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        // SAFETY:
        // - mallinfo2 takes nothing and returns a plain struct of counters.
        let m = unsafe { libc::mallinfo2() };
        Some(m.uordblks + m.hblkhd)
    }
    #[cfg(not(all(target_os = "linux", target_env = "gnu")))]
    None
}

/// The process's minor page faults so far (`getrusage`).
fn minor_faults() -> i64 {
    let mut usage = std::mem::MaybeUninit::<libc::rusage>::zeroed();
    // SAFETY:
    // - `usage` is a valid, writable `rusage` (zeroed), which getrusage fills.
    let rc = unsafe { libc::getrusage(libc::RUSAGE_SELF, usage.as_mut_ptr()) };
    assert_eq!(rc, 0, "getrusage");
    // SAFETY: zeroed is a valid `rusage` (plain integers), and getrusage succeeded.
    unsafe { usage.assume_init() }.ru_minflt
}

fn scale(c: &mut Criterion, base: &[Box<Page>], log2: u32) {
    let n = 1u64 << log2;
    let mut p = Box::new([0u8; PAGE_SIZE]);
    let before = rss();
    let heap_before = heap_in_use();
    let faults = minor_faults();
    let z = Zswap::builder(lz4())
        .max_pool_bytes(u64::MAX)
        .build()
        .expect("a tier");
    for i in 0..n {
        page(base, i, &mut p);
        z.store(i, &p).expect("no budget");
    }
    let fill_faults = minor_faults() - faults;
    let (rss_after, heap_after) = (rss(), heap_in_use());
    // Every page's frame by acomp's own call, back to back in one buffer as large as the
    // pool (after the memory figures, which it is not part of): the floor of a load from
    // memory that is not in the caches.
    let tfm = lz4();
    let mut dst = vec![0u8; PAGE_SIZE];
    let mut cold: Vec<u8> = Vec::new();
    let mut starts: Vec<usize> = Vec::with_capacity(n as usize + 1);
    for i in 0..n {
        page(base, i, &mut p);
        starts.push(cold.len());
        cold.extend_from_slice(frame_of(&tfm, &p, &mut dst));
    }
    starts.push(cold.len());
    let s = z.pool_stats();
    if let (Some(b), Some(a)) = (before, rss_after) {
        let beyond = a.saturating_sub(b).saturating_sub(s.arena_size());
        let resident = z.pool_resident_pages() * PAGE_SIZE;
        let beyond_resident = a as f64 - b as f64 - resident as f64;
        eprintln!(
            "scale 2^{log2}: pool {:.1} MiB in {} chunks ({} free pages kept), RSS beyond the \
             chunks {:.0} B/page, beyond their resident pages {:.0} B/page, {:.3} minor \
             faults per page stored",
            s.total_size() as f64 / (1 << 20) as f64,
            s.chunks,
            s.cached_pages,
            beyond as f64 / n as f64,
            beyond_resident / n as f64,
            fill_faults as f64 / n as f64
        );
    }
    if let (Some(b), Some(a)) = (heap_before, heap_after) {
        let (entries, index, zspages) = z.bookkeeping_bytes();
        let per = |b: usize| b as f64 / n as f64;
        eprintln!(
            "scale 2^{log2}: heap in use beyond the chunks {:.1} B/page (mallinfo2); asked \
             for: entries {:.1}, index {:.1}, zspages {:.1} B/page",
            per(a.saturating_sub(b)),
            per(entries),
            per(index),
            per(zspages)
        );
    }
    // The steady state: every page stored again over itself (objects freed and taken again,
    // zspages opened and released), counting the faults.
    let faults = minor_faults();
    for i in 0..n {
        page(base, i, &mut p);
        z.store(i, &p).expect("no budget");
    }
    eprintln!(
        "scale 2^{log2}: stored again over itself: {:.4} minor faults per page",
        (minor_faults() - faults) as f64 / n as f64
    );
    let mut rng = StdRng::seed_from_u64(u64::from(log2));
    let offsets: Vec<u64> = (0..PER_ITER).map(|_| rng.random_range(0..n)).collect();
    let pages: Vec<Box<Page>> = offsets
        .iter()
        .map(|&o| {
            let mut q = Box::new([0u8; PAGE_SIZE]);
            page(base, o, &mut q);
            q
        })
        .collect();
    // Those pages' frames, each an allocation of its own (they stay in the cache): the
    // cold buffer's, made above by the same call.
    let frames: Vec<Vec<u8>> = offsets
        .iter()
        .map(|&o| cold[starts[o as usize]..starts[o as usize + 1]].to_vec())
        .collect();

    // A slot table as large as the index's leaves (8 bytes an offset), each slot naming
    // another offset (a random permutation): the floor of a load that reaches its frame's
    // place through one more lookup, itself a miss, whose address is the value of the
    // first, as the tier's index leaf names the entry that holds the object's place.
    let mut slots: Vec<u64> = (0..n).collect();
    for i in (1..slots.len()).rev() {
        slots.swap(i, rng.random_range(0..=i));
    }
    let mut g = c.benchmark_group(format!("scale/2^{log2}"));
    g.throughput(Throughput::Elements(PER_ITER as u64));
    g.bench_function("acomp/compress", |b| {
        b.iter(|| {
            for q in &pages {
                let _ = black_box(
                    tfm.compress(&[IoSlice::new(&q[..])], &mut [IoSliceMut::new(&mut dst)]),
                );
            }
        })
    });
    g.bench_function("tier/store", |b| {
        b.iter(|| {
            for (&o, q) in offsets.iter().zip(&pages) {
                z.store(o, q).expect("no budget");
            }
        })
    });
    let batch: Vec<(u64, &Page)> = offsets
        .iter()
        .copied()
        .zip(pages.iter().map(|q| &**q))
        .collect();
    g.bench_function("tier/store_batch", |b| {
        b.iter(|| {
            for chunk in batch.chunks(STORE_BATCH) {
                for r in z.store_batch(chunk) {
                    r.expect("no budget");
                }
            }
        })
    });
    // The same pages stored at offsets that hold none (a permutation's first `PER_ITER`:
    // distinct, at random), invalidated before each iteration, untimed: a store into a
    // free slot, as a swap layer's stores are, that frees no old entry. Its leaves and
    // slots are as warm as `tier/store`'s, whose offsets are the same each iteration.
    let fresh: Vec<(u64, &Page)> = slots[..PER_ITER]
        .iter()
        .copied()
        .zip(pages.iter().map(|q| &**q))
        .collect();
    g.bench_function("tier/store_fresh", |b| {
        b.iter_batched(
            || {
                for &(o, _) in &fresh {
                    z.invalidate(o);
                }
            },
            |()| {
                for &(o, q) in &fresh {
                    z.store(o, q).expect("no budget");
                }
            },
            BatchSize::PerIteration,
        )
    });
    // Each of those offsets given its own page back (they hold other offsets' pages now),
    // so that `tier/load` decodes the frames `acomp/decompress_cold` does.
    for &(o, _) in &fresh {
        page(base, o, &mut p);
        z.store(o, &p).expect("no budget");
    }
    let mut out = [0u8; PAGE_SIZE];
    g.bench_function("acomp/decompress", |b| {
        b.iter(|| {
            for f in &frames {
                decode(&tfm, f, &mut out);
            }
        })
    });
    let mut at = 0;
    g.bench_function("acomp/decompress_cold", |b| {
        b.iter(|| {
            // The same offsets as `tier/load`'s, in the same order.
            for _ in 0..PER_ITER {
                let o = next_offset(&mut at, n) as usize;
                decode(&tfm, &cold[starts[o]..starts[o + 1]], &mut out);
            }
        })
    });
    let mut at = 0;
    g.bench_function("acomp/decompress_cold_2", |b| {
        b.iter(|| {
            for _ in 0..PER_ITER {
                let o = slots[next_offset(&mut at, n) as usize] as usize;
                decode(&tfm, &cold[starts[o]..starts[o + 1]], &mut out);
            }
        })
    });
    drop(slots);
    let mut at = 0;
    g.bench_function("tier/load", |b| {
        b.iter(|| {
            // Other random offsets each iteration, so that the loads do not find them cached.
            for _ in 0..PER_ITER {
                z.load(next_offset(&mut at, n), &mut out).expect("stored");
            }
        })
    });
    g.bench_function("tier/invalidate", |b| {
        b.iter_batched(
            || {
                for (&o, q) in offsets.iter().zip(&pages) {
                    z.store(o, q).expect("no budget");
                }
            },
            |()| {
                for &o in &offsets {
                    z.invalidate(o);
                }
            },
            BatchSize::PerIteration,
        )
    });
    g.finish();
    // What the arena keeps after scattered invalidation: half the pages, every other by a
    // hash, invalidated, then compaction, which empties zspages but not chunks.
    let before = rss();
    for i in 0..n {
        if i.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 63 == 0 {
            z.invalidate(i);
        }
    }
    z.compact();
    let s = z.pool_stats();
    let mib = |b: usize| b as f64 / (1 << 20) as f64;
    eprintln!(
        "scale 2^{log2}: half invalidated, compacted: pool {:.1} MiB, backing pages resident \
         {:.1} MiB ({} free pages resident, {} given back, {} chunks in use, {} given back \
         whole); process RSS {:+.1} MiB",
        mib(s.total_size()),
        mib(s.resident_size()),
        s.cached_pages,
        s.released_pages,
        s.chunks,
        s.released_chunks,
        match (before, rss()) {
            (Some(b), Some(a)) => (a as f64 - b as f64) / (1 << 20) as f64,
            _ => f64::NAN,
        }
    );
}

fn main() {
    let mut c = Criterion::default().configure_from_args();
    let base = base_pages();
    let max: u32 = if std::env::args().any(|a| a == "--bench") {
        std::env::var("ACOMP_SCALE_MAX_LOG2")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(16)
    } else {
        14
    };
    // One size a process for memory figures beyond the first size's: the arena's thread
    // holds the last size's chunks until it ends, after its tier is gone, so that the next
    // size's "before" may count them.
    let min: u32 = std::env::var("ACOMP_SCALE_MIN_LOG2")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(14);
    for log2 in (14..=max.min(20)).step_by(2).filter(|&l| l >= min) {
        scale(&mut c, &base, log2);
    }
    c.final_summary();
}
