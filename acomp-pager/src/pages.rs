//! What the threads know of a region ([`RegionInner`]: its mapping, its pages' states, the
//! reclaimer's marks), the tier's key of each page, and the size of a page-out's batch.

use std::io;
use std::sync::atomic::{AtomicBool, AtomicU8, AtomicU32, AtomicUsize, Ordering};

use crate::state::States;
use crate::sys::{Mapping, Zeroed};

/// Pages handled together by a page-out: one write-protect ioctl, one `mincore`, and one
/// `MADV_DONTNEED` for each run of pages that left.
pub(crate) const BATCH: usize = 32;

/// The tier's offsets of the pager's pages: the top half of its key space, `2^63 | id << 36
/// | page index`. A program storing into the tier beside a pager uses offsets below 2^63.
pub(crate) const KEY_BASE: u64 = 1 << 63;

/// Bits of a page index in a key: a region is at most 2^36 pages (2^48 bytes).
pub(crate) const PAGE_BITS: u32 = 36;

/// The largest region id: what fits between [`PAGE_BITS`] and [`KEY_BASE`]'s bit.
pub(crate) const MAX_ID: u32 = (1 << (63 - PAGE_BITS)) - 1;

/// Region ids, for every pager of the process: two pagers on one tier never share a key.
static NEXT_ID: AtomicU32 = AtomicU32::new(1);

/// A new region id, or `None` once the process has made [`MAX_ID`] regions.
pub(crate) fn next_id() -> Option<u32> {
    NEXT_ID
        .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |id| {
            (id <= MAX_ID).then_some(id + 1)
        })
        .ok()
}

/// The tier's offset of page `p` of region `id`.
pub(crate) fn key(id: u32, p: usize) -> u64 {
    debug_assert!(id <= MAX_ID && (p as u64) < 1 << PAGE_BITS);
    KEY_BASE | (u64::from(id) << PAGE_BITS) | p as u64
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
    /// Fault-around's state: where a run of swap-ins in order goes on, and its window.
    pub(crate) around: Around,
}

/// Fault-around's state of a region (`fault.rs`): the page after the last run brought in,
/// and that run's window in pages. Threads faulting at once may overwrite each other's:
/// a window closed early, never a page wrong.
#[derive(Debug, Default)]
pub(crate) struct Around {
    pub(crate) next: AtomicUsize,
    pub(crate) window: AtomicUsize,
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

/// Per-page marks of a region under a resident limit, resident only where pages were
/// touched (as the states).
#[derive(Debug)]
pub(crate) struct PageMarks {
    /// Changes each time the page comes into memory or leaves it.
    pub(crate) stamp: Zeroed<AtomicU32>,
    /// The eviction clock when the reclaimer paged the page out; 0 if it did not.
    pub(crate) shadow: Zeroed<AtomicU32>,
    /// Read fault-ins left that map the page writable without its clean copy: set to
    /// [`WRITTEN_FAULT_INS`] by a write (see [`PageMarks::written`]), one less at each.
    writable: Zeroed<AtomicU8>,
}

/// A page written in one residency is faulted in writable, without its clean copy, at its
/// next this many read fault-ins, then clean again (so that a page no longer written gets
/// back its copy). A write-protect fault costs more than the compression a clean copy saves
/// (BENCHMARKS.md, "Under a memory budget"), so a page written once is taken as written
/// again, as the kernel's zram frees a slot on every swap-in.
pub(crate) const WRITTEN_FAULT_INS: u8 = 3;

impl PageMarks {
    pub(crate) fn new(pages: usize) -> io::Result<PageMarks> {
        Ok(PageMarks {
            stamp: Zeroed::new(pages)?,
            shadow: Zeroed::new(pages)?,
            writable: Zeroed::new(pages)?,
        })
    }

    /// Held page `p` was written: a clean page's first write, or a write that faulted it in
    /// (out, or never written before).
    pub(crate) fn written(&self, p: usize) {
        self.writable[p].store(WRITTEN_FAULT_INS, Ordering::Relaxed);
    }

    /// Whether held page `p`, faulted in by a read, goes in writable without its clean copy
    /// (written in one of its last residencies); counts one such fault-in.
    pub(crate) fn take_writable(&self, p: usize) -> bool {
        let left = self.writable[p].load(Ordering::Relaxed);
        if left > 0 {
            self.writable[p].store(left - 1, Ordering::Relaxed);
        }
        left > 0
    }

    /// The page left memory; `shadow` is the eviction clock if the reclaimer paged it out.
    pub(crate) fn evicted(&self, p: usize, shadow: u32) {
        self.stamp[p].fetch_add(1, Ordering::Relaxed);
        self.shadow[p].store(shadow, Ordering::Relaxed);
    }
}
