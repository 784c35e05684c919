//! A pool for compressed pages in the manner of the kernel's `mm/zsmalloc.c`.
//!
//! Objects are sorted into size classes 16 bytes apart (`ZS_SIZE_CLASS_DELTA`), from 32
//! bytes (`ZS_MIN_ALLOC_SIZE`) to a page. A class packs its objects back to back into
//! zspages: runs of up to [`MAX_PAGES_PER_ZSPAGE`] separately allocated 4 KiB backing
//! pages, as many as waste the least space. So an object may straddle two backing pages;
//! reading it hands out two fragments, as `zs_obj_read_sg_begin` builds a two-entry
//! scatterlist, and the caller decompresses straight out of them without a copy.
//!
//! Allocation takes an object from the fullest zspage of its class with room, as zsmalloc's
//! fullness groups do, so that the emptiest zspages drain; [`Pool::compaction_candidates`]
//! and [`Pool::migrate`] move the objects of sparse zspages into fuller ones
//! (`zs_compact`), so that churn does not leave the pool half empty.
//!
//! A [`Handle`] is not `Clone`: the one owner of an object frees it, once, and nothing
//! outlives the free. Each object carries its owner's tag (the store's swap offset), so that
//! compaction can find who to tell.
//!
//! Locking: each class's bookkeeping (which objects are free) sits behind its own mutex,
//! the `class->lock` of zsmalloc, taken to allocate and free only. Each backing page has a
//! read-write lock, held for reading while a caller decompresses out of it and for writing
//! while an object is copied in; a handle holds its pages, so that reads and writes go
//! straight to them. No lock is held while pages are allocated.

use std::collections::BTreeSet;
use std::io::IoSlice;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering::Relaxed};

use parking_lot::{Mutex, RwLock};

pub use crate::PAGE_SIZE;

/// The smallest object a class holds (`ZS_MIN_ALLOC_SIZE`).
pub const MIN_ALLOC_SIZE: usize = 32;

/// Distance between class sizes in bytes (`ZS_SIZE_CLASS_DELTA`: `PAGE_SIZE >> 8`).
pub const CLASS_DELTA: usize = PAGE_SIZE >> 8;

/// Most backing pages in one zspage (`ZS_MAX_PAGES_PER_ZSPAGE`, the kernel's default
/// `CONFIG_ZSMALLOC_CHAIN_SIZE`).
pub const MAX_PAGES_PER_ZSPAGE: usize = 8;

/// Number of size classes: 32, 48, ... 4096 bytes.
pub const NR_CLASSES: usize = (PAGE_SIZE - MIN_ALLOC_SIZE) / CLASS_DELTA + 1;

/// Backing pages a refill of the page cache allocates beyond the need of the moment: the
/// batch of the kernel's per-CPU page lists (`pcp->batch`).
pub const PAGE_BATCH: usize = 63;

/// Most free backing pages the cache keeps; beyond, freed pages go back to the allocator
/// (`pcp->high`).
pub const PAGE_HIGH: usize = 4 * PAGE_BATCH;

/// A backing page with its lock, shared by its zspage and the handles of its objects.
type BackingPage = Arc<RwLock<[u8; PAGE_SIZE]>>;

/// Where an object lives: the counterpart of zsmalloc's `unsigned long handle`. It holds
/// the backing pages the object lies on (the second only where it straddles), so that a
/// read takes no lock but theirs. Not `Clone`: [`Pool::free`] takes it by value.
pub struct Handle {
    first: BackingPage,
    second: Option<BackingPage>,
    class: u16,
    zspage: u32,
    obj: u16,
}

impl std::fmt::Debug for Handle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Handle")
            .field("class", &self.class)
            .field("zspage", &self.zspage)
            .field("obj", &self.obj)
            .finish_non_exhaustive()
    }
}

impl Handle {
    /// Where the object is: (class index, zspage id, object index). Two live handles never
    /// have the same place.
    pub fn place(&self) -> (u16, u32, u16) {
        (self.class, self.zspage, self.obj)
    }
}

impl PartialEq for Handle {
    fn eq(&self, other: &Self) -> bool {
        self.place() == other.place()
    }
}

impl Eq for Handle {}

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

/// The geometry of one size class.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ClassInfo {
    /// Bytes each object takes.
    pub size: usize,
    /// Backing pages per zspage.
    pub pages_per_zspage: usize,
    /// Objects per zspage.
    pub objs_per_zspage: usize,
}

impl ClassInfo {
    /// The class of index `i`, with the zspage length that wastes the least, as
    /// zsmalloc's `get_pages_per_zspage` picks it (the first best, so the shortest).
    fn new(i: usize) -> Self {
        let size = MIN_ALLOC_SIZE + i * CLASS_DELTA;
        let used = |pages: usize| (pages * PAGE_SIZE) / size * size * 100 / (pages * PAGE_SIZE);
        let pages_per_zspage = (1..=MAX_PAGES_PER_ZSPAGE)
            .rev()
            .max_by_key(|&p| used(p))
            .expect("at least one length");
        ClassInfo {
            size,
            pages_per_zspage,
            objs_per_zspage: pages_per_zspage * PAGE_SIZE / size,
        }
    }
}

/// The index of the class that holds `size` bytes.
fn class_index(size: usize) -> usize {
    size.max(MIN_ALLOC_SIZE)
        .saturating_sub(MIN_ALLOC_SIZE)
        .div_ceil(CLASS_DELTA)
}

/// A backing page, touched now: the kernel's `alloc_zspage` gets pages that memory already
/// backs, and so must we, or the first write into each page pays a page fault.
fn backing_page() -> BackingPage {
    let page = Arc::new(RwLock::new([0u8; PAGE_SIZE]));
    // Zeroed memory may come from calloc, untouched: write it, so that it cannot be elided.
    std::hint::black_box(&page).write().fill(0);
    page
}

/// Free backing pages, kept as the kernel's per-CPU page lists keep them: refilled a batch at
/// a time, trimmed above a high mark. Without it, a store that opens a zspage in user space
/// pays malloc and a page fault per backing page, where the kernel's `alloc_page` is cheap.
#[derive(Default)]
struct PageCache {
    free: Mutex<Vec<BackingPage>>,
}

impl PageCache {
    /// `nr` backing pages; refills outside the lock where the cache holds too few.
    fn take(&self, nr: usize) -> Vec<BackingPage> {
        {
            let mut free = self.free.lock();
            if let Some(at) = free.len().checked_sub(nr) {
                return free.split_off(at);
            }
        }
        let mut pages: Vec<_> = (0..nr + PAGE_BATCH).map(|_| backing_page()).collect();
        let batch = pages.split_off(nr);
        self.free.lock().extend(batch);
        pages
    }

    /// Takes back the pages of a released zspage, up to the high mark. A page that a reader
    /// still holds is left to it, and freed when it lets go.
    fn give(&self, pages: Vec<BackingPage>) {
        let mut free = self.free.lock();
        let room = PAGE_HIGH.saturating_sub(free.len());
        let (keep, rest): (Vec<_>, Vec<_>) =
            pages.into_iter().partition(|p| Arc::strong_count(p) == 1);
        free.extend(keep.into_iter().take(room));
        drop(free);
        // Any rest is freed here, outside the lock.
        drop(rest);
    }

    fn len(&self) -> usize {
        self.free.lock().len()
    }
}

/// A zspage's bookkeeping, under its class's lock.
struct Zspage {
    pages: Vec<BackingPage>,
    /// Indices of its free objects.
    free: Vec<u16>,
    /// The owner's tag of each object (meaningless for free ones).
    owners: Vec<u64>,
}

/// A class's bookkeeping: its zspages by id, and which have free objects.
struct ClassState {
    zspages: Vec<Option<Zspage>>,
    /// Ids in `zspages` that are empty, to reuse before growing the vector.
    vacant: Vec<u32>,
    /// Zspages with at least one free object, keyed by (free objects, id): the first is the
    /// fullest, where allocation goes (zsmalloc's fullness groups), the last the emptiest,
    /// which compaction drains.
    partial: BTreeSet<(u16, u32)>,
}

impl ClassState {
    fn free_count(&self, id: u32) -> u16 {
        self.zspages[id as usize]
            .as_ref()
            .map_or(0, |z| z.free.len() as u16)
    }
}

struct SizeClass {
    info: ClassInfo,
    state: Mutex<ClassState>,
}

impl SizeClass {
    /// The handle of object `obj` of zspage `id`.
    fn handle(&self, index: usize, id: u32, zspage: &Zspage, obj: u16) -> Handle {
        let off = obj as usize * self.info.size;
        let (page, in_page) = (off / PAGE_SIZE, off % PAGE_SIZE);
        Handle {
            first: Arc::clone(&zspage.pages[page]),
            second: (in_page + self.info.size > PAGE_SIZE)
                .then(|| Arc::clone(&zspage.pages[page + 1])),
            class: index as u16,
            zspage: id,
            obj,
        }
    }
}

/// A zsmalloc-style pool: `alloc`, `write`, `read_sg`, `free`. `Send + Sync`; every method
/// takes `&self`.
pub struct Pool {
    classes: Box<[SizeClass]>,
    /// Backing pages now in zspages (`zs_get_total_pages`).
    pages: AtomicUsize,
    /// Free backing pages, ready for new zspages.
    page_cache: PageCache,
    /// Most backing pages allowed in zspages, if limited.
    max_pages: Option<usize>,
    /// Objects now allocated.
    objects: AtomicUsize,
    /// Bytes of the classes of the objects now allocated.
    used_bytes: AtomicUsize,
    /// Reads that got two fragments.
    straddled_reads: AtomicU64,
}

impl std::fmt::Debug for Pool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pool")
            .field("stats", &self.stats())
            .finish_non_exhaustive()
    }
}

impl Default for Pool {
    fn default() -> Self {
        Pool::new(None)
    }
}

/// A snapshot of the pool's counters.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PoolStats {
    /// Backing pages in zspages.
    pub pages: usize,
    /// Free backing pages cached for new zspages (not in `pages`).
    pub cached_pages: usize,
    /// Objects allocated.
    pub objects: usize,
    /// Bytes the allocated objects take, each its class's size.
    pub used_bytes: usize,
    /// Reads whose object straddled two backing pages.
    pub straddled_reads: u64,
}

impl PoolStats {
    /// Bytes of backing pages in zspages: zswap's `pool_total_size`.
    pub fn total_size(&self) -> usize {
        self.pages * PAGE_SIZE
    }

    /// `used_bytes / total_size()`: 1.0 where every byte of every zspage holds an object
    /// (and for an empty pool).
    pub fn packing(&self) -> f64 {
        if self.pages == 0 {
            1.0
        } else {
            self.used_bytes as f64 / self.total_size() as f64
        }
    }
}

impl Pool {
    /// An empty pool; with `max_pages`, allocation fails once a new zspage would take the
    /// pool past that many backing pages.
    pub fn new(max_pages: Option<usize>) -> Self {
        let classes = (0..NR_CLASSES)
            .map(|i| SizeClass {
                info: ClassInfo::new(i),
                state: Mutex::new(ClassState {
                    zspages: Vec::new(),
                    vacant: Vec::new(),
                    partial: BTreeSet::new(),
                }),
            })
            .collect();
        Pool {
            classes,
            pages: AtomicUsize::new(0),
            page_cache: PageCache::default(),
            max_pages,
            objects: AtomicUsize::new(0),
            used_bytes: AtomicUsize::new(0),
            straddled_reads: AtomicU64::new(0),
        }
    }

    /// The class that holds objects of `size` bytes, if any.
    pub fn class_info(&self, size: usize) -> Option<ClassInfo> {
        (1..=PAGE_SIZE)
            .contains(&size)
            .then(|| self.classes[class_index(size)].info)
    }

    /// Allocates an object of `size` bytes (`zs_malloc`) tagged with `owner`: a free object
    /// of the fullest zspage of its class with room, or a new zspage's first one. Its bytes
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
        self.pages
            .fetch_update(Relaxed, Relaxed, |p| {
                p.checked_add(nr).filter(|&t| t <= max)
            })
            .map_err(|_| AllocError::LimitHit)?;
        let objs = class.info.objs_per_zspage as u16;
        // Object 0 is handed out now; the rest are free, lowest popped first.
        let mut owners = vec![0; objs as usize];
        owners[0] = owner;
        let zspage = Zspage {
            pages: self.page_cache.take(nr),
            free: (1..objs).rev().collect(),
            owners,
        };
        let mut state = class.state.lock();
        let id = match state.vacant.pop() {
            Some(id) => id,
            None => {
                state.zspages.push(None);
                (state.zspages.len() - 1) as u32
            }
        };
        let handle = class.handle(index, id, &zspage, 0);
        if !zspage.free.is_empty() {
            state.partial.insert((zspage.free.len() as u16, id));
        }
        state.zspages[id as usize] = Some(zspage);
        drop(state);
        self.allocated(class);
        Ok(handle)
    }

    fn allocated(&self, class: &SizeClass) {
        self.objects.fetch_add(1, Relaxed);
        self.used_bytes.fetch_add(class.info.size, Relaxed);
    }

    /// An object of the fullest partial zspage of the class, other than `except`.
    fn alloc_from_partial(
        index: usize,
        class: &SizeClass,
        owner: u64,
        except: Option<u32>,
    ) -> Option<Handle> {
        let mut state = class.state.lock();
        let key = *state.partial.iter().find(|&&(_, id)| Some(id) != except)?;
        let id = key.1;
        state.partial.remove(&key);
        let zspage = state.zspages[id as usize]
            .as_mut()
            .expect("partial zspages exist");
        let obj = zspage
            .free
            .pop()
            .expect("partial zspages have a free object");
        zspage.owners[obj as usize] = owner;
        let left = zspage.free.len() as u16;
        let handle = class.handle(index, id, zspage, obj);
        if left > 0 {
            state.partial.insert((left, id));
        }
        Some(handle)
    }

    /// Frees an object (`zs_free`); a zspage whose objects are all free is released, its
    /// backing pages back to the page cache.
    pub fn free(&self, handle: Handle) {
        let class = &self.classes[handle.class as usize];
        let (id, obj) = (handle.zspage, handle.obj);
        // Our hold on the pages goes before the lock is taken, so the cache can take them.
        drop(handle);
        let mut state = class.state.lock();
        let before = state.free_count(id);
        let zspage = state.zspages[id as usize]
            .as_mut()
            .expect("a zspage with an object in use is not released");
        debug_assert!(!zspage.free.contains(&obj), "a handle is freed once");
        zspage.free.push(obj);
        let free = zspage.free.len();
        state.partial.remove(&(before, id));
        if free == class.info.objs_per_zspage {
            let released = state.zspages[id as usize].take().expect("checked above");
            state.vacant.push(id);
            drop(state);
            self.page_cache.give(released.pages);
            self.pages.fetch_sub(class.info.pages_per_zspage, Relaxed);
        } else {
            state.partial.insert((free as u16, id));
        }
        self.objects.fetch_sub(1, Relaxed);
        self.used_bytes.fetch_sub(class.info.size, Relaxed);
    }

    /// The objects compaction should move (`zs_compact`): in each class whose free objects
    /// add up to at least a zspage, the objects of its emptiest zspages, as many zspages as
    /// the other zspages' room takes in. Each as (owner's tag, place); a place may be stale
    /// by the time the owner moves it, which [`Pool::migrate`]'s caller checks.
    pub fn compaction_candidates(&self) -> Vec<(u64, (u16, u32, u16))> {
        let mut out = Vec::new();
        for (index, class) in self.classes.iter().enumerate() {
            let state = class.state.lock();
            let per = class.info.objs_per_zspage;
            let mut free: usize = state.partial.iter().map(|&(f, _)| f as usize).sum();
            for &(f, id) in state.partial.iter().rev() {
                let used = per - f as usize;
                // Moving this zspage's objects needs `used` free objects elsewhere.
                if free < per || free - (f as usize) < used {
                    break;
                }
                free -= per;
                let z = state.zspages[id as usize]
                    .as_ref()
                    .expect("partial zspages exist");
                let mut is_free = vec![false; per];
                z.free.iter().for_each(|&o| is_free[o as usize] = true);
                for obj in (0..per).filter(|&o| !is_free[o]) {
                    out.push((z.owners[obj], (index as u16, id, obj as u16)));
                }
            }
        }
        out
    }

    /// Moves the first `len` bytes of the object into an object of another zspage of its
    /// class with room (the fullest), frees the old one and points `handle` at the new:
    /// zsmalloc's `migrate_zspage`. The caller holds the only way to the object (the store's
    /// entry lock), so no reader sees it move. Returns false, changing nothing, where no
    /// other zspage has room.
    pub fn migrate(&self, handle: &mut Handle, len: usize) -> bool {
        let index = handle.class as usize;
        let class = &self.classes[index];
        let owner = {
            let state = class.state.lock();
            state.zspages[handle.zspage as usize]
                .as_ref()
                .map_or(0, |z| z.owners[handle.obj as usize])
        };
        let Some(new) = Self::alloc_from_partial(index, class, owner, Some(handle.zspage)) else {
            return false;
        };
        self.allocated(class);
        let mut buf = [0u8; PAGE_SIZE];
        let len = len.min(class.info.size);
        self.read_sg(handle, len, |frags| {
            let mut at = 0;
            for f in frags {
                buf[at..at + f.len()].copy_from_slice(f);
                at += f.len();
            }
        });
        self.write(&new, &buf[..len]);
        let old = std::mem::replace(handle, new);
        self.free(old);
        true
    }

    /// The byte offset of the object in its first page, and the bytes the object takes.
    fn place(&self, handle: &Handle) -> (usize, usize) {
        let size = self.classes[handle.class as usize].info.size;
        (handle.obj as usize * size % PAGE_SIZE, size)
    }

    /// Copies `data` into the object (`zs_obj_write`), across a page boundary if the object
    /// straddles one.
    ///
    /// # Panics
    ///
    /// If `data` is larger than the object's class.
    pub fn write(&self, handle: &Handle, data: &[u8]) {
        let (off, size) = self.place(handle);
        assert!(
            data.len() <= size,
            "{} bytes into a {size}-byte object",
            data.len()
        );
        let first = data.len().min(PAGE_SIZE - off);
        handle.first.write()[off..off + first].copy_from_slice(&data[..first]);
        if first < data.len() {
            let second = handle
                .second
                .as_ref()
                .expect("a straddling object has two pages");
            second.write()[..data.len() - first].copy_from_slice(&data[first..]);
        }
    }

    /// Hands `f` the first `len` bytes of the object as fragments, as
    /// `zs_obj_read_sg_begin` does: one where they lie in one backing page, two where they
    /// straddle a boundary. The pages are read-locked while `f` runs.
    ///
    /// # Panics
    ///
    /// If `len` is larger than the object.
    pub fn read_sg<R>(
        &self,
        handle: &Handle,
        len: usize,
        f: impl FnOnce(&[IoSlice<'_>]) -> R,
    ) -> R {
        let (off, size) = self.place(handle);
        assert!(len <= size, "{len} bytes out of a {size}-byte object");
        let first = len.min(PAGE_SIZE - off);
        let page = handle.first.read();
        if first == len {
            f(&[IoSlice::new(&page[off..off + len])])
        } else {
            self.straddled_reads.fetch_add(1, Relaxed);
            // Pages are always locked in zspage order, so readers and writers never deadlock.
            let next = handle
                .second
                .as_ref()
                .expect("a straddling object has two pages")
                .read();
            f(&[
                IoSlice::new(&page[off..]),
                IoSlice::new(&next[..len - first]),
            ])
        }
    }

    /// Hands `f` the first `len` bytes of a chain of objects, all full but the last, as one
    /// scatter-gather list: an object larger than a page (a folio's frame, `Zswap::store_folio`) kept
    /// in page-sized pieces, as zram's multi-page compression keeps its large objects. Each
    /// piece gives one fragment, or two where it straddles a boundary.
    ///
    /// # Panics
    ///
    /// If the objects hold fewer than `len` bytes.
    pub fn read_chain_sg<R>(
        &self,
        handles: &[Handle],
        len: usize,
        f: impl FnOnce(&[IoSlice<'_>]) -> R,
    ) -> R {
        // Several pages are read-locked at once: `read_recursive`, so that a writer waiting
        // on one of them cannot make two such readers wait on each other.
        let mut guards = Vec::with_capacity(2 * handles.len());
        let mut spans = Vec::with_capacity(2 * handles.len());
        let mut left = len;
        for h in handles {
            let (off, size) = self.place(h);
            let take = left.min(size);
            let first = take.min(PAGE_SIZE - off);
            guards.push(h.first.read_recursive());
            spans.push((guards.len() - 1, off..off + first));
            if first < take {
                self.straddled_reads.fetch_add(1, Relaxed);
                let next = h
                    .second
                    .as_ref()
                    .expect("a straddling object has two pages");
                guards.push(next.read_recursive());
                spans.push((guards.len() - 1, 0..take - first));
            }
            left -= take;
        }
        assert_eq!(left, 0, "{len} bytes out of a shorter chain");
        let frags: Vec<IoSlice<'_>> = spans
            .into_iter()
            .map(|(g, r)| IoSlice::new(&guards[g][r]))
            .collect();
        f(&frags)
    }

    /// Whether the first `len` bytes of the object straddle two backing pages.
    pub fn straddles(&self, handle: &Handle, len: usize) -> bool {
        let (off, _) = self.place(handle);
        off + len > PAGE_SIZE
    }

    /// A snapshot of the counters.
    pub fn stats(&self) -> PoolStats {
        PoolStats {
            pages: self.pages.load(Relaxed),
            cached_pages: self.page_cache.len(),
            objects: self.objects.load(Relaxed),
            used_bytes: self.used_bytes.load(Relaxed),
            straddled_reads: self.straddled_reads.load(Relaxed),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(pool: &Pool, h: &Handle, len: usize) -> (usize, Vec<u8>) {
        pool.read_sg(h, len, |frags| {
            (
                frags.len(),
                frags.iter().flat_map(|f| f.iter().copied()).collect(),
            )
        })
    }

    #[test]
    fn classes_cover_every_size() {
        assert_eq!(NR_CLASSES, 255);
        let pool = Pool::default();
        for size in 1..=PAGE_SIZE {
            let info = pool.class_info(size).unwrap();
            assert!(info.size >= size && info.size < size.max(MIN_ALLOC_SIZE) + CLASS_DELTA);
            assert!((1..=MAX_PAGES_PER_ZSPAGE).contains(&info.pages_per_zspage));
            assert!(info.objs_per_zspage >= 1);
        }
        assert_eq!(pool.class_info(0), None);
        assert_eq!(pool.class_info(PAGE_SIZE + 1), None);
        // A page-sized object gets a zspage of one page to itself.
        let page = pool.class_info(PAGE_SIZE).unwrap();
        assert_eq!((page.pages_per_zspage, page.objs_per_zspage), (1, 1));
    }

    #[test]
    fn alloc_write_read_free() {
        let pool = Pool::default();
        let a = pool.alloc(100, 0).unwrap();
        let b = pool.alloc(100, 0).unwrap();
        assert_ne!(a, b);
        pool.write(&a, &[1; 100]);
        pool.write(&b, &[2; 100]);
        assert_eq!(read(&pool, &a, 100), (1, vec![1; 100]));
        assert_eq!(read(&pool, &b, 100), (1, vec![2; 100]));
        let info = pool.class_info(100).unwrap();
        assert_eq!(pool.stats().pages, info.pages_per_zspage);
        assert_eq!(pool.stats().objects, 2);
        assert_eq!(pool.stats().straddled_reads, 0);
        pool.free(a);
        pool.free(b);
        // The zspage is empty: its backing pages went back to the cache.
        assert_eq!(pool.stats().pages, 0);
        assert_eq!(pool.stats().objects, 0);
        assert_eq!(
            pool.stats().cached_pages,
            PAGE_BATCH + info.pages_per_zspage
        );
    }

    #[test]
    fn freed_objects_are_reused() {
        let pool = Pool::default();
        // One full zspage of 512-byte objects.
        let n = pool.class_info(500).unwrap().objs_per_zspage;
        assert!(n > 7);
        let handles: Vec<_> = (0..n).map(|_| pool.alloc(500, 0).unwrap()).collect();
        let pages = pool.stats().pages;
        let mut handles = handles;
        let (h7, h3) = (handles.remove(7), handles.remove(3));
        let freed: BTreeSet<_> = [h3.obj, h7.obj].into();
        pool.free(h3);
        pool.free(h7);
        let again: BTreeSet<_> = (0..2).map(|_| pool.alloc(500, 0).unwrap().obj).collect();
        assert_eq!(again, freed);
        assert_eq!(
            pool.stats().pages,
            pages,
            "no new zspage while one has room"
        );
    }

    #[test]
    fn zspages_fill_before_new_ones_and_ids_are_reused() {
        let pool = Pool::default();
        let info = pool.class_info(1000).unwrap();
        let n = info.objs_per_zspage;
        let first: Vec<_> = (0..n).map(|_| pool.alloc(1000, 0).unwrap()).collect();
        assert!(first.iter().all(|h| h.zspage == first[0].zspage));
        assert_eq!(pool.stats().pages, info.pages_per_zspage);
        let next = pool.alloc(1000, 0).unwrap();
        assert_ne!(next.zspage, first[0].zspage);
        assert_eq!(pool.stats().pages, 2 * info.pages_per_zspage);
        let first_id = first[0].zspage;
        for h in first {
            pool.free(h);
        }
        assert_eq!(pool.stats().pages, info.pages_per_zspage);
        // The first zspage's id is vacant; a zspage made later takes it.
        let more: Vec<_> = (0..n).map(|_| pool.alloc(1000, 0).unwrap()).collect();
        assert!(more.iter().any(|h| h.zspage == first_id));
    }

    #[test]
    fn straddling_objects_read_as_two_fragments() {
        let pool = Pool::default();
        // 3000-byte objects: the second starts at 3008 and crosses into the next page.
        let info = pool.class_info(3000).unwrap();
        assert!(info.pages_per_zspage > 1);
        let handles: Vec<_> = (0..info.objs_per_zspage)
            .map(|_| pool.alloc(3000, 0).unwrap())
            .collect();
        let mut straddlers = 0;
        for (i, h) in handles.iter().enumerate() {
            let data: Vec<u8> = (0..3000).map(|j| (i * 7 + j) as u8).collect();
            pool.write(h, &data);
            let (frags, back) = read(&pool, h, 3000);
            assert_eq!(back, data);
            assert_eq!(frags == 2, pool.straddles(h, 3000));
            straddlers += usize::from(frags == 2);
        }
        assert!(straddlers > 0);
        assert_eq!(pool.stats().straddled_reads, straddlers as u64);
        // Neighbours survive each other's writes.
        for (i, h) in handles.iter().enumerate() {
            let data: Vec<u8> = (0..3000).map(|j| (i * 7 + j) as u8).collect();
            assert_eq!(read(&pool, h, 3000).1, data);
        }
        // A short read of a straddling object may fit its first page.
        let h = &handles[1];
        assert!(pool.straddles(h, 3000));
        assert_eq!(read(&pool, h, 10).0, 1);
    }

    #[test]
    fn bad_sizes_and_limit() {
        let pool = Pool::new(Some(2));
        assert_eq!(pool.alloc(0, 0).unwrap_err(), AllocError::BadSize(0));
        assert_eq!(
            pool.alloc(PAGE_SIZE + 1, 0).unwrap_err(),
            AllocError::BadSize(PAGE_SIZE + 1)
        );
        let a = pool.alloc(PAGE_SIZE, 0).unwrap();
        let _b = pool.alloc(PAGE_SIZE, 0).unwrap();
        assert_eq!(pool.alloc(PAGE_SIZE, 0).unwrap_err(), AllocError::LimitHit);
        assert_eq!(pool.stats().pages, 2);
        pool.free(a);
        assert!(pool.alloc(PAGE_SIZE, 0).is_ok());
    }

    #[test]
    fn page_cache_keeps_up_to_the_high_mark() {
        let pool = Pool::default();
        let n = PAGE_HIGH + 10;
        let handles: Vec<_> = (0..n).map(|_| pool.alloc(PAGE_SIZE, 0).unwrap()).collect();
        assert_eq!(pool.stats().pages, n);
        // Refills come a batch at a time, beyond what is needed.
        assert!(pool.stats().cached_pages < PAGE_BATCH + 1);
        for h in handles {
            pool.free(h);
        }
        assert_eq!(pool.stats().pages, 0);
        assert_eq!(pool.stats().cached_pages, PAGE_HIGH);
        // Cached pages serve new zspages without a refill.
        let _h = pool.alloc(PAGE_SIZE, 0).unwrap();
        assert_eq!(pool.stats().cached_pages, PAGE_HIGH - 1);
    }

    #[test]
    fn compaction_moves_objects_out_of_the_emptiest_zspages() {
        let pool = Pool::default();
        let info = pool.class_info(1000).unwrap();
        let n = info.objs_per_zspage * 4;
        let mut handles: Vec<_> = (0..n)
            .map(|i| pool.alloc(1000, i as u64).unwrap())
            .collect();
        for (i, h) in handles.iter().enumerate() {
            pool.write(h, &[i as u8; 1000]);
        }
        // Free three of every four objects: four zspages a quarter full.
        let mut kept = Vec::new();
        for (i, h) in handles.drain(..).enumerate() {
            if i % 4 == 0 {
                kept.push((i, h));
            } else {
                pool.free(h);
            }
        }
        assert_eq!(pool.stats().pages, 4 * info.pages_per_zspage);
        let candidates = pool.compaction_candidates();
        assert!(!candidates.is_empty());
        for (owner, place) in candidates {
            let (i, h) = kept.iter_mut().find(|(i, _)| *i as u64 == owner).unwrap();
            assert_eq!(h.place(), place);
            assert!(pool.migrate(h, 1000));
            assert_eq!(read(&pool, h, 1000).1, vec![*i as u8; 1000]);
        }
        // All fit one zspage now.
        assert_eq!(pool.stats().pages, info.pages_per_zspage);
        assert!(pool.compaction_candidates().is_empty());
        for (i, h) in &kept {
            assert_eq!(read(&pool, h, 1000).1, vec![*i as u8; 1000]);
        }
    }

    #[test]
    fn threads_share_a_pool() {
        let pool = Pool::default();
        std::thread::scope(|s| {
            for t in 0..4u8 {
                let pool = &pool;
                s.spawn(move || {
                    for round in 0..200usize {
                        let len = 40 + (round * 37 + t as usize * 11) % 4000;
                        let h = pool.alloc(len, 0).unwrap();
                        let data = vec![t ^ round as u8; len];
                        pool.write(&h, &data);
                        assert_eq!(read(pool, &h, len).1, data);
                        pool.free(h);
                    }
                });
            }
        });
        assert_eq!(pool.stats().pages, 0);
    }
}
