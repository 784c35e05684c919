//! One offset's entry (`struct zswap_entry`): where its page is ([`State`]), the marks
//! the LRU, recompression and clean copies keep on it, its slot's generation and links,
//! and a folio's frame that the entries of its pages share. A leaf: it knows the pool's handles and the `FolioInfo` a folio
//! describes itself with, nothing of the tier.

use std::sync::atomic::{
    AtomicBool, AtomicU8, AtomicU32, AtomicU64, AtomicUsize, Ordering::Relaxed,
};

use parking_lot::RwLock;

use crate::outcome::FolioInfo;
use crate::pool::Handle;

/// Where one offset's page is.
pub(crate) enum State {
    /// In the pool: a frame of `length` bytes written by `codec`'s transform, or the page as
    /// it is (`incompressible`).
    Pool {
        handle: Handle,
        length: u32,
        incompressible: bool,
        codec: FrameTag,
    },
    /// Every 8-byte word is this value (native-endian); nothing in the pool.
    Filled(u64),
    /// Written back: on the device under `key`, with this checksum of key and page.
    Device { key: u64, checksum: u32 },
    /// Page `index` of a folio's frame, shared with the folio's other pages.
    Folio {
        folio: std::sync::Arc<Folio>,
        index: usize,
    },
    /// Invalidated or replaced: a load that finds it looks the offset up again.
    Dead,
}

/// One offset's entry (`struct zswap_entry`), a slot of the tier's slab (`slab.rs`): reached
/// only through an [`EntryRef`](crate::slab::EntryRef), which checks the slot's generation
/// under its lock. Its lock guards the object: nothing reads the object without holding it,
/// nothing frees it without holding it for writing.
pub(crate) struct Entry {
    /// The state; only `slab.rs` touches it, through a handle's generation check.
    pub(crate) lock: RwLock<State>,
    /// Bumped when the slot is freed, under its lock held for writing and the lists' lock:
    /// a handle of an older generation finds the slot dead.
    pub(crate) generation: AtomicU32,
    /// Its offset, while the slot is an entry (set when the slot is taken).
    pub(crate) offset: AtomicU64,
    /// Its place in the lists (`lru.rs`), changed only under the lists' lock.
    pub(crate) links: Links,
    /// Loaded since the shrinker last passed it over (zswap's `entry->referenced`).
    pub(crate) referenced: AtomicBool,
    /// zram's idle mark and whether recompression was tried since the store.
    pub(crate) idle: IdleMark,
    /// A clean copy ([`crate::Zswap::load_clean`]): set under the entry's lock held for
    /// reading or writing, cleared and acted on only under it held for writing.
    pub(crate) clean: AtomicBool,
}

/// A slot's links in one of the lists of `lru.rs` (the LRU, the clean copies, the free
/// slots): the slots before and after it, and which list, all changed only under the
/// lists' lock.
#[derive(Debug, Default)]
pub(crate) struct Links {
    pub(crate) prev: AtomicU32,
    pub(crate) next: AtomicU32,
    /// 0 out of every list; else `lru.rs`'s list number.
    pub(crate) list: AtomicU8,
}

impl Entry {
    /// A new entry at `offset`: not referenced, out of the lists, not idle, not clean.
    pub(crate) fn new(offset: u64, state: State) -> Self {
        Entry {
            lock: RwLock::new(state),
            generation: AtomicU32::new(0),
            offset: AtomicU64::new(offset),
            links: Links::default(),
            referenced: AtomicBool::new(false),
            idle: IdleMark::default(),
            clean: AtomicBool::new(false),
        }
    }

    /// Makes a free slot the entry of `offset`, its marks clear; the caller holds its lock
    /// for writing and `state` is the new state.
    pub(crate) fn reset(&self, offset: u64) {
        self.offset.store(offset, Relaxed);
        self.referenced.store(false, Relaxed);
        self.idle.idle.store(false, Relaxed);
        self.idle.tried.store(false, Relaxed);
        self.clean.store(false, Relaxed);
    }
}

/// The transform that wrote an entry's frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum FrameTag {
    /// The tier's transform ([`crate::Zswap::builder`]'s).
    Primary,
    /// The recompression transform ([`crate::Builder::recompress`]'s).
    Recompressed,
}

/// An entry's idle mark (zram's `ZRAM_IDLE`) and whether recompression has tried it
/// (zram's `ZRAM_INCOMPRESSIBLE` for its recompression): both start clear with the entry,
/// that is with each store.
#[derive(Debug, Default)]
pub(crate) struct IdleMark {
    pub(crate) idle: AtomicBool,
    pub(crate) tried: AtomicBool,
}

impl IdleMark {
    /// An access: the entry is no longer idle.
    pub(crate) fn touch(&self) {
        // Most loads find it clear: a read, not a write that moves the cache line.
        if self.idle.load(Relaxed) {
            self.idle.store(false, Relaxed);
        }
    }
}

/// One folio's frame, shared by the entries of its pages.
pub(crate) struct Folio {
    /// Unique over every folio stored.
    pub(crate) id: u64,
    /// The offset of its first page.
    pub(crate) first: u64,
    /// Its pages: the page slots of its frame, `first..first + pages`.
    pub(crate) pages: usize,
    /// The entries it served when it was made: `pages` for a stored folio, fewer for a
    /// recompressed unit whose frame has slots for offsets it does not serve.
    pub(crate) members: usize,
    /// The transform that wrote the frame: the tier's (a stored folio) or the recompression
    /// transform's (a unit of idle pages, `src/unit.rs`).
    pub(crate) codec: FrameTag,
    /// Bytes of the frame.
    pub(crate) length: usize,
    /// The frame in page-sized objects and a tail; empty once freed.
    pub(crate) chunks: RwLock<Vec<Handle>>,
    /// Pages it still serves: the last to leave frees the frame.
    pub(crate) live: AtomicUsize,
}

impl Folio {
    pub(crate) fn info(&self) -> FolioInfo {
        FolioInfo {
            id: self.id,
            first: self.first,
            pages: self.pages,
            length: self.length,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes() {
        // A pool handle of 16 bytes: `State` 24, an entry one cache line (issue 41).
        assert_eq!(std::mem::size_of::<State>(), 24);
        assert_eq!(std::mem::size_of::<Entry>(), 64);
    }
}
