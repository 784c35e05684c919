//! Line 1: a page loads back byte for byte, in the pool and on the device; offsets are
//! sparse (memory follows the pages, counted by the test binary's allocator).

use super::*;

/// Line 1: a page loads back byte for byte, in the pool and after writeback, until it is
/// stored again or invalidated.
#[test]
fn pages_load_back_exact_in_the_pool_and_on_the_device() {
    let (z, dev) = with_mem_device(256 << 10);
    let n = 1000u64;
    for o in 0..n {
        z.store(o * 7, &page(o * 7, 1)).unwrap();
        within_budget(&z);
    }
    let s = z.stats();
    assert!(s.written_back_pages > 0);
    assert_eq!(s.stored_pages + s.device_pages, n);
    assert_eq!(s.written_back_pages, s.device_pages);
    let mut out = zero();
    let (mut from_dev, mut from_pool) = (0, 0);
    for o in 0..n {
        match z.load(o * 7, &mut out).unwrap() {
            LoadKind::Device => from_dev += 1,
            _ => from_pool += 1,
        }
        assert_eq!(check(o * 7, &out), 1);
    }
    assert_eq!(from_dev, s.device_pages);
    assert_eq!(from_pool, s.stored_pages);
    // Stored again: the new bytes, wherever the old were; invalidated: gone.
    z.store(0, &page(0, 2)).unwrap();
    z.load(0, &mut out).unwrap();
    assert_eq!(check(0, &out), 2);
    assert!(z.invalidate(7));
    assert!(matches!(z.load(7, &mut out), Err(LoadError::NotFound)));
    assert!(!z.invalidate(7));
    assert!(matches!(z.load(3, &mut out), Err(LoadError::NotFound)));
    // Every device page invalidated is discarded.
    for o in 0..n {
        z.invalidate(o * 7);
    }
    let s = z.stats();
    assert_eq!(
        (s.stored_pages, s.device_pages, s.pool_total_size),
        (0, 0, 0)
    );
    assert_eq!(dev.pages.lock().len(), 0);
}

/// The bytes this thread has allocated and not freed, counted by the test binary's
/// allocator: exact, whatever other tests' threads do meanwhile.
mod counting {
    use std::alloc::{GlobalAlloc, Layout, System};
    use std::cell::Cell;

    pub struct Counting;

    thread_local! {
        static NET: Cell<i64> = const { Cell::new(0) };
    }

    fn add(n: i64) {
        // Without a thread-local left (a thread exiting), the bytes are not this test's.
        let _ = NET.try_with(|c| c.set(c.get() + n));
    }

    // SAFETY: every call is forwarded to `System` unchanged; the count is a thread-local
    // `Cell` of const initialisation, which neither allocates nor registers a destructor.
    unsafe impl GlobalAlloc for Counting {
        unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
            add(layout.size() as i64);
            // SAFETY: the caller's contract, passed on.
            unsafe { System.alloc(layout) }
        }
        unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
            add(-(layout.size() as i64));
            // SAFETY: the caller's contract, passed on.
            unsafe { System.dealloc(ptr, layout) }
        }
        unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
            add(layout.size() as i64);
            // SAFETY: the caller's contract, passed on.
            unsafe { System.alloc_zeroed(layout) }
        }
        unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
            add(new_size as i64 - layout.size() as i64);
            // SAFETY: the caller's contract, passed on.
            unsafe { System.realloc(ptr, layout, new_size) }
        }
    }

    /// The bytes `f` left allocated on this thread.
    pub fn net(f: impl FnOnce()) -> i64 {
        let before = NET.with(Cell::get);
        f();
        NET.with(Cell::get) - before
    }
}

#[global_allocator]
static ALLOC: counting::Counting = counting::Counting;

/// Line 1: offsets are sparse; memory grows with pages, not the largest offset. Six pages
/// stored at offsets up to `u64::MAX` take, counted by the allocator, at most the cost of a
/// page alone in its run, block and shard more a page than the same pages at six
/// neighbouring offsets: its run's group of 64 entries (2,560 bytes, in the slab's chunks,
/// which double up to 4,096 entries), its block (776 bytes) and a shard's first table of
/// blocks (64).
#[test]
fn sparse_offsets_take_memory_by_page() {
    let huge: [u64; 6] = [0, 1 << 40, u64::MAX, u64::MAX - 1, 1 << 63, 12345];
    let dense: [u64; 6] = [0, 1, 2, 3, 4, 5];
    let tier = || {
        Zswap::builder(lz4())
            .max_pool_bytes(64 << 20)
            .build()
            .unwrap()
    };
    // The thread's compression buffer, allocated on its first store, before counting.
    tier().store(1, &page(1, 0)).unwrap();
    let mut held = Vec::new();
    let mut grew = |offsets: [u64; 6]| {
        let z = tier();
        let bytes = counting::net(|| {
            for (i, &o) in offsets.iter().enumerate() {
                z.store(o, &page_with(0, i as u64, 1000)).unwrap();
            }
        });
        held.push(z);
        bytes
    };
    let (at_dense, at_huge) = (grew(dense), grew(huge));
    // Each page but the first alone in its run, its block and maybe its shard. Six groups
    // take the slab's first three chunks (64, 128 and 256 entries of 40 bytes) where one
    // group takes the first; each page a block and a shard's table more.
    assert!(
        at_huge - at_dense <= (448 - 64) * 40 + 5 * (776 + 64),
        "sparse offsets took {} bytes more than neighbours",
        at_huge - at_dense
    );
    // What six pages take from the allocator: the locks of the arena's first chunk (8 bytes
    // a page; the chunk's own pages are mapped, not allocated), the zspages' bookkeeping and
    // the entries (well under 64 KiB): a bound of the pages stored, where a table over the
    // offsets stored (up to 2^64) could not be allocated at all.
    let bound = acomp_zswap::pool::CHUNK_PAGES * 8 + (64 << 10);
    assert!(
        at_huge > 0 && at_huge < bound as i64,
        "{at_huge} of {bound}"
    );
    let z = &held[1];
    let mut out = zero();
    for (i, &o) in huge.iter().enumerate() {
        z.load(o, &mut out).unwrap();
        assert!(out == page_with(0, i as u64, 1000), "offset {o:#x}");
    }
    assert_eq!(z.stats().stored_pages, 6);
    assert!(z.invalidate(u64::MAX));
    assert!(matches!(
        z.load(u64::MAX, &mut out),
        Err(LoadError::NotFound)
    ));
}

/// A run's group of entries goes back with the run's last offset, and a later run takes it:
/// eight offsets alone in their runs, stored and invalidated over and over, each round at
/// runs not used before, keep the entries' table at the size the first round made.
#[test]
fn a_runs_group_is_reused_once_its_last_offset_leaves() {
    let z = Zswap::builder(lz4())
        .max_pool_bytes(64 << 20)
        .build()
        .unwrap();
    // Same-filled: no object in the pool, only the entries and the index.
    let p: Page = [7; PAGE_SIZE];
    let mut after_first = 0;
    for round in 0..100u64 {
        let runs = (round * 8..round * 8 + 8).map(|r| (r << 6) | (r % 64));
        for o in runs.clone() {
            z.store(o, &p).unwrap();
        }
        for o in runs {
            assert!(z.invalidate(o), "offset {o}");
        }
        if round == 0 {
            after_first = z.bookkeeping_bytes().0;
        }
    }
    // 100 rounds without reuse would take 800 groups, the first round's 8.
    assert_eq!(z.bookkeeping_bytes().0, after_first);
    assert_eq!(z.stats().stored_pages, 0);
}
