//! How every table of the main job times its calls: a histogram of each call's latency in
//! nanoseconds beside their total time, MiB/s of pages over that time, quantiles in µs, and
//! the calling thread's CPU time.

use std::time::{Duration, Instant};

use hdrhistogram::Histogram;

/// Latencies in nanoseconds: 1 ns to 60 s, three significant digits.
pub type Latency = Histogram<u64>;

/// An empty [`Latency`].
pub fn latency() -> Latency {
    Histogram::new_with_bounds(1, 60_000_000_000, 3).expect("valid bounds")
}

/// Quantile `q` of `h` in µs (0 where it is empty).
pub fn us(h: &Latency, q: f64) -> f64 {
    h.value_at_quantile(q) as f64 / 1000.0
}

/// `bytes` in MiB (2^20 bytes) over `time` in seconds.
pub fn mib_s(bytes: u64, time: Duration) -> f64 {
    bytes as f64 / (1024.0 * 1024.0) / time.as_secs_f64().max(1e-9)
}

/// Calls `f`; returns what it returned and the nanoseconds it took.
pub fn timed<R>(f: impl FnOnce() -> R) -> (R, u64) {
    let start = Instant::now();
    let r = f();
    (r, start.elapsed().as_nanos() as u64)
}

/// The CPU time the calling thread has used (`CLOCK_THREAD_CPUTIME_ID`).
pub fn thread_cpu() -> Duration {
    cpu_time::ThreadTime::now().as_duration()
}

/// Calls timed one by one: the time spent in them, and each one's latency.
#[derive(Debug, Clone)]
pub struct Calls {
    /// Time in the calls, summed.
    pub time: Duration,
    /// Latency of each call.
    pub lat: Latency,
}

impl Default for Calls {
    fn default() -> Self {
        Calls {
            time: Duration::ZERO,
            lat: latency(),
        }
    }
}

impl Calls {
    /// Calls `f`, counting its time and latency; returns what it returned.
    pub fn time<R>(&mut self, f: impl FnOnce() -> R) -> R {
        let (r, ns) = timed(f);
        self.time += Duration::from_nanos(ns);
        self.lat.saturating_record(ns);
        r
    }

    /// Calls `f`, which serves `pages` pages in one call (a batch), counting its time and,
    /// `pages` times, its latency per page (the call's time over its pages).
    pub fn time_batch<R>(&mut self, pages: usize, f: impl FnOnce() -> R) -> R {
        let (r, ns) = timed(f);
        self.time += Duration::from_nanos(ns);
        let pages = pages.max(1) as u64;
        // Within the histogram's range: a call's time over at most a batch of pages.
        let _ = self.lat.record_n((ns / pages).max(1), pages);
        r
    }
}
