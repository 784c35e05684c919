//! [`Builder`]: the budget, the accept threshold, the device and the recompression
//! transform of a [`Zswap`].

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize};

use acomp::Acomp;
use parking_lot::Mutex;

use super::{BuildError, SHARDS, Zswap};
use crate::PAGE_SIZE;
use crate::device::SwapDevice;
use crate::lru::Lru;
use crate::pool::Pool;
use crate::recompress::Recompressor;
use crate::stats::Counters;

/// The configuration of a [`Zswap`], from [`Zswap::builder`].
pub struct Builder {
    tfm: Acomp,
    max_pool_bytes: Option<u64>,
    accept_threshold_percent: u8,
    device: Option<Box<dyn SwapDevice>>,
    // recompress: the second transform, for idle entries.
    pub(crate) recompress: Option<Acomp>,
}

impl std::fmt::Debug for Builder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Builder")
            .field("max_pool_bytes", &self.max_pool_bytes)
            .field("accept_threshold_percent", &self.accept_threshold_percent)
            .field("device", &self.device.is_some())
            .finish_non_exhaustive()
    }
}

/// 20% of the machine's memory: zswap's default `max_pool_percent`.
fn default_budget() -> u64 {
    // SAFETY: sysconf has no preconditions.
    let pages = unsafe { libc::sysconf(libc::_SC_PHYS_PAGES) };
    let size = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    if pages > 0 && size > 0 {
        (pages as u64).saturating_mul(size as u64) / 5
    } else {
        // Unknown: 1 GiB.
        1 << 30
    }
}

impl Builder {
    /// The budget in bytes: the pool's backing pages, counted as zsmalloc counts them, never
    /// exceed it (rounded down to whole pages). The default is 20% of the machine's memory,
    /// zswap's default `max_pool_percent`. Beside the pool, up to
    /// 252 free backing pages (about 1 MiB, the pool's `PAGE_HIGH`) are
    /// kept for reuse, as the kernel's per-CPU page lists keep them, and the entries
    /// themselves take on the order of 150 bytes each (the map, the entry, its LRU node;
    /// the kernel's `zswap_entry` is outside the budget too).
    pub fn max_pool_bytes(mut self, bytes: u64) -> Self {
        self.max_pool_bytes = Some(bytes);
        self
    }

    /// zswap's `accept_threshold_percent` (default 90): once the pool has hit its budget and
    /// a store was refused, stores are refused until the pool falls to this percentage of
    /// the budget; with a device, the shrinker writes back until it gets there; without one,
    /// a refused store compacts first where invalidated pages left room enough.
    pub fn accept_threshold_percent(mut self, percent: u8) -> Self {
        self.accept_threshold_percent = percent;
        self
    }

    /// The device the coldest pages are written back to at the budget. Without one, a store
    /// at the budget is refused.
    pub fn device(mut self, device: impl SwapDevice + 'static) -> Self {
        self.device = Some(Box::new(device));
        self
    }

    /// The tier.
    ///
    /// # Errors
    ///
    /// [`BuildError::BudgetTooSmall`] for a budget under a page;
    /// [`BuildError::BadThreshold`] for a threshold above 100.
    pub fn build(self) -> Result<Zswap, BuildError> {
        let bytes = self.max_pool_bytes.unwrap_or_else(default_budget);
        if bytes < PAGE_SIZE as u64 {
            return Err(BuildError::BudgetTooSmall(bytes));
        }
        if self.accept_threshold_percent > 100 {
            return Err(BuildError::BadThreshold(self.accept_threshold_percent));
        }
        let max_pages = usize::try_from(bytes / PAGE_SIZE as u64).unwrap_or(usize::MAX);
        let accept_pages =
            (max_pages as u128 * self.accept_threshold_percent as u128 / 100) as usize;
        Ok(Zswap {
            tfm: self.tfm,
            pool: Pool::new(Some(max_pages)),
            tree: (0..SHARDS).map(|_| Mutex::default()).collect(),
            lru: Lru::default(),
            device: self.device,
            max_pages,
            accept_pages,
            full: AtomicBool::new(false),
            compacted_at: AtomicUsize::new(usize::MAX),
            shrinking: Mutex::new(()),
            next_key: AtomicU64::new(0),
            counters: Counters::default(),
            recomp: self.recompress.map(Recompressor::new),
        })
    }
}

impl Zswap {
    /// A builder over `tfm` (the transform, by value): the budget defaults to 20% of the
    /// machine's memory, the accept threshold to 90%, and there is no device.
    pub fn builder(tfm: Acomp) -> Builder {
        Builder {
            tfm,
            max_pool_bytes: None,
            accept_threshold_percent: 90,
            device: None,
            recompress: None,
        }
    }
}
