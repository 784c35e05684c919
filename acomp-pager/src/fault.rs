//! What the handler threads do with each message: a missing fault, a write-protect fault,
//! a remove event (the program's `MADV_DONTNEED`), a fault that cannot be served.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Instant;

use acomp_zswap::{PAGE_SIZE, Page};

use crate::pages::{RegionInner, key};
use crate::shared::{Held, SIGNAL_PAGERS, Shared, recently_dropped};
use crate::state::{Acquired, BUSY, CLEAN, OUT, RESIDENT, UNTOUCHED};
use crate::stats::add;
use crate::sys::{
    Msg, UFFD_EVENT_PAGEFAULT, UFFD_EVENT_REMOVE, UFFD_PAGEFAULT_FLAG_WP, UFFD_PAGEFAULT_FLAG_WRITE,
};

/// How many times a fault whose mapping the kernel refuses with `EAGAIN` reads the
/// pending events and tries again, before it gives up the page and lets the access fault
/// again.
const EAGAIN_TRIES: u32 = 64;

thread_local! {
    /// A handler thread's fault messages read while it waited on a remove event
    /// ([`Shared::absorb_events`]), served before it reads the next.
    static BACKLOG: std::cell::RefCell<Vec<Msg>> = const { std::cell::RefCell::new(Vec::new()) };
    /// Whether this thread is a handler thread (which serves its `BACKLOG`).
    static HANDLER: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// A page of zeros, the source of a write fault's first page.
static ZEROS: Page = [0; PAGE_SIZE];

/// The SIGBUS handler's work ([`Builder::signal_faults`](crate::Builder::signal_faults)): the
/// fault at `addr`, raised by a region of a signal-mode pager, served on the faulting
/// thread. True if it was one (the access is retried), false to pass the signal on.
///
/// What it may do, in a signal handler: no allocation (the page is decoded into a buffer on
/// this stack; the reclaimer's lists have room reserved ahead); the locks it takes (the
/// pagers' and regions' lists, the tier's entry and index locks, the reclaimer's list) are
/// held only inside the pager's and the tier's own code, which never touches a region's
/// pages while it holds one, so the interrupted thread holds none of them; it waits only
/// for other threads (a page another thread holds, the reclaimer making room).
pub(crate) fn serve_signal(addr: usize, write: bool) -> bool {
    let found = SIGNAL_PAGERS
        .read()
        .iter()
        .find_map(|s| Some((s.clone(), s.region_of(addr)?)));
    let Some((shared, region)) = found else {
        // A region dropped while this access faulted: retried, it is SIGSEGV.
        return recently_dropped(addr);
    };
    if shared.forked() {
        // A forked child (regions are not inherited): whatever is mapped at these
        // addresses now is the child's own, and the userfaultfd is the parent's.
        return false;
    }
    shared.signal_fault(&region, addr & !(PAGE_SIZE - 1), write);
    true
}

impl Shared {
    /// A fault raised as SIGBUS, served on the faulting thread: what kind it is, from the
    /// page's state (a mapped page faults on a write to a write-protected page), then as a
    /// handler thread serves its message.
    fn signal_fault(&self, region: &RegionInner, addr: usize, write: bool) {
        let p = (addr - region.addr()) / PAGE_SIZE;
        let flags = match region.states.peek(p) {
            // A read of a page mapped since it faulted (another thread's fault on it): the
            // access is retried.
            RESIDENT | CLEAN if !write && crate::sys::WRITE_KNOWN => return,
            RESIDENT | CLEAN => UFFD_PAGEFAULT_FLAG_WP | UFFD_PAGEFAULT_FLAG_WRITE,
            // The program's MADV_FREE leaves a clean page mapped and write-protected.
            UNTOUCHED if write && region.map.mapped(p * PAGE_SIZE) => {
                UFFD_PAGEFAULT_FLAG_WP | UFFD_PAGEFAULT_FLAG_WRITE
            }
            _ if write => UFFD_PAGEFAULT_FLAG_WRITE,
            _ => 0,
        };
        let mut buf: Page = [0; PAGE_SIZE];
        self.serve(addr, flags, &mut buf);
    }

    pub(crate) fn handle_loop(&self, thread: usize) {
        HANDLER.set(true);
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
            let backlog = BACKLOG.with_borrow_mut(std::mem::take);
            let n = if backlog.is_empty() {
                self.read_events(&mut msgs)
            } else {
                // Faults read by this thread while it waited on a remove event.
                let n = backlog.len().min(msgs.len());
                msgs[..n].copy_from_slice(&backlog[..n]);
                BACKLOG.with_borrow_mut(|b| b.extend_from_slice(&backlog[n..]));
                n
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
        let r = catch_unwind(AssertUnwindSafe(|| self.fault(addr, flags, buf)));
        if r.is_err() {
            add(&self.counters.panics, 1);
            self.fail(addr, &"a panic in the pager's fault handler");
        }
    }

    /// Whether a page faulted in for reading may keep its copy in the tier: always, but
    /// under a memory limit without room for both (the regions within an eighth of the
    /// resident pages the limit leaves: under pressure, the reclaimer keeps them there, and
    /// a copy kept would take a resident page's room).
    fn room_for_clean(&self) -> bool {
        match &self.reclaim {
            Some(r) if r.caps_memory() => {
                let limit = r.limit();
                self.counters.resident_pages() < limit - limit / 8
            }
            _ => true,
        }
    }

    /// Reads the pending messages into `msgs` and handles their remove events, under
    /// `map_lock` held for writing: how many were read (0 when none is pending). Allocates
    /// nothing (a thread serving its own fault in a SIGBUS handler calls it).
    fn read_events(&self, msgs: &mut [Msg]) -> usize {
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
    fn absorb_events(&self) {
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

    fn stop_fd(&self) -> i32 {
        self.stop.raw()
    }

    /// Serves one fault at the page-aligned `addr`.
    fn fault(&self, addr: usize, flags: u64, buf: &mut Page) {
        let Some(region) = self.region_of(addr) else {
            // A region being dropped: the thread retries and finds it unregistered.
            let _ = self.uffd.wake(addr, PAGE_SIZE);
            return;
        };
        let p = (addr - region.addr()) / PAGE_SIZE;
        // Counted before the fault's thread is woken, so that what it reads of the counters
        // after its access has the access in it. A parked fault is taken back off before it
        // is parked, and counted when it faults again: `faults` counts each access once, as
        // `pgfault` does.
        add(&self.counters.faults, 1);
        if flags & UFFD_PAGEFAULT_FLAG_WP != 0 {
            self.write_protect_fault(&region, p, addr);
        } else {
            let write = flags & UFFD_PAGEFAULT_FLAG_WRITE != 0;
            if self.missing_fault(&region, p, addr, write, buf, false) && self.fault_around > 0 {
                self.fault_around(&region, p, buf);
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
            let mut spins = 0u32;
            while region.states.peek(p) == BUSY {
                spins += 1;
                if spins < 64 {
                    std::hint::spin_loop();
                } else {
                    std::thread::yield_now();
                }
            }
            return;
        }
        self.defer(region, p, addr);
    }

    /// A fault on a page not mapped: the page from the tier, or zeros; parked for the
    /// reclaimer, or on a page another thread holds.
    ///
    /// `around`: not a fault but a page after one, brought in by fault-around
    /// ([`Shared::fault_around`]): only a page out, none held, nothing waited for, no thread
    /// woken. Returns whether a page out was mapped.
    fn missing_fault(
        &self,
        region: &Arc<RegionInner>,
        p: usize,
        addr: usize,
        write: bool,
        buf: &mut Page,
        around: bool,
    ) -> bool {
        if around {
            // Only while no fault would wait for room, and on pages out, not held.
            if self.reclaim.as_ref().is_some_and(|r| r.must_throttle(self))
                || region.states.peek(p) != OUT
            {
                return false;
            }
        } else if let Some(r) = &self.reclaim {
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
            Acquired::Held(OUT) => OUT,
            Acquired::Held(s) if around => {
                self.finish(region, p, s, s);
                return false;
            }
            Acquired::Busy { .. } if around => return false,
            Acquired::Held(s) => s,
            Acquired::Busy { zapped: true } => {
                // The program dropped the page while another thread held it, and this
                // fault came after the zap: zeros; the holder drops what it had.
                add(&self.counters.zero_faults, 1);
                let _r = self.map_lock.read();
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
        let clean = old == OUT && !write && self.keep_clean && self.room_for_clean();
        if old == OUT {
            let loaded = if clean {
                self.tier.load_clean(key, buf)
            } else {
                self.tier.load(key, buf)
            };
            if let Err(e) = loaded {
                held.release(OUT);
                if !around {
                    self.fail(addr, &e);
                }
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
            let _r = self.map_lock.read();
            // The faulting thread is woken by the mapping itself: it runs on while this one
            // releases the page (a fault on it meanwhile is deferred, and woken then).
            if region.states.zapped(p) {
                // Dropped by the program while this thread loaded it: zeros (the release
                // drops the tier's entry).
                self.uffd.zeropage(addr, true)
            } else if old == OUT {
                self.uffd.copy(addr, buf, clean, !around)
            } else if write {
                self.uffd.copy(addr, &ZEROS, false, true)
            } else {
                self.uffd.zeropage(addr, true)
            }
        };
        let mut mapped = map(buf);
        let mut tries = 0;
        while !around
            && tries < EAGAIN_TRIES
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
                if old == OUT && clean && !self.tier.clear_clean(key) {
                    // Not mapped: a clean mark undone first, so that the tier cannot drop
                    // the only copy (or stored again, where it did meanwhile).
                    let _ = self.tier.store(key, buf);
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
                    if !around {
                        self.fail(addr, &e);
                    }
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

    /// Fault-around for a run of swap-ins in order, as the kernel's swap readahead for a
    /// device without `SWP_SYNCHRONOUS_IO`: where page `p`, just swapped in, is the page
    /// after the last run brought in, the window doubles (1, 2, 4 up to
    /// [`Builder::fault_around`](crate::Builder::fault_around) pages)
    /// and the pages after `p` that are out come in with it, until one is not; anything
    /// else closes the window. A sweep takes one fault for each window; random accesses
    /// take none more. Counted in `swap_ins` and [`Stats::swap_readahead`](crate::Stats::swap_readahead).
    fn fault_around(&self, region: &Arc<RegionInner>, p: usize, buf: &mut Page) {
        let window = if region.around.next.load(Ordering::Relaxed) == p {
            (region.around.window.load(Ordering::Relaxed) * 2).clamp(1, self.fault_around)
        } else {
            0
        };
        let window = window.min(region.states.len() - p - 1);
        let n = match self.around_pages.try_lock() {
            // Counted in `swap_readahead` by `map_window`, before the pages are mapped.
            Some(mut pages) if window > 1 => self.map_window(region, p + 1, &mut pages[..window]),
            _ => {
                let mut n = 0;
                while n < window {
                    let q = p + 1 + n;
                    let addr = region.addr() + q * PAGE_SIZE;
                    if !self.missing_fault(region, q, addr, false, buf, true) {
                        break;
                    }
                    n += 1;
                }
                add(&self.counters.swap_readahead, n as u64);
                n
            }
        };
        region.around.window.store(window, Ordering::Relaxed);
        region.around.next.store(p + 1 + n, Ordering::Relaxed);
    }

    /// Fault-around's window in one `UFFDIO_COPY`: pages `first..` that are out, held and
    /// loaded into `pages` side by side until one is not (not out, held by another thread,
    /// dropped by the program, its load failed), then mapped together, each released as
    /// [`Shared::missing_fault`] releases a read's page. How many were mapped.
    fn map_window(&self, region: &Arc<RegionInner>, first: usize, pages: &mut [Page]) -> usize {
        // No more than the limit has room for: fault-around never takes the regions past it.
        let room = self.reclaim.as_ref().map_or(pages.len(), |r| r.room(self));
        let len = room.min(pages.len());
        let pages = &mut pages[..len];
        let clean = self.keep_clean && self.room_for_clean();
        let mut held = 0;
        while held < pages.len() {
            let q = first + held;
            if region.states.peek(q) != OUT {
                break;
            }
            match region.states.acquire(q) {
                Acquired::Held(OUT) => {}
                Acquired::Held(s) => {
                    self.finish(region, q, s, s);
                    break;
                }
                Acquired::Busy { .. } => break,
            }
            let key = key(region.id, q);
            let loaded = if clean {
                self.tier.load_clean(key, &mut pages[held])
            } else {
                self.tier.load(key, &mut pages[held])
            };
            if loaded.is_err() || region.states.zapped(q) {
                // Left for its own fault: as it was (a zapped page's release drops it).
                if loaded.is_ok() && clean {
                    self.keep_copy(key, &pages[held]);
                }
                self.finish(region, q, OUT, OUT);
                break;
            }
            held += 1;
        }
        if held == 0 {
            return 0;
        }
        let new = if clean { CLEAN } else { RESIDENT };
        // Counted before the mapping, as a fault's page is (the program may read the pages
        // as soon as they are mapped), and taken back for those not mapped.
        let count = |pages: usize, from: u8, to: u8, sign: bool| {
            let n = pages as u64;
            for c in [&self.counters.swap_ins, &self.counters.swap_readahead] {
                if sign {
                    add(c, n);
                } else {
                    c.fetch_sub(n, Ordering::Relaxed);
                }
            }
            for _ in 0..pages {
                self.counters.moved(from, to);
            }
        };
        let mapped = {
            let _r = self.map_lock.read();
            // Under the lock that orders mappings against remove events: a page the program
            // dropped since it was loaded ends the run (see `Shared::map_lock`).
            let upto = (0..held)
                .find(|&i| region.states.zapped(first + i))
                .unwrap_or(held);
            count(upto, OUT, new, true);
            let (mapped, _) =
                self.uffd
                    .copy_run(region.addr() + first * PAGE_SIZE, &pages[..upto], clean);
            count(upto - mapped, new, OUT, false);
            mapped
        };
        for (i, page) in pages[..held].iter().enumerate() {
            let q = first + i;
            let key = key(region.id, q);
            if i < mapped {
                if !clean {
                    self.tier.invalidate(key);
                }
                if let Some(r) = &self.reclaim {
                    r.note_resident(self, region, q, true);
                }
                self.finish_counted(region, q, new);
            } else {
                if clean {
                    self.keep_copy(key, page);
                }
                self.finish(region, q, OUT, OUT);
            }
        }
        mapped
    }

    /// A page loaded with `load_clean` that was not mapped after all: its clean mark undone,
    /// so that the tier cannot drop the only copy (or stored again, where it did meanwhile).
    fn keep_copy(&self, key: u64, page: &Page) {
        if !self.tier.clear_clean(key) {
            let _ = self.tier.store(key, page);
        }
    }

    /// A write to a write-protected page: a clean page's first write (its copy dropped) or
    /// a write racing a page-out.
    fn write_protect_fault(&self, region: &Arc<RegionInner>, p: usize, addr: usize) {
        let old = match region.states.acquire(p) {
            Acquired::Held(s) => s,
            Acquired::Busy { .. } => return self.park_deferred(region, p, addr),
        };
        let mut held = Held::new(self, region, p, old);
        match old {
            CLEAN | RESIDENT => {
                if old == CLEAN {
                    // The first write to a clean page: its copy in the tier is stale from now.
                    self.tier.invalidate(key(region.id, p));
                    add(&self.counters.write_protect_faults, 1);
                }
                self.unprotect(&mut held, addr);
            }
            // The program's MADV_FREE: its remove event made the page UNTOUCHED (its copy
            // dropped), but the kernel leaves the page mapped, write-protected if it was
            // clean, until it reclaims it, and a write keeps it. Unprotected, or the write
            // would fault forever.
            UNTOUCHED if region.map.mapped(p * PAGE_SIZE) => self.unprotect(&mut held, addr),
            // Paged out or dropped since the fault was raised: the thread retries.
            _ => {
                held.release(old);
                let _ = self.uffd.wake(addr, PAGE_SIZE);
            }
        }
    }

    /// Makes the held page writable and resident, the unprotect waking the writer (the
    /// counters moved first, as a missing fault's).
    fn unprotect(&self, held: &mut Held<'_>, addr: usize) {
        held.count(RESIDENT);
        let unprotected = self.uffd.write_protect(addr, PAGE_SIZE, false, true);
        held.release(RESIDENT);
        if let Err(e) = unprotected {
            // EAGAIN: a remove event not read yet; the writer faults again, and is served
            // once it is (nothing to say).
            if !held.region.dying() && e.raw_os_error() != Some(libc::EAGAIN) {
                log::warn!("acomp-pager: write-unprotecting {addr:#x} failed: {e}");
            }
            let _ = self.uffd.wake(addr, PAGE_SIZE);
        }
    }

    /// A fault that cannot be served: the page is poisoned, and the access gets SIGBUS, as
    /// the kernel fails a swap-in whose read failed.
    fn fail(&self, addr: usize, why: &dyn std::fmt::Display) {
        add(&self.counters.failed_faults, 1);
        log::error!(
            "acomp-pager: the page at {addr:#x} cannot be served ({why}); the access gets SIGBUS"
        );
        let poisoned = {
            let _r = self.map_lock.read();
            self.uffd.poison(addr)
        };
        if let Err(e) = poisoned {
            log::error!("acomp-pager: poisoning {addr:#x} failed ({e}); the thread retries");
        }
        let _ = self.uffd.wake(addr, PAGE_SIZE);
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
