//! The reclaimer's state, held in the pager's `Shared`: its lists, its eviction clock and
//! its wake-ups. The policy and the thread: `reclaim.rs`.
//!
//! Lists hold `(region, page, stamp)`; a page's stamp changes whenever it leaves memory, so
//! entries of pages that left are skipped when they reach a head, with no unlinking.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicUsize, Ordering};

use parking_lot::{Condvar, Mutex};

use crate::error::Error;
use crate::pages::{BATCH, RegionInner};

/// The slack of a limit of `pages` resident pages: `pages / part`, at least 128 pages.
fn slack_of(pages: u64, part: u64) -> u64 {
    (pages / part).max(BATCH as u64 * 4)
}

/// A resident limit's slack: a sixteenth of it.
const RESIDENT_SLACK: u64 = 16;
/// A memory limit's slack, taken out of the limit (faults reach the limit, no more): a
/// sixty-fourth of what it leaves the regions, so that little of it goes unused.
const MEMORY_SLACK: u64 = 64;

/// The lowest limit, in pages: two batches.
const MIN_PAGES: u64 = 2 * BATCH as u64;

#[derive(Debug, Clone, Copy)]
pub(crate) struct Entry {
    pub(crate) region: u32,
    pub(crate) stamp: u32,
    pub(crate) page: u64,
}

#[derive(Debug, Default)]
pub(crate) struct Lists {
    pub(crate) inactive: VecDeque<Entry>,
    pub(crate) active: VecDeque<Entry>,
}

#[derive(Debug, Default)]
pub(crate) struct Wake {
    pub(crate) work: bool,
    pub(crate) stop: bool,
}

/// The reclaimer's state.
#[derive(Debug)]
pub(crate) struct Reclaim {
    /// [`Builder::resident_limit`](crate::Builder::resident_limit) in pages (`u64::MAX`
    /// without one).
    resident_cap: u64,
    /// [`Builder::memory_limit`](crate::Builder::memory_limit) in pages: resident pages and
    /// the tier's pool together.
    memory_cap: Option<u64>,
    /// The tier's pool in pages, as the reclaimer last read it (with a memory limit).
    pub(crate) pool_pages: AtomicU64,
    pub(crate) lists: Mutex<Lists>,
    pub(crate) clock: AtomicU32,
    pub(crate) wake: Mutex<Wake>,
    pub(crate) cond: Condvar,
    /// Faults parked for the reclaimer, as `(address, flags)`: served once it made room
    /// (not woken to fault again: one fault per access).
    pub(crate) throttled: Mutex<Vec<(usize, u64)>>,
    /// Set when the reclaimer found nothing it could page out while over the limit (the
    /// tier refuses, every victim is locked): faults then go past the limit rather than
    /// wait for it, and the reclaimer retries after a pause. Cleared by its next batch paged
    /// out with nothing refused, or a round that ends under the limit.
    pub(crate) stalled: AtomicBool,
    /// Bumped after each batch the reclaimer pages out: faults waiting for room in a SIGBUS
    /// handler sleep on it (a futex).
    pub(crate) progress: AtomicU32,
    /// Direct reclaims ([`Builder::direct_reclaim`]) between taking their victims off the
    /// lists and paging them out: while any is, lists emptied by them are no stall.
    ///
    /// [`Builder::direct_reclaim`]: crate::Builder::direct_reclaim
    pub(crate) in_flight: AtomicUsize,
    /// Whether [`Reclaim::reserve`] keeps room in the lists (a signal-mode pager's).
    reserve_ahead: bool,
    /// Whether faults reclaim on their own thread ([`Builder::direct_reclaim`]): the
    /// reclaim thread is then kicked only once they cannot keep the regions under the limit.
    ///
    /// [`Builder::direct_reclaim`]: crate::Builder::direct_reclaim
    pub(crate) direct: bool,
}

impl Reclaim {
    /// A reclaimer for a resident limit, a memory limit or both, in pages; `reserve_ahead`
    /// for a signal-mode pager's ([`Reclaim::reserve`]); `direct` where faults reclaim on
    /// their own thread.
    pub(crate) fn new(
        resident_pages: Option<u64>,
        memory_pages: Option<u64>,
        reserve_ahead: bool,
        direct: bool,
    ) -> Result<Reclaim, Error> {
        for (name, pages) in [
            ("resident_limit", resident_pages),
            ("memory_limit", memory_pages),
        ] {
            if pages.is_some_and(|p| p < MIN_PAGES) {
                return Err(Error::invalid(format!(
                    "{name} must be at least {} bytes ({MIN_PAGES} pages)",
                    MIN_PAGES as usize * acomp_zswap::PAGE_SIZE,
                )));
            }
        }
        Ok(Reclaim {
            resident_cap: resident_pages.unwrap_or(u64::MAX),
            memory_cap: memory_pages,
            pool_pages: AtomicU64::new(0),
            lists: Mutex::new(Lists::default()),
            clock: AtomicU32::new(1),
            wake: Mutex::new(Wake::default()),
            cond: Condvar::new(),
            throttled: Mutex::new(Vec::new()),
            stalled: AtomicBool::new(false),
            progress: AtomicU32::new(0),
            in_flight: AtomicUsize::new(0),
            reserve_ahead,
            direct,
        })
    }

    /// The resident pages allowed now: the resident limit, or what the memory limit leaves
    /// beside the tier's pool as last read and the slack, whichever is lower; never under
    /// [`MIN_PAGES`] (a pool past the memory limit leaves the regions that much).
    pub(crate) fn limit(&self) -> u64 {
        // The memory limit is hard: the resident pages it leaves beside the pool, less the
        // slack faults get past the limit, so that they reach it and no more.
        let by_memory = self.memory_cap.map_or(u64::MAX, |m| {
            let room = m.saturating_sub(self.pool_pages.load(Ordering::Relaxed));
            room.saturating_sub(slack_of(room, MEMORY_SLACK))
        });
        self.resident_cap.min(by_memory).max(MIN_PAGES)
    }

    /// Whether a memory limit is set.
    pub(crate) fn caps_memory(&self) -> bool {
        self.memory_cap.is_some()
    }

    /// Reads the tier's pool size again, where a memory limit counts it.
    pub(crate) fn refresh_pool(&self, tier: &acomp_zswap::Zswap) {
        if self.memory_cap.is_some() {
            let pages = tier.stats().pool_total_size / acomp_zswap::PAGE_SIZE as u64;
            self.pool_pages.store(pages, Ordering::Relaxed);
        }
    }

    /// How far past the limit faults go on before they wait for the reclaimer.
    pub(crate) fn slack(&self) -> u64 {
        let part = if self.memory_cap.is_some() {
            MEMORY_SLACK
        } else {
            RESIDENT_SLACK
        };
        slack_of(self.limit(), part)
    }

    /// Page `p` of `region`, a victim that stays in memory (refused, locked, unreadable),
    /// back at the inactive list's tail with the stamp it has.
    pub(crate) fn relist(&self, region: &RegionInner, p: usize) {
        let Some(marks) = &region.lru else { return };
        let entry = Entry {
            region: region.id,
            stamp: marks.stamp[p].load(Ordering::Relaxed),
            page: p as u64,
        };
        self.lists.lock().inactive.push_back(entry);
    }

    /// Keeps room in both lists for the limit's worth of entries more (at most 2^20), so
    /// that faults served in a SIGBUS handler add to them without allocating (a
    /// signal-mode pager's; others' grow as they need).
    pub(crate) fn reserve(&self) {
        if !self.reserve_ahead {
            return;
        }
        let room = self.limit().min(1 << 20) as usize;
        let mut l = self.lists.lock();
        let Lists { inactive, active } = &mut *l;
        for list in [inactive, active] {
            if list.capacity() - list.len() < room / 2 {
                list.reserve(room);
            }
        }
    }

    pub(crate) fn remove_region(&self, id: u32) {
        let mut l = self.lists.lock();
        l.inactive.retain(|e| e.region != id);
        l.active.retain(|e| e.region != id);
    }

    /// The next eviction's clock value (never 0).
    pub(crate) fn evict_stamp(&self) -> u32 {
        let s = self.clock.fetch_add(1, Ordering::Relaxed);
        if s == 0 {
            self.clock.fetch_add(1, Ordering::Relaxed)
        } else {
            s
        }
    }

    pub(crate) fn kick(&self) {
        let mut w = self.wake.lock();
        if !w.work {
            w.work = true;
            self.cond.notify_one();
        }
    }

    pub(crate) fn stop(&self) {
        self.wake.lock().stop = true;
        self.cond.notify_one();
    }
}
