//! Size classes and zspages (zsmalloc's `size_class` and `zspage`): each class's geometry,
//! its zspages' bookkeeping.

use std::collections::BTreeSet;

use parking_lot::Mutex;

use super::arena::BackingPage;
use super::{CLASS_DELTA, Handle, MAX_PAGES_PER_ZSPAGE, MIN_ALLOC_SIZE, PAGE_SIZE};

/// The geometry of one size class.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ClassInfo {
    /// Bytes each object takes.
    pub size: usize,
    /// Backing pages per zspage.
    pub pages_per_zspage: usize,
    /// Objects per zspage.
    pub objs_per_zspage: usize,
}

impl ClassInfo {
    /// The class of index `i`, with the zspage length that wastes the least, as
    /// zsmalloc's `get_pages_per_zspage` picks it (the first best, so the shortest).
    pub(super) fn new(i: usize) -> Self {
        let size = MIN_ALLOC_SIZE + i * CLASS_DELTA;
        let used = |pages: usize| (pages * PAGE_SIZE) / size * size * 100 / (pages * PAGE_SIZE);
        let pages_per_zspage = (1..=MAX_PAGES_PER_ZSPAGE)
            .rev()
            .max_by_key(|&p| used(p))
            .expect("at least one length");
        ClassInfo {
            size,
            pages_per_zspage,
            objs_per_zspage: pages_per_zspage * PAGE_SIZE / size,
        }
    }
}

/// The index of the class that holds `size` bytes.
pub(super) fn class_index(size: usize) -> usize {
    size.max(MIN_ALLOC_SIZE)
        .saturating_sub(MIN_ALLOC_SIZE)
        .div_ceil(CLASS_DELTA)
}

/// A zspage's bookkeeping, under its class's lock.
pub(super) struct Zspage {
    pub(super) pages: Vec<BackingPage>,
    /// Indices of its free objects.
    pub(super) free: Vec<u16>,
    /// The owner's tag of each object (meaningless for free ones).
    pub(super) owners: Vec<u64>,
}

/// A class's bookkeeping: its zspages by id, and which have free objects.
pub(super) struct ClassState {
    pub(super) zspages: Vec<Option<Zspage>>,
    /// Ids in `zspages` that are empty, to reuse before growing the vector.
    pub(super) vacant: Vec<u32>,
    /// Zspages with at least one free object, keyed by (free objects, id): the first is the
    /// fullest, where allocation goes (zsmalloc's fullness groups), the last the emptiest,
    /// which compaction drains.
    pub(super) partial: BTreeSet<(u16, u32)>,
}

impl ClassState {
    pub(super) fn free_count(&self, id: u32) -> u16 {
        self.zspages[id as usize]
            .as_ref()
            .map_or(0, |z| z.free.len() as u16)
    }
}

/// A size class: its geometry and its bookkeeping (zsmalloc's `struct size_class`).
pub(super) struct SizeClass {
    pub(super) info: ClassInfo,
    pub(super) state: Mutex<ClassState>,
}

impl SizeClass {
    /// The handle of object `obj` of zspage `id`.
    pub(super) fn handle(&self, index: usize, id: u32, zspage: &Zspage, obj: u16) -> Handle {
        let off = obj as usize * self.info.size;
        let (page, in_page) = (off / PAGE_SIZE, off % PAGE_SIZE);
        Handle {
            first: zspage.pages[page].clone(),
            second: (in_page + self.info.size > PAGE_SIZE).then(|| zspage.pages[page + 1].clone()),
            class: index as u16,
            zspage: id,
            obj,
        }
    }
}
