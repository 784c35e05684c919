//! The tier as the main job builds it: [`acomp_zswap::Zswap`] without a device, used as it
//! is (its store and load kinds, its errors), and its counters beside its pool's.

use acomp::Acomp;
use acomp_zswap::{PoolStats, Stats, Zswap};

use acomp_zswap::PAGE_SIZE;

/// A tier over `tfm` without a device: with `max_pool_pages`, a pool of at most that many
/// backing pages, at which a store is refused ([`acomp_zswap::StoreError::PoolFull`], counted
/// in `reject_reclaim_fail`); without, no budget.
pub fn tier(tfm: Acomp, max_pool_pages: Option<usize>) -> Zswap {
    let bytes = max_pool_pages.map_or(u64::MAX, |p| (p * PAGE_SIZE) as u64);
    Zswap::builder(tfm)
        .max_pool_bytes(bytes.max(PAGE_SIZE as u64))
        .build()
        .expect("a budget of a page or more and the default threshold")
}

/// The tier's counters as it keeps them, and its pool's (objects, backing pages).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Counters {
    /// The tier's, with debugfs's names.
    pub stats: Stats,
    /// The pool's.
    pub pool: PoolStats,
}

/// A snapshot of `tier`'s counters.
pub fn counters(tier: &Zswap) -> Counters {
    Counters {
        stats: tier.stats(),
        pool: tier.pool_stats(),
    }
}
