//! What the threads know of a region ([`RegionInner`]: its mapping, its pages' states, the
//! reclaimer's marks), the tier's key of each page, and the size of a page-out's batch.

use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};

use crate::state::States;
use crate::sys::Mapping;

/// Pages handled together by a page-out: one write-protect ioctl, one `mincore`, and one
/// `MADV_DONTNEED` for each run of pages that left.
pub(crate) const BATCH: usize = 32;

/// The tier's offset of page `p` of region `id`.
pub(crate) fn key(id: u32, p: usize) -> u64 {
    (u64::from(id) << 36) | p as u64
}

/// What the threads know of a region.
#[derive(Debug)]
pub(crate) struct RegionInner {
    pub(crate) id: u32,
    pub(crate) map: Mapping,
    pub(crate) len: usize,
    pub(crate) states: States,
    pub(crate) dying: AtomicBool,
    /// The reclaimer's per-page marks (present with a resident limit).
    pub(crate) lru: Option<PageMarks>,
}

impl RegionInner {
    pub(crate) fn addr(&self) -> usize {
        self.map.addr()
    }

    pub(crate) fn len(&self) -> usize {
        self.len
    }

    pub(crate) fn dying(&self) -> bool {
        self.dying.load(Ordering::Acquire)
    }
}

/// Per-page marks of a region under a resident limit.
#[derive(Debug)]
pub(crate) struct PageMarks {
    /// Changes each time the page comes into memory or leaves it.
    pub(crate) stamp: Box<[AtomicU32]>,
    /// The eviction clock when the reclaimer paged the page out; 0 if it did not.
    pub(crate) shadow: Box<[AtomicU32]>,
}

impl PageMarks {
    pub(crate) fn new(pages: usize) -> PageMarks {
        let zeros = || (0..pages).map(|_| AtomicU32::new(0)).collect();
        PageMarks {
            stamp: zeros(),
            shadow: zeros(),
        }
    }

    /// The page left memory; `shadow` is the eviction clock if the reclaimer paged it out.
    pub(crate) fn evicted(&self, p: usize, shadow: u32) {
        self.stamp[p].fetch_add(1, Ordering::Relaxed);
        self.shadow[p].store(shadow, Ordering::Relaxed);
    }
}
