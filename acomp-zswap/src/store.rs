//! The tier itself: [`Zswap`], its builder and its entries.
//!
//! - `store` (`zswap_store`): a page whose bytes are all equal is kept as its fill value
//!   (zram's same-filled pages); any other is compressed in one request of one fragment each
//!   side into a destination of one page; a compression that fails or gives a page or more
//!   keeps the page as it is (zswap since Linux 6.18), the reason counted.
//! - `load` (`zswap_load`): decompresses straight out of the pool's fragments (two where the
//!   object straddles backing pages), or reads the device and checks the checksum.
//! - Entries sit in a hash map per shard, keyed by offset. Each is reached through an
//!   `Arc<Entry>` whose read-write lock is the guard of its object: loads hold it for
//!   reading while they decompress or read the device; invalidation, writeback and
//!   compaction hold it for writing. The shard's lock is held only to look up or swap the
//!   `Arc`, so no device I/O ever happens under a lock that other offsets need.

use std::cell::RefCell;
use std::collections::HashMap;
use std::io::{IoSlice, IoSliceMut};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering::Relaxed};

use acomp::Acomp;
use parking_lot::{Mutex, RwLock};

use crate::device::SwapDevice;
use crate::lru::Lru;
use crate::pool::{AllocError, Handle, Pool};
use crate::recompress::{FrameTag, IdleMark, Recompressor};
use crate::stats::{Counters, dec, inc};
use crate::{PAGE_SIZE, Page};

mod builder;
mod folio;
mod inspect;
mod outcome;
mod writeback;

pub use builder::Builder;
use folio::Folio;
pub use folio::{FolioInfo, FolioKind, MAX_FOLIO_PAGES};
pub use outcome::{BuildError, EntryInfo, LoadError, LoadKind, StoreError, StoreKind};

/// Independent locks on the entries, so that threads on different offsets seldom meet.
const SHARDS: usize = 64;

/// One shard of the entries: offset to entry, a hash map, so that memory follows the pages
/// stored and not the largest offset.
type Shard = Mutex<HashMap<u64, Arc<Entry>>>;

/// Pages the shrinker writes back in one batch ([`SwapDevice::write_pages`]).
pub const WRITEBACK_BATCH: usize = 32;

thread_local! {
    /// The destination of compression, one page per thread: the counterpart of the kernel's
    /// per-CPU `acomp_ctx->buffer`.
    static DST: RefCell<Box<Page>> = RefCell::new(Box::new([0; PAGE_SIZE]));
}

/// Where one offset's page is.
pub(crate) enum State {
    /// In the pool: a frame of `length` bytes, or the page as it is (`raw`).
    Pool {
        handle: Handle,
        length: u32,
        raw: bool,
        // recompress: the transform that wrote the frame.
        codec: FrameTag,
    },
    /// Every byte is this value; nothing in the pool.
    Filled(u8),
    /// Written back: on the device under `key`, with this checksum of key and page.
    Device { key: u64, checksum: u32 },
    /// Page `index` of a folio's frame, shared with the folio's other pages.
    Folio { folio: Arc<Folio>, index: usize },
    /// Invalidated or replaced: a load that finds it looks the offset up again.
    Dead,
}

/// One offset's entry (`struct zswap_entry`). Its lock guards the object: nothing reads
/// the object without holding it, nothing frees it without holding it for writing.
pub(crate) struct Entry {
    pub(crate) state: RwLock<State>,
    /// Loaded since the shrinker last passed it over (zswap's `entry->referenced`).
    pub(crate) referenced: AtomicBool,
    /// Its sequence number in the LRU, 0 when out of it (changed under the LRU's lock).
    pub(crate) lru: AtomicU64,
    // recompress: zram's idle mark and whether recompression was tried since the store.
    pub(crate) idle: IdleMark,
    /// A clean copy ([`Zswap::load_clean`]): set under the entry's lock held for reading or
    /// writing, cleared and acted on only under it held for writing.
    pub(crate) clean: AtomicBool,
    /// Its offset, so that the shrinker can drop a clean copy it took from the LRU.
    pub(crate) offset: u64,
}

/// A compressed page tier: a transform, a zsmalloc-style pool under a budget, the entries by
/// offset, an LRU and an optional swap device. `Send + Sync`: share it (`&Zswap`, `Arc`)
/// between threads. See the crate docs for the contract.
pub struct Zswap {
    tfm: Acomp,
    pub(crate) pool: Pool,
    pub(crate) tree: Box<[Shard]>,
    lru: Lru,
    device: Option<Box<dyn SwapDevice>>,
    max_pages: usize,
    accept_pages: usize,
    /// The pool hit its budget and has not yet fallen below the accept threshold
    /// (`zswap_pool_reached_full`).
    full: AtomicBool,
    /// Without a device: the pool's used bytes when compaction last ran to make room
    /// (`usize::MAX` since the pool was last below the threshold), so that it runs again
    /// only once objects were freed since.
    compacted_at: AtomicUsize,
    /// One shrinker at a time, so that stores at the budget do not all write back.
    shrinking: Mutex<()>,
    /// The next device key.
    next_key: AtomicU64,
    pub(crate) counters: Counters,
    // recompress: the second transform and its counters, if any.
    pub(crate) recomp: Option<Recompressor>,
}

impl std::fmt::Debug for Zswap {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Zswap")
            .field("stats", &self.stats())
            .finish_non_exhaustive()
    }
}

/// The value every byte of `page` has, if they all have the same one.
pub fn same_filled(page: &Page) -> Option<u8> {
    // Compare in words, as zram's `page_same_filled` does: most pages differ early.
    let word = u64::from_ne_bytes([page[0]; 8]);
    page.chunks_exact(8)
        .all(|w| u64::from_ne_bytes(w.try_into().expect("8 bytes")) == word)
        .then_some(page[0])
}

/// The checksum of a written-back page: CRC-32 of its key and bytes, so that a page read
/// from another key's slot does not match either.
fn checksum(key: u64, page: &Page) -> u32 {
    let mut h = crc32fast::Hasher::new();
    h.update(&key.to_le_bytes());
    h.update(page);
    h.finalize()
}

impl Zswap {
    /// The transform, for its [`Acomp::stats`].
    pub fn acomp(&self) -> &Acomp {
        &self.tfm
    }

    fn shard(&self, offset: u64) -> &Shard {
        // Neighbouring offsets go to different shards.
        &self.tree[(offset % SHARDS as u64) as usize]
    }

    pub(crate) fn lookup(&self, offset: u64) -> Option<Arc<Entry>> {
        self.shard(offset).lock().get(&offset).cloned()
    }

    /// Stores `page` at `offset` (any `u64`), replacing any entry there.
    ///
    /// # Errors
    ///
    /// [`StoreError::PoolFull`] or [`StoreError::Writeback`] where the pool is at its budget
    /// and no room could be made; the page stays with the caller and the offset's old entry
    /// is invalidated.
    pub fn store(&self, offset: u64, page: &Page) -> Result<(), StoreError> {
        self.store_kind(offset, page).map(|_| ())
    }

    /// [`Zswap::store`], telling how the page was kept.
    ///
    /// # Errors
    ///
    /// As [`Zswap::store`].
    pub fn store_kind(&self, offset: u64, page: &Page) -> Result<StoreKind, StoreError> {
        let c = &self.counters;
        let (state, kind) = match same_filled(page) {
            Some(fill) => (State::Filled(fill), StoreKind::SameFilled),
            None => match DST.with_borrow_mut(|dst| self.compress(offset, page, dst)) {
                Ok(x) => x,
                Err(e) => {
                    c.reject_reclaim_fail.fetch_add(1, Relaxed);
                    self.invalidate(offset);
                    return Err(e);
                }
            },
        };
        self.install(offset, state);
        Ok(kind)
    }

    /// Counts `state`, puts it in the LRU where it holds pool memory, and makes it the
    /// entry at `offset`, freeing the entry it replaces.
    fn install(&self, offset: u64, state: State) {
        let c = &self.counters;
        inc(&c.stored_pages);
        match &state {
            State::Filled(_) => inc(&c.same_filled_pages),
            State::Pool { raw, length, .. } => {
                if *raw {
                    inc(&c.stored_incompressible_pages);
                }
                c.stored_bytes.fetch_add(u64::from(*length), Relaxed);
            }
            _ => {}
        }
        let in_pool = matches!(state, State::Pool { .. } | State::Folio { .. });
        let entry = Arc::new(Entry {
            state: RwLock::new(state),
            referenced: AtomicBool::new(false),
            lru: AtomicU64::new(0),
            idle: IdleMark::default(),
            clean: AtomicBool::new(false),
            offset,
        });
        if in_pool {
            self.lru.push(&entry);
        }
        let old = self.shard(offset).lock().insert(offset, entry);
        if let Some(old) = old {
            self.release(&mut old.state.write(), &old);
        }
    }

    /// `zswap_compress`: one request, one fragment each side, a destination of one page;
    /// then the object, within the budget.
    fn compress(
        &self,
        offset: u64,
        page: &Page,
        dst: &mut Page,
    ) -> Result<(State, StoreKind), StoreError> {
        let c = &self.counters;
        let res = self
            .tfm
            .compress(&[IoSlice::new(page)], &mut [IoSliceMut::new(dst)]);
        let frame = match res {
            Ok(dlen) if dlen < PAGE_SIZE => Some(&dst[..dlen]),
            Ok(_) => {
                inc(&c.reject_compress_poor);
                None
            }
            Err(e) if e.errno() == libc::ENOSPC => {
                inc(&c.reject_compress_poor);
                None
            }
            Err(_) => {
                inc(&c.reject_compress_fail);
                None
            }
        };
        let data: &[u8] = frame.unwrap_or(page);
        let handle = self.alloc(offset, data.len())?;
        self.pool.write(&handle, data);
        let raw = frame.is_none();
        let state = State::Pool {
            handle,
            length: data.len() as u32,
            raw,
            codec: FrameTag::Primary,
        };
        let kind = if raw {
            StoreKind::Incompressible
        } else {
            StoreKind::Compressed
        };
        Ok((state, kind))
    }

    /// An object of `len` bytes within the budget: at the budget, the coldest entries go to
    /// the device until the pool is at the accept threshold; without a device, or while the
    /// pool has not fallen below the threshold since it was full, the store is refused.
    fn alloc(&self, offset: u64, len: usize) -> Result<Handle, StoreError> {
        if self.full.load(Relaxed) && self.device.is_none() && !self.reclaim_without_device() {
            return Err(StoreError::PoolFull);
        }
        match self.pool.alloc(len, offset) {
            Ok(h) => return Ok(h),
            Err(AllocError::LimitHit) => {}
            Err(AllocError::BadSize(n)) => unreachable!("objects are 1..=PAGE_SIZE bytes, not {n}"),
        }
        inc(&self.counters.pool_limit_hit);
        self.full.store(true, Relaxed);
        if self.device.is_none() {
            if self.reclaim_without_device() {
                if let Ok(h) = self.pool.alloc(len, offset) {
                    return Ok(h);
                }
            }
            return Err(StoreError::PoolFull);
        }
        let _one = self.shrinking.lock();
        // Clean copies first: their owners hold the pages.
        self.drop_clean();
        let (mut compacted, mut busy) = (false, 0);
        loop {
            // Another shrinker may have made room meanwhile.
            if self.pool.stats().pages <= self.accept_pages {
                if let Ok(h) = self.pool.alloc(len, offset) {
                    return Ok(h);
                }
            }
            match self.write_batch(WRITEBACK_BATCH) {
                Ok(0) => {
                    if let Ok(h) = self.pool.alloc(len, offset) {
                        return Ok(h);
                    }
                    // Entries left, all busy (loads), or objects of stores still on their
                    // way into the LRU: they will be free soon.
                    if self.pool.stats().objects > 0 && busy < 1024 {
                        busy += 1;
                        std::thread::yield_now();
                        continue;
                    }
                    // Nothing left to write back: what compaction frees is the last room.
                    if compacted {
                        return Err(StoreError::PoolFull);
                    }
                    self.compact();
                    compacted = true;
                }
                Ok(_) => {
                    // Objects freed here and there free no backing page until their zspage
                    // is empty: compaction turns them into pages, so that the shrinker writes
                    // back about what the threshold asks, not most of the pool.
                    if self.pool.stats().pages > self.accept_pages {
                        self.compact();
                    }
                }
                Err(e) => {
                    // The batch stays in the pool; the page may still fit.
                    return self
                        .pool
                        .alloc(len, offset)
                        .map_err(|_| StoreError::Writeback(e));
                }
            }
        }
    }

    /// Without a device, at the budget: drops clean copies, then says whether the pool is at
    /// the accept threshold ([`Zswap::at_threshold`], which compacts where that can get it
    /// there).
    fn reclaim_without_device(&self) -> bool {
        {
            let _one = self.shrinking.lock();
            self.drop_clean();
        }
        self.at_threshold()
    }

    /// Drops clean copies ([`Zswap::load_clean`]), oldest first, until the pool is at the
    /// accept threshold or none is left; compacts where the objects left would fit under
    /// the threshold, so that dropping stops once compaction can do the rest. The caller
    /// holds `shrinking`. Returns how many it dropped.
    fn drop_clean(&self) -> usize {
        let (mut dropped, mut compacted) = (0, 0);
        loop {
            let s = self.pool.stats();
            if s.pages <= self.accept_pages {
                break;
            }
            if dropped > compacted && s.used_bytes <= self.accept_pages * PAGE_SIZE {
                self.compact();
                compacted = dropped;
                continue;
            }
            // One at a time: a clean copy's drop costs no I/O, and each may be the last
            // one needed.
            let Some(victim) = self.lru.isolate_clean(1).pop() else {
                break;
            };
            if self.drop_clean_one(&victim) {
                dropped += 1;
            }
        }
        dropped
    }

    /// Drops one clean copy taken out of the clean list, under its lock, if it is still
    /// one and still its offset's entry; an entry whose mark was cleared meanwhile goes
    /// back to the LRU. Returns whether it dropped it.
    fn drop_clean_one(&self, entry: &Arc<Entry>) -> bool {
        #[cfg(feature = "test-hooks")]
        crate::hooks::run_before_dropping_clean(entry.offset);
        let mut state = entry.state.write();
        if matches!(*state, State::Dead) {
            return false;
        }
        if !entry.clean.load(Relaxed) {
            self.lru.push(entry);
            return false;
        }
        #[cfg(feature = "test-hooks")]
        crate::hooks::run_while_dropping_clean(entry.offset);
        let mut shard = self.shard(entry.offset).lock();
        if !shard
            .get(&entry.offset)
            .is_some_and(|e| Arc::ptr_eq(e, entry))
        {
            // Replaced or invalidated meanwhile: whoever did it frees it.
            return false;
        }
        shard.remove(&entry.offset);
        drop(shard);
        self.release(&mut state, entry);
        inc(&self.counters.clean_dropped);
        true
    }

    /// Loads the page at `offset` into `page`; the entry stays.
    ///
    /// # Errors
    ///
    /// [`LoadError::NotFound`] where the offset has no entry; [`LoadError::Io`] and
    /// [`LoadError::Corrupt`] from the device; [`LoadError::Decompress`] and
    /// [`LoadError::WrongLength`] where the pool's frame is bad. The entry is kept.
    pub fn load(&self, offset: u64, page: &mut Page) -> Result<(), LoadError> {
        self.load_kind(offset, page).map(|_| ())
    }

    /// [`Zswap::load`], telling where the page came from.
    ///
    /// # Errors
    ///
    /// As [`Zswap::load`].
    pub fn load_kind(&self, offset: u64, page: &mut Page) -> Result<LoadKind, LoadError> {
        self.load_marking::<false>(offset, page)
    }

    /// [`Zswap::load`] for a pager that keeps the page and its compressed copy both (the
    /// kernel's swap cache keeping a page's swap slot after a swap-in for reading): the entry
    /// stays as a clean copy, so that paging the page out again costs no compression. A
    /// clean copy is redundant while its owner holds the page, and is the first thing the
    /// tier drops at its budget ([`Stats::clean_dropped`](crate::Stats::clean_dropped)),
    /// before writing anything back and instead of refusing a store: it is never written
    /// back to the device. Before the owner drops its page, [`Zswap::clear_clean`] turns the
    /// copy back into an ordinary entry, or says that it is gone. A store at the offset,
    /// [`Zswap::invalidate`] and [`Zswap::take`] end the mark with the entry; a load keeps
    /// it. Only copies in the pool are dropped: a same-filled page or one on the device
    /// holds no pool memory.
    ///
    /// ```
    /// use acomp_zswap::{PAGE_SIZE, Page, Zswap};
    ///
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let zswap = Zswap::builder(acomp::Acomp::new("lz4")?).build()?;
    /// let mut page: Page = [0; PAGE_SIZE];
    /// page[..13].copy_from_slice(b"a clean page!");
    /// zswap.store(7, &page)?; // paged out
    /// let mut back = [0; PAGE_SIZE];
    /// zswap.load_clean(7, &mut back)?; // faulted in for reading: the copy stays
    /// assert_eq!(zswap.stats().clean_pages, 1);
    /// // Paging it out again: no store, as long as the copy is still there.
    /// assert!(zswap.clear_clean(7));
    /// assert_eq!(zswap.stats().clean_pages, 0);
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// # Errors
    ///
    /// As [`Zswap::load`]; on an error the entry is not marked.
    pub fn load_clean(&self, offset: u64, page: &mut Page) -> Result<(), LoadError> {
        self.load_marking::<true>(offset, page).map(|_| ())
    }

    /// Turns the clean copy at `offset` back into an ordinary entry, under the entry's
    /// lock, so that the tier can no longer drop it. Returns whether `offset` still has an
    /// entry: true, and the owner may drop its page (the entry is the page again); false
    /// where the tier dropped the copy at its budget (or it was invalidated), and the owner
    /// must store the page again to page it out. True also where the entry was not clean.
    pub fn clear_clean(&self, offset: u64) -> bool {
        loop {
            let Some(entry) = self.lookup(offset) else {
                return false;
            };
            let state = entry.state.write();
            if matches!(*state, State::Dead) {
                // Dropped, invalidated or replaced since the lookup: look again.
                continue;
            }
            if entry.clean.swap(false, Relaxed) {
                dec(&self.counters.clean_pages);
                self.lru.follow_mark(&entry);
            }
            return true;
        }
    }

    /// A load; one of [`Zswap::load_clean`] where `CLEAN`, marking the entry under the same
    /// lock as it reads it.
    #[inline(always)]
    fn load_marking<const CLEAN: bool>(
        &self,
        offset: u64,
        page: &mut Page,
    ) -> Result<LoadKind, LoadError> {
        loop {
            let entry = self.lookup(offset).ok_or(LoadError::NotFound)?;
            #[cfg(feature = "test-hooks")]
            crate::hooks::run_after_lookup(offset);
            let state = entry.state.read();
            if matches!(*state, State::Dead) {
                // Replaced or invalidated since the lookup: look again.
                continue;
            }
            entry.referenced.store(true, Relaxed);
            entry.idle.touch();
            let kind = self.read(&state, page)?;
            if CLEAN && !entry.clean.swap(true, Relaxed) {
                inc(&self.counters.clean_pages);
                self.lru.follow_mark(&entry);
            }
            return Ok(kind);
        }
    }

    /// Loads and invalidates in one step (an exclusive load, as zswap's for a page that
    /// leaves swap): no other load sees the entry after this one.
    ///
    /// # Errors
    ///
    /// As [`Zswap::load`]; on an error the entry is kept.
    pub fn take(&self, offset: u64, page: &mut Page) -> Result<LoadKind, LoadError> {
        loop {
            let entry = self.lookup(offset).ok_or(LoadError::NotFound)?;
            let mut state = entry.state.write();
            if matches!(*state, State::Dead) {
                continue;
            }
            let kind = self.read(&state, page)?;
            let mut shard = self.shard(offset).lock();
            if shard.get(&offset).is_some_and(|e| Arc::ptr_eq(e, &entry)) {
                shard.remove(&offset);
                drop(shard);
                self.release(&mut state, &entry);
            }
            // Else a store replaced it meanwhile (an overlapping store) and frees it.
            return Ok(kind);
        }
    }

    /// The page of a live entry, under its lock.
    pub(crate) fn read(&self, state: &State, page: &mut Page) -> Result<LoadKind, LoadError> {
        let c = &self.counters;
        match state {
            State::Dead => unreachable!("callers look dead entries up again"),
            State::Filled(fill) => {
                page.fill(*fill);
                Ok(LoadKind::Filled)
            }
            State::Pool {
                handle, raw: true, ..
            } => {
                self.pool.read_sg(handle, PAGE_SIZE, |frags| {
                    let mut at = 0;
                    for f in frags {
                        page[at..at + f.len()].copy_from_slice(f);
                        at += f.len();
                    }
                });
                Ok(LoadKind::Copied)
            }
            State::Pool {
                handle,
                length,
                codec,
                ..
            } => {
                let tfm = self.transform(*codec);
                let (res, kind) = self.pool.read_sg(handle, *length as usize, |src| {
                    let kind = if src.len() == 1 {
                        LoadKind::OneFragment
                    } else {
                        LoadKind::Straddling
                    };
                    (tfm.decompress(src, &mut [IoSliceMut::new(page)]), kind)
                });
                match res {
                    Ok(PAGE_SIZE) => Ok(kind),
                    Ok(n) => Err(LoadError::WrongLength(n)),
                    Err(e) => Err(LoadError::Decompress(e)),
                }
                .inspect_err(|_| inc(&c.decompress_fail))
            }
            State::Folio { folio, index } => self.read_folio_page(folio, *index, page),
            State::Device {
                key,
                checksum: expected,
            } => {
                let dev = self.device.as_ref().expect("written back to a device");
                if let Err(e) = dev.read_page(*key, page) {
                    inc(&c.device_read_fail);
                    return Err(LoadError::Io(e));
                }
                let found = checksum(*key, page);
                if found != *expected {
                    inc(&c.device_corrupt);
                    return Err(LoadError::Corrupt {
                        key: *key,
                        expected: *expected,
                        found,
                    });
                }
                inc(&c.device_loads);
                Ok(LoadKind::Device)
            }
        }
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
    fn release(&self, state: &mut State, entry: &Entry) {
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
                raw,
                ..
            } => {
                self.lru.remove(entry);
                self.pool.free(handle);
                dec(&c.stored_pages);
                if raw {
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

    /// Whether the pool is at or below the accept threshold, which ends the refusals of a
    /// pool that hit its budget (zswap's hysteresis). Without a device, compaction is the
    /// only way back there (the kernel's zsmalloc compacts by itself, from its shrinker): it
    /// runs first where the room left inside zspages could cover the excess and objects were
    /// freed since it last ran for this, so that refused stores do not compact over and over
    /// for nothing.
    fn at_threshold(&self) -> bool {
        let s = self.pool.stats();
        if self.device.is_none() && s.pages > self.accept_pages {
            let excess = (s.pages - self.accept_pages) * PAGE_SIZE;
            let room = s.total_size().saturating_sub(s.used_bytes);
            if room >= excess && s.used_bytes < self.compacted_at.load(Relaxed) {
                if let Some(_one) = self.shrinking.try_lock() {
                    self.compact();
                    self.compacted_at
                        .store(self.pool.stats().used_bytes, Relaxed);
                }
            }
        }
        if self.pool.stats().pages <= self.accept_pages {
            self.full.store(false, Relaxed);
            self.compacted_at.store(usize::MAX, Relaxed);
            true
        } else {
            false
        }
    }

    /// Compaction (`zs_compact`): moves the objects of the pool's emptiest zspages into
    /// fuller ones of their class, so that the emptied zspages' backing pages are freed.
    /// Returns how many objects moved. Loads of the objects moved wait for their move; others
    /// do not.
    pub fn compact(&self) -> usize {
        let mut moved = 0;
        for (offset, place) in self.pool.compaction_candidates() {
            let Some(entry) = self.lookup(offset) else {
                continue;
            };
            let mut state = entry.state.write();
            let done = match &mut *state {
                State::Pool { handle, length, .. } => {
                    handle.place() == place && self.pool.migrate(handle, *length as usize)
                }
                State::Folio { folio, .. } => self.migrate_folio(folio, place),
                _ => false,
            };
            moved += usize::from(done);
        }
        self.counters
            .compacted_objects
            .fetch_add(moved as u64, Relaxed);
        moved
    }
}
