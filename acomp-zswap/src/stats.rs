//! The counters: zswap's debugfs names (`/sys/kernel/debug/zswap/`), plus the device's.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

/// A snapshot of the tier's counters, from [`crate::Zswap::stats`]. The names are those of
/// zswap's debugfs files (`/sys/kernel/debug/zswap/`) where zswap has the counter.
///
/// # Gauges and counters
///
/// As in zswap's debugfs, two sorts of number sit side by side, and each field's doc
/// begins with its sort:
///
/// - **Gauges** say what the tier holds now, and go up and down: `stored_pages` and its
///   kinds (`same_filled_pages`, `stored_incompressible_pages`), `pool_total_size`,
///   `pool_used_size`, `stored_bytes`, `device_pages`, `stored_folios`, `folio_pages`,
///   `held_folio_pages`, `held_folio_bytes`, `stored_units`, `held_unit_pages`, `held_unit_bytes`,
///   `clean_pages`; and the budget,
///   `max_pool_size`, which does not change. Read them as they are.
/// - **Counters** count events since the tier was built, and only grow: `written_back_pages`,
///   `pool_limit_hit`, the `reject_*`, `decompress_fail`, `device_loads` and the `device_*_fail`
///   and `device_corrupt`, `compacted_objects`, the `recompress*`, `clean_dropped`. For a
///   rate, subtract an earlier snapshot's.
///
/// The fields are one flat struct, not a `gauges` and a `counters` part, so that each keeps
/// the path users read it by (`stats().stored_pages`, as zswap's file of that name).
#[derive(Debug, Clone, Default, PartialEq)]
#[non_exhaustive]
pub struct Stats {
    // Gauges: what is held now.
    /// Gauge: pages held in memory now, of every kind (zswap's `stored_pages`).
    pub stored_pages: u64,
    /// Gauge: of those, pages kept as their fill value, nothing in the pool
    /// (`same_filled_pages`).
    pub same_filled_pages: u64,
    /// Gauge: of those, pages kept as they are, a whole page in the pool
    /// (`stored_incompressible_pages`).
    pub stored_incompressible_pages: u64,
    /// Gauge: bytes of backing pages in the pool, counted as zsmalloc counts them
    /// (`pool_total_size`): never above the budget.
    pub pool_total_size: u64,
    /// Gauge: bytes the pool's objects take, each rounded up to its size class.
    pub pool_used_size: u64,
    /// Gauge: bytes of the stored frames (and pages kept as they are), before rounding.
    pub stored_bytes: u64,
    /// Gauge: pages on the device now.
    pub device_pages: u64,
    /// Gauge: folio frames held now ([`crate::Zswap::store_folio`]); their bytes are in
    /// `stored_bytes`.
    pub stored_folios: u64,
    /// Gauge: pages those frames serve now (of `stored_pages`).
    pub folio_pages: u64,
    /// Gauge: pages that left a folio (invalidated, taken, stored again, written back) whose
    /// frame stays for the folio's other pages: held, not stored.
    pub held_folio_pages: u64,
    /// Gauge: bytes of the frames that hold such pages.
    pub held_folio_bytes: u64,
    /// Gauge: units held now: frames of idle pages recompressed together
    /// ([`crate::Builder::recompress_unit_pages`]; of `stored_folios`).
    pub stored_units: u64,
    /// Gauge: pages that left a unit whose frame stays for the unit's other pages (of
    /// `held_folio_pages`).
    pub held_unit_pages: u64,
    /// Gauge: bytes of the units that hold such pages (of `held_folio_bytes`).
    pub held_unit_bytes: u64,
    /// Gauge: clean copies held now: entries loaded with [`crate::Zswap::load_clean`] whose
    /// owner holds the page too (of `stored_pages`, or of `device_pages`).
    pub clean_pages: u64,
    /// The budget, a constant: the builder's `max_pool_bytes`, rounded down to whole pages.
    pub max_pool_size: u64,

    // Counters: events since the tier was built.
    /// Counter: pages the shrinker wrote to the device (`written_back_pages`).
    pub written_back_pages: u64,
    /// Counter: times a store found the pool at its budget (`pool_limit_hit`).
    pub pool_limit_hit: u64,
    /// Counter: stores refused because no room could be made: no device, the device failed,
    /// or the pool had not yet fallen below the accept threshold (`reject_reclaim_fail`).
    pub reject_reclaim_fail: u64,
    /// Counter: compressions that failed: the page was kept as it is
    /// (`reject_compress_fail`).
    pub reject_compress_fail: u64,
    /// Counter: compressions that gave a page or more: the page was kept as it is
    /// (`reject_compress_poor`).
    pub reject_compress_poor: u64,
    /// Counter: loads whose frame acomp refused or that gave other than a page
    /// (`decompress_fail`).
    pub decompress_fail: u64,
    /// Counter: loads served by the device.
    pub device_loads: u64,
    /// Counter: pages whose device write failed (a failed batch counts each of its pages):
    /// those pages stayed in the pool.
    pub device_write_fail: u64,
    /// Counter: device reads that failed ([`crate::LoadError::Io`]): those entries were kept.
    pub device_read_fail: u64,
    /// Counter: device reads whose checksum did not match ([`crate::LoadError::Corrupt`]).
    pub device_corrupt: u64,
    /// Counter: device discards that failed (the tier had forgotten the page already).
    pub device_discard_fail: u64,
    /// Counter: objects compaction moved.
    pub compacted_objects: u64,
    /// Counter: pages whose frame was replaced by the recompression transform's
    /// ([`crate::Zswap::recompress_idle`]; zram's recompressed pages).
    pub recompressed_pages: u64,
    /// Counter: pages recompressed into units (of `recompressed_pages`).
    pub recompressed_unit_pages: u64,
    /// Counter: bytes of the pool's objects (each rounded up to its size class) that
    /// recompression gave back.
    pub recompress_saved_bytes: u64,
    /// Counter: idle pages recompression left as they were: their new frame was not at
    /// least one size class smaller (or recompression failed). They are not tried again
    /// until stored again.
    pub recompress_skipped_pages: u64,
    /// Counter: CPU time recompression spent (the thread's CPU clock around decompressing
    /// and recompressing each page), in nanoseconds.
    pub recompress_cpu_ns: u64,
    /// Counter: passes the recompression thread ran because the pool passed
    /// [`crate::Builder::recompress_pressure_percent`] of its budget.
    pub recompress_pressure_passes: u64,
    /// Counter: clean copies the tier dropped at its budget, before writing back or
    /// refusing anything.
    pub clean_dropped: u64,
}

impl Stats {
    /// `pool_used_size / pool_total_size`: how full the pool's backing pages are (1.0 for
    /// an empty pool).
    pub fn packing(&self) -> f64 {
        if self.pool_total_size == 0 {
            1.0
        } else {
            self.pool_used_size as f64 / self.pool_total_size as f64
        }
    }
}

/// The counters the tier keeps itself; the pool's gauges come from the pool.
#[derive(Debug, Default)]
pub(crate) struct Counters {
    pub stored_pages: AtomicU64,
    pub same_filled_pages: AtomicU64,
    pub stored_incompressible_pages: AtomicU64,
    pub stored_bytes: AtomicU64,
    pub written_back_pages: AtomicU64,
    pub pool_limit_hit: AtomicU64,
    pub reject_reclaim_fail: AtomicU64,
    pub reject_compress_fail: AtomicU64,
    pub reject_compress_poor: AtomicU64,
    pub decompress_fail: AtomicU64,
    pub device_pages: AtomicU64,
    pub device_loads: AtomicU64,
    pub device_write_fail: AtomicU64,
    pub device_read_fail: AtomicU64,
    pub device_corrupt: AtomicU64,
    pub device_discard_fail: AtomicU64,
    pub compacted_objects: AtomicU64,
    pub recompressed_pages: AtomicU64,
    pub recompress_saved_bytes: AtomicU64,
    pub recompress_skipped_pages: AtomicU64,
    pub recompress_cpu_ns: AtomicU64,
    pub stored_folios: AtomicU64,
    pub folio_pages: AtomicU64,
    pub held_folio_pages: AtomicU64,
    pub held_folio_bytes: AtomicU64,
    pub clean_pages: AtomicU64,
    pub stored_units: AtomicU64,
    pub held_unit_pages: AtomicU64,
    pub held_unit_bytes: AtomicU64,
    pub recompressed_unit_pages: AtomicU64,
    pub recompress_pressure_passes: AtomicU64,
    pub clean_dropped: AtomicU64,
}

/// `counter += 1`.
pub(crate) fn inc(c: &AtomicU64) {
    c.fetch_add(1, Relaxed);
}

/// `counter -= 1`.
pub(crate) fn dec(c: &AtomicU64) {
    c.fetch_sub(1, Relaxed);
}
