//! What the handler threads do with each message: a missing fault, a write-protect fault
//! (`fault/write_protect.rs`), a remove event (the program's `MADV_DONTNEED`), a fault that
//! cannot be served.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Instant;

use acomp_zswap::{PAGE_SIZE, Page};

use crate::events::{mark_handler_thread, take_backlog};
use crate::pages::{RegionInner, key};
use crate::shared::{Held, Shared};
use crate::state::{Acquired, CLEAN, OUT, RESIDENT};
use crate::stats::add;
use crate::sys::{Msg, UFFD_EVENT_PAGEFAULT, UFFD_PAGEFAULT_FLAG_WP, UFFD_PAGEFAULT_FLAG_WRITE};

mod write_protect;

/// How many times a fault whose mapping the kernel refuses with `EAGAIN` reads the
/// pending events and tries again, before it gives up the page and lets the access fault
/// again.
const EAGAIN_TRIES: u32 = 64;

/// A page of zeros, the source of a write fault's first page.
static ZEROS: Page = [0; PAGE_SIZE];

impl Shared {
    pub(crate) fn handle_loop(&self, thread: usize) {
        mark_handler_thread();
        let mut msgs = [Msg::default(); 16];
        let mut buf: Box<Page> = Box::new([0; PAGE_SIZE]);
        let mut last_busy = Instant::now();
        let mut spin_until: Option<Instant> = None;
        loop {
            if let Some(until) = spin_until {
                // Spinning: the next fault of a burst is read without a wake-up.
                if !crate::sys::readable(self.uffd.raw()) {
                    if Instant::now() < until && !self.stopping.load(Ordering::Relaxed) {
                        // Yielding, not `spin_loop`: the faulting thread, woken by the
                        // last fault's copy, may be waiting for this CPU; a spin that
                        // keeps it waits out the whole spin (BENCHMARKS.md, "The p99").
                        std::thread::yield_now();
                        continue;
                    }
                    spin_until = None;
                    self.spinning.store(false, Ordering::Release);
                }
            }
            // Faults this thread read while it waited on a remove event, first.
            let n = match take_backlog(&mut msgs) {
                0 => self.read_events(&mut msgs),
                n => n,
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
                self.serve(m.arg1 as usize & !(PAGE_SIZE - 1), m.arg0, &mut buf);
                let ns = start.elapsed().as_nanos() as u64;
                let _ = self.counters.service[thread].lock().record(ns.max(1));
            }
            last_busy = Instant::now();
        }
    }

    /// Serves faults parked for the reclaimer, as `(address, flags)`.
    pub(crate) fn serve_parked(&self, parked: &[(usize, u64)]) {
        let mut buf: Page = [0; PAGE_SIZE];
        for &(addr, flags) in parked {
            self.serve(addr, flags, &mut buf);
        }
    }

    /// Serves the fault at page-aligned `addr`, a panic caught: its access gets SIGBUS.
    fn serve(&self, addr: usize, flags: u64, buf: &mut Page) {
        match self.region_of(addr) {
            Some(region) => self.serve_on(&region, addr, flags, buf),
            // A region being dropped: the thread retries and finds it unregistered.
            None => drop(self.uffd.wake(addr, PAGE_SIZE)),
        }
    }

    /// [`Shared::serve`] where the fault's region is known.
    pub(crate) fn serve_on(
        &self,
        region: &Arc<RegionInner>,
        addr: usize,
        flags: u64,
        buf: &mut Page,
    ) {
        let r = catch_unwind(AssertUnwindSafe(|| self.fault(region, addr, flags, buf)));
        if r.is_err() {
            add(&self.counters.panics, 1);
            self.fail(addr, &"a panic in the pager's fault handler");
        }
    }

    fn stop_fd(&self) -> i32 {
        self.stop.raw()
    }

    /// Serves one fault at the page-aligned `addr` of `region`.
    fn fault(&self, region: &Arc<RegionInner>, addr: usize, flags: u64, buf: &mut Page) {
        let p = (addr - region.addr()) / PAGE_SIZE;
        // Counted before the fault's thread is woken, so that what it reads of the counters
        // after its access has the access in it. A parked fault is taken back off before it
        // is parked, and counted when it faults again: `faults` counts each access once, as
        // `pgfault` does.
        add(&self.counters.faults, 1);
        if flags & UFFD_PAGEFAULT_FLAG_WP != 0 {
            self.write_protect_fault(region, p, addr);
        } else {
            let write = flags & UFFD_PAGEFAULT_FLAG_WRITE != 0;
            if self.missing_fault(region, p, addr, write, buf) && self.fault_around > 0 {
                self.fault_around(region, p, buf);
            }
        }
    }

    /// Parks the fault at `addr` on held page `p` until it is released
    /// (`deferred_faults`).
    ///
    /// On the faulting thread (a SIGBUS handler's fault), it waits for the release instead,
    /// and the access is retried.
    fn park_deferred(&self, region: &RegionInner, p: usize, addr: usize) {
        self.counters.faults.fetch_sub(1, Ordering::Relaxed);
        if self.signal {
            add(&self.counters.deferred_faults, 1);
            region.states.wait_released(p);
            return;
        }
        self.defer(region, p, addr);
    }

    /// A fault on a page not mapped: the page from the tier, or zeros; parked for the
    /// reclaimer, or on a page another thread holds.
    ///
    /// Returns whether a page out was mapped (a swap-in: fault-around may follow).
    fn missing_fault(
        &self,
        region: &Arc<RegionInner>,
        p: usize,
        addr: usize,
        write: bool,
        buf: &mut Page,
    ) -> bool {
        if let Some(r) = &self.reclaim {
            if r.direct {
                crate::reclaim::reclaim_direct(self, r);
            }
            if r.must_throttle(self) {
                // Over the limit and the reclaimer behind: the fault waits for it, as a
                // task in the kernel waits in direct reclaim, and is served once it made
                // room (the thread faults once). Counted when served.
                add(&self.counters.throttled_faults, 1);
                if self.signal {
                    // On the faulting thread: it waits here, then goes on to be served.
                    r.wait_for_room(self);
                } else {
                    self.counters.faults.fetch_sub(1, Ordering::Relaxed);
                    let flags = if write { UFFD_PAGEFAULT_FLAG_WRITE } else { 0 };
                    let now = r.throttle(self, addr, flags);
                    self.serve_parked(&now);
                    return false;
                }
            }
        }
        let old = match region.states.acquire(p) {
            Acquired::Held(s) => s,
            Acquired::Busy { zapped: true } => {
                // The program dropped the page while another thread held it, and this
                // fault came after the zap: zeros; the holder drops what it had.
                add(&self.counters.zero_faults, 1);
                let _r = self.map_lock.read_recursive();
                if self.uffd.zeropage(addr, true).is_err() {
                    let _ = self.uffd.wake(addr, PAGE_SIZE);
                }
                return false;
            }
            Acquired::Busy { zapped: false } => {
                self.park_deferred(region, p, addr);
                return false;
            }
        };
        let mut held = Held::new(self, region, p, old);
        if matches!(old, RESIDENT | CLEAN) && region.map.mapped(p * PAGE_SIZE) {
            // A second message for a page another fault has mapped since (two threads
            // reading it at once): nothing to do but wake this one's thread.
            held.release(old);
            let _ = self.uffd.wake(addr, PAGE_SIZE);
            return false;
        }
        let key = key(region.id, p);
        // The page's bytes: from the tier (its entry stays until the page is mapped, so
        // that a mapping refused for a while gives the page back as it was), or zeros.
        let marks = region.lru.as_ref();
        if write {
            // Brought in (or first made) by a write: written in this residency.
            if let Some(m) = marks {
                m.written(p);
            }
        }
        let clean = old == OUT
            && !write
            && self.keep_clean
            && self.room_for_clean()
            && !marks.is_some_and(|m| m.take_writable(p));
        if old == OUT {
            let loaded = if clean {
                self.tier.load_clean(key, buf)
            } else {
                self.tier.load(key, buf)
            };
            if let Err(e) = loaded {
                held.release(OUT);
                self.fail(addr, &e);
                return false;
            }
        }
        let new = if clean { CLEAN } else { RESIDENT };
        // Counted before the mapping wakes the faulting thread, so that what it reads of
        // the counters after its access has the access in it; undone if the mapping fails.
        let counter = if old == OUT {
            &self.counters.swap_ins
        } else {
            &self.counters.zero_faults
        };
        add(counter, 1);
        held.count(new);
        let map = |buf: &Page| {
            let _r = self.map_lock.read_recursive();
            // The faulting thread is woken by the mapping itself: it runs on while this one
            // releases the page (a fault on it meanwhile is deferred, and woken then).
            if region.states.zapped(p) {
                // Dropped by the program while this thread loaded it: zeros (the release
                // drops the tier's entry).
                self.uffd.zeropage(addr, true)
            } else if old == OUT {
                self.uffd.copy(addr, buf, clean, true)
            } else if write {
                self.uffd.copy(addr, &ZEROS, false, true)
            } else {
                self.uffd.zeropage(addr, true)
            }
        };
        let mut mapped = map(buf);
        let mut tries = 0;
        while tries < EAGAIN_TRIES
            && mapped
                .as_ref()
                .is_err_and(|e| e.raw_os_error() == Some(libc::EAGAIN))
        {
            self.absorb_events();
            std::thread::yield_now();
            mapped = map(buf);
            tries += 1;
        }
        match mapped.as_ref().map_err(|e| e.raw_os_error()) {
            Ok(()) => {}
            // Mapped already by another thread's message for the same page, served
            // meanwhile: from the tier, that mapping was this page's bytes too; zeros
            // changed nothing (a clean page stays clean, with its copy).
            Err(Some(libc::EEXIST)) if old == OUT => {
                let _ = self.uffd.wake(addr, PAGE_SIZE);
            }
            Err(errno) => {
                counter.fetch_sub(1, Ordering::Relaxed);
                held.count(old);
                if old == OUT && clean {
                    self.keep_copy(key, buf);
                }
                held.release(old);
                if errno == Some(libc::EEXIST) || errno == Some(libc::EAGAIN) || region.dying() {
                    // Mapped by another thread (zeros), a remove event not read yet (the
                    // thread retries once it is), or a region being dropped (it finds the
                    // range unregistered).
                    let _ = self.uffd.wake(addr, PAGE_SIZE);
                    if self.signal {
                        // The faulting thread itself retries: not a second access, and not
                        // before the handler thread had a chance to read the event.
                        self.counters.faults.fetch_sub(1, Ordering::Relaxed);
                        std::thread::yield_now();
                    }
                } else if let Err(e) = mapped {
                    self.fail(addr, &e);
                }
                return false;
            }
        }
        // Mapped: unwinding from here releases the page as what it now is.
        held.old = new;
        if old == OUT && !clean {
            // A write fault (or no clean copies kept): the tier's copy goes.
            self.tier.invalidate(key);
        }
        if let Some(r) = &self.reclaim {
            r.note_resident(self, region, p, old == OUT);
        }
        held.release(new);
        old == OUT
    }

    /// A fault that cannot be served: the page is poisoned, and the access gets SIGBUS, as
    /// the kernel fails a swap-in whose read failed.
    ///
    /// On the faulting thread, a kernel built without `CONFIG_MEMORY_FAILURE` raises the
    /// retried access's SIGBUS on the poisoned page as `BUS_ADRERR`, as a userfaultfd's
    /// fault is raised, not as `BUS_MCEERR_AR`: the handler cannot tell the two apart, and
    /// the access comes back here. The page is then poisoned already (`EEXIST`): the fault
    /// is not counted or logged again, and [`crate::signal_fault`] tells the handler to pass
    /// the signal on (else the thread would retry for good).
    fn fail(&self, addr: usize, why: &dyn std::fmt::Display) {
        let poisoned = {
            let _r = self.map_lock.read_recursive();
            self.uffd.poison(addr)
        };
        if matches!(&poisoned, Err(e) if self.signal && e.raw_os_error() == Some(libc::EEXIST)) {
            crate::signal_fault::mark_unservable();
            return;
        }
        add(&self.counters.failed_faults, 1);
        match poisoned {
            Err(e) => log::error!(
                "acomp-pager: the page at {addr:#x} cannot be served ({why}), and poisoning it \
                 failed ({e}); the thread retries"
            ),
            Ok(()) => log::error!(
                "acomp-pager: the page at {addr:#x} cannot be served ({why}); the access gets \
                 SIGBUS"
            ),
        }
        let _ = self.uffd.wake(addr, PAGE_SIZE);
    }
}
