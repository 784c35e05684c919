//! `--budget` and `--swap-file`: the pages stored in the tier under a memory budget, the
//! coldest written back to a swap file, then every page loaded in a random order and
//! checked, with the latency of each load by where it came from (memory, device).

use std::path::{Path, PathBuf};
use std::time::Instant;

use acomp::Acomp;
use acomp_zswap::{LoadKind, PAGE_SIZE, Stats, StoreError, SwapFile, Zswap};
use rand::SeedableRng;
use rand::rngs::StdRng;
use rand::seq::SliceRandom;

use acomp_pages::input::Input;

use crate::measure::{Latency, latency, timed, us};

/// Parses a size in bytes: a number, with an optional `K`, `M` or `G` (powers of 1024).
///
/// # Errors
///
/// A message naming the text where it is not such a size, or is 0.
pub fn parse_bytes(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let (num, shift) = match t.char_indices().last() {
        Some((i, 'K' | 'k')) => (&t[..i], 10),
        Some((i, 'M' | 'm')) => (&t[..i], 20),
        Some((i, 'G' | 'g')) => (&t[..i], 30),
        _ => (t, 0),
    };
    let n: u64 = num
        .parse()
        .map_err(|_| format!("{s:?} is not a size in bytes (a number, K, M or G after it)"))?;
    match n.checked_shl(shift).filter(|&v| v >> shift == n && v > 0) {
        Some(v) => Ok(v),
        None => Err(format!("{s:?} is not a size between 1 byte and 2^64")),
    }
}

/// What one run under the budget measured.
#[derive(Debug)]
pub struct TierRun {
    /// Pages offered.
    pub pages: usize,
    /// The budget in bytes, and whether it was chosen (a quarter of the pool without one).
    pub budget: u64,
    /// The pool's bytes without a budget, where measured to choose the budget.
    pub unbudgeted: Option<u64>,
    /// The swap file, if any.
    pub swap_file: Option<PathBuf>,
    /// Threads storing and loading.
    pub threads: usize,
    /// Seconds storing every page.
    pub store_s: f64,
    /// Stores refused (the page stays with the caller).
    pub refused: u64,
    /// Counters after the stores.
    pub stats: Stats,
    /// Load latencies in nanoseconds: from memory, from the device.
    pub memory_ns: Latency,
    /// As `memory_ns`, from the device.
    pub device_ns: Latency,
    /// Loads that failed or gave other bytes than stored (each a failure).
    pub failed: Vec<String>,
}

fn tier(tfm: Acomp, budget: u64, swap_file: Option<&Path>) -> Result<Zswap, String> {
    let mut b = Zswap::builder(tfm).max_pool_bytes(budget);
    if let Some(path) = swap_file {
        let f =
            SwapFile::create(path).map_err(|e| format!("cannot create {}: {e}", path.display()))?;
        b = b.device(f);
    }
    b.build().map_err(|e| e.to_string())
}

/// Stores every page of `input` under `budget` (where `None`, a quarter of what the pool
/// takes without one) with `swap_file` as the device, on `threads` threads, then loads
/// every page back in a random order (by `seed`) and checks it.
///
/// # Errors
///
/// The swap file cannot be created, or the transform cannot be made.
pub fn run(
    make: &dyn Fn() -> Result<Acomp, acomp::Error>,
    input: &Input,
    budget: Option<u64>,
    swap_file: Option<&Path>,
    threads: usize,
    seed: u64,
) -> Result<TierRun, Box<dyn std::error::Error>> {
    let n = input.len();
    let threads = threads.clamp(1, n.max(1));
    let (budget, unbudgeted) = match budget {
        Some(b) => (b, None),
        None => {
            let z = tier(make()?, u64::MAX, None)?;
            for i in 0..n {
                z.store(i as u64, input.page(i))
                    .map_err(|e| e.to_string())?;
            }
            let size = z.stats().pool_total_size;
            ((size / 4).max(PAGE_SIZE as u64), Some(size))
        }
    };
    let z = tier(make()?, budget, swap_file)?;
    let t = Instant::now();
    let refused: u64 = std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|t| {
                let z = &z;
                s.spawn(move || {
                    let mut refused = 0;
                    for i in (t..n).step_by(threads) {
                        match z.store(i as u64, input.page(i)) {
                            Ok(_) => {}
                            Err(StoreError::PoolFull | StoreError::Writeback(_)) => refused += 1,
                            Err(_) => refused += 1,
                        }
                    }
                    refused
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("a store thread"))
            .sum()
    });
    let store_s = t.elapsed().as_secs_f64();
    let stats = z.stats();
    let mut order: Vec<usize> = (0..n).collect();
    order.shuffle(&mut StdRng::seed_from_u64(seed));
    let (mut memory_ns, mut device_ns, mut failed) = (latency(), latency(), Vec::new());
    std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|t| {
                let (z, order) = (&z, &order);
                s.spawn(move || {
                    let (mut mem, mut dev, mut bad) = (latency(), latency(), Vec::new());
                    let mut out = [0u8; PAGE_SIZE];
                    for &i in order.iter().skip(t).step_by(threads) {
                        let (res, ns) = timed(|| z.load(i as u64, &mut out));
                        match res {
                            Ok(kind) if out == *input.page(i) => match kind {
                                LoadKind::Device => dev.saturating_record(ns),
                                _ => mem.saturating_record(ns),
                            },
                            Ok(_) => bad.push(format!("page {i}: other bytes than stored")),
                            // A page refused at store time is the caller's, as zswap's.
                            Err(acomp_zswap::LoadError::NotFound) => {}
                            Err(e) => bad.push(format!("page {i}: {e}")),
                        }
                    }
                    (mem, dev, bad)
                })
            })
            .collect();
        for h in handles {
            let (m, d, b) = h.join().expect("a load thread");
            memory_ns.add(&m).expect("same bounds");
            device_ns.add(&d).expect("same bounds");
            failed.extend(b);
        }
    });
    let loaded = (memory_ns.len() + device_ns.len()) as usize;
    if loaded + refused as usize != n && failed.is_empty() {
        failed.push(format!(
            "{} pages neither loaded nor refused",
            n - loaded - refused as usize
        ));
    }
    Ok(TierRun {
        pages: n,
        budget,
        unbudgeted,
        swap_file: swap_file.map(Path::to_path_buf),
        threads,
        store_s,
        refused,
        stats,
        memory_ns,
        device_ns,
        failed,
    })
}

fn mib(bytes: f64) -> f64 {
    bytes / (1 << 20) as f64
}

/// Quantile `q` of `h` as `12.3 us`, or `-` where nothing was timed.
fn us_text(h: &Latency, q: f64) -> String {
    if h.is_empty() {
        return "-".into();
    }
    format!("{:.1} us", us(h, q))
}

/// Prints the run.
pub fn print(r: &TierRun, label: &str) {
    let s = &r.stats;
    println!();
    println!(
        "tier under a budget: {} pages ({:.1} MiB), {label}, {} threads",
        r.pages,
        mib((r.pages * PAGE_SIZE) as f64),
        r.threads
    );
    let chosen = r.unbudgeted.map_or(String::new(), |u| {
        format!(
            " (a quarter of the {:.1} MiB the pool takes without one)",
            mib(u as f64)
        )
    });
    let device = r
        .swap_file
        .as_ref()
        .map_or("no device: stores at the budget are refused".into(), |p| {
            format!("swap file {}", p.display())
        });
    println!("  budget {:.2} MiB{chosen}; {device}", mib(r.budget as f64));
    println!(
        "  stored in {:.2} s ({:.0} MiB/s), {} refused; pool {:.2} of {:.2} MiB, limit hit {} times",
        r.store_s,
        mib((r.pages * PAGE_SIZE) as f64) / r.store_s.max(1e-9),
        r.refused,
        mib(s.pool_total_size as f64),
        mib(s.max_pool_size as f64),
        s.pool_limit_hit
    );
    println!(
        "  written back {} pages (batches of up to {}), {} write failures; on the device {}",
        s.written_back_pages,
        acomp_zswap::WRITEBACK_BATCH,
        s.device_write_fail,
        s.device_pages
    );
    println!("  every page loaded in a random order and checked:");
    println!(
        "    from memory {:>8} pages   p50 {:>9}   p99 {:>9}",
        r.memory_ns.len(),
        us_text(&r.memory_ns, 0.5),
        us_text(&r.memory_ns, 0.99)
    );
    println!(
        "    from device {:>8} pages   p50 {:>9}   p99 {:>9}",
        r.device_ns.len(),
        us_text(&r.device_ns, 0.5),
        us_text(&r.device_ns, 0.99)
    );
    for f in r.failed.iter().take(10) {
        println!("  FAILED: {f}");
    }
}

#[cfg(test)]
mod tests {
    use super::parse_bytes;

    #[test]
    fn sizes_parse() {
        assert_eq!(parse_bytes("4096"), Ok(4096));
        assert_eq!(parse_bytes("64K"), Ok(64 << 10));
        assert_eq!(parse_bytes("16M"), Ok(16 << 20));
        assert_eq!(parse_bytes("1g"), Ok(1 << 30));
        assert!(parse_bytes("0").is_err());
        assert!(parse_bytes("12X").unwrap_err().contains("12X"));
        assert!(parse_bytes("99999999999G").is_err());
    }
}
