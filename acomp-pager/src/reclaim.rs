//! The resident limit: a reclaim thread (the kernel's kswapd) that pages out the coldest
//! resident pages once the regions hold more than the limit.
//!
//! Without accessed bits (this kernel has no `page_idle`, DAMON needs root, and a
//! userfaultfd sees only the first touch of a page), coldness is the order in which pages
//! came into memory, corrected by refaults as the kernel's `mm/workingset.c` does for pages
//! it cannot watch: two FIFO lists, inactive and active. A page that comes in goes to the
//! tail of the inactive list; the reclaimer pages out from its head. A page the reclaimer
//! paged out that faults back in within `limit` evictions (its refault distance: had the
//! limit been a little larger it would have stayed) goes to the active list instead. The
//! active list is kept to at most half the limit by moving its head to the inactive tail.
//! So a page the program keeps touching comes back once and then stays, while a one-pass
//! sweep over cold pages flows through the inactive list alone.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use crate::lru::{Entry, Reclaim};
use crate::pageout::{Refused, page_out_batch};
use crate::pages::{BATCH, RegionInner};
use crate::shared::Shared;
use crate::state::{CLEAN, RESIDENT};
use crate::stats::add;

/// What serves the faults parked for the reclaimer, as `(address, flags)` (the handler
/// threads' work, handed down by the pager so that this layer does not call up into it).
pub(crate) type ServeParked<'a> = dyn Fn(&[(usize, u64)]) + 'a;

/// How long a stalled reclaimer waits before it tries again.
const STALL_RETRY: Duration = Duration::from_millis(50);

// The reclaimer's work on the pager's shared state (the lists alone: `lru.rs`).
impl Reclaim {
    /// Page `p` of `region` came into memory (`refault`: from the tier).
    pub(crate) fn note_resident(
        &self,
        shared: &Shared,
        region: &RegionInner,
        p: usize,
        refault: bool,
    ) {
        let Some(marks) = &region.lru else { return };
        let stamp = marks.stamp[p]
            .fetch_add(1, Ordering::Relaxed)
            .wrapping_add(1);
        let shadow = marks.shadow[p].swap(0, Ordering::Relaxed);
        let distance = self.clock.load(Ordering::Relaxed).wrapping_sub(shadow);
        let activate = refault && shadow != 0 && u64::from(distance) <= self.limit();
        let entry = Entry {
            region: region.id,
            stamp,
            page: p as u64,
        };
        let mut l = self.lists.lock();
        if shared.signal {
            // In a SIGBUS handler: no allocation. The reclaimer keeps room reserved ahead;
            // where it has not yet, this fault waits for it.
            while l.active.len() == l.active.capacity() || l.inactive.len() == l.inactive.capacity()
            {
                drop(l);
                let seen = self.progress.load(Ordering::Acquire);
                self.kick();
                crate::sys::futex_wait(&self.progress, seen, 1000);
                l = self.lists.lock();
            }
        }
        if activate {
            l.active.push_back(entry);
        } else {
            l.inactive.push_back(entry);
        }
        drop(l);
        if activate {
            add(&shared.counters.refaults_activated, 1);
        }
    }

    /// True when resident pages are past the limit and its slack, and there is something
    /// to reclaim: the fault waits. Kicks the reclaimer past the high watermark (a
    /// sixty-fourth under the limit), as the kernel wakes kswapd before a task must reclaim;
    /// where faults reclaim on their own thread ([`reclaim_direct`]), only past the limit
    /// (they could not keep under it).
    pub(crate) fn must_throttle(&self, shared: &Shared) -> bool {
        let resident = shared.counters.resident_pages();
        let limit = self.limit();
        let high = if self.direct {
            limit
        } else {
            limit - limit / 64
        };
        if resident > high {
            self.kick();
        }
        resident >= limit + self.slack() && !self.stalled.load(Ordering::Relaxed) && {
            let l = self.lists.lock();
            !(l.inactive.is_empty() && l.active.is_empty())
        }
    }

    /// Pages that may come into memory before faults must wait: up to the limit and its
    /// slack (what fault-around may bring in at once).
    pub(crate) fn room(&self, shared: &Shared) -> usize {
        (self.limit() + self.slack()).saturating_sub(shared.counters.resident_pages()) as usize
    }

    /// Parks the fault at `addr` (with its message's `flags`) for the reclaimer, which
    /// serves it once it made room. Returns the faults for the caller to serve now where
    /// room was made meanwhile (this one among them), else none.
    pub(crate) fn throttle(&self, shared: &Shared, addr: usize, flags: u64) -> Vec<(usize, u64)> {
        self.throttled.lock().push((addr, flags));
        self.kick();
        if self.must_throttle(shared) {
            Vec::new()
        } else {
            self.take_throttled()
        }
    }

    /// Waits, on the faulting thread (a SIGBUS handler's fault), until the regions are back
    /// under the limit and its slack: the reclaimer's progress, checked each time it pages
    /// out a batch, at most every millisecond.
    pub(crate) fn wait_for_room(&self, shared: &Shared) {
        loop {
            let seen = self.progress.load(Ordering::Acquire);
            if !self.must_throttle(shared) {
                return;
            }
            crate::sys::futex_wait(&self.progress, seen, 1000);
        }
    }

    /// The faults parked so far, to be served.
    pub(crate) fn take_throttled(&self) -> Vec<(usize, u64)> {
        std::mem::take(&mut *self.throttled.lock())
    }

    /// Up to [`BATCH`] victims, coldest first, as `(region, page)`.
    fn victims(&self, shared: &Shared, out: &mut Vec<(u32, usize)>) {
        let regions = shared.regions.read();
        let live = |e: &Entry| {
            regions.iter().find(|r| r.id == e.region).is_some_and(|r| {
                let marks = r.lru.as_ref().expect("a region under a limit has marks");
                let p = e.page as usize;
                marks.stamp[p].load(Ordering::Relaxed) == e.stamp
                    && matches!(r.states.peek(p), RESIDENT | CLEAN)
            })
        };
        let mut l = self.lists.lock();
        while out.len() < BATCH {
            if l.active.len() as u64 > self.limit() / 2 || l.inactive.is_empty() {
                match l.active.pop_front() {
                    Some(e) if live(&e) => l.inactive.push_back(e),
                    Some(_) => continue,
                    None if l.inactive.is_empty() => break,
                    None => {}
                }
            }
            match l.inactive.pop_front() {
                Some(e) if live(&e) => out.push((e.region, e.page as usize)),
                Some(_) => {}
                None => break,
            }
        }
    }
}

/// Pages out `victims` (as `(region, page)`), a batch for each region's: how many left
/// memory, and why the last batch that stopped short did.
fn page_out_victims(shared: &Shared, victims: &mut [(u32, usize)]) -> (usize, Option<String>) {
    victims.sort_unstable();
    let (mut moved, mut why) = (0, None);
    let mut pages = [0; BATCH];
    let mut i = 0;
    while i < victims.len() {
        let id = victims[i].0;
        let mut n = 0;
        while i < victims.len() && victims[i].0 == id && n < BATCH {
            pages[n] = victims[i].1;
            n += 1;
            i += 1;
        }
        let region = shared.regions.read().iter().find(|x| x.id == id).cloned();
        if let Some(region) = region {
            let done = page_out_batch(shared, &region, &pages[..n], true);
            moved += done.moved;
            if let Some(refused) = done.refused {
                why = Some(match refused {
                    Refused::Tier(e) => format!("the tier refused a page: {e}"),
                    e => e.to_string(),
                });
            }
        }
    }
    (moved, why)
}

/// Direct reclaim ([`Builder::direct_reclaim`](crate::Builder::direct_reclaim)): where the
/// regions are at the limit, the fault about to bring a page in first pages out a batch of
/// the coldest on its own thread, as a task in the kernel reclaims before it charges a page
/// past `memory.max` (`mm/memcontrol.c` `try_charge`, `SWAP_CLUSTER_MAX` pages at a time):
/// the page tables change on the CPU that runs the program, so no other CPU is interrupted
/// to flush its TLB (the reclaim thread's page-outs interrupt the program's CPU for each
/// run of pages they move out). How many pages left memory; where none could, the fault
/// goes on to the throttle, which kicks the reclaim thread.
pub(crate) fn reclaim_direct(shared: &Shared, r: &Reclaim) -> usize {
    if shared.counters.resident_pages() < r.limit() || r.stalled.load(Ordering::Relaxed) {
        // Under the limit; or the reclaimer stalled (the tier refuses pages): faults go
        // past the limit until its next try makes room, as they do without direct reclaim,
        // rather than each fault trying a batch that is refused again.
        return 0;
    }
    r.refresh_pool(&shared.tier);
    if shared.counters.resident_pages() < r.limit() {
        return 0;
    }
    let mut victims = Vec::with_capacity(BATCH);
    let moved = {
        let _flight = InFlight::enter(r);
        r.victims(shared, &mut victims);
        page_out_victims(shared, &mut victims).0
    };
    r.refresh_pool(&shared.tier);
    r.reserve();
    if moved > 0 {
        add(&shared.counters.direct_reclaimed, moved as u64);
        r.progress.fetch_add(1, Ordering::Release);
        crate::sys::futex_wake(&r.progress);
    }
    moved
}

/// A direct reclaim's hold of its victims, counted in [`Reclaim::in_flight`] from before it
/// takes them off the lists until their page-out ends (or unwinds).
struct InFlight<'a>(&'a Reclaim);

impl<'a> InFlight<'a> {
    fn enter(r: &'a Reclaim) -> Self {
        r.in_flight.fetch_add(1, Ordering::SeqCst);
        InFlight(r)
    }
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        self.0.in_flight.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Empty lists over the limit, with no direct reclaim in flight, that a round waits out in a
/// row (a millisecond each) before it takes them for a stall: a fault counts its page
/// resident just before it lists it, and may be preempted in between.
const EMPTY_TRIES: u32 = 10;

/// The reclaim thread's body: a round each time it is kicked (or, stalled, every
/// [`STALL_RETRY`]), then the faults parked meanwhile served by `serve`; a panic in a round
/// is caught and counted, and the thread goes on.
pub(crate) fn run(shared: &Shared, serve: &ServeParked<'_>) {
    let r = shared.reclaim.as_ref().expect("started with a limit");
    r.reserve();
    loop {
        {
            let mut w = r.wake.lock();
            if r.stalled.load(Ordering::Relaxed) {
                // Kicks (a fault over the limit makes one) do not hurry a stalled
                // reclaimer: each round would only be refused again.
                let deadline = Instant::now() + STALL_RETRY;
                while !w.stop && Instant::now() < deadline {
                    r.cond.wait_until(&mut w, deadline);
                }
            }
            while !w.work && !w.stop && !r.stalled.load(Ordering::Relaxed) {
                r.cond.wait(&mut w);
            }
            if w.stop {
                drop(w);
                for (addr, _) in r.take_throttled() {
                    let _ = shared.uffd.wake(addr, acomp_zswap::PAGE_SIZE);
                }
                return;
            }
            w.work = false;
        }
        match catch_unwind(AssertUnwindSafe(|| round(shared, r, serve))) {
            Ok(None) => r.stalled.store(false, Ordering::Relaxed),
            Ok(Some(why)) => {
                if !r.stalled.swap(true, Ordering::Relaxed) {
                    add(&shared.counters.reclaim_stalls, 1);
                    log::warn!(
                        "acomp-pager: the reclaimer cannot keep the regions under \
                         their limit ({why}); faults go past it until it can"
                    );
                }
            }
            Err(_) => {
                // Taken as a stall: faults go past the limit rather than wait on a round
                // that may panic again.
                add(&shared.counters.panics, 1);
                r.stalled.store(true, Ordering::Relaxed);
                log::error!("acomp-pager: a panic in the reclaimer was caught; it goes on");
            }
        }
        serve(&r.take_throttled());
    }
}

/// Pages out victims until the regions are under the low watermark (a thirty-second under
/// the limit) or no victim left memory in a pass: then why, if still over the limit.
fn round(shared: &Shared, r: &Reclaim, serve: &ServeParked<'_>) -> Option<String> {
    r.refresh_pool(&shared.tier);
    r.reserve();
    let mut victims = Vec::with_capacity(BATCH);
    let mut why = None;
    let mut empty = 0;
    while shared.counters.resident_pages() > r.limit() - r.limit() / 32 {
        victims.clear();
        let seen = r.progress.load(Ordering::Acquire);
        r.victims(shared, &mut victims);
        if victims.is_empty() {
            // Faults' direct reclaims hold the victims (their pages leave, or come back on
            // the lists), or a fault is listing its page: waited for, not a stall.
            let held = r.in_flight.load(Ordering::SeqCst) > 0;
            if held || empty < EMPTY_TRIES {
                empty = if held { 0 } else { empty + 1 };
                crate::sys::futex_wait(&r.progress, seen, 1000);
                if serve_if_room(shared, r, serve) {
                    return None;
                }
                continue;
            }
            why = Some("no resident page is on its lists".to_string());
            break;
        }
        empty = 0;
        let (moved, refused) = page_out_victims(shared, &mut victims);
        if refused.is_some() {
            why = refused;
        } else if moved > 0 {
            // Progress: a stall of an earlier round is over (faults throttle and reclaim
            // again), not only once a round ends under the limit.
            r.stalled.store(false, Ordering::Relaxed);
        }
        r.refresh_pool(&shared.tier);
        r.reserve();
        r.progress.fetch_add(1, Ordering::Release);
        crate::sys::futex_wake(&r.progress);
        if serve_if_room(shared, r, serve) {
            return None;
        }
        if moved == 0 {
            why.get_or_insert_with(|| {
                "no victim could be paged out (locked, unreadable, or held by another \
                 page-out or the program's madvise)"
                    .into()
            });
            break;
        }
        why = None;
    }
    if shared.counters.resident_pages() > r.limit() {
        why
    } else {
        None
    }
}

/// Serves the faults parked for the reclaimer where the regions have room for them again;
/// whether the reclaimer is told to stop (its round then ends).
fn serve_if_room(shared: &Shared, r: &Reclaim, serve: &ServeParked<'_>) -> bool {
    if !r.must_throttle(shared) {
        serve(&r.take_throttled());
    }
    r.wake.lock().stop
}
