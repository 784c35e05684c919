//! The slab's unit tests.

use super::*;
use crate::slab::{Folio, FrameTag, Mark};

fn filled(state: &State) -> Option<u64> {
    match state {
        State::Filled(w) => Some(*w),
        _ => None,
    }
}

#[test]
fn slots_taken_from_many_threads_at_once_each_hold_their_own_entry() {
    // Past the doubling chunks (4032 slots) into the fixed ones, the chunks made by
    // whichever thread takes their first slot.
    // Under Miri, two threads just past the doubling chunks: it interprets every step.
    const THREADS: u64 = if cfg!(miri) { 2 } else { 4 };
    const EACH: u64 = if cfg!(miri) { 2100 } else { 3000 };
    let slab = Slab::default();
    let keys: Vec<(u64, u64)> = std::thread::scope(|s| {
        let workers: Vec<_> = (0..THREADS)
            .map(|t| {
                let slab = &slab;
                s.spawn(move || {
                    (t * EACH..(t + 1) * EACH)
                        .map(|o| {
                            let e = if o % 3 == 0 {
                                slab.alloc_all(vec![(o, State::Filled(o))]).remove(0)
                            } else {
                                slab.alloc(o, State::Filled(o))
                            };
                            assert_eq!((e.offset, filled(&e.read())), (o, Some(o)));
                            (o, e.key())
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
    let mut slots: Vec<u32> = keys.iter().map(|&(_, k)| k as u32).collect();
    slots.sort_unstable();
    assert_eq!(slots, (0..(THREADS * EACH) as u32).collect::<Vec<_>>());
    for &(o, key) in &keys {
        let e = slab.get(key, o);
        assert_eq!(filled(&e.read()), Some(o), "offset {o}");
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
fn a_reused_slot_starts_clear_and_its_old_handle_sees_it_dead() {
    let slab = Slab::default();
    let old = slab.alloc(1, State::Filled(1));
    let other = slab.alloc(2, folio_page(0, 2));
    for m in [Mark::Referenced, Mark::Idle, Mark::Tried, Mark::Clean] {
        old.marks.set(m);
    }
    slab.push(&old);
    slab.push(&other);
    *old.write() = State::Dead;
    slab.retire(&old);
    let new = slab.alloc(3, State::Filled(3));
    assert_eq!(new.key() as u32, old.key() as u32, "the freed slot, reused");
    for m in [Mark::Referenced, Mark::Idle, Mark::Tried, Mark::Clean] {
        assert!(!new.marks.get(m), "{m:?} left from the slot's last entry");
    }
    assert_eq!(new.marks.list(), 0);
    assert!(matches!(*old.read(), State::Dead));
    assert_eq!(filled(&new.read()), Some(3));
    // The old handle never puts the slot back in a list; the other entry is the LRU's.
    slab.push(&old);
    assert_eq!(new.marks.list(), 0);
    let isolated = slab.isolate(4, no_pool);
    assert_eq!(isolated.iter().map(|e| e.offset).collect::<Vec<_>>(), [2]);
    assert!(!other.marks.get(Mark::Referenced) && !other.marks.get(Mark::Clean));
}

#[test]
fn entries_taken_from_a_list_carry_the_offset_their_state_names() {
    let slab = Slab::default();
    // A folio's pages at 10 + index, each taken out with its own; a page gone from the
    // pool meanwhile (or freed) is left out, and leaves the list all the same.
    let pages: Vec<_> = (0..4)
        .map(|i| slab.alloc(10 + i as u64, folio_page(10, i)))
        .collect();
    let gone = slab.alloc(7, folio_page(4, 3));
    let freed = slab.alloc(8, folio_page(5, 3));
    slab.push_all(&[&pages[..2], &[gone, freed], &pages[2..]].concat());
    *gone.write() = State::Filled(0);
    let mut state = freed.write();
    *state = State::Dead;
    slab.retire(&freed);
    drop(state);
    pages[3].marks.set(Mark::Referenced);
    // Four taken: three found, `gone` left out.
    let isolated = slab.isolate(4, no_pool);
    let offsets: Vec<u64> = isolated.iter().map(|e| e.offset).collect();
    assert_eq!(offsets, [10, 11, 12]);
    assert!(
        isolated
            .iter()
            .all(|e| e.key() == slab.get(e.key(), e.offset).key())
    );
    // The referenced page goes round once, and out the second time, with its offset.
    let last = slab.isolate(5, no_pool);
    assert_eq!(last.iter().map(|e| e.offset).collect::<Vec<_>>(), [13]);
    assert_eq!(last[0].key(), pages[3].key());
    assert!(slab.isolate(5, no_pool).is_empty());
    // A call whose every entry taken is gone takes the next ones: none found means none
    // left.
    let gone = slab.alloc(9, State::Filled(9));
    slab.push_all(&[gone, pages[0]]);
    let next = slab.isolate(1, no_pool);
    assert_eq!(next.iter().map(|e| e.offset).collect::<Vec<_>>(), [10]);
    // The clean list's the same way.
    pages[1].marks.set(Mark::Clean);
    slab.push(&pages[1]);
    let clean = slab.isolate_clean(2, no_pool);
    assert_eq!(clean.iter().map(|e| e.offset).collect::<Vec<_>>(), [11]);
}
