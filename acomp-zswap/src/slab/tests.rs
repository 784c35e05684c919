//! The slab's unit tests.

use super::*;
use crate::slab::{Folio, FrameTag, Mark};

fn filled(state: &State) -> Option<u64> {
    match state {
        State::Filled(w) => Some(*w),
        _ => None,
    }
}

/// Makes `slot` (dead, in no list) the entry of `offset` holding `state`, in the LRU where
/// `in_pool`, as the tier's store does under the index's lock.
fn fill(slab: &Slab, slot: u32, offset: u64, state: State, in_pool: bool) -> EntryRef<'_> {
    let e = slab.at(slot, offset);
    let mut w = e.write();
    let gone = slab.replace(&e, &mut w, state, in_pool);
    assert!(
        matches!(gone.state, State::Dead) && !gone.clean,
        "a slot not in use"
    );
    drop(w);
    slab.at(slot, offset)
}

#[test]
fn groups_taken_from_many_threads_at_once_each_hold_their_own_entries() {
    // Past the doubling chunks (4032 slots, 63 groups) into the fixed ones, the chunks made
    // by whichever thread takes their first group.
    // Under Miri, two threads just past the doubling chunks: it interprets every step.
    const THREADS: u64 = if cfg!(miri) { 2 } else { 4 };
    const GROUPS: u64 = if cfg!(miri) { 33 } else { 48 };
    let slab = Slab::default();
    let firsts: Vec<u32> = std::thread::scope(|s| {
        let workers: Vec<_> = (0..THREADS)
            .map(|_| {
                let slab = &slab;
                s.spawn(move || {
                    (0..GROUPS)
                        .map(|_| {
                            let first = slab.take_group();
                            for i in 0..GROUP as u32 {
                                let o = u64::from(first + i) * 3;
                                let e = fill(slab, first + i, o, State::Filled(o), false);
                                assert_eq!((e.offset, filled(&e.read())), (o, Some(o)));
                            }
                            first
                        })
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        workers
            .into_iter()
            .flat_map(|w| w.join().unwrap())
            .collect()
    });
    let mut sorted = firsts.clone();
    sorted.sort_unstable();
    let groups = (THREADS * GROUPS) as u32;
    assert_eq!(
        sorted,
        (0..groups).map(|g| g * GROUP as u32).collect::<Vec<_>>()
    );
    for slot in 0..groups * GROUP as u32 {
        let o = u64::from(slot) * 3;
        assert_eq!(filled(&slab.at(slot, o).read()), Some(o), "slot {slot}");
    }
}

/// Page `index` of a folio of 4 pages from `first`.
fn folio_page(first: u64, index: u32) -> State {
    State::Folio {
        folio: std::sync::Arc::new(Folio {
            id: first,
            first,
            pages: 4,
            members: 4,
            codec: FrameTag::Primary,
            length: 100,
            chunks: parking_lot::RwLock::new(Vec::new()),
            live: 4.into(),
        }),
        index,
    }
}

fn no_pool(_: &Handle) -> u64 {
    unreachable!("no entry here is a pool object")
}

#[test]
fn a_reused_group_starts_clear_and_its_old_handles_see_it_dead() {
    let slab = Slab::default();
    let first = slab.take_group();
    assert_eq!(first, 0);
    let old = fill(&slab, first + 1, 1, State::Filled(1), false);
    let other = fill(&slab, first + 2, 2, folio_page(0, 2), true);
    for m in [Mark::Referenced, Mark::Idle, Mark::Tried, Mark::Clean] {
        old.marks.set(m);
    }
    slab.push(&old);
    let gone = slab.kill(&old, &mut old.write());
    assert!(matches!(gone.state, State::Filled(1)) && gone.clean);
    assert_eq!(old.marks.list(), 0, "out of its list");
    slab.kill(&other, &mut other.write());
    slab.free_group(first);
    assert_eq!(slab.take_group(), first, "the freed group, reused");
    let new = fill(&slab, first + 1, 3, State::Filled(3), false);
    for m in [Mark::Referenced, Mark::Idle, Mark::Tried, Mark::Clean] {
        assert!(!new.marks.get(m), "{m:?} left from the slot's last entry");
    }
    assert_eq!(new.marks.list(), 0);
    assert!(matches!(*old.read(), State::Dead));
    assert!(matches!(*other.read(), State::Dead));
    assert_eq!(filled(&new.read()), Some(3));
    // The old handles never put the slots back in a list.
    slab.push(&old);
    slab.push(&other);
    assert_eq!((new.marks.list(), other.marks.list()), (0, 0));
    assert!(slab.isolate(4, no_pool).is_empty());
    assert_eq!(slab.take_group(), GROUP as u32, "then a new group");
}

#[test]
fn an_entry_replaced_in_its_slot_is_dead_to_its_old_handle_and_hot_in_the_lru() {
    let slab = Slab::default();
    let first = slab.take_group();
    let a = fill(&slab, first, 10, folio_page(10, 0), true);
    let b = fill(&slab, first + 1, 11, folio_page(10, 1), true);
    a.marks.set(Mark::Clean);
    a.marks.set(Mark::Idle);
    let gone = slab.replace(&a, &mut a.write(), folio_page(10, 0), true);
    let a2 = slab.at(a.slot, 10);
    assert!(matches!(gone.state, State::Folio { index: 0, .. }) && gone.clean);
    assert!(matches!(*a.read(), State::Dead), "the old handle");
    assert!(matches!(*a2.read(), State::Folio { index: 0, .. }));
    assert!(!a2.marks.get(Mark::Idle) && !a2.marks.get(Mark::Clean));
    // b is now the coldest: a's new entry went to the hot end.
    let cold = slab.isolate(1, no_pool);
    assert_eq!(cold.iter().map(|e| e.offset).collect::<Vec<_>>(), [11]);
    assert_eq!(cold[0].key(), b.key());
    // Replaced by a state outside the pool: out of the LRU.
    slab.replace(&a2, &mut a2.write(), State::Filled(7), false);
    assert!(slab.isolate(1, no_pool).is_empty());
}

#[test]
fn entries_taken_from_a_list_carry_the_offset_their_state_names() {
    let slab = Slab::default();
    // A folio's pages at 10 + index, each taken out with its own; a page gone from the
    // pool meanwhile (or freed) is left out, and leaves the list all the same.
    let first = slab.take_group();
    let pages: Vec<_> = (0..4)
        .map(|i| {
            fill(
                &slab,
                first + i,
                10 + u64::from(i),
                folio_page(10, i),
                false,
            )
        })
        .collect();
    let gone = fill(&slab, first + 7, 7, folio_page(4, 3), false);
    let freed = fill(&slab, first + 8, 8, folio_page(5, 3), false);
    for e in [&pages[..2], &[gone, freed], &pages[2..]].concat() {
        slab.push(&e);
    }
    *gone.write() = State::Filled(0);
    slab.kill(&freed, &mut freed.write());
    pages[3].marks.set(Mark::Referenced);
    // Four taken: three found, `gone` left out.
    let isolated = slab.isolate(4, no_pool);
    let offsets: Vec<u64> = isolated.iter().map(|e| e.offset).collect();
    assert_eq!(offsets, [10, 11, 12]);
    assert!(
        isolated
            .iter()
            .all(|e| e.key() == slab.at(e.key() as u32, e.offset).key())
    );
    // The referenced page goes round once, and out the second time, with its offset.
    let last = slab.isolate(5, no_pool);
    assert_eq!(last.iter().map(|e| e.offset).collect::<Vec<_>>(), [13]);
    assert_eq!(last[0].key(), pages[3].key());
    assert!(slab.isolate(5, no_pool).is_empty());
    // A call whose every entry taken is gone takes the next ones: none found means none
    // left.
    let gone = fill(&slab, first + 9, 9, State::Filled(9), false);
    slab.push(&gone);
    slab.push(&pages[0]);
    let next = slab.isolate(1, no_pool);
    assert_eq!(next.iter().map(|e| e.offset).collect::<Vec<_>>(), [10]);
    // The clean list's the same way.
    pages[1].marks.set(Mark::Clean);
    slab.push(&pages[1]);
    let clean = slab.isolate_clean(2, no_pool);
    assert_eq!(clean.iter().map(|e| e.offset).collect::<Vec<_>>(), [11]);
}
