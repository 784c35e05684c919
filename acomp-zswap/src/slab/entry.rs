//! One offset's entry (`struct zswap_entry`): where its page is ([`State`]), the marks
//! the LRU, recompression and clean copies keep on it, its slot's generation and links,
//! and a folio's frame that the entries of its pages share. A leaf: it knows the pool's handles and the `FolioInfo` a folio
//! describes itself with, nothing of the tier.

use std::sync::atomic::{AtomicU8, AtomicU32, AtomicU64, AtomicUsize, Ordering::Relaxed};

use parking_lot::RwLock;

use crate::PAGE_SIZE;
use crate::outcome::FolioInfo;
use crate::pool::Handle;

/// Where one offset's page is.
pub(crate) enum State {
    /// In the pool: a frame of `length` bytes written by `codec`'s transform, or, where
    /// `length` is [`AS_IS`], the page as it is (an incompressible page).
    Pool {
        handle: Handle,
        length: u16,
        codec: FrameTag,
    },
    /// Every 8-byte word is this value (native-endian); nothing in the pool.
    Filled(u64),
    /// Written back: on the device under `key`, with this checksum of key and page.
    Device { key: u64, checksum: u32 },
    /// Page `index` of a folio's frame, shared with the folio's other pages.
    Folio {
        folio: std::sync::Arc<Folio>,
        index: u32,
    },
    /// Invalidated or replaced: a load that finds it looks the offset up again.
    Dead,
}

/// The length of an object that holds its page as it is, an incompressible page: as zswap
/// tells one (`entry->length == PAGE_SIZE` in `zswap_decompress`), for a frame is kept only
/// where it is shorter than the page.
pub(crate) const AS_IS: u16 = PAGE_SIZE as u16;

/// One offset's entry (`struct zswap_entry`), a slot of the tier's slab (`slab.rs`): reached
/// only through an [`EntryRef`](crate::slab::EntryRef), which checks the slot's generation
/// under its lock. Its lock guards the object: nothing reads the object without holding it,
/// nothing frees it without holding it for writing.
pub(crate) struct Entry {
    /// The state; only `slab.rs` touches it, through a handle's generation check.
    pub(crate) lock: RwLock<State>,
    /// Moved on whenever the slot's entry ends (replaced in the slot, or killed), under its
    /// lock held for writing, the index's lock of its offset and the lists' lock: a handle of
    /// an older generation finds the slot dead.
    pub(crate) generation: AtomicU32,
    /// The slots before and after it in its list (`lru.rs`), changed only under the lists'
    /// lock.
    pub(crate) prev: AtomicU32,
    pub(crate) next: AtomicU32,
    /// Its marks and which list it is in, in one byte ([`Marks`]).
    pub(crate) marks: Marks,
}

impl Default for Entry {
    /// An empty slot: dead, generation 0, in no list, no marks.
    fn default() -> Self {
        Entry {
            lock: RwLock::new(State::Dead),
            generation: AtomicU32::new(0),
            prev: AtomicU32::new(0),
            next: AtomicU32::new(0),
            marks: Marks::default(),
        }
    }
}

impl Entry {
    /// Makes a slot a new entry, its marks clear; the caller holds its lock for writing and
    /// has written the new state.
    ///
    /// It keeps no offset: whoever takes it out of a list learns it from the state, under
    /// its lock ([`State::owner`]).
    pub(crate) fn reset(&self) {
        self.marks.clear_all();
    }
}

/// One of an entry's marks, a bit of [`Marks`]. Each is set and cleared alone, by an atomic
/// read-modify-write of the byte, so that setting one never undoes another set at once on
/// the same entry; all are `Relaxed`, as the separate flags they replace were: the entry's
/// lock orders what must be ordered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Mark {
    /// Loaded since the shrinker last passed it over (zswap's `entry->referenced`).
    Referenced = 1 << 2,
    /// zram's idle mark (`ZRAM_IDLE`).
    Idle = 1 << 3,
    /// Recompression tried it since the store (zram's `ZRAM_INCOMPRESSIBLE` for its
    /// recompression).
    Tried = 1 << 4,
    /// A clean copy ([`crate::Zswap::load_clean`]): set under the entry's lock held for
    /// reading or writing, cleared and acted on only under it held for writing.
    Clean = 1 << 5,
}

/// An entry's marks ([`Mark`]) and, in the two low bits, the list it is in (0 none, else
/// `lru.rs`'s list number), which only the lists' lock changes.
#[derive(Debug, Default)]
pub(crate) struct Marks(AtomicU8);

/// The bits of the list number.
const LIST: u8 = 0b11;

impl Marks {
    /// Whether `m` is set.
    pub(crate) fn get(&self, m: Mark) -> bool {
        self.0.load(Relaxed) & m as u8 != 0
    }

    /// Sets `m`; returns whether it was set before.
    pub(crate) fn set(&self, m: Mark) -> bool {
        self.0.fetch_or(m as u8, Relaxed) & m as u8 != 0
    }

    /// Clears `m`; returns whether it was set before.
    pub(crate) fn clear(&self, m: Mark) -> bool {
        self.0.fetch_and(!(m as u8), Relaxed) & m as u8 != 0
    }

    /// A load: the entry is referenced and no longer idle. Most loads find it so already:
    /// a read, not a write that moves the cache line (zswap stores `referenced` on every
    /// load).
    pub(crate) fn loaded(&self) {
        let b = self.0.load(Relaxed);
        if b & Mark::Referenced as u8 == 0 {
            self.set(Mark::Referenced);
        }
        if b & Mark::Idle as u8 != 0 {
            self.clear(Mark::Idle);
        }
    }

    /// Clears every mark, keeping the list number.
    fn clear_all(&self) {
        self.0.fetch_and(LIST, Relaxed);
    }

    /// The list it is in: 0 for none. Changed only under the lists' lock.
    pub(crate) fn list(&self) -> u8 {
        self.0.load(Relaxed) & LIST
    }

    /// Records that it is in list `list` (0: none), under the lists' lock; returns the
    /// list it was in.
    pub(crate) fn set_list(&self, list: u8) -> u8 {
        debug_assert!(list <= LIST);
        // Only the lists' lock changes these bits: no other write of them can come between
        // the load and the flip, which leaves the marks (changed by anyone) as they are.
        let old = self.list();
        if old != list {
            self.0.fetch_xor(old ^ list, Relaxed);
        }
        old
    }
}

impl State {
    /// The handle and length of a frame of the tier's own transform in the pool: what
    /// recompression takes (not a page kept as it is, not a frame recompressed already, not
    /// a folio's).
    pub(crate) fn primary_frame(&self) -> Option<(&Handle, u16)> {
        match self {
            State::Pool {
                handle,
                length,
                codec: FrameTag::Primary,
            } if *length != AS_IS => Some((handle, *length)),
            _ => None,
        }
    }

    /// The offset whose entry holds this state, where it is in the pool (the only entries
    /// in the lists): a frame's object carries its store's offset as its owner's tag
    /// (`pool_owner` reads it), a folio's page is the folio's first offset plus its index;
    /// `None` for the others, which no list holds.
    pub(crate) fn owner(&self, pool_owner: impl FnOnce(&Handle) -> u64) -> Option<u64> {
        match self {
            State::Pool { handle, .. } => Some(pool_owner(handle)),
            State::Folio { folio, index } => Some(folio.first + u64::from(*index)),
            State::Filled(_) | State::Device { .. } | State::Dead => None,
        }
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
    /// transform's (a unit of idle pages, `src/recompress/unit.rs`).
    pub(crate) codec: FrameTag,
    /// Bytes of the frame.
    pub(crate) length: usize,
    /// The frame in page-sized objects and a tail; empty once freed.
    pub(crate) chunks: RwLock<Vec<Handle>>,
    /// Pages it still serves: the last to leave frees the frame.
    pub(crate) live: AtomicUsize,
}

/// Folio ids, over every tier: a copy of one folio's bytes never matches another's.
static NEXT_ID: AtomicU64 = AtomicU64::new(1);

impl Folio {
    /// A new folio's frame of `length` bytes in `chunks`, written by `codec`'s transform,
    /// with a new id: `pages` page slots from `first`, `members` of them served (all of
    /// them, the frame's last reader, for now).
    pub(crate) fn new(
        first: u64,
        pages: usize,
        members: usize,
        codec: FrameTag,
        length: usize,
        chunks: Vec<Handle>,
    ) -> Folio {
        Folio {
            id: NEXT_ID.fetch_add(1, Relaxed),
            first,
            pages,
            members,
            codec,
            length,
            chunks: RwLock::new(chunks),
            live: AtomicUsize::new(members),
        }
    }

    /// What it tells a caller of itself.
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
        // A pool handle of 12 bytes: `State` 16 (`Pool`'s handle, its `u16` length and its
        // transform's byte; `Folio`'s `Arc` and `u32` index), an entry 40 (issue 51: its
        // lock 8, the state, generation and links 12, the marks 1, padded to 8), and a slot
        // of the slab no more than its entry.
        assert_eq!(std::mem::size_of::<State>(), 16);
        assert_eq!(std::mem::size_of::<Entry>(), 40);
    }
}
