//! The lists of the entries' slots (`slab.rs`), intrusive in the slots themselves: the LRU
//! of pool entries (zswap's `list_lru`), the clean copies ([`crate::Zswap::load_clean`])
//! that the shrinker (`shrink.rs`) drops first, and the free slots. The LRU and the clean
//! list are doubly linked through each slot's `prev` and `next` by slot number, the list's
//! number in its [`Marks`](super::entry::Marks), so that putting an entry in or taking it
//! out costs O(1) and allocates nothing; the free slots are a stack, and the count of slots
//! ever taken gives the next new one. A leaf over the slots: the slab holds the one lock
//! they are all changed under.

use std::sync::atomic::Ordering::Relaxed;

use super::GROUP;
use super::entry::{Entry, Mark};
use super::slots::MAX_SLOTS;
pub(crate) use super::slots::Slots;

/// No slot: the end of a list.
const NIL: u32 = u32::MAX;

/// One of the two linked lists, as `Marks::list` records it (0 is neither).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Which {
    /// Pool entries, coldest first: the writeback's.
    Lru = 1,
    /// Clean copies, oldest first: dropped at the budget, never written back.
    Clean = 2,
}

impl Which {
    /// The list an entry's clean mark names.
    pub(crate) fn of(e: &Entry) -> Which {
        if e.marks.get(Mark::Clean) {
            Which::Clean
        } else {
            Which::Lru
        }
    }
}

/// A doubly linked list of slots: the coldest at `head`.
#[derive(Debug)]
struct List {
    head: u32,
    tail: u32,
    len: usize,
}

impl Default for List {
    fn default() -> Self {
        List {
            head: NIL,
            tail: NIL,
            len: 0,
        }
    }
}

/// The LRU, the clean list and the free slots.
#[derive(Debug, Default)]
pub(crate) struct Lists {
    lru: List,
    clean: List,
    /// Free groups, by their first slot.
    free: Vec<u32>,
    /// Slots ever taken, in whole groups: the next new group's first slot.
    taken: u32,
}

fn at(slots: &Slots, i: u32) -> &Entry {
    slots.get(i)
}

impl Lists {
    fn list(&mut self, which: Which) -> &mut List {
        match which {
            Which::Lru => &mut self.lru,
            Which::Clean => &mut self.clean,
        }
    }

    /// Puts slot `i` at the young end of `which`, out of the list it was in.
    pub(crate) fn push(&mut self, slots: &Slots, i: u32, which: Which) {
        let e = at(slots, i);
        self.unlink_entry(slots, e);
        let list = self.list(which);
        e.prev.store(list.tail, Relaxed);
        e.next.store(NIL, Relaxed);
        match list.tail {
            NIL => list.head = i,
            t => at(slots, t).next.store(i, Relaxed),
        }
        list.tail = i;
        list.len += 1;
        e.marks.set_list(which as u8);
    }

    /// Takes slot `i` out of its list, if it is in one; returns which.
    pub(crate) fn unlink(&mut self, slots: &Slots, i: u32) -> Option<Which> {
        self.unlink_entry(slots, at(slots, i))
    }

    /// [`Lists::unlink`] of the slot whose entry is `e`.
    fn unlink_entry(&mut self, slots: &Slots, e: &Entry) -> Option<Which> {
        let which = match e.marks.set_list(0) {
            0 => return None,
            1 => Which::Lru,
            _ => Which::Clean,
        };
        let (prev, next) = (e.prev.load(Relaxed), e.next.load(Relaxed));
        let list = self.list(which);
        match prev {
            NIL => list.head = next,
            p => at(slots, p).next.store(next, Relaxed),
        }
        match next {
            NIL => list.tail = prev,
            n => at(slots, n).prev.store(prev, Relaxed),
        }
        list.len -= 1;
        Some(which)
    }

    /// Takes the coldest slot of `which` out of it.
    pub(crate) fn pop(&mut self, slots: &Slots, which: Which) -> Option<u32> {
        let head = self.list(which).head;
        (head != NIL).then(|| {
            self.unlink(slots, head);
            head
        })
    }

    /// Slots in `which`.
    pub(crate) fn len(&self, which: Which) -> usize {
        match which {
            Which::Lru => self.lru.len,
            Which::Clean => self.clean.len,
        }
    }

    /// A group of [`GROUP`] slots for a run of the index: the last freed, else the next new
    /// one, its chunk made here where it is the chunk's first ([`Slots::make`]; a chunk holds
    /// whole groups), so that no one is given a slot of a chunk not made yet; `None` where
    /// all [`MAX_SLOTS`] are taken. Returns its first slot.
    pub(crate) fn take_group(&mut self, slots: &Slots) -> Option<u32> {
        self.free.pop().or_else(|| {
            let i = self.taken;
            (MAX_SLOTS - i >= GROUP as u32).then(|| {
                slots.make(i);
                self.taken = i + GROUP as u32;
                i
            })
        })
    }

    /// Bytes of the slot table's chunks made and of the free groups' stack (for the
    /// `inspect` feature).
    #[cfg(feature = "inspect")]
    pub(crate) fn bytes(&self, slots: &Slots) -> usize {
        slots.bytes(self.taken) + self.free.capacity() * size_of::<u32>()
    }

    /// The group whose first slot is `first` is free (its slots dead and out of both lists).
    pub(crate) fn free_group(&mut self, first: u32) {
        self.free.push(first);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A group of slots taken, as the slab takes them, for tests of `n` slots.
    fn slots(n: u32) -> (Slots, Lists) {
        assert!(n as usize <= GROUP);
        let (slots, mut lists) = (Slots::default(), Lists::default());
        assert_eq!(lists.take_group(&slots), Some(0));
        (slots, lists)
    }

    fn drain(lists: &mut Lists, slots: &Slots, which: Which) -> Vec<u32> {
        std::iter::from_fn(|| lists.pop(slots, which)).collect()
    }

    #[test]
    fn a_list_gives_its_slots_coldest_first_and_unlinks_any_of_them() {
        let (s, mut l) = slots(5);
        (0..5).for_each(|i| l.push(&s, i, Which::Lru));
        // From the middle, the head and the tail.
        assert_eq!(l.unlink(&s, 2), Some(Which::Lru));
        assert_eq!(l.unlink(&s, 0), Some(Which::Lru));
        assert_eq!(l.unlink(&s, 4), Some(Which::Lru));
        assert_eq!(l.unlink(&s, 4), None);
        assert_eq!(l.len(Which::Lru), 2);
        // A push of a slot in a list moves it: to the hot end, or to the other list.
        l.push(&s, 1, Which::Lru);
        l.push(&s, 0, Which::Clean);
        l.push(&s, 2, Which::Lru);
        assert_eq!(drain(&mut l, &s, Which::Lru), [3, 1, 2]);
        assert_eq!(drain(&mut l, &s, Which::Clean), [0]);
        assert_eq!((l.len(Which::Lru), l.len(Which::Clean)), (0, 0));
        assert!((0..5).all(|i| s.get(i).marks.list() == 0));
    }

    #[test]
    fn the_list_number_and_the_marks_share_a_byte_without_touching_each_other() {
        let (s, mut l) = slots(3);
        let e = s.get(1);
        e.marks.set(Mark::Referenced);
        e.marks.set(Mark::Tried);
        l.push(&s, 1, Which::Clean);
        l.push(&s, 1, Which::Lru);
        assert_eq!(e.marks.list(), Which::Lru as u8);
        // The marks survive the list's moves, and the list number survives the marks'.
        assert!(e.marks.get(Mark::Referenced) && e.marks.get(Mark::Tried));
        assert!(!e.marks.get(Mark::Idle) && !e.marks.get(Mark::Clean));
        e.marks.set(Mark::Clean);
        e.marks.clear(Mark::Referenced);
        e.marks.loaded();
        assert_eq!(e.marks.list(), Which::Lru as u8);
        assert_eq!(l.unlink(&s, 1), Some(Which::Lru));
        assert!(e.marks.get(Mark::Clean) && e.marks.get(Mark::Tried));
        // Its neighbours' bytes are their own.
        assert_eq!((s.get(0).marks.list(), s.get(2).marks.list()), (0, 0));
        assert!(!s.get(0).marks.get(Mark::Clean) && !s.get(2).marks.get(Mark::Clean));
    }

    #[test]
    fn groups_are_reused_last_freed_first_then_new_ones_follow_the_last_taken() {
        let (s, mut l) = slots(1);
        let g = GROUP as u32;
        assert_eq!((l.take_group(&s), l.take_group(&s)), (Some(g), Some(2 * g)));
        l.free_group(2 * g);
        l.free_group(0);
        assert_eq!(
            (l.take_group(&s), l.take_group(&s), l.take_group(&s)),
            (Some(0), Some(2 * g), Some(3 * g))
        );
    }

    #[test]
    fn no_group_is_given_out_beyond_the_tables_last_slot() {
        const { assert!(MAX_SLOTS < NIL) };
        const { assert!(MAX_SLOTS as usize % GROUP == 0) };
        let s = Slots::default();
        let last = MAX_SLOTS - GROUP as u32;
        let mut l = Lists {
            taken: last,
            ..Lists::default()
        };
        assert_eq!((l.take_group(&s), l.take_group(&s)), (Some(last), None));
        // The last group's chunk is made, to its last slot; a freed group is still given out.
        assert_eq!(s.get(MAX_SLOTS - 1).marks.list(), 0);
        l.free_group(7 * GROUP as u32);
        assert_eq!(
            (l.take_group(&s), l.take_group(&s)),
            (Some(7 * GROUP as u32), None)
        );
    }
}
