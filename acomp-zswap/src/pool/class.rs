//! Size classes and zspages (zsmalloc's `size_class` and `zspage`): each class's geometry,
//! its zspages' bookkeeping.

use parking_lot::Mutex;

use super::arena::BackingPage;
use super::{CLASS_DELTA, Handle, MAX_PAGES_PER_ZSPAGE, MIN_ALLOC_SIZE, NO_PAGE, PAGE_SIZE};

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

/// zsmalloc's `enum fullness_group`: a zspage's group by the share of its objects in use,
/// `ZS_INUSE_RATIO_0` (none: a zspage so empty is released at once, so no list holds one),
/// then one group per 10% (`ZS_INUSE_RATIO_10` for under 10% .. `ZS_INUSE_RATIO_99` for 90%
/// and more, but not all), and `ZS_INUSE_RATIO_100` (full).
pub(super) const ZS_INUSE_RATIO_0: usize = 0;
/// Zspages with under 10% of their objects in use, but at least one.
pub(super) const ZS_INUSE_RATIO_10: usize = 1;
/// Zspages with 90% or more of their objects in use, but not all.
pub(super) const ZS_INUSE_RATIO_99: usize = 10;
/// Full zspages.
pub(super) const ZS_INUSE_RATIO_100: usize = 11;
/// Fullness groups, each a list.
pub(super) const NR_FULLNESS_GROUPS: usize = 12;

/// No zspage: the end of a list.
const NIL: u32 = u32::MAX;

/// zsmalloc's `get_fullness_group`: the group of a zspage with `inuse` of its `objs`
/// objects in use.
pub(super) fn fullness_group(inuse: usize, objs: usize) -> usize {
    if inuse == 0 {
        ZS_INUSE_RATIO_0
    } else if inuse == objs {
        ZS_INUSE_RATIO_100
    } else {
        // 1 of 127 objects is a ratio of 0, yet belongs in `ZS_INUSE_RATIO_10`: hence + 1.
        100 * inuse / objs / 10 + 1
    }
}

/// A zspage's bookkeeping, under its class's lock.
pub(super) struct Zspage {
    pub(super) pages: Vec<BackingPage>,
    /// Indices of its free objects.
    pub(super) free: Vec<u16>,
    /// The owner's tag of each object (meaningless for free ones).
    pub(super) owners: Vec<u64>,
    /// Its fullness group, and its neighbours in that group's list (intrusive, as
    /// zsmalloc's `zspage->list`): zspage ids, [`NIL`] at either end.
    group: u8,
    prev: u32,
    next: u32,
}

impl Zspage {
    /// A zspage of `pages`, in no list yet ([`ClassState::insert_zspage`]).
    pub(super) fn new(pages: Vec<BackingPage>, free: Vec<u16>, owners: Vec<u64>) -> Self {
        Zspage {
            pages,
            free,
            owners,
            group: ZS_INUSE_RATIO_0 as u8,
            prev: NIL,
            next: NIL,
        }
    }
}

/// A class's bookkeeping: its zspages by id, and each fullness group's list of them
/// (zsmalloc's `class->fullness_list`).
pub(super) struct ClassState {
    pub(super) zspages: Vec<Option<Zspage>>,
    /// Ids in `zspages` that are empty, to reuse before growing the vector.
    pub(super) vacant: Vec<u32>,
    /// The head of each fullness group's list, [`NIL`] where it is empty. Every zspage is
    /// on the list of its group; allocation takes the head of the fullest group with room
    /// ([`ClassState::find_get_zspage`]), compaction drains the emptiest groups.
    fullness: [u32; NR_FULLNESS_GROUPS],
}

impl Default for ClassState {
    fn default() -> Self {
        ClassState {
            zspages: Vec::new(),
            vacant: Vec::new(),
            fullness: [NIL; NR_FULLNESS_GROUPS],
        }
    }
}

impl ClassState {
    pub(super) fn zspage(&self, id: u32) -> &Zspage {
        self.zspages[id as usize]
            .as_ref()
            .expect("a zspage in a list or with an object in use exists")
    }

    pub(super) fn zspage_mut(&mut self, id: u32) -> &mut Zspage {
        self.zspages[id as usize]
            .as_mut()
            .expect("a zspage in a list or with an object in use exists")
    }

    /// Puts zspage `id` at the head of group `group`'s list (`insert_zspage`).
    fn insert_zspage(&mut self, id: u32, group: usize) {
        let head = self.fullness[group];
        if head != NIL {
            self.zspage_mut(head).prev = id;
        }
        let z = self.zspage_mut(id);
        (z.group, z.prev, z.next) = (group as u8, NIL, head);
        self.fullness[group] = id;
    }

    /// Takes zspage `id` off its group's list (`remove_zspage`).
    pub(super) fn remove_zspage(&mut self, id: u32) {
        let z = self.zspage(id);
        let (group, prev, next) = (z.group as usize, z.prev, z.next);
        if prev == NIL {
            debug_assert_eq!(
                self.fullness[group], id,
                "a zspage heads its list or has a prev"
            );
            self.fullness[group] = next;
        } else {
            self.zspage_mut(prev).next = next;
        }
        if next != NIL {
            self.zspage_mut(next).prev = prev;
        }
    }

    /// Moves zspage `id` (of `objs` objects) to the group its objects in use put it in
    /// (`fix_fullness_group`), at its list's head where it changes group. A zspage new to
    /// the class ([`Zspage::new`], in no list) is put in one.
    pub(super) fn fix_fullness_group(&mut self, id: u32, objs: usize) {
        let z = self.zspage(id);
        let group = fullness_group(objs - z.free.len(), objs);
        let old = z.group as usize;
        if old == group {
            return;
        }
        if old != ZS_INUSE_RATIO_0 {
            self.remove_zspage(id);
        }
        self.insert_zspage(id, group);
    }

    /// The zspage allocation takes an object from (`find_get_zspage`): the head of the
    /// fullest group with room, other than `except`.
    pub(super) fn find_get_zspage(&self, except: Option<u32>) -> Option<u32> {
        (ZS_INUSE_RATIO_10..=ZS_INUSE_RATIO_99)
            .rev()
            .find_map(|g| self.list(g).find(|&id| Some(id) != except))
    }

    /// The zspages of group `group`, from its list's head.
    pub(super) fn list(&self, group: usize) -> impl Iterator<Item = u32> + '_ {
        let mut at = self.fullness[group];
        std::iter::from_fn(move || {
            (at != NIL).then(|| {
                let id = at;
                at = self.zspage(id).next;
                id
            })
        })
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
            first: zspage.pages[page],
            second: if in_page + self.info.size > PAGE_SIZE {
                zspage.pages[page + 1]
            } else {
                NO_PAGE
            },
            zspage: id,
            class: index as u16,
            obj,
        }
    }
}
