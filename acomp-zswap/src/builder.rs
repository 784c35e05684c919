//! [`Builder`]: the budget, the accept threshold, the device and the recompression
//! transform of a [`Zswap`].

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize};

use acomp::Acomp;
use parking_lot::Mutex;

use crate::PAGE_SIZE;
use crate::device::SwapDevice;
use crate::outcome::BuildError;
use crate::pool::Pool;
use crate::stats::Counters;
use crate::sys;
use crate::tier::Zswap;

/// The configuration of a [`Zswap`], from [`Zswap::builder`].
pub struct Builder {
    tfm: Acomp,
    max_pool_bytes: Option<u64>,
    accept_threshold_percent: u8,
    device: Option<Box<dyn SwapDevice>>,
    recompress: Option<Acomp>,
    unit_pages: usize,
    pressure_percent: Option<u8>,
    arena_thread: bool,
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
    // 1 GiB where the machine's memory is unknown.
    sys::physical_memory().map_or(1 << 30, |bytes| bytes / 5)
}

impl Builder {
    /// The budget in bytes: the pool's backing pages, counted as zsmalloc counts them, never
    /// exceed it (rounded down to whole pages). The default is 20% of the machine's memory,
    /// zswap's default `max_pool_percent`. Beside the pool, the free backing pages of the
    /// pool's arena are kept for reuse, resident under two chunks of 2 MiB
    /// (`PoolStats::cached_pages`, with the `inspect` feature), and the entries
    /// themselves take heap memory: 79 bytes a page with 2^14 dense offsets stored, 54.5
    /// with 2^20 (the entry's 40-byte slot, the index, the zspages' bookkeeping;
    /// BENCHMARKS.md, "An offset's entry in its run's group"; a page alone in its run of 64
    /// offsets takes a group of 64 entries; the kernel's `zswap_entry` is outside the budget
    /// too).
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

    /// A second transform for idle entries (zram's `recomp_algorithm`): see
    /// [`Zswap::recompress_idle`]. Typically `Acomp::new("lz4")` for the tier and
    /// `Acomp::new("zstd")` here: stores and hot loads pay lz4, cold pages take zstd's
    /// memory. Without it, [`Zswap::recompress_idle`] does nothing.
    ///
    /// ```
    /// use acomp::Acomp;
    /// use acomp_zswap::{EntryInfo, PAGE_SIZE, Page, Zswap};
    ///
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let zswap = Zswap::builder(Acomp::new("lz4")?)
    ///     .max_pool_bytes(1 << 20)
    ///     .recompress(Acomp::new("zstd")?) // zram's recomp_algorithm
    ///     .build()?;
    /// let mut page: Page = [0; PAGE_SIZE];
    /// for (i, b) in page.iter_mut().enumerate() {
    ///     *b = b"idle pages go to zstd; "[i % 23] ^ (i / 512) as u8;
    /// }
    /// zswap.store(1, &page)?;
    /// zswap.store(2, &page)?;
    /// zswap.mark_idle(); // echo all > idle
    /// let mut back = [0; PAGE_SIZE];
    /// zswap.load(2, &mut back)?; // an access: 2 is hot again
    /// assert_eq!(zswap.recompress_idle(usize::MAX), 1); // recompress type=idle
    /// let length = |o| match zswap.entry(o) {
    ///     Some(EntryInfo::Compressed { length }) => length,
    ///     other => panic!("{other:?}"),
    /// };
    /// assert!(length(1) < length(2)); // 1's frame is zstd's now
    /// zswap.load(1, &mut back)?; // decoded by zstd
    /// assert_eq!(back, page);
    /// assert_eq!(zswap.stats().recompressed_pages, 1);
    /// # Ok(())
    /// # }
    /// ```
    pub fn recompress(mut self, tfm: Acomp) -> Self {
        self.recompress = Some(tfm);
        self
    }

    /// Recompresses idle pages in units of up to `pages` neighbouring offsets (default 1:
    /// page by page, as zram): the idle entries of each aligned window of `pages` offsets
    /// become one frame of page-sized blocks written by the [`Builder::recompress`]
    /// transform, kept where it takes less of the pool than their objects did. Each page
    /// is still an entry of its own offset that loads, takes, invalidates and is written
    /// back by itself, as a page of [`Zswap::store_folio`]'s folios; the frame is freed when
    /// its last page leaves ([`Stats::held_unit_pages`](crate::Stats::held_unit_pages) until
    /// then). A window with one idle page recompresses it alone.
    ///
    /// A unit compresses better than its pages alone (the pages share one window), and
    /// a load pays more: a page's load decodes the frame up to its page, and a second load
    /// from the same unit in the same thread decodes the rest once for the pages after it
    /// (each thread that loads a unit's page keeps a buffer of up to the unit's size for
    /// this, 256 KiB for 64 pages). Units serve cold pages that are loaded seldom, or
    /// together.
    ///
    /// ```
    /// use acomp::Acomp;
    /// use acomp_zswap::{PAGE_SIZE, Page, Zswap};
    ///
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let zswap = Zswap::builder(Acomp::new("lz4")?)
    ///     .recompress(Acomp::new("zstd")?)
    ///     .recompress_unit_pages(16)
    ///     .build()?;
    /// let pages: Vec<Page> = (0..16u8)
    ///     .map(|k| std::array::from_fn(|i| (i % 251) as u8 ^ k ^ (i / 64) as u8))
    ///     .collect();
    /// for (o, p) in (32..).zip(&pages) {
    ///     zswap.store(o, p)?;
    /// }
    /// zswap.mark_idle();
    /// assert_eq!(zswap.recompress_idle(usize::MAX), 16);
    /// assert_eq!(zswap.stats().stored_units, 1);
    /// let mut back = [0; PAGE_SIZE];
    /// zswap.load(40, &mut back)?; // decodes the unit up to page 40
    /// assert_eq!(back, pages[8]);
    /// # Ok(())
    /// # }
    /// ```
    pub fn recompress_unit_pages(mut self, pages: usize) -> Self {
        self.unit_pages = pages;
        self
    }

    /// Recompression on pool pressure: the thread of
    /// [`Zswap::recompress_every`](crate::Zswap::recompress_every) also recompresses, without
    /// waiting for its interval, once the pool passes `percent` of its budget
    /// (`max_pool_bytes`), as zram's users run `recompress` from a memory-pressure signal.
    /// It recompresses the entries idle since the last mark, once until the next mark; it
    /// looks at the pool every [`PRESSURE_POLL`](crate::PRESSURE_POLL) or `interval`,
    /// whichever is shorter. Without [`Zswap::recompress_every`](crate::Zswap::recompress_every)
    /// it does nothing.
    pub fn recompress_pressure_percent(mut self, percent: u8) -> Self {
        self.pressure_percent = Some(percent);
        self
    }

    /// The pool's own thread for the kernel's side of its backing pages (default on), so that
    /// stores, loads that free and invalidations do not wait on the kernel:
    /// - growth ahead: once fewer than half a chunk of free backing pages is left (256 pages,
    ///   1 MiB), it adds the next chunk of 2 MiB (a new mapping, or a chunk given back whole
    ///   populated again), whose page faults (their zeroing, and where the system gives
    ///   transparent huge pages their compaction) cost from 0.5 ms to several ms;
    /// - giving back: once more than 64 free pages beyond the 512 kept resident pile up, it
    ///   gives them back to the kernel (`MADV_DONTNEED`) in runs of neighbouring pages, where
    ///   a free would otherwise give each back on its own (1-2 µs a call, but 11-19 µs where
    ///   another thread of the process runs on another CPU and takes the TLB shootdown's
    ///   interrupt, measured on a 2-CPU VM: BENCHMARKS.md).
    ///
    /// The work is the same, done on another CPU. The thread starts the first time it is
    /// needed and ends once the tier is dropped (it is woken then, not joined: it may
    /// outlive the drop by the chunk it is adding, a few milliseconds). Off, the store that
    /// finds no free backing page adds the chunk itself, and each free beyond the mark gives
    /// its page back at once. Either way the free backing pages kept resident stay under two
    /// chunks while a chunk is new
    /// (`PoolStats::cached_pages`, with the `inspect` feature); with the thread they
    /// may pass 576 for the moment it takes to give them back.
    pub fn arena_thread(mut self, on: bool) -> Self {
        self.arena_thread = on;
        self
    }

    /// The tier.
    ///
    /// # Errors
    ///
    /// [`BuildError::BudgetTooSmall`] for a budget under a page;
    /// [`BuildError::BadThreshold`] for a threshold above 100;
    /// [`BuildError::BadPressure`] for a pressure percentage of 0 or above 100;
    /// [`BuildError::BadUnit`] for a unit of 0 or more than
    /// [`MAX_FOLIO_PAGES`](crate::MAX_FOLIO_PAGES) pages.
    pub fn build(self) -> Result<Zswap, BuildError> {
        let bytes = self.max_pool_bytes.unwrap_or_else(default_budget);
        if bytes < PAGE_SIZE as u64 {
            return Err(BuildError::BudgetTooSmall(bytes));
        }
        if self.accept_threshold_percent > 100 {
            return Err(BuildError::BadThreshold(self.accept_threshold_percent));
        }
        if !(1..=crate::MAX_FOLIO_PAGES).contains(&self.unit_pages) {
            return Err(BuildError::BadUnit(self.unit_pages));
        }
        if let Some(p) = self.pressure_percent.filter(|p| !(1..=100).contains(p)) {
            return Err(BuildError::BadPressure(p));
        }
        let max_pages = usize::try_from(bytes / PAGE_SIZE as u64).unwrap_or(usize::MAX);
        let accept_pages =
            (max_pages as u128 * self.accept_threshold_percent as u128 / 100) as usize;
        let pool = Pool::new(Some(max_pages));
        pool.set_arena_thread(self.arena_thread);
        Ok(Zswap {
            tfm: self.tfm,
            pool,
            index: Default::default(),
            entries: Default::default(),
            device: self.device,
            max_pages,
            accept_pages,
            full: AtomicBool::new(false),
            compacted_at: AtomicUsize::new(usize::MAX),
            shrinking: Mutex::new(()),
            next_key: AtomicU64::new(0),
            counters: Counters::default(),
            recomp: self.recompress,
            unit_pages: self.unit_pages,
            pressure_pages: self
                .pressure_percent
                .map(|p| (max_pages as u128 * u128::from(p) / 100) as usize),
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
            unit_pages: 1,
            pressure_percent: None,
            arena_thread: true,
        }
    }
}
