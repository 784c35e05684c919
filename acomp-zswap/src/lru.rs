//! The lists of the entries' slots (`slab.rs`), intrusive in the slots themselves: the LRU
//! of pool entries (zswap's `list_lru`), the clean copies ([`crate::Zswap::load_clean`])
//! that the shrinker (`shrink.rs`) drops first, and the free slots. The LRU and the clean
//! list are doubly linked through each slot's [`Links`](crate::entry::Links) by slot
//! number, so that putting an entry in or taking it out costs O(1) and allocates nothing;
//! the free slots are a stack. A leaf over the slots: the slab holds the one lock they are
//! all changed under.

use std::sync::atomic::Ordering::Relaxed;

use crate::entry::Entry;

/// No slot: the end of a list.
const NIL: u32 = u32::MAX;

/// The slots of the tier, by number.
pub(crate) type Slots = boxcar::Vec<Entry>;

/// One of the two linked lists, as `Links::list` records it (0 is neither).
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
        if e.clean.load(Relaxed) {
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
    free: Vec<u32>,
}

fn at(slots: &Slots, i: u32) -> &Entry {
    &slots[i as usize]
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
        self.unlink(slots, i);
        let links = &at(slots, i).links;
        let list = self.list(which);
        links.prev.store(list.tail, Relaxed);
        links.next.store(NIL, Relaxed);
        match list.tail {
            NIL => list.head = i,
            t => at(slots, t).links.next.store(i, Relaxed),
        }
        list.tail = i;
        list.len += 1;
        links.list.store(which as u8, Relaxed);
    }

    /// Takes slot `i` out of its list, if it is in one; returns which.
    pub(crate) fn unlink(&mut self, slots: &Slots, i: u32) -> Option<Which> {
        let links = &at(slots, i).links;
        let which = match links.list.swap(0, Relaxed) {
            0 => return None,
            1 => Which::Lru,
            _ => Which::Clean,
        };
        let (prev, next) = (links.prev.load(Relaxed), links.next.load(Relaxed));
        let list = self.list(which);
        match prev {
            NIL => list.head = next,
            p => at(slots, p).links.next.store(next, Relaxed),
        }
        match next {
            NIL => list.tail = prev,
            n => at(slots, n).links.prev.store(prev, Relaxed),
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

    /// A free slot to reuse, if one is left.
    pub(crate) fn pop_free(&mut self) -> Option<u32> {
        self.free.pop()
    }

    /// Slot `i` is free (out of both lists already).
    pub(crate) fn push_free(&mut self, i: u32) {
        self.free.push(i);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::entry::State;

    fn slots(n: u64) -> Slots {
        let slots = Slots::new();
        (0..n).for_each(|o| {
            slots.push(Entry::new(o, State::Dead));
        });
        slots
    }

    fn drain(lists: &mut Lists, slots: &Slots, which: Which) -> Vec<u32> {
        std::iter::from_fn(|| lists.pop(slots, which)).collect()
    }

    #[test]
    fn a_list_gives_its_slots_coldest_first_and_unlinks_any_of_them() {
        let s = slots(5);
        let mut l = Lists::default();
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
        assert!((0..5).all(|i| s[i].links.list.load(Relaxed) == 0));
    }

    #[test]
    fn free_slots_are_reused_last_freed_first() {
        let mut l = Lists::default();
        l.push_free(3);
        l.push_free(1);
        assert_eq!(
            (l.pop_free(), l.pop_free(), l.pop_free()),
            (Some(1), Some(3), None)
        );
    }
}
