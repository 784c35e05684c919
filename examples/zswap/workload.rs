//! The workload: several threads store every page, load them all back in random order and
//! check every byte, invalidate half, store those again (churn) and check everything once
//! more. Beside it, in the same run and on the same pages, the floor: raw zstd-safe
//! one-shot calls on a reused context, timed the same way.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::time::{Duration, Instant};

use indicatif::ProgressBar;
use rand::SeedableRng;
use rand::rngs::StdRng;
use rand::seq::SliceRandom;
use zstd_safe::{CCtx, CParameter, DCtx};

use crate::measure::{Latency, latency, timed};
use crate::zswap::{Counters, counters};
use acomp_pages::input::Input;
use acomp_zswap::PAGE_SIZE;
use acomp_zswap::{LoadError, LoadKind, Page, StoreError, StoreKind, Zswap, same_filled};

/// How to run the workload.
#[derive(Debug, Clone)]
pub struct Options {
    /// Threads in every phase.
    pub threads: usize,
    /// Seed of the load order and of the half that is invalidated.
    pub seed: u64,
    /// zstd level for the raw baseline: the transform's own.
    pub level: i32,
    /// Shows each phase's progress.
    pub progress: Option<ProgressBar>,
}

/// A phase's wall time and the pages it went through.
#[derive(Debug, Clone, Copy, Default)]
pub struct Phase {
    /// Pages handled.
    pub pages: u64,
    /// Wall time of the whole phase, all threads.
    pub wall: Duration,
}

impl Phase {
    /// Bytes of pages per second.
    pub fn throughput(&self) -> f64 {
        (self.pages * PAGE_SIZE as u64) as f64 / self.wall.as_secs_f64().max(1e-9)
    }
}

/// Latencies of the raw zstd-safe baseline.
#[derive(Debug, Clone)]
pub struct Raw {
    /// Threads it ran on.
    pub threads: usize,
    /// `compress2` of the pages the workload stored compressed.
    pub compress: Latency,
    /// `compress2` of the pages the workload stored as they are (it fails or does not pay).
    pub compress_incompressible: Latency,
    /// `decompress` of the pages whose load was one-fragment.
    pub decompress_one: Latency,
    /// `decompress` of the pages whose load straddled.
    pub decompress_straddling: Latency,
}

/// What went wrong with one page.
#[derive(Debug)]
pub enum Failure {
    /// The store was refused.
    Store(u64, StoreError),
    /// The load failed.
    Load(u64, LoadError),
    /// The load gave other bytes than were stored.
    Mismatch(u64),
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Failure::Store(off, e) => write!(f, "store of page {off}: {e}"),
            Failure::Load(off, e) => write!(f, "load of page {off}: {e}"),
            Failure::Mismatch(off) => write!(f, "page {off} loaded with other bytes than stored"),
        }
    }
}

/// Everything the workload measured.
#[derive(Debug)]
pub struct Report {
    /// Pages in the input.
    pub pages: usize,
    /// Threads in every phase.
    pub threads: usize,
    /// zswap's counters with every page stored, before any load.
    pub stored: Counters,
    /// zswap's counters at the end, with every page stored again after the churn.
    pub churned: Counters,
    /// Backing pages after every page was invalidated at the very end (0 unless leaked).
    pub pool_pages_at_end: usize,
    /// acomp's counters at the end.
    pub acomp: acomp::Stats,
    /// acomp's decompressions in the first load pass by path: one-shot, stream.
    pub load_paths: (u64, u64),
    /// Whole stores of the first pass that stored a frame.
    pub store_compressed: Latency,
    /// Whole stores of the first pass whose compression failed or did not pay.
    pub store_incompressible: Latency,
    /// Whole stores of the first pass, of every kind.
    pub store_all: Latency,
    /// Whole loads of the first pass by kind.
    pub load_one: Latency,
    /// See `load_one`.
    pub load_straddling: Latency,
    /// See `load_one`: pages kept as they are, and same-filled pages.
    pub load_other: Latency,
    /// Phases: first store pass, first load pass, churn stores, second load pass.
    pub store_phase: Phase,
    /// See `store_phase`.
    pub load_phase: Phase,
    /// See `store_phase`.
    pub churn_phase: Phase,
    /// See `store_phase`.
    pub verify_phase: Phase,
    /// Loads checked byte for byte, over both load passes.
    pub verified: u64,
    /// Loads that failed or differed, and stores refused (the first few in `failures`).
    pub failed: u64,
    /// The first failures.
    pub failures: Vec<Failure>,
    /// The raw baseline with the workload's threads.
    pub raw: Raw,
    /// The raw baseline on one thread.
    pub raw_single: Raw,
}

impl Report {
    /// Whether every page was stored and came back as it was.
    pub fn ok(&self) -> bool {
        self.failed == 0
    }
}

/// Failures kept for the report; the rest are only counted.
const FAILURES_KEPT: usize = 10;

/// Pages between progress updates: keeps the bar off the timed path's cache lines.
const PROGRESS_STEP: usize = 256;

/// Collects failures from all threads.
#[derive(Default)]
struct Failures {
    count: AtomicU64,
    first: parking_lot::Mutex<Vec<Failure>>,
}

impl Failures {
    fn add(&self, f: Failure) {
        self.count.fetch_add(1, Relaxed);
        let mut first = self.first.lock();
        if first.len() < FAILURES_KEPT {
            first.push(f);
        }
    }
}

/// Runs `work` on `threads` threads, each over its own contiguous share of `items`, and
/// returns what each returned and the wall time.
fn parallel<T: Sync, R: Send>(
    threads: usize,
    items: &[T],
    work: impl Fn(&[T]) -> R + Sync,
) -> (Vec<R>, Duration) {
    let share = items.len().div_ceil(threads.max(1)).max(1);
    let start = Instant::now();
    let out = std::thread::scope(|s| {
        let work = &work;
        let handles: Vec<_> = items
            .chunks(share)
            .map(|chunk| s.spawn(move || work(chunk)))
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("worker panicked"))
            .collect()
    });
    (out, start.elapsed())
}

fn merge(hists: impl IntoIterator<Item = Latency>) -> Latency {
    let mut all = latency();
    for h in hists {
        all.add(&h).expect("same bounds");
    }
    all
}

struct Progress<'a>(Option<&'a ProgressBar>);

impl Progress<'_> {
    fn phase(&self, name: &'static str, len: usize) {
        if let Some(pb) = self.0 {
            pb.set_message(name);
            pb.set_length(len as u64);
            pb.set_position(0);
        }
    }

    fn step(&self, done: usize) {
        if let Some(pb) = self.0.filter(|_| done % PROGRESS_STEP == PROGRESS_STEP - 1) {
            pb.inc(PROGRESS_STEP as u64);
        }
    }
}

/// The raw baseline's per-page latencies (0 where not measured) and its frames.
struct RawRun {
    threads: usize,
    compress_ns: Vec<u64>,
    decompress_ns: Vec<u64>,
}

/// Times a reused CCtx's `compress2` on every page of `order` that is not same-filled, then
/// a reused DCtx's `decompress` of each frame (in `load_order`), on `threads` threads.
fn raw_baseline(
    input: &Input,
    order: &[usize],
    load_order: &[usize],
    opts: &Options,
    threads: usize,
    progress: &Progress<'_>,
) -> RawRun {
    let n = input.len();
    progress.phase("raw zstd compress", n);
    let (parts, _) = parallel(threads, order, |share| {
        let mut cctx = CCtx::create();
        cctx.set_parameter(CParameter::CompressionLevel(opts.level))
            .expect("a valid level");
        let mut dst: Box<Page> = Box::new([0; PAGE_SIZE]);
        let mut out = Vec::with_capacity(share.len());
        for (done, &i) in share.iter().enumerate() {
            let page = input.page(i);
            if same_filled(page).is_none() {
                let (res, ns) = timed(|| cctx.compress2(&mut dst[..], page));
                let frame = res
                    .ok()
                    .filter(|&n| n < PAGE_SIZE)
                    .map(|n| dst[..n].to_vec());
                out.push((i, ns, frame));
            }
            progress.step(done);
        }
        out
    });
    let mut compress_ns = vec![0; n];
    let mut frames: Vec<Option<Vec<u8>>> = vec![None; n];
    for (i, ns, frame) in parts.into_iter().flatten() {
        compress_ns[i] = ns;
        frames[i] = frame;
    }
    progress.phase("raw zstd decompress", n);
    let (parts, _) = parallel(threads, load_order, |share| {
        let mut dctx = DCtx::create();
        let mut page: Box<Page> = Box::new([0; PAGE_SIZE]);
        let mut out = Vec::with_capacity(share.len());
        for (done, &i) in share.iter().enumerate() {
            if let Some(frame) = &frames[i] {
                let (res, ns) = timed(|| dctx.decompress(&mut page[..], frame));
                assert_eq!(res, Ok(PAGE_SIZE), "raw zstd round trip of page {i}");
                out.push((i, ns));
            }
            progress.step(done);
        }
        out
    });
    let mut decompress_ns = vec![0; n];
    for (i, ns) in parts.into_iter().flatten() {
        decompress_ns[i] = ns;
    }
    RawRun {
        threads,
        compress_ns,
        decompress_ns,
    }
}

impl RawRun {
    /// Histograms over the pages as the workload stored them (compressed or as they are)
    /// and loaded them (decompressed from one fragment or, straddling, from two: `Some(false)`
    /// or `Some(true)`).
    fn histograms(&self, stores: &[Option<StoreKind>], loads: &[Option<bool>]) -> Raw {
        let (mut c, mut inc, mut one, mut two) = (latency(), latency(), latency(), latency());
        for (i, (store, load)) in stores.iter().zip(loads).enumerate() {
            let ns = self.compress_ns[i];
            match store {
                Some(StoreKind::Compressed) if ns > 0 => c.saturating_record(ns),
                Some(StoreKind::Incompressible) if ns > 0 => inc.saturating_record(ns),
                _ => {}
            }
            let ns = self.decompress_ns[i];
            match load {
                Some(false) if ns > 0 => one.saturating_record(ns),
                Some(true) if ns > 0 => two.saturating_record(ns),
                _ => {}
            }
        }
        Raw {
            threads: self.threads,
            compress: c,
            compress_incompressible: inc,
            decompress_one: one,
            decompress_straddling: two,
        }
    }
}

/// Stores pages `share`, timing each whole store; returns the latencies of stores of a
/// frame, of stores as they are, of all stores, and how each page was stored.
fn store_pass(
    zswap: &Zswap,
    input: &Input,
    share: &[usize],
    failures: &Failures,
    progress: &Progress<'_>,
) -> ([Latency; 3], Vec<(usize, StoreKind)>) {
    let mut hists = [latency(), latency(), latency()];
    let mut kinds = Vec::with_capacity(share.len());
    for (done, &i) in share.iter().enumerate() {
        let (res, ns) = timed(|| zswap.store(i as u64, input.page(i)));
        match res {
            Ok(kind) => {
                match kind {
                    StoreKind::Compressed => hists[0].saturating_record(ns),
                    StoreKind::Incompressible => hists[1].saturating_record(ns),
                    StoreKind::SameFilled => {}
                    _ => {}
                }
                kinds.push((i, kind));
            }
            Err(e) => failures.add(Failure::Store(i as u64, e)),
        }
        hists[2].saturating_record(ns);
        progress.step(done);
    }
    (hists, kinds)
}

/// Loads pages `share`, timing each whole load by kind (a decompressed page by whether its
/// object came in two fragments, straddling backing pages that are not neighbours, asked
/// after the load, outside its time) and checking every byte afterwards; for each page
/// decompressed, whether it came in two.
fn load_pass(
    zswap: &Zswap,
    input: &Input,
    share: &[usize],
    failures: &Failures,
    progress: &Progress<'_>,
) -> ([Latency; 3], Vec<(usize, bool)>, u64) {
    let mut hists = [latency(), latency(), latency()];
    let mut kinds = Vec::with_capacity(share.len());
    let mut verified = 0;
    let mut page: Box<Page> = Box::new([0; PAGE_SIZE]);
    for (done, &i) in share.iter().enumerate() {
        // A stale page must not pass for a loaded one.
        page[0] = !input.page(i)[0];
        let (res, ns) = timed(|| zswap.load(i as u64, &mut page));
        match res {
            Ok(kind) => {
                let slot = match kind {
                    LoadKind::Decompressed => {
                        // The entry stays: its object is where the load found it.
                        let straddles = zswap.straddles(i as u64);
                        kinds.push((i, straddles));
                        usize::from(straddles)
                    }
                    // Copied, filled, the device's, a folio's (or a kind added later).
                    _ => 2,
                };
                hists[slot].saturating_record(ns);
                if *page == *input.page(i) {
                    verified += 1;
                } else {
                    failures.add(Failure::Mismatch(i as u64));
                }
            }
            Err(e) => failures.add(Failure::Load(i as u64, e)),
        }
        progress.step(done);
    }
    (hists, kinds, verified)
}

/// Runs the whole workload on `zswap` (fresh) over the pages of `input`.
///
/// # Panics
///
/// If the raw zstd baseline fails to round-trip a page (a bug in libzstd, not in acomp).
pub fn run(zswap: &Zswap, input: &Input, opts: &Options) -> Report {
    let n = input.len();
    let threads = opts.threads.max(1);
    let progress = Progress(opts.progress.as_ref());
    let failures = Failures::default();
    let mut rng = StdRng::seed_from_u64(opts.seed);
    let order: Vec<usize> = (0..n).collect();
    let mut load_order = order.clone();
    load_order.shuffle(&mut rng);

    // The floor, with the workload's threads, right before the pass it is compared with.
    let raw = raw_baseline(input, &order, &load_order, opts, threads, &progress);

    progress.phase("store", n);
    let (parts, wall) = parallel(threads, &order, |share| {
        store_pass(zswap, input, share, &failures, &progress)
    });
    let store_phase = Phase {
        pages: n as u64,
        wall,
    };
    let mut store_kinds = vec![None; n];
    let mut hists = [vec![], vec![], vec![]];
    for (h, kinds) in parts {
        for (slot, h) in hists.iter_mut().zip(h) {
            slot.push(h);
        }
        for (i, kind) in kinds {
            store_kinds[i] = Some(kind);
        }
    }
    let [store_compressed, store_incompressible, store_all] = hists.map(merge);
    let stored = counters(zswap);

    progress.phase("load and verify", n);
    let before = zswap.acomp().stats();
    let (parts, wall) = parallel(threads, &load_order, |share| {
        load_pass(zswap, input, share, &failures, &progress)
    });
    let after = zswap.acomp().stats();
    let load_paths = (
        after.one_shot - before.one_shot,
        // The multi-fragment path: zstd's stream, lz4's linearised.
        (after.stream + after.linearised) - (before.stream + before.linearised),
    );
    let load_phase = Phase {
        pages: n as u64,
        wall,
    };
    let mut load_straddles = vec![None; n];
    let mut verified = 0;
    let mut hists = [vec![], vec![], vec![]];
    for (h, kinds, v) in parts {
        for (slot, h) in hists.iter_mut().zip(h) {
            slot.push(h);
        }
        for (i, straddles) in kinds {
            load_straddles[i] = Some(straddles);
        }
        verified += v;
    }
    let [load_one, load_straddling, load_other] = hists.map(merge);

    // Churn: invalidate a random half, store it again.
    let mut half = order.clone();
    half.shuffle(&mut rng);
    half.truncate(n / 2);
    progress.phase("churn", half.len());
    let (_, wall) = parallel(threads, &half, |share| {
        for &i in share {
            zswap.invalidate(i as u64);
        }
        store_pass(zswap, input, share, &failures, &progress)
    });
    let churn_phase = Phase {
        pages: half.len() as u64,
        wall,
    };
    let churned = counters(zswap);

    progress.phase("verify", n);
    let (parts, wall) = parallel(threads, &load_order, |share| {
        load_pass(zswap, input, share, &failures, &progress)
    });
    verified += parts.iter().map(|p| p.2).sum::<u64>();
    let verify_phase = Phase {
        pages: n as u64,
        wall,
    };

    // The floor again, on one thread, for a ratio free of the second thread's noise.
    let raw_single = raw_baseline(input, &order, &load_order, opts, 1, &progress);

    for i in 0..n {
        zswap.invalidate(i as u64);
    }
    if let Some(pb) = &opts.progress {
        pb.finish_and_clear();
    }

    Report {
        pages: n,
        threads,
        stored,
        churned,
        pool_pages_at_end: zswap.pool_stats().pages,
        acomp: zswap.acomp().stats(),
        load_paths,
        store_compressed,
        store_incompressible,
        store_all,
        load_one,
        load_straddling,
        load_other,
        store_phase,
        load_phase,
        churn_phase,
        verify_phase,
        verified,
        failed: failures.count.load(Relaxed),
        failures: failures.first.into_inner(),
        raw: raw.histograms(&store_kinds, &load_straddles),
        raw_single: raw_single.histograms(&store_kinds, &load_straddles),
    }
}
