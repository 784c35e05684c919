//! The tier itself: [`Zswap`]'s parts, the index of entries by offset, and what ends an
//! entry (release, invalidation).
//!
//! Entries sit in a hash map per shard, keyed by offset. Each is reached through an
//! `Arc<Entry>` whose read-write lock is the guard of its object: loads hold it for reading
//! while they decompress or read the device; invalidation, writeback and compaction hold it
//! for writing. The shard's lock is held only to look up or swap the `Arc`, so no device
//! I/O ever happens under a lock that other offsets need.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering::Relaxed};

use acomp::Acomp;
use parking_lot::Mutex;

use crate::device::SwapDevice;
use crate::entry::{Entry, Folio, State};
use crate::lru::Lru;
use crate::pool::Pool;
use crate::stats::{Counters, dec, inc};

/// Independent locks on the entries, so that threads on different offsets seldom meet.
pub(crate) const SHARDS: usize = 64;

/// One shard of the entries: offset to entry, a hash map, so that memory follows the pages
/// stored and not the largest offset.
pub(crate) type Shard = Mutex<HashMap<u64, Arc<Entry>>>;

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
    pub(crate) tree: Box<[Shard]>,
    pub(crate) lru: Lru,
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

impl std::fmt::Debug for Zswap {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Zswap")
            .field("stats", &self.stats())
            .finish_non_exhaustive()
    }
}

impl Zswap {
    /// The transform, for its [`Acomp::stats`].
    pub fn acomp(&self) -> &Acomp {
        &self.tfm
    }

    pub(crate) fn shard(&self, offset: u64) -> &Shard {
        // Neighbouring offsets go to different shards.
        &self.tree[(offset % SHARDS as u64) as usize]
    }

    pub(crate) fn lookup(&self, offset: u64) -> Option<Arc<Entry>> {
        self.shard(offset).lock().get(&offset).cloned()
    }

    /// Counts `state`, puts it in the LRU where it holds pool memory, and makes it the
    /// entry at `offset`, freeing the entry it replaces.
    pub(crate) fn install(&self, offset: u64, state: State) {
        let (entry, in_pool) = self.counted_entry(offset, state);
        if in_pool {
            self.lru.push(&entry);
        }
        let old = self.shard(offset).lock().insert(offset, entry);
        if let Some(old) = old {
            self.release(&mut old.state.write(), &old);
        }
    }

    /// [`Zswap::install`] for a batch, in order, as one `install` (or, for `None`, one
    /// `invalidate`) after another would leave them: the LRU's lock taken once for all, each
    /// shard's once for its offsets; the entries replaced are freed after.
    pub(crate) fn install_batch(&self, items: Vec<(u64, Option<State>)>) {
        let mut entries: Vec<(u64, Option<Arc<Entry>>)> = Vec::with_capacity(items.len());
        let mut in_lru = Vec::with_capacity(items.len());
        for (offset, state) in items {
            let entry = state.map(|state| {
                let (entry, in_pool) = self.counted_entry(offset, state);
                if in_pool {
                    in_lru.push(Arc::clone(&entry));
                }
                entry
            });
            entries.push((offset, entry));
        }
        self.lru.push_all(in_lru);
        // Each shard's entries in batch order, the shards one after another: the places
        // sorted by (shard, place in the batch).
        let mut order: Vec<(u64, usize)> = (0..entries.len())
            .map(|i| (entries[i].0 % SHARDS as u64, i))
            .collect();
        order.sort_unstable();
        let mut old = Vec::new();
        for run in order.chunk_by(|a, b| a.0 == b.0) {
            let mut shard = self.shard(entries[run[0].1].0).lock();
            for &(_, i) in run {
                let offset = entries[i].0;
                let replaced = match entries[i].1.take() {
                    Some(entry) => shard.insert(offset, entry),
                    None => shard.remove(&offset),
                };
                old.extend(replaced);
            }
        }
        for e in old {
            self.release(&mut e.state.write(), &e);
        }
    }

    /// A new entry for `state`, counted; whether it holds pool memory (and so goes in the
    /// LRU).
    fn counted_entry(&self, offset: u64, state: State) -> (Arc<Entry>, bool) {
        let c = &self.counters;
        inc(&c.stored_pages);
        match &state {
            State::Filled(_) => inc(&c.same_filled_pages),
            State::Pool {
                incompressible,
                length,
                ..
            } => {
                if *incompressible {
                    inc(&c.stored_incompressible_pages);
                }
                c.stored_bytes.fetch_add(u64::from(*length), Relaxed);
            }
            _ => {}
        }
        let in_pool = matches!(state, State::Pool { .. } | State::Folio { .. });
        (Arc::new(Entry::new(offset, state)), in_pool)
    }

    /// Frees the entry at `offset` and its object or device page, if there is one
    /// (`zswap_invalidate`). Returns whether there was. A load that begins after this
    /// returns finds nothing.
    pub fn invalidate(&self, offset: u64) -> bool {
        let old = self.shard(offset).lock().remove(&offset);
        old.map(|e| self.release(&mut e.state.write(), &e))
            .is_some()
    }

    /// Frees what `state` holds and marks it dead; the caller holds its lock for writing
    /// and has taken it out of the tree.
    pub(crate) fn release(&self, state: &mut State, entry: &Entry) {
        let c = &self.counters;
        if entry.clean.load(Relaxed) {
            entry.clean.store(false, Relaxed);
            dec(&c.clean_pages);
        }
        match std::mem::replace(state, State::Dead) {
            State::Dead => {}
            State::Filled(_) => {
                dec(&c.stored_pages);
                dec(&c.same_filled_pages);
            }
            State::Pool {
                handle,
                length,
                incompressible,
                ..
            } => {
                self.lru.remove(entry);
                self.pool.free(handle);
                dec(&c.stored_pages);
                if incompressible {
                    dec(&c.stored_incompressible_pages);
                }
                c.stored_bytes.fetch_sub(u64::from(length), Relaxed);
            }
            State::Folio { folio, .. } => {
                self.lru.remove(entry);
                dec(&c.stored_pages);
                self.leave_folio(&folio);
            }
            State::Device { key, .. } => {
                dec(&c.device_pages);
                let dev = self.device.as_ref().expect("written back to a device");
                if dev.discard(key).is_err() {
                    inc(&c.device_discard_fail);
                }
            }
        }
    }

    /// A page leaves `folio` (invalidated, taken, replaced or written back; the caller holds
    /// its entry's lock for writing): the last to leave frees the frame.
    pub(crate) fn leave_folio(&self, folio: &Folio) {
        let c = &self.counters;
        dec(&c.folio_pages);
        let left = folio.live.fetch_sub(1, std::sync::atomic::Ordering::AcqRel) - 1;
        let length = folio.length as u64;
        self.count_unit_leave(folio, left);
        if left > 0 {
            inc(&c.held_folio_pages);
            if left == folio.members - 1 {
                c.held_folio_bytes.fetch_add(length, Relaxed);
            }
            return;
        }
        c.held_folio_pages
            .fetch_sub(folio.members as u64 - 1, Relaxed);
        c.held_folio_bytes.fetch_sub(length, Relaxed);
        self.pool
            .free_frame(std::mem::take(&mut *folio.chunks.write()));
        dec(&c.stored_folios);
        c.stored_bytes.fetch_sub(length, Relaxed);
    }
}
