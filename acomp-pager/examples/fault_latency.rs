//! Fault latency of a pager region: the pages of a file (default: this program) written
//! into a region, paged out, and read back one byte each in a random order, each read
//! timed; then the handler's own share (`Stats::fault_service_*`).
//!
//! `cargo run --release -p acomp-pager --example fault_latency -- [FILE] [PASSES]`

use rand::SeedableRng;
use rand::rngs::StdRng;
use rand::seq::SliceRandom;
use std::sync::Arc;
use std::time::Instant;

use acomp_pager::{PAGE_SIZE, Pager};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let file = args
        .next()
        .map_or_else(|| std::env::current_exe().unwrap(), Into::into);
    let passes: usize = args.next().map_or(Ok(3), |s| s.parse())?;
    let bytes = std::fs::read(&file)?;
    let pages = bytes.len().div_ceil(PAGE_SIZE).min(1 << 16);
    let tier = Arc::new(
        acomp_zswap::Zswap::builder(acomp::Acomp::new("lz4")?)
            .max_pool_bytes(1 << 30)
            .build()?,
    );
    let handlers = std::env::var("HANDLERS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(2);
    let spin_us = std::env::var("SPIN_US")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(50);
    let pager = Pager::builder(tier)
        .handler_threads(handlers)
        .handler_spin(std::time::Duration::from_micros(spin_us))
        .build()?;
    let region = pager.region(pages * PAGE_SIZE)?;
    let ptr = region.as_ptr();
    let n = bytes.len().min(pages * PAGE_SIZE);
    // SAFETY: the region is `pages` pages, readable and writable, alive until the end.
    unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), ptr, n) };
    let mut order: Vec<usize> = (0..pages).collect();
    order.shuffle(&mut StdRng::seed_from_u64(1));
    for pass in 0..passes {
        let start = Instant::now();
        let moved = region.page_out(0, pages * PAGE_SIZE)?;
        let out = start.elapsed();
        let before = pager.stats();
        let mut times = Vec::with_capacity(pages);
        for &p in &order {
            let t = Instant::now();
            // SAFETY: inside the region.
            unsafe { std::ptr::read_volatile(ptr.add(p * PAGE_SIZE)) };
            times.push(t.elapsed().as_nanos() as u64);
        }
        times.sort_unstable();
        // SAFETY: inside the region, every page mapped back by now.
        let back = unsafe { std::slice::from_raw_parts(ptr, n) };
        assert!(back == &bytes[..n], "a page came back wrong");
        let s = pager.stats();
        println!(
            "pass {pass}: {moved} pages out at {:.0} MiB/s; fault p50 {:.2} us p99 {:.2} us; \
             handler p50 {:.2} us p99 {:.2} us (cumulative); {} faults, {} deferred",
            (moved * PAGE_SIZE) as f64 / out.as_secs_f64() / (1 << 20) as f64,
            times[times.len() / 2] as f64 / 1e3,
            times[times.len() * 99 / 100] as f64 / 1e3,
            s.fault_service_p50_ns as f64 / 1e3,
            s.fault_service_p99_ns as f64 / 1e3,
            s.faults - before.faults,
            s.deferred_faults - before.deferred_faults,
        );
        // Each pass pages out freshly written pages (as the main job does).
        unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), ptr, n) };
    }
    // The floor: faults on pages never written (the zero page mapped, the tier not asked).
    let fresh = pager.region(pages * PAGE_SIZE)?;
    let mut times = Vec::with_capacity(pages);
    for &p in &order {
        let t = Instant::now();
        // SAFETY: inside the region.
        unsafe { std::ptr::read_volatile(fresh.as_ptr().add(p * PAGE_SIZE)) };
        times.push(t.elapsed().as_nanos() as u64);
    }
    times.sort_unstable();
    println!(
        "zero faults: p50 {:.2} us p99 {:.2} us",
        times[times.len() / 2] as f64 / 1e3,
        times[times.len() * 99 / 100] as f64 / 1e3
    );
    Ok(())
}
