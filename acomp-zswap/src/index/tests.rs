//! The index's unit tests.

use std::collections::{BTreeMap, BTreeSet};

use proptest::prelude::*;

use super::*;

/// An index and the groups it was given, as the slab gives them: the last freed first,
/// else the next.
#[derive(Default)]
struct Fixture {
    index: Index,
    free: Vec<u32>,
    taken: u32,
}

impl Fixture {
    /// Puts `offset` in use; returns its slot.
    fn put(&mut self, offset: u64) -> u32 {
        let mut shard = self.index.lock(offset);
        let (free, taken) = (&mut self.free, &mut self.taken);
        let slot = shard.slot(offset, || {
            free.pop().unwrap_or_else(|| {
                *taken += FANOUT as u32;
                *taken - FANOUT as u32
            })
        });
        shard.set(offset);
        slot
    }

    /// Takes `offset` (in use) out; returns the group freed, if any.
    fn take(&mut self, offset: u64) -> Option<u32> {
        let group = self.index.lock(offset).clear(offset);
        self.free.extend(group);
        group
    }

    fn get(&self, offset: u64) -> Option<u32> {
        self.index.lock(offset).get(offset)
    }

    fn all(&self) -> BTreeMap<u64, u32> {
        self.index
            .shards()
            .flat_map(|s| s.lock().iter().collect::<Vec<_>>())
            .collect()
    }

    fn nodes(&self) -> (usize, usize) {
        self.index
            .shards()
            .map(|s| s.lock().nodes())
            .fold((0, 0), |a, b| (a.0 + b.0, a.1 + b.1))
    }
}

#[test]
fn neighbouring_offsets_share_a_group_and_far_ones_do_not() {
    let mut f = Fixture::default();
    for offset in 0..64 {
        assert_eq!(
            f.put(offset),
            offset as u32,
            "offset i of a run in slot i of its group"
        );
    }
    assert_eq!(f.nodes(), (1, 1));
    assert_eq!(
        f.put(64 + 5),
        64 + 5,
        "the next run: the next group, the same block"
    );
    assert_eq!(f.nodes(), (2, 1));
    assert_eq!(f.put(64 * 64 + 1), 129, "the next block");
    assert_eq!(f.nodes(), (3, 2));
    assert_eq!(f.put(u64::MAX), 192 + 63);
    assert_eq!(f.put(1 << 40), 256);
    assert_eq!(f.nodes(), (5, 4));
    assert_eq!(f.get(u64::MAX), Some(255));
    assert_eq!(f.get(1 << 40), Some(256));
    assert_eq!(
        f.get((1 << 40) + 1),
        None,
        "in a run with a group, not in use"
    );
    assert_eq!(f.get(64 + 4), None);
    assert_eq!(f.get(63), Some(63));
    assert_eq!(f.put(63), 63, "put again: the same slot");
}

#[test]
fn blocks_apart_by_powers_of_two_spread_over_the_shards() {
    // 64 offsets 2^k apart, from one block to the next up to 2^32 apart: a shard by bits
    // of the offset would put each series in one shard, or a few (at random, 64 blocks
    // fill about 40 of 64 shards).
    for k in 12..=32 {
        let shards: std::collections::BTreeSet<usize> =
            (0..64u64).map(|i| shard_of(i << k)).collect();
        assert!(shards.len() >= 16, "2^{k} apart: {} shards", shards.len());
    }
    assert!(
        (0..4096).all(|o| shard_of(o) == shard_of(0)),
        "one block, one shard"
    );
}

#[test]
fn the_last_offset_of_a_run_frees_its_group_and_the_last_run_its_block() {
    let mut f = Fixture::default();
    for offset in [5, 6, 64 + 5, u64::MAX] {
        f.put(offset);
    }
    assert_eq!(f.nodes(), (3, 2));
    assert_eq!(f.take(5), None, "6 keeps the group");
    assert_eq!(f.nodes(), (3, 2));
    assert_eq!(
        f.take(6),
        Some(0),
        "the run's group goes, the block keeps one"
    );
    assert_eq!(f.nodes(), (2, 2));
    assert_eq!(f.get(6), None);
    assert_eq!(f.take(64 + 5), Some(64));
    assert_eq!(f.take(u64::MAX), Some(128));
    assert_eq!(f.nodes(), (0, 0));
    assert!(f.all().is_empty());
    // The freed groups come back, last freed first.
    assert_eq!(f.put(1000), 128 + 1000 % 64);
}

#[test]
fn a_run_keeps_a_group_taken_for_an_offset_not_yet_set() {
    let mut f = Fixture::default();
    f.put(3);
    // A store that took the slot of 4 and found it busy: the group stays while 3 leaves.
    assert_eq!(
        f.index.lock(4).slot(4, || unreachable!("the run's group")),
        4
    );
    assert_eq!(f.take(3), Some(0));
    assert_eq!(f.nodes(), (0, 0));
    // Its retry takes a group again.
    assert_eq!(f.index.lock(4).slot(4, || 64), 64 + 4);
    f.index.lock(4).set(4);
    assert_eq!(f.get(4), Some(68));
}

/// Offsets dense near 0, in one run, and spread over the whole `u64` range.
fn offset() -> impl Strategy<Value = u64> {
    prop_oneof![
        0u64..300,
        (0u64..64).prop_map(|o| (1 << 40) + o),
        any::<u64>()
    ]
}

proptest! {
    /// The index against a set of offsets over puts and takes: every offset in use has
    /// the slot of its place in its run's group, every run of offsets in use one group of
    /// its own, its group freed with its last offset, and no node left once it is empty.
    #[test]
    fn index_matches_a_set(ops in proptest::collection::vec((offset(), any::<bool>()), 1..400)) {
        let mut f = Fixture::default();
        let mut model = BTreeSet::new();
        let mut groups: BTreeMap<u64, u32> = BTreeMap::new();
        for &(offset, put) in &ops {
            let run = offset >> 6;
            if put {
                let slot = f.put(offset);
                let group = *groups.entry(run).or_insert(slot - (offset % 64) as u32);
                prop_assert_eq!(slot, group + (offset % 64) as u32);
                model.insert(offset);
            } else if model.remove(&offset) {
                let last = !model.iter().any(|&o| o >> 6 == run);
                prop_assert_eq!(f.take(offset), last.then(|| groups[&run]));
                if last {
                    groups.remove(&run);
                }
            }
            prop_assert_eq!(f.get(offset), model.contains(&offset).then(|| groups[&run] + (offset % 64) as u32));
        }
        let distinct: BTreeSet<u32> = groups.values().copied().collect();
        prop_assert_eq!(distinct.len(), groups.len(), "a group per run");
        let all = f.all();
        prop_assert_eq!(all.keys().copied().collect::<BTreeSet<_>>(), model.clone());
        for offset in model {
            f.take(offset);
        }
        prop_assert_eq!(f.nodes(), (0, 0));
    }
}
