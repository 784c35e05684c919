//! Scaling: 1, 2, 4, 16 and 64 threads sharing one `Acomp`, against the same threads with
//! thread-local contexts and with one global `Mutex` around one context pair.
//!
//! Each thread compresses a page and decompresses the frame, `ACOMP_SCALING_PAGES` times
//! (default 20000), cycling through the page kinds of `acomp_pages::kinds`. Each (mode, threads)
//! cell runs `ACOMP_SCALING_RUNS` times (default 3), the modes interleaved; the table
//! gives the run with the median pages per second. Memory is what the contexts hold at
//! the end: `Acomp::stats().workspace_bytes` for acomp, `ZSTD_sizeof_CCtx` +
//! `ZSTD_sizeof_DCtx` summed over the contexts for the others.
//!
//! ```text
//! cargo bench --bench scaling
//! ```
//!
//! Without `--bench` (as `cargo test --benches` runs it) it only checks that every mode
//! works, on a few pages.
//!
//! `ACOMP_SCALING_SWITCHES=1` also reads the thread's context switches around each request
//! (`getrusage(RUSAGE_THREAD)`, two calls a request, on Linux) and prints, per cell, how many
//! requests parked (a voluntary switch: waiting for a lock), how many were preempted, and the
//! slowest request of each kind: where a slow request's time went.

use std::sync::{Arc, Barrier, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use acomp::{Acomp, Request};
use hdrhistogram::Histogram;
use std::io::{IoSlice, IoSliceMut};
use zstd_safe::{CCtx, CParameter, DCtx};

mod harness;

use acomp_pages::PAGE_SIZE as PAGE;
use acomp_pages::kinds as pages;
use harness::Variant;

/// Thread counts measured, unless `ACOMP_SCALING_THREADS` lists others (it must keep 1, 2
/// and 64, which the targets compare).
const THREADS: [usize; 5] = [1, 2, 4, 16, 64];

/// The level every mode compresses at: the kernel's `ZSTD_DEF_LEVEL`, acomp's default.
const LEVEL: i32 = 3;

/// How the threads reach a codec.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    /// One `Acomp` shared by all threads: per-CPU workspaces.
    Acomp,
    /// The same, each thread sending its pages in batches of [`BATCH`]
    /// (`compress_batch`, then `decompress_batch`).
    AcompBatch,
    /// A CCtx and a DCtx per thread, reused: the `thread_local!` pattern.
    ThreadLocal,
    /// One CCtx and one DCtx behind one `std::sync::Mutex`, locked per call.
    GlobalMutex,
}

impl Mode {
    const ALL: [Mode; 4] = [
        Mode::Acomp,
        Mode::AcompBatch,
        Mode::ThreadLocal,
        Mode::GlobalMutex,
    ];

    fn name(self) -> &'static str {
        match self {
            Mode::Acomp => "acomp (shared)",
            Mode::AcompBatch => "acomp, batches of 16",
            Mode::ThreadLocal => "thread-local",
            Mode::GlobalMutex => "global mutex",
        }
    }
}

/// A context pair at [`LEVEL`], reused for every request.
struct Contexts {
    cctx: CCtx<'static>,
    dctx: DCtx<'static>,
}

impl Contexts {
    fn new() -> Self {
        let mut cctx = CCtx::create();
        cctx.set_parameter(CParameter::CompressionLevel(LEVEL))
            .expect("ZSTD_c_compressionLevel");
        Contexts {
            cctx,
            dctx: DCtx::create(),
        }
    }

    fn sizeof(&self) -> usize {
        self.cctx.sizeof() + self.dctx.sizeof()
    }
}

impl Variant for &Acomp {
    const NAME: &'static str = "acomp";

    fn compress(&mut self, page: &[u8], dst: &mut [u8]) -> usize {
        Acomp::compress(self, &[IoSlice::new(page)], &mut [IoSliceMut::new(dst)])
            .expect("acomp compress")
    }

    fn decompress(&mut self, frame: &[u8], dst: &mut [u8]) -> usize {
        Acomp::decompress(self, &[IoSlice::new(frame)], &mut [IoSliceMut::new(dst)])
            .expect("acomp decompress")
    }
}

impl Variant for Contexts {
    const NAME: &'static str = "contexts";

    fn compress(&mut self, page: &[u8], dst: &mut [u8]) -> usize {
        self.cctx.compress2(dst, page).expect("ZSTD_compress2")
    }

    fn decompress(&mut self, frame: &[u8], dst: &mut [u8]) -> usize {
        self.dctx
            .decompress(dst, frame)
            .expect("ZSTD_decompressDCtx")
    }
}

impl Variant for &Mutex<Contexts> {
    const NAME: &'static str = "contexts-behind-a-mutex";

    fn compress(&mut self, page: &[u8], dst: &mut [u8]) -> usize {
        self.lock().expect("not poisoned").compress(page, dst)
    }

    fn decompress(&mut self, frame: &[u8], dst: &mut [u8]) -> usize {
        self.lock().expect("not poisoned").decompress(frame, dst)
    }
}

/// The calling thread's context switches so far: (voluntary, involuntary).
#[cfg(target_os = "linux")]
fn switches() -> (i64, i64) {
    let mut usage = std::mem::MaybeUninit::<libc::rusage>::zeroed();
    // SAFETY: getrusage writes one `rusage` through the pointer, which points to one.
    let rc = unsafe { libc::getrusage(libc::RUSAGE_THREAD, usage.as_mut_ptr()) };
    assert_eq!(rc, 0, "getrusage(RUSAGE_THREAD)");
    // SAFETY: zeroed is a valid `rusage`, and getrusage succeeded.
    let usage = unsafe { usage.assume_init() };
    (usage.ru_nvcsw, usage.ru_nivcsw)
}

#[cfg(not(target_os = "linux"))]
fn switches() -> (i64, i64) {
    (0, 0)
}

/// Where requests' time went, by their context switches (`ACOMP_SCALING_SWITCHES`).
#[derive(Debug, Default, Clone, Copy)]
struct Switches {
    requests: u64,
    /// Requests with a voluntary switch: the thread slept (parked on a lock).
    parked: u64,
    /// Requests with an involuntary switch: the thread was preempted.
    preempted: u64,
    /// The slowest request that parked, and the slowest that did not (ns).
    max_parked: u64,
    max_not_parked: u64,
}

impl Switches {
    fn add(&mut self, o: Switches) {
        self.requests += o.requests;
        self.parked += o.parked;
        self.preempted += o.preempted;
        self.max_parked = self.max_parked.max(o.max_parked);
        self.max_not_parked = self.max_not_parked.max(o.max_not_parked);
    }
}

/// One thread's share: `count` pages, starting at page kind `first`. Returns the latency
/// of each compress + decompress pair, in nanoseconds, and, where `watch`, where it went.
fn work(
    codec: &mut impl Variant,
    pages: &[Vec<u8>],
    first: usize,
    count: usize,
    watch: bool,
) -> (Histogram<u64>, Switches) {
    let mut latency = histogram();
    let mut sw = Switches::default();
    let mut frame = vec![0; zstd_safe::compress_bound(PAGE)];
    let mut back = vec![0; PAGE];
    for i in 0..count {
        let page = &pages[(first + i) % pages.len()];
        let before = if watch { switches() } else { (0, 0) };
        let start = Instant::now();
        let n = codec.compress(page, &mut frame);
        let m = codec.decompress(&frame[..n], &mut back);
        let ns = start.elapsed().as_nanos() as u64;
        latency.saturating_record(ns);
        if watch {
            let after = switches();
            let parked = after.0 > before.0;
            sw.requests += 1;
            sw.parked += u64::from(parked);
            sw.preempted += u64::from(after.1 > before.1);
            let max = if parked {
                &mut sw.max_parked
            } else {
                &mut sw.max_not_parked
            };
            *max = (*max).max(ns);
        }
        assert!(m == PAGE && back == *page, "round trip");
    }
    (latency, sw)
}

/// Pages per batch in [`Mode::AcompBatch`]: a 64 KiB folio.
const BATCH: usize = 16;

/// Serves one request per source, each into its buffer of `dsts`, with `op` (a batch
/// call); returns the bytes each produced.
fn serve_batch(
    op: impl FnOnce(&mut [Request<'_, '_>]),
    srcs: &[&[u8]],
    dsts: &mut [Vec<u8>],
) -> Vec<usize> {
    let srcs: Vec<[IoSlice<'_>; 1]> = srcs.iter().map(|s| [IoSlice::new(s)]).collect();
    let mut dsts: Vec<[IoSliceMut<'_>; 1]> =
        dsts.iter_mut().map(|d| [IoSliceMut::new(d)]).collect();
    let mut reqs: Vec<Request<'_, '_>> = srcs
        .iter()
        .zip(&mut dsts)
        .map(|(s, d)| Request::new(s, d))
        .collect();
    op(&mut reqs);
    reqs.iter()
        .map(|r| *r.outcome().expect("served").as_ref().expect("succeeded"))
        .collect()
}

/// [`work`] in batches of [`BATCH`] pages: each page's latency is its batch's (compress
/// batch + decompress batch) over the pages in it.
fn work_batch(tfm: &Acomp, pages: &[Vec<u8>], first: usize, count: usize) -> Histogram<u64> {
    let mut latency = histogram();
    let mut frames = vec![vec![0; zstd_safe::compress_bound(PAGE)]; BATCH];
    let mut back = vec![vec![0; PAGE]; BATCH];
    for start in (0..count).step_by(BATCH) {
        let n = BATCH.min(count - start);
        let batch: Vec<&[u8]> = (start..start + n)
            .map(|i| &pages[(first + i) % pages.len()][..])
            .collect();
        let t = Instant::now();
        let sizes = serve_batch(|r| tfm.compress_batch(r), &batch, &mut frames);
        let sent: Vec<&[u8]> = frames.iter().zip(&sizes).map(|(f, &m)| &f[..m]).collect();
        let ok = serve_batch(|r| tfm.decompress_batch(r), &sent, &mut back)
            .iter()
            .all(|&m| m == PAGE);
        let per_page = t.elapsed().as_nanos() as u64 / n as u64;
        latency.saturating_record_n(per_page, n as u64);
        assert!(
            ok && batch.iter().zip(&back).all(|(p, b)| *p == &b[..]),
            "round trip"
        );
    }
    latency
}

/// Latencies from 1 ns to 60 s, 3 significant figures.
fn histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, 60_000_000_000, 3).expect("valid bounds")
}

/// One run of one cell of the table.
struct Run {
    elapsed: Duration,
    pages: usize,
    /// Bytes the contexts hold at the end.
    memory: usize,
    /// Contexts (acomp: filled workspaces) holding that memory.
    contexts: usize,
    /// acomp only: requests that found their CPU's workspace busy.
    busy: u64,
    latency: Histogram<u64>,
    /// Single-request modes, where watched: where requests' time went.
    switches: Switches,
}

impl Run {
    fn pages_per_s(&self) -> f64 {
        self.pages as f64 / self.elapsed.as_secs_f64()
    }
}

/// Runs `threads` threads of `mode`, each on `count` pages, started together.
fn run(mode: Mode, threads: usize, count: usize, pages: &Arc<Vec<Vec<u8>>>, watch: bool) -> Run {
    let tfm = Arc::new(Acomp::new("zstd").expect("acomp zstd transform"));
    let global = Arc::new(Mutex::new(Contexts::new()));
    let barrier = Arc::new(Barrier::new(threads + 1));
    let handles: Vec<_> = (0..threads)
        .map(|t| {
            let (tfm, global, barrier, pages) =
                (tfm.clone(), global.clone(), barrier.clone(), pages.clone());
            thread::spawn(move || {
                barrier.wait();
                match mode {
                    Mode::Acomp => (work(&mut &*tfm, &pages, t, count, watch), 0),
                    Mode::AcompBatch => {
                        ((work_batch(&tfm, &pages, t, count), Switches::default()), 0)
                    }
                    Mode::ThreadLocal => {
                        // Created by the thread on its first request, as `thread_local!`
                        // would: part of the timed work.
                        let mut local = Contexts::new();
                        let latency = work(&mut local, &pages, t, count, watch);
                        (latency, local.sizeof())
                    }
                    Mode::GlobalMutex => (work(&mut &*global, &pages, t, count, watch), 0),
                }
            })
        })
        .collect();
    barrier.wait();
    let start = Instant::now();
    let mut latency = histogram();
    let mut switches = Switches::default();
    let mut local_bytes = 0;
    for h in handles {
        let ((l, sw), bytes) = h.join().expect("worker thread");
        latency.add(l).expect("same histogram bounds");
        switches.add(sw);
        local_bytes += bytes;
    }
    let elapsed = start.elapsed();
    let stats = tfm.stats();
    let (memory, contexts, busy) = match mode {
        Mode::Acomp | Mode::AcompBatch => (stats.workspace_bytes, stats.workspaces, stats.busy),
        Mode::ThreadLocal => (local_bytes, threads, 0),
        Mode::GlobalMutex => (global.lock().expect("not poisoned").sizeof(), 1, 0),
    };
    Run {
        elapsed,
        pages: threads * count,
        memory,
        contexts,
        busy,
        latency,
        switches,
    }
}

fn kib(bytes: usize) -> String {
    format!("{:.0} KiB", bytes as f64 / 1024.0)
}

fn main() {
    let bench = std::env::args().any(|a| a == "--bench");
    let (count, runs) = if bench {
        (
            harness::env_or("ACOMP_SCALING_PAGES", 20_000),
            harness::env_or("ACOMP_SCALING_RUNS", 3),
        )
    } else {
        (20, 1)
    };
    let threads: Vec<usize> =
        std::env::var("ACOMP_SCALING_THREADS").map_or(THREADS.to_vec(), |v| {
            v.split(',')
                .map(|t| {
                    t.trim()
                        .parse()
                        .expect("ACOMP_SCALING_THREADS: numbers, e.g. 1,2,64")
                })
                .collect()
        });
    assert!(
        [1, 2, 64].iter().all(|t| threads.contains(t)),
        "ACOMP_SCALING_THREADS must list 1, 2 and 64"
    );
    let watch = std::env::var_os("ACOMP_SCALING_SWITCHES").is_some();
    let pages = Arc::new(
        pages::pages()
            .into_iter()
            .map(|(_, p)| p)
            .collect::<Vec<_>>(),
    );
    let mut cells: Vec<Vec<Vec<Run>>> = Mode::ALL
        .iter()
        .map(|_| threads.iter().map(|_| Vec::new()).collect())
        .collect();
    for _ in 0..runs {
        for (ti, &n) in threads.iter().enumerate() {
            for (mi, &mode) in Mode::ALL.iter().enumerate() {
                cells[mi][ti].push(run(mode, n, count, &pages, watch));
            }
        }
    }
    if !bench {
        println!("scaling: every mode ran; run with `cargo bench --bench scaling` to measure");
        return;
    }
    // The run with the median pages per second, per cell.
    let median: Vec<Vec<Run>> = cells
        .into_iter()
        .map(|by_threads| {
            by_threads
                .into_iter()
                .map(|mut runs| {
                    runs.sort_by(|a, b| a.pages_per_s().total_cmp(&b.pages_per_s()));
                    runs.swap_remove(runs.len() / 2)
                })
                .collect()
        })
        .collect();
    let slots = Acomp::new("zstd").expect("acomp").stats().slots;
    println!(
        "\n#### Scaling: compress + decompress of mixed 4 KiB pages, {count} pages per thread, \
         median of {runs} runs, {slots} CPUs\n"
    );
    println!(
        "| threads | mode | pages/s | vs 1 thread | memory | contexts | p99 µs | max µs | busy |"
    );
    println!("|---:|---|---:|---:|---:|---:|---:|---:|---:|");
    for (ti, threads) in threads.iter().enumerate() {
        for (mi, mode) in Mode::ALL.iter().enumerate() {
            let r = &median[mi][ti];
            println!(
                "| {threads} | {} | {:.0} | {:.2}x | {} | {} | {:.1} | {:.0} | {} |",
                mode.name(),
                r.pages_per_s(),
                r.pages_per_s() / median[mi][0].pages_per_s(),
                kib(r.memory),
                r.contexts,
                r.latency.value_at_quantile(0.99) as f64 / 1000.0,
                r.latency.max() as f64 / 1000.0,
                r.busy,
            );
        }
    }
    if watch {
        println!("\n#### Where requests' time went (context switches inside each request)\n");
        println!(
            "| threads | mode | requests | parked | preempted | max, parked (ms) | max, \
             not parked (ms) |"
        );
        println!("|---:|---|---:|---:|---:|---:|---:|");
        for (ti, threads) in threads.iter().enumerate() {
            for (mi, mode) in Mode::ALL.iter().enumerate() {
                let s = median[mi][ti].switches;
                if s.requests == 0 {
                    continue; // batches: not watched
                }
                let pct = |n: u64| 100.0 * n as f64 / s.requests as f64;
                println!(
                    "| {threads} | {} | {} | {:.2}% | {:.2}% | {:.1} | {:.1} |",
                    mode.name(),
                    s.requests,
                    pct(s.parked),
                    pct(s.preempted),
                    s.max_parked as f64 / 1e6,
                    s.max_not_parked as f64 / 1e6,
                );
            }
        }
    }
    let acomp = &median[0];
    let at = |n| {
        threads
            .iter()
            .position(|&t| t == n)
            .expect("1, 2 and 64 are measured")
    };
    let two_vs_one = acomp[at(2)].pages_per_s() / acomp[at(1)].pages_per_s();
    let batch = &median[1];
    let batch_two_vs_one = batch[at(2)].pages_per_s() / batch[at(1)].pages_per_s();
    let local = &median[2];
    let vs_local = |r: &Run, l: &Run| {
        format!(
            "pages/s {:.2}x, p99 {:.2}x, max {:.2}x",
            r.pages_per_s() / l.pages_per_s(),
            r.latency.value_at_quantile(0.99) as f64 / l.latency.value_at_quantile(0.99) as f64,
            r.latency.max() as f64 / l.latency.max() as f64
        )
    };
    let sixty_four_vs_two = acomp[at(64)].pages_per_s() / acomp[at(2)].pages_per_s();
    let (ws64, n64) = (acomp[at(64)].memory, acomp[at(64)].contexts);
    let local64 = local[at(64)].memory;
    println!("\n#### Targets (acomp)\n");
    println!("- 2 threads / 1 thread: {two_vs_one:.2}x (target >= 1.8x)");
    println!("- 64 threads / 2 threads: {sixty_four_vs_two:.2}x");
    println!(
        "- 64 threads, acomp against thread-local contexts: {} (target: pages/s >= 0.9x, \
         latencies within 10%)",
        vs_local(&acomp[at(64)], &local[at(64)])
    );
    println!("- batches of 16, 2 threads / 1 thread: {batch_two_vs_one:.2}x (target >= 1.8x)");
    println!(
        "- workspace memory at 64 threads: {} in {n64} workspaces of {} (CCtx + DCtx + \
         scratch) for {slots} CPUs (target: at most {slots} workspaces); 64 thread-local \
         context pairs: {}",
        kib(ws64),
        kib(ws64 / n64.max(1)),
        kib(local64),
    );
}
