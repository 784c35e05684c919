//! `--record-store`: a store of page-sized records, read by [`READERS`] threads and written
//! by one, under a resident limit, as a new user of the pager would try it (issue 49's
//! trial: 600 MiB of records, 150 MiB resident, 90% of reads to 10% of the records). The
//! records are the input's pages (the live heap's with `--pid`) cycled to fill the store,
//! record `i` being page `i % pages`, its first 16 bytes overwritten by its id and its
//! version ([`content`]), so that no two records hold the same bytes; each record's xxh3
//! is kept beside it, under the record's lock ([`Store`]).
//!
//! A read ([`Store::read`]) takes the record's read lock, hashes the whole record and
//! compares (a mismatch is a wrong record); a write ([`Store::write`]) takes its write
//! lock and writes a new version of the whole record (built and hashed before, untimed).
//! Reads and writes draw their records alike ([`Streams`]): 90% from the hot tenth (spread
//! over the store by a permutation of the seed), 10% from the rest. The readers run a
//! warm-up (a read per record, untimed) then the timed reads (four per record); the writer
//! writes [`WRITES_PER_S`] a second from the start of the warm-up to the end of the timed
//! reads, its writes of the timed phase timed. One read in [`PROBE_EVERY`] first asks
//! `mincore` whether its record is in memory (untimed): the share of hot reads that
//! faulted.
//!
//! The sides, each on the same records and streams:
//! - **plain**: an ordinary anonymous mapping, no limit, no pager: the baseline for writes;
//! - **kernel** (`crate::recordkernel`, with `--vs-zram`): the same mapping in a child in a
//!   memory cgroup limited to the resident limit, swapping to a zram lz4 device;
//! - **pager**: a region of acomp-pager over an lz4 tier, `Builder::resident_limit` the
//!   resident limit, the rest its defaults (faults served by the handler threads);
//! - **pager-signal**: the same with `Builder::signal_faults(true)`.
//!
//! A row per side ([`Row`], `record_store` in `--json`) and a table ([`print()`]).

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;
use parking_lot::RwLock;
use serde::{Deserialize, Serialize};

use acomp_pager::Pager;
use acomp_zswap::{PAGE_SIZE, Zswap};

use crate::paging::{self, SplitMix64};

/// `kind` of the rows.
pub const KIND: &str = "record_store";
/// `side` of the ordinary mapping's row, without limit.
pub const SIDE_PLAIN: &str = "plain";
/// `side` of the kernel's row.
pub const SIDE_KERNEL: &str = "kernel";
/// `side` of the pager's row with its defaults.
pub const SIDE_PAGER: &str = "pager";
/// `side` of the pager's row with `Builder::signal_faults`.
pub const SIDE_PAGER_SIGNAL: &str = "pager-signal";

/// Reader threads: one per CPU of the 2-CPU machine the figures come from.
pub const READERS: usize = 2;
/// The writer's pace: a write every 1/this seconds (at most; a side that cannot keep up
/// writes fewer, and its row says how many).
pub const WRITES_PER_S: u64 = 10_000;
/// Untimed reads per record, over all readers.
pub const WARM_UP_PER_RECORD: usize = 1;
/// Timed reads per record, over all readers.
pub const TIMED_PER_RECORD: usize = 4;
/// The hot records: one in this many.
pub const HOT_EVERY: usize = 10;
/// Percent of reads and writes to the hot records.
pub const HOT_PERCENT: u64 = 90;
/// One read in this many asks `mincore` whether its record is in memory first.
pub const PROBE_EVERY: usize = 8;
/// The tier's algorithm on the pager's side, and the zram device's on the kernel's.
pub const ALGORITHM: &str = "lz4";
/// Writes drawn for the writer's stream, which it cycles through.
const WRITE_DRAWS: usize = 1 << 20;
/// The top bit of a drawn id: a hot record.
const HOT_BIT: u32 = 1 << 31;

/// A record's hash: xxh3, 64 bits.
pub fn hash(record: &[u8]) -> u64 {
    xxhash_rust::xxh3::xxh3_64(record)
}

/// Record `i`'s bytes at `version`: page `i % pages` of `source` (whole pages), its first 8
/// bytes `i` and the next 8 `version` (little-endian), into `out`.
///
/// # Panics
///
/// If `source` holds no whole page, or `out` is not a page.
pub fn content(source: &[u8], i: usize, version: u64, out: &mut [u8]) {
    let pages = source.len() / PAGE_SIZE;
    assert!(pages > 0, "no source page");
    let p = i % pages;
    out.copy_from_slice(&source[p * PAGE_SIZE..(p + 1) * PAGE_SIZE]);
    out[..8].copy_from_slice(&(i as u64).to_le_bytes());
    out[8..16].copy_from_slice(&version.to_le_bytes());
}

/// The record ids of the readers and of the writer, with the top bit set on the hot ones ([`split`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Streams {
    /// A stream per reader: its warm-up, then its timed reads.
    pub readers: Vec<Vec<u32>>,
    /// Reads of each reader's warm-up.
    pub warm_up: usize,
    /// The writer's ids, cycled.
    pub writes: Vec<u32>,
}

/// The streams of `records` records for `readers` readers: ids drawn by [`SplitMix64`] of
/// `seed`, [`HOT_PERCENT`] from the hot records (the first tenth of
/// [`paging::random_order`] of the seed), the rest from the others. The same on every side
/// and build.
///
/// # Panics
///
/// If `records` is under [`HOT_EVERY`] or `readers` is 0.
pub fn streams(records: usize, readers: usize, seed: u64) -> Streams {
    assert!(
        records >= HOT_EVERY && readers > 0,
        "{records} records, {readers} readers"
    );
    let order = paging::random_order(records, seed);
    let (hot, cold) = order.split_at(records / HOT_EVERY);
    let mut rng = SplitMix64::new(seed ^ 0x0EC0_4D57_0EC0_4D57);
    let mut draw = || {
        if rng.below(100) < HOT_PERCENT {
            hot[rng.below(hot.len() as u64) as usize] | HOT_BIT
        } else {
            cold[rng.below(cold.len() as u64) as usize]
        }
    };
    let warm_up = records * WARM_UP_PER_RECORD / readers;
    let timed = records * TIMED_PER_RECORD / readers;
    let readers = (0..readers)
        .map(|_| (0..warm_up + timed).map(|_| draw()).collect())
        .collect();
    let writes = (0..WRITE_DRAWS).map(|_| draw()).collect();
    Streams {
        readers,
        warm_up,
        writes,
    }
}

/// Whether a drawn id is a hot record's, and the record.
pub fn split(drawn: u32) -> (bool, usize) {
    (drawn & HOT_BIT != 0, (drawn & !HOT_BIT) as usize)
}

/// Records of a page each in memory at a pointer, each with its lock over its expected hash.
#[derive(Debug)]
pub struct Store {
    ptr: *mut u8,
    locks: Vec<RwLock<u64>>,
    /// Each record's version, the writer's.
    versions: Vec<AtomicU64>,
}

// SAFETY: the records' bytes are read and written only under their record's lock (`read`,
// `write`, `fill` through `&mut self`); the pointer itself is shared read-only.
unsafe impl Sync for Store {}
// SAFETY: as above; the mapping is not tied to a thread.
unsafe impl Send for Store {}

impl Store {
    /// `count` records at `ptr`. The locks and versions are allocated and written here, so
    /// that a process joining a cgroup afterwards has them charged before.
    ///
    /// # Safety
    ///
    /// - `ptr` is page-aligned and `count` × 4096 bytes from it are mapped readable and
    ///   writable for as long as the `Store` is used;
    /// - nothing but this `Store` reads or writes them meanwhile (a pager places pages
    ///   there, which the accesses wait for, as for the kernel's swap-in).
    pub unsafe fn new(ptr: *mut u8, count: usize) -> Store {
        Store {
            ptr,
            locks: (0..count).map(|_| RwLock::new(u64::MAX)).collect(),
            versions: (0..count).map(|_| AtomicU64::new(0)).collect(),
        }
    }

    /// Records.
    pub fn len(&self) -> usize {
        self.locks.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.locks.is_empty()
    }

    /// Record `i`'s first byte.
    ///
    /// # Panics
    ///
    /// If `i` is not a record.
    pub fn at(&self, i: usize) -> *mut u8 {
        assert!(i < self.len(), "record {i} of {}", self.len());
        // SAFETY: record `i` lies inside the mapping (asserted above; `Store::new`).
        unsafe { self.ptr.add(i * PAGE_SIZE) }
    }

    /// Writes every record at version 0 from `source` (whole pages, cycled), through
    /// `page` (a page's scratch buffer).
    pub fn fill(&mut self, source: &[u8], page: &mut [u8]) {
        for i in 0..self.len() {
            content(source, i, 0, page);
            let h = hash(page);
            self.write(i, page, h);
        }
    }

    /// Record `i`'s next version (the writer's count of its writes).
    fn next_version(&self, i: usize) -> u64 {
        self.versions[i].fetch_add(1, Ordering::Relaxed) + 1
    }

    /// Reads record `i` under its read lock: whether its bytes hash to what was last written.
    pub fn read(&self, i: usize) -> bool {
        let expected = self.locks[i].read();
        // SAFETY: a page inside the mapping (`at`), readable; its writes take the write
        // lock, which the read lock held here excludes.
        let record = unsafe { std::slice::from_raw_parts(self.at(i), PAGE_SIZE) };
        hash(record) == *expected
    }

    /// Writes `page` (whose hash is `h`) into record `i` under its write lock.
    ///
    /// # Panics
    ///
    /// If `page` is not a page.
    pub fn write(&self, i: usize, page: &[u8], h: u64) {
        assert_eq!(page.len(), PAGE_SIZE, "a record is a page");
        let mut expected = self.locks[i].write();
        // SAFETY: record `i`, a page inside the mapping (`at`), writable; no reader holds
        // it (the write lock); the source is the caller's, outside the mapping.
        unsafe { std::ptr::copy_nonoverlapping(page.as_ptr(), self.at(i), PAGE_SIZE) };
        *expected = h;
    }

    /// Whether record `i` is in memory now (`mincore`); `None` where the kernel refused.
    pub fn resident(&self, i: usize) -> Option<bool> {
        let mut vec = [0u8; 1];
        // SAFETY: one page inside the mapping, page-aligned (`Store::new`); `vec` has
        // room for its one byte.
        let rc = unsafe { libc::mincore(self.at(i).cast(), PAGE_SIZE, vec.as_mut_ptr()) };
        (rc == 0).then_some(vec[0] & 1 != 0)
    }

    /// The records in memory now, in bytes (`mincore` over them all).
    pub fn resident_bytes(&self) -> u64 {
        (0..self.len())
            .filter(|&i| self.resident(i) == Some(true))
            .count() as u64
            * PAGE_SIZE as u64
    }
}

/// What the store's timed phase measured, before its memory is added.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Measured {
    /// Timed reads, over all readers.
    pub reads: u64,
    /// Timed reads a second (from the end of the warm-up to the last reader's last read).
    pub reads_per_s: f64,
    /// Read latency, median and 99th percentile, in microseconds (lock, hash, check).
    pub read_p50_us: f64,
    /// See `read_p50_us`.
    pub read_p99_us: f64,
    /// Writes during the timed reads.
    pub writes: u64,
    /// Those writes a second.
    pub writes_per_s: f64,
    /// Write latency, median and 99th percentile, in microseconds (lock, copy, unlock).
    pub write_p50_us: f64,
    /// See `write_p50_us`.
    pub write_p99_us: f64,
    /// Timed hot reads probed with `mincore`.
    pub hot_probed: u64,
    /// Of them, the reads whose record was not in memory: they faulted.
    pub hot_faulted: u64,
    /// CPU time of the whole process (every thread: the pager's too) over the timed
    /// phase's wall time.
    pub cores_busy: f64,
    /// After the reads: resident bytes (the pager's resident pages, the kernel's cgroup
    /// usage, the plain mapping's pages in memory) plus the store's (`store_bytes`).
    pub memory_bytes: u64,
    /// See `memory_bytes`.
    pub resident_bytes: u64,
    /// The tier's `pool_total_size`, zram's `mem_used_total`, or 0.
    pub store_bytes: u64,
    /// The resident limit: the pager's `resident_limit`, the kernel's cgroup limit as it
    /// holds it; 0 for plain memory.
    pub limit_bytes: u64,
    /// Over the timed phase: the pager's `Stats::swap_ins`, or the process's major faults.
    pub swap_ins: u64,
    /// Over the timed phase: the pager's `Stats::faults`, or the process's faults.
    pub faults: u64,
    /// Over the timed phase: the pager's `Stats::write_protect_faults` (a clean page's
    /// first write); 0 elsewhere.
    pub write_protect_faults: u64,
    /// Over the timed phase: the pager's `Stats::throttled_faults`; 0 elsewhere.
    pub throttled_faults: u64,
    /// Reads over the warm-up and the timed phase whose record was not the one last
    /// written.
    pub wrong_records: u64,
}

/// The process's CPU time (user and system, every thread) and its minor and major faults.
fn usage() -> (Duration, u64, u64) {
    // SAFETY: `rusage` is plain old data; zeroed is a valid value.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: RUSAGE_SELF and a pointer to a live `rusage`: getrusage only writes it.
    let rc = unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) };
    assert_eq!(rc, 0, "getrusage(RUSAGE_SELF) cannot fail");
    let tv = |t: libc::timeval| {
        Duration::from_secs(t.tv_sec as u64) + Duration::from_micros(t.tv_usec as u64)
    };
    (
        tv(ru.ru_utime) + tv(ru.ru_stime),
        ru.ru_minflt as u64,
        ru.ru_majflt as u64,
    )
}

/// A histogram of nanoseconds, 1 ns to 100 s, 3 significant digits.
fn histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, 100_000_000_000, 3).expect("valid bounds")
}

fn us(h: &Histogram<u64>, q: f64) -> f64 {
    h.value_at_quantile(q) as f64 / 1000.0
}

/// Counters a side reads before and after the timed phase: swap-ins, faults,
/// write-protect faults, throttled faults.
pub type Counters = (u64, u64, u64, u64);

/// What a run writes into besides the records, allocated before it (and before a child
/// joins its cgroup): a histogram per reader and the writer's, the writer's page.
#[derive(Debug)]
pub struct Scratch {
    reads: Vec<Histogram<u64>>,
    writes: Histogram<u64>,
    /// A page's buffer, for [`Store::fill`] before the run and the writer during it.
    pub page: Vec<u8>,
}

impl Scratch {
    /// For `readers` readers.
    pub fn new(readers: usize) -> Scratch {
        Scratch {
            reads: (0..readers).map(|_| histogram()).collect(),
            writes: histogram(),
            page: vec![0; PAGE_SIZE],
        }
    }
}

/// One reader's result.
struct ReaderResult {
    hist: Histogram<u64>,
    wrong: u64,
    probed: u64,
    faulted: u64,
}

/// One reader: its warm-up, the barrier twice (the main thread takes its figures between),
/// its timed reads.
fn reader(
    store: &Store,
    ids: &[u32],
    warm_up: usize,
    start: &Barrier,
    hist: Histogram<u64>,
) -> ReaderResult {
    let mut r = ReaderResult {
        hist,
        wrong: 0,
        probed: 0,
        faulted: 0,
    };
    for &d in &ids[..warm_up] {
        r.wrong += u64::from(!store.read(split(d).1));
    }
    start.wait();
    start.wait();
    for (n, &d) in ids[warm_up..].iter().enumerate() {
        let (hot, i) = split(d);
        let probe = hot && n % PROBE_EVERY == 0;
        if let Some(resident) = probe.then(|| store.resident(i)).flatten() {
            r.probed += 1;
            r.faulted += u64::from(!resident);
        }
        let t = Instant::now();
        let ok = store.read(i);
        r.hist.saturating_record(t.elapsed().as_nanos() as u64);
        r.wrong += u64::from(!ok);
    }
    r
}

/// The writer: a new version of a record from its stream every 1/[`WRITES_PER_S`]
/// seconds until `stop`, timed while `timed`.
fn writer(
    store: &Store,
    source: &[u8],
    ids: &[u32],
    (timed, stop): (&AtomicBool, &AtomicBool),
    mut hist: Histogram<u64>,
    mut page: Vec<u8>,
) -> (Histogram<u64>, u64) {
    let interval = Duration::from_nanos(1_000_000_000 / WRITES_PER_S);
    let mut next = Instant::now();
    let mut writes = 0;
    for &d in ids.iter().cycle() {
        if stop.load(Ordering::Relaxed) {
            break;
        }
        let i = split(d).1;
        content(source, i, store.next_version(i), &mut page);
        let h = hash(&page);
        let on = timed.load(Ordering::Relaxed);
        let t = Instant::now();
        store.write(i, &page, h);
        if on {
            hist.saturating_record(t.elapsed().as_nanos() as u64);
            writes += 1;
        }
        next += interval;
        let now = Instant::now();
        if next > now {
            std::thread::sleep(next - now);
        } else {
            next = now;
        }
    }
    (hist, writes)
}

/// The readers and the writer over `store` (filled), writing into `scratch` (made for as
/// many readers as `streams` has), `counters` read before and after the timed phase; what
/// they measured (memory left for the side to add).
///
/// # Panics
///
/// If a reader or the writer panicked, or `scratch` has fewer readers than `streams`.
pub fn run(
    store: &Store,
    source: &[u8],
    streams: &Streams,
    scratch: Scratch,
    counters: &dyn Fn() -> Counters,
) -> Measured {
    let Scratch {
        reads,
        writes: whist,
        page,
    } = scratch;
    assert!(
        reads.len() >= streams.readers.len(),
        "a histogram per reader"
    );
    let readers = streams.readers.len();
    let start = Barrier::new(readers + 1);
    let timed = AtomicBool::new(false);
    let stop = AtomicBool::new(false);
    std::thread::scope(|s| {
        let flags = (&timed, &stop);
        let w = s.spawn(move || writer(store, source, &streams.writes, flags, whist, page));
        let rs: Vec<_> = streams
            .readers
            .iter()
            .zip(reads)
            .map(|(ids, hist)| {
                let start = &start;
                s.spawn(move || reader(store, ids, streams.warm_up, start, hist))
            })
            .collect();
        start.wait();
        let before = counters();
        let (cpu0, _, _) = usage();
        timed.store(true, Ordering::Relaxed);
        let t0 = Instant::now();
        start.wait();
        let results: Vec<ReaderResult> = rs
            .into_iter()
            .map(|h| h.join().expect("a reader panicked"))
            .collect();
        let wall = t0.elapsed();
        let (cpu1, _, _) = usage();
        let after = counters();
        timed.store(false, Ordering::Relaxed);
        stop.store(true, Ordering::Relaxed);
        let (whist, writes) = w.join().expect("the writer panicked");
        let mut rhist = histogram();
        let mut m = Measured::default();
        for r in &results {
            rhist.add(&r.hist).expect("same bounds");
            m.wrong_records += r.wrong;
            m.hot_probed += r.probed;
            m.hot_faulted += r.faulted;
        }
        let secs = wall.as_secs_f64().max(1e-9);
        m.reads = rhist.len();
        m.reads_per_s = m.reads as f64 / secs;
        m.read_p50_us = us(&rhist, 0.5);
        m.read_p99_us = us(&rhist, 0.99);
        m.writes = writes;
        m.writes_per_s = writes as f64 / secs;
        m.write_p50_us = us(&whist, 0.5);
        m.write_p99_us = us(&whist, 0.99);
        m.cores_busy = (cpu1 - cpu0).as_secs_f64() / secs;
        m.swap_ins = after.0 - before.0;
        m.faults = after.1 - before.1;
        m.write_protect_faults = after.2 - before.2;
        m.throttled_faults = after.3 - before.3;
        m
    })
}

/// The process's faults as [`Counters`]: major as swap-ins, minor and major as faults.
pub fn process_faults() -> Counters {
    let (_, minor, major) = usage();
    (major, minor + major, 0, 0)
}

/// The records of `bytes` (whole pages; at least [`HOT_EVERY`]).
pub fn records(bytes: u64) -> usize {
    (bytes / PAGE_SIZE as u64) as usize
}

/// What `--record-store` runs.
#[derive(Debug, Clone)]
pub struct Options {
    /// The store's bytes (`--record-bytes`).
    pub bytes: u64,
    /// The resident limit (`--resident-limit`).
    pub resident_limit: u64,
    /// Reader threads.
    pub readers: usize,
    /// The streams' seed.
    pub seed: u64,
    /// Whether to run the kernel's side (`--vs-zram`).
    pub kernel: bool,
}

/// A side's result.
#[derive(Debug, Clone, PartialEq)]
pub struct Point {
    /// [`SIDE_PLAIN`], [`SIDE_KERNEL`], [`SIDE_PAGER`] or [`SIDE_PAGER_SIGNAL`].
    pub side: &'static str,
    /// What it measured.
    pub measured: Measured,
}

/// The plain side: an ordinary mapping, no limit.
///
/// # Errors
///
/// The mapping's, as a line.
pub fn plain_side(source: &[u8], n: usize, streams: &Streams) -> Result<Measured, String> {
    let anon = crate::swap::Anon::new(n * PAGE_SIZE)?;
    // SAFETY: `anon` is `n` pages, readable and writable, alive until after the last use
    // of `store`, which alone uses it.
    let mut store = unsafe { Store::new(anon.ptr(), n) };
    let mut scratch = Scratch::new(streams.readers.len());
    store.fill(source, &mut scratch.page);
    let mut m = run(&store, source, streams, scratch, &process_faults);
    m.resident_bytes = store.resident_bytes();
    m.memory_bytes = m.resident_bytes;
    Ok(m)
}

/// A pager's side: an lz4 tier holding every page whatever its ratio, a pager with
/// `resident_limit` and `signal_faults` as given (the rest its defaults), a region.
///
/// # Errors
///
/// A line saying what failed: the tier, the pager (userfaultfd refused: the message says
/// why), the region.
pub fn pager_side(
    source: &[u8],
    n: usize,
    streams: &Streams,
    resident_limit: u64,
    signal: bool,
) -> Result<Measured, String> {
    let tfm = acomp::Acomp::new(ALGORITHM).map_err(|e| e.to_string())?;
    let tier = Arc::new(
        Zswap::builder(tfm)
            .max_pool_bytes(crate::pager::budget(n as u64))
            .build()
            .map_err(|e| format!("the tier: {e}"))?,
    );
    let pager = Pager::builder(tier.clone())
        .resident_limit(resident_limit)
        .signal_faults(signal)
        .build()
        .map_err(|e| format!("the pager: {e}"))?;
    let region = pager
        .region(n * PAGE_SIZE)
        .map_err(|e| format!("a region of {n} pages: {e}"))?;
    // SAFETY: the region is `n` pages, readable and writable, alive until after the last
    // use of `store`, which alone accesses it (the pager's threads place and take pages,
    // which the accesses wait for).
    let mut store = unsafe { Store::new(region.as_ptr(), n) };
    let mut scratch = Scratch::new(streams.readers.len());
    store.fill(source, &mut scratch.page);
    let counters = || {
        let s = pager.stats();
        (
            s.swap_ins,
            s.faults,
            s.write_protect_faults,
            s.throttled_faults,
        )
    };
    let mut m = run(&store, source, streams, scratch, &counters);
    m.resident_bytes = pager.stats().resident_pages * PAGE_SIZE as u64;
    m.store_bytes = tier.stats().pool_total_size;
    m.memory_bytes = m.resident_bytes + m.store_bytes;
    m.limit_bytes = resident_limit / PAGE_SIZE as u64 * PAGE_SIZE as u64;
    drop(store);
    drop(region);
    Ok(m)
}

/// Every side in turn: plain, the kernel's (with `opts.kernel`), the pager's two; a line
/// per side not measured, saying why. `input` is the records' source (whole pages, cycled).
/// Ends the program (130), after cleaning up, where Ctrl-C was pressed during the kernel's
/// side.
pub fn run_all(input: &[u8], opts: &Options) -> (Vec<Point>, Vec<String>) {
    let n = records(opts.bytes);
    let source = &input[..input.len().min(n * PAGE_SIZE) / PAGE_SIZE * PAGE_SIZE];
    let (mut points, mut skipped) = (Vec::new(), Vec::new());
    println!();
    println!(
        "record store: {n} records from {} pages of the input, {} readers and a writer",
        source.len() / PAGE_SIZE,
        opts.readers
    );
    if n < HOT_EVERY || source.is_empty() {
        skipped.push(format!(
            "record store: not measured: {n} records from {} pages (at least {HOT_EVERY} records and a page)",
            source.len() / PAGE_SIZE
        ));
        return (points, skipped);
    }
    let streams = streams(n, opts.readers, opts.seed);
    let mut push = |side: &'static str, r: Result<Measured, String>| match r {
        Ok(measured) => points.push(Point { side, measured }),
        Err(why) => skipped.push(paging::skip_line(&format!("record store {side}"), &why)),
    };
    push(SIDE_PLAIN, plain_side(source, n, &streams));
    if opts.kernel {
        push(
            SIDE_KERNEL,
            crate::recordkernel::run(source, n, opts.readers, opts.seed, opts.resident_limit),
        );
        if crate::swap::interrupted_now() {
            std::process::exit(130);
        }
    }
    push(
        SIDE_PAGER,
        pager_side(source, n, &streams, opts.resident_limit, false),
    );
    push(
        SIDE_PAGER_SIGNAL,
        pager_side(source, n, &streams, opts.resident_limit, true),
    );
    (points, skipped)
}

/// A `--json` row: `record_store` in the summary.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Row {
    /// [`KIND`].
    pub kind: &'static str,
    /// [`SIDE_PLAIN`], [`SIDE_KERNEL`], [`SIDE_PAGER`] or [`SIDE_PAGER_SIGNAL`].
    pub side: &'static str,
    /// See [`Measured::reads_per_s`].
    pub reads_per_s: f64,
    /// See [`Measured::read_p50_us`].
    pub read_p50_us: f64,
    /// See [`Measured::read_p99_us`].
    pub read_p99_us: f64,
    /// See [`Measured::write_p50_us`].
    pub write_p50_us: f64,
    /// See [`Measured::write_p99_us`].
    pub write_p99_us: f64,
    /// See [`Measured::writes_per_s`].
    pub writes_per_s: f64,
    /// [`Measured::hot_faulted`] over [`Measured::hot_probed`].
    pub hot_reads_faulted: f64,
    /// See [`Measured::memory_bytes`].
    pub memory_bytes: u64,
    /// See [`Measured::limit_bytes`].
    pub limit_bytes: u64,
    /// See [`Measured::cores_busy`].
    pub cores_busy: f64,
    /// See [`Measured::swap_ins`].
    pub swap_ins: u64,
    /// See [`Measured::write_protect_faults`].
    pub write_protect_faults: u64,
    /// See [`Measured::wrong_records`].
    pub wrong_records: u64,
}

impl Point {
    /// The share of hot reads that faulted (0 where none was probed).
    pub fn hot_faulted(&self) -> f64 {
        let m = &self.measured;
        m.hot_faulted as f64 / m.hot_probed.max(1) as f64
    }

    /// The JSON row.
    pub fn row(&self) -> Row {
        let m = &self.measured;
        Row {
            kind: KIND,
            side: self.side,
            reads_per_s: m.reads_per_s,
            read_p50_us: m.read_p50_us,
            read_p99_us: m.read_p99_us,
            write_p50_us: m.write_p50_us,
            write_p99_us: m.write_p99_us,
            writes_per_s: m.writes_per_s,
            hot_reads_faulted: self.hot_faulted(),
            memory_bytes: m.memory_bytes,
            limit_bytes: m.limit_bytes,
            cores_busy: m.cores_busy,
            swap_ins: m.swap_ins,
            write_protect_faults: m.write_protect_faults,
            wrong_records: m.wrong_records,
        }
    }
}

/// The side's figure over another side's: `f` of `p` over `f` of the first point of
/// `side`; `None` without one (or for that side itself).
pub fn ratio(points: &[Point], p: &Point, side: &str, f: fn(&Measured) -> f64) -> Option<f64> {
    if p.side == side {
        return None;
    }
    let base = points.iter().find(|b| b.side == side)?;
    Some(f(&p.measured) / f(&base.measured))
}

const MIB: f64 = 1024.0 * 1024.0;

/// Prints the table: a line per side, reads/s against the kernel's and write p50 against
/// plain memory's; under it what each memory is made of, and any wrong record.
pub fn print(points: &[Point], opts: &Options) {
    if points.is_empty() {
        return;
    }
    let n = records(opts.bytes) as u64;
    println!();
    println!(
        "record store: {n} records of 4 KiB ({:.0} MiB), resident limit {:.0} MiB; {} readers \
         ({} timed reads, {HOT_PERCENT}% to a tenth of the records), one writer (at most \
         {WRITES_PER_S}/s, the same draws)",
        (n * PAGE_SIZE as u64) as f64 / MIB,
        opts.resident_limit as f64 / MIB,
        opts.readers,
        n * TIMED_PER_RECORD as u64,
    );
    println!(
        "  {:<13} {:>9} {:>7} {:>7} {:>7} {:>7} {:>7} {:>7} {:>6} {:>5} {:>6} {:>8} {:>8}",
        "side",
        "reads/s",
        "read",
        "read",
        "write",
        "write",
        "hot",
        "memory",
        "cores",
        "wrong",
        "wp",
        "reads/s",
        "write"
    );
    println!(
        "  {:<13} {:>9} {:>7} {:>7} {:>7} {:>7} {:>7} {:>7} {:>6} {:>5} {:>6} {:>8} {:>8}",
        "",
        "",
        "p50 µs",
        "p99 µs",
        "p50 µs",
        "p99 µs",
        "faulted",
        "MiB",
        "",
        "",
        "faults",
        "/kernel",
        "p50/plain"
    );
    for p in points {
        let m = &p.measured;
        let reads = ratio(points, p, SIDE_KERNEL, |m| m.reads_per_s)
            .map_or(String::new(), |r| format!("{r:.2}x"));
        let write = ratio(points, p, SIDE_PLAIN, |m| m.write_p50_us)
            .map_or(String::new(), |r| format!("{r:.2}x"));
        println!(
            "  {:<13} {:>9.0} {:>7.2} {:>7.1} {:>7.2} {:>7.1} {:>6.2}% {:>7.1} {:>6.2} {:>5} {:>6} {:>8} {:>8}",
            p.side,
            m.reads_per_s,
            m.read_p50_us,
            m.read_p99_us,
            m.write_p50_us,
            m.write_p99_us,
            p.hot_faulted() * 100.0,
            m.memory_bytes as f64 / MIB,
            m.cores_busy,
            m.wrong_records,
            m.write_protect_faults,
            reads,
            write
        );
    }
    println!(
        "  hot faulted: of the timed hot reads probed (one in {PROBE_EVERY}), those whose record"
    );
    println!("  was not in memory; memory after the reads: the pager's resident pages and its");
    println!("  tier's pool, the kernel's cgroup usage and zram's mem_used_total; cores: CPU");
    println!("  time of the process over the timed phase; wp faults: the pager's clean pages'");
    println!("  first writes");
    for p in points {
        let m = &p.measured;
        println!(
            "  {}: {:.0} writes/s; resident {:.1} MiB + store {:.1} MiB (limit {:.1} MiB); \
             {} swap-ins, {} faults, {} throttled",
            p.side,
            m.writes_per_s,
            m.resident_bytes as f64 / MIB,
            m.store_bytes as f64 / MIB,
            m.limit_bytes as f64 / MIB,
            m.swap_ins,
            m.faults,
            m.throttled_faults
        );
        if m.wrong_records != 0 {
            println!("  {}: {} WRONG RECORDS READ", p.side, m.wrong_records);
        }
    }
}
