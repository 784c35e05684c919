//! The pager: its builder, the handler threads and what they do with each message.

use std::io;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicUsize, Ordering, fence};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use acomp_zswap::{PAGE_SIZE, Page, Zswap};
use parking_lot::{Mutex, RwLock};

use crate::Region;
use crate::reclaim::Reclaim;
use crate::region::RegionInner;
use crate::state::{Acquired, CLEAN, OUT, RESIDENT, UNTOUCHED};
use crate::stats::{Counters, Stats, add};
use crate::sys::{
    EventFd, Msg, UFFD_EVENT_PAGEFAULT, UFFD_EVENT_REMOVE, UFFD_PAGEFAULT_FLAG_WP,
    UFFD_PAGEFAULT_FLAG_WRITE, Uffd,
};

/// [`Builder::handler_spin`]'s default.
const SPIN: Duration = Duration::from_micros(50);

/// A page of zeros, the source of a write fault's first page.
static ZEROS: Page = [0; PAGE_SIZE];

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
    /// pages"). Default: none; pages leave only by [`Region::page_out`].
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
    /// a process that stops faulting costs no CPU.
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
    /// userfaultfd refused or missing: the error says why and what fixes it
    /// (`vm.unprivileged_userfaultfd`, `/dev/userfaultfd`, `CAP_SYS_PTRACE`, a seccomp
    /// profile); a thread that could not be started.
    pub fn build(self) -> io::Result<Pager> {
        let handlers = self.handler_threads;
        let reclaim = match self.resident_limit {
            Some(bytes) => Some(Reclaim::new(bytes / PAGE_SIZE as u64)?),
            None => None,
        };
        let shared = Arc::new(Shared {
            tier: self.tier,
            uffd: Uffd::open()?,
            stop: EventFd::new()?,
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
            next_id: AtomicU32::new(1),
            reclaim,
        });
        let mut threads = Vec::with_capacity(handlers + 1);
        for i in 0..handlers {
            let s = shared.clone();
            threads.push(
                std::thread::Builder::new()
                    .name(format!("acomp-pager-{i}"))
                    .spawn(move || s.handle_loop(i))?,
            );
        }
        if shared.reclaim.is_some() {
            let s = shared.clone();
            threads.push(
                std::thread::Builder::new()
                    .name("acomp-pager-reclaim".into())
                    .spawn(move || crate::reclaim::run(&s))?,
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
    /// A builder over `tier`, where paged-out pages go (shared: the tier may serve other
    /// users too; the pager's offsets are its own, `region id << 36 | page index`).
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
    /// # Errors
    ///
    /// `InvalidInput` for `len == 0` or over 2^48 bytes; `mmap` or the userfaultfd
    /// registration failing (`ENOMEM`: the process's map count or address space).
    pub fn region(&self, len: usize) -> io::Result<Region> {
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

/// What the handles ([`Pager`], [`Region`]) share: dropping the last stops the threads.
#[derive(Debug)]
pub(crate) struct Owner {
    pub(crate) shared: Arc<Shared>,
    threads: Mutex<Vec<JoinHandle<()>>>,
}

impl Drop for Owner {
    fn drop(&mut self) {
        self.shared.stopping.store(true, Ordering::SeqCst);
        self.shared.stop.signal();
        if let Some(r) = &self.shared.reclaim {
            r.stop();
        }
        for t in self.threads.lock().drain(..) {
            let _ = t.join();
        }
    }
}

/// What the threads share.
#[derive(Debug)]
pub(crate) struct Shared {
    pub(crate) tier: Arc<Zswap>,
    pub(crate) uffd: Uffd,
    stop: EventFd,
    pub(crate) stopping: AtomicBool,
    /// Whether a handler thread is spinning for the next fault of a burst (one at most).
    spinning: AtomicBool,
    /// The live regions, by address.
    pub(crate) regions: RwLock<Vec<Arc<RegionInner>>>,
    /// Read: mapping a page into a region (`UFFDIO_COPY`, `UFFDIO_ZEROPAGE`). Write:
    /// reading the userfaultfd and marking the pages of the remove events read. A remove
    /// event lets the program's `madvise` go on to zap the pages as soon as it is read;
    /// the lock orders every mapping either before that read (the zap removes it) or after
    /// the pages were marked (the mapping sees the mark and maps zeros).
    map_lock: RwLock<()>,
    /// Faults deferred on a held page: their addresses, woken when a page is released.
    pending: Mutex<Vec<usize>>,
    pending_len: AtomicUsize,
    /// The ranges the pager itself is dropping with `MADV_DONTNEED`: their remove events
    /// are its own, not the program's.
    own_removes: Mutex<Vec<(usize, usize)>>,
    pub(crate) counters: Counters,
    pub(crate) keep_clean: bool,
    /// [`Builder::handler_spin`].
    spin: Duration,
    /// [`Builder::page_out_threads`].
    pub(crate) page_out_threads: usize,
    pub(crate) next_id: AtomicU32,
    pub(crate) reclaim: Option<Reclaim>,
}

/// The tier's offset of page `p` of region `id`.
pub(crate) fn key(id: u32, p: usize) -> u64 {
    (u64::from(id) << 36) | p as u64
}

impl Shared {
    fn handle_loop(&self, thread: usize) {
        let mut msgs = [Msg::default(); 16];
        let mut buf: Box<Page> = Box::new([0; PAGE_SIZE]);
        let mut last_busy = Instant::now();
        let mut spin_until: Option<Instant> = None;
        loop {
            if let Some(until) = spin_until {
                // Spinning: the next fault of a burst is read without a wake-up.
                if !crate::sys::readable(self.uffd.raw()) {
                    if Instant::now() < until && !self.stopping.load(Ordering::Relaxed) {
                        std::hint::spin_loop();
                        continue;
                    }
                    spin_until = None;
                    self.spinning.store(false, Ordering::Release);
                }
            }
            let n = {
                let _w = self.map_lock.write();
                let n = match self.uffd.read(&mut msgs) {
                    Ok(n) => n,
                    Err(e) => {
                        eprintln!("acomp-pager: reading the userfaultfd failed: {e}");
                        0
                    }
                };
                for m in &msgs[..n] {
                    if m.event == UFFD_EVENT_REMOVE {
                        let r = catch_unwind(AssertUnwindSafe(|| {
                            self.removed(m.arg0 as usize, m.arg1 as usize)
                        }));
                        if r.is_err() {
                            add(&self.counters.panics, 1);
                        }
                    }
                }
                n
            };
            if n == 0 {
                if self.stopping.load(Ordering::SeqCst) {
                    return;
                }
                if spin_until.is_none()
                    && last_busy.elapsed() < self.spin
                    && !self.spinning.swap(true, Ordering::Acquire)
                {
                    spin_until = Some(Instant::now() + self.spin);
                    continue;
                }
                if spin_until.take().is_some() {
                    self.spinning.store(false, Ordering::Release);
                }
                crate::sys::poll2(self.uffd.raw(), self.stop_fd());
                continue;
            }
            if spin_until.take().is_some() {
                self.spinning.store(false, Ordering::Release);
            }
            for m in &msgs[..n] {
                if m.event != UFFD_EVENT_PAGEFAULT {
                    continue;
                }
                let start = Instant::now();
                let addr = m.arg1 as usize & !(PAGE_SIZE - 1);
                let r = catch_unwind(AssertUnwindSafe(|| self.fault(addr, m.arg0, &mut buf)));
                if r.is_err() {
                    add(&self.counters.panics, 1);
                    self.fail(addr, &"a panic in the pager's fault handler");
                }
                let ns = start.elapsed().as_nanos() as u64;
                let _ = self.counters.service[thread].lock().record(ns.max(1));
            }
            last_busy = Instant::now();
        }
    }

    fn stop_fd(&self) -> i32 {
        self.stop.raw()
    }

    pub(crate) fn region_of(&self, addr: usize) -> Option<Arc<RegionInner>> {
        let regions = self.regions.read();
        let i = regions.partition_point(|r| r.addr() <= addr);
        let r = regions.get(i.checked_sub(1)?)?;
        (addr < r.addr() + r.len()).then(|| r.clone())
    }

    /// Serves one fault at the page-aligned `addr`.
    fn fault(&self, addr: usize, flags: u64, buf: &mut Page) {
        add(&self.counters.faults, 1);
        let Some(region) = self.region_of(addr) else {
            // A region being dropped: the thread retries and finds it unregistered.
            let _ = self.uffd.wake(addr, PAGE_SIZE);
            return;
        };
        let p = (addr - region.addr()) / PAGE_SIZE;
        if flags & UFFD_PAGEFAULT_FLAG_WP != 0 {
            self.write_protect_fault(&region, p, addr);
        } else {
            self.missing_fault(
                &region,
                p,
                addr,
                flags & UFFD_PAGEFAULT_FLAG_WRITE != 0,
                buf,
            );
        }
    }

    fn missing_fault(
        &self,
        region: &Arc<RegionInner>,
        p: usize,
        addr: usize,
        write: bool,
        buf: &mut Page,
    ) {
        if let Some(r) = &self.reclaim {
            if r.must_throttle(self) {
                // Over the limit and the reclaimer behind: the fault waits for it, as a
                // task in the kernel waits in direct reclaim.
                r.throttle(self, addr);
                return;
            }
        }
        let old = match region.states.acquire(p) {
            Acquired::Held(s) => s,
            Acquired::Busy { zapped: true } => {
                // The program dropped the page while another thread held it, and this
                // fault came after the zap: zeros; the holder drops what it had.
                add(&self.counters.zero_faults, 1);
                let _r = self.map_lock.read();
                if self.uffd.zeropage(addr, true).is_err() {
                    let _ = self.uffd.wake(addr, PAGE_SIZE);
                }
                return;
            }
            Acquired::Busy { zapped: false } => return self.defer(region, p, addr),
        };
        let key = key(region.id, p);
        let mut new = RESIDENT;
        let mut from_tier = false;
        if old == OUT {
            // The entry stays in the tier until the page is mapped: a mapping refused for a
            // while (a remove event not read yet) gives the page back as it was.
            let loaded = if write || !self.keep_clean {
                self.tier.load(key, buf)
            } else {
                new = CLEAN;
                self.tier.load_clean(key, buf)
            };
            if let Err(e) = loaded {
                self.finish(region, p, OUT, OUT);
                return self.fail(addr, &e);
            }
            from_tier = true;
        }
        // Counted before the mapping wakes the faulting thread, so that what it reads of
        // the counters after its access has the access in it; undone if the mapping fails.
        let counter = if from_tier {
            &self.counters.swap_ins
        } else {
            &self.counters.zero_faults
        };
        add(counter, 1);
        self.counters.moved(old, new);
        let mapped = {
            let _r = self.map_lock.read();
            // The faulting thread is woken by the mapping itself: it runs on while this one
            // releases the page (a fault on it meanwhile is deferred, and woken then).
            if region.states.zapped(p) {
                // Dropped by the program while this thread loaded it: zeros (`finish`
                // drops the tier's entry).
                self.uffd.zeropage(addr, true)
            } else if from_tier {
                self.uffd.copy(addr, buf, new == CLEAN, true)
            } else if write {
                self.uffd.copy(addr, &ZEROS, false, true)
            } else {
                self.uffd.zeropage(addr, true)
            }
        };
        let woken = mapped.is_ok();
        if let Err(e) = mapped {
            let errno = e.raw_os_error();
            if errno != Some(libc::EEXIST) || !from_tier {
                counter.fetch_sub(1, Ordering::Relaxed);
                self.counters.moved(new, old);
            }
            if errno == Some(libc::EEXIST) && !from_tier {
                // Mapped already: another thread's message for the same page, served
                // meanwhile. Nothing changed (a clean page stays clean, with its copy).
                self.finish(region, p, old, old);
                let _ = self.uffd.wake(addr, PAGE_SIZE);
                return;
            }
            if errno != Some(libc::EEXIST) {
                // Not mapped: the page stays as it was (a clean mark undone first, so that
                // the tier cannot drop the only copy).
                if from_tier && new == CLEAN && !self.tier.clear_clean(key) {
                    let _ = self.tier.store(key, buf);
                }
                self.finish(region, p, old, old);
                if errno == Some(libc::EAGAIN) || region.dying() {
                    // A remove event not read yet (the thread retries once it is), or a
                    // region being dropped (it finds the range unregistered).
                    let _ = self.uffd.wake(addr, PAGE_SIZE);
                    return;
                }
                return self.fail(addr, &e);
            }
        }
        if from_tier && new == RESIDENT {
            // A write fault: the page will change, so the tier's copy goes.
            self.tier.invalidate(key);
        }
        if let Some(r) = &self.reclaim {
            r.note_resident(self, region, p, old == OUT);
        }
        self.finish_counted(region, p, new);
        if !woken {
            // Mapped by another thread first (EEXIST): wake this fault's thread.
            let _ = self.uffd.wake(addr, PAGE_SIZE);
        }
    }

    fn write_protect_fault(&self, region: &Arc<RegionInner>, p: usize, addr: usize) {
        let old = match region.states.acquire(p) {
            Acquired::Held(s) => s,
            Acquired::Busy { .. } => return self.defer(region, p, addr),
        };
        match old {
            CLEAN | RESIDENT => {
                if old == CLEAN {
                    // The first write to a clean page: its copy in the tier is stale from now.
                    self.tier.invalidate(key(region.id, p));
                    add(&self.counters.write_protect_faults, 1);
                }
                // Unprotecting wakes the writer (the counters moved first, as a missing
                // fault's).
                self.counters.moved(old, RESIDENT);
                let unprotected = self.uffd.write_protect(addr, PAGE_SIZE, false, true);
                self.finish_counted(region, p, RESIDENT);
                if let Err(e) = unprotected {
                    if !region.dying() {
                        eprintln!("acomp-pager: write-unprotecting {addr:#x} failed: {e}");
                    }
                    let _ = self.uffd.wake(addr, PAGE_SIZE);
                }
            }
            // The program's MADV_FREE: its remove event made the page UNTOUCHED (its copy
            // dropped), but the kernel leaves the page mapped, write-protected if it was
            // clean, until it reclaims it, and a write keeps it. Unprotected, or the write
            // would fault forever.
            UNTOUCHED if region.map.mapped(p * PAGE_SIZE) => {
                self.counters.moved(old, RESIDENT);
                let unprotected = self.uffd.write_protect(addr, PAGE_SIZE, false, true);
                self.finish_counted(region, p, RESIDENT);
                if let Err(e) = unprotected {
                    if !region.dying() {
                        eprintln!("acomp-pager: write-unprotecting {addr:#x} failed: {e}");
                    }
                    let _ = self.uffd.wake(addr, PAGE_SIZE);
                }
            }
            // Paged out or dropped since the fault was raised: the thread retries.
            _ => {
                self.finish(region, p, old, old);
                let _ = self.uffd.wake(addr, PAGE_SIZE);
            }
        }
    }

    /// Releases a held page into `new`, from `old`; a page the program dropped meanwhile
    /// loses its copy in the tier and reads as zeros.
    pub(crate) fn finish(&self, region: &RegionInner, p: usize, old: u8, new: u8) {
        self.counters.moved(old, new);
        self.finish_counted(region, p, new);
    }

    /// [`Shared::finish`] where the counters already moved the page to `new`.
    fn finish_counted(&self, region: &RegionInner, p: usize, new: u8) {
        if !region.states.release(p, new) {
            if new == OUT || new == CLEAN {
                self.tier.invalidate(key(region.id, p));
            }
            region.states.release_zapped(p, UNTOUCHED);
            self.counters.moved(new, UNTOUCHED);
        }
        fence(Ordering::SeqCst);
        if self.pending_len.load(Ordering::Relaxed) > 0 {
            self.drain_pending();
        }
    }

    /// A fault on a held page: woken when a page is next released (it then faults again).
    fn defer(&self, region: &RegionInner, p: usize, addr: usize) {
        {
            let mut q = self.pending.lock();
            q.push(addr);
            self.pending_len.store(q.len(), Ordering::Relaxed);
        }
        add(&self.counters.deferred_faults, 1);
        fence(Ordering::SeqCst);
        // The holder may have released it before the address was queued.
        if region.states.peek(p) != crate::state::BUSY {
            self.drain_pending();
        }
    }

    fn drain_pending(&self) {
        let addrs = {
            let mut q = self.pending.lock();
            self.pending_len.store(0, Ordering::Relaxed);
            std::mem::take(&mut *q)
        };
        for a in addrs {
            let _ = self.uffd.wake(a, PAGE_SIZE);
        }
    }

    /// A fault that cannot be served: the page is poisoned, and the access gets SIGBUS, as
    /// the kernel fails a swap-in whose read failed.
    fn fail(&self, addr: usize, why: &dyn std::fmt::Display) {
        add(&self.counters.failed_faults, 1);
        eprintln!(
            "acomp-pager: the page at {addr:#x} cannot be served ({why}); the access gets SIGBUS"
        );
        let poisoned = {
            let _r = self.map_lock.read();
            self.uffd.poison(addr)
        };
        if let Err(e) = poisoned {
            eprintln!("acomp-pager: poisoning {addr:#x} failed ({e}); the thread retries");
        }
        let _ = self.uffd.wake(addr, PAGE_SIZE);
    }

    /// The program's `MADV_DONTNEED`/`MADV_REMOVE` over `[start, end)` (or the pager's own,
    /// which is skipped). Called with `map_lock` held for writing.
    fn removed(&self, start: usize, end: usize) {
        {
            let mut own = self.own_removes.lock();
            if let Some(i) = own.iter().position(|&r| r == (start, end)) {
                own.swap_remove(i);
                return;
            }
        }
        let regions: Vec<_> = self
            .regions
            .read()
            .iter()
            .filter(|r| r.addr() < end && start < r.addr() + r.len())
            .cloned()
            .collect();
        for r in regions {
            let first = start.saturating_sub(r.addr()) / PAGE_SIZE;
            let last = ((end - r.addr()).min(r.len())).div_ceil(PAGE_SIZE);
            for p in first..last {
                loop {
                    match r.states.acquire(p) {
                        Acquired::Held(s) => {
                            if s == OUT || s == CLEAN {
                                self.tier.invalidate(key(r.id, p));
                            }
                            r.states.release_zapped(p, UNTOUCHED);
                            self.counters.moved(s, UNTOUCHED);
                            break;
                        }
                        Acquired::Busy { .. } => {
                            if r.states.mark_zapped(p) {
                                break;
                            }
                        }
                    }
                }
            }
        }
    }

    /// Forgets the pager's own removes inside a region being dropped.
    pub(crate) fn forget_own_removes(&self, start: usize, end: usize) {
        self.own_removes
            .lock()
            .retain(|&(s, e)| !(start <= s && e <= end));
    }

    /// `MADV_DONTNEED` over `[offset, offset + len)` of `region` by the pager itself.
    pub(crate) fn drop_pages(&self, region: &RegionInner, offset: usize, len: usize) {
        let range = (region.addr() + offset, region.addr() + offset + len);
        self.own_removes.lock().push(range);
        // The reader of the remove event takes the range out of `own_removes` (the event
        // is raised even where no page is mapped); a region being dropped clears what is
        // left of its own.
        if let Err(e) = region.map.advise(offset, len, libc::MADV_DONTNEED) {
            eprintln!("acomp-pager: MADV_DONTNEED failed: {e}");
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
