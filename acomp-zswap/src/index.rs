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
mod tests;
