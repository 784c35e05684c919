//! A small cache of decoded units, owned by one loading thread (the per-CPU buffer a
//! fault-around swap-in would decode a folio into): a unit decoded for one page's fault
//! serves the faults on its other pages without decoding again.
//!
//! It is keyed by the tier's folio id (`acomp_zswap::FolioInfo::id`): every folio stored
//! takes a new id, so a cached copy of an older store can never match. A page invalidated or
//! stored again on its own is no longer served by its folio; `units::load_page_cached` asks
//! the tier which folio serves the page (`Zswap::folio`) before asking the cache, so the
//! cache never needs to hear of writes: what it holds is the content of one frame, which
//! does not change while that folio lives.

/// Which decoded unit an entry holds: the tier's folio (`acomp_zswap::FolioInfo`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Key {
    /// The offset of the folio's first page.
    pub first: u64,
    /// The folio's id (unique over all folios stored).
    pub id: u64,
}

#[derive(Debug)]
struct Entry {
    key: Option<Key>,
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
    pub fn get(&mut self, key: Key) -> Option<&[u8]> {
        let e = self.entries.iter().find(|e| e.key == Some(key))?;
        self.hits += 1;
        Some(&e.data)
    }

    /// Decodes a unit into the next entry with `decode` (given the entry's whole buffer) and
    /// caches it under `key`; counted as a miss. Where `decode` fails the entry holds
    /// nothing.
    ///
    /// # Errors
    ///
    /// `decode`'s.
    pub fn fill<E>(
        &mut self,
        key: Key,
        decode: impl FnOnce(&mut [u8]) -> Result<(), E>,
    ) -> Result<&[u8], E> {
        self.misses += 1;
        let i = self.next;
        self.next = (self.next + 1) % self.entries.len();
        let e = &mut self.entries[i];
        e.key = None;
        decode(&mut e.data)?;
        e.key = Some(key);
        Ok(&e.data)
    }
}
