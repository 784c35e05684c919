//! What the pager's threads and handles share ([`Shared`], [`Owner`]), and the release of a
//! held page, which wakes the faults deferred on it.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering, fence};
use std::thread::JoinHandle;
use std::time::Duration;

use acomp_zswap::{PAGE_SIZE, Page, Zswap};
use parking_lot::{Mutex, RwLock};

use crate::lru::Reclaim;
use crate::pages::{BATCH, RegionInner, key};
use crate::state::{CLEAN, OUT, UNTOUCHED};
use crate::stats::{Counters, add};
use crate::sys::{EventFd, Mover, Uffd};

/// What the handles ([`Pager`](crate::Pager), [`Region`](crate::Region)) share: dropping
/// the last stops the threads.
#[derive(Debug)]
pub(crate) struct Owner {
    pub(crate) shared: Arc<Shared>,
    pub(crate) threads: Mutex<Vec<JoinHandle<()>>>,
}

/// The pagers whose faults are served in the SIGBUS handler
/// ([`Builder::signal_faults`](crate::Builder::signal_faults)), for the handler to find a
/// fault's region: read there (a thread touching a region is never inside the code that
/// writes this list, so it never holds it), written when such a pager is built or dropped.
pub(crate) static SIGNAL_PAGERS: RwLock<Vec<Arc<Shared>>> = RwLock::new(Vec::new());

/// The last regions of signal-mode pagers dropped, as `(start, end)` addresses: a SIGBUS
/// raised on one just before it was made inaccessible, and handled after it left the
/// lists, is retried (into SIGSEGV) rather than passed on as someone else's.
static DROPPED: [(AtomicUsize, AtomicUsize); 16] =
    [const { (AtomicUsize::new(0), AtomicUsize::new(0)) }; 16];
static DROPPED_NEXT: AtomicUsize = AtomicUsize::new(0);

/// Notes a signal-mode region's range as dropped (see [`DROPPED`]).
pub(crate) fn note_dropped(start: usize, end: usize) {
    let i = DROPPED_NEXT.fetch_add(1, Ordering::Relaxed) % DROPPED.len();
    DROPPED[i].0.store(0, Ordering::SeqCst);
    DROPPED[i].1.store(end, Ordering::SeqCst);
    DROPPED[i].0.store(start, Ordering::SeqCst);
}

/// Whether `addr` lies in a signal-mode region dropped lately.
pub(crate) fn recently_dropped(addr: usize) -> bool {
    DROPPED.iter().any(|(s, e)| {
        let start = s.load(Ordering::SeqCst);
        start != 0 && start <= addr && addr < e.load(Ordering::SeqCst)
    })
}

impl Drop for Owner {
    fn drop(&mut self) {
        if self.shared.forked() {
            // A forked child's copy: the threads are not in it, and the eventfd and the
            // userfaultfd are the parent's (a signal would stop the parent's threads). The
            // child leaves everything as it is.
            std::mem::forget(std::mem::take(self.threads.get_mut()));
            return;
        }
        if self.shared.signal {
            SIGNAL_PAGERS
                .write()
                .retain(|s| !Arc::ptr_eq(s, &self.shared));
        }
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
    pub(crate) stop: EventFd,
    pub(crate) stopping: AtomicBool,
    /// Whether a handler thread is spinning for the next fault of a burst (one at most).
    pub(crate) spinning: AtomicBool,
    /// The live regions, by address.
    pub(crate) regions: RwLock<Vec<Arc<RegionInner>>>,
    /// Read: mapping a page into a region (`UFFDIO_COPY`, `UFFDIO_ZEROPAGE`). Write:
    /// reading the userfaultfd and marking the pages of the remove events read. A remove
    /// event lets the program's `madvise` go on to zap the pages as soon as it is read;
    /// the lock orders every mapping either before that read (the zap removes it) or after
    /// the pages were marked (the mapping sees the mark and maps zeros). Taken for reading
    /// with `read_recursive` only: a thread may take it again inside a SIGBUS handler (its
    /// own page-out's read interrupted by a signal handler of the program's that touches a
    /// region), and a plain `read` would queue behind a waiting writer (the thread reading
    /// the events) that waits for the first hold.
    pub(crate) map_lock: RwLock<()>,
    /// Faults deferred on a held page: their addresses, woken when a page is released.
    pub(crate) pending: Mutex<Vec<usize>>,
    pub(crate) pending_len: AtomicUsize,
    /// The ranges the pager itself is dropping with `MADV_DONTNEED`, while it does, and how
    /// often each page was covered by a remove event meanwhile (see [`Shared::drop_runs`]).
    pub(crate) own_removes: Mutex<Vec<OwnRemove>>,
    pub(crate) counters: Counters,
    /// Drops a page-out's pages without a remove event, where the kernel can
    /// (`sys/mover.rs`).
    pub(crate) mover: Option<Mover>,
    pub(crate) keep_clean: bool,
    /// Faults raise SIGBUS in the faulting thread and are served there
    /// ([`Builder::signal_faults`](crate::Builder::signal_faults)).
    pub(crate) signal: bool,
    /// [`Builder::fault_around`](crate::Builder::fault_around).
    pub(crate) fault_around: usize,
    /// Fault-around's pages, decoded side by side for one `UFFDIO_COPY` of the window
    /// (taken with `try_lock`: a fault that finds it taken maps its window page by page).
    pub(crate) around_pages: Mutex<Box<[Page]>>,
    /// [`Builder::handler_spin`](crate::Builder::handler_spin).
    pub(crate) spin: Duration,
    /// [`Builder::page_out_threads`](crate::Builder::page_out_threads).
    pub(crate) page_out_threads: usize,
    pub(crate) reclaim: Option<Reclaim>,
    /// The process that built the pager: in a forked child, every call is refused and every
    /// drop leaves the parent's state alone.
    pub(crate) pid: u32,
}

/// How a run of [`Shared::drop_runs`] left.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Dropped {
    /// Moved out whole: a move covers one mapping and says how far it got, so no page of
    /// the run is left.
    Moved,
    /// Partly or wholly by `MADV_DONTNEED`, which succeeded but skips the rest of a range
    /// where the program split the mapping meanwhile: the page table says what is left.
    Advised,
    /// The kernel refused part of it.
    Refused,
}

/// A range of at most [`BATCH`] pages the pager is dropping itself, and the remove events
/// inside it counted per page.
#[derive(Debug)]
pub(crate) struct OwnRemove {
    start: usize,
    end: usize,
    covered: [u8; BATCH],
}

impl Shared {
    pub(crate) fn region_of(&self, addr: usize) -> Option<Arc<RegionInner>> {
        let regions = self.regions.read();
        let i = regions.partition_point(|r| r.addr() <= addr);
        let r = regions.get(i.checked_sub(1)?)?;
        (addr < r.addr() + r.len()).then(|| r.clone())
    }

    /// True in a forked child of the process that built the pager.
    pub(crate) fn forked(&self) -> bool {
        crate::sys::pid() != self.pid
    }

    /// Releases a held page into `new`, from `old`; a page the program dropped meanwhile
    /// loses its copy in the tier and reads as zeros.
    pub(crate) fn finish(&self, region: &RegionInner, p: usize, old: u8, new: u8) {
        self.counters.moved(old, new);
        self.finish_counted(region, p, new);
    }

    /// [`Shared::finish`] where the counters already moved the page to `new`.
    pub(crate) fn finish_counted(&self, region: &RegionInner, p: usize, new: u8) {
        if region.states.release(p, new) {
            self.wake_deferred();
        } else {
            self.drop_page(region, p, new);
        }
    }

    /// The page `p`, held and counted in state `held`, is gone from the program's view (its
    /// `MADV_DONTNEED`, or the region's drop): its copy in the tier is dropped, it is
    /// released as [`UNTOUCHED`], and the faults deferred on it are woken. The one way a
    /// held page leaves for zeros.
    pub(crate) fn drop_page(&self, region: &RegionInner, p: usize, held: u8) {
        if held == OUT || held == CLEAN {
            self.tier.invalidate(key(region.id, p));
        }
        region.states.release_zapped(p, UNTOUCHED);
        self.counters.moved(held, UNTOUCHED);
        self.wake_deferred();
    }

    /// Wakes the faults deferred on held pages (they fault again), after a release.
    fn wake_deferred(&self) {
        fence(Ordering::SeqCst);
        if self.pending_len.load(Ordering::Relaxed) > 0 {
            self.drain_pending();
        }
    }

    /// A fault on a held page: woken when a page is next released (it then faults again).
    pub(crate) fn defer(&self, region: &RegionInner, p: usize, addr: usize) {
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

    /// Drops the runs `spans` of `region` (each `(offset, len)`, at most [`BATCH`] pages in
    /// all, all held by the caller) from memory: moved side by side into one scratch
    /// mapping and freed there with one call, without a remove event, where the kernel can
    /// ([`Mover`]), by `MADV_DONTNEED` for the rest of each run; how each run left, into
    /// `dropped` (`Refused`: the kernel's `EINVAL` for locked pages, `mlock`, some of the
    /// run perhaps dropped before the mapping that refused).
    ///
    /// A move raises no event; a program's `MADV_DONTNEED` racing it marks the held pages
    /// dropped (its remove event), whether the move took them first or found them gone.
    ///
    /// By `MADV_DONTNEED`, the kernel raises a remove event for each mapping (VMA) the
    /// range crosses, and the events of one call tile the range, each page once; they come
    /// to the handler threads like the program's own. So the range is registered as the
    /// pager's while the call runs, and the handler counts, page by page, the events inside
    /// it ([`Shared::own_remove`]): a page covered twice was also covered by a
    /// `MADV_DONTNEED` of the program's, and is marked dropped ([`crate::state::ZAPPED`]),
    /// to read as zeros, as it would had the program's call come after the page-out.
    pub(crate) fn drop_runs(
        &self,
        region: &RegionInner,
        spans: &[(usize, usize)],
        dropped: &mut [Dropped],
    ) {
        let mut moved = [0; BATCH];
        if let Some(m) = &self.mover {
            m.move_out_runs(region.addr(), spans, &mut moved[..spans.len()]);
        }
        for ((&(offset, len), &done), d) in spans.iter().zip(&moved).zip(dropped.iter_mut()) {
            *d = if done == len {
                Dropped::Moved
            } else if self
                .advise_dontneed(region, offset + done, len - done)
                .is_ok()
            {
                Dropped::Advised
            } else {
                Dropped::Refused
            };
        }
    }

    /// `MADV_DONTNEED` over `[offset, offset + len)` of `region` by the pager itself, its
    /// remove events counted page by page (see [`Shared::drop_runs`]).
    fn advise_dontneed(
        &self,
        region: &RegionInner,
        offset: usize,
        len: usize,
    ) -> std::io::Result<()> {
        let pages = len / PAGE_SIZE;
        let start = region.addr() + offset;
        self.own_removes.lock().push(OwnRemove {
            start,
            end: start + len,
            covered: [0; BATCH],
        });
        let r = region.map.advise(offset, len, libc::MADV_DONTNEED);
        // The kernel completes each event when a handler reads it, so the call returns
        // once the last was read; the handler reads and counts under `map_lock` held for
        // writing, so once this thread has held it, every event of the call was counted.
        drop(self.map_lock.read_recursive());
        let own = {
            let mut own = self.own_removes.lock();
            let i = own
                .iter()
                .position(|o| o.start == start)
                .expect("registered above");
            own.swap_remove(i)
        };
        let first = offset / PAGE_SIZE;
        for (i, &n) in own.covered[..pages].iter().enumerate() {
            if n >= 2 {
                region.states.mark_zapped(first + i);
            }
        }
        r
    }

    /// A remove event over `[start, end)`: true if it lies inside a range the pager is
    /// dropping itself (its pages' counts taken), false if it is the program's alone.
    /// Called with `map_lock` held for writing.
    pub(crate) fn own_remove(&self, start: usize, end: usize) -> bool {
        let mut own = self.own_removes.lock();
        let Some(o) = own.iter_mut().find(|o| o.start <= start && end <= o.end) else {
            return false;
        };
        let first = (start - o.start) / PAGE_SIZE;
        let last = (end - o.start).div_ceil(PAGE_SIZE);
        for c in &mut o.covered[first..last] {
            *c = c.saturating_add(1);
        }
        true
    }
}

/// A page held by a handler thread for one fault, released on every path, a panic's
/// unwinding included, so that no page stays held: a held page would make a region's drop
/// and every page-out of it wait for good. Unwinding releases it into the state it had
/// before the fault (a page out stays out: its entry is still in the tier), never into one
/// that would read as zeros.
pub(crate) struct Held<'a> {
    shared: &'a Shared,
    pub(crate) region: &'a RegionInner,
    p: usize,
    /// The state it is released into if the holder unwinds.
    pub(crate) old: u8,
    /// The state the counters give the page.
    counted: u8,
    released: bool,
}

impl<'a> Held<'a> {
    pub(crate) fn new(shared: &'a Shared, region: &'a RegionInner, p: usize, old: u8) -> Held<'a> {
        Held {
            shared,
            region,
            p,
            old,
            counted: old,
            released: false,
        }
    }

    /// Moves the counters' view of the page to `state`.
    pub(crate) fn count(&mut self, state: u8) {
        self.shared.counters.moved(self.counted, state);
        self.counted = state;
    }

    /// Releases the page into `state`.
    pub(crate) fn release(&mut self, state: u8) {
        self.count(state);
        self.released = true;
        self.shared.finish_counted(self.region, self.p, state);
    }
}

impl Drop for Held<'_> {
    fn drop(&mut self) {
        if !self.released {
            self.release(self.old);
        }
    }
}
