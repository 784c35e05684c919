//! The crate docs' contract, a test (or more) for each line, on pages the tests make.

mod common;

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::Ordering::Relaxed;

use acomp::Acomp;
use acomp_zswap::{
    BuildError, LoadError, LoadKind, PAGE_SIZE, Page, StoreError, StoreKind, SwapDevice, SwapFile,
    WRITEBACK_BATCH, Zswap,
};
use common::{MemDevice, check, mix, page, page_with, within_budget};
use parking_lot::Mutex;

fn lz4() -> Acomp {
    Acomp::new("lz4").unwrap()
}

/// A tier over lz4 with this budget and an in-memory device the test keeps a hold on.
fn with_mem_device(budget: u64) -> (Zswap, Arc<MemDevice>) {
    let dev = Arc::new(MemDevice::default());
    let z = Zswap::builder(lz4())
        .max_pool_bytes(budget)
        .device(Arc::clone(&dev))
        .build()
        .unwrap();
    (z, dev)
}

fn zero() -> Page {
    [0; PAGE_SIZE]
}

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
        match z.load_kind(o * 7, &mut out).unwrap() {
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
/// stored at offsets up to `u64::MAX` leave exactly as many bytes allocated as the same
/// pages at small offsets of the same shards (offset mod 64), counted by the allocator.
#[test]
fn sparse_offsets_take_memory_by_page() {
    let huge: [u64; 6] = [0, 1 << 40, u64::MAX, u64::MAX - 1, 1 << 63, 12345];
    let small = huge.map(|o| o % 64 + 64 * (o % 3));
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
    let (at_small, at_huge) = (grew(small), grew(huge));
    assert_eq!(
        at_huge, at_small,
        "offsets changed the memory of the same pages"
    );
    // What six pages take: their zspages (up to 8 backing pages each) from one refill of the
    // pool's page cache, which takes `PAGE_BATCH` pages more than the need, and the entries
    // (well under 64 KiB): a bound of the pages stored, where a table over the offsets
    // stored (up to 2^64) could not be allocated at all.
    let bound = (6 * 8 + acomp_zswap::pool::PAGE_BATCH) * PAGE_SIZE + (64 << 10);
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

/// Line 2: the budget, read after every store, with and without a device, on threads too.
#[test]
fn the_pool_never_passes_its_budget() {
    for with_device in [false, true] {
        let mut b = Zswap::builder(lz4()).max_pool_bytes(100 * PAGE_SIZE as u64 + 123);
        if with_device {
            b = b.device(MemDevice::default());
        }
        let z = b.build().unwrap();
        assert_eq!(z.stats().max_pool_size, 100 * PAGE_SIZE as u64);
        let (mut ok, mut refused) = (0, 0);
        for o in 0..2000u64 {
            match z.store(o, &page(o, 0)) {
                Ok(()) => ok += 1,
                Err(StoreError::PoolFull) => refused += 1,
                Err(e) => panic!("{e}"),
            }
            within_budget(&z);
        }
        let s = z.stats();
        if with_device {
            assert_eq!((ok, refused), (2000, 0));
            assert_eq!(s.stored_pages + s.device_pages, 2000);
            assert!(s.written_back_pages > 1000, "{s:?}");
        } else {
            // Refused from the first limit hit on: nothing frees the pool.
            assert_eq!(ok + refused, 2000);
            assert_eq!(
                (s.stored_pages, s.pool_limit_hit, s.reject_reclaim_fail),
                (ok, 1, refused)
            );
        }
        std::thread::scope(|s| {
            for t in 0..4u64 {
                let z = &z;
                s.spawn(move || {
                    for o in 0..500u64 {
                        let _ = z.store(10_000 + t * 1000 + o, &page(o, t));
                        within_budget(z);
                    }
                });
            }
        });
    }
}

/// Line 2: the coldest go first; a page loaded again and again gets its second chance and
/// stays in memory while cold pages go to the device.
#[test]
fn a_hot_page_stays_while_cold_ones_go() {
    let z = Zswap::builder(lz4())
        .max_pool_bytes(64 * PAGE_SIZE as u64)
        .device(MemDevice::default())
        .build()
        .unwrap();
    let mut out = zero();
    // Pages of one size class (one body, each with its offset in front), so that the
    // pages written back free backing pages in order.
    let p = |o: u64| {
        let mut p = page_with(0, 0, 700);
        p[..8].copy_from_slice(&o.to_le_bytes());
        p
    };
    z.store(0, &p(0)).unwrap();
    for o in 1..2000u64 {
        z.store(o, &p(o)).unwrap();
        z.load(0, &mut out).unwrap();
        assert_eq!(out, p(0));
    }
    let s = z.stats();
    assert!(s.written_back_pages > 1000, "{s:?}");
    assert!(!z.on_device(0), "the hot page was written back");
    // Cold pages went oldest first: the first stored are on the device, the last are not.
    assert!((1..100).all(|o| z.on_device(o)));
    assert!((1990..2000).all(|o| !z.on_device(o)));
    // On demand: writeback takes the coldest, and the hot page only once passed over unloaded.
    let left = z.lru_len();
    assert_eq!(z.writeback(left - 1).unwrap(), left - 1);
    assert!(!z.on_device(0));
    assert_eq!(z.writeback(10).unwrap(), 1);
    assert!(z.on_device(0));
    z.load(0, &mut out).unwrap();
    assert_eq!(out, p(0));
    assert_eq!(z.writeback(10).unwrap(), 0);
}

/// Page `o` of the tests without a device: pages of one size class, so that any freed
/// object fits any page.
fn one_class(o: u64) -> Page {
    page_with(o, 0, 1000)
}

/// A tier of `pages` pages and no device, stored [`one_class`] pages at offsets 0, 1, ...
/// until a store is refused; returns it and that offset.
fn full_without_a_device(pages: u64) -> (Zswap, u64) {
    let z = Zswap::builder(lz4())
        .max_pool_bytes(pages * PAGE_SIZE as u64)
        .build()
        .unwrap();
    let mut o = 0;
    while z.store(o, &one_class(o)).is_ok() {
        o += 1;
    }
    (z, o)
}

/// Line 2: without a device the store is refused, the page stays with the caller, the old
/// entry is invalidated, and stores stay refused until the pool falls below the accept
/// threshold.
#[test]
fn without_a_device_stores_are_refused_with_hysteresis() {
    let (z, first_refused) = full_without_a_device(40);
    let p = one_class;
    let mut out = zero();
    assert!(matches!(
        z.load(first_refused, &mut out),
        Err(LoadError::NotFound)
    ));
    let s = z.stats();
    assert_eq!((s.pool_limit_hit, s.reject_reclaim_fail), (1, 1));
    assert_eq!(s.stored_pages, first_refused);
    // A refused store at a stored offset invalidates it.
    assert!(matches!(z.store(0, &p(0)), Err(StoreError::PoolFull)));
    assert!(matches!(z.load(0, &mut out), Err(LoadError::NotFound)));
    // Room for a page or two, but the pool is above the threshold: still refused.
    z.invalidate(1);
    z.invalidate(2);
    assert!(matches!(z.store(1, &p(1)), Err(StoreError::PoolFull)));
    assert!(z.stats().pool_total_size > 36 * PAGE_SIZE as u64);
    // Below 90% of the budget: admitted again.
    let mut k = 3;
    while z.stats().pool_total_size > 36 * PAGE_SIZE as u64 {
        z.invalidate(k);
        k += 1;
    }
    z.store(1, &p(1)).unwrap();
    z.load(1, &mut out).unwrap();
    assert_eq!(out, p(1));
    assert_eq!(z.stats().pool_limit_hit, 1);
    // Same-filled pages take no pool memory: never refused.
    z.store(5000, &[7; PAGE_SIZE]).unwrap();
}

/// Line 2, without a device: invalidated pages free their objects but not the backing pages
/// of zspages still in use, so a pool that hit its budget could stay above the threshold for
/// good; a refused store compacts first where that can make the room (as zsmalloc's
/// shrinker does in the kernel).
#[test]
fn without_a_device_compaction_gives_back_what_invalidation_left() {
    let (z, n) = full_without_a_device(64);
    let p = one_class;
    // Every other page invalidated: half of every zspage's objects free, no zspage empty.
    for o in (0..n).step_by(2) {
        assert!(z.invalidate(o));
    }
    let s = z.stats();
    // The threshold: 90% of 64 pages, 57 pages.
    assert!(
        s.pool_total_size > 57 * PAGE_SIZE as u64,
        "the premise: invalidation left the pool above the threshold ({} bytes)",
        s.pool_total_size
    );
    assert_eq!(s.compacted_objects, 0);
    // The next store compacts, falls under the threshold and is admitted.
    z.store(1 << 40, &p(1 << 40)).unwrap();
    let s = z.stats();
    assert!(s.compacted_objects > 0);
    assert!(s.pool_total_size <= 57 * PAGE_SIZE as u64);
    let mut out = [0u8; PAGE_SIZE];
    for o in (1..n).step_by(2).chain([1 << 40]) {
        z.load(o, &mut out).unwrap();
        assert!(out == p(o), "offset {o}");
    }
}

/// Line 3: same-filled pages are kept as their value, incompressible ones as they are, and
/// counted.
#[test]
fn same_filled_and_incompressible_pages_are_counted() {
    let z = Zswap::builder(lz4())
        .max_pool_bytes(1 << 20)
        .build()
        .unwrap();
    let mut random = zero();
    for (i, b) in random.iter_mut().enumerate() {
        *b = mix(i as u64) as u8;
    }
    assert_eq!(z.store_kind(1, &zero()).unwrap(), StoreKind::SameFilled);
    assert_eq!(
        z.store_kind(2, &[0xab; PAGE_SIZE]).unwrap(),
        StoreKind::SameFilled
    );
    assert_eq!(z.store_kind(3, &random).unwrap(), StoreKind::Incompressible);
    assert_eq!(z.store_kind(4, &page(4, 0)).unwrap(), StoreKind::Compressed);
    let s = z.stats();
    assert_eq!(s.stored_pages, 4);
    assert_eq!(s.same_filled_pages, 2);
    assert_eq!(s.stored_incompressible_pages, 1);
    assert_eq!(s.reject_compress_poor, 1);
    assert_eq!(
        s.stored_bytes,
        PAGE_SIZE as u64 + {
            let mut f = vec![0; PAGE_SIZE];
            lz4().compress_to_buffer(&page(4, 0), &mut f).unwrap() as u64
        }
    );
    let mut out = zero();
    assert_eq!(z.load_kind(1, &mut out).unwrap(), LoadKind::Filled);
    assert_eq!(out, zero());
    assert_eq!(z.load_kind(2, &mut out).unwrap(), LoadKind::Filled);
    assert_eq!(out, [0xab; PAGE_SIZE]);
    assert_eq!(z.load_kind(3, &mut out).unwrap(), LoadKind::Incompressible);
    assert_eq!(out, random);
    z.invalidate(1);
    z.invalidate(3);
    let s = z.stats();
    assert_eq!(
        (
            s.stored_pages,
            s.same_filled_pages,
            s.stored_incompressible_pages
        ),
        (2, 1, 0)
    );
}

/// What each offset held, versioned: (version, store id or None) after each mutation.
struct Model {
    history: Vec<Mutex<History>>,
}

/// (version, store id) of one offset, in order.
type History = Vec<(u64, Option<u64>)>;

impl Model {
    fn new(n: usize) -> Self {
        Model {
            history: (0..n).map(|_| Mutex::new(vec![(0, None)])).collect(),
        }
    }
    fn version(&self, o: usize) -> u64 {
        self.history[o].lock().last().unwrap().0
    }
}

/// Line 4: threads store, load, take, invalidate, write back, compact and recompress idle
/// entries on the same offsets; each load is checked against the states its offset went through while it ran.
#[test]
fn threads_on_the_same_offsets_match_a_model() {
    const OFFSETS: usize = 48;
    // With recompression of idle entries beside the rest (zstd over lz4).
    let dev = Arc::new(MemDevice::default());
    let z = Zswap::builder(lz4())
        .max_pool_bytes(24 * PAGE_SIZE as u64)
        .device(Arc::clone(&dev))
        .recompress(Acomp::new("zstd").unwrap())
        .build()
        .unwrap();
    let model = Model::new(OFFSETS);
    // Mutations of one offset are serialised by the test (so the model knows their order);
    // loads, writeback and compaction run beside them, unserialised.
    let locks: Vec<Mutex<()>> = (0..OFFSETS).map(|_| Mutex::new(())).collect();
    let next_id = std::sync::atomic::AtomicU64::new(1);
    let loads = std::sync::atomic::AtomicU64::new(0);
    std::thread::scope(|s| {
        for t in 0..6u64 {
            let (z, model, locks, next_id, loads) = (&z, &model, &locks, &next_id, &loads);
            s.spawn(move || {
                let mut out = zero();
                let mut r = mix(t + 100);
                for _ in 0..3000 {
                    r = mix(r);
                    let o = (r % OFFSETS as u64) as usize;
                    let off = o as u64 * 0x1_0000_0001;
                    // While a mutation runs, a load may see what it leaves (a store that is
                    // refused leaves nothing): the model holds those states from before
                    // the call, then what it left.
                    let mutate = |during: &[Option<u64>], f: &dyn Fn() -> Option<u64>| {
                        let _g = locks[o].lock();
                        {
                            let mut h = model.history[o].lock();
                            let &(v, before) = h.last().unwrap();
                            // The state before the call stays possible until it returns.
                            h.push((v + 1, before));
                            h.extend(during.iter().map(|&id| (v + 1, id)));
                        }
                        let id = f();
                        let mut h = model.history[o].lock();
                        let v = h.last().unwrap().0 + 1;
                        h.push((v, id));
                    };
                    match (r >> 8) % 10 {
                        0..=2 => {
                            let id = next_id.fetch_add(1, Relaxed);
                            // With a sound device a store is never refused.
                            mutate(&[Some(id)], &|| {
                                z.store(off, &page(off, id)).unwrap();
                                Some(id)
                            })
                        }
                        3 => mutate(&[None], &|| {
                            z.invalidate(off);
                            None
                        }),
                        4 => {
                            let _g = locks[o].lock();
                            let expect = {
                                let mut h = model.history[o].lock();
                                let &(v, before) = h.last().unwrap();
                                h.push((v + 1, before));
                                h.push((v + 1, None));
                                before
                            };
                            let mut p = zero();
                            match (z.take(off, &mut p), expect) {
                                (Ok(_), Some(id)) => assert_eq!(check(off, &p), id),
                                (Err(LoadError::NotFound), None) => {}
                                (got, want) => panic!("take at {off}: {got:?}, model {want:?}"),
                            }
                            let mut h = model.history[o].lock();
                            let v = h.last().unwrap().0 + 1;
                            h.push((v, None));
                        }
                        // (A take holds the offset's lock: no load of the test overlaps it
                        // in the model's eyes but the tier's; it ends as None.)
                        5 => {
                            let _ = z.writeback(8);
                        }
                        6 if t == 0 => {
                            z.compact();
                        }
                        6 | 7 if t == 1 => {
                            z.mark_idle();
                            z.recompress_idle(16);
                        }
                        _ => {
                            let v0 = model.version(o);
                            let got = z.load(off, &mut out);
                            let v1 = model.version(o);
                            let h = model.history[o].lock();
                            let window: Vec<Option<u64>> = h
                                .iter()
                                .filter(|(v, _)| (v0..=v1).contains(v))
                                .map(|&(_, id)| id)
                                .collect();
                            match got {
                                Ok(()) => {
                                    let id = check(off, &out);
                                    assert!(
                                        window.contains(&Some(id)),
                                        "load at {off} gave store {id}, model {window:?}"
                                    );
                                }
                                Err(LoadError::NotFound) => assert!(
                                    window.contains(&None),
                                    "load at {off}: NotFound, model {window:?}"
                                ),
                                Err(e) => panic!("load at {off}: {e}"),
                            }
                            loads.fetch_add(1, Relaxed);
                        }
                    }
                    within_budget(z);
                }
            });
        }
    });
    assert!(loads.load(Relaxed) > 5000);
    assert!(z.stats().written_back_pages > 0);
    assert!(z.stats().recompressed_pages > 0, "{:?}", z.stats());
    // At the end, every offset holds what the model says.
    let mut out = zero();
    for o in 0..OFFSETS {
        let off = o as u64 * 0x1_0000_0001;
        match (
            z.load(off, &mut out),
            model.history[o].lock().last().unwrap().1,
        ) {
            (Ok(()), Some(id)) => assert_eq!(check(off, &out), id),
            (Err(LoadError::NotFound), None) => {}
            (got, want) => panic!("end, {off}: {got:?}, model {want:?}"),
        }
    }
    let s = z.stats();
    assert_eq!(s.device_pages as usize, dev.pages.lock().len());
    // Nothing leaked: with every offset invalidated, the tier holds nothing.
    for o in 0..OFFSETS {
        z.invalidate(o as u64 * 0x1_0000_0001);
    }
    let s = z.stats();
    assert_eq!(
        (
            s.stored_pages,
            s.device_pages,
            s.pool_used_size,
            s.pool_total_size,
            s.stored_bytes
        ),
        (0, 0, 0, 0, 0)
    );
    assert_eq!(dev.pages.lock().len(), 0);
}

/// Line 4, one offset at full contention: one thread stores it again and again while
/// others load it; no load misses it (no invalidate ever completes) and none goes back to
/// an older store than one it saw.
#[test]
fn loads_racing_stores_of_one_offset_never_miss() {
    let z = Zswap::builder(lz4())
        .max_pool_bytes(1 << 20)
        .build()
        .unwrap();
    let off = 7;
    z.store(off, &page(off, 0)).unwrap();
    let done = std::sync::atomic::AtomicBool::new(false);
    std::thread::scope(|s| {
        let (z, done) = (&z, &done);
        s.spawn(move || {
            for id in 1..10_000 {
                z.store(off, &page(off, id)).unwrap();
            }
            done.store(true, Relaxed);
        });
        for _ in 0..3 {
            s.spawn(move || {
                let (mut out, mut last, mut loads) = (zero(), 0, 0u64);
                while !done.load(Relaxed) || loads < 1000 {
                    z.load(off, &mut out).expect("a stored offset is found");
                    let id = check(off, &out);
                    assert!(id >= last, "store {id} loaded after store {last}");
                    last = id;
                    loads += 1;
                }
            });
        }
    });
}

/// Line 4, the race above made to happen every time: a load that looked the offset up just
/// before a store replaced the entry finds the old entry dead and must look again, finding
/// the new one (the store completed before the load locked anything). A test hook holds
/// the load between its lookup and the entry's lock while the store runs.
#[test]
fn a_load_that_finds_its_entry_replaced_looks_again() {
    use std::sync::mpsc::sync_channel;
    let z = Zswap::builder(lz4())
        .max_pool_bytes(1 << 20)
        .build()
        .unwrap();
    // An offset no other test of this binary loads: the hook is process-wide.
    let off = 0x5eed_0000_0000_0007;
    z.store(off, &page(off, 1)).unwrap();
    let (looked_up_tx, looked_up) = sync_channel::<()>(0);
    let (go, go_rx) = sync_channel::<()>(0);
    let first_load = Mutex::new(Some((looked_up_tx, go_rx)));
    let hook = move |o: u64| {
        if o == off {
            // The first load only: it says it has looked up, and waits for the store.
            if let Some((looked_up_tx, go_rx)) = first_load.lock().take() {
                looked_up_tx.send(()).unwrap();
                go_rx.recv().unwrap();
            }
        }
    };
    acomp_zswap::hooks::after_lookup(Some(Arc::new(hook)));
    std::thread::scope(|s| {
        let z = &z;
        let loader = s.spawn(move || {
            let mut out = zero();
            z.load(off, &mut out).map(|()| check(off, &out))
        });
        looked_up
            .recv_timeout(std::time::Duration::from_secs(60))
            .expect("the load reaches the hook (the test-hooks feature is on)");
        z.store(off, &page(off, 2)).unwrap();
        go.send(()).unwrap();
        let got = loader.join().unwrap();
        acomp_zswap::hooks::after_lookup(None);
        assert_eq!(got.ok(), Some(2), "the load did not look again");
    });
}

/// Line 5: a device that fails every k-th write batch and every k-th read loses nothing.
#[test]
fn device_faults_lose_nothing() {
    let dev = Arc::new(MemDevice::default());
    dev.fail_write_every.store(3, Relaxed);
    dev.fail_read_every.store(4, Relaxed);
    let z = Zswap::builder(lz4())
        .max_pool_bytes(32 * PAGE_SIZE as u64)
        .device(Arc::clone(&dev))
        .build()
        .unwrap();
    let mut kept = HashMap::new();
    let mut refused = 0;
    for o in 0..1500u64 {
        match z.store(o, &page(o, 3)) {
            Ok(()) => {
                kept.insert(o, 3);
            }
            Err(StoreError::Writeback(e)) => {
                assert_eq!(e.to_string(), "planted write fault");
                refused += 1;
            }
            Err(e) => panic!("{e}"),
        }
        within_budget(&z);
    }
    let s = z.stats();
    assert!(s.device_write_fail > 0 && refused > 0, "{s:?}");
    assert_eq!(s.stored_pages + s.device_pages, kept.len() as u64);
    // Every page kept loads back; a failed read is Io and the same load then succeeds.
    let mut out = zero();
    let mut io_errors = 0;
    for &o in kept.keys() {
        loop {
            match z.load(o, &mut out) {
                Ok(()) => break,
                Err(LoadError::Io(e)) => {
                    assert_eq!(e.to_string(), "planted read fault");
                    io_errors += 1;
                }
                Err(e) => panic!("{e}"),
            }
        }
        assert_eq!(check(o, &out), 3);
    }
    assert!(io_errors > 0);
    assert_eq!(z.stats().device_read_fail, io_errors);
    // take keeps the entry on a failed read too.
    let on_dev: Vec<u64> = kept.keys().copied().filter(|&o| z.on_device(o)).collect();
    assert!(!on_dev.is_empty());
    dev.fail_read_every.store(1, Relaxed);
    assert!(matches!(z.take(on_dev[0], &mut out), Err(LoadError::Io(_))));
    dev.fail_read_every.store(0, Relaxed);
    z.take(on_dev[0], &mut out).unwrap();
    assert_eq!(check(on_dev[0], &out), 3);
    assert!(matches!(
        z.take(on_dev[0], &mut out),
        Err(LoadError::NotFound)
    ));
    // A device that refuses every write: writeback fails and every page stays in the pool.
    dev.refuse.store(true, Relaxed);
    let before = z.stats();
    assert!(z.writeback(10).is_err());
    let after = z.stats();
    assert_eq!(after.stored_pages, before.stored_pages);
    assert_eq!(
        after.device_write_fail,
        before.device_write_fail + before.stored_pages.min(10)
    );
    dev.refuse.store(false, Relaxed);
    for &o in kept.keys().filter(|&&o| o != on_dev[0]) {
        z.load(o, &mut out).unwrap();
        assert_eq!(check(o, &out), 3);
    }
}

/// Line 5: a flipped bit or a torn write is Corrupt, never the page; the entry is kept.
#[test]
fn corrupt_device_pages_are_caught() {
    for tear in [false, true] {
        let dev = Arc::new(MemDevice::default());
        let z = Zswap::builder(lz4())
            .max_pool_bytes(1 << 20)
            .device(Arc::clone(&dev))
            .build()
            .unwrap();
        dev.tear.store(tear, Relaxed);
        for o in 0..40 {
            z.store(o, &page(o, 9)).unwrap();
        }
        assert_eq!(z.writeback(40).unwrap(), 40);
        dev.flip.store(!tear, Relaxed);
        let mut out = zero();
        for o in 0..40 {
            match z.load(o, &mut out) {
                Err(LoadError::Corrupt {
                    expected, found, ..
                }) => assert_ne!(expected, found),
                other => panic!("{other:?}"),
            }
        }
        assert_eq!(z.stats().device_corrupt, 40);
        if !tear {
            // The device heals (a reread of a transient flip): the same loads succeed.
            dev.flip.store(false, Relaxed);
            for o in 0..40 {
                z.load(o, &mut out).unwrap();
                assert_eq!(check(o, &out), 9);
            }
        }
    }
}

/// Line 6: after churn, compaction brings the pool back to 90% packing.
#[test]
fn compaction_restores_packing_after_churn() {
    let z = Zswap::builder(lz4())
        .max_pool_bytes(256 << 20)
        .build()
        .unwrap();
    let n = 6000u64;
    for o in 0..n {
        // Eight noise lengths: eight size classes, each many zspages deep.
        z.store(o, &page_with(o, 1, 300 + 150 * (o % 8) as usize))
            .unwrap();
    }
    let full = z.stats();
    assert!(full.packing() > 0.95, "{}", full.packing());
    let mut r = 7;
    let mut gone = Vec::new();
    for o in 0..n {
        r = mix(r);
        if r % 2 == 0 {
            z.invalidate(o);
            gone.push(o);
        }
    }
    let churned = z.stats();
    assert!(churned.packing() < 0.7, "{}", churned.packing());
    let moved = z.compact();
    let after = z.stats();
    assert!(
        after.packing() >= 0.9,
        "packing {} after compaction",
        after.packing()
    );
    assert_eq!(after.compacted_objects, moved as u64);
    assert!(after.pool_total_size < churned.pool_total_size * 6 / 10);
    let mut out = zero();
    for o in 0..n {
        let got = z.load(o, &mut out);
        if gone.binary_search(&o).is_ok() {
            assert!(matches!(got, Err(LoadError::NotFound)));
        } else {
            got.unwrap();
            assert_eq!(out, page_with(o, 1, 300 + 150 * (o % 8) as usize));
        }
    }
}

/// Line 7: the shrinker writes batches through `write_pages`.
#[test]
fn the_shrinker_writes_in_batches() {
    let (z, dev) = with_mem_device(1 << 20);
    for o in 0..100 {
        z.store(o, &page(o, 0)).unwrap();
    }
    assert_eq!(z.writeback(100).unwrap(), 100);
    assert_eq!(
        dev.batches.load(Relaxed),
        100_u64.div_ceil(WRITEBACK_BATCH as u64)
    );
    assert_eq!(dev.single_writes.load(Relaxed), 0);
    assert_eq!(dev.writes.load(Relaxed), 100);
}

/// Line 7: SwapFile: positional batched writes, reads back, discard frees the slot.
#[test]
fn swap_file_slots_are_written_read_and_reused() {
    let path = common::temp_path("slots");
    let f = SwapFile::create(&path).unwrap();
    let pages: Vec<Page> = (0..40).map(|k| page(k, 5)).collect();
    let batch: Vec<(u64, &Page)> = pages
        .iter()
        .enumerate()
        .map(|(k, p)| (k as u64 * 1000, p))
        .collect();
    f.write_pages(&batch).unwrap();
    assert_eq!((f.pages(), f.slots()), (40, 40));
    assert_eq!(
        std::fs::metadata(&path).unwrap().len(),
        40 * PAGE_SIZE as u64
    );
    let mut out = zero();
    for (k, p) in &batch {
        f.read_page(*k, &mut out).unwrap();
        assert_eq!(&out, *p);
    }
    for k in 0..10u64 {
        f.discard(k * 1000).unwrap();
    }
    assert_eq!(f.pages(), 30);
    assert_eq!(
        f.read_page(0, &mut out).unwrap_err().kind(),
        std::io::ErrorKind::NotFound
    );
    // New keys take the freed slots: the file does not grow.
    for k in 0..10u64 {
        f.write_page(u64::MAX - k, &pages[k as usize]).unwrap();
    }
    assert_eq!((f.pages(), f.slots()), (40, 40));
    for k in 0..10u64 {
        f.read_page(u64::MAX - k, &mut out).unwrap();
        assert_eq!(out, pages[k as usize]);
    }
    for (k, p) in &batch[10..] {
        f.read_page(*k, &mut out).unwrap();
        assert_eq!(&out, *p);
    }
    drop(f);
    std::fs::remove_file(&path).unwrap();
}

/// The tier over a SwapFile, end to end.
#[test]
fn a_tier_over_a_swap_file() {
    let path = common::temp_path("tier");
    let z = Zswap::builder(lz4())
        .max_pool_bytes(32 * PAGE_SIZE as u64)
        .device(SwapFile::create(&path).unwrap())
        .build()
        .unwrap();
    for o in 0..500u64 {
        z.store(o << 20, &page(o << 20, 4)).unwrap();
    }
    let mut out = zero();
    for o in 0..500u64 {
        z.load(o << 20, &mut out).unwrap();
        assert_eq!(check(o << 20, &out), 4);
    }
    assert!(z.stats().device_pages > 300);
    drop(z);
    std::fs::remove_file(&path).unwrap();
}

#[test]
fn bad_configurations_are_refused() {
    assert_eq!(
        Zswap::builder(lz4())
            .max_pool_bytes(4095)
            .build()
            .unwrap_err(),
        BuildError::BudgetTooSmall(4095)
    );
    assert_eq!(
        Zswap::builder(lz4())
            .accept_threshold_percent(101)
            .build()
            .unwrap_err(),
        BuildError::BadThreshold(101)
    );
    let z = Zswap::builder(lz4()).build().unwrap();
    assert_eq!(
        z.writeback(1).unwrap_err().kind(),
        std::io::ErrorKind::Unsupported
    );
    fn send_sync<T: Send + Sync>() {}
    send_sync::<Zswap>();
    send_sync::<SwapFile>();
}
