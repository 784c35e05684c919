//! The userfaultfd's events, read by the handler threads and, where a mapping is refused
//! until one is read (`EAGAIN`), by the thread that was refused: a remove event (the
//! program's `MADV_DONTNEED`, or the pager's own) marks its pages and drops their copies.
//! A handler thread keeps the fault messages it read beside a fault in its backlog.

use std::panic::{AssertUnwindSafe, catch_unwind};

use acomp_zswap::PAGE_SIZE;

use crate::shared::Shared;
use crate::state::Acquired;
use crate::stats::add;
use crate::sys::{Msg, UFFD_EVENT_PAGEFAULT, UFFD_EVENT_REMOVE};

thread_local! {
    /// A handler thread's fault messages read while it waited on a remove event
    /// ([`Shared::absorb_events`]), served before it reads the next.
    static BACKLOG: std::cell::RefCell<Vec<Msg>> = const { std::cell::RefCell::new(Vec::new()) };
    /// Whether this thread is a handler thread (which serves its `BACKLOG`).
    static HANDLER: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Marks the calling thread a handler thread: its backlog is served by its loop.
pub(crate) fn mark_handler_thread() {
    HANDLER.set(true);
}

/// Moves up to `msgs.len()` fault messages of this thread's backlog into `msgs`: how many
/// (0 when it is empty).
pub(crate) fn take_backlog(msgs: &mut [Msg]) -> usize {
    BACKLOG.with_borrow_mut(|b| {
        let n = b.len().min(msgs.len());
        for (m, queued) in msgs.iter_mut().zip(b.drain(..n)) {
            *m = queued;
        }
        n
    })
}

impl Shared {
    /// Reads the pending messages into `msgs` and handles their remove events, under
    /// `map_lock` held for writing: how many were read (0 when none is pending). Allocates
    /// nothing (a thread serving its own fault in a SIGBUS handler calls it).
    pub(crate) fn read_events(&self, msgs: &mut [Msg]) -> usize {
        let _w = self.map_lock.write();
        let n = match self.uffd.read(msgs) {
            Ok(n) => n,
            Err(e) => {
                log::error!("acomp-pager: reading the userfaultfd failed: {e}");
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
    }

    /// A mapping refused with `EAGAIN`: a remove event not read yet (the program's
    /// `MADV_DONTNEED`, or the pager's own where a page-out could not move its pages),
    /// which keeps every mapping out until it is read and its `madvise` goes on. Rather
    /// than have the access fault again once a handler thread has read it, a handler
    /// thread reads it, keeping the faults it read beside it for its loop, and so does a
    /// fault served in a SIGBUS handler (that userfaultfd raises no fault messages). Any
    /// other thread (the reclaimer serving a parked fault) leaves the reading to the
    /// handler threads: it has no loop to serve the faults it would read.
    pub(crate) fn absorb_events(&self) {
        if !self.signal && !HANDLER.get() {
            return;
        }
        let mut msgs = [Msg::default(); 16];
        let n = self.read_events(&mut msgs);
        if !self.signal {
            let faults = msgs[..n].iter().filter(|m| m.event == UFFD_EVENT_PAGEFAULT);
            BACKLOG.with_borrow_mut(|b| b.extend(faults));
        }
    }

    /// The program's `MADV_DONTNEED`/`MADV_REMOVE` over `[start, end)` (or the pager's own,
    /// counted by [`Shared::own_remove`]). Called with `map_lock` held for writing.
    fn removed(&self, start: usize, end: usize) {
        if self.own_remove(start, end) {
            return;
        }
        // Under the list's read lock, allocating nothing: a thread serving its own fault in
        // a SIGBUS handler reads events too.
        let regions = self.regions.read();
        for r in regions
            .iter()
            .filter(|r| r.addr() < end && start < r.addr() + r.len())
        {
            let first = start.saturating_sub(r.addr()) / PAGE_SIZE;
            let last = ((end - r.addr()).min(r.len())).div_ceil(PAGE_SIZE);
            r.states.for_each_touched_run(first, last, |a, b| {
                for p in a..b {
                    loop {
                        match r.states.acquire(p) {
                            Acquired::Held(s) => {
                                self.drop_page(r, p, s);
                                break;
                            }
                            // Its holder drops what it had when it releases it.
                            Acquired::Busy { .. } if r.states.mark_zapped(p) => break,
                            Acquired::Busy { .. } => {}
                        }
                    }
                }
            });
        }
    }
}
