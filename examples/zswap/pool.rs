//! A pool for compressed pages in the manner of the kernel's `mm/zsmalloc.c`.
//!
//! Objects are sorted into size classes 16 bytes apart (`ZS_SIZE_CLASS_DELTA`), from 32
//! bytes (`ZS_MIN_ALLOC_SIZE`) to a page. A class packs its objects back to back into
//! zspages: runs of up to [`MAX_PAGES_PER_ZSPAGE`] separately allocated 4 KiB backing
//! pages, as many as waste the least space. So an object may straddle two backing pages;
//! reading it hands out two fragments, as `zs_obj_read_sg_begin` builds a two-entry
//! scatterlist, and the caller decompresses straight out of them without a copy.
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

/// Bytes in a page, backing or stored.
pub const PAGE_SIZE: usize = 4096;

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
/// read takes no lock but theirs.
#[derive(Clone)]
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

impl PartialEq for Handle {
    fn eq(&self, other: &Self) -> bool {
        (self.class, self.zspage, self.obj) == (other.class, other.zspage, other.obj)
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
}

/// A class's bookkeeping: its zspages by id, and which have free objects.
struct ClassState {
    zspages: Vec<Option<Zspage>>,
    /// Ids in `zspages` that are empty, to reuse before growing the vector.
    vacant: Vec<u32>,
    /// Ids of zspages with at least one free object. The highest id is used first, so that
    /// older zspages drain and can be released (zsmalloc sorts by fullness instead).
    partial: BTreeSet<u32>,
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
    /// Reads whose object straddled two backing pages.
    pub straddled_reads: u64,
}

impl PoolStats {
    /// Bytes of backing pages in zspages: zswap's `pool_total_size`.
    pub fn total_size(&self) -> usize {
        self.pages * PAGE_SIZE
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
            straddled_reads: AtomicU64::new(0),
        }
    }

    /// The class that holds objects of `size` bytes, if any.
    pub fn class_info(&self, size: usize) -> Option<ClassInfo> {
        (1..=PAGE_SIZE)
            .contains(&size)
            .then(|| self.classes[class_index(size)].info)
    }

    /// Allocates an object of `size` bytes (`zs_malloc`): a free object of its class, or a
    /// new zspage's first one. Its bytes are whatever the last owner left.
    ///
    /// # Errors
    ///
    /// [`AllocError::BadSize`] for 0 or more than [`PAGE_SIZE`] bytes;
    /// [`AllocError::LimitHit`] where a new zspage would pass the limit.
    pub fn alloc(&self, size: usize) -> Result<Handle, AllocError> {
        if !(1..=PAGE_SIZE).contains(&size) {
            return Err(AllocError::BadSize(size));
        }
        let index = class_index(size);
        let class = &self.classes[index];
        if let Some(handle) = Self::alloc_from_partial(index, class) {
            self.objects.fetch_add(1, Relaxed);
            return Ok(handle);
        }
        // Take the new zspage's pages with no class lock held (zsmalloc's `alloc_zspage`).
        let nr = class.info.pages_per_zspage;
        let total = self.pages.fetch_add(nr, Relaxed) + nr;
        if self.max_pages.is_some_and(|max| total > max) {
            self.pages.fetch_sub(nr, Relaxed);
            return Err(AllocError::LimitHit);
        }
        let objs = class.info.objs_per_zspage as u16;
        // Object 0 is handed out now; the rest are free, lowest popped first.
        let zspage = Zspage {
            pages: self.page_cache.take(nr),
            free: (1..objs).rev().collect(),
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
            state.partial.insert(id);
        }
        state.zspages[id as usize] = Some(zspage);
        drop(state);
        self.objects.fetch_add(1, Relaxed);
        Ok(handle)
    }

    fn alloc_from_partial(index: usize, class: &SizeClass) -> Option<Handle> {
        let mut state = class.state.lock();
        let id = *state.partial.last()?;
        let zspage = state.zspages[id as usize]
            .as_mut()
            .expect("partial zspages exist");
        let obj = zspage
            .free
            .pop()
            .expect("partial zspages have a free object");
        let full = zspage.free.is_empty();
        let handle = class.handle(index, id, zspage, obj);
        if full {
            state.partial.remove(&id);
        }
        Some(handle)
    }

    /// Frees an object (`zs_free`); a zspage whose objects are all free is released, its
    /// backing pages back to the page cache.
    ///
    /// # Panics
    ///
    /// If the object is already free (a double free through a cloned handle).
    pub fn free(&self, handle: Handle) {
        let class = &self.classes[handle.class as usize];
        let (id, obj) = (handle.zspage, handle.obj);
        // Our hold on the pages goes before the lock is taken, so the cache can take them.
        drop(handle);
        let mut state = class.state.lock();
        let zspage = state.zspages[id as usize]
            .as_mut()
            .expect("a zspage with an object in use is not released");
        assert!(
            !zspage.free.contains(&obj),
            "double free of object {obj} of zspage {id}"
        );
        zspage.free.push(obj);
        let free = zspage.free.len();
        if free == class.info.objs_per_zspage {
            let released = state.zspages[id as usize].take().expect("checked above");
            state.partial.remove(&id);
            state.vacant.push(id);
            drop(state);
            self.page_cache.give(released.pages);
            self.pages.fetch_sub(class.info.pages_per_zspage, Relaxed);
        } else if free == 1 {
            state.partial.insert(id);
        }
        self.objects.fetch_sub(1, Relaxed);
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
    /// scatter-gather list: an object larger than a page (a unit's frame, `units.rs`) kept
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
        let a = pool.alloc(100).unwrap();
        let b = pool.alloc(100).unwrap();
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
        let handles: Vec<_> = (0..n).map(|_| pool.alloc(500).unwrap()).collect();
        let pages = pool.stats().pages;
        pool.free(handles[3].clone());
        pool.free(handles[7].clone());
        let again: BTreeSet<_> = (0..2).map(|_| pool.alloc(500).unwrap().obj).collect();
        assert_eq!(again, [handles[3].obj, handles[7].obj].into());
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
        let first: Vec<_> = (0..n).map(|_| pool.alloc(1000).unwrap()).collect();
        assert!(first.iter().all(|h| h.zspage == first[0].zspage));
        assert_eq!(pool.stats().pages, info.pages_per_zspage);
        let next = pool.alloc(1000).unwrap();
        assert_ne!(next.zspage, first[0].zspage);
        assert_eq!(pool.stats().pages, 2 * info.pages_per_zspage);
        for h in &first {
            pool.free(h.clone());
        }
        assert_eq!(pool.stats().pages, info.pages_per_zspage);
        // The first zspage's id is vacant; a zspage made later takes it.
        let more: Vec<_> = (0..n).map(|_| pool.alloc(1000).unwrap()).collect();
        assert!(more.iter().any(|h| h.zspage == first[0].zspage));
    }

    #[test]
    fn straddling_objects_read_as_two_fragments() {
        let pool = Pool::default();
        // 3000-byte objects: the second starts at 3008 and crosses into the next page.
        let info = pool.class_info(3000).unwrap();
        assert!(info.pages_per_zspage > 1);
        let handles: Vec<_> = (0..info.objs_per_zspage)
            .map(|_| pool.alloc(3000).unwrap())
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
        assert_eq!(pool.alloc(0).unwrap_err(), AllocError::BadSize(0));
        assert_eq!(
            pool.alloc(PAGE_SIZE + 1).unwrap_err(),
            AllocError::BadSize(PAGE_SIZE + 1)
        );
        let a = pool.alloc(PAGE_SIZE).unwrap();
        let _b = pool.alloc(PAGE_SIZE).unwrap();
        assert_eq!(pool.alloc(PAGE_SIZE).unwrap_err(), AllocError::LimitHit);
        assert_eq!(pool.stats().pages, 2);
        pool.free(a);
        assert!(pool.alloc(PAGE_SIZE).is_ok());
    }

    #[test]
    fn page_cache_keeps_up_to_the_high_mark() {
        let pool = Pool::default();
        let n = PAGE_HIGH + 10;
        let handles: Vec<_> = (0..n).map(|_| pool.alloc(PAGE_SIZE).unwrap()).collect();
        assert_eq!(pool.stats().pages, n);
        // Refills come a batch at a time, beyond what is needed.
        assert!(pool.stats().cached_pages < PAGE_BATCH + 1);
        for h in handles {
            pool.free(h);
        }
        assert_eq!(pool.stats().pages, 0);
        assert_eq!(pool.stats().cached_pages, PAGE_HIGH);
        // Cached pages serve new zspages without a refill.
        let _h = pool.alloc(PAGE_SIZE).unwrap();
        assert_eq!(pool.stats().cached_pages, PAGE_HIGH - 1);
    }

    #[test]
    fn a_reader_keeps_a_released_page() {
        let pool = Pool::default();
        let h = pool.alloc(PAGE_SIZE).unwrap();
        pool.write(&h, &[9; PAGE_SIZE]);
        let held = h.clone();
        // Freed while a (misbehaving) caller still holds the handle: the page is not
        // recycled under it.
        pool.free(h);
        let cached = pool.stats().cached_pages;
        let other = pool.alloc(PAGE_SIZE).unwrap();
        pool.write(&other, &[1; PAGE_SIZE]);
        assert_eq!(read(&pool, &held, PAGE_SIZE).1, vec![9; PAGE_SIZE]);
        assert_eq!(pool.stats().cached_pages, cached - 1);
    }

    #[test]
    #[should_panic(expected = "double free")]
    fn double_free_panics() {
        let pool = Pool::default();
        let a = pool.alloc(64).unwrap();
        let _b = pool.alloc(64).unwrap();
        pool.free(a.clone());
        pool.free(a);
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
                        let h = pool.alloc(len).unwrap();
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
