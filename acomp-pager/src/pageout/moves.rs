//! How a page-out's pages leave the region and come back: moved out first into the mover's
//! scratch mapping, to be read there ([`Batch::move_out_first`]); put back where the tier
//! refused them ([`Batch::put_back_unstored`]); the others that left moved out and freed
//! once stored ([`Batch::drop_left`]).

use std::io;

use acomp_zswap::PAGE_SIZE;

use super::{Action, Batch};
use crate::pages::{BATCH, key};
use crate::shared::Dropped;
use crate::state::RESIDENT;
use crate::sys::{Mapping, Pte};

impl Batch<'_> {
    /// Moves the resident pages out of the region first, a run at a time, into the mover's
    /// scratch mapping (`UFFDIO_MOVE`: nothing copied), where they are read: a page moved
    /// out needs no write-protection (a write to it faults, and waits for the page) and no
    /// look at the page table (a move stops at the first page not mapped). The pages not
    /// moved (clean ones, a page not mapped, in the kernel's swap, pinned, or in a mapping
    /// the program changed) go the way of [`Batch::protect_and_decide`]. Only where the
    /// regions' userfaultfd can move pages back too ([`Batch::put_back_unstored`]).
    pub(super) fn move_out_first(&mut self) {
        let (shared, region) = (self.shared, self.region);
        let Some(mover) = shared.mover.as_ref().filter(|_| shared.uffd.moves()) else {
            return;
        };
        let (runs, n) = self.runs(|i| self.old[i] == RESIDENT);
        if n == 0 {
            return;
        }
        let Ok(scratch) = mover.take() else { return };
        // Kept in the batch before any page goes into it: an unwinding batch puts them back.
        let base = scratch.addr();
        self.scratch = Some(scratch);
        for &(i, j) in &runs[..n] {
            let (done, err) = mover.move_into(
                base + i * PAGE_SIZE,
                region.addr() + self.offset(i),
                (j - i) * PAGE_SIZE,
            );
            let counted = i + done / PAGE_SIZE;
            let mut moved = [false; BATCH];
            moved[i..counted].fill(true);
            if err.is_some() && counted < j {
                self.moved_uncounted((counted, j), &mut moved);
            }
            for k in (i..j).filter(|&k| moved[k]) {
                self.in_scratch[k] = true;
                self.gone[k] = true;
                self.action[k] = Action::Read;
            }
        }
    }

    /// Which pages of `run` (batch indices) a move into the scratch mapping that stopped
    /// short took all the same. The kernel can move pages and leave them out of the count
    /// it returns: in Linux 6.18's `move_pages` an `EAGAIN` (a page table entry that changed
    /// under the move: the kernel's swap taking the page) stays set while the retry moves
    /// the page, which is then not counted, and the next pass stops at the page it finds
    /// already moved (a new user's trial: 29 pages moved and 28 counted, the 29th then freed
    /// with the scratch mapping as a page the program had dropped). The scratch mapping was
    /// empty, so what its table holds (present, or in the kernel's swap) came from the move.
    /// Where the table cannot be read (no `/proc/self/pagemap`: `Pte::Unknown`), the kernel
    /// is asked page by page by moving the page back ([`Batch::move_back_probe`]).
    fn moved_uncounted(&self, (i, j): (usize, usize), moved: &mut [bool; BATCH]) {
        let Some(scratch) = &self.scratch else { return };
        let mut ptes = [Pte::Unknown; BATCH];
        let _ = scratch.page_table(i * PAGE_SIZE, j - i, &mut ptes[i..j]);
        for k in i..j {
            moved[k] = match ptes[k] {
                Pte::Present | Pte::Swapped => true,
                Pte::None => false,
                Pte::Unknown => !self.move_back_probe(k),
            };
        }
    }

    /// For [`Batch::moved_uncounted`] without a page table: moves page `k` from the scratch
    /// mapping back into the region, and says whether it is in the region now (moved back,
    /// or found there: `EEXIST`; the page is held, so nothing else fills its place) or was
    /// never out (`ENOENT`: no page at its place in the scratch mapping). Retried while the
    /// kernel says `EAGAIN`; where it refuses otherwise (the program's `mprotect` of the
    /// region meanwhile), the page is in the scratch mapping where `mincore` finds it
    /// there, else taken as never out (a read of a scratch page not there would wait for
    /// good).
    fn move_back_probe(&self, k: usize) -> bool {
        let Some(scratch) = &self.scratch else {
            return true;
        };
        loop {
            match self
                .move_back(scratch.addr(), k)
                .map_err(|e| e.raw_os_error())
            {
                Ok(()) | Err(Some(libc::ENOENT)) => return true,
                Err(Some(libc::EAGAIN)) => std::thread::yield_now(),
                Err(_) => return !scratch.mapped(k * PAGE_SIZE),
            }
        }
    }

    /// Moves page `k` from the scratch mapping at `scratch_addr` back to its place in the
    /// region: `Ok` where it is there now, moved back or found there (`EEXIST`: a move back
    /// the kernel did and left uncounted, as in [`Batch::moved_uncounted`]; the page is
    /// held, so nothing else fills its place), else the kernel's error.
    fn move_back(&self, scratch_addr: usize, k: usize) -> io::Result<()> {
        let (dst, src) = (
            self.region.addr() + self.offset(k),
            scratch_addr + k * PAGE_SIZE,
        );
        match self.shared.uffd.move_pages_exact(dst, src, PAGE_SIZE) {
            (PAGE_SIZE, _) => Ok(()),
            (_, Some(e)) if e.raw_os_error() == Some(libc::EEXIST) => Ok(()),
            // A short count comes with an error: the ioctl's success moved the whole page.
            (_, e) => Err(e.unwrap_or_else(|| io::Error::other("a short move without an error"))),
        }
    }

    /// Puts the pages moved out and not stored (the tier refused them, or the page-out
    /// stops short or unwinds) back into the region, as they were: moved back where the
    /// kernel can, copied back where it refuses the move (the program's `mprotect` of the
    /// region meanwhile), retrying while a remove event is pending; then hands the scratch
    /// mapping back, its pages freed. Each under `map_lock` (see `Shared::map_lock`), as a
    /// fault's mapping: a page the program dropped meanwhile is not put back (it reads as
    /// zeros). A page that can go neither back nor into the tier is released paged out with
    /// no copy: its next access fails as a swap read that failed does (SIGBUS).
    pub(super) fn put_back_unstored(&mut self) {
        let (shared, region) = (self.shared, self.region);
        let Some(scratch_addr) = self.scratch.as_ref().map(Mapping::addr) else {
            return;
        };
        for i in 0..self.count {
            if !self.in_scratch[i] || matches!(self.action[i], Action::Out | Action::Zero) {
                continue;
            }
            let p = self.pages[i];
            let dst = region.addr() + p * PAGE_SIZE;
            let back = loop {
                let _r = shared.map_lock.read_recursive();
                if region.states.zapped(p) {
                    // Dropped by the program while it was out: zeros, its page freed with
                    // the scratch mapping's.
                    self.action[i] = Action::Zero;
                    break false;
                }
                let Err(err) = self.move_back(scratch_addr, i) else {
                    break true;
                };
                if self.moved_back_uncounted(i) {
                    break true;
                }
                let eagain = |e: &io::Error| e.raw_os_error() == Some(libc::EAGAIN);
                if eagain(&err) {
                    drop(_r);
                    std::thread::yield_now();
                    continue;
                }
                let mut page = [0; PAGE_SIZE];
                if let Some(scratch) = &self.scratch {
                    scratch.read_page(i * PAGE_SIZE, &mut page);
                }
                match shared.uffd.copy(dst, &page, false, false) {
                    Ok(()) => break true,
                    Err(e) if eagain(&e) => {
                        drop(_r);
                        std::thread::yield_now();
                    }
                    Err(e) => {
                        // Neither moved nor copied back (out of memory): stored once more,
                        // whatever the tier said before, as the last way to keep it (out of
                        // `map_lock`: a zap from here on is the release's to see).
                        drop(_r);
                        let stored = shared.tier.store(key(region.id, p), &page);
                        log::error!(
                            "acomp-pager: a page-out's page at {dst:#x} cannot go back into \
                             its region ({e}); stored again: {stored:?}"
                        );
                        // Paged out either way: from the tier, or (with no copy) its next
                        // access gets SIGBUS.
                        self.action[i] = Action::Out;
                        break false;
                    }
                }
            };
            if back {
                self.in_scratch[i] = false;
                self.gone[i] = false;
                // Back as it was, writable: no write-protection to undo.
                self.action[i] = Action::Keep;
            }
        }
        if let (Some(scratch), Some(m)) = (self.scratch.take(), &shared.mover) {
            m.give_back(scratch);
        }
    }

    /// Whether page `i`, whose move back into the region was not counted, went back all
    /// the same (as in [`Batch::moved_uncounted`]): the scratch mapping no longer holds it
    /// and the region does, present or in the kernel's swap. The page is held, so nothing
    /// but the move fills its place in the region. Where either table cannot be read, no.
    fn moved_back_uncounted(&self, i: usize) -> bool {
        let Some(scratch) = &self.scratch else {
            return false;
        };
        let (mut there, mut here) = ([Pte::Unknown], [Pte::Unknown]);
        scratch.page_table(i * PAGE_SIZE, 1, &mut there).is_ok()
            && there[0] == Pte::None
            && self
                .region
                .map
                .page_table(self.offset(i), 1, &mut here)
                .is_ok()
            && matches!(here[0], Pte::Present | Pte::Swapped)
    }

    /// Drops the pages that left memory, their runs moved side by side into one scratch
    /// mapping and freed there at once ([`crate::shared::Shared::drop_runs`]). Where a run could not be
    /// moved whole and `MADV_DONTNEED` took the rest, its page table is read again (the
    /// kernel refuses locked pages, `mlock`, stopping at the first locked mapping, and may
    /// skip the rest of a range where the program split the mapping meanwhile): the pages
    /// still mapped are dropped one by one, and those refused stay in memory as they
    /// were, their tier copies dropped; `MADV_PAGEOUT` skips locked pages the same way.
    pub(super) fn drop_left(&mut self) {
        let (shared, region) = (self.shared, self.region);
        let leaves =
            |i: usize| !self.in_scratch[i] && matches!(self.action[i], Action::Out | Action::Zero);
        // The runs, as (first, stop) indices and (offset, length) bytes.
        let (runs, n) = self.runs(leaves);
        let mut spans = [(0, 0); BATCH];
        for (span, &(i, j)) in spans.iter_mut().zip(&runs[..n]) {
            *span = (self.offset(i), (j - i) * PAGE_SIZE);
        }
        if n == 0 {
            return;
        }
        let mut dropped = [Dropped::Refused; BATCH];
        shared.drop_runs(region, &spans[..n], &mut dropped[..n]);
        for &(i, j) in &runs[..n] {
            self.gone[i..j].fill(true);
        }
        // A run not moved whole is checked even where the madvise succeeded: a page whose
        // entry is not known to be empty is dropped again on its own.
        for (r, &run) in runs[..n].iter().enumerate() {
            if dropped[r] == Dropped::Moved {
                continue;
            }
            let (i, j) = run;
            let mut ptes = [Pte::Present; BATCH];
            let checked = self.page_table(run, &mut ptes);
            let mapped = |k: usize| checked.is_err() || ptes[k] != Pte::None;
            if dropped[r] == Dropped::Advised && !(i..j).any(mapped) {
                continue;
            }
            for k in (i..j).filter(|&k| mapped(k)) {
                let mut alone = [Dropped::Refused];
                shared.drop_runs(region, &[(self.offset(k), PAGE_SIZE)], &mut alone);
                if alone[0] == Dropped::Refused {
                    if self.action[k] == Action::Out {
                        shared.tier.invalidate(key(region.id, self.pages[k]));
                        // Counted when stored; it did not leave memory.
                        shared
                            .counters
                            .swap_outs
                            .fetch_sub(1, std::sync::atomic::Ordering::Relaxed);
                    }
                    self.action[k] = Action::Unprotect;
                    self.gone[k] = false;
                }
            }
        }
    }
}
