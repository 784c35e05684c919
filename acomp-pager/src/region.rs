//! A region: the mapping, its pages' states, and `page_out`.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use acomp_zswap::PAGE_SIZE;

use crate::error::Error;
use crate::pageout::{Refused, page_out_batch};
use crate::pages::{BATCH, PageMarks, RegionInner, key, next_id};
use crate::shared::Owner;
use crate::state::States;
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
    pub(crate) fn new(owner: Arc<Owner>, len: usize) -> Result<Region, Error> {
        if len == 0 || len > MAX_LEN {
            return Err(Error::invalid(format!(
                "a region's length must be 1 to 2^48 bytes, not {len}"
            )));
        }
        let shared = &owner.shared;
        if shared.forked() {
            return Err(Error::Forked);
        }
        let len = len.div_ceil(PAGE_SIZE) * PAGE_SIZE;
        let pages = len / PAGE_SIZE;
        // The per-page arrays first: made in O(1), resident only where pages are touched.
        let states = States::new(pages).map_err(Error::os("mmap"))?;
        let lru = match shared.reclaim {
            Some(_) => Some(PageMarks::new(pages).map_err(Error::os("mmap"))?),
            None => None,
        };
        let map = Mapping::new(len).map_err(Error::os("mmap"))?;
        shared
            .uffd
            .register(map.addr(), len)
            .map_err(Error::os("UFFDIO_REGISTER"))?;
        let id = next_id().ok_or(Error::OutOfRegionIds)?;
        let inner = Arc::new(RegionInner {
            id,
            map,
            len,
            states,
            dying: AtomicBool::new(false),
            lru,
            around: Default::default(),
        });
        {
            let mut regions = shared.regions.write();
            let i = regions.partition_point(|r| r.addr() < inner.addr());
            regions.insert(i, inner.clone());
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
    pub fn write_at(&self, offset: usize, data: &[u8]) -> Result<(), Error> {
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
    pub fn read_at(&self, offset: usize, out: &mut [u8]) -> Result<(), Error> {
        self.check_range(offset, out.len())?;
        self.inner.map.copy_out(offset, out);
        Ok(())
    }

    fn check_range(&self, offset: usize, len: usize) -> Result<(), Error> {
        if offset.checked_add(len).is_none_or(|end| end > self.len()) {
            return Err(Error::invalid(format!(
                "bytes {offset}..{offset}+{len} are not inside the region of {} bytes",
                self.len()
            )));
        }
        Ok(())
    }

    /// The tier's offset of the page holding byte `offset` of the region (page-aligned or
    /// not): where [`Region::page_out`] stores it, for `Zswap::contains` and the like.
    /// A pager's offsets are the top half of the tier's key space, `2^63 | region id << 36
    /// | page index`, its region ids counted for the whole process: pagers sharing a tier
    /// never meet, and a program storing into the tier beside them keeps to offsets below
    /// 2^63.
    ///
    /// # Panics
    ///
    /// If `offset` is not inside the region.
    pub fn tier_offset(&self, offset: usize) -> u64 {
        assert!(
            offset < self.len(),
            "byte {offset} is not inside the region"
        );
        key(self.inner.id, offset / PAGE_SIZE)
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
    /// dropped and nothing stored (a page only read, never written, is the zero page: it
    /// leaves memory and is counted, stored nowhere). Pages already out or never touched are
    /// skipped. A write
    /// racing the call waits for its page and lands after it (the page faults back in).
    ///
    /// Returns how many pages left memory (`pswpout`, clean and zero pages included).
    ///
    /// # Errors
    ///
    /// [`Error::InvalidInput`] for a range that is not page-aligned or not inside the region.
    /// [`Error::TierRefused`] (`io::ErrorKind::StorageFull`) when the tier refuses a page (its budget reached with no device, or
    /// a device error: the message has the tier's reason and how many pages left memory).
    /// Pages go to the tier in batches of 32, taken in order by the calling thread and,
    /// for a range of more than 16 batches, by helper threads
    /// ([`Builder::page_out_threads`](crate::Builder::page_out_threads)): the pages the
    /// tier took are out; the refused page and the batches not taken yet stay in memory as
    /// they were.
    pub fn page_out(&self, offset: usize, len: usize) -> Result<usize, Error> {
        if offset % PAGE_SIZE != 0
            || len % PAGE_SIZE != 0
            || offset
                .checked_add(len)
                .is_none_or(|end| end > self.inner.len)
        {
            return Err(Error::invalid(format!(
                "page_out({offset}, {len}): the range must be page-aligned and inside the \
                 region's {} bytes",
                self.inner.len
            )));
        }
        let shared = &self.owner.shared;
        if shared.forked() {
            return Err(Error::Forked);
        }
        // Only the runs of pages ever touched: a sparse region costs what was touched.
        let mut batches = Vec::new();
        for (a, b) in self
            .inner
            .states
            .touched_runs(offset / PAGE_SIZE, (offset + len) / PAGE_SIZE)
        {
            batches.extend(
                (a..b)
                    .step_by(BATCH)
                    .map(|start| (start, (start + BATCH).min(b))),
            );
        }
        let next = AtomicUsize::new(0);
        let moved = AtomicUsize::new(0);
        let refused: parking_lot::Mutex<Option<Refused>> = parking_lot::Mutex::new(None);
        // Each thread takes the next batch until none is left or the tier refused a page.
        let work = || {
            loop {
                let b = next.fetch_add(1, Ordering::Relaxed);
                if b >= batches.len() || refused.lock().is_some() {
                    return;
                }
                let (start, stop) = batches[b];
                let pages: [usize; BATCH] = std::array::from_fn(|k| start + k);
                let done = page_out_batch(shared, &self.inner, &pages[..stop - start], false);
                moved.fetch_add(done.moved, Ordering::Relaxed);
                if let Some(why) = done.refused {
                    refused.lock().get_or_insert(why);
                    return;
                }
            }
        };
        let helpers = (shared
            .page_out_threads
            .min(batches.len() / MIN_BATCHES_PER_THREAD))
        .max(1)
            - 1;
        std::thread::scope(|s| {
            for _ in 0..helpers {
                s.spawn(work);
            }
            work();
        });
        let paged_out = moved.into_inner();
        match refused.into_inner() {
            Some(Refused::Tier(source)) => Err(Error::TierRefused { paged_out, source }),
            Some(Refused::WriteProtect(source)) => Err(Error::Os {
                call: "UFFDIO_WRITEPROTECT",
                source,
            }),
            None => Ok(paged_out),
        }
    }
}

impl Drop for Region {
    fn drop(&mut self) {
        let shared = &self.owner.shared;
        if shared.forked() {
            // A forked child's copy: the region's memory is not in the child
            // (`MADV_DONTFORK`), and its userfaultfd, states and tier entries are the
            // parent's. Nothing is done.
            return;
        }
        let inner = &self.inner;
        // Dying first: a page-out that holds one of its pages after this reads nothing.
        inner.dying.store(true, Ordering::SeqCst);
        // Each page held and released once, as it is: a page-out (the reclaimer's) that
        // began reading pages before the flag was set has released them, so that no pager
        // thread reads the region's memory once it is inaccessible. Faults are still served.
        // Only the runs ever touched: a page-out holds a page only after its run is marked.
        for (a, b) in inner.states.touched_runs(0, inner.states.len()) {
            for p in a..b {
                let s = inner.states.acquire_wait(p);
                shared.finish(inner, p, s, s);
            }
        }
        // Inaccessible before it is unregistered: unregistered, it would be plain anonymous
        // memory, a paged-out page reading as zeros. From here any access is SIGSEGV, and a
        // thread waiting on a fault, woken by the unregister or by a handler's mapping
        // (which maps the page inaccessible), retries into SIGSEGV.
        if let Err(e) = inner.map.make_inaccessible() {
            log::error!("acomp-pager: making a dropped region inaccessible failed: {e}");
        }
        // Unregistered: its waiting faults are woken, and none reaches the handlers any
        // more; then out of the list, then its pages out of the tier. It is unmapped with
        // the last reference to it (a handler may hold one while its mapping ioctl fails):
        // until then no other mapping can take its addresses.
        let _ = shared.uffd.unregister(inner.addr(), inner.len);
        if shared.signal {
            crate::shared::note_dropped(inner.addr(), inner.addr() + inner.len);
        }
        shared.regions.write().retain(|r| r.id != inner.id);
        for (a, b) in inner.states.touched_runs(0, inner.states.len()) {
            for p in a..b {
                let s = inner.states.acquire_wait(p);
                shared.drop_page(inner, p, s);
            }
        }
        if let Some(r) = &shared.reclaim {
            r.remove_region(inner.id);
        }
    }
}
