//! `--pager`: what both sides of the paging comparison share. The input's pages sit in a
//! mapping (a pager region, or an ordinary anonymous mapping swapped to the kernel's zram),
//! are paged out, then touched back in a fixed random order ([`random_order`]) or a Zipf
//! order ([`zipf_order`]); the first access of every page that had left memory is timed
//! from the program's side ([`Mapping::touch`]), the same way on both sides, and every page is
//! checked afterwards ([`Mapping::verify`]). The rows ([`Row`]) go into a table of their own and
//! `--json`'s `paging` array.

use std::io;
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;
use serde::Serialize;

use acomp_pages::input::Input;
use acomp_zswap::PAGE_SIZE;

/// The Zipf order's exponent: 0.99, YCSB's default.
pub const ZIPF_EXPONENT: f64 = 0.99;

/// `kind` of the pager's rows.
pub const KIND_PAGER: &str = "pager";
/// `kind` of the pager's rows with its faults served on the faulting thread
/// (`Builder::signal_faults`).
pub const KIND_PAGER_SIGNAL: &str = "pager-signal";
/// `kind` of the kernel's rows.
pub const KIND_ZRAM_SWAP: &str = "zram-swap";

/// The order pages are touched back in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Order {
    /// Every page once, in a random permutation fixed by the seed.
    Random,
    /// As many touches as pages, each page drawn with Zipf probabilities (rank `r` with
    /// weight `1 / r^`[`ZIPF_EXPONENT`]) over the pages in a random permutation fixed by
    /// the seed; a page's later touches find it resident, pages never drawn stay out.
    Zipf,
    /// Every page once, first to last: a sweep (the pager's fault-around brings the pages
    /// after a fault in with it; zram's swap-in reads one page a fault).
    Sequential,
}

impl Order {
    /// Every order, in the order a run measures them.
    pub const ALL: [Order; 3] = [Order::Random, Order::Zipf, Order::Sequential];

    /// `random`, `zipf`, `sequential`: the rows' `order`.
    pub fn name(self) -> &'static str {
        match self {
            Order::Random => "random",
            Order::Zipf => "zipf",
            Order::Sequential => "sequential",
        }
    }

    /// The page indices touched, in order, for `pages` pages and `seed`.
    pub fn touches(self, pages: usize, seed: u64) -> Vec<u32> {
        match self {
            Order::Random => random_order(pages, seed),
            Order::Zipf => zipf_order(pages, pages, ZIPF_EXPONENT, seed),
            Order::Sequential => (0..pages as u32).collect(),
        }
    }
}

/// SplitMix64 (Steele, Lea and Flood, 2014): a generator fixed here, so that an order
/// depends on the seed alone, never on a crate's version.
#[derive(Debug, Clone)]
pub struct SplitMix64(u64);

impl SplitMix64 {
    /// A generator starting from `seed`.
    pub fn new(seed: u64) -> SplitMix64 {
        SplitMix64(seed)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A number in `0..n` (`n` > 0), by Lemire's multiply-shift (its bias, under 2^-32 for
    /// the page counts here, is of no matter to a touch order).
    pub fn below(&mut self, n: u64) -> u64 {
        ((u128::from(self.next_u64()) * u128::from(n)) >> 64) as u64
    }

    /// A number in `[0, 1)` with 53 random bits.
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// Every page index of `0..pages` once, shuffled (Fisher–Yates) by `seed`.
///
/// # Panics
///
/// If `pages` exceeds `u32::MAX`.
pub fn random_order(pages: usize, seed: u64) -> Vec<u32> {
    let mut order: Vec<u32> = (0..u32::try_from(pages).expect("at most 2^32 pages")).collect();
    let mut rng = SplitMix64::new(seed);
    for i in (1..order.len()).rev() {
        let j = rng.below(i as u64 + 1) as usize;
        order.swap(i, j);
    }
    order
}

/// `touches` page indices of `0..pages`, each drawn with Zipf probabilities of exponent `s`
/// over the ranks, rank `r` (from 1) being page `random_order(pages, seed)[r - 1]`, so the
/// hot pages are spread over the region. The draws use a generator of their own, seeded
/// from `seed` too.
///
/// # Panics
///
/// If `pages` exceeds `u32::MAX`.
pub fn zipf_order(pages: usize, touches: usize, s: f64, seed: u64) -> Vec<u32> {
    if pages == 0 {
        return Vec::new();
    }
    let rank_to_page = random_order(pages, seed);
    let mut cdf = Vec::with_capacity(pages);
    let mut sum = 0.0;
    for r in 1..=pages {
        sum += (r as f64).powf(-s);
        cdf.push(sum);
    }
    let mut rng = SplitMix64::new(seed ^ 0x5A1F_5A1F_5A1F_5A1F);
    (0..touches)
        .map(|_| {
            let u = rng.unit() * sum;
            let rank = cdf.partition_point(|&c| c <= u).min(pages - 1);
            rank_to_page[rank]
        })
        .collect()
}

/// One side's figures for one order. Field names carry their units.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Row {
    /// `pager lz4, random order`, `zram-swap lzo-rle, zipf order`.
    pub name: String,
    /// [`KIND_PAGER`] or [`KIND_ZRAM_SWAP`].
    pub kind: String,
    /// The compression algorithm: the tier's, or zram's `comp_algorithm`.
    pub algorithm: String,
    /// `random` or `zipf` ([`Order::name`]).
    pub order: String,
    /// Pages in the mapping.
    pub pages: u64,
    /// Pages that left memory on page-out (not resident by `mincore` after it).
    pub paged_out_pages: u64,
    /// Pages page-out left resident (`pages - paged_out_pages`).
    pub resident_after_page_out: u64,
    /// `resident_bytes + store_bytes`.
    pub memory_bytes: u64,
    /// The mapping's resident bytes after page-out: its pages `mincore` finds resident, ×
    /// 4096 (its own range exactly; smaps's `Rss` is per VMA, which the kernel may merge
    /// with a neighbour).
    pub resident_bytes: u64,
    /// What holds the pages paged out: the tier's `pool_total_size`, or zram's `mm_stat`
    /// `mem_used_total`, after page-out.
    pub store_bytes: u64,
    /// `paged_out_pages` × 4096 bytes in MiB over the seconds of the page-out call
    /// (`Region::page_out`, or `madvise(MADV_PAGEOUT)`).
    pub page_out_mib_s: f64,
    /// Seconds of the page-out call.
    pub page_out_s: f64,
    /// First accesses timed: those of pages paged out (each page's first touch).
    pub faults: u64,
    /// Latency of a first access to a paged-out page: the clock read before and after one
    /// volatile byte read of the page, in µs; `null` without faults.
    pub fault_p50_us: Option<f64>,
    /// See `fault_p50_us`.
    pub fault_p99_us: Option<f64>,
    /// First accesses to paged-out pages a second: `faults` over the sum of their
    /// latencies (a sweep's pages a second, in the sequential order).
    pub touch_pages_s: f64,
    /// Pages equal to the input's after the touches (every page is read, those never
    /// touched fault in then, untimed).
    pub verified_pages: u64,
}

/// What one page-out and its touches measured, before it is a [`Row`].
#[derive(Debug, Clone, Default)]
pub struct Pass {
    /// See [`Row::paged_out_pages`].
    pub paged_out_pages: u64,
    /// See [`Row::resident_bytes`].
    pub resident_bytes: u64,
    /// See [`Row::store_bytes`].
    pub store_bytes: u64,
    /// The page-out call's time.
    pub page_out: Duration,
    /// First-access latencies of paged-out pages, in ns.
    pub faults: Vec<u64>,
    /// See [`Row::verified_pages`].
    pub verified_pages: u64,
}

fn latency() -> Histogram<u64> {
    Histogram::new_with_bounds(1, 60_000_000_000, 3).expect("valid bounds")
}

/// `bytes` in MiB over `time` in seconds.
pub fn mib_s(bytes: u64, time: Duration) -> f64 {
    bytes as f64 / (1024.0 * 1024.0) / time.as_secs_f64().max(1e-9)
}

impl Row {
    /// The row of `pass` over `pages` pages.
    pub fn new(kind: &str, algorithm: &str, order: Order, pages: u64, pass: &Pass) -> Row {
        let mut h = latency();
        for &ns in &pass.faults {
            h.saturating_record(ns.max(1));
        }
        let us = |q: f64| (!h.is_empty()).then(|| h.value_at_quantile(q) as f64 / 1000.0);
        Row {
            name: format!("{kind} {algorithm}, {} order", order.name()),
            kind: kind.to_owned(),
            algorithm: algorithm.to_owned(),
            order: order.name().to_owned(),
            pages,
            paged_out_pages: pass.paged_out_pages,
            resident_after_page_out: pages - pass.paged_out_pages.min(pages),
            memory_bytes: pass.resident_bytes + pass.store_bytes,
            resident_bytes: pass.resident_bytes,
            store_bytes: pass.store_bytes,
            page_out_mib_s: mib_s(pass.paged_out_pages * PAGE_SIZE as u64, pass.page_out),
            page_out_s: pass.page_out.as_secs_f64(),
            faults: pass.faults.len() as u64,
            fault_p50_us: us(0.5),
            fault_p99_us: us(0.99),
            touch_pages_s: pass.faults.len() as f64
                / (pass.faults.iter().sum::<u64>() as f64 / 1e9).max(1e-9),
            verified_pages: pass.verified_pages,
        }
    }
}

/// A mapping of `pages` pages at `ptr`, as both sides measure it. Every method reads or
/// writes only inside it.
#[derive(Debug, Clone, Copy)]
pub struct Mapping {
    ptr: *mut u8,
    pages: usize,
}

impl Mapping {
    /// # Safety
    ///
    /// - `ptr` is page-aligned and `pages` × 4096 bytes from it are mapped readable and
    ///   writable for as long as the `Mapping` is used;
    /// - nothing else reads or writes them meanwhile (the pager's handler places pages
    ///   there, which the program's accesses wait for, as with the kernel's swap-in).
    pub unsafe fn new(ptr: *mut u8, pages: usize) -> Mapping {
        Mapping { ptr, pages }
    }

    /// The first byte.
    pub fn ptr(&self) -> *mut u8 {
        self.ptr
    }

    /// Bytes.
    pub fn len(&self) -> usize {
        self.pages * PAGE_SIZE
    }

    /// Whether it has no pages.
    pub fn is_empty(&self) -> bool {
        self.pages == 0
    }

    /// Copies the input's pages in (every page written: every page resident after).
    pub fn fill(&self, input: &Input) {
        assert_eq!(input.len(), self.pages, "one input page per mapped page");
        // SAFETY:
        // - the destination is `len()` bytes inside the mapping (`Mapping::new`'s
        //   contract), the source the input's as many bytes;
        // - they cannot overlap: the input is the program's own heap allocation.
        unsafe {
            std::ptr::copy_nonoverlapping(
                input.pages(0, self.pages).as_ptr(),
                self.ptr,
                self.len(),
            );
        }
    }

    /// Which pages are resident (`mincore(2)`: for anonymous memory, in RAM or in the swap
    /// cache), one `bool` per page.
    ///
    /// # Errors
    ///
    /// `mincore`'s.
    pub fn resident(&self) -> io::Result<Vec<bool>> {
        let mut vec = vec![0u8; self.pages];
        if self.pages == 0 {
            return Ok(Vec::new());
        }
        // SAFETY:
        // - `ptr` is page-aligned and `len()` bytes are mapped (`Mapping::new`);
        // - `vec` holds one byte per page of that range, as mincore writes.
        let rc = unsafe { libc::mincore(self.ptr.cast(), self.len(), vec.as_mut_ptr()) };
        if rc != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(vec.iter().map(|b| b & 1 == 1).collect())
    }

    /// Which pages are not resident (`mincore`): those a page-out moved out of memory.
    ///
    /// # Errors
    ///
    /// A line saying that `mincore` failed, and why.
    pub fn paged_out(&self) -> Result<Vec<bool>, String> {
        Ok(self
            .resident()
            .map_err(|e| format!("mincore: {e}"))?
            .iter()
            .map(|r| !r)
            .collect())
    }

    /// The first access of every page of `order` that `out` marks (paged out), timed: the
    /// clock read before and after a volatile read of the page's first byte. Pages touched
    /// again, or never paged out, are read untimed. Stops early, returning what it has,
    /// where `stop` says so (checked every 1024 touches).
    pub fn touch(&self, order: &[u32], out: &[bool], stop: &dyn Fn() -> bool) -> Vec<u64> {
        let mut seen = vec![false; self.pages];
        let mut faults = Vec::with_capacity(out.iter().filter(|&&o| o).count());
        for (n, &p) in order.iter().enumerate() {
            if n % 1024 == 0 && stop() {
                break;
            }
            let p = p as usize;
            assert!(p < self.pages, "page {p} outside the mapping");
            // SAFETY: page `p` lies inside the mapping (asserted above; `Mapping::new`).
            let byte = unsafe { self.ptr.add(p * PAGE_SIZE) };
            if out[p] && !seen[p] {
                let start = Instant::now();
                // SAFETY: `byte` is inside the mapping, readable (`Mapping::new`).
                unsafe { std::ptr::read_volatile(byte) };
                faults.push(start.elapsed().as_nanos() as u64);
            } else {
                // SAFETY: as above.
                unsafe { std::ptr::read_volatile(byte) };
            }
            seen[p] = true;
        }
        faults
    }

    /// Pages equal to the input's (pages not yet back fault in here).
    pub fn verify(&self, input: &Input) -> u64 {
        // SAFETY: `len()` readable bytes at `ptr` (`Mapping::new`), not written while this
        // borrow lives (the caller's accesses are over).
        let mapped = unsafe { std::slice::from_raw_parts(self.ptr, self.len()) };
        mapped
            .chunks_exact(PAGE_SIZE)
            .enumerate()
            .filter(|&(i, page)| page == input.page(i).as_slice())
            .count() as u64
    }
}

/// Issue 37's goal for the pager against the kernel's zram swap with the same algorithm and
/// order: fault p50 at most 1.0x, p99 at most 1.5x, page-out at least 1.0x, memory at most
/// 1.0x; every page verified.
pub const GOAL_FAULT_P50: f64 = 1.0;
/// See [`GOAL_FAULT_P50`].
pub const GOAL_FAULT_P99: f64 = 1.5;

/// Issue 37's memory goal for the pager's tier with idle pages recompressed by zstd
/// (`lz4+zstd`): at most this times zram-swap lzo-rle's memory, the same order.
pub const GOAL_RECOMPRESSED_MEMORY: f64 = 0.65;

/// A goal line per pager row that has a zram-swap row of its algorithm and order beside it,
/// and for a recompressed row (`lz4+zstd`) its memory against zram-swap lzo-rle's.
pub fn goals(rows: &[Row]) -> Vec<String> {
    let ratio = |a: Option<f64>, b: Option<f64>| Some(a? / b?);
    let recompressed = rows
        .iter()
        .filter(|r| r.kind == KIND_PAGER && r.algorithm.contains('+'))
        .filter_map(|p| {
            let k = rows.iter().find(|k| {
                k.kind == KIND_ZRAM_SWAP && k.algorithm == "lzo-rle" && k.order == p.order
            })?;
            let mem = p.memory_bytes as f64 / k.memory_bytes.max(1) as f64;
            let ok = mem <= GOAL_RECOMPRESSED_MEMORY && p.verified_pages == p.pages;
            Some(format!(
                "{} against zram-swap lzo-rle's: memory {mem:.3}x ({} <= \
                 {GOAL_RECOMPRESSED_MEMORY:.2}x), {} of {} pages verified: {}",
                p.name,
                if mem <= GOAL_RECOMPRESSED_MEMORY {
                    "ok"
                } else {
                    "MISSED"
                },
                p.verified_pages,
                p.pages,
                if ok { "goal met" } else { "goal not met" }
            ))
        });
    let same: Vec<String> = rows
        .iter()
        .filter(|r| r.kind == KIND_PAGER || r.kind == KIND_PAGER_SIGNAL)
        .filter_map(|p| {
            let k = rows.iter().find(|k| {
                k.kind == KIND_ZRAM_SWAP && k.algorithm == p.algorithm && k.order == p.order
            })?;
            let p50 = ratio(p.fault_p50_us, k.fault_p50_us)?;
            let p99 = ratio(p.fault_p99_us, k.fault_p99_us)?;
            let out = p.page_out_mib_s / k.page_out_mib_s;
            let mem = p.memory_bytes as f64 / k.memory_bytes.max(1) as f64;
            let verified = p.verified_pages == p.pages;
            let mark = |ok: bool| if ok { "ok" } else { "MISSED" };
            let all = p50 <= GOAL_FAULT_P50
                && p99 <= GOAL_FAULT_P99
                && out >= 1.0
                && mem <= 1.0
                && verified;
            Some(format!(
                "{} against zram-swap's: fault p50 {p50:.2}x ({} <= {GOAL_FAULT_P50:.1}x), p99 \
                 {p99:.2}x ({} <= {GOAL_FAULT_P99:.1}x), page-out {out:.2}x ({} >= 1x), memory \
                 {mem:.3}x ({} <= 1x), {} of {} pages verified: {}",
                p.name,
                mark(p50 <= GOAL_FAULT_P50),
                mark(p99 <= GOAL_FAULT_P99),
                mark(out >= 1.0),
                mark(mem <= 1.0),
                p.verified_pages,
                p.pages,
                if all { "goal met" } else { "goal not met" }
            ))
        })
        .collect();
    same.into_iter().chain(recompressed).collect()
}

/// The number of `true`s.
pub fn count(flags: &[bool]) -> u64 {
    flags.iter().filter(|&&f| f).count() as u64
}

fn opt(v: Option<f64>) -> String {
    v.map_or("-".into(), |v| format!("{v:.2}"))
}

/// A skipped side's line: `pager: not measured: REASON`.
pub fn skip_line(side: &str, why: &str) -> String {
    format!("{side}: not measured: {why}")
}

/// Prints the table of paging rows, and a line for any row with pages that did not come
/// back or did not leave.
pub fn print(rows: &[Row]) {
    let Some(first) = rows.first() else { return };
    println!();
    println!(
        "paged out and touched back: the same {} pages ({:.1} MiB) in a mapping, one thread",
        first.pages,
        (first.pages * PAGE_SIZE as u64) as f64 / (1024.0 * 1024.0)
    );
    let w = rows.iter().map(|r| r.name.len()).max().unwrap_or(0).max(30);
    println!(
        "  {:<w$} {:>14} {:>12} {:>9} {:>9} {:>8} {:>8} {:>9} {:>8}",
        "configuration",
        "memory",
        "resident",
        "paged",
        "page-out",
        "fault",
        "fault",
        "touched",
        "verified"
    );
    println!(
        "  {:<w$} {:>14} {:>12} {:>9} {:>9} {:>8} {:>8} {:>9} {:>8}",
        "", "(bytes)", "(bytes)", "out", "MiB/s", "p50 us", "p99 us", "pages/s", "pages"
    );
    for r in rows {
        println!(
            "  {:<w$} {:>14} {:>12} {:>9} {:>9.1} {:>8} {:>8} {:>9.0} {:>8}",
            r.name,
            r.memory_bytes,
            r.resident_bytes,
            r.paged_out_pages,
            r.page_out_mib_s,
            opt(r.fault_p50_us),
            opt(r.fault_p99_us),
            r.touch_pages_s,
            r.verified_pages
        );
    }
    println!("  memory: the mapping's pages still resident (mincore) after page-out, plus the");
    println!(
        "  tier's pool (pager) or zram's mem_used_total (zram-swap); page-out: pages that left"
    );
    println!(
        "  memory (mincore) over the call's time; fault: a paged-out page's first access, timed"
    );
    println!("  around one byte read (pages touched again, or never paged out, are not timed);");
    println!("  touched: those first accesses a second (a sweep's pages/s, sequential order)");
    for r in rows {
        if r.verified_pages != r.pages {
            println!(
                "  {}: ONLY {} OF {} PAGES CAME BACK AS STORED",
                r.name, r.verified_pages, r.pages
            );
        }
        if r.resident_after_page_out != 0 {
            println!(
                "  {}: {} of {} pages stayed resident after page-out",
                r.name, r.resident_after_page_out, r.pages
            );
        }
    }
    for line in goals(rows) {
        println!("  goal: {line}");
    }
}
