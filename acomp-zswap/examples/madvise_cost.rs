//! What the kernel's side of the pool's backing pages costs on this machine, the calls the
//! arena makes (`src/pool/arena.rs`, `src/sys/chunk.rs`) timed alone: populating a 2 MiB
//! chunk (`MADV_POPULATE_WRITE`; and with `MADV_HUGEPAGE` before it, which the arena does
//! not ask) in fresh memory and in memory the kernel has just had back, and giving pages back (`MADV_DONTNEED`) one at a time and in
//! runs of 8, with and without another thread of the process running on another CPU (whose
//! TLB the kernel must then shoot down: an interrupt, which a VM pays dearly). The figures
//! behind `Builder::arena_thread` (BENCHMARKS.md, "The arena's thread").
//!
//! ```sh
//! cargo run --release -p acomp-zswap --example madvise_cost
//! ```

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

const CHUNK: usize = 2 << 20;
const PAGE: usize = 4096;
const CHUNKS: usize = 32;

/// A chunk-aligned anonymous mapping of `CHUNK` bytes, its huge pages asked for where `huge`.
fn map_chunk(huge: bool) -> (*mut libc::c_void, *mut u8) {
    // SAFETY: a new private anonymous mapping, checked against MAP_FAILED; the aligned
    // chunk inside it is used only by this program.
    unsafe {
        let raw = libc::mmap(
            std::ptr::null_mut(),
            2 * CHUNK,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        );
        assert_ne!(raw, libc::MAP_FAILED, "mmap");
        let chunk = (raw as usize).next_multiple_of(CHUNK) as *mut u8;
        if huge {
            libc::madvise(chunk.cast(), CHUNK, libc::MADV_HUGEPAGE);
        }
        (raw, chunk)
    }
}

/// µs to populate each of `CHUNKS` chunks; with `reuse`, each unmapped before the next, so
/// that the kernel hands the same memory back.
fn populate(reuse: bool, huge: bool) -> f64 {
    let mut total = 0.0;
    let mut keep = Vec::new();
    for _ in 0..CHUNKS {
        let t = Instant::now();
        let (raw, chunk) = map_chunk(huge);
        // SAFETY: `chunk` is CHUNK bytes of the mapping just made.
        unsafe { libc::madvise(chunk.cast(), CHUNK, libc::MADV_POPULATE_WRITE) };
        total += t.elapsed().as_secs_f64() * 1e6;
        if reuse {
            // SAFETY: the whole mapping made above, unmapped once.
            unsafe { libc::munmap(raw, 2 * CHUNK) };
        } else {
            keep.push(raw);
        }
    }
    for raw in keep {
        // SAFETY: each mapping made above, unmapped once.
        unsafe { libc::munmap(raw, 2 * CHUNK) };
    }
    total / CHUNKS as f64
}

/// µs per `MADV_DONTNEED` call giving a populated chunk back in runs of `run` pages.
fn give_back(run: usize) -> f64 {
    let mut total = 0.0;
    let mut calls = 0;
    for _ in 0..CHUNKS {
        let (raw, chunk) = map_chunk(false);
        // SAFETY: `chunk` is CHUNK bytes of the mapping just made; every run lies in it.
        unsafe {
            libc::madvise(chunk.cast(), CHUNK, libc::MADV_POPULATE_WRITE);
            for first in (0..CHUNK / PAGE).step_by(run) {
                let t = Instant::now();
                libc::madvise(
                    chunk.add(first * PAGE).cast(),
                    run * PAGE,
                    libc::MADV_DONTNEED,
                );
                total += t.elapsed().as_secs_f64() * 1e6;
                calls += 1;
            }
            libc::munmap(raw, 2 * CHUNK);
        }
    }
    total / calls as f64
}

fn main() {
    for huge in [false, true] {
        println!(
            "populate a 2 MiB chunk{}: fresh memory {:.0} us, memory just given back {:.0} us",
            if huge { ", MADV_HUGEPAGE" } else { "" },
            populate(false, huge),
            populate(true, huge)
        );
    }
    for other in [false, true] {
        let stop = AtomicBool::new(false);
        std::thread::scope(|s| {
            if other {
                s.spawn(|| {
                    while !stop.load(Ordering::Relaxed) {
                        std::hint::spin_loop();
                    }
                });
            }
            let (one, eight) = (give_back(1), give_back(8));
            println!(
                "MADV_DONTNEED, {}: {one:.2} us a call for 1 page, {eight:.2} us for a run of 8",
                if other {
                    "another thread running"
                } else {
                    "one thread"
                }
            );
            stop.store(true, Ordering::Relaxed);
        });
    }
}
