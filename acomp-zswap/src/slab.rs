//! The entries' slab (zswap's `zswap_entry_cache`): every entry is a slot of one table that
//! grows without moving what it holds (`slab/slots.rs`), reached by its slot number; a freed slot
//! is reused by a later store, so that an entry costs no allocation of its own and the
//! index holds 8 bytes per offset (slot and generation), not a pointer to a reference count.
//!
//! A slot freed and reused while another thread still holds its old handle (a load between
//! its lookup and its lock, a shrinker with entries it took out of the LRU) is told apart by
//! the slot's generation, bumped when the slot is freed under both its lock held for writing
//! and the lists' lock: a handle ([`EntryRef`]) checks it under the slot's lock and, where it
//! is not its own, sees the entry dead ([`State::Dead`]), as the kernel's
//! `SLAB_TYPESAFE_BY_RCU` readers check that the object is still the one they looked up. The
//! LRU's operations check it under the lists' lock, so that an old handle never puts a slot
//! back into a list.
//!
//! The lists (`slab/lru.rs`: LRU, clean copies, free slots) share one lock: freeing a slot takes
//! it out of its list and onto the free stack in one hold.
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
    /// What the index keeps: slot and generation.
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

    /// The entry the index keeps as `key` for `offset`.
    pub(crate) fn get(&self, key: u64, offset: u64) -> EntryRef<'_> {
        let slot = key as u32;
        EntryRef {
            entry: self.slots.get(slot),
            slot,
            generation: (key >> 32) as u32,
            offset,
        }
    }

    /// A new entry of `offset` holding `state`, in a free slot or a new one; in no list.
    pub(crate) fn alloc(&self, offset: u64, state: State) -> EntryRef<'_> {
        let slot = self.lists.lock().take(&self.slots);
        self.fill(slot, offset, state)
    }

    /// [`Slab::alloc`] for each of `items`, the free slots taken under one hold of the lock.
    pub(crate) fn alloc_all(&self, items: Vec<(u64, State)>) -> Vec<EntryRef<'_>> {
        let slots: Vec<Option<u32>> = {
            let mut lists = self.lists.lock();
            items.iter().map(|_| lists.take(&self.slots)).collect()
        };
        items
            .into_iter()
            .zip(slots)
            .map(|((offset, state), slot)| self.fill(slot, offset, state))
            .collect()
    }

    /// Makes `slot` (from `Lists::take`) the entry of `offset` holding `state`.
    fn fill(&self, slot: Option<u32>, offset: u64, state: State) -> EntryRef<'_> {
        // 2^32 entries would be 16 TiB of pages: beyond any pool and device.
        let slot = slot.expect("fewer than 2^32 entries");
        let entry = self.slots.get(slot);
        // An old handle of a reused slot may hold the lock for a moment (and see its entry
        // dead).
        let mut guard = entry.lock.write();
        *guard = state;
        entry.reset();
        drop(guard);
        EntryRef {
            entry,
            slot,
            generation: entry.generation.load(Relaxed),
            offset,
        }
    }

    /// Frees `e`'s slot, whose state the caller holds for writing and has made dead: its
    /// generation moves on (its handles see it dead), it leaves its list and is reused.
    pub(crate) fn retire(&self, e: &EntryRef<'_>) {
        let mut lists = self.lists.lock();
        if !e.live() {
            return;
        }
        e.entry.generation.fetch_add(1, Relaxed);
        lists.unlink(&self.slots, e.slot);
        lists.push_free(e.slot);
    }

    /// Puts `e` at the hot end of the list its clean mark names, unless its slot was freed
    /// since the handle was made.
    pub(crate) fn push(&self, e: &EntryRef<'_>) {
        let mut lists = self.lists.lock();
        if e.live() {
            lists.push(&self.slots, e.slot, Which::of(e));
        }
    }

    /// [`Slab::push`] for each of `es`, in order, under one hold of the lock.
    pub(crate) fn push_all(&self, es: &[EntryRef<'_>]) {
        if es.is_empty() {
            return;
        }
        let mut lists = self.lists.lock();
        for e in es.iter().filter(|e| e.live()) {
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
