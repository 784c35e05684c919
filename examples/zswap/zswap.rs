//! The main job's view of the tier: [`acomp_zswap::Zswap`] without a device, with the kinds
//! of store and load the workload times apart; its load errors are the tier's.

use acomp::Acomp;
pub use acomp_zswap::pool::PoolStats;
pub use acomp_zswap::{EntryInfo as Entry, LoadError, LoadKind, Page, StoreKind, same_filled};

use crate::pool::{AllocError, PAGE_SIZE};

/// Why a store failed: the page stays with the caller.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reject {
    /// The pool could not allocate an object: it is at its limit.
    Alloc(AllocError),
}

impl std::fmt::Display for Reject {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Reject::Alloc(e) => write!(f, "page rejected: {e}"),
        }
    }
}

impl std::error::Error for Reject {}

/// zswap's counters as the report prints them: the tier's, with the pool's own.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Counters {
    /// Pages stored now, of every kind.
    pub stored_pages: u64,
    /// Of those, pages kept as they are.
    pub stored_incompressible_pages: u64,
    /// Of those, pages kept as their fill value.
    pub same_filled_pages: u64,
    /// Compressions that gave `ENOSPC` or a page or more: stored as they are.
    pub reject_compress_poor: u64,
    /// Compressions that failed otherwise: stored as they are.
    pub reject_compress_fail: u64,
    /// Stores refused because the pool was at its limit.
    pub reject_alloc_fail: u64,
    /// Loads whose decompression failed or gave other than a page.
    pub decompress_fail: u64,
    /// Sum of the stored objects' lengths in bytes.
    pub stored_bytes: u64,
    /// The pool's counters; `pool.total_size()` is zswap's `pool_total_size`.
    pub pool: PoolStats,
}

/// The tier, for the main job.
#[derive(Debug)]
pub struct Zswap {
    tier: acomp_zswap::Zswap,
}

impl Zswap {
    /// A tier over `tfm`, with a pool of at most `max_pool_pages` backing pages if given,
    /// and no device: at the limit a store is refused.
    pub fn new(tfm: Acomp, max_pool_pages: Option<usize>) -> Self {
        let bytes = max_pool_pages.map_or(u64::MAX, |p| (p * PAGE_SIZE) as u64);
        let tier = acomp_zswap::Zswap::builder(tfm)
            .max_pool_bytes(bytes.max(PAGE_SIZE as u64))
            .build()
            .expect("a budget of a page or more and the default threshold");
        Zswap { tier }
    }

    /// The tier itself.
    pub fn tier(&self) -> &acomp_zswap::Zswap {
        &self.tier
    }

    /// The transform, for its [`Acomp::stats`].
    pub fn acomp(&self) -> &Acomp {
        self.tier.acomp()
    }

    /// What `offset` holds.
    pub fn entry(&self, offset: u64) -> Option<Entry> {
        self.tier.entry(offset)
    }

    /// Stores `page` at `offset`.
    ///
    /// # Errors
    ///
    /// [`Reject::Alloc`] where the pool is at its limit.
    pub fn store(&self, offset: u64, page: &Page) -> Result<StoreKind, Reject> {
        self.tier
            .store_kind(offset, page)
            .map_err(|_| Reject::Alloc(AllocError::LimitHit))
    }

    /// Loads the page at `offset`.
    ///
    /// # Errors
    ///
    /// [`LoadError::NotFound`], [`LoadError::Decompress`], [`LoadError::WrongLength`]
    /// (without a device, no other).
    pub fn load(&self, offset: u64, page: &mut Page) -> Result<LoadKind, LoadError> {
        self.tier.load_kind(offset, page)
    }

    /// Frees the entry at `offset`; returns whether there was one.
    pub fn invalidate(&self, offset: u64) -> bool {
        self.tier.invalidate(offset)
    }

    /// Whether loading `offset` hands acomp two fragments.
    pub fn straddles(&self, offset: u64) -> bool {
        self.tier.straddles(offset)
    }

    /// A snapshot of the counters.
    pub fn counters(&self) -> Counters {
        let s = self.tier.stats();
        Counters {
            stored_pages: s.stored_pages,
            stored_incompressible_pages: s.stored_incompressible_pages,
            same_filled_pages: s.same_filled_pages,
            reject_compress_poor: s.reject_compress_poor,
            reject_compress_fail: s.reject_compress_fail,
            reject_alloc_fail: s.reject_reclaim_fail,
            decompress_fail: s.decompress_fail,
            stored_bytes: s.stored_bytes,
            pool: self.tier.pool_stats(),
        }
    }
}
