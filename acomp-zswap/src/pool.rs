//! A pool for compressed pages in the manner of the kernel's `mm/zsmalloc.c`.
//!
//! Objects are sorted into size classes 16 bytes apart (`ZS_SIZE_CLASS_DELTA`), from 32
//! bytes (`ZS_MIN_ALLOC_SIZE`) to a page. A class packs its objects back to back into
//! zspages: runs of up to [`MAX_PAGES_PER_ZSPAGE`] 4 KiB backing pages, as many as waste the
//! least space. The arena hands a zspage pages in a row of one chunk where one of its
//! fullest chunks has them, else any free pages, in the order of their numbers: so the
//! pages are neighbours in memory most of the time, not always. An object may straddle two
//! backing pages. Where they are neighbours in one of the arena's chunks (page n and n + 1 of one
//! mapping), the object is contiguous in memory and reading it hands out one fragment;
//! else two, as `zs_obj_read_sg_begin` builds a two-entry scatterlist, and the caller
//! decompresses straight out of them (acomp's lz4 copies them onto the stack first: its
//! block decoder needs its source in one piece; zstd streams them).
//!
//! Backing pages come from the pool's own arena (`pool/arena.rs`): chunks of [`CHUNK_SIZE`]
//! bytes mapped from the kernel, populated once, their pages
//! reused without zeroing, and never unmapped while the pool lives. A chunk goes back to the
//! kernel whole where all its pages are free and the arena's other free pages reach
//! [`ARENA_HIGH_PAGES`] (`MADV_DONTNEED` over the chunk: it stays mapped, not resident
//! ([`PoolStats::released_chunks`]), and the next growth populates it again before it maps a
//! new one); and a page freed while the arena already keeps that many free pages resident,
//! in a chunk still in use, goes back on its own (`MADV_DONTNEED`; it stays mapped, and is
//! taken after the resident ones).
//! How pages are counted: the budget and [`PoolStats::total_size`] (zswap's
//! `pool_total_size`) count the backing pages in zspages, as zsmalloc counts them; the free
//! pages the arena keeps resident ([`PoolStats::cached_pages`]) are not counted, as the
//! kernel's free pages are not zsmalloc's. They are at most [`ARENA_HIGH_PAGES`] (2 MiB), but
//! for a chunk just mapped or populated again, whose pages are resident until used (one
//! chunk is added at a time: when fewer free pages than a zspage's are left, or, with growth
//! ahead ([`Pool::set_arena_thread`]), by the arena's own thread when fewer than
//! [`GROW_AHEAD_PAGES`] are): the backing pages' resident memory
//! ([`PoolStats::resident_size`]) exceeds `pool_total_size` by less than
//! [`GROW_AHEAD_PAGES`] and a chunk, 3 MiB. After scattered invalidation and compaction, chunks
//! still in use keep their free pages mapped but not resident ([`PoolStats::released_pages`]).
//!
//! Each class keeps its zspages in zsmalloc's fullness groups: lists by the share of their
//! objects in use, in steps of 10% (`enum fullness_group`, `get_fullness_group`), each an
//! intrusive doubly linked list, so that an allocation or a free moves a zspage in O(1)
//! (full zspages on none: nothing looks for one).
//! Allocation takes an object from the zspage at the head of the fullest group with room
//! (`find_get_zspage`): a zspage within 10% of the fullest, not always the fullest itself,
//! as in zsmalloc, so that the emptiest zspages drain; [`Pool::compaction_candidates`] takes
//! the objects of zspages of the emptiest groups and [`Pool::migrate`] moves them into the
//! fullest (`zs_compact`), so that churn does not leave the pool half empty.
//!
//! A [`Handle`] is 12 bytes of numbers, with no `Arc` and no `Drop`: its first backing page
//! by its number in the arena, which keeps every chunk while the pool lives, and the page it
//! ends in by its index in that page's chunk (`pool/handle.rs`). It is not
//! `Clone`: the one owner of an object frees it, once, and nothing outlives the free. Each
//! object carries its owner's tag (the store's swap offset), so that compaction can find who
//! to tell, and the shrinker the offset of an entry it takes from the LRU ([`Pool::owner`]).
//!
//! Locking: each class's bookkeeping (which objects are free) sits behind its own mutex,
//! the `class->lock` of zsmalloc, taken to allocate and free, to read an object's owner's
//! tag, and to find the second page of an object that ends in another chunk than it starts
//! (its zspage's row has it; a zspage's pages come from two chunks only where no chunk had
//! a run of them free). An object's bytes take no lock: a handle names its pages (or its
//! zspage's row does), so that reads and writes go straight to them through
//! the arena's chunk table, and the handle's own borrows keep them apart ([`Pool::read_sg`]
//! borrows it, [`Pool::write`] and [`Pool::migrate`] borrow it exclusively, [`Pool::free`]
//! takes it), as zsmalloc's reads take no lock of the page but rely on the caller's (zswap's
//! entry, zram's slot lock): the tier's entry lock is that caller's lock here. No class
//! lock is held while the arena maps, populates or gives back a chunk, and the arena's own
//! lock not either.
//!
//! Here: the pool, allocation and freeing; `pool/arena.rs` the backing pages (the chunk
//! itself, mapping and byte access, is the crate's `sys/chunk.rs`, where its `unsafe` is,
//! but for the calls of it in `pool/access.rs` and `pool/arena.rs`);
//! `pool/class.rs` the size classes and zspages; `pool/access.rs` reads and writes through
//! handles; `pool/frame.rs` frames of any length; `pool/compact.rs` compaction.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering::Relaxed};

use parking_lot::Mutex;

pub use crate::PAGE_SIZE;

mod access;
mod arena;
mod class;
mod compact;
mod frame;
mod handle;
mod stats;

// The tier uses `CHUNK_SIZE`; the crate's tests (`test-hooks`) read the other two.
#[cfg_attr(not(feature = "test-hooks"), allow(unused_imports))]
pub use arena::{ARENA_HIGH_PAGES, CHUNK_PAGES, CHUNK_SIZE, GROW_AHEAD_PAGES, TRIM_SLACK};
use arena::{Arena, BackingPage};
pub use class::ClassInfo;
use class::{ClassState, SizeClass, class_index};
#[cfg(test)]
use class::{ZS_INUSE_RATIO_10, ZS_INUSE_RATIO_99, ZS_INUSE_RATIO_100, fullness_group};
pub use frame::copy_frags;
pub use handle::Handle;
use handle::Second;
pub use stats::PoolStats;

/// The smallest object a class holds (`ZS_MIN_ALLOC_SIZE`).
pub const MIN_ALLOC_SIZE: usize = 32;

/// Distance between class sizes in bytes (`ZS_SIZE_CLASS_DELTA`: `PAGE_SIZE >> 8`).
pub const CLASS_DELTA: usize = PAGE_SIZE >> 8;

/// Most backing pages in one zspage (`ZS_MAX_PAGES_PER_ZSPAGE`, the kernel's default
/// `CONFIG_ZSMALLOC_CHAIN_SIZE`).
pub const MAX_PAGES_PER_ZSPAGE: usize = 8;

/// Number of size classes: 32, 48, ... 4096 bytes.
pub const NR_CLASSES: usize = (PAGE_SIZE - MIN_ALLOC_SIZE) / CLASS_DELTA + 1;

/// Why [`Pool::alloc`] failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AllocError {
    /// The object is empty or larger than a page: zsmalloc refuses both.
    BadSize(usize),
    /// Another zspage would take the pool past its limit in backing pages (zswap's
    /// `max_pool_percent`).
    LimitHit,
}

impl std::fmt::Display for AllocError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            AllocError::BadSize(n) => write!(f, "no size class holds {n} bytes"),
            AllocError::LimitHit => write!(f, "pool limit hit"),
        }
    }
}

impl std::error::Error for AllocError {}

/// A zsmalloc-style pool: `alloc`, `write`, `read_sg`, `free`. `Send + Sync`; every method
/// takes `&self`.
///
/// Only the crate makes one (each tier its own, with `Pool::new`), so that no [`Handle`] meets
/// another pool, whose objects have the same numbers:
///
/// ```compile_fail
/// let pool = acomp_zswap::pool::Pool::new(None);
/// ```
pub struct Pool {
    classes: Box<[SizeClass]>,
    /// Backing pages now in zspages (`zs_get_total_pages`).
    pages: AtomicUsize,
    /// The backing pages, in chunks: those in zspages and the free ones kept for new zspages.
    arena: Arena,
    /// Most backing pages allowed in zspages, if limited.
    max_pages: Option<usize>,
    /// Objects now allocated.
    objects: AtomicUsize,
    /// Bytes of the classes of the objects now allocated.
    used_bytes: AtomicUsize,
    /// Reads whose object straddled two backing pages.
    straddled_reads: AtomicU64,
    /// Of those, reads that got one fragment: the two pages neighbours in one chunk.
    joined_reads: AtomicU64,
    /// Test hook: reads hand every straddling object out as two fragments.
    #[cfg(any(test, feature = "test-hooks"))]
    split_reads: std::sync::atomic::AtomicBool,
    /// New zspages being set up: their pages counted in `pages`, their first object not yet
    /// in `objects`.
    zspages_in_flight: AtomicUsize,
}

/// A new zspage being set up, counted in [`Pool::zspages_in_flight`] until it is dropped
/// (its object counted, or the limit hit, or a panic: never left counted).
struct InFlight<'a>(&'a AtomicUsize);

impl<'a> InFlight<'a> {
    fn new(count: &'a AtomicUsize) -> Self {
        count.fetch_add(1, Relaxed);
        InFlight(count)
    }
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Relaxed);
    }
}

impl std::fmt::Debug for Pool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pool")
            .field("stats", &self.stats())
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
impl Default for Pool {
    fn default() -> Self {
        Pool::new(None)
    }
}

/// The geometry of the class that holds objects of `size` bytes, if any (1 to a page):
/// every pool's classes are the same. For the crate's tests, which cannot make a pool.
#[cfg_attr(not(feature = "test-hooks"), allow(dead_code))]
pub fn class_of(size: usize) -> Option<ClassInfo> {
    (1..=PAGE_SIZE)
        .contains(&size)
        .then(|| ClassInfo::new(class_index(size)))
}

impl Pool {
    /// An empty pool; with `max_pages`, allocation fails once a new zspage would take the
    /// pool past that many backing pages.
    ///
    /// The crate's own (each tier makes one), not public even with the `test-hooks`
    /// feature: a [`Handle`] is plain numbers, which another pool's objects also have, so
    /// that a second pool reachable from safe code could be handed this pool's handles and
    /// read or free another object's bytes while its owner writes them. Within the crate
    /// each tier's handles go to its own pool only.
    pub(crate) fn new(max_pages: Option<usize>) -> Self {
        let classes = (0..NR_CLASSES)
            .map(|i| {
                let info = ClassInfo::new(i);
                SizeClass {
                    info,
                    state: Mutex::new(ClassState::new(&info)),
                }
            })
            .collect();
        Pool {
            classes,
            pages: AtomicUsize::new(0),
            arena: Arena::default(),
            max_pages,
            objects: AtomicUsize::new(0),
            zspages_in_flight: AtomicUsize::new(0),
            used_bytes: AtomicUsize::new(0),
            straddled_reads: AtomicU64::new(0),
            joined_reads: AtomicU64::new(0),
            #[cfg(any(test, feature = "test-hooks"))]
            split_reads: std::sync::atomic::AtomicBool::new(false),
        }
    }

    /// The arena's own thread (off in a new pool): once fewer than [`GROW_AHEAD_PAGES`] free
    /// backing pages are left, it adds the next chunk, so that an allocation does not wait on
    /// the kernel's page faults (an allocation that finds no free page while that chunk is
    /// being added waits for it); and once more than [`ARENA_HIGH_PAGES`] + `TRIM_SLACK`
    /// free pages are resident, it gives those beyond the mark back in runs, where each free
    /// would give its page back alone. The thread starts when first needed and ends with the
    /// pool.
    pub fn set_arena_thread(&self, on: bool) {
        self.arena.set_thread(on);
    }

    /// Waits until the arena's thread has given back the free pages it was asked to give
    /// back (at once where it is off, or has nothing to do): a caller that freed many pages
    /// (a recompression pass) returns with them gone, not with the thread's `MADV_DONTNEED`s
    /// still running beside the program's next loads.
    pub(crate) fn settle(&self) {
        self.arena.settle();
    }

    /// The class that holds objects of `size` bytes, if any.
    pub fn class_info(&self, size: usize) -> Option<ClassInfo> {
        (1..=PAGE_SIZE)
            .contains(&size)
            .then(|| self.classes[class_index(size)].info)
    }

    /// Allocates an object of `size` bytes (`zs_malloc`) tagged with `owner`: a free object
    /// of a zspage of its class's fullest fullness group with room (within 10% of the
    /// fullest zspage), or a new zspage's first one. Its bytes
    /// are whatever the last owner left.
    ///
    /// # Errors
    ///
    /// [`AllocError::BadSize`] for 0 or more than [`PAGE_SIZE`] bytes;
    /// [`AllocError::LimitHit`] where a new zspage would pass the limit.
    pub fn alloc(&self, size: usize, owner: u64) -> Result<Handle, AllocError> {
        if !(1..=PAGE_SIZE).contains(&size) {
            return Err(AllocError::BadSize(size));
        }
        let index = class_index(size);
        let class = &self.classes[index];
        if let Some(handle) = Self::alloc_from_partial(index, class, owner, None) {
            self.allocated(class);
            return Ok(handle);
        }
        // Take the new zspage's pages with no class lock held (zsmalloc's `alloc_zspage`).
        // Counted before they are taken, and only if within the limit: never over it, not
        // even for a moment (a reader of `stats` sees no page that is not allowed).
        let nr = class.info.pages_per_zspage;
        let max = self.max_pages.unwrap_or(usize::MAX);
        let _in_flight = InFlight::new(&self.zspages_in_flight);
        self.pages
            .fetch_update(Relaxed, Relaxed, |p| {
                p.checked_add(nr).filter(|&t| t <= max)
            })
            .map_err(|_| AllocError::LimitHit)?;
        #[cfg(feature = "test-hooks")]
        crate::hooks::run_setting_up_zspage(owner);
        let pages = self.arena.take(nr);
        // Object 0 is handed out now; the rest are free, lowest taken first.
        let mut state = class.state.lock();
        let id = state.open(&pages[..nr], class.info.objs_per_zspage, owner);
        let handle = class.handle(&state, index, id, 0);
        drop(state);
        self.allocated(class);
        Ok(handle)
    }

    /// New zspages other threads are setting up now (taking their pages from the arena,
    /// which may wait for the chunk being added): their pages are counted in
    /// [`PoolStats::pages`] before their first object is in [`PoolStats::objects`], so that a
    /// pool at its limit may count pages and no object for a moment. The shrinker waits for
    /// them before it gives up.
    pub fn zspages_in_flight(&self) -> usize {
        self.zspages_in_flight.load(Relaxed)
    }

    fn allocated(&self, class: &SizeClass) {
        self.objects.fetch_add(1, Relaxed);
        self.used_bytes.fetch_add(class.info.size, Relaxed);
    }

    /// An object of a zspage of the fullest group with room, other than `except`.
    fn alloc_from_partial(
        index: usize,
        class: &SizeClass,
        owner: u64,
        except: Option<u32>,
    ) -> Option<Handle> {
        let mut state = class.state.lock();
        let id = state.find_get_zspage(except)?;
        let obj = state.take_object(id, owner);
        let handle = class.handle(&state, index, id, obj);
        state.fix_fullness_group(id, class.info.objs_per_zspage);
        Some(handle)
    }

    /// The owner's tag `handle`'s object was allocated with (kept when compaction moves it):
    /// the tier's shrinker learns an entry's offset from it.
    pub fn owner(&self, handle: &Handle) -> u64 {
        let state = self.classes[handle.class()].state.lock();
        debug_assert!(state.in_use(handle.zspage), "a live handle's zspage");
        state.owner(handle.zspage, handle.obj())
    }

    /// Frees an object (`zs_free`); a zspage whose objects are all free is released, its
    /// backing pages back to the arena.
    pub fn free(&self, handle: Handle) {
        let class = &self.classes[handle.class()];
        let (id, obj) = (handle.zspage, handle.obj());
        let mut state = class.state.lock();
        if state.put_object(id, obj) == 0 {
            let nr = class.info.pages_per_zspage;
            let pages = state.close(id, nr);
            drop(state);
            self.arena.give(&pages[..nr]);
            self.pages.fetch_sub(nr, Relaxed);
        } else {
            state.fix_fullness_group(id, class.info.objs_per_zspage);
        }
        self.objects.fetch_sub(1, Relaxed);
        self.used_bytes.fetch_sub(class.info.size, Relaxed);
    }

    /// Backing pages of the arena's chunks resident now, as the kernel counts them
    /// (`mincore`): for tests that the memory given back left the process's RSS.
    #[cfg(any(test, feature = "test-hooks"))]
    pub fn resident_pages(&self) -> usize {
        self.arena.resident_pages()
    }

    /// Bytes of the zspages' bookkeeping, every class's rows (for the `inspect` feature).
    #[cfg(feature = "inspect")]
    pub fn bookkeeping_bytes(&self) -> usize {
        self.classes.iter().map(|c| c.state.lock().bytes()).sum()
    }

    /// A snapshot of the counters.
    pub fn stats(&self) -> PoolStats {
        let (cached_pages, released_pages, chunks, released_chunks) = self.arena.counts();
        PoolStats {
            pages: self.pages.load(Relaxed),
            cached_pages,
            released_pages,
            chunks,
            released_chunks,
            objects: self.objects.load(Relaxed),
            used_bytes: self.used_bytes.load(Relaxed),
            straddled_reads: self.straddled_reads.load(Relaxed),
            joined_reads: self.joined_reads.load(Relaxed),
        }
    }
}

#[cfg(test)]
mod tests;
