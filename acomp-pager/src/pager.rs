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
    memory_limit: Option<u64>,
    handler_threads: Option<usize>,
    handler_spin: Duration,
    signal_faults: bool,
    fault_around: usize,
    page_out_threads: usize,
    keep_clean: bool,
    direct_reclaim: bool,
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

    /// The pager's whole memory, in bytes (rounded down to pages): the regions' resident
    /// pages and the tier's pool together (`pool_total_size`, the whole tier's, shared or
    /// not), as a memory cgroup counts a task's pages and, with zswap, its compressed copies.
    /// The reclaim thread keeps the resident pages under what the pool leaves of it (and
    /// under [`Builder::resident_limit`] where both are set), at least 64 pages. The limit
    /// is hard: faults that would pass it wait for the reclaimer (give or take a batch of 32
    /// pages stored since it last read the pool's size, and a page for each further thread
    /// faulting at once: each is checked before the others' pages are counted), but for
    /// those 64 pages (a pool past the limit leaves the regions that many) and while the
    /// reclaimer is stalled (see the crate docs, "Cold pages"). Under it, a page faulted in
    /// by a read gives up its copy in the tier unless the limit has room for both (memory
    /// counted once: zram frees a slot on swap-in), and so is mapped writable: its first
    /// write takes no fault. Not counted: the tier's index and the pager's per-page state
    /// (tens of bytes a page). Default: none.
    pub fn memory_limit(mut self, bytes: u64) -> Self {
        self.memory_limit = Some(bytes);
        self
    }

    /// Threads that serve faults (default: the number of CPUs, at least 2, at most 8).
    /// Faults on different pages are served concurrently.
    pub fn handler_threads(mut self, n: usize) -> Self {
        self.handler_threads = Some(n.max(1));
        self
    }

    /// The most pages fault-around brings in after a fault (default: 16; 0 turns it off).
    /// A fault on the page after the last run of swap-ins maps the pages out after it too,
    /// in a window that doubles with each such fault (1, 2, 4 up to this), so that a sweep
    /// in order takes one fault for each window instead of one a page; any other fault
    /// closes the window, and random accesses bring in nothing more. The kernel's swap
    /// readahead does the same for a swap device, but not for zram (`SWP_SYNCHRONOUS_IO`
    /// reads one page a fault). Counted in [`Stats::swap_readahead`](crate::Stats).
    pub fn fault_around(mut self, pages: usize) -> Self {
        self.fault_around = pages;
        self
    }

    /// Whether faults are served on the faulting thread, in a SIGBUS handler, rather than
    /// by the handler threads (default: false). With `UFFD_FEATURE_SIGBUS` an access to a
    /// missing page raises SIGBUS in the thread that made it, and the pager's handler loads
    /// and maps the page there: no message, no second thread, no two wake-ups (Android's ART
    /// collector serves its faults the same way). BENCHMARKS.md measures what it saves.
    ///
    /// What it costs:
    /// - The kernel's own accesses to a page not in memory fail with `EFAULT` instead of
    ///   waiting for it (`read(2)` into a region, `write(2)` from it, a `futex` on it, a
    ///   `recv` into it): the program touches such buffers first, or leaves them out of
    ///   regions. The userfaultfd is opened with `UFFD_USER_MODE_ONLY`, which for the same
    ///   reason needs no privilege: the pager works where `vm.unprivileged_userfaultfd` is 0
    ///   without `CAP_SYS_PTRACE` or `/dev/userfaultfd`.
    /// - The pager installs a SIGBUS handler, once for the process, over the action SIGBUS
    ///   had: a SIGBUS that is not a fault on one of its regions goes on to that action as
    ///   before. A program with a SIGBUS handler of its own installs it before the first
    ///   such pager is built, or hands the signals it does not know to the one it replaced.
    /// - The handler allocates nothing to serve a fault (but for a fault over the limit,
    ///   which first pages out a batch: [`Builder::direct_reclaim`] says when that matters),
    ///   and the locks it takes are held only inside the pager's and the tier's code, which
    ///   never touches a region's pages while holding one: the tier's calls must not be given a region's memory as their buffers (a store
    ///   from a region page would fault inside the tier). Every other signal is held off
    ///   while it runs, and the pager's threads block the signals sent to the process, so a
    ///   signal handler of the program's may touch a region, but for one case, a known bug:
    ///   a handler that interrupts a thread inside the allocator (its lock held) and
    ///   touches a page that a page-out holds, while that page-out allocates (the tier's
    ///   store), deadlocks, each waiting for the other. A page-out of a faulting thread
    ///   under [`Builder::direct_reclaim`] (the default) makes it likely under a fast timer
    ///   whose handler reads a region (seen in 1 of 4 test runs on a loaded machine); a
    ///   handler that touches no region, or only pages in memory, is safe. A thread that blocks SIGBUS
    ///   itself (a `sigwait` thread) must not touch a page not in memory: the kernel kills
    ///   a process whose thread faults with SIGBUS blocked. The handler runs on the
    ///   faulting thread's stack and takes about 8 KiB of it (a page's buffer and the
    ///   tier's load; more in a debug build: a 16 KiB thread stack overflowed there).
    /// - The kernel's writes into a page faulted in by a read and kept clean (its copy in
    ///   the tier, the page write-protected: the default without a memory limit) fail with
    ///   `EFAULT` too, until the program writes it.
    /// - A fault that would take the regions past their limit pages out a batch of the
    ///   coldest pages on the faulting thread first ([`Builder::direct_reclaim`], the
    ///   kernel's direct reclaim), and waits there for the reclaim thread where it could
    ///   not; a fault that cannot be served poisons
    ///   the page, and the retried access is SIGBUS to the program, as with the threads.
    /// - One handler thread still reads the program's remove events (`MADV_DONTNEED`);
    ///   [`Stats::fault_service_p50_ns`](crate::Stats::fault_service_p50_ns) times the
    ///   handler threads' faults only, so stays 0.
    pub fn signal_faults(mut self, on: bool) -> Self {
        self.signal_faults = on;
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
    /// budget. Under a limit, a page written in one residency goes in without its copy at its
    /// next three read fault-ins (see the crate docs, "The contract"). With false, every fault
    /// takes the page out of the tier.
    pub fn keep_clean_copies(mut self, keep: bool) -> Self {
        self.keep_clean = keep;
        self
    }

    /// Whether a fault served on the faulting thread ([`Builder::signal_faults`]) that would
    /// take the regions past their limit ([`Builder::memory_limit`],
    /// [`Builder::resident_limit`]) first pages out a batch of the coldest pages itself
    /// (default: true), as a task in the kernel reclaims before it charges a page past its
    /// cgroup's `memory.max`. The page tables then change on the CPU that runs the program:
    /// the reclaim thread's page-outs, on another CPU, interrupt the program's CPU to flush
    /// its TLB for each run of pages they move out. Where faults come fast (the main job's
    /// budget rows at 40% of the data, and 50% at Zipf 0.8) that costs the program more
    /// than the compression the thread takes off it, and direct reclaim runs 1.06-1.19x as
    /// fast; where they are few (70%), the thread's compression on a CPU of its own is
    /// worth more, and turning this off runs 1.09-1.19x as fast (BENCHMARKS.md, "Under a
    /// memory budget"). The reclaim thread still runs where the faults cannot keep the
    /// regions under the limit (every victim held, the tier refusing), and the throttle
    /// waits for it as before; while it is stalled (the tier refusing its pages), faults
    /// go past the limit without a batch of their own, until its next try (every 50 ms)
    /// makes room. Counted in [`Stats::direct_reclaimed`](crate::Stats).
    ///
    /// What it costs: the batch is compressed and stored in the SIGBUS handler, where the
    /// tier may allocate (its index and entries grow, a store at its budget writes back).
    /// A signal handler that allocates deadlocks where the interrupted code holds the
    /// allocator's lock: where a fault on a region page means the allocator itself touched
    /// the region (a program whose global allocator keeps its heap in a region turns this
    /// off: faults over the limit then wait for the reclaim thread, allocating nothing), and
    /// where another thread, interrupted inside the allocator by a handler of the program's
    /// that touches a page of the batch, waits for the batch while holding the lock the
    /// batch needs (a known bug: see [`Builder::signal_faults`]; turning this off makes it
    /// rarer, as the reclaim thread's page-outs allocate too).
    /// Without `signal_faults` it changes nothing: the handler threads leave reclaim to
    /// the reclaim thread.
    pub fn direct_reclaim(mut self, on: bool) -> Self {
        self.direct_reclaim = on;
        self
    }

    /// Opens the userfaultfd and starts the threads.
    ///
    /// # Errors
    ///
    /// [`Error::Unavailable`]: userfaultfd refused or missing, its errno kept
    /// ([`Error::raw_os_error`]); the message says what fixes it
    /// (`vm.unprivileged_userfaultfd`, `/dev/userfaultfd`, `CAP_SYS_PTRACE`, a seccomp
    /// profile). [`Error::InvalidInput`]: a `resident_limit` or `memory_limit` under 64
    /// pages.
    /// [`Error::Os`]: an eventfd or a thread that could not be made.
    pub fn build(self) -> Result<Pager, Error> {
        let cpus = std::thread::available_parallelism().map_or(2, |n| n.get());
        let handlers = match (self.handler_threads, self.signal_faults) {
            (Some(n), _) => n,
            (None, true) => 1,
            (None, false) => cpus.clamp(2, 8),
        };
        if self.signal_faults {
            crate::sys::install_sigbus_handler(crate::signal_fault::serve_signal)
                .map_err(Error::os("sigaction"))?;
        }
        let pages = |bytes: Option<u64>| bytes.map(|b| b / PAGE_SIZE as u64);
        let reclaim = match (self.resident_limit, self.memory_limit) {
            (None, None) => None,
            (r, m) => Some(Reclaim::new(
                pages(r),
                pages(m),
                self.signal_faults,
                self.signal_faults && self.direct_reclaim,
            )?),
        };
        let shared = Arc::new(Shared {
            tier: self.tier,
            uffd: Uffd::open(self.signal_faults)?,
            stop: EventFd::new().map_err(Error::os("eventfd"))?,
            stopping: AtomicBool::new(false),
            spinning: AtomicBool::new(false),
            regions: RwLock::new(Vec::new()),
            map_lock: RwLock::new(()),
            pending: Mutex::new(Vec::new()),
            pending_len: AtomicUsize::new(0),
            own_removes: Mutex::new(Vec::new()),
            counters: Counters::new(handlers),
            mover: crate::sys::Mover::new(crate::pages::BATCH),
            keep_clean: self.keep_clean,
            signal: self.signal_faults,
            fault_around: self.fault_around,
            around_pages: Mutex::new(vec![[0; PAGE_SIZE]; self.fault_around].into_boxed_slice()),
            spin: self.handler_spin,
            page_out_threads: self.page_out_threads,
            reclaim,
            pid: crate::sys::pid(),
        });
        let mut threads = Vec::with_capacity(handlers + 1);
        for i in 0..handlers {
            let s = shared.clone();
            threads.push(
                std::thread::Builder::new()
                    .name(format!("acomp-pager-{i}"))
                    .spawn(move || {
                        crate::sys::block_async_signals();
                        s.handle_loop(i)
                    })
                    .map_err(Error::os("pthread_create"))?,
            );
        }
        if shared.reclaim.is_some() {
            let s = shared.clone();
            threads.push(
                std::thread::Builder::new()
                    .name("acomp-pager-reclaim".into())
                    .spawn(move || {
                        crate::sys::block_async_signals();
                        crate::reclaim::run(&s, &|parked| s.serve_parked(parked))
                    })
                    .map_err(Error::os("pthread_create"))?,
            );
        }
        if shared.signal {
            crate::shared::SIGNAL_PAGERS.write().push(shared.clone());
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
            memory_limit: None,
            handler_threads: None,
            handler_spin: SPIN,
            signal_faults: false,
            fault_around: 16,
            page_out_threads: cpus.min(4),
            keep_clean: true,
            direct_reclaim: true,
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

    /// Whether the pager's page-outs move pages (`UFFDIO_MOVE`, Linux 6.8 and later), so
    /// that `hooks::short_moves` has moves to shorten. Not for users: built with the
    /// `test-hooks` feature only.
    #[cfg(feature = "test-hooks")]
    #[doc(hidden)]
    pub fn moves_pages(&self) -> bool {
        let shared = &self.owner.shared;
        shared.mover.is_some() && shared.uffd.moves()
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
