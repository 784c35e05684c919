//! The reclaimer's state, held in the pager's `Shared`: its lists, its eviction clock and
//! its wake-ups. The policy and the thread: `reclaim.rs`.
//!
//! Lists hold `(region, page, stamp)`; a page's stamp changes whenever it leaves memory, so
//! entries of pages that left are skipped when they reach a head, with no unlinking.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};

use parking_lot::{Condvar, Mutex};

use crate::error::Error;
use crate::pages::{BATCH, RegionInner};

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
    pub(crate) limit: u64,
    pub(crate) lists: Mutex<Lists>,
    pub(crate) clock: AtomicU32,
    pub(crate) wake: Mutex<Wake>,
    pub(crate) cond: Condvar,
    pub(crate) throttled: Mutex<Vec<usize>>,
    /// Set when the reclaimer found nothing it could page out while over the limit (the
    /// tier refuses, every victim is locked): faults then go past the limit rather than
    /// wait for it, and the reclaimer retries after a pause. Cleared by its next progress.
    pub(crate) stalled: AtomicBool,
}

impl Reclaim {
    pub(crate) fn new(limit_pages: u64) -> Result<Reclaim, Error> {
        if limit_pages < 2 * BATCH as u64 {
            return Err(Error::invalid(format!(
                "resident_limit must be at least {} bytes ({} pages)",
                2 * BATCH * acomp_zswap::PAGE_SIZE,
                2 * BATCH
            )));
        }
        Ok(Reclaim {
            limit: limit_pages,
            lists: Mutex::new(Lists::default()),
            clock: AtomicU32::new(1),
            wake: Mutex::new(Wake::default()),
            cond: Condvar::new(),
            throttled: Mutex::new(Vec::new()),
            stalled: AtomicBool::new(false),
        })
    }

    /// How far past the limit faults go on before they wait for the reclaimer.
    pub(crate) fn slack(&self) -> u64 {
        (self.limit / 16).max(BATCH as u64 * 4)
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
