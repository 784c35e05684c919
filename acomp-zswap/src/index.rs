//! The index of entries by offset (zswap's xarray of `swp_entry_t` to entry): for each offset
//! stored, its entry's key in the slab (slot and generation, [`EntryRef::key`]).
//!
//! Offsets are cut into runs of 64, as an xarray's node holds 64 slots (`XA_CHUNK_SIZE`): a
//! run's slots sit in one leaf, 8 bytes each and a bitmap of those in use (which a lookup
//! does not read: an empty slot holds [`EMPTY`]), so that neighbouring offsets share cache
//! lines and a lookup costs one miss for the leaf's slot
//! (the map above it is small enough to stay in the caches) where a hash map of offsets
//! cost two dependent ones (its control bytes, then the bucket). A block holds the leaves
//! of 64 runs (4,096 offsets), and a hash map per shard finds the block: memory follows the
//! runs in use, not the largest offset, so `u64::MAX` is an offset like any. Dense offsets,
//! a swap layer's slots, cost 8.3 bytes each; a page alone in its run costs its leaf, 520
//! bytes, and alone in its block the block's 520 bytes more (an xarray's node is 576 bytes).
//!
//! Blocks are spread over [`SHARDS`] shards by a hash of their number, each shard behind
//! its own lock, so that threads on different blocks seldom meet, whatever the pattern of
//! their offsets; neighbouring offsets share a lock, as the kernel's swap offsets share one
//! xarray per 64 MiB of swap space (`SWAP_ADDRESS_SPACE_PAGES`). The lock is held only to
//! read or swap a key.
//!
//! [`EntryRef::key`]: crate::slab::EntryRef::key

use std::collections::HashMap;

use parking_lot::{Mutex, MutexGuard};

/// Shards of the index, each behind its own lock.
pub(crate) const SHARDS: usize = 64;

/// Offsets a leaf holds (a run), and runs a block holds.
const FANOUT: usize = 64;
/// log2 of [`FANOUT`].
const BITS: u32 = 6;

/// A slot of a leaf that holds no key: slot number `u32::MAX`, which no entry has (the slab
/// gives out fewer than `MAX_SLOTS`, `slab/slots.rs`), so that a lookup reads the key's own
/// word and not the leaf's bitmap too, a second cache line.
const EMPTY: u64 = u64::MAX;

/// The slots of one run of 64 offsets.
struct Leaf {
    /// [`EMPTY`] where no key is.
    keys: [u64; FANOUT],
    /// Bit `i` set where `keys[i]` is in use (what a removal reads to tell the leaf empty).
    present: u64,
}

/// The leaves of 64 runs of one shard.
struct Block {
    leaves: [Option<Box<Leaf>>; FANOUT],
    /// Leaves in use.
    count: u32,
}

/// Where an offset's key lives: its block, leaf in the block and slot in the leaf (bits
/// 12.., 6..12 and 0..6 of the offset).
#[derive(Clone, Copy)]
struct Place {
    block: u64,
    leaf: usize,
    slot: usize,
}

fn place(offset: u64) -> Place {
    Place {
        block: offset >> (2 * BITS),
        leaf: (offset >> BITS) as usize % FANOUT,
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

    /// The key at `offset`, if any.
    pub(crate) fn get(&self, offset: u64) -> Option<u64> {
        let p = place(offset);
        let leaf = self.blocks.get(&p.block)?.leaves[p.leaf].as_deref()?;
        let key = leaf.keys[p.slot];
        (key != EMPTY).then_some(key)
    }

    /// Makes `key` the key at `offset`; returns the key it replaces.
    pub(crate) fn insert(&mut self, offset: u64, key: u64) -> Option<u64> {
        debug_assert_ne!(key, EMPTY, "no entry has slot u32::MAX");
        let p = place(offset);
        let block = self.blocks.entry(p.block).or_insert_with(|| {
            Box::new(Block {
                leaves: [const { None }; FANOUT],
                count: 0,
            })
        });
        let leaf = block.leaves[p.leaf].get_or_insert_with(|| {
            block.count += 1;
            Box::new(Leaf {
                keys: [EMPTY; FANOUT],
                present: 0,
            })
        });
        let bit = 1 << p.slot;
        let old = leaf.keys[p.slot];
        leaf.keys[p.slot] = key;
        leaf.present |= bit;
        (old != EMPTY).then_some(old)
    }

    /// Takes the key at `offset` out; returns it. A leaf left empty is freed, and a block
    /// left without leaves.
    pub(crate) fn remove(&mut self, offset: u64) -> Option<u64> {
        let p = place(offset);
        let block = self.blocks.get_mut(&p.block)?;
        let leaf = block.leaves[p.leaf].as_deref_mut()?;
        let key = std::mem::replace(&mut leaf.keys[p.slot], EMPTY);
        if key == EMPTY {
            return None;
        }
        leaf.present &= !(1 << p.slot);
        if leaf.present == 0 {
            block.leaves[p.leaf] = None;
            block.count -= 1;
            if block.count == 0 {
                self.blocks.remove(&p.block);
            }
        }
        Some(key)
    }

    /// Takes the key at `offset` out if it is `key`; returns whether it was.
    pub(crate) fn remove_if(&mut self, offset: u64, key: u64) -> bool {
        self.get(offset) == Some(key) && self.remove(offset).is_some()
    }

    /// Every (offset, key) of the shard: offsets in order within a block, blocks in no
    /// order.
    pub(crate) fn iter(&self) -> impl Iterator<Item = (u64, u64)> + '_ {
        self.blocks.iter().flat_map(move |(&b, block)| {
            block.leaves.iter().enumerate().flat_map(move |(l, leaf)| {
                let base = b << (2 * BITS) | (l as u64) << BITS;
                leaf.iter().flat_map(move |leaf| {
                    (0..FANOUT)
                        .filter(|&s| leaf.present >> s & 1 != 0)
                        .map(move |s| (base | s as u64, leaf.keys[s]))
                })
            })
        })
    }

    /// Bytes of its map, blocks and leaves (for the `inspect` feature).
    #[cfg(feature = "inspect")]
    fn bytes(&self) -> usize {
        let leaves: usize = self.blocks.values().map(|b| b.count as usize).sum();
        self.blocks.capacity() * (size_of::<(u64, Box<Block>)>() + 1)
            + self.blocks.len() * size_of::<Block>()
            + leaves * size_of::<Leaf>()
    }

    /// Leaves and blocks allocated (for tests of the freeing), each block's count checked
    /// against its leaves.
    #[cfg(test)]
    fn nodes(&self) -> (usize, usize) {
        let mut leaves = 0;
        for block in self.blocks.values() {
            let here = block.leaves.iter().filter(|l| l.is_some()).count();
            assert_eq!(here, block.count as usize, "a block's count of its leaves");
            leaves += here;
        }
        (leaves, self.blocks.len())
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

    /// The key at `offset`, if any.
    pub(crate) fn get(&self, offset: u64) -> Option<u64> {
        self.lock(offset).get(offset)
    }

    /// Makes `key` the key at `offset`; returns the key it replaces.
    pub(crate) fn insert(&self, offset: u64, key: u64) -> Option<u64> {
        self.lock(offset).insert(offset, key)
    }

    /// Takes the key at `offset` out; returns it.
    pub(crate) fn remove(&self, offset: u64) -> Option<u64> {
        self.lock(offset).remove(offset)
    }

    /// Bytes of every shard's map, blocks and leaves (for the `inspect` feature).
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
    use std::collections::BTreeMap;

    use proptest::prelude::*;

    use super::*;

    fn all(index: &Index) -> BTreeMap<u64, u64> {
        index
            .shards()
            .flat_map(|s| s.lock().iter().collect::<Vec<_>>())
            .collect()
    }

    fn nodes(index: &Index) -> (usize, usize) {
        index
            .shards()
            .map(|s| s.lock().nodes())
            .fold((0, 0), |a, b| (a.0 + b.0, a.1 + b.1))
    }

    #[test]
    fn neighbouring_offsets_share_a_leaf_and_far_ones_do_not() {
        let index = Index::default();
        for offset in 0..64 {
            assert_eq!(index.insert(offset, offset * 10), None);
        }
        assert_eq!(nodes(&index), (1, 1));
        index.insert(64, 1);
        assert_eq!(nodes(&index), (2, 1), "the next run: the same block");
        index.insert(64 * 64, 2);
        assert_eq!(nodes(&index), (3, 2), "the next block");
        index.insert(u64::MAX, 3);
        index.insert(1 << 40, 4);
        assert_eq!(nodes(&index), (5, 4));
        assert_eq!(index.get(u64::MAX), Some(3));
        assert_eq!(index.get(1 << 40), Some(4));
        assert_eq!(index.get((1 << 40) + 1), None);
        assert_eq!(index.get(63), Some(630));
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
    fn removing_the_last_key_frees_its_leaf_and_block() {
        let index = Index::default();
        // Keys are slot and generation: u64::MAX is no key (`EMPTY`), 0 is one.
        for (offset, key) in [(5, 5), (6, 0), (64 + 5, 69), (u64::MAX, 1 << 32)] {
            index.insert(offset, key);
        }
        assert_eq!(nodes(&index), (3, 2));
        assert_eq!(index.remove(5), Some(5));
        assert_eq!(nodes(&index), (3, 2), "6 keeps the leaf");
        assert_eq!(index.remove(6), Some(0));
        assert_eq!(nodes(&index), (2, 2), "the leaf goes, the block keeps one");
        assert_eq!(index.remove(6), None);
        assert_eq!(index.remove(64 + 5), Some(69));
        assert_eq!(index.remove(u64::MAX), Some(1 << 32));
        assert_eq!(nodes(&index), (0, 0));
        assert!(all(&index).is_empty());
    }

    #[test]
    fn remove_if_takes_only_its_own_key() {
        let index = Index::default();
        index.insert(9, 1);
        assert!(!index.lock(9).remove_if(9, 2));
        assert_eq!(index.get(9), Some(1));
        assert!(index.lock(9).remove_if(9, 1));
        assert_eq!(index.get(9), None);
        assert!(!index.lock(9).remove_if(9, 1));
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
        /// The index against a `BTreeMap` over inserts and removes: every key (any but
        /// `EMPTY`, which no entry has), every iteration, and no node left once it is empty.
        #[test]
        fn index_matches_a_map(ops in proptest::collection::vec((offset(), proptest::option::of(0..EMPTY)), 1..400)) {
            let index = Index::default();
            let mut model = BTreeMap::new();
            for &(offset, key) in &ops {
                match key {
                    Some(key) => prop_assert_eq!(index.insert(offset, key), model.insert(offset, key)),
                    None => prop_assert_eq!(index.remove(offset), model.remove(&offset)),
                }
                prop_assert_eq!(index.get(offset), model.get(&offset).copied());
            }
            prop_assert_eq!(&all(&index), &model);
            for &(offset, _) in &ops {
                prop_assert_eq!(index.remove(offset), model.remove(&offset));
            }
            prop_assert_eq!(nodes(&index), (0, 0));
        }
    }
}
