//! The pool's counters, a snapshot ([`PoolStats`]), and the sizes derived from them.

use super::{CHUNK_SIZE, PAGE_SIZE};

/// A snapshot of the pool's counters.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PoolStats {
    /// Backing pages in zspages.
    pub pages: usize,
    /// Free backing pages the arena keeps resident for new zspages (not in `pages`): at most
    /// the pool's `ARENA_HIGH_PAGES`, a chunk's worth (512 pages), but for a chunk just mapped
    /// or populated again (under `GROW_AHEAD_PAGES` and a chunk then, 768 pages; see the
    /// pool's module docs, `src/pool.rs`), and, where the arena's thread gives pages back,
    /// until it has given those beyond the mark back. Resident (the arena populates a chunk when it maps
    /// it or takes it back) but not in `total_size`, as zsmalloc's freed pages are not in
    /// `zs_get_total_pages`.
    pub cached_pages: usize,
    /// Free backing pages the arena has given back to the kernel (`MADV_DONTNEED`) but keeps
    /// mapped, in chunks still in use: not resident; taken after the resident ones.
    pub released_pages: usize,
    /// Chunks of the arena's `CHUNK_SIZE` (2 MiB) in use: holding backing pages in zspages or
    /// kept free ones. `pages + cached_pages + released_pages` is `chunks * CHUNK_PAGES`.
    pub chunks: usize,
    /// Chunks given back to the kernel whole (`MADV_DONTNEED` over the chunk, once all its
    /// pages were free): mapped but not resident, none of their pages counted above; the
    /// arena's next growth populates one again before it maps a new chunk.
    pub released_chunks: usize,
    /// Objects allocated.
    pub objects: usize,
    /// Bytes the allocated objects take, each its class's size.
    pub used_bytes: usize,
    /// Reads whose object straddled two backing pages.
    pub straddled_reads: u64,
    /// Of `straddled_reads`, those handed out as one fragment: the object's two pages
    /// neighbours in one chunk of the arena, so contiguous in memory. The others gave two
    /// fragments (acomp's multi-fragment path: for lz4, a copy onto the stack).
    pub joined_reads: u64,
}

impl PoolStats {
    /// Bytes of backing pages in zspages: zswap's `pool_total_size`.
    pub fn total_size(&self) -> usize {
        self.pages * PAGE_SIZE
    }

    /// Bytes of the chunks mapped, in use or given back (address space, not all resident):
    /// `(chunks + released_chunks) * CHUNK_SIZE`.
    // Read only through `Zswap::pool_stats` (the `inspect` feature) and the pool's own
    // tests (`test-hooks`): without either, nothing calls it.
    #[cfg_attr(
        not(any(feature = "inspect", feature = "test-hooks")),
        allow(dead_code)
    )]
    pub fn arena_size(&self) -> usize {
        (self.chunks + self.released_chunks) * CHUNK_SIZE
    }

    /// Bytes of backing pages resident: those in zspages and the free ones kept resident
    /// (`total_size() + cached_pages * PAGE_SIZE`).
    // Read only through `Zswap::pool_stats` (the `inspect` feature) and the pool's own
    // tests (`test-hooks`): without either, nothing calls it.
    #[cfg_attr(
        not(any(feature = "inspect", feature = "test-hooks")),
        allow(dead_code)
    )]
    pub fn resident_size(&self) -> usize {
        (self.pages + self.cached_pages) * PAGE_SIZE
    }

    /// `used_bytes / total_size()`: 1.0 where every byte of every zspage holds an object
    /// (and for an empty pool).
    // Read only through `Zswap::pool_stats` (the `inspect` feature) and the pool's own
    // tests (`test-hooks`): without either, nothing calls it.
    #[cfg_attr(
        not(any(feature = "inspect", feature = "test-hooks")),
        allow(dead_code)
    )]
    pub fn packing(&self) -> f64 {
        if self.pages == 0 {
            1.0
        } else {
            self.used_bytes as f64 / self.total_size() as f64
        }
    }
}
