//! The entries' slab (zswap's `zswap_entry_cache`): every entry is a slot of one table that
//! grows without moving what it holds (`slab/slots.rs`), reached by its slot number. Slots
//! are given out in groups of 64 ([`GROUP`]), one group to each run of 64 offsets of the
//! index (`index.rs`), offset `i` of the run in slot `i` of its group: the index finds an
//! offset's entry from its run's group, 4 bytes a run, not from a key of its own, so that a
//! lookup reads the entry and nothing else out of memory (the runs' groups stay in the
//! caches), and an entry costs no allocation of its own. A store over an offset in use
//! replaces its entry in the same slot ([`Slab::replace`]); a run whose last offset leaves
//! gives its group back, and a later run reuses it.
//!
//! A slot whose entry ended (replaced, invalidated, its group reused) while another thread
//! still holds a handle on it (a load between its lookup and its lock, a shrinker with
//! entries it took out of the LRU) is told apart by the slot's generation, moved on whenever
//! its entry ends, under its lock held for writing, the index's lock of its offset and the
//! lists' lock: a handle ([`EntryRef`]) checks it under the slot's lock and, where it is not
//! its own, sees the entry dead ([`State::Dead`]), as the kernel's `SLAB_TYPESAFE_BY_RCU`
//! readers check that the object is still the one they looked up. The LRU's operations
//! check it under the lists' lock, so that an old handle never puts a slot back into a list.
//! A handle is made under the index's lock (`Zswap::lookup`), which every change of an
//! offset's entry holds, so that its generation is the live entry's.
//!
//! The lists (`slab/lru.rs`: LRU, clean copies, free groups) share one lock: ending an entry
//! takes it out of its list and moves its generation on in one hold.
//!
//! The rule of the entries' locks: **a thread that holds an entry's lock never waits for
//! another entry's lock**; it may only try it (`try_read`, `try_write`) and do without where
//! it is busy. Offset order is no order here: an old handle's slot may be the entry of any
//! other offset now, or the very slot the thread holds already, so waiting for a second lock
//! could close a cycle (a unit's swap locked the same reused slot twice before this rule).

use std::ops::{Deref, DerefMut};
use std::sync::atomic::Ordering::Relaxed;

use parking_lot::{Mutex, RwLockReadGuard, RwLockWriteGuard};

use crate::pool::Handle;
use lru::{Lists, Slots, Which};

mod entry;
mod lru;
mod slots;

pub(crate) use entry::{AS_IS, Entry, Folio, FrameTag, Mark, State};

/// Slots a group holds: one run of the index's offsets (`index.rs`'s `FANOUT`, which
/// `tier.rs` checks is the same), offset `i` of the run in slot `i` of its group.
pub(crate) const GROUP: usize = 64;

/// What an entry held when [`Slab::replace`] or [`Slab::kill`] ended it, for the tier to
/// free and count out: its state, and whether it was a clean copy.
pub(crate) struct Gone {
    pub(crate) state: State,
    pub(crate) clean: bool,
}

/// What an old handle's guard shows: the entry is gone.
static DEAD: State = State::Dead;

/// The slots and their lists.
#[derive(Default)]
pub(crate) struct Slab {
    slots: Slots,
    lists: Mutex<Lists>,
}

/// A handle on one entry: its slot and the generation it was looked up at. Its guards see
/// [`State::Dead`] where the slot was freed since (and maybe reused).
#[derive(Clone, Copy)]
pub(crate) struct EntryRef<'a> {
    entry: &'a Entry,
    slot: u32,
    generation: u32,
    /// The offset it was looked up at (or taken from a list at).
    pub(crate) offset: u64,
}

impl Deref for EntryRef<'_> {
    type Target = Entry;
    fn deref(&self) -> &Entry {
        self.entry
    }
}

impl<'a> EntryRef<'a> {
    /// Slot and generation, in one word (for tests that compare handles).
    #[cfg(test)]
    pub(crate) fn key(&self) -> u64 {
        u64::from(self.generation) << 32 | u64::from(self.slot)
    }

    fn live(&self) -> bool {
        self.entry.generation.load(Relaxed) == self.generation
    }

    /// The state, locked for reading.
    pub(crate) fn read(&self) -> Read<'a> {
        let guard = self.entry.lock.read();
        Read {
            live: self.live(),
            guard,
        }
    }

    /// The state, locked for reading if no writer holds it.
    pub(crate) fn try_read(&self) -> Option<Read<'a>> {
        let guard = self.entry.lock.try_read()?;
        Some(Read {
            live: self.live(),
            guard,
        })
    }

    /// Marks the entry tried by recompression ([`Mark::Tried`]), if it is still the
    /// handle's: a slot reused since is another offset's entry, whose mark is its own.
    pub(crate) fn mark_tried(&self) {
        let _state = self.entry.lock.read();
        if self.live() {
            self.entry.marks.set(Mark::Tried);
        }
    }

    /// The state, locked for writing.
    pub(crate) fn write(&self) -> Write<'a> {
        let guard = self.entry.lock.write();
        Write::new(guard, self.live())
    }

    /// The state, locked for writing if no one holds it.
    pub(crate) fn try_write(&self) -> Option<Write<'a>> {
        let guard = self.entry.lock.try_write()?;
        Some(Write::new(guard, self.live()))
    }
}

/// An entry's state held for reading: [`State::Dead`] where the handle is old.
pub(crate) struct Read<'a> {
    guard: RwLockReadGuard<'a, State>,
    live: bool,
}

impl Deref for Read<'_> {
    type Target = State;
    fn deref(&self) -> &State {
        if self.live { &self.guard } else { &DEAD }
    }
}

/// An entry's state held for writing: where the handle is old, a [`State::Dead`] of its own
/// that nothing reads.
pub(crate) struct Write<'a> {
    guard: RwLockWriteGuard<'a, State>,
    dead: Option<State>,
}

impl<'a> Write<'a> {
    fn new(guard: RwLockWriteGuard<'a, State>, live: bool) -> Self {
        Write {
            guard,
            dead: (!live).then_some(State::Dead),
        }
    }
}

impl Deref for Write<'_> {
    type Target = State;
    fn deref(&self) -> &State {
        self.dead.as_ref().unwrap_or(&self.guard)
    }
}

impl DerefMut for Write<'_> {
    fn deref_mut(&mut self) -> &mut State {
        match &mut self.dead {
            Some(dead) => dead,
            None => &mut self.guard,
        }
    }
}

impl Slab {
    /// Handles on `taken`, slots taken out of a list with the generations they had there,
    /// each with the offset its state names under its lock (`State::owner`, through
    /// `pool_owner`). A slot freed since, or holding no state of the pool, is left out:
    /// freed, it is on the free stack; out of the pool, it belongs in no list. The caller
    /// holds no entry's lock (each is waited for, one at a time) and not the lists'.
    fn found(
        &self,
        taken: Vec<(u32, u32)>,
        pool_owner: &impl Fn(&Handle) -> u64,
    ) -> Vec<EntryRef<'_>> {
        taken
            .into_iter()
            .filter_map(|(slot, generation)| {
                let mut e = EntryRef {
                    entry: self.slots.get(slot),
                    slot,
                    generation,
                    offset: 0,
                };
                e.offset = e.read().owner(pool_owner)?;
                Some(e)
            })
            .collect()
    }

    /// The entry in `slot` as it is now, for `offset`: the caller holds the index's lock of
    /// `offset`, whose slot it is, so that the generation read is the live entry's (every
    /// change of it is made under that lock, [`Slab::replace`] and [`Slab::kill`]).
    pub(crate) fn at(&self, slot: u32, offset: u64) -> EntryRef<'_> {
        let entry = self.slots.get(slot);
        EntryRef {
            entry,
            slot,
            generation: entry.generation.load(Relaxed),
            offset,
        }
    }

    /// A group of [`GROUP`] free slots for a run of the index: its first slot (a multiple of
    /// [`GROUP`]). Every slot of it holds [`State::Dead`] and is in no list.
    pub(crate) fn take_group(&self) -> u32 {
        // 2^32 entries would be 16 TiB of pages: beyond any pool and device.
        self.lists
            .lock()
            .take_group(&self.slots)
            .expect("fewer than 2^32 entries")
    }

    /// Gives back the group whose first slot is `first`, every slot of it dead (its run's
    /// last offset left the index).
    pub(crate) fn free_group(&self, first: u32) {
        self.lists.lock().free_group(first);
    }

    /// Waits until no one holds `slot`'s lock (a store or removal that found it busy under
    /// the index's lock, which it must not wait under).
    pub(crate) fn wait(&self, slot: u32) {
        drop(self.slots.get(slot).lock.write());
    }

    /// Makes `e`'s slot, live and held for writing in `w`, the entry of its offset holding
    /// `state`: its marks clear, at the hot end of the LRU where `in_pool`, else in no list.
    /// The generation moves on, so that handles of what it held see that dead. Returns what
    /// it held ([`State::Dead`] in a slot not in use). The caller holds the index's lock of
    /// the offset.
    pub(crate) fn replace(
        &self,
        e: &EntryRef<'_>,
        w: &mut Write<'_>,
        state: State,
        in_pool: bool,
    ) -> Gone {
        debug_assert!(w.dead.is_none(), "a live handle");
        let old = std::mem::replace(&mut *w.guard, state);
        let clean = e.entry.marks.get(Mark::Clean);
        e.entry.reset();
        let mut lists = self.lists.lock();
        e.entry.generation.fetch_add(1, Relaxed);
        if in_pool {
            lists.push(&self.slots, e.slot, Which::Lru);
        } else {
            lists.unlink(&self.slots, e.slot);
        }
        Gone { state: old, clean }
    }

    /// Ends `e`'s entry, live and held for writing in `w`: its state made dead, its
    /// generation moved on (its handles see it dead), out of its list. Returns what it held.
    /// The caller holds the index's lock of the offset and takes the offset out.
    pub(crate) fn kill(&self, e: &EntryRef<'_>, w: &mut Write<'_>) -> Gone {
        debug_assert!(w.dead.is_none(), "a live handle");
        let old = std::mem::replace(&mut *w.guard, State::Dead);
        let clean = e.entry.marks.clear(Mark::Clean);
        let mut lists = self.lists.lock();
        e.entry.generation.fetch_add(1, Relaxed);
        lists.unlink(&self.slots, e.slot);
        Gone { state: old, clean }
    }

    /// Puts `e` at the hot end of the list its clean mark names, unless its slot was freed
    /// since the handle was made.
    pub(crate) fn push(&self, e: &EntryRef<'_>) {
        let mut lists = self.lists.lock();
        if e.live() {
            lists.push(&self.slots, e.slot, Which::of(e));
        }
    }

    /// Moves `e` to the list its clean mark (changed by the caller before) names, where it
    /// is in the other one: entries out of both lists (isolated, or not in the pool) stay
    /// out, and whoever isolated them pushes them back by their mark.
    pub(crate) fn follow_mark(&self, e: &EntryRef<'_>) {
        let mut lists = self.lists.lock();
        let list = e.marks.list();
        if e.live() && list != 0 && list != Which::of(e) as u8 {
            lists.push(&self.slots, e.slot, Which::of(e));
        }
    }

    /// Up to `n` entries from the LRU's cold end, taken out of it: zswap's second chance, an
    /// entry loaded since it was last passed over has its mark cleared and goes to the hot
    /// end instead (each entry at most once per call, so the call ends). Their offsets come
    /// from their states ([`Slab::found`]): fewer than taken where some were freed meanwhile,
    /// none only where the LRU is empty.
    pub(crate) fn isolate(
        &self,
        n: usize,
        pool_owner: impl Fn(&Handle) -> u64,
    ) -> Vec<EntryRef<'_>> {
        self.take_found(|| self.take(Which::Lru, n), pool_owner)
    }

    /// Up to `n` clean copies, oldest first, taken out of the clean list; their offsets as
    /// [`Slab::isolate`]'s.
    pub(crate) fn isolate_clean(
        &self,
        n: usize,
        pool_owner: impl Fn(&Handle) -> u64,
    ) -> Vec<EntryRef<'_>> {
        self.take_found(|| self.take(Which::Clean, n), pool_owner)
    }

    /// Up to `n` slots (and their generations) from the cold end of `which`, taken out of
    /// it under the lists' lock. In the LRU, zswap's second chance: an entry loaded since it
    /// was last passed over has its mark cleared and goes to the hot end instead, each at
    /// most once per call, so the call ends.
    fn take(&self, which: Which, n: usize) -> Vec<(u32, u32)> {
        let mut lists = self.lists.lock();
        let mut rotations = if which == Which::Lru {
            lists.len(which)
        } else {
            0
        };
        let mut out = Vec::with_capacity(n.min(lists.len(which)));
        while out.len() < n {
            let Some(slot) = lists.pop(&self.slots, which) else {
                break;
            };
            let e = self.slots.get(slot);
            if rotations > 0 && e.marks.clear(Mark::Referenced) {
                rotations -= 1;
                lists.push(&self.slots, slot, Which::of(e));
                continue;
            }
            out.push((slot, e.generation.load(Relaxed)));
        }
        out
    }

    /// The entries `take` takes out of a list (under the lists' lock) with their offsets
    /// ([`Slab::found`]); where every one taken was freed or left the pool meanwhile, the
    /// next ones, so that nothing found means an empty list, as the callers read it.
    fn take_found(
        &self,
        take: impl Fn() -> Vec<(u32, u32)>,
        pool_owner: impl Fn(&Handle) -> u64,
    ) -> Vec<EntryRef<'_>> {
        loop {
            let taken = take();
            if taken.is_empty() {
                return Vec::new();
            }
            let found = self.found(taken, &pool_owner);
            if !found.is_empty() {
                return found;
            }
        }
    }

    /// Bytes of the slot table and the free stack (for the `inspect` feature).
    #[cfg(feature = "inspect")]
    pub(crate) fn bytes(&self) -> usize {
        self.lists.lock().bytes(&self.slots)
    }

    /// Entries in the LRU (not counting clean copies).
    #[cfg(feature = "inspect")]
    pub(crate) fn lru_len(&self) -> usize {
        self.lists.lock().len(Which::Lru)
    }
}

#[cfg(test)]
mod tests;
