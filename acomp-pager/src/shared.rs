//! What the pager's threads and handles share ([`Shared`], [`Owner`]), and the release of a
//! held page, which wakes the faults deferred on it.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicUsize, Ordering, fence};
use std::thread::JoinHandle;
use std::time::Duration;

use acomp_zswap::{PAGE_SIZE, Zswap};
use parking_lot::{Mutex, RwLock};

use crate::lru::Reclaim;
use crate::pages::{RegionInner, key};
use crate::state::{CLEAN, OUT, UNTOUCHED};
use crate::stats::{Counters, add};
use crate::sys::{EventFd, Uffd};

/// What the handles ([`Pager`](crate::Pager), [`Region`](crate::Region)) share: dropping
/// the last stops the threads.
#[derive(Debug)]
pub(crate) struct Owner {
    pub(crate) shared: Arc<Shared>,
    pub(crate) threads: Mutex<Vec<JoinHandle<()>>>,
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
    /// the pages were marked (the mapping sees the mark and maps zeros).
    pub(crate) map_lock: RwLock<()>,
    /// Faults deferred on a held page: their addresses, woken when a page is released.
    pub(crate) pending: Mutex<Vec<usize>>,
    pub(crate) pending_len: AtomicUsize,
    /// The ranges the pager itself is dropping with `MADV_DONTNEED`, while it does: their remove events
    /// are its own, not the program's.
    pub(crate) own_removes: Mutex<Vec<(usize, usize)>>,
    pub(crate) counters: Counters,
    pub(crate) keep_clean: bool,
    /// [`Builder::handler_spin`](crate::Builder::handler_spin).
    pub(crate) spin: Duration,
    /// [`Builder::page_out_threads`](crate::Builder::page_out_threads).
    pub(crate) page_out_threads: usize,
    pub(crate) next_id: AtomicU32,
    pub(crate) reclaim: Option<Reclaim>,
}

impl Shared {
    pub(crate) fn region_of(&self, addr: usize) -> Option<Arc<RegionInner>> {
        let regions = self.regions.read();
        let i = regions.partition_point(|r| r.addr() <= addr);
        let r = regions.get(i.checked_sub(1)?)?;
        (addr < r.addr() + r.len()).then(|| r.clone())
    }

    /// Releases a held page into `new`, from `old`; a page the program dropped meanwhile
    /// loses its copy in the tier and reads as zeros.
    pub(crate) fn finish(&self, region: &RegionInner, p: usize, old: u8, new: u8) {
        self.counters.moved(old, new);
        self.finish_counted(region, p, new);
    }

    /// [`Shared::finish`] where the counters already moved the page to `new`.
    pub(crate) fn finish_counted(&self, region: &RegionInner, p: usize, new: u8) {
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

    /// `MADV_DONTNEED` over `[offset, offset + len)` of `region` by the pager itself. The
    /// range is registered as the pager's own until every remove event of the call has
    /// been handled: the kernel raises one for each mapping (VMA) the range crosses, and
    /// every event inside the range meanwhile is the pager's. The error is the
    /// kernel's (`EINVAL` for locked pages, `mlock`): some of the range may have been
    /// dropped before the mapping that refused.
    pub(crate) fn drop_pages(
        &self,
        region: &RegionInner,
        offset: usize,
        len: usize,
    ) -> std::io::Result<()> {
        let range = (region.addr() + offset, region.addr() + offset + len);
        self.own_removes.lock().push(range);
        let r = region.map.advise(offset, len, libc::MADV_DONTNEED);
        // The kernel completes each event when a handler reads it, so the call returns
        // once the last was read; the handler reads and marks under `map_lock` held for
        // writing, so once this thread has held it, every event of the call was marked.
        drop(self.map_lock.read());
        let mut own = self.own_removes.lock();
        if let Some(i) = own.iter().position(|&o| o == range) {
            own.swap_remove(i);
        }
        r
    }
}
