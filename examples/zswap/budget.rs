//! `--pager --under-budget PERCENTS --zipf EXPONENTS`: the same page-record workload under
//! the same memory on two sides, for each budget and Zipf exponent. The input's first
//! [`MAX_RECORDS`] pages are records of a page each, each record's hash ([`hash`]) kept
//! beside them. A side writes the records into its memory (the limit pages out the surplus
//! as it goes), then runs a warm-up of N accesses (N records; untimed) and a timed stream
//! of 4N ([`stream`]: Zipf draws over the records, the same for both sides). An access
//! reads the whole record, hashes it and compares the hash with the one kept (a mismatch is
//! a wrong record), and one access in ten ([`writes`]) then writes 8 bytes into it (a
//! counter at [`COUNTER_OFFSET`]) and keeps its new hash ([`Records::access`]).
//!
//! - **kernel** (`crate::budgetkernel`): an ordinary anonymous mapping in a child process
//!   in a memory cgroup limited to the budget's percent of the records' bytes, swapping to
//!   a zram lz4 device. Run first: its measured memory is the pager's.
//! - **pager** ([`pager_side`]): a region of acomp-pager over an lz4 tier in this process,
//!   its `memory_limit` (resident pages and the tier's pool together) that memory
//!   ([`pager_for`]), faults served by the handler threads (the default); then
//!   **pager-signal**, the same with faults served on the faulting thread
//!   (`Builder::signal_faults`), and before it **pager-signal-no-direct**, that without
//!   direct reclaim (`Builder::direct_reclaim(false)`); then **pager-recompress**, that with idle
//!   recompression (the tier's `recompress` with zstd, `recompress_every`
//!   [`RECOMPRESS_INTERVAL`]) in [`RECOMPRESS_MEMORY_PERCENT`] of the kernel's memory.
//!
//! A row per side and combination ([`Row`]: `--json`'s `budget` array), a table
//! ([`print()`]), and with `--plot` a plot (`crate::budgetplot`).

use std::sync::Arc;
use std::time::Instant;

use serde::{Deserialize, Serialize};

use acomp_pager::Pager;
use acomp_pages::input::Input;
use acomp_zswap::{PAGE_SIZE, Zswap};

use crate::paging;

/// `kind` of the rows.
pub const KIND: &str = "budget";
/// `side` of the pager's rows.
pub const SIDE_PAGER: &str = "pager";
/// `side` of the pager's rows with its faults served on the faulting thread
/// (`Builder::signal_faults`).
pub const SIDE_PAGER_SIGNAL: &str = "pager-signal";
/// `side` of the pager's rows with its faults served on the faulting thread, reclaim left
/// to the reclaim thread (`Builder::direct_reclaim(false)`): what direct reclaim buys.
pub const SIDE_PAGER_SIGNAL_NO_DIRECT: &str = "pager-signal-no-direct";
/// `side` of the pager's rows with its faults served on the faulting thread and idle
/// pages recompressed with zstd, in [`RECOMPRESS_MEMORY_PERCENT`] of the kernel's memory.
pub const SIDE_PAGER_RECOMPRESS: &str = "pager-recompress";
/// `side` of the kernel's rows.
pub const SIDE_KERNEL: &str = "kernel";

/// The memory of [`SIDE_PAGER_RECOMPRESS`]'s rows: this percent of the kernel's (issue
/// 49's goal: the kernel's speed in 0.8x its memory).
pub const RECOMPRESS_MEMORY_PERCENT: u64 = 80;
/// How often [`SIDE_PAGER_RECOMPRESS`]'s tier marks its entries idle and recompresses
/// those idle since the last mark (`Zswap::recompress_every`): a page left alone in the
/// pool for one to two intervals is recompressed.
pub const RECOMPRESS_INTERVAL: std::time::Duration = std::time::Duration::from_millis(100);
/// The recompression transform of [`SIDE_PAGER_RECOMPRESS`]'s tier.
pub const RECOMPRESS_ALGORITHM: &str = "zstd";

/// How a pager's side runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PagerSide {
    /// [`SIDE_PAGER`], [`SIDE_PAGER_SIGNAL`] or [`SIDE_PAGER_RECOMPRESS`].
    pub side: &'static str,
    /// Faults served on the faulting thread (`Builder::signal_faults`).
    pub signal: bool,
    /// `Builder::direct_reclaim` (with `signal`).
    pub direct: bool,
    /// Idle pages recompressed ([`RECOMPRESS_ALGORITHM`], every [`RECOMPRESS_INTERVAL`]).
    pub recompress: bool,
    /// The pager's memory limit in percent of the memory it is given (the kernel's).
    pub memory_percent: u64,
}

/// The pager's sides, in the order they run.
pub const PAGER_SIDES: [PagerSide; 4] = [
    PagerSide {
        side: SIDE_PAGER,
        signal: false,
        direct: true,
        recompress: false,
        memory_percent: 100,
    },
    PagerSide {
        side: SIDE_PAGER_SIGNAL_NO_DIRECT,
        signal: true,
        direct: false,
        recompress: false,
        memory_percent: 100,
    },
    PagerSide {
        side: SIDE_PAGER_SIGNAL,
        signal: true,
        direct: true,
        recompress: false,
        memory_percent: 100,
    },
    PagerSide {
        side: SIDE_PAGER_RECOMPRESS,
        signal: true,
        direct: true,
        recompress: true,
        memory_percent: RECOMPRESS_MEMORY_PERCENT,
    },
];

/// Records at most: 256 MiB of pages (the input's first this many).
pub const MAX_RECORDS: usize = 65_536;
/// Untimed warm-up accesses per record.
pub const WARM_UP_PER_RECORD: usize = 1;
/// Timed accesses per record.
pub const TIMED_PER_RECORD: usize = 4;
/// One access in this many writes into its record.
pub const WRITE_EVERY: u64 = 10;
/// Where in a record an access that writes puts its counter (8 bytes, native order).
pub const COUNTER_OFFSET: usize = 0;
/// The tier's algorithm on the pager's side, and the zram device's on the kernel's.
pub const ALGORITHM: &str = "lz4";

/// Whether access `n` (counted from 0 over the warm-up and then the timed stream) writes:
/// the tenth, twentieth... (`n % 10 == 9`).
pub fn writes(n: u64) -> bool {
    n % WRITE_EVERY == WRITE_EVERY - 1
}

/// A record's hash: xxh3, 64 bits.
pub fn hash(record: &[u8]) -> u64 {
    xxhash_rust::xxh3::xxh3_64(record)
}

/// The record ids of one side's accesses.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stream {
    /// N accesses, untimed.
    pub warm_up: Vec<u32>,
    /// 4N accesses, timed.
    pub timed: Vec<u32>,
}

/// The accesses for `records` records: [`paging::zipf_order`] of exponent `s` and `seed`
/// (rank `r` is record `random_order(records, seed)[r - 1]`, so hot records are spread over
/// the range), the first N the warm-up, the next 4N the timed stream. A seed gives the same
/// stream on every side and every build.
pub fn stream(records: usize, s: f64, seed: u64) -> Stream {
    let warm = records * WARM_UP_PER_RECORD;
    let mut all = paging::zipf_order(records, warm + records * TIMED_PER_RECORD, s, seed);
    let timed = all.split_off(warm);
    Stream {
        warm_up: all,
        timed,
    }
}

/// Records of a page each in memory at a pointer, and their expected hashes (in this
/// process: the side's own).
#[derive(Debug)]
pub struct Records {
    ptr: *mut u8,
    expected: Vec<u64>,
}

impl Records {
    /// `count` records at `ptr`, none expected yet. The hashes' array is allocated and
    /// written here, so that a process joining a cgroup afterwards has it charged before.
    ///
    /// # Safety
    ///
    /// - `ptr` is page-aligned and `count` × 4096 bytes from it are mapped readable and
    ///   writable for as long as the `Records` is used;
    /// - nothing else in the program reads or writes them meanwhile (a pager's handlers
    ///   place pages there, which the accesses wait for, as for the kernel's swap-in).
    pub unsafe fn new(ptr: *mut u8, count: usize) -> Records {
        Records {
            ptr,
            expected: vec![u64::MAX; count],
        }
    }

    /// Records.
    pub fn len(&self) -> usize {
        self.expected.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.expected.is_empty()
    }

    /// The first byte of record `i`.
    ///
    /// # Panics
    ///
    /// If `i` is not a record.
    fn at(&self, i: usize) -> *mut u8 {
        assert!(i < self.len(), "record {i} of {}", self.len());
        // SAFETY: record `i` lies inside the mapping (asserted above; `Records::new`).
        unsafe { self.ptr.add(i * PAGE_SIZE) }
    }

    /// Record `i`'s bytes as they are now.
    fn record(&self, i: usize) -> &[u8] {
        // SAFETY: a page inside the mapping, readable (`Records::new`); only this
        // `Records` writes it, through `&mut self`, so not while this borrow lives.
        unsafe { std::slice::from_raw_parts(self.at(i), PAGE_SIZE) }
    }

    /// Writes `page` into record `i` and keeps its hash.
    ///
    /// # Panics
    ///
    /// If `page` is not 4096 bytes, or `i` not a record.
    pub fn set(&mut self, i: usize, page: &[u8]) {
        assert_eq!(page.len(), PAGE_SIZE, "a record is a page");
        // SAFETY: the destination is record `i`, a page inside the mapping (`at`),
        // writable; the source is the caller's page, not inside the mapping (a `&[u8]` of
        // it cannot be held beside `&mut self`).
        unsafe { std::ptr::copy_nonoverlapping(page.as_ptr(), self.at(i), PAGE_SIZE) };
        self.expected[i] = hash(page);
    }

    /// Keeps record `i`'s hash as it is now (records written into the mapping otherwise,
    /// as the kernel's side reads them in from a file).
    pub fn keep(&mut self, i: usize) {
        self.expected[i] = hash(self.record(i));
    }

    /// Access `n` to record `id`: reads and hashes the whole record, and where
    /// [`writes`]`(n)`, writes `n` at [`COUNTER_OFFSET`] and keeps the new hash. Whether
    /// the record read was the one expected.
    pub fn access(&mut self, id: u32, n: u64) -> bool {
        let i = id as usize;
        let ok = hash(self.record(i)) == self.expected[i];
        if writes(n) {
            // SAFETY: 8 bytes at COUNTER_OFFSET inside record `i` (`at`), writable;
            // unaligned writes are allowed for any offset.
            unsafe {
                self.at(i)
                    .add(COUNTER_OFFSET)
                    .cast::<u64>()
                    .write_unaligned(n)
            };
            self.keep(i);
        }
        ok
    }

    /// The accesses of `ids`, the first numbered `first`: the wrong records read.
    pub fn run(&mut self, ids: &[u32], first: u64) -> u64 {
        let mut wrong = 0;
        for (n, &id) in (first..).zip(ids) {
            wrong += u64::from(!self.access(id, n));
        }
        wrong
    }
}

/// One side's figures for one budget and exponent. Fields carry their units.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Measured {
    /// The timed accesses over the timed stream's seconds.
    pub ops_per_s: f64,
    /// At the end of the timed stream: `resident_bytes + store_bytes`.
    pub memory_bytes: u64,
    /// The kernel's cgroup usage (`memory.usage_in_bytes`, `memory.current`), or the
    /// pager's resident pages × 4096.
    pub resident_bytes: u64,
    /// zram's `mm_stat` `mem_used_total`, or the tier's `pool_total_size`.
    pub store_bytes: u64,
    /// The kernel's cgroup limit, or the pager's memory limit.
    pub limit_bytes: u64,
    /// Over the timed stream: the child's major faults (`ru_majflt`), or the pager's
    /// `Stats::swap_ins` (pages read from the tier, fault-around's included).
    pub swap_ins: u64,
    /// Of `swap_ins`, the pager's pages brought in by fault-around, not by a fault of
    /// their own (`Stats::swap_readahead`); 0 on the kernel's side (zram's swap-in reads
    /// one page a fault).
    #[serde(default)]
    pub swap_readahead: u64,
    /// Over the timed stream: the child's minor and major faults, or the pager's
    /// `Stats::faults`.
    pub faults: u64,
    /// Accesses over the warm-up and the timed stream that read a record other than the
    /// one expected.
    pub wrong_records: u64,
}

/// A `--json` row: `budget` in the summary.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Row {
    /// [`KIND`].
    pub kind: &'static str,
    /// [`SIDE_PAGER`], [`SIDE_PAGER_SIGNAL`] or [`SIDE_KERNEL`].
    pub side: &'static str,
    /// The budget: the kernel's cgroup limit, in percent of the records' bytes.
    pub budget_percent: u8,
    /// The Zipf exponent.
    pub zipf: f64,
    /// See [`Measured::ops_per_s`].
    pub ops_per_s: f64,
    /// See [`Measured::memory_bytes`].
    pub memory_bytes: u64,
    /// See [`Measured::swap_ins`].
    pub swap_ins: u64,
    /// See [`Measured::faults`].
    pub faults: u64,
    /// See [`Measured::wrong_records`].
    pub wrong_records: u64,
}

/// One budget and exponent.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Spec {
    /// Percent of the records' bytes.
    pub budget_percent: u8,
    /// The Zipf exponent.
    pub zipf: f64,
    /// The stream's seed.
    pub seed: u64,
}

/// A side's result for a [`Spec`].
#[derive(Debug, Clone, PartialEq)]
pub struct Point {
    /// [`SIDE_PAGER`], [`SIDE_PAGER_SIGNAL`] or [`SIDE_KERNEL`].
    pub side: &'static str,
    /// What it ran.
    pub spec: Spec,
    /// What it measured.
    pub measured: Measured,
}

impl Point {
    /// The JSON row.
    pub fn row(&self) -> Row {
        let m = &self.measured;
        Row {
            kind: KIND,
            side: self.side,
            budget_percent: self.spec.budget_percent,
            zipf: self.spec.zipf,
            ops_per_s: m.ops_per_s,
            memory_bytes: m.memory_bytes,
            swap_ins: m.swap_ins,
            faults: m.faults,
            wrong_records: m.wrong_records,
        }
    }
}

/// The kernel's limit for `percent` of `records` records: their bytes × percent / 100,
/// rounded down to pages.
pub fn limit_bytes(records: u64, percent: u8) -> u64 {
    records * u64::from(percent) / 100 * PAGE_SIZE as u64
}

/// The pager over `tier` for records in `memory_bytes`, resident pages and the pool
/// together: `Builder::memory_limit` (a page faulted in gives up its copy in the pool
/// unless the limit has room for both), its faults served as `side` says
/// (`Builder::signal_faults`, `Builder::direct_reclaim`), the rest the defaults.
///
/// # Errors
///
/// The pager's, as a line.
pub fn pager_for(tier: Arc<Zswap>, memory_bytes: u64, side: &PagerSide) -> Result<Pager, String> {
    Pager::builder(tier)
        .memory_limit(memory_bytes)
        .signal_faults(side.signal)
        .direct_reclaim(side.direct)
        .build()
        .map_err(|e| format!("the pager: {e}"))
}

/// A tier of [`ALGORITHM`] holding `pages` pages whatever their ratio; with `recompress`,
/// idle pages recompressed with [`RECOMPRESS_ALGORITHM`].
fn tier(pages: u64, recompress: bool) -> Result<Zswap, String> {
    let tfm = acomp::Acomp::new(ALGORITHM).map_err(|e| e.to_string())?;
    let mut b = Zswap::builder(tfm).max_pool_bytes(crate::pager::budget(pages));
    if recompress {
        b = b.recompress(acomp::Acomp::new(RECOMPRESS_ALGORITHM).map_err(|e| e.to_string())?);
    }
    b.build().map_err(|e| format!("the tier: {e}"))
}

/// The pager's side of `spec` for `records` (a whole number of pages) in `memory_bytes`
/// (of which `side` takes its percent): an lz4 tier (its idle pages recompressed where
/// `side` says), [`pager_for`], a region, the records written in, the warm-up, then the
/// timed stream.
///
/// # Errors
///
/// A line saying what failed: the tier, the pager (userfaultfd refused: the message says
/// why), the region.
pub fn pager_side(
    records: &[u8],
    spec: &Spec,
    memory_bytes: u64,
    side: &PagerSide,
) -> Result<Measured, String> {
    let n = records.len() / PAGE_SIZE;
    let stream = stream(n, spec.zipf, spec.seed);
    let memory_bytes = memory_bytes * side.memory_percent / 100;
    let tier = Arc::new(tier(n as u64, side.recompress)?);
    let recompressing = if side.recompress {
        let r = tier
            .recompress_every(RECOMPRESS_INTERVAL)
            .map_err(|e| format!("the recompression thread: {e}"))?;
        Some(r)
    } else {
        None
    };
    let pager = pager_for(tier.clone(), memory_bytes, side)?;
    let region = pager
        .region(n * PAGE_SIZE)
        .map_err(|e| format!("a region of {n} pages: {e}"))?;
    // SAFETY: the region is `n` pages, readable and writable, alive until after the last
    // use of `recs`; this thread alone accesses it (the pager's threads place and take
    // pages, which the accesses wait for).
    let mut recs = unsafe { Records::new(region.as_ptr(), n) };
    for (i, page) in records.chunks_exact(PAGE_SIZE).enumerate() {
        recs.set(i, page);
    }
    let mut wrong = recs.run(&stream.warm_up, 0);
    let before = pager.stats();
    let start = Instant::now();
    wrong += recs.run(&stream.timed, stream.warm_up.len() as u64);
    let time = start.elapsed();
    let after = pager.stats();
    let resident = after.resident_pages * PAGE_SIZE as u64;
    let pool = tier.stats().pool_total_size;
    drop(recompressing);
    drop(region);
    Ok(Measured {
        ops_per_s: stream.timed.len() as f64 / time.as_secs_f64().max(1e-9),
        memory_bytes: resident + pool,
        resident_bytes: resident,
        store_bytes: pool,
        limit_bytes: memory_bytes,
        swap_ins: after.swap_ins - before.swap_ins,
        swap_readahead: after.swap_readahead - before.swap_readahead,
        faults: after.faults - before.faults,
        wrong_records: wrong,
    })
}

/// What `--under-budget` runs.
#[derive(Debug, Clone)]
pub struct Options {
    /// Budgets, percent of the records' bytes.
    pub percents: Vec<u8>,
    /// Zipf exponents.
    pub zipf: Vec<f64>,
    /// The streams' seed.
    pub seed: u64,
    /// Whether to run the kernel's side (`--vs-zram`).
    pub kernel: bool,
}

/// The input's records: its first [`MAX_RECORDS`] pages.
pub fn records(input: &Input) -> &[u8] {
    input.pages(0, input.len().min(MAX_RECORDS))
}

/// Every budget and exponent (budgets outer), the kernel's side then the pager's; a line
/// per side not measured, saying why. Where the kernel's side is not measured, the pager
/// gets the budget's bytes (a line says so). Ends the program (130), after cleaning up,
/// where Ctrl-C was pressed during the kernel's side.
pub fn run(input: &Input, opts: &Options) -> (Vec<Point>, Vec<String>) {
    let records = records(input);
    let n = (records.len() / PAGE_SIZE) as u64;
    let (mut points, mut skipped) = (Vec::new(), Vec::new());
    println!();
    println!("under a budget: {n} records");
    let kernel = if opts.kernel {
        match crate::budgetkernel::Kernel::new(records) {
            Ok(k) => Some(k),
            Err(why) => {
                skipped.push(paging::skip_line("budget kernel", &why));
                None
            }
        }
    } else {
        None
    };
    for &budget_percent in &opts.percents {
        for &zipf in &opts.zipf {
            let spec = Spec {
                budget_percent,
                zipf,
                seed: opts.seed,
            };
            let label = format!("{budget_percent}% zipf {zipf}");
            let mut memory = None;
            if let Some(k) = &kernel {
                match k.run(&spec) {
                    Ok(m) => {
                        memory = Some(m.memory_bytes);
                        points.push(Point {
                            side: SIDE_KERNEL,
                            spec,
                            measured: m,
                        });
                    }
                    Err(why) => {
                        skipped.push(paging::skip_line(&format!("budget kernel {label}"), &why))
                    }
                }
            }
            if crate::swap::interrupted_now() {
                // The device and the cgroup are gone; the records' file goes with `kernel`.
                drop(kernel);
                std::process::exit(130);
            }
            let memory = memory.unwrap_or_else(|| {
                let b = limit_bytes(n, budget_percent);
                println!("  pager {label}: no kernel figure to match: {b} bytes, the budget's");
                b
            });
            for ps in &PAGER_SIDES {
                let side = ps.side;
                match pager_side(records, &spec, memory, ps) {
                    Ok(m) => points.push(Point {
                        side,
                        spec,
                        measured: m,
                    }),
                    Err(why) => {
                        skipped.push(paging::skip_line(&format!("budget {side} {label}"), &why))
                    }
                }
            }
        }
    }
    (points, skipped)
}

const MIB: f64 = 1024.0 * 1024.0;

/// The pager's ops/s and memory over the kernel's of the same budget and exponent; `None`
/// for a kernel's point or without one beside it.
pub fn ratios(points: &[Point], p: &Point) -> Option<(f64, f64)> {
    if p.side == SIDE_KERNEL {
        return None;
    }
    let k = points
        .iter()
        .find(|k| k.side == SIDE_KERNEL && k.spec == p.spec)?;
    Some((
        p.measured.ops_per_s / k.measured.ops_per_s,
        p.measured.memory_bytes as f64 / k.measured.memory_bytes.max(1) as f64,
    ))
}

/// Prints the table: a line per side per budget and exponent, the pager's with its ratios
/// to the kernel's; under it what each memory is made of, and any wrong record.
pub fn print(points: &[Point], records: u64) {
    if points.is_empty() {
        return;
    }
    println!();
    println!(
        "under a memory budget: {records} records of 4 KiB ({:.1} MiB), {} warm-up and {} timed \
         accesses (Zipf), one in {WRITE_EVERY} writing; one thread",
        (records * PAGE_SIZE as u64) as f64 / MIB,
        records * WARM_UP_PER_RECORD as u64,
        records * TIMED_PER_RECORD as u64
    );
    println!(
        "  {:<22} {:>6} {:>5} {:>10} {:>8} {:>9} {:>9} {:>6} {:>8} {:>8}",
        "side",
        "budget",
        "zipf",
        "ops/s",
        "memory",
        "swap-ins",
        "faults",
        "wrong",
        "ops/s",
        "memory"
    );
    println!(
        "  {:<22} {:>6} {:>5} {:>10} {:>8} {:>9} {:>9} {:>6} {:>8} {:>8}",
        "", "", "", "", "MiB", "", "", "", "/kernel", "/kernel"
    );
    for p in points {
        let m = &p.measured;
        let (ops, mem) = match ratios(points, p) {
            Some((o, m)) => (format!("{o:.2}x"), format!("{m:.3}x")),
            None => (String::new(), String::new()),
        };
        println!(
            "  {:<22} {:>5}% {:>5} {:>10.0} {:>8.1} {:>9} {:>9} {:>6} {:>8} {:>8}",
            p.side,
            p.spec.budget_percent,
            p.spec.zipf,
            m.ops_per_s,
            m.memory_bytes as f64 / MIB,
            m.swap_ins,
            m.faults,
            m.wrong_records,
            ops,
            mem
        );
    }
    println!("  memory at the end of the timed stream: the kernel's cgroup usage and zram's");
    println!("  mem_used_total; the pager's resident pages and its tier's pool. swap-ins and");
    println!("  faults over the timed stream: the child's major and all faults (getrusage),");
    println!("  the pager's swap_ins and faults");
    for p in points {
        let m = &p.measured;
        let what = if p.side == SIDE_KERNEL {
            ("cgroup usage", "zram", "limit")
        } else {
            ("resident", "pool", "memory limit")
        };
        println!(
            "  {} {}% zipf {}: {} {:.1} MiB + {} {:.1} MiB; {} {:.1} MiB",
            p.side,
            p.spec.budget_percent,
            p.spec.zipf,
            what.0,
            m.resident_bytes as f64 / MIB,
            what.1,
            m.store_bytes as f64 / MIB,
            what.2,
            m.limit_bytes as f64 / MIB
        );
        if m.wrong_records != 0 {
            println!(
                "  {} {}% zipf {}: {} WRONG RECORDS READ",
                p.side, p.spec.budget_percent, p.spec.zipf, m.wrong_records
            );
        }
    }
}
