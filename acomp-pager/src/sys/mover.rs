//! Dropping a region's pages without a remove event. The regions' userfaultfd raises
//! `UFFD_EVENT_REMOVE` for every `MADV_DONTNEED` over them, the pager's own included, and
//! until a handler thread has read it the kernel refuses every mapping into the regions
//! (`EAGAIN`: faults wait) and the `madvise` waits too. So a page-out moves the pages it
//! drops (`UFFDIO_MOVE`, Linux 6.8: page table entries moved, nothing copied) into a
//! scratch mapping registered with a second userfaultfd that asks for no events, and
//! frees them there with `MADV_DONTNEED`, which raises none. Where a move is refused (a
//! page pinned, the program's `mprotect` or `mlock` on part of a region) or the kernel
//! has no `UFFDIO_MOVE`, the caller drops the rest with `MADV_DONTNEED` as before.

use std::io;

use acomp_zswap::PAGE_SIZE;
use parking_lot::Mutex;

use super::{Mapping, Uffd};

/// The second userfaultfd and its scratch mappings, each as long as the longest run moved.
#[derive(Debug)]
pub struct Mover {
    uffd: Uffd,
    /// Scratch mappings not in use, empty.
    free: Mutex<Vec<Mapping>>,
    /// Pages of each scratch mapping.
    pages: usize,
}

impl Mover {
    /// A mover for runs of at most `pages` pages; `None` where the kernel has no
    /// `UFFDIO_MOVE`.
    pub fn new(pages: usize) -> Option<Mover> {
        let uffd = Uffd::open_mover()?;
        let mover = Mover {
            uffd,
            free: Mutex::new(Vec::new()),
            pages,
        };
        // One scratch mapping made now: a kernel that refuses to register one has no mover.
        let first = mover.scratch().ok()?;
        mover.free.lock().push(first);
        Some(mover)
    }

    /// A new scratch mapping, registered as a region is (missing and write-protect faults),
    /// so that its protection matches a region's, which the kernel's move requires.
    fn scratch(&self) -> io::Result<Mapping> {
        let map = Mapping::new(self.pages * PAGE_SIZE)?;
        self.uffd.register(map.addr(), self.pages * PAGE_SIZE)?;
        Ok(map)
    }

    /// A scratch mapping of the mover's run, empty, for a page-out that moves its pages
    /// out before it reads them ([`Mover::move_into`]); handed back with
    /// [`Mover::give_back`].
    pub fn take(&self) -> io::Result<Mapping> {
        let taken = self.free.lock().pop();
        match taken {
            Some(s) => Ok(s),
            None => self.scratch(),
        }
    }

    /// Moves the pages of `[src, src + len)` to `[dst, dst + len)` of a scratch mapping of
    /// [`Mover::take`], stopping at the first page not mapped at `src`: see
    /// [`Uffd::move_pages_exact`].
    pub fn move_into(&self, dst: usize, src: usize, len: usize) -> (usize, Option<io::Error>) {
        self.uffd.move_pages_exact(dst, src, len)
    }

    /// Hands back a mapping of [`Mover::take`], its pages freed (no event: see the module's
    /// docs); one whose pages could not be freed is unmapped instead.
    pub fn give_back(&self, scratch: Mapping) {
        if scratch
            .advise(0, self.pages * PAGE_SIZE, libc::MADV_DONTNEED)
            .is_ok()
        {
            self.free.lock().push(scratch);
        }
    }

    /// Drops the runs of pages at `base + offset` (each `(offset, len)`, page-aligned, at
    /// most the mover's run in all), moved side by side into one scratch mapping and freed
    /// there with one `madvise`: how many bytes from each run's start left the region
    /// (into `done`), and the last error that stopped a run short.
    pub fn move_out_runs(
        &self,
        base: usize,
        runs: &[(usize, usize)],
        done: &mut [usize],
    ) -> Option<io::Error> {
        let total: usize = runs.iter().map(|r| r.1).sum();
        assert!(total <= self.pages * PAGE_SIZE && total % PAGE_SIZE == 0);
        let taken = self.free.lock().pop();
        let scratch = match taken {
            Some(s) => s,
            None => match self.scratch() {
                Ok(s) => s,
                Err(e) => {
                    done.fill(0);
                    return Some(e);
                }
            },
        };
        let mut at = 0;
        let mut last = None;
        for (&(offset, len), d) in runs.iter().zip(done.iter_mut()) {
            let (dst, src) = (scratch.addr() + at, base + offset);
            // Page by page past what stops a move: not `UFFDIO_MOVE_MODE_ALLOW_SRC_HOLES`,
            // with which Linux 6.18's `move_pages` can loop for good in the kernel (an
            // `EAGAIN` left set while it steps over holes, a reviewer's probe: see
            // `Batch::moved_uncounted` in `pageout/moves.rs` for the same `EAGAIN`).
            let (mut moved, mut err, mut again) = (0, None, 0);
            while moved < len {
                let (m, e) = self
                    .uffd
                    .move_pages_exact(dst + moved, src + moved, len - moved);
                moved += m;
                let Some(e) = e else { break };
                match e.raw_os_error() {
                    // A hole (nothing to drop), or the page moved already, uncounted: the
                    // scratch mapping was empty.
                    Some(libc::ENOENT | libc::EEXIST) if moved < len => moved += PAGE_SIZE,
                    // A page changing under the move: once more.
                    Some(libc::EAGAIN) if again < 1 => again += 1,
                    _ => {
                        err = Some(e);
                        break;
                    }
                }
            }
            // At most `len`: each step adds at most what is left.
            debug_assert!(moved <= len);
            *d = moved;
            at += len;
            if err.is_some() {
                last = err;
            }
        }
        // Registered with the mover's userfaultfd, which asks for no events: no remove
        // event, no wait. A failure leaves the mapping out of the pool.
        if at > 0 && scratch.advise(0, at, libc::MADV_DONTNEED).is_err() {
            return last;
        }
        self.free.lock().push(scratch);
        last
    }
}
