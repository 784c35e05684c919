//! The index of entries by offset (zswap's xarray of `swp_entry_t` to entry): which offsets
//! are in use, and where each one's entry is in the slab.
//!
//! Offsets are cut into runs of 64, as an xarray's node holds 64 slots (`XA_CHUNK_SIZE`). A
//! run in use has a group of 64 slots of the slab (`slab.rs`), its offset `i` in the group's
//! slot `i`, so that the index keeps 4 bytes a run (the group's first slot) and a bitmap of
//! the offsets in use, not a key per offset: a block of 64 runs (4,096 offsets) is 776 bytes,
//! small enough to stay in the caches, and a lookup's one read from memory is the entry
//! itself (with a key per offset, 8.3 bytes an offset, the key was a miss of its own before
//! the entry's). A hash map per shard finds the block: memory follows the runs in use, not
//! the largest offset, so `u64::MAX` is an offset like any. Dense offsets, a swap layer's
//! slots, cost their entries and 0.2 bytes each; a page alone in its run costs its group's
//! 64 entries (2,560 bytes), and alone in its block the block's 776 bytes more (an xarray's
//! node is 576 bytes).
//!
//! Blocks are spread over [`SHARDS`] shards by a hash of their number, each shard behind
//! its own lock, so that threads on different blocks seldom meet, whatever the pattern of
//! their offsets; neighbouring offsets share a lock, as the kernel's swap offsets share one
//! xarray per 64 MiB of swap space (`SWAP_ADDRESS_SPACE_PAGES`). The lock is held to look
//! an offset up, and to change its entry (`tier.rs`).

use std::collections::HashMap;

use parking_lot::{Mutex, MutexGuard};

/// Shards of the index, each behind its own lock.
pub(crate) const SHARDS: usize = 64;

/// Offsets a run holds (and slots a group holds), and runs a block holds.
pub(crate) const FANOUT: usize = 64;
/// log2 of [`FANOUT`].
const BITS: u32 = 6;

/// A run with no group.
const NO_GROUP: u32 = u32::MAX;

/// The runs of 64 offsets of one block: each run's group, and which of its offsets are in
/// use.
struct Block {
    /// The first slot of each run's group ([`NO_GROUP`] where it has none).
    groups: [u32; FANOUT],
    /// Bit `i` of a run set where its offset `i` has an entry.
    present: [u64; FANOUT],
    /// Runs with a group.
    count: u32,
}

/// Where an offset's slot is: its block, run in the block and place in the run (bits 12..,
/// 6..12 and 0..6 of the offset).
#[derive(Clone, Copy)]
struct Place {
    block: u64,
    run: usize,
    slot: usize,
}

fn place(offset: u64) -> Place {
    Place {
        block: offset >> (2 * BITS),
        run: (offset >> BITS) as usize % FANOUT,
        slot: offset as usize % FANOUT,
    }
}

/// The shard that holds `offset`: its block's number hashed (Fibonacci hashing, the top
/// bits of a multiply by 2^64 over the golden ratio), so that neighbouring blocks, and
/// offsets apart by any power of two, go to different shards.
pub(crate) fn shard_of(offset: u64) -> usize {
    const _: () = assert!(SHARDS == 64);
    ((offset >> (2 * BITS)).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 58) as usize
}

/// One shard: its blocks by their number (`offset >> 12`), hashed with foldhash (a multiply
/// and a fold per `u64`, seeded per process), not the standard library's SipHash: an offset
/// is the caller's number, not input from a network.
pub(crate) struct Shard {
    blocks: HashMap<u64, Box<Block>, foldhash::fast::RandomState>,
}

impl Shard {
    fn new() -> Self {
        Shard {
            blocks: HashMap::default(),
        }
    }

    /// The slot of the entry at `offset`, if it has one.
    pub(crate) fn get(&self, offset: u64) -> Option<u32> {
        let p = place(offset);
        let block = self.blocks.get(&p.block)?;
        (block.present[p.run] >> p.slot & 1 != 0).then(|| block.groups[p.run] + p.slot as u32)
    }

    /// The slot `offset` has, used or not: its run's group's, the group taken with
    /// `new_group` (its first slot) where the run has none yet. A run keeps its group until
    /// [`Shard::clear`] takes its last offset out, even where no offset is set in it yet.
    pub(crate) fn slot(&mut self, offset: u64, new_group: impl FnOnce() -> u32) -> u32 {
        let p = place(offset);
        let block = self.blocks.entry(p.block).or_insert_with(|| {
            Box::new(Block {
                groups: [NO_GROUP; FANOUT],
                present: [0; FANOUT],
                count: 0,
            })
        });
        if block.groups[p.run] == NO_GROUP {
            let first = new_group();
            debug_assert_eq!(
                first as usize % FANOUT,
                0,
                "a group starts at a multiple of 64"
            );
            block.groups[p.run] = first;
            block.count += 1;
        }
        block.groups[p.run] + p.slot as u32
    }

    /// Marks `offset` in use; its run has a group ([`Shard::slot`]).
    pub(crate) fn set(&mut self, offset: u64) {
        let p = place(offset);
        let block = self.blocks.get_mut(&p.block).expect("a slot taken first");
        debug_assert_ne!(block.groups[p.run], NO_GROUP);
        block.present[p.run] |= 1 << p.slot;
    }

    /// Takes `offset` out of use (it was in use). Where it was its run's last, the run's
    /// group goes (returned, its first slot, for the caller to free), and a block left
    /// without groups is freed.
    pub(crate) fn clear(&mut self, offset: u64) -> Option<u32> {
        let p = place(offset);
        let block = self.blocks.get_mut(&p.block).expect("an offset in use");
        debug_assert_ne!(block.present[p.run] >> p.slot & 1, 0, "an offset in use");
        block.present[p.run] &= !(1 << p.slot);
        if block.present[p.run] != 0 {
            return None;
        }
        let group = std::mem::replace(&mut block.groups[p.run], NO_GROUP);
        block.count -= 1;
        if block.count == 0 {
            self.blocks.remove(&p.block);
        }
        Some(group)
    }

    /// Every (offset, slot) in use in the shard: offsets in order within a block, blocks in
    /// no order.
    pub(crate) fn iter(&self) -> impl Iterator<Item = (u64, u32)> + '_ {
        self.blocks.iter().flat_map(move |(&b, block)| {
            (0..FANOUT).flat_map(move |r| {
                let base = b << (2 * BITS) | (r as u64) << BITS;
                let (present, group) = (block.present[r], block.groups[r]);
                (0..FANOUT)
                    .filter(move |&s| present >> s & 1 != 0)
                    .map(move |s| (base | s as u64, group + s as u32))
            })
        })
    }

    /// Bytes of its map and blocks (for the `inspect` feature).
    #[cfg(feature = "inspect")]
    fn bytes(&self) -> usize {
        self.blocks.capacity() * (size_of::<(u64, Box<Block>)>() + 1)
            + self.blocks.len() * size_of::<Block>()
    }

    /// Runs with a group, and blocks (for tests of the freeing), each block's count checked
    /// against its runs.
    #[cfg(test)]
    fn nodes(&self) -> (usize, usize) {
        let mut runs = 0;
        for block in self.blocks.values() {
            let here = block.groups.iter().filter(|&&g| g != NO_GROUP).count();
            assert_eq!(here, block.count as usize, "a block's count of its runs");
            runs += here;
        }
        (runs, self.blocks.len())
    }
}

/// The index: [`SHARDS`] shards, each behind its own lock.
pub(crate) struct Index {
    shards: Box<[Mutex<Shard>]>,
}

impl Default for Index {
    fn default() -> Self {
        Index {
            shards: (0..SHARDS).map(|_| Mutex::new(Shard::new())).collect(),
        }
    }
}

impl Index {
    /// The shard of `offset`, locked.
    pub(crate) fn lock(&self, offset: u64) -> MutexGuard<'_, Shard> {
        self.shards[shard_of(offset)].lock()
    }

    /// Bytes of every shard's map and blocks (for the `inspect` feature).
    #[cfg(feature = "inspect")]
    pub(crate) fn bytes(&self) -> usize {
        self.shards.iter().map(|s| s.lock().bytes()).sum()
    }

    /// The shards, one after another.
    pub(crate) fn shards(&self) -> impl Iterator<Item = &Mutex<Shard>> {
        self.shards.iter()
    }
}

#[cfg(test)]
mod tests {
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
}
