//! The pager: its builder and its handle.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize};
use std::time::Duration;

use acomp_zswap::{PAGE_SIZE, Zswap};
use parking_lot::{Mutex, RwLock};

use crate::error::Error;
use crate::lru::Reclaim;
use crate::region::Region;
use crate::shared::{Owner, Shared};
use crate::stats::{Counters, Stats};
use crate::sys::{EventFd, Uffd};

/// [`Builder::handler_spin`]'s default.
const SPIN: Duration = Duration::from_micros(50);

/// How a pager is set up. Made by [`Pager::builder`]; [`Builder::build`] starts its threads.
#[derive(Debug)]
#[must_use]
pub struct Builder {
    tier: Arc<Zswap>,
    resident_limit: Option<u64>,
    handler_threads: usize,
    handler_spin: Duration,
    page_out_threads: usize,
    keep_clean: bool,
}

impl Builder {
    /// RAM kept for the pager's regions, in bytes (rounded down to pages): past it, a
    /// reclaim thread pages out the coldest resident pages (see the crate docs, "Cold
    /// pages"). Default: none; pages leave only by [`Region::page_out`]. The limit counts
    /// the regions' pages only: the compressed copies are the tier's, in the same process,
    /// bounded by its own `max_pool_bytes`, so the process's RSS is up to the sum.
    pub fn resident_limit(mut self, bytes: u64) -> Self {
        self.resident_limit = Some(bytes);
        self
    }

    /// Threads that serve faults (default: the number of CPUs, at least 2, at most 8).
    /// Faults on different pages are served concurrently.
    pub fn handler_threads(mut self, n: usize) -> Self {
        self.handler_threads = n.max(1);
        self
    }

    /// How long a handler thread that served a fault keeps asking for the next one before
    /// it sleeps in `poll` (default: 50 µs; zero never spins). Faults come in bursts, and a
    /// thread already running reads the next one without a wake-up by the scheduler, which
    /// on a virtual machine with idle CPUs costs as much as the rest of the fault (see
    /// BENCHMARKS.md). One thread at a time spins, and only this long after its last fault:
    /// a process that stops faulting costs no CPU. The spin yields the CPU between its looks
    /// (`sched_yield`), so that a thread waiting for that CPU (the faulting thread, woken,
    /// or another handler) runs at once instead of after the spin.
    pub fn handler_spin(mut self, spin: Duration) -> Self {
        self.handler_spin = spin;
        self
    }

    /// Threads that compress a large [`Region::page_out`]'s pages: the calling thread and
    /// up to `n - 1` helpers, one for each 16 batches of 32 pages (default: the number of
    /// CPUs, at most 4). The kernel compresses in the thread that reclaims; a pager can
    /// spread a large page-out over the CPUs. 1 keeps it in the calling thread.
    pub fn page_out_threads(mut self, n: usize) -> Self {
        self.page_out_threads = n.max(1);
        self
    }

    /// Whether a page faulted in by a read keeps its compressed copy in the tier, so that
    /// paging it out again before it is written costs no compression (the kernel's swap
    /// cache keeping the swap slot). Default: true. The tier drops such copies first at its
    /// budget. With false, every fault takes the page out of the tier.
    pub fn keep_clean_copies(mut self, keep: bool) -> Self {
        self.keep_clean = keep;
        self
    }

    /// Opens the userfaultfd and starts the threads.
    ///
    /// # Errors
    ///
    /// [`Error::Unavailable`]: userfaultfd refused or missing, its errno kept
    /// ([`Error::raw_os_error`]); the message says what fixes it
    /// (`vm.unprivileged_userfaultfd`, `/dev/userfaultfd`, `CAP_SYS_PTRACE`, a seccomp
    /// profile). [`Error::InvalidInput`]: a `resident_limit` under 64 pages.
    /// [`Error::Os`]: an eventfd or a thread that could not be made.
    pub fn build(self) -> Result<Pager, Error> {
        let handlers = self.handler_threads;
        let reclaim = match self.resident_limit {
            Some(bytes) => Some(Reclaim::new(bytes / PAGE_SIZE as u64)?),
            None => None,
        };
        let shared = Arc::new(Shared {
            tier: self.tier,
            uffd: Uffd::open()?,
            stop: EventFd::new().map_err(Error::os("eventfd"))?,
            stopping: AtomicBool::new(false),
            spinning: AtomicBool::new(false),
            regions: RwLock::new(Vec::new()),
            map_lock: RwLock::new(()),
            pending: Mutex::new(Vec::new()),
            pending_len: AtomicUsize::new(0),
            own_removes: Mutex::new(Vec::new()),
            counters: Counters::new(handlers),
            keep_clean: self.keep_clean,
            spin: self.handler_spin,
            page_out_threads: self.page_out_threads,
            reclaim,
            pid: std::process::id(),
        });
        let mut threads = Vec::with_capacity(handlers + 1);
        for i in 0..handlers {
            let s = shared.clone();
            threads.push(
                std::thread::Builder::new()
                    .name(format!("acomp-pager-{i}"))
                    .spawn(move || s.handle_loop(i))
                    .map_err(Error::os("pthread_create"))?,
            );
        }
        if shared.reclaim.is_some() {
            let s = shared.clone();
            threads.push(
                std::thread::Builder::new()
                    .name("acomp-pager-reclaim".into())
                    .spawn(move || crate::reclaim::run(&s))
                    .map_err(Error::os("pthread_create"))?,
            );
        }
        Ok(Pager {
            owner: Arc::new(Owner {
                shared,
                threads: Mutex::new(threads),
            }),
        })
    }
}

/// A userfaultfd pager over a compressed tier: it makes [`Region`]s, serves their faults
/// and keeps their counters. `Send + Sync`; its threads stop when it and all its regions
/// are dropped.
#[derive(Debug, Clone)]
pub struct Pager {
    pub(crate) owner: Arc<Owner>,
}

impl Pager {
    /// A builder over `tier`, where paged-out pages go. The tier may be shared, with other
    /// pagers and with the program's own stores: a pager's offsets are the top half of the
    /// tier's key space ([`Region::tier_offset`]), its region ids counted for the whole
    /// process, so pagers never meet; the program keeps its own offsets below 2^63.
    pub fn builder(tier: Arc<Zswap>) -> Builder {
        let cpus = std::thread::available_parallelism().map_or(2, |n| n.get());
        Builder {
            tier,
            resident_limit: None,
            handler_threads: cpus.clamp(2, 8),
            handler_spin: SPIN,
            page_out_threads: cpus.min(4),
            keep_clean: true,
        }
    }

    /// A new region of `len` bytes (rounded up to whole pages): anonymous, page-aligned,
    /// zero-filled, served by this pager.
    ///
    /// The region's per-page state costs memory only for the pages touched: a 1 TiB region
    /// is made in O(1), and its drop and a `page_out` over it walk only the runs of 4,096
    /// pages where a page was touched.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidInput`] for `len == 0` or over 2^48 bytes; [`Error::Os`] for `mmap`
    /// or the userfaultfd registration failing (`ENOMEM`: the process's map count or
    /// address space); [`Error::Forked`] in a forked child; [`Error::OutOfRegionIds`].
    pub fn region(&self, len: usize) -> Result<Region, Error> {
        Region::new(self.owner.clone(), len)
    }

    /// The counters and gauges, over all regions.
    pub fn stats(&self) -> Stats {
        self.owner.shared.counters.snapshot()
    }

    /// The tier under the pager.
    pub fn tier(&self) -> &Arc<Zswap> {
        &self.owner.shared.tier
    }
}

// Here rather than in region.rs: this module depends on that one, not the reverse.
impl Region {
    /// The pager serving this region.
    pub fn pager(&self) -> Pager {
        Pager {
            owner: self.owner.clone(),
        }
    }
}

#[doc(hidden)]
pub fn _assert_send_sync() {
    fn is<T: Send + Sync>() {}
    is::<Pager>();
    is::<Region>();
    is::<Builder>();
}
