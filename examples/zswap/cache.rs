//! A small cache of decoded units, owned by one loading thread (the per-CPU buffer a
//! fault-around swap-in would decode a folio into): a unit decoded for one page's fault
//! serves the faults on its other pages without decoding again.
//!
//! It is keyed by the tier's own description of a folio ([`FolioInfo`], whose `id` no other
//! folio ever has), so a cached copy of an older store can never match. A page invalidated or
//! stored again on its own is no longer served by its folio; `units::load_page_cached` asks
//! the tier which folio serves the page (`Zswap::folio`) before asking the cache, so the
//! cache never needs to hear of writes: what it holds is the content of one frame, which
//! does not change while that folio lives.
//!
//! The tier keeps a decoded folio of its own per thread only where the algorithm has no range
//! reads (lz4); a zstd folio's page loads are range reads, which decode up to the page. This
//! cache is the fault-around caller's, which decodes a folio whole once whatever the
//! algorithm (`Zswap::decode_folio`, made for it).

use acomp_zswap::FolioInfo;

#[derive(Debug)]
struct Entry {
    key: Option<FolioInfo>,
    data: Box<[u8]>,
}

/// A few decoded units, the oldest filled replaced first. Not shared: one per thread.
#[derive(Debug)]
pub struct UnitCache {
    entries: Vec<Entry>,
    next: usize,
    /// Loads served from a cached unit.
    pub hits: u64,
    /// Loads that decoded their unit into the cache.
    pub misses: u64,
}

impl UnitCache {
    /// A cache of `entries` units of `unit_bytes` bytes each.
    ///
    /// # Panics
    ///
    /// If `entries` is 0.
    pub fn new(entries: usize, unit_bytes: usize) -> Self {
        assert!(entries > 0, "a cache of no entries");
        UnitCache {
            entries: (0..entries)
                .map(|_| Entry {
                    key: None,
                    data: vec![0; unit_bytes].into_boxed_slice(),
                })
                .collect(),
            next: 0,
            hits: 0,
            misses: 0,
        }
    }

    /// The decoded unit cached under `key`, counted as a hit.
    pub fn get(&mut self, key: FolioInfo) -> Option<&[u8]> {
        let e = self.entries.iter().find(|e| e.key == Some(key))?;
        self.hits += 1;
        Some(&e.data)
    }

    /// Decodes a unit into the next entry with `decode` (given the entry's whole buffer),
    /// which says which folio it decoded, and caches it under that folio: not the one the
    /// caller looked up, which a store may have replaced in between. Counted as a miss.
    /// Where `decode` fails the entry holds nothing.
    ///
    /// # Errors
    ///
    /// `decode`'s.
    pub fn fill<E>(
        &mut self,
        decode: impl FnOnce(&mut [u8]) -> Result<FolioInfo, E>,
    ) -> Result<(FolioInfo, &[u8]), E> {
        self.misses += 1;
        let i = self.next;
        self.next = (self.next + 1) % self.entries.len();
        let e = &mut self.entries[i];
        e.key = None;
        let key = decode(&mut e.data)?;
        e.key = Some(key);
        Ok((key, &e.data))
    }
}
