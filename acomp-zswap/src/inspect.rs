//! What a caller can read of the tier: an offset's entry, the counters; and, with the
//! `inspect` feature, the measurement hooks that tests, benches and the main job read
//! (how an object lies in the pool, the LRU's length, which transform wrote a frame):
//! answers about the tier's insides, not part of its contract, which may change in any
//! release.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

use crate::PAGE_SIZE;
use crate::outcome::EntryInfo;
#[cfg(feature = "inspect")]
use crate::slab::FrameTag;
use crate::slab::{AS_IS, State};
use crate::stats::Stats;
use crate::tier::Zswap;

/// Its counters ([`Zswap::stats`]), the one thing of a tier worth printing.
impl std::fmt::Debug for Zswap {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Zswap")
            .field("stats", &self.stats())
            .finish_non_exhaustive()
    }
}

impl Zswap {
    /// What `offset` holds now, if anything.
    pub fn entry(&self, offset: u64) -> Option<EntryInfo> {
        let e = self.lookup(offset)?;
        let info = match &*e.read() {
            State::Pool { length: AS_IS, .. } => EntryInfo::Incompressible,
            State::Pool { length, .. } => EntryInfo::Compressed {
                length: *length as usize,
            },
            State::Filled(word) => match word.to_ne_bytes() {
                b if b == [b[0]; 8] => EntryInfo::SameFilled(b[0]),
                _ => EntryInfo::SameFilledWord(*word),
            },
            State::Device { .. } => EntryInfo::Device,
            State::Folio { folio, .. } => EntryInfo::Folio(folio.info()),
            State::Dead => return None,
        };
        Some(info)
    }

    /// Whether an entry is at `offset` now.
    pub fn contains(&self, offset: u64) -> bool {
        self.lookup(offset).is_some()
    }

    /// Whether the page at `offset` is on the device now.
    pub fn on_device(&self, offset: u64) -> bool {
        self.lookup(offset)
            .is_some_and(|e| matches!(*e.read(), State::Device { .. }))
    }

    /// A snapshot of the counters.
    pub fn stats(&self) -> Stats {
        let c = &self.counters;
        let p = self.pool.stats();
        let get = |a: &AtomicU64| a.load(Relaxed);
        Stats {
            stored_pages: get(&c.stored_pages),
            same_filled_pages: get(&c.same_filled_pages),
            stored_incompressible_pages: get(&c.stored_incompressible_pages),
            pool_total_size: p.total_size() as u64,
            pool_used_size: p.used_bytes as u64,
            stored_bytes: get(&c.stored_bytes),
            max_pool_size: (self.max_pages as u64).saturating_mul(PAGE_SIZE as u64),
            written_back_pages: get(&c.written_back_pages),
            pool_limit_hit: get(&c.pool_limit_hit),
            reject_reclaim_fail: get(&c.reject_reclaim_fail),
            reject_compress_fail: get(&c.reject_compress_fail),
            reject_compress_poor: get(&c.reject_compress_poor),
            decompress_fail: get(&c.decompress_fail),
            device_pages: get(&c.device_pages),
            device_loads: get(&c.device_loads),
            device_write_fail: get(&c.device_write_fail),
            device_read_fail: get(&c.device_read_fail),
            device_corrupt: get(&c.device_corrupt),
            device_discard_fail: get(&c.device_discard_fail),
            compacted_objects: get(&c.compacted_objects),
            recompressed_pages: get(&c.recompressed_pages),
            recompress_saved_bytes: get(&c.recompress_saved_bytes),
            recompress_skipped_pages: get(&c.recompress_skipped_pages),
            recompress_cpu_ns: get(&c.recompress_cpu_ns),
            stored_folios: get(&c.stored_folios),
            folio_pages: get(&c.folio_pages),
            held_folio_pages: get(&c.held_folio_pages),
            held_folio_bytes: get(&c.held_folio_bytes),
            clean_pages: get(&c.clean_pages),
            stored_units: get(&c.stored_units),
            held_unit_pages: get(&c.held_unit_pages),
            held_unit_bytes: get(&c.held_unit_bytes),
            recompressed_unit_pages: get(&c.recompressed_unit_pages),
            recompress_pressure_passes: get(&c.recompress_pressure_passes),
            clean_dropped: get(&c.clean_dropped),
        }
    }
}

/// The measurement hooks (feature `inspect`).
#[cfg(feature = "inspect")]
impl Zswap {
    /// Whether loading `offset` now would hand acomp two fragments (its object straddles two
    /// backing pages that are not neighbours in one of the pool's chunks).
    pub fn straddles(&self, offset: u64) -> bool {
        self.lookup(offset).is_some_and(|e| match &*e.read() {
            State::Pool { handle, length, .. } if *length != AS_IS => {
                self.pool.two_fragments(handle, *length as usize)
            }
            _ => false,
        })
    }

    /// Whether `offset`'s frame is the recompression transform's now (its own, or a
    /// unit's).
    pub fn is_recompressed(&self, offset: u64) -> bool {
        self.lookup(offset).is_some_and(|e| match &*e.read() {
            State::Pool { codec, .. } => *codec == FrameTag::Recompressed,
            State::Folio { folio, .. } => folio.codec == FrameTag::Recompressed,
            _ => false,
        })
    }

    /// The recompression transform ([`crate::Builder::recompress`]), for its
    /// [`acomp::Acomp::stats`].
    pub fn recompress_acomp(&self) -> Option<&acomp::Acomp> {
        self.recomp.as_ref()
    }

    /// Pool entries in the LRU now (those the shrinker may write back).
    pub fn lru_len(&self) -> usize {
        self.entries.lru_len()
    }

    /// The heap bytes of the tier's bookkeeping, as it asked for them (the allocator's
    /// headers and rounding not counted): (the entries' slot table with its stack of free groups, the
    /// index, the zspages' bookkeeping). For accounting the memory beyond the pool.
    pub fn bookkeeping_bytes(&self) -> (usize, usize, usize) {
        (
            self.entries.bytes(),
            self.index.bytes(),
            self.pool.bookkeeping_bytes(),
        )
    }

    /// The pool's own counters (backing pages cached, straddled reads).
    pub fn pool_stats(&self) -> crate::PoolStats {
        self.pool.stats()
    }

    /// With `on`, loads hand acomp every object that straddles two backing pages as two
    /// fragments, neighbouring pages too (which they otherwise hand out as one): for tests
    /// of acomp's multi-fragment path through the tier.
    #[cfg(feature = "test-hooks")]
    pub fn pool_split_reads(&self, on: bool) {
        self.pool.set_split_reads(on);
    }

    /// Backing pages of the pool's chunks resident now, as the kernel counts them in the
    /// process's RSS (`mincore`): for tests that memory given back left it.
    #[cfg(feature = "test-hooks")]
    pub fn pool_resident_pages(&self) -> usize {
        self.pool.resident_pages()
    }
}
