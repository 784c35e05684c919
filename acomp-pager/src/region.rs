//! A region: the mapping, its pages' states, and `page_out`.

use std::io;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use acomp_zswap::PAGE_SIZE;

use crate::pageout::page_out_batch;
use crate::pages::{BATCH, PageMarks, RegionInner, key};
use crate::shared::Owner;
use crate::state::{CLEAN, OUT, States, UNTOUCHED};
use crate::sys::Mapping;

/// A page-out uses a thread of its own for each this many batches (up to
/// [`Builder::page_out_threads`](crate::Builder::page_out_threads)).
const MIN_BATCHES_PER_THREAD: usize = 16;

/// The largest region, in bytes: page indices fit the 36 bits of the tier's offsets.
const MAX_LEN: usize = 1 << 48;

/// Anonymous memory served by a [`Pager`](crate::Pager): the program reads and writes it
/// as plain memory through [`Region::as_ptr`]; [`Region::page_out`] (and the pager's
/// reclaimer, with a resident limit) moves its pages into the tier, and a fault brings each
/// back on its first access. `Send + Sync`. Dropping it makes it inaccessible (an access
/// from then on is SIGSEGV), drops its pages from the tier and unmaps it.
#[derive(Debug)]
pub struct Region {
    inner: Arc<RegionInner>,
    pub(crate) owner: Arc<Owner>,
}

impl Region {
    pub(crate) fn new(owner: Arc<Owner>, len: usize) -> io::Result<Region> {
        if len == 0 || len > MAX_LEN {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("a region's length must be 1 to 2^48 bytes, not {len}"),
            ));
        }
        let len = len.div_ceil(PAGE_SIZE) * PAGE_SIZE;
        let shared = &owner.shared;
        let map = Mapping::new(len)?;
        shared.uffd.register(map.addr(), len)?;
        let pages = len / PAGE_SIZE;
        let inner = Arc::new(RegionInner {
            id: shared.next_id.fetch_add(1, Ordering::Relaxed),
            map,
            len,
            states: States::new(pages),
            dying: AtomicBool::new(false),
            lru: shared.reclaim.as_ref().map(|_| PageMarks::new(pages)),
        });
        {
            let mut regions = shared.regions.write();
            let i = regions.partition_point(|r| r.addr() < inner.addr());
            regions.insert(i, inner.clone());
        }
        if let Some(r) = &shared.reclaim {
            r.add_region(&inner);
        }
        Ok(Region { inner, owner })
    }

    /// The first byte; valid for [`Region::len`] bytes while the region lives.
    pub fn as_ptr(&self) -> *mut u8 {
        self.inner.addr() as *mut u8
    }

    /// Copies `data` into the region at byte `offset`: a write through
    /// [`Region::as_ptr`] without `unsafe`. Pages paged out fault back in first, as for any
    /// access of the program's.
    ///
    /// # Errors
    ///
    /// `InvalidInput` where `[offset, offset + data.len())` is not inside the region;
    /// nothing is copied.
    pub fn write_at(&self, offset: usize, data: &[u8]) -> io::Result<()> {
        self.check_range(offset, data.len())?;
        self.inner.map.copy_in(offset, data);
        Ok(())
    }

    /// Copies the region's bytes at byte `offset` into `out`: a read through
    /// [`Region::as_ptr`] without `unsafe`. Pages paged out fault back in first.
    ///
    /// # Errors
    ///
    /// `InvalidInput` where `[offset, offset + out.len())` is not inside the region;
    /// `out` is left as it was.
    pub fn read_at(&self, offset: usize, out: &mut [u8]) -> io::Result<()> {
        self.check_range(offset, out.len())?;
        self.inner.map.copy_out(offset, out);
        Ok(())
    }

    fn check_range(&self, offset: usize, len: usize) -> io::Result<()> {
        if offset.checked_add(len).is_none_or(|end| end > self.len()) {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!(
                    "bytes {offset}..{offset}+{len} are not inside the region of {} bytes",
                    self.len()
                ),
            ));
        }
        Ok(())
    }

    /// The length in bytes (a multiple of [`PAGE_SIZE`]).
    pub fn len(&self) -> usize {
        self.inner.len
    }

    /// Always false: a region has at least one page.
    pub fn is_empty(&self) -> bool {
        false
    }

    /// Pages out `[offset, offset + len)` (page-aligned): each page in memory is
    /// write-protected, compressed into the tier and dropped from memory; a clean page
    /// whose copy the tier still holds is dropped without compression; a page of zeros is
    /// dropped and nothing stored. Pages already out or never written are skipped. A write
    /// racing the call waits for its page and lands after it (the page faults back in).
    ///
    /// Returns how many pages left memory (`pswpout`, clean and zero pages included).
    ///
    /// # Errors
    ///
    /// `InvalidInput` for a range that is not page-aligned or not inside the region.
    /// `StorageFull` when the tier refuses a page (its budget reached with no device, or
    /// a device error: the message has the tier's reason and how many pages left memory).
    /// Pages go to the tier in batches of 32, taken in order by the calling thread and,
    /// for a range of more than 16 batches, by helper threads
    /// ([`Builder::page_out_threads`](crate::Builder::page_out_threads)): the pages the
    /// tier took are out; the refused page and the batches not taken yet stay in memory as
    /// they were.
    pub fn page_out(&self, offset: usize, len: usize) -> io::Result<usize> {
        if offset % PAGE_SIZE != 0
            || len % PAGE_SIZE != 0
            || offset
                .checked_add(len)
                .is_none_or(|end| end > self.inner.len)
        {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!(
                    "page_out({offset}, {len}): the range must be page-aligned and inside the \
                     region's {} bytes",
                    self.inner.len
                ),
            ));
        }
        let shared = &self.owner.shared;
        let first = offset / PAGE_SIZE;
        let batches = (len / PAGE_SIZE).div_ceil(BATCH);
        let next = AtomicUsize::new(0);
        let moved = AtomicUsize::new(0);
        let refused: parking_lot::Mutex<Option<String>> = parking_lot::Mutex::new(None);
        // Each thread takes the next batch until none is left or the tier refused a page.
        let work = || {
            loop {
                let b = next.fetch_add(1, Ordering::Relaxed);
                if b >= batches || refused.lock().is_some() {
                    return;
                }
                let start = first + b * BATCH;
                let stop = (start + BATCH).min(first + len / PAGE_SIZE);
                let (n, why) = page_out_batch(shared, &self.inner, start, stop, false);
                moved.fetch_add(n, Ordering::Relaxed);
                if let Some(why) = why {
                    refused.lock().get_or_insert(why);
                    return;
                }
            }
        };
        let helpers = (shared
            .page_out_threads
            .min(batches / MIN_BATCHES_PER_THREAD))
        .max(1)
            - 1;
        std::thread::scope(|s| {
            for _ in 0..helpers {
                s.spawn(work);
            }
            work();
        });
        let moved = moved.into_inner();
        match refused.into_inner() {
            Some(why) => Err(io::Error::new(
                io::ErrorKind::StorageFull,
                format!("the tier refused a page ({why}); {moved} pages were paged out"),
            )),
            None => Ok(moved),
        }
    }
}

impl Drop for Region {
    fn drop(&mut self) {
        let shared = &self.owner.shared;
        let inner = &self.inner;
        // Dying first: a page-out that holds one of its pages after this reads nothing.
        inner.dying.store(true, Ordering::Release);
        // Each page held and released once, as it is: a page-out (the reclaimer's) that
        // began reading pages before the flag was set has released them, so that no pager
        // thread reads the region's memory once it is inaccessible. Faults are still served.
        for p in 0..inner.states.len() {
            let s = inner.states.acquire_wait(p);
            shared.finish(inner, p, s, s);
        }
        // Inaccessible before it is unregistered: unregistered, it would be plain anonymous
        // memory, a paged-out page reading as zeros. From here any access is SIGSEGV, and a
        // thread waiting on a fault, woken by the unregister or by a handler's mapping
        // (which maps the page inaccessible), retries into SIGSEGV.
        if let Err(e) = inner.map.make_inaccessible() {
            eprintln!("acomp-pager: making a dropped region inaccessible failed: {e}");
        }
        // Unregistered: its waiting faults are woken, and none reaches the handlers any
        // more; then out of the list, then its pages out of the tier. It is unmapped with
        // the last reference to it (a handler may hold one while its mapping ioctl fails):
        // until then no other mapping can take its addresses.
        let _ = shared.uffd.unregister(inner.addr(), inner.len);
        shared.regions.write().retain(|r| r.id != inner.id);
        for p in 0..inner.states.len() {
            let s = inner.states.acquire_wait(p);
            if s == OUT || s == CLEAN {
                shared.tier.invalidate(key(inner.id, p));
            }
            inner.states.release_zapped(p, UNTOUCHED);
            shared.counters.moved(s, UNTOUCHED);
        }
        if let Some(r) = &shared.reclaim {
            r.remove_region(inner.id);
        }
    }
}
