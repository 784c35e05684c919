//! The pager's counters and gauges, as plain fields.

use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};

use parking_lot::Mutex;

/// A snapshot of a pager's counters (since it was built) and gauges (now), over all its
/// regions. Page counts are 4 KiB pages; times are nanoseconds.
#[derive(Debug, Clone, Default, PartialEq)]
#[non_exhaustive]
pub struct Stats {
    /// Page faults served (missing and write-protect): each access that faulted counted
    /// once, as `pgfault` counts them. A fault deferred (`deferred_faults`) is counted when
    /// it faults again and is served; one that waited for the reclaimer
    /// (`throttled_faults`), when it is served.
    pub faults: u64,
    /// Faults on paged-out pages, served from the tier (`pswpin`).
    pub swap_ins: u64,
    /// Of `swap_ins`: pages brought in by fault-around after a fault
    /// ([`Builder::fault_around`](crate::Builder::fault_around)), not by a fault of their
    /// own (the kernel's `swap_ra`).
    pub swap_readahead: u64,
    /// Faults on pages never written (or dropped by the program): the zero page, or a
    /// zeroed page for a write; the tier is not asked.
    pub zero_faults: u64,
    /// First writes to clean pages: the tier's copy is dropped and the page made writable.
    pub write_protect_faults: u64,
    /// Faults deferred because another thread held the page: woken when it is released,
    /// they fault again (on the faulting thread, with `signal_faults`: it waits for the
    /// release, then retries the access).
    pub deferred_faults: u64,
    /// Faults that waited for the reclaimer, the regions being past the limit and its
    /// slack (a task waiting in direct reclaim): served once it made room (the access
    /// faults once).
    pub throttled_faults: u64,
    /// Faults that could not be served (the tier's load failed: a device error, a corrupt
    /// page): the access got SIGBUS, as a failed swap read does.
    pub failed_faults: u64,
    /// Pages compressed into the tier by `page_out` and the reclaimer that left memory
    /// (`pswpout`; a locked page, stored and then refused by the kernel's drop, is not).
    pub swap_outs: u64,
    /// Pages paged out without compression: clean pages whose copy the tier still held.
    pub clean_swap_outs: u64,
    /// Zero pages paged out: dropped, nothing stored.
    pub zero_swap_outs: u64,
    /// Pages paged out by the reclaimer to keep under `resident_limit` or `memory_limit`.
    pub reclaimed: u64,
    /// Of `reclaimed`: pages paged out by faults on their own thread before they brought a
    /// page in ([`Builder::direct_reclaim`](crate::Builder::direct_reclaim); the kernel's
    /// `pgsteal_direct`), not by the reclaim thread (`pgsteal_kswapd`).
    pub direct_reclaimed: u64,
    /// The reclaimer's victims that stayed in memory (the tier refused them, or they are
    /// locked or unreadable): back on its list, still counted against the limit.
    pub reclaim_kept: u64,
    /// Times the reclaimer stalled: over the limit, it could page nothing out (the tier's
    /// pool too small for the limit, every resident page locked). Faults then go past the
    /// limit instead of waiting, the reclaimer retries every 50 ms, and a warning is
    /// logged once a stall.
    pub reclaim_stalls: u64,
    /// Faults on pages the reclaimer had paged out recently enough that they belong to the
    /// working set (the kernel's `workingset_refault`); such pages are kept longer.
    pub refaults_activated: u64,
    /// Pages mapped in the pager's regions (written, faulted in, or the zero page).
    pub resident_pages: u64,
    /// Of `resident_pages`: clean pages, faulted in by a read and not written since, whose
    /// copy the tier kept (it may have dropped some at its budget since: the tier's
    /// `Stats::clean_pages` counts those it still holds).
    pub clean_pages: u64,
    /// Pages held by the tier only.
    pub paged_out_pages: u64,
    /// Handler time of a fault, from reading its message to waking the thread: median.
    pub fault_service_p50_ns: u64,
    /// The same, 99th percentile.
    pub fault_service_p99_ns: u64,
    /// Panics caught in the pager's threads (each fault it was serving got SIGBUS).
    pub panics: u64,
}

/// The live counters behind [`Stats`].
#[derive(Debug, Default)]
pub struct Counters {
    pub faults: AtomicU64,
    pub swap_ins: AtomicU64,
    pub swap_readahead: AtomicU64,
    pub zero_faults: AtomicU64,
    pub write_protect_faults: AtomicU64,
    pub deferred_faults: AtomicU64,
    pub throttled_faults: AtomicU64,
    pub failed_faults: AtomicU64,
    pub swap_outs: AtomicU64,
    pub clean_swap_outs: AtomicU64,
    pub zero_swap_outs: AtomicU64,
    pub reclaimed: AtomicU64,
    pub direct_reclaimed: AtomicU64,
    pub reclaim_kept: AtomicU64,
    pub reclaim_stalls: AtomicU64,
    pub refaults_activated: AtomicU64,
    pub resident: AtomicI64,
    pub clean: AtomicI64,
    pub out: AtomicI64,
    pub panics: AtomicU64,
    /// One histogram per handler thread (uncontended), merged by `snapshot`.
    pub service: Vec<Mutex<hdrhistogram::Histogram<u64>>>,
}

pub fn add(c: &AtomicU64, n: u64) {
    c.fetch_add(n, Ordering::Relaxed);
}

impl Counters {
    pub fn new(handlers: usize) -> Counters {
        Counters {
            service: (0..handlers)
                .map(|_| {
                    Mutex::new(
                        hdrhistogram::Histogram::new_with_bounds(1, 60_000_000_000, 2)
                            .expect("valid histogram bounds"),
                    )
                })
                .collect(),
            ..Counters::default()
        }
    }

    /// Counts a page leaving state `from` for state `to` (the gauges).
    pub fn moved(&self, from: u8, to: u8) {
        use crate::state::{CLEAN, OUT, RESIDENT};
        if from == to {
            return;
        }
        for (state, delta) in [(from, -1), (to, 1)] {
            match state {
                RESIDENT => self.resident.fetch_add(delta, Ordering::Relaxed),
                CLEAN => {
                    self.resident.fetch_add(delta, Ordering::Relaxed);
                    self.clean.fetch_add(delta, Ordering::Relaxed)
                }
                OUT => self.out.fetch_add(delta, Ordering::Relaxed),
                _ => 0,
            };
        }
    }

    pub fn resident_pages(&self) -> u64 {
        self.resident.load(Ordering::Relaxed).max(0) as u64
    }

    pub fn snapshot(&self) -> Stats {
        let mut all = hdrhistogram::Histogram::<u64>::new_with_bounds(1, 60_000_000_000, 2)
            .expect("valid histogram bounds");
        for h in &self.service {
            all.add(&*h.lock()).expect("same bounds");
        }
        let get = |c: &AtomicU64| c.load(Ordering::Relaxed);
        let gauge = |c: &AtomicI64| c.load(Ordering::Relaxed).max(0) as u64;
        Stats {
            faults: get(&self.faults),
            swap_ins: get(&self.swap_ins),
            swap_readahead: get(&self.swap_readahead),
            zero_faults: get(&self.zero_faults),
            write_protect_faults: get(&self.write_protect_faults),
            deferred_faults: get(&self.deferred_faults),
            throttled_faults: get(&self.throttled_faults),
            failed_faults: get(&self.failed_faults),
            swap_outs: get(&self.swap_outs),
            clean_swap_outs: get(&self.clean_swap_outs),
            zero_swap_outs: get(&self.zero_swap_outs),
            reclaimed: get(&self.reclaimed),
            direct_reclaimed: get(&self.direct_reclaimed),
            reclaim_kept: get(&self.reclaim_kept),
            reclaim_stalls: get(&self.reclaim_stalls),
            refaults_activated: get(&self.refaults_activated),
            resident_pages: gauge(&self.resident),
            clean_pages: gauge(&self.clean),
            paged_out_pages: gauge(&self.out),
            fault_service_p50_ns: all.value_at_quantile(0.5),
            fault_service_p99_ns: all.value_at_quantile(0.99),
            panics: get(&self.panics),
        }
    }
}
