//! Size classes and zspages (zsmalloc's `size_class` and `zspage`): each class's geometry,
//! its zspages' bookkeeping.

use parking_lot::Mutex;

use super::arena::BackingPage;
use super::{CLASS_DELTA, Handle, MAX_PAGES_PER_ZSPAGE, MIN_ALLOC_SIZE, PAGE_SIZE};
pub(super) use fullness::{
    NR_FULLNESS_GROUPS, ZS_INUSE_RATIO_0, ZS_INUSE_RATIO_10, ZS_INUSE_RATIO_99, ZS_INUSE_RATIO_100,
    fullness_group,
};
use rows::{Rows, page_of};

mod fullness;
mod rows;

/// No page: the rest of [`ClassState::close`]'s array past the zspage's own.
const NO_PAGE: BackingPage = BackingPage(u32::MAX);

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

/// No zspage: the end of a list.
const NIL: u32 = u32::MAX;

/// No object: the end of a zspage's free list.
const END: u16 = u16::MAX;
const _: () = assert!(MAX_PAGES_PER_ZSPAGE * PAGE_SIZE / MIN_ALLOC_SIZE < END as usize);

/// A zspage's head (zsmalloc's `struct zspage`), 16 bytes, under its class's lock: its
/// place in its fullness group's list, its objects in use and the first of its free
/// objects. Its pages and its objects' owners are its row of [`Rows::words`].
#[derive(Clone, Copy)]
pub(super) struct Zspage {
    /// Its neighbours in its group's list (intrusive, as zsmalloc's `zspage->list`):
    /// zspage ids, [`NIL`] at either end. A vacant id's `next` is the next vacant one.
    prev: u32,
    next: u32,
    /// Objects in use: 0 for a vacant id (a zspage with none is released at once).
    inuse: u16,
    /// Its first free object, [`END`] where none is: the free objects are a list through
    /// their owner words (zsmalloc keeps its free list in the free objects' own bytes, a
    /// write into the object at every free; here the owner's word, which a free object has
    /// no use for, holds the next one's index).
    free: u16,
    /// Its fullness group.
    group: u8,
}

impl Default for Zspage {
    fn default() -> Self {
        Zspage {
            prev: NIL,
            next: NIL,
            inuse: 0,
            free: END,
            group: ZS_INUSE_RATIO_0 as u8,
        }
    }
}

/// A class's bookkeeping: its zspages by id ([`Rows`]), the vacant ids, and each fullness
/// group's list of them (zsmalloc's `class->fullness_list`).
pub(super) struct ClassState {
    rows: Rows,
    /// The first vacant id (a zspage released), [`NIL`] where none: reused before a new one,
    /// the rest linked through their heads' `next`.
    vacant: u32,
    /// The head of each fullness group's list, [`NIL`] where it is empty. Every zspage with
    /// room is on the list of its group; allocation takes the head of the fullest group with
    /// room ([`ClassState::find_get_zspage`]), compaction drains the emptiest groups. Full
    /// zspages (`ZS_INUSE_RATIO_100`) are on no list: nothing looks for one (zsmalloc keeps
    /// them on a list too, which here would cost a free that opens a full zspage the misses
    /// of its two neighbours there).
    fullness: [u32; NR_FULLNESS_GROUPS],
    /// The class's objects per zspage, and `2^32 / objs + 1`: a zspage's group is
    /// `10 * inuse / objs + 1` ([`fullness_group`]), taken as a multiply and a shift where
    /// a division by `objs` costs tens of cycles (exact for `10 * inuse` below 2^32 /
    /// `objs`, here at most 10,240).
    objs: u32,
    recip: u64,
}

impl ClassState {
    pub(super) fn new(info: &ClassInfo) -> Self {
        let objs = info.objs_per_zspage as u32;
        ClassState {
            rows: Rows::new(info),
            vacant: NIL,
            fullness: [NIL; NR_FULLNESS_GROUPS],
            objs,
            recip: (1 << 32) / u64::from(objs) + 1,
        }
    }

    /// [`fullness_group`] of a zspage of this class with `inuse` objects in use.
    #[inline]
    pub(super) fn group_of(&self, inuse: u16) -> usize {
        let inuse = u32::from(inuse);
        let group = if inuse == 0 {
            ZS_INUSE_RATIO_0
        } else if inuse == self.objs {
            ZS_INUSE_RATIO_100
        } else {
            ((u64::from(10 * inuse) * self.recip) >> 32) as usize + 1
        };
        debug_assert_eq!(group, fullness_group(inuse as usize, self.objs as usize));
        group
    }

    /// Opens a zspage of `pages` whose object 0 goes to `owner`, the others free (popped
    /// lowest first), in a vacant id or a new one; returns its id, in its fullness group.
    pub(super) fn open(&mut self, pages: &[BackingPage], objs: usize, owner: u64) -> u32 {
        let id = match self.vacant {
            NIL => self.rows.push(),
            id => {
                self.vacant = self.rows.head(id).next;
                id
            }
        };
        let page_words = self.rows.page_words;
        let (head, words) = self.rows.row_mut(id);
        words[..page_words].fill(0);
        for (i, p) in pages.iter().enumerate() {
            words[i / 2] |= u64::from(p.0) << (32 * (i % 2));
        }
        let owners = &mut words[page_words..];
        owners[0] = owner;
        for (o, w) in owners.iter_mut().enumerate().skip(1) {
            *w = if o + 1 < objs {
                o as u64 + 1
            } else {
                END as u64
            };
        }
        *head = Zspage {
            inuse: 1,
            free: if objs > 1 { 1 } else { END },
            ..Zspage::default()
        };
        self.fix_fullness_group(id, objs);
        id
    }

    /// Takes zspage `id`'s first free object for `owner`; returns its index.
    ///
    /// # Panics
    ///
    /// Where the zspage has no free object.
    pub(super) fn take_object(&mut self, id: u32, owner: u64) -> u16 {
        let page_words = self.rows.page_words;
        let (head, words) = self.rows.row_mut(id);
        let obj = head.free;
        assert_ne!(obj, END, "a zspage in a group with room has a free object");
        let w = &mut words[page_words + obj as usize];
        head.free = *w as u16;
        *w = owner;
        head.inuse += 1;
        obj
    }

    /// Puts object `obj` of zspage `id` back on its free list; returns the objects still in
    /// use.
    pub(super) fn put_object(&mut self, id: u32, obj: u16) -> usize {
        #[cfg(debug_assertions)]
        {
            // The list ends within the zspage's objects (`free_objects` stops there), so a
            // broken one fails here rather than looping.
            let mut walked = 0;
            for o in self.free_objects(id) {
                assert_ne!(o, obj, "a handle is freed once");
                walked += 1;
            }
            assert_eq!(
                walked,
                self.objs as usize - self.inuse(id),
                "zspage {id}'s free list holds its free objects"
            );
        }
        let page_words = self.rows.page_words;
        let (head, words) = self.rows.row_mut(id);
        debug_assert!(head.inuse > 0, "an object of a zspage in use");
        words[page_words + obj as usize] = u64::from(head.free);
        head.free = obj;
        head.inuse -= 1;
        head.inuse as usize
    }

    /// Closes zspage `id`, whose objects are all free: out of its list, its id vacant.
    /// Returns its pages.
    pub(super) fn close(&mut self, id: u32, nr: usize) -> [BackingPage; MAX_PAGES_PER_ZSPAGE] {
        self.remove_zspage(id);
        let mut pages = [NO_PAGE; MAX_PAGES_PER_ZSPAGE];
        let words = self.rows.words(id);
        for (i, p) in pages.iter_mut().enumerate().take(nr) {
            *p = page_of(words, i);
        }
        let vacant = self.vacant;
        *self.rows.head_mut(id) = Zspage {
            next: vacant,
            ..Zspage::default()
        };
        self.vacant = id;
        pages
    }

    /// Bytes of the class's zspages' bookkeeping (for the `inspect` feature).
    #[cfg(feature = "inspect")]
    pub(super) fn bytes(&self) -> usize {
        self.rows.bytes()
    }

    /// Whether `id` is a zspage in use (not vacant, not beyond the ids made).
    pub(super) fn in_use(&self, id: u32) -> bool {
        id < self.rows.len && self.rows.head(id).inuse > 0
    }

    /// Objects of zspage `id` in use.
    pub(super) fn inuse(&self, id: u32) -> usize {
        self.rows.head(id).inuse as usize
    }

    /// The owner's tag of object `obj` of zspage `id`, which is in use.
    pub(super) fn owner(&self, id: u32, obj: u16) -> u64 {
        self.rows.words(id)[self.rows.page_words + obj as usize]
    }

    /// Page `i` of zspage `id` (for tests: a handle names its own pages).
    #[cfg(test)]
    pub(super) fn page(&self, id: u32, i: usize) -> BackingPage {
        page_of(self.rows.words(id), i)
    }

    /// The free objects of zspage `id`, from the first one allocation takes; at most the
    /// class's objects a zspage (a list that does not end there is broken, and the walk
    /// stops rather than loops).
    pub(super) fn free_objects(&self, id: u32) -> impl Iterator<Item = u16> + '_ {
        let owners = &self.rows.words(id)[self.rows.page_words..];
        let mut at = self.rows.head(id).free;
        std::iter::from_fn(move || {
            (at != END).then(|| {
                let obj = at;
                at = owners[obj as usize] as u16;
                obj
            })
        })
        .take(self.objs as usize)
    }
}

/// A size class: its geometry and its bookkeeping (zsmalloc's `struct size_class`).
pub(super) struct SizeClass {
    pub(super) info: ClassInfo,
    pub(super) state: Mutex<ClassState>,
}

impl SizeClass {
    /// The page of its zspage object `obj` starts in, and where in it.
    fn object_page(&self, obj: u16) -> (usize, usize) {
        let off = obj as usize * self.info.size;
        (off / PAGE_SIZE, off % PAGE_SIZE)
    }

    /// The handle of object `obj` of zspage `id`.
    pub(super) fn handle(&self, state: &ClassState, index: usize, id: u32, obj: u16) -> Handle {
        let (page, in_page) = self.object_page(obj);
        let words = state.rows.words(id);
        let second = (in_page + self.info.size > PAGE_SIZE).then(|| page_of(words, page + 1));
        Handle::new(page_of(words, page), second, id, index, obj)
    }

    /// The page after the one object `obj` of zspage `id` starts in, read from the zspage's
    /// row under the class's lock: the second page of an object that straddles two.
    pub(super) fn page_after(&self, id: u32, obj: u16) -> BackingPage {
        let (page, _) = self.object_page(obj);
        page_of(self.state.lock().rows.words(id), page + 1)
    }
}
