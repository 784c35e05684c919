//! The tier itself: [`Zswap`]'s parts, the index of entries by offset, and what ends an
//! entry (replacement, invalidation).
//!
//! Entries sit in the slab (`slab.rs`), each offset's in the slot its run's group gives it
//! (`index.rs`, a radix of runs of 64 offsets, sharded, which says which offsets are in use).
//! An entry's read-write lock is the guard of its object: loads hold it for reading while
//! they decompress or read the device; invalidation, writeback and compaction hold it for
//! writing. Every change of which entry an offset has (a store, an invalidation, an exclusive
//! load, a clean copy dropped) holds the offset's shard lock and the entry's lock for
//! writing together. A thread under a shard lock only tries an entry's lock, and where it is
//! busy lets the shard go and waits for the entry outside it, so that a thread holding an
//! entry's lock may wait for its shard's (`take`, the shrinker). The old entry's object or
//! device page is freed after both locks are let go, so no device I/O ever happens under a
//! lock that other offsets need.

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering::Relaxed};

use acomp::Acomp;
use parking_lot::Mutex;

use crate::device::SwapDevice;
use crate::index::{Index, Shard, shard_of};
use crate::pool::Pool;
use crate::slab::{AS_IS, EntryRef, Folio, FrameTag, Gone, Slab, State, Write};
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

// A run of the index's offsets has one group of the slab's slots, slot `i` for offset `i`.
const _: () = assert!(crate::slab::GROUP == crate::index::FANOUT);

impl Zswap {
    /// The transform, for its [`Acomp::stats`].
    pub fn acomp(&self) -> &Acomp {
        &self.tfm
    }

    /// The entry at `offset`, if it has one: its slot and, read under the index's lock, its
    /// live generation.
    pub(crate) fn lookup(&self, offset: u64) -> Option<EntryRef<'_>> {
        let shard = self.index.lock(offset);
        shard.get(offset).map(|slot| self.entries.at(slot, offset))
    }

    /// Counts `state`, puts it in the LRU where it holds pool memory, and makes it the
    /// entry at `offset`, freeing the entry it replaces.
    pub(crate) fn install(&self, offset: u64, state: State) {
        let in_pool = self.count(&state);
        self.install_counted(offset, state, in_pool);
    }

    /// [`Zswap::install`] of a state counted already.
    fn install_counted(&self, offset: u64, state: State, in_pool: bool) {
        let mut state = Some(state);
        let gone = self.under_shard(offset, |shard| {
            let s = state.take().expect("given back where the slot was busy");
            self.place(shard, offset, s, in_pool)
                .map_err(|(slot, back)| {
                    state = Some(back);
                    slot
                })
        });
        self.free(gone);
    }

    /// `f` under `offset`'s shard lock, again until it finds no slot busy: where it gives a
    /// busy slot back, the shard's lock is let go and the slot waited for outside it (a
    /// thread under a shard lock only tries an entry's lock), then `f` runs again.
    fn under_shard<T>(&self, offset: u64, mut f: impl FnMut(&mut Shard) -> Result<T, u32>) -> T {
        loop {
            let mut shard = self.index.lock(offset);
            match f(&mut shard) {
                Ok(done) => return done,
                Err(slot) => {
                    drop(shard);
                    self.entries.wait(slot);
                }
            }
        }
    }

    /// Under `offset`'s shard lock (`shard`): makes `state` the entry in `offset`'s slot,
    /// where no one holds the slot's lock, and returns what the slot held; else gives the
    /// state back with the slot to wait for, outside the shard's lock (a thread that holds an
    /// entry's lock may wait for its shard's: `take`, the shrinker).
    fn place(
        &self,
        shard: &mut Shard,
        offset: u64,
        state: State,
        in_pool: bool,
    ) -> Result<Gone, (u32, State)> {
        let slot = shard.slot(offset, || self.entries.take_group());
        let e = self.entries.at(slot, offset);
        let Some(mut w) = e.try_write() else {
            return Err((slot, state));
        };
        let gone = self.entries.replace(&e, &mut w, state, in_pool);
        shard.set(offset);
        Ok(gone)
    }

    /// Under `offset`'s shard lock: takes its entry out and ends it, where no one holds its
    /// lock: `Ok(None)` where it has none, `Err(slot)` where the slot is busy.
    fn try_remove(&self, shard: &mut Shard, offset: u64) -> Result<Option<Gone>, u32> {
        let Some(slot) = shard.get(offset) else {
            return Ok(None);
        };
        let e = self.entries.at(slot, offset);
        let mut w = e.try_write().ok_or(slot)?;
        Ok(Some(self.remove(shard, &e, &mut w)))
    }

    /// [`Zswap::remove`] by a thread that holds `e`'s lock (`w`, live: still its offset's
    /// entry, since every replacement holds it) and not its shard's, which it takes (the
    /// order is entry, then shard); what it held freed after both locks are let go.
    pub(crate) fn end(&self, e: &EntryRef<'_>, mut w: Write<'_>) {
        let gone = self.remove(&mut self.index.lock(e.offset), e, &mut w);
        drop(w);
        self.free(gone);
    }

    /// Takes `e`, live and held for writing in `w`, out of the index (`shard`, its offset's,
    /// locked) and ends it; frees its run's group where it was the run's last. Returns what it
    /// held, for [`Zswap::free`].
    fn remove(&self, shard: &mut Shard, e: &EntryRef<'_>, w: &mut Write<'_>) -> Gone {
        let gone = self.entries.kill(e, w);
        if let Some(group) = shard.clear(e.offset) {
            self.entries.free_group(group);
        }
        gone
    }

    /// [`Zswap::install`] for a batch, in order, as one `install` (or, for `None`, one
    /// `invalidate`) after another would leave them: each shard's lock taken once for its
    /// offsets (again after a slot it had to wait for); the entries replaced are freed after.
    pub(crate) fn install_batch(&self, items: Vec<(u64, Option<State>)>) {
        // Each taken once, in the shards' order: the offset, and the state counted with
        // whether it goes in the LRU, or none (an invalidation).
        type Item = (u64, Option<(State, bool)>);
        let mut items: Vec<Option<Item>> = items
            .into_iter()
            .map(|(offset, state)| {
                Some((
                    offset,
                    state.map(|s| {
                        let in_pool = self.count(&s);
                        (s, in_pool)
                    }),
                ))
            })
            .collect();
        // Each shard's entries in batch order, the shards one after another: the places
        // sorted by (shard, place in the batch).
        let mut order: Vec<(usize, usize)> = items
            .iter()
            .enumerate()
            .map(|(i, item)| (shard_of(item.as_ref().expect("each once").0), i))
            .collect();
        order.sort_unstable();
        let mut gone = Vec::with_capacity(items.len());
        for run in order.chunk_by(|a, b| a.0 == b.0) {
            let mut shard = None;
            for &(_, i) in run {
                let (offset, state) = items[i].take().expect("each once");
                let locked = shard.get_or_insert_with(|| self.index.lock(offset));
                let retry = match state {
                    Some((state, in_pool)) => match self.place(locked, offset, state, in_pool) {
                        Ok(g) => {
                            gone.push(g);
                            continue;
                        }
                        Err((_, state)) => Some((state, in_pool)),
                    },
                    None => match self.try_remove(locked, offset) {
                        Ok(g) => {
                            gone.extend(g);
                            continue;
                        }
                        Err(_) => None,
                    },
                };
                // Its slot is busy: this one alone (which waits for the slot outside the
                // shard's lock), then the rest.
                shard = None;
                match retry {
                    Some((state, in_pool)) => self.install_counted(offset, state, in_pool),
                    None => {
                        self.invalidate(offset);
                    }
                }
            }
        }
        gone.into_iter().for_each(|g| self.free(g));
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
        let Some(gone) = self.under_shard(offset, |shard| self.try_remove(shard, offset)) else {
            return false;
        };
        self.free(gone);
        true
    }

    /// Frees what an ended entry held ([`Slab::replace`], [`Slab::kill`]) and counts it out:
    /// its object or its folio's page, its device page, its clean mark. No lock is needed:
    /// no entry holds it any more.
    pub(crate) fn free(&self, gone: Gone) {
        let c = &self.counters;
        if gone.clean {
            dec(&c.clean_pages);
        }
        match gone.state {
            State::Dead => {}
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
