//! What the handler threads do with each message: a missing fault, a write-protect fault,
//! a remove event (the program's `MADV_DONTNEED`), a fault that cannot be served.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Instant;

use acomp_zswap::{PAGE_SIZE, Page};

use crate::pages::{RegionInner, key};
use crate::shared::Shared;
use crate::state::{Acquired, CLEAN, OUT, RESIDENT, UNTOUCHED};
use crate::stats::add;
use crate::sys::{
    Msg, UFFD_EVENT_PAGEFAULT, UFFD_EVENT_REMOVE, UFFD_PAGEFAULT_FLAG_WP, UFFD_PAGEFAULT_FLAG_WRITE,
};

/// A page of zeros, the source of a write fault's first page.
static ZEROS: Page = [0; PAGE_SIZE];

impl Shared {
    pub(crate) fn handle_loop(&self, thread: usize) {
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
            let n = {
                let _w = self.map_lock.write();
                let n = match self.uffd.read(&mut msgs) {
                    Ok(n) => n,
                    Err(e) => {
                        eprintln!("acomp-pager: reading the userfaultfd failed: {e}");
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
                let addr = m.arg1 as usize & !(PAGE_SIZE - 1);
                let r = catch_unwind(AssertUnwindSafe(|| self.fault(addr, m.arg0, &mut buf)));
                if r.is_err() {
                    add(&self.counters.panics, 1);
                    self.fail(addr, &"a panic in the pager's fault handler");
                }
                let ns = start.elapsed().as_nanos() as u64;
                let _ = self.counters.service[thread].lock().record(ns.max(1));
            }
            last_busy = Instant::now();
        }
    }

    fn stop_fd(&self) -> i32 {
        self.stop.raw()
    }

    /// Serves one fault at the page-aligned `addr`.
    fn fault(&self, addr: usize, flags: u64, buf: &mut Page) {
        add(&self.counters.faults, 1);
        let Some(region) = self.region_of(addr) else {
            // A region being dropped: the thread retries and finds it unregistered.
            let _ = self.uffd.wake(addr, PAGE_SIZE);
            return;
        };
        let p = (addr - region.addr()) / PAGE_SIZE;
        if flags & UFFD_PAGEFAULT_FLAG_WP != 0 {
            self.write_protect_fault(&region, p, addr);
        } else {
            self.missing_fault(
                &region,
                p,
                addr,
                flags & UFFD_PAGEFAULT_FLAG_WRITE != 0,
                buf,
            );
        }
    }

    fn missing_fault(
        &self,
        region: &Arc<RegionInner>,
        p: usize,
        addr: usize,
        write: bool,
        buf: &mut Page,
    ) {
        if let Some(r) = &self.reclaim {
            if r.must_throttle(self) {
                // Over the limit and the reclaimer behind: the fault waits for it, as a
                // task in the kernel waits in direct reclaim.
                r.throttle(self, addr);
                return;
            }
        }
        let old = match region.states.acquire(p) {
            Acquired::Held(s) => s,
            Acquired::Busy { zapped: true } => {
                // The program dropped the page while another thread held it, and this
                // fault came after the zap: zeros; the holder drops what it had.
                add(&self.counters.zero_faults, 1);
                let _r = self.map_lock.read();
                if self.uffd.zeropage(addr, true).is_err() {
                    let _ = self.uffd.wake(addr, PAGE_SIZE);
                }
                return;
            }
            Acquired::Busy { zapped: false } => return self.defer(region, p, addr),
        };
        if matches!(old, RESIDENT | CLEAN) && region.map.mapped(p * PAGE_SIZE) {
            // A second message for a page another fault has mapped since (two threads
            // reading it at once): nothing to do but wake this one's thread.
            self.finish(region, p, old, old);
            let _ = self.uffd.wake(addr, PAGE_SIZE);
            return;
        }
        let key = key(region.id, p);
        let mut new = RESIDENT;
        let mut from_tier = false;
        if old == OUT {
            // The entry stays in the tier until the page is mapped: a mapping refused for a
            // while (a remove event not read yet) gives the page back as it was.
            let loaded = if write || !self.keep_clean {
                self.tier.load(key, buf)
            } else {
                new = CLEAN;
                self.tier.load_clean(key, buf)
            };
            if let Err(e) = loaded {
                self.finish(region, p, OUT, OUT);
                return self.fail(addr, &e);
            }
            from_tier = true;
        }
        // Counted before the mapping wakes the faulting thread, so that what it reads of
        // the counters after its access has the access in it; undone if the mapping fails.
        let counter = if from_tier {
            &self.counters.swap_ins
        } else {
            &self.counters.zero_faults
        };
        add(counter, 1);
        self.counters.moved(old, new);
        let mapped = {
            let _r = self.map_lock.read();
            // The faulting thread is woken by the mapping itself: it runs on while this one
            // releases the page (a fault on it meanwhile is deferred, and woken then).
            if region.states.zapped(p) {
                // Dropped by the program while this thread loaded it: zeros (`finish`
                // drops the tier's entry).
                self.uffd.zeropage(addr, true)
            } else if from_tier {
                self.uffd.copy(addr, buf, new == CLEAN, true)
            } else if write {
                self.uffd.copy(addr, &ZEROS, false, true)
            } else {
                self.uffd.zeropage(addr, true)
            }
        };
        let woken = mapped.is_ok();
        if let Err(e) = mapped {
            let errno = e.raw_os_error();
            if errno != Some(libc::EEXIST) || !from_tier {
                counter.fetch_sub(1, Ordering::Relaxed);
                self.counters.moved(new, old);
            }
            if errno == Some(libc::EEXIST) && !from_tier {
                // Mapped already: another thread's message for the same page, served
                // meanwhile. Nothing changed (a clean page stays clean, with its copy).
                self.finish(region, p, old, old);
                let _ = self.uffd.wake(addr, PAGE_SIZE);
                return;
            }
            if errno != Some(libc::EEXIST) {
                // Not mapped: the page stays as it was (a clean mark undone first, so that
                // the tier cannot drop the only copy).
                if from_tier && new == CLEAN && !self.tier.clear_clean(key) {
                    let _ = self.tier.store(key, buf);
                }
                self.finish(region, p, old, old);
                if errno == Some(libc::EAGAIN) || region.dying() {
                    // A remove event not read yet (the thread retries once it is), or a
                    // region being dropped (it finds the range unregistered).
                    let _ = self.uffd.wake(addr, PAGE_SIZE);
                    return;
                }
                return self.fail(addr, &e);
            }
        }
        if from_tier && new == RESIDENT {
            // A write fault: the page will change, so the tier's copy goes.
            self.tier.invalidate(key);
        }
        if let Some(r) = &self.reclaim {
            r.note_resident(self, region, p, old == OUT);
        }
        self.finish_counted(region, p, new);
        if !woken {
            // Mapped by another thread first (EEXIST): wake this fault's thread.
            let _ = self.uffd.wake(addr, PAGE_SIZE);
        }
    }

    fn write_protect_fault(&self, region: &Arc<RegionInner>, p: usize, addr: usize) {
        let old = match region.states.acquire(p) {
            Acquired::Held(s) => s,
            Acquired::Busy { .. } => return self.defer(region, p, addr),
        };
        match old {
            CLEAN | RESIDENT => {
                if old == CLEAN {
                    // The first write to a clean page: its copy in the tier is stale from now.
                    self.tier.invalidate(key(region.id, p));
                    add(&self.counters.write_protect_faults, 1);
                }
                self.unprotect(region, p, addr, old);
            }
            // The program's MADV_FREE: its remove event made the page UNTOUCHED (its copy
            // dropped), but the kernel leaves the page mapped, write-protected if it was
            // clean, until it reclaims it, and a write keeps it. Unprotected, or the write
            // would fault forever.
            UNTOUCHED if region.map.mapped(p * PAGE_SIZE) => self.unprotect(region, p, addr, old),
            // Paged out or dropped since the fault was raised: the thread retries.
            _ => {
                self.finish(region, p, old, old);
                let _ = self.uffd.wake(addr, PAGE_SIZE);
            }
        }
    }

    /// Makes the held page `p` (at `addr`, now `old`) writable and resident, the unprotect
    /// waking the writer (the counters moved first, as a missing fault's).
    fn unprotect(&self, region: &RegionInner, p: usize, addr: usize, old: u8) {
        self.counters.moved(old, RESIDENT);
        let unprotected = self.uffd.write_protect(addr, PAGE_SIZE, false, true);
        self.finish_counted(region, p, RESIDENT);
        if let Err(e) = unprotected {
            // EAGAIN: a remove event not read yet; the writer faults again, and is served
            // once it is (nothing to say).
            if !region.dying() && e.raw_os_error() != Some(libc::EAGAIN) {
                eprintln!("acomp-pager: write-unprotecting {addr:#x} failed: {e}");
            }
            let _ = self.uffd.wake(addr, PAGE_SIZE);
        }
    }

    /// A fault that cannot be served: the page is poisoned, and the access gets SIGBUS, as
    /// the kernel fails a swap-in whose read failed.
    fn fail(&self, addr: usize, why: &dyn std::fmt::Display) {
        add(&self.counters.failed_faults, 1);
        eprintln!(
            "acomp-pager: the page at {addr:#x} cannot be served ({why}); the access gets SIGBUS"
        );
        let poisoned = {
            let _r = self.map_lock.read();
            self.uffd.poison(addr)
        };
        if let Err(e) = poisoned {
            eprintln!("acomp-pager: poisoning {addr:#x} failed ({e}); the thread retries");
        }
        let _ = self.uffd.wake(addr, PAGE_SIZE);
    }

    /// The program's `MADV_DONTNEED`/`MADV_REMOVE` over `[start, end)` (or the pager's own,
    /// which is skipped). Called with `map_lock` held for writing.
    fn removed(&self, start: usize, end: usize) {
        // The pager's own drop: the kernel raises an event per mapping (VMA) the range
        // crosses, each inside it.
        if self
            .own_removes
            .lock()
            .iter()
            .any(|&(s, e)| s <= start && end <= e)
        {
            return;
        }
        let regions: Vec<_> = self
            .regions
            .read()
            .iter()
            .filter(|r| r.addr() < end && start < r.addr() + r.len())
            .cloned()
            .collect();
        for r in regions {
            let first = start.saturating_sub(r.addr()) / PAGE_SIZE;
            let last = ((end - r.addr()).min(r.len())).div_ceil(PAGE_SIZE);
            for p in first..last {
                loop {
                    match r.states.acquire(p) {
                        Acquired::Held(s) => {
                            if s == OUT || s == CLEAN {
                                self.tier.invalidate(key(r.id, p));
                            }
                            r.states.release_zapped(p, UNTOUCHED);
                            self.counters.moved(s, UNTOUCHED);
                            break;
                        }
                        Acquired::Busy { .. } => {
                            if r.states.mark_zapped(p) {
                                break;
                            }
                        }
                    }
                }
            }
        }
    }
}
