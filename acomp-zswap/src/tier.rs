//! The tier itself: [`Zswap`]'s parts, the index of entries by offset, and what ends an
//! entry (release, invalidation).
//!
//! Entries sit in the index (`index.rs`, a radix of runs of 64 offsets, sharded), which
//! holds each offset's slot in the slab (`slab.rs`) and its generation. An entry's
//! read-write lock is the guard of its object: loads hold it for reading while they
//! decompress or read the device; invalidation, writeback and compaction hold it for
//! writing. The index's shard lock is held only to look up or swap the slot, so no device
//! I/O ever happens under a lock that other offsets need.

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering::Relaxed};

use acomp::Acomp;
use parking_lot::Mutex;

use crate::device::SwapDevice;
use crate::index::{Index, shard_of};
use crate::pool::Pool;
use crate::slab::{AS_IS, EntryRef, Folio, FrameTag, Mark, Slab, State, Write};
use crate::stats::{Counters, dec, inc};

/// A compressed page tier: a transform, a zsmalloc-style pool under a budget, the entries by
/// offset, an LRU and an optional swap device. `Send + Sync`: share it (`&Zswap`, `Arc`)
/// between threads. See the crate docs for the contract.
///
/// It is not `Clone`: a tier is one pool and one budget, and a second handle on it is what
/// `Arc<Zswap>` already is, without a reference count on every call that needs none (scoped
/// threads share `&Zswap`); [`Zswap::recompress_every`] takes `&Arc<Zswap>` because its
/// thread outlives the call. (The crate docs, "Sharing the tier".)
pub struct Zswap {
    pub(crate) tfm: Acomp,
    pub(crate) pool: Pool,
    /// Offset to entry (its slot and generation).
    pub(crate) index: Index,
    /// The entries and their lists (the LRU, the clean copies).
    pub(crate) entries: Slab,
    pub(crate) device: Option<Box<dyn SwapDevice>>,
    pub(crate) max_pages: usize,
    pub(crate) accept_pages: usize,
    /// The pool hit its budget and has not yet fallen below the accept threshold
    /// (`zswap_pool_reached_full`).
    pub(crate) full: AtomicBool,
    /// Without a device: the pool's used bytes when compaction last ran to make room
    /// (`usize::MAX` since the pool was last below the threshold), so that it runs again
    /// only once objects were freed since.
    pub(crate) compacted_at: AtomicUsize,
    /// One shrinker at a time, so that stores at the budget do not all write back.
    pub(crate) shrinking: Mutex<()>,
    /// The next device key.
    pub(crate) next_key: AtomicU64,
    pub(crate) counters: Counters,
    /// The recompression transform ([`crate::Builder::recompress`]), if any.
    pub(crate) recomp: Option<Acomp>,
    /// Pages of a recompression unit ([`crate::Builder::recompress_unit_pages`]): 1, page by
    /// page.
    pub(crate) unit_pages: usize,
    /// Pool pages past which the recompression thread recompresses at once
    /// ([`crate::Builder::recompress_pressure_percent`]).
    pub(crate) pressure_pages: Option<usize>,
}

impl Zswap {
    /// The transform, for its [`Acomp::stats`].
    pub fn acomp(&self) -> &Acomp {
        &self.tfm
    }

    pub(crate) fn lookup(&self, offset: u64) -> Option<EntryRef<'_>> {
        let key = self.index.get(offset)?;
        Some(self.entries.get(key, offset))
    }

    /// Counts `state`, puts it in the LRU where it holds pool memory, and makes it the
    /// entry at `offset`, freeing the entry it replaces.
    pub(crate) fn install(&self, offset: u64, state: State) {
        let in_pool = self.count(&state);
        let entry = self.entries.alloc(offset, state);
        if in_pool {
            self.entries.push(&entry);
        }
        let old = self.index.insert(offset, entry.key());
        if let Some(old) = old {
            let old = self.entries.get(old, offset);
            self.release(&mut old.write(), &old);
        }
    }

    /// [`Zswap::install`] for a batch, in order, as one `install` (or, for `None`, one
    /// `invalidate`) after another would leave them: the LRU's lock taken once for all, each
    /// shard's once for its offsets; the entries replaced are freed after.
    pub(crate) fn install_batch(&self, items: Vec<(u64, Option<State>)>) {
        let mut in_pool = Vec::with_capacity(items.len());
        let mut places = Vec::with_capacity(items.len());
        let mut states = Vec::with_capacity(items.len());
        for (offset, state) in items {
            places.push((offset, state.is_some()));
            if let Some(state) = state {
                in_pool.push(self.count(&state));
                states.push((offset, state));
            }
        }
        let made = self.entries.alloc_all(states);
        let lru: Vec<EntryRef<'_>> = made
            .iter()
            .zip(&in_pool)
            .filter_map(|(e, &p)| p.then_some(*e))
            .collect();
        self.entries.push_all(&lru);
        let mut made = made.into_iter();
        let entries: Vec<(u64, Option<u64>)> = places
            .into_iter()
            .map(|(offset, some)| (offset, some.then(|| made.next().map(|e| e.key())).flatten()))
            .collect();
        // Each shard's entries in batch order, the shards one after another: the places
        // sorted by (shard, place in the batch).
        let mut order: Vec<(usize, usize)> = (0..entries.len())
            .map(|i| (shard_of(entries[i].0), i))
            .collect();
        order.sort_unstable();
        let mut old = Vec::new();
        for run in order.chunk_by(|a, b| a.0 == b.0) {
            let mut shard = self.index.lock(entries[run[0].1].0);
            for &(_, i) in run {
                let (offset, key) = entries[i];
                let replaced = match key {
                    Some(key) => shard.insert(offset, key),
                    None => shard.remove(offset),
                };
                old.extend(replaced.map(|k| (offset, k)));
            }
        }
        for (offset, key) in old {
            let e = self.entries.get(key, offset);
            self.release(&mut e.write(), &e);
        }
    }

    /// Counts a new entry's `state`; whether it holds pool memory (and so goes in the LRU).
    fn count(&self, state: &State) -> bool {
        let c = &self.counters;
        inc(&c.stored_pages);
        match state {
            State::Filled(_) => inc(&c.same_filled_pages),
            State::Pool { length, .. } => {
                if *length == AS_IS {
                    inc(&c.stored_incompressible_pages);
                }
                c.stored_bytes.fetch_add(u64::from(*length), Relaxed);
            }
            _ => {}
        }
        matches!(state, State::Pool { .. } | State::Folio { .. })
    }

    /// Frees the entry at `offset` and its object or device page, if there is one
    /// (`zswap_invalidate`). Returns whether there was. A load that begins after this
    /// returns finds nothing.
    pub fn invalidate(&self, offset: u64) -> bool {
        let old = self.index.remove(offset);
        old.map(|key| {
            let e = self.entries.get(key, offset);
            self.release(&mut e.write(), &e);
        })
        .is_some()
    }

    /// Frees what `state` holds, marks it dead and frees its slot; the caller holds its lock
    /// for writing (`state`) and has taken it out of the tree.
    pub(crate) fn release(&self, state: &mut Write<'_>, entry: &EntryRef<'_>) {
        let c = &self.counters;
        if matches!(**state, State::Dead) {
            return;
        }
        if entry.marks.get(Mark::Clean) {
            entry.marks.clear(Mark::Clean);
            dec(&c.clean_pages);
        }
        match std::mem::replace(&mut **state, State::Dead) {
            State::Dead => unreachable!("checked above"),
            State::Filled(_) => {
                dec(&c.stored_pages);
                dec(&c.same_filled_pages);
            }
            state @ (State::Pool { .. } | State::Folio { .. }) => self.leave_pool(state),
            State::Device { key, .. } => {
                dec(&c.device_pages);
                let dev = self.device.as_ref().expect("written back to a device");
                if dev.discard(key).is_err() {
                    inc(&c.device_discard_fail);
                }
            }
        }
        self.entries.retire(entry);
    }

    /// A page in the pool leaves it (released, or written back to the device): its object
    /// freed, or its folio's frame left ([`Zswap::leave_folio`]), and counted out of the
    /// gauges [`Zswap::install`] counted it in.
    #[inline]
    pub(crate) fn leave_pool(&self, state: State) {
        let c = &self.counters;
        dec(&c.stored_pages);
        match state {
            State::Pool { handle, length, .. } => {
                self.pool.free(handle);
                if length == AS_IS {
                    dec(&c.stored_incompressible_pages);
                }
                c.stored_bytes.fetch_sub(u64::from(length), Relaxed);
            }
            State::Folio { folio, .. } => self.leave_folio(&folio),
            _ => unreachable!("only pool states leave the pool"),
        }
    }

    /// Counts a new folio's frame (a stored folio, or a recompressed unit: `stored_units`
    /// too) and the pages it serves; the one place, with [`Zswap::leave_folio`], that keeps
    /// the folio and unit gauges.
    pub(crate) fn count_folio(&self, folio: &Folio) {
        let c = &self.counters;
        inc(&c.stored_folios);
        c.folio_pages.fetch_add(folio.members as u64, Relaxed);
        c.stored_bytes.fetch_add(folio.length as u64, Relaxed);
        if folio.codec == FrameTag::Recompressed {
            inc(&c.stored_units);
        }
    }

    /// A page leaves `folio` (invalidated, taken, replaced or written back; the caller holds
    /// its entry's lock for writing): the last to leave frees the frame. The held gauges
    /// count the pages that left a frame still kept for the others, and its bytes once; a
    /// unit's (`FrameTag::Recompressed`) count in the unit gauges too.
    fn leave_folio(&self, folio: &Folio) {
        let c = &self.counters;
        dec(&c.folio_pages);
        let left = folio.live.fetch_sub(1, std::sync::atomic::Ordering::AcqRel) - 1;
        let unit = folio.codec == FrameTag::Recompressed;
        let held = |pages: &AtomicU64, bytes: &AtomicU64| {
            let length = folio.length as u64;
            if left > 0 {
                inc(pages);
                if left == folio.members - 1 {
                    bytes.fetch_add(length, Relaxed);
                }
            } else {
                pages.fetch_sub(folio.members as u64 - 1, Relaxed);
                bytes.fetch_sub(length, Relaxed);
            }
        };
        held(&c.held_folio_pages, &c.held_folio_bytes);
        if unit {
            held(&c.held_unit_pages, &c.held_unit_bytes);
        }
        if left > 0 {
            return;
        }
        self.pool
            .free_frame(std::mem::take(&mut *folio.chunks.write()));
        dec(&c.stored_folios);
        if unit {
            dec(&c.stored_units);
        }
        c.stored_bytes.fetch_sub(folio.length as u64, Relaxed);
    }

    /// The transform that decodes frames tagged `codec`.
    pub(crate) fn transform(&self, codec: FrameTag) -> &Acomp {
        match (codec, &self.recomp) {
            (FrameTag::Recompressed, Some(r)) => r,
            _ => &self.tfm,
        }
    }
}
