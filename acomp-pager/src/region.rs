//! A region: the mapping, its pages' states, and `page_out`.

use std::io;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use acomp_zswap::{PAGE_SIZE, Page};

use crate::pager::{Owner, Shared, key};
use crate::state::{CLEAN, OUT, RESIDENT, States, UNTOUCHED};
use crate::stats::add;
use crate::sys::Mapping;

/// Pages handled together by a page-out: one write-protect ioctl, one `mincore`, and one
/// `MADV_DONTNEED` for each run of pages that left.
pub(crate) const BATCH: usize = 32;

/// A page-out uses a thread of its own for each this many batches (up to
/// [`Builder::page_out_threads`](crate::Builder::page_out_threads)).
const MIN_BATCHES_PER_THREAD: usize = 16;

/// The largest region, in bytes: page indices fit the 36 bits of the tier's offsets.
const MAX_LEN: usize = 1 << 48;

/// What the threads know of a region.
#[derive(Debug)]
pub(crate) struct RegionInner {
    pub(crate) id: u32,
    pub(crate) map: Mapping,
    len: usize,
    pub(crate) states: States,
    dying: AtomicBool,
    /// The reclaimer's per-page marks (present with a resident limit).
    pub(crate) lru: Option<crate::reclaim::PageMarks>,
}

impl RegionInner {
    pub(crate) fn addr(&self) -> usize {
        self.map.addr()
    }

    pub(crate) fn len(&self) -> usize {
        self.len
    }

    pub(crate) fn dying(&self) -> bool {
        self.dying.load(Ordering::Acquire)
    }
}

/// Anonymous memory served by a [`Pager`](crate::Pager): the program reads and writes it
/// as plain memory through [`Region::as_ptr`]; [`Region::page_out`] (and the pager's
/// reclaimer, with a resident limit) moves its pages into the tier, and a fault brings each
/// back on its first access. `Send + Sync`. Dropping it unmaps it and drops its pages from
/// the tier.
#[derive(Debug)]
pub struct Region {
    inner: Arc<RegionInner>,
    owner: Arc<Owner>,
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
            lru: shared
                .reclaim
                .as_ref()
                .map(|_| crate::reclaim::PageMarks::new(pages)),
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

    /// The pager serving this region.
    pub fn pager(&self) -> crate::Pager {
        crate::Pager {
            owner: self.owner.clone(),
        }
    }
}

thread_local! {
    /// A page-out's pages read out for the tier: a batch's worth, per thread.
    static STORE_BUF: std::cell::RefCell<Vec<Page>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// What a page-out does with one page.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Action {
    /// Stays as it was.
    Keep,
    /// Stored in the tier (or its clean copy kept): leaves memory, now `OUT`.
    Out,
    /// Zeros (or dropped by the program): leaves memory, now `UNTOUCHED`.
    Zero,
    /// A clean page whose copy the tier dropped and whose store was refused: stays, writable.
    Unprotect,
}

/// Pages out pages `[start, stop)` of `region` (at most [`BATCH`]): how many left memory,
/// and the tier's reason if it refused one.
pub(crate) fn page_out_batch(
    shared: &Shared,
    region: &RegionInner,
    start: usize,
    stop: usize,
    reclaim: bool,
) -> (usize, Option<String>) {
    let count = stop - start;
    debug_assert!(count <= BATCH);
    let mut old = [UNTOUCHED; BATCH];
    for (i, o) in old[..count].iter_mut().enumerate() {
        *o = region.states.acquire_wait(start + i);
    }
    let mut action = [Action::Keep; BATCH];
    let mut refused = None;
    let mut mapped = [0u8; BATCH];
    let wp = region
        .map
        .resident(start * PAGE_SIZE, count, &mut mapped)
        // Write-protect before reading: a write from here on faults and waits for its page.
        .and_then(|()| write_protect(shared, region.addr() + start * PAGE_SIZE, count));
    if let Err(e) = wp {
        for (i, &o) in old[..count].iter().enumerate() {
            shared.finish(region, start + i, o, o);
        }
        return (0, Some(format!("write-protect failed: {e}")));
    }
    // The pages to compress, read out and stored in one batch of the tier's.
    let mut to_store = [0usize; BATCH];
    let mut n_store = 0;
    STORE_BUF.with_borrow_mut(|bufs| {
        if bufs.is_empty() {
            bufs.resize(BATCH, [0; PAGE_SIZE]);
        }
        for i in 0..count {
            let p = start + i;
            action[i] = match old[i] {
                CLEAN if shared.tier.clear_clean(key(region.id, p)) => {
                    add(&shared.counters.clean_swap_outs, 1);
                    Action::Out
                }
                // A page the program dropped since it was mapped.
                RESIDENT if mapped[i] & 1 == 0 => Action::Zero,
                RESIDENT | CLEAN if !region.dying() => {
                    let buf = &mut bufs[n_store];
                    region.map.read_page(p * PAGE_SIZE, buf);
                    if acomp_zswap::same_filled(buf) == Some(0) {
                        add(&shared.counters.zero_swap_outs, 1);
                        Action::Zero
                    } else {
                        to_store[n_store] = i;
                        n_store += 1;
                        Action::Keep
                    }
                }
                RESIDENT | CLEAN => Action::Unprotect,
                _ => Action::Keep,
            };
        }
        if n_store == 0 {
            return;
        }
        let pages: Vec<(u64, &Page)> = to_store[..n_store]
            .iter()
            .zip(bufs.iter())
            .map(|(&i, b)| (key(region.id, start + i), b))
            .collect();
        for (&i, r) in to_store[..n_store]
            .iter()
            .zip(shared.tier.store_batch(&pages))
        {
            action[i] = match r {
                Ok(_) => {
                    add(&shared.counters.swap_outs, 1);
                    Action::Out
                }
                Err(e) => {
                    refused.get_or_insert_with(|| e.to_string());
                    Action::Unprotect
                }
            };
        }
    });
    // Drop the pages that left, a run at a time.
    let mut i = 0;
    while i < count {
        if matches!(action[i], Action::Out | Action::Zero) {
            let j = (i..count)
                .find(|&j| !matches!(action[j], Action::Out | Action::Zero))
                .unwrap_or(count);
            shared.drop_pages(region, (start + i) * PAGE_SIZE, (j - i) * PAGE_SIZE);
            i = j;
        } else {
            i += 1;
        }
    }
    let mut moved = 0;
    for i in 0..count {
        let p = start + i;
        let new = match action[i] {
            Action::Keep => old[i],
            Action::Out => OUT,
            Action::Zero => UNTOUCHED,
            Action::Unprotect => {
                let _ = shared.uffd.write_protect(
                    region.addr() + p * PAGE_SIZE,
                    PAGE_SIZE,
                    false,
                    false,
                );
                RESIDENT
            }
        };
        if new != old[i] && matches!(new, OUT | UNTOUCHED) {
            moved += 1;
            if let (Some(r), Some(marks)) = (&shared.reclaim, &region.lru) {
                marks.evicted(p, if reclaim { r.evict_stamp() } else { 0 });
            }
        }
        shared.finish(region, p, old[i], new);
    }
    if reclaim {
        add(&shared.counters.reclaimed, moved as u64);
    }
    (moved, refused)
}

/// Write-protects `pages` pages from `at`, retrying while the kernel refuses with `EAGAIN`:
/// a remove event not read yet (the program's madvise, or another page-out's
/// `MADV_DONTNEED`, on any region of the pager), which a handler thread reads soon.
fn write_protect(shared: &Shared, at: usize, pages: usize) -> io::Result<()> {
    loop {
        match shared
            .uffd
            .write_protect(at, pages * PAGE_SIZE, true, false)
        {
            Err(e) if e.raw_os_error() == Some(libc::EAGAIN) => std::thread::yield_now(),
            r => return r,
        }
    }
}

impl Drop for Region {
    fn drop(&mut self) {
        let shared = &self.owner.shared;
        let inner = &self.inner;
        inner.dying.store(true, Ordering::Release);
        // Unregistered first: threads waiting on its faults are woken, and no new fault
        // reaches the handlers; then out of the list, then its pages out of the tier.
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
        shared.forget_own_removes(inner.addr(), inner.addr() + inner.len);
        if let Some(r) = &shared.reclaim {
            r.remove_region(inner.id);
        }
    }
}
