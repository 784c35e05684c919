//! A page-out's batch: the pages of [`Region::page_out`](crate::Region::page_out) and of the
//! reclaimer go to the tier [`BATCH`] at a time: hold the pages; move the resident ones out
//! of the region into a scratch mapping (`UFFDIO_MOVE`), and write-protect the others and
//! decide what each is (clean with its copy, zeros, data, or something to leave alone);
//! read the data out and store it; put back what the tier refused; drop what left and
//! release.

use std::io;
use std::sync::atomic::Ordering;

use acomp_zswap::{PAGE_SIZE, Page, StoreError};

use crate::pages::{BATCH, RegionInner, key};
use crate::shared::Shared;
use crate::state::{CLEAN, OUT, RESIDENT, UNTOUCHED};
use crate::stats::add;
use crate::sys::{Mapping, Pte};

mod moves;

thread_local! {
    /// A page-out's pages read out for the tier: a batch's worth, per thread.
    static STORE_BUF: std::cell::RefCell<Vec<Page>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// What a page-out does with one page.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Action {
    /// Stays as it was.
    Keep,
    /// To be read out and stored.
    Read,
    /// Stored in the tier (or its clean copy kept): leaves memory, now `OUT`.
    Out,
    /// Zeros (or dropped by the program): leaves memory, now `UNTOUCHED`.
    Zero,
    /// Write-protected but staying (unreadable, locked, refused): made writable again, now
    /// `RESIDENT`.
    Unprotect,
}

/// Why a batch stopped short.
#[derive(Debug)]
pub(crate) enum Refused {
    /// The tier refused a page.
    Tier(StoreError),
    /// Write-protecting the batch failed.
    WriteProtect(io::Error),
}

impl std::fmt::Display for Refused {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Refused::Tier(e) => write!(f, "{e}"),
            Refused::WriteProtect(e) => write!(f, "write-protecting the pages failed: {e}"),
        }
    }
}

/// What a batch did: how many pages left memory, and why it stopped short, if it did.
#[derive(Debug)]
pub(crate) struct Done {
    pub(crate) moved: usize,
    pub(crate) refused: Option<Refused>,
}

/// The pages of one batch, held from [`Batch::hold`] until released; released into their
/// old states if the page-out unwinds (a panic in the tier), so that none stays held.
struct Batch<'a> {
    shared: &'a Shared,
    region: &'a RegionInner,
    /// The pages, ascending (neighbours or not).
    pages: [usize; BATCH],
    count: usize,
    old: [u8; BATCH],
    action: [Action; BATCH],
    /// Pages already dropped from memory (moved out by [`Batch::move_out_first`], or by
    /// [`Batch::drop_left`]).
    gone: [bool; BATCH],
    /// Pages moved out into `scratch` (page `i` at its `i`th page), read from there.
    in_scratch: [bool; BATCH],
    /// The mover's scratch mapping, while pages are in it.
    scratch: Option<Mapping>,
    /// The reclaimer's victims.
    reclaim: bool,
    /// Pages released so far, from the first: a panic in a release goes on from the next.
    released: usize,
}

/// Pages out `pages` of `region` (ascending, at most [`BATCH`], neighbours or scattered as
/// the reclaimer's victims are: one tier call, one readability probe and one free of the
/// scratch mapping for them all, the page table and the write-protection a run of
/// neighbours at a time); `reclaim` for the reclaimer's victims (counted, marked with the
/// eviction clock, and put back on its list where they stay).
pub(crate) fn page_out_batch(
    shared: &Shared,
    region: &RegionInner,
    pages: &[usize],
    reclaim: bool,
) -> Done {
    let mut b = Batch::hold(shared, region, pages, reclaim);
    // Being dropped (`SeqCst`: see `States::touched_runs`), or nothing in memory: nothing
    // to page out, and no system call made.
    if region.dying.load(Ordering::SeqCst)
        || !b.old[..b.count]
            .iter()
            .any(|&o| matches!(o, RESIDENT | CLEAN))
    {
        b.release();
        return Done {
            moved: 0,
            refused: None,
        };
    }
    b.move_out_first();
    if let Err(e) = b.protect_and_decide() {
        b.put_back_unstored();
        b.release();
        return Done {
            moved: 0,
            refused: Some(Refused::WriteProtect(e)),
        };
    }
    let refused = b.read_and_store().map(Refused::Tier);
    b.put_back_unstored();
    b.drop_left();
    let moved = b.release();
    Done { moved, refused }
}

impl<'a> Batch<'a> {
    /// Holds `pages` (ascending), waiting for a fault handler holding one.
    fn hold(shared: &'a Shared, region: &'a RegionInner, pages: &[usize], reclaim: bool) -> Self {
        let count = pages.len();
        assert!(count <= BATCH && pages.windows(2).all(|w| w[0] < w[1]));
        let mut old = [UNTOUCHED; BATCH];
        for (o, &p) in old[..count].iter_mut().zip(pages) {
            *o = region.states.acquire_wait(p);
        }
        let mut held = [0; BATCH];
        held[..count].copy_from_slice(pages);
        Batch {
            shared,
            region,
            pages: held,
            count,
            old,
            action: [Action::Keep; BATCH],
            gone: [false; BATCH],
            in_scratch: [false; BATCH],
            scratch: None,
            reclaim,
            released: 0,
        }
    }

    fn offset(&self, i: usize) -> usize {
        self.pages[i] * PAGE_SIZE
    }

    /// The runs of neighbouring pages of the batch's that `keep` takes, as `(i, j)`: pages
    /// `i..j` of the batch, `pages[i] + k` for each `k`; and how many.
    fn runs(&self, keep: impl Fn(usize) -> bool) -> ([(usize, usize); BATCH], usize) {
        let mut runs = [(0, 0); BATCH];
        let (mut n, mut i) = (0, 0);
        while i < self.count {
            if !keep(i) {
                i += 1;
                continue;
            }
            let start = i;
            i += 1;
            while i < self.count && keep(i) && self.pages[i] == self.pages[i - 1] + 1 {
                i += 1;
            }
            runs[n] = (start, i);
            n += 1;
        }
        (runs, n)
    }

    /// Reads the page table of pages `i..j` (a run) into `ptes[i..j]`.
    fn page_table(&self, (i, j): (usize, usize), ptes: &mut [Pte; BATCH]) -> io::Result<()> {
        self.region
            .map
            .page_table(self.offset(i), j - i, &mut ptes[i..j])
    }

    /// Write-protects the batch's pages still mapped (a write from here on faults and waits
    /// for its page), then decides each one's action from its state and its table entry.
    fn protect_and_decide(&mut self) -> io::Result<()> {
        let (shared, region) = (self.shared, self.region);
        let mut ptes = [Pte::None; BATCH];
        let (runs, n) = self.runs(|i| !self.in_scratch[i]);
        if n == 0 {
            return Ok(());
        }
        for &run in &runs[..n] {
            self.page_table(run, &mut ptes)?;
        }
        for &(i, j) in &runs[..n] {
            write_protect(shared, region.addr() + self.offset(i), j - i)?;
        }
        for (i, &pte) in ptes[..self.count].iter().enumerate() {
            if self.in_scratch[i] {
                continue;
            }
            let p = self.pages[i];
            self.action[i] = match (self.old[i], pte) {
                (CLEAN, _) if shared.tier.clear_clean(key(region.id, p)) => {
                    add(&shared.counters.clean_swap_outs, 1);
                    Action::Out
                }
                // Not mapped and in no swap: dropped by the program since it was mapped.
                (RESIDENT | CLEAN, Pte::None) => Action::Zero,
                // Not mapped, and the kernel's swap may hold it: left alone.
                (RESIDENT | CLEAN, Pte::Unknown) => Action::Unprotect,
                // Mapped, or in the kernel's swap (the read brings it back).
                (RESIDENT | CLEAN, Pte::Present | Pte::Swapped) => Action::Read,
                _ => Action::Keep,
            };
        }
        Ok(())
    }

    /// Reads out the pages to store, drops the zero pages among them, and stores the rest
    /// in one batch of the tier's: the tier's error for the first page it refused.
    fn read_and_store(&mut self) -> Option<StoreError> {
        let (shared, region) = (self.shared, self.region);
        let to_read: Vec<usize> = (0..self.count)
            .filter(|&i| self.action[i] == Action::Read)
            .collect();
        if to_read.is_empty() {
            return None;
        }
        // The pages the kernel cannot read (the program's `PROT_NONE`) stay in memory; a
        // page moved out is read from the scratch mapping.
        let offsets: Vec<usize> = to_read.iter().map(|&i| self.offset(i)).collect();
        let mapped: Vec<usize> = (0..to_read.len())
            .filter(|&k| !self.in_scratch[to_read[k]])
            .collect();
        let in_region: Vec<usize> = mapped.iter().map(|&k| offsets[k]).collect();
        let mut done = 0;
        while done < in_region.len() {
            done += region.map.readable_pages(&in_region[done..]);
            if done < in_region.len() {
                self.action[to_read[mapped[done]]] = Action::Unprotect;
                done += 1;
            }
        }
        STORE_BUF.with_borrow_mut(|bufs| {
            if bufs.is_empty() {
                bufs.resize(BATCH, [0; PAGE_SIZE]);
            }
            let mut to_store = Vec::with_capacity(to_read.len());
            for (k, &i) in to_read.iter().enumerate() {
                if self.action[i] != Action::Read {
                    continue;
                }
                let buf = &mut bufs[to_store.len()];
                match (&self.scratch, self.in_scratch[i]) {
                    (Some(scratch), true) => scratch.read_page(i * PAGE_SIZE, buf),
                    _ => {
                        // Under `map_lock`: the program's `MADV_DONTNEED` cannot zap the page
                        // while it is read (its remove event waits for the lock), and one
                        // that came before marked it (a read of it would fault, on the
                        // thread holding it).
                        let _r = shared.map_lock.read_recursive();
                        if region.states.zapped(self.pages[i]) {
                            self.action[i] = Action::Zero;
                            continue;
                        }
                        region.map.read_page(offsets[k], buf);
                    }
                }
                if acomp_zswap::same_filled(buf) == Some(0) {
                    add(&shared.counters.zero_swap_outs, 1);
                    self.action[i] = Action::Zero;
                } else {
                    to_store.push(i);
                }
            }
            if to_store.is_empty() {
                return None;
            }
            let pages: Vec<(u64, &Page)> = to_store
                .iter()
                .zip(bufs.iter())
                .map(|(&i, b)| (key(region.id, self.pages[i]), b))
                .collect();
            let mut refused = None;
            for (&i, r) in to_store.iter().zip(shared.tier.store_batch(&pages)) {
                self.action[i] = match r {
                    Ok(_) => {
                        add(&shared.counters.swap_outs, 1);
                        Action::Out
                    }
                    Err(e) => {
                        refused.get_or_insert(e);
                        Action::Unprotect
                    }
                };
            }
            refused
        })
    }

    /// Releases every page into its new state: how many left memory. A reclaimer's victim
    /// that stays goes back on its list, so that the limit goes on counting it.
    fn release(&mut self) -> usize {
        let (shared, region, reclaim) = (self.shared, self.region, self.reclaim);
        let mut moved = 0;
        for i in self.released..self.count {
            // Counted as released before the release: a panic in it leaves this page to it.
            self.released = i + 1;
            let p = self.pages[i];
            let old = self.old[i];
            let new = match self.action[i] {
                Action::Keep | Action::Read => old,
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
            if let (Some(r), Some(marks)) = (&shared.reclaim, &region.lru) {
                if new != old && matches!(new, OUT | UNTOUCHED) {
                    marks.evicted(p, if reclaim { r.evict_stamp() } else { 0 });
                } else if reclaim && matches!(new, RESIDENT | CLEAN) {
                    r.relist(region, p);
                    add(&shared.counters.reclaim_kept, 1);
                }
            }
            if new != old && matches!(new, OUT | UNTOUCHED) {
                moved += 1;
            }
            shared.finish(region, p, old, new);
        }
        if reclaim {
            add(&shared.counters.reclaimed, moved as u64);
        }
        moved
    }
}

impl Drop for Batch<'_> {
    fn drop(&mut self) {
        if self.released < self.count {
            // Unwinding: a page moved out and not stored goes back first; a page already
            // dropped is released as what it left as (its tier copy, or zeros); every other
            // page as it was, a copy stored for it dropped (still write-protected: a write
            // faults and makes it writable).
            self.put_back_unstored();
            for i in self.released..self.count {
                if !self.gone[i] {
                    if self.action[i] == Action::Out && self.old[i] == RESIDENT {
                        self.shared
                            .tier
                            .invalidate(key(self.region.id, self.pages[i]));
                    }
                    self.action[i] = Action::Keep;
                }
            }
            self.release();
        }
    }
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
