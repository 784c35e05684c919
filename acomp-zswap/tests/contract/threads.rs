//! Line 4: threads on the same offsets, against a model; the load that finds its entry
//! replaced, or its slot reused.

use super::*;

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
                                Ok(_) => {
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
            (Ok(_), Some(id)) => assert_eq!(check(off, &out), id),
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

/// The tests that set the process-wide `after_lookup` hook, one at a time: a second test's
/// hook would replace the first's, dropping its channels before its load reached them.
static AFTER_LOOKUP_TESTS: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// Holds the first load of `offset` between its lookup and the entry's lock (the
/// process-wide `after_lookup` hook): the load says on the first channel that it has looked
/// up, and waits for a word on the second. The guard keeps other such tests out until the
/// caller drops it.
fn hold_first_load(
    offset: u64,
) -> (
    std::sync::mpsc::Receiver<()>,
    std::sync::mpsc::SyncSender<()>,
    std::sync::MutexGuard<'static, ()>,
) {
    let serial = AFTER_LOOKUP_TESTS
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    use std::sync::mpsc::sync_channel;
    let (looked_up_tx, looked_up) = sync_channel::<()>(0);
    let (go, go_rx) = sync_channel::<()>(0);
    let first_load = Mutex::new(Some((looked_up_tx, go_rx)));
    let hook = move |o: u64| {
        if o == offset {
            // The first load only.
            if let Some((looked_up_tx, go_rx)) = first_load.lock().take() {
                looked_up_tx.send(()).unwrap();
                go_rx.recv().unwrap();
            }
        }
    };
    acomp_zswap::hooks::after_lookup(Some(Arc::new(hook)));
    (looked_up, go, serial)
}

/// Line 4, the race above made to happen every time: a load that looked the offset up just
/// before a store replaced the entry finds the old entry dead and must look again, finding
/// the new one (the store completed before the load locked anything). A test hook holds
/// the load between its lookup and the entry's lock while the store runs.
#[test]
fn a_load_that_finds_its_entry_replaced_looks_again() {
    let z = Zswap::builder(lz4())
        .max_pool_bytes(1 << 20)
        .build()
        .unwrap();
    // An offset no other test of this binary loads: the hook is process-wide.
    let off = 0x5eed_0000_0000_0007;
    z.store(off, &page(off, 1)).unwrap();
    let (looked_up, go, _serial) = hold_first_load(off);
    std::thread::scope(|s| {
        let z = &z;
        let loader = s.spawn(move || {
            let mut out = zero();
            z.load(off, &mut out).map(|_| check(off, &out))
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

/// Line 4 where the entry's slot is reused: entries are slots of a slab, and a slot freed
/// while a load holds its old handle (between the lookup and the lock) may be the next
/// store's entry before the load locks it. The load must see its entry gone (the slot's
/// generation moved on) and look again, never give the new page of another offset. The
/// tier is fresh, so that the one free slot is the one the next store takes.
#[test]
fn a_load_whose_slot_is_reused_meanwhile_never_gives_the_new_page() {
    let z = Zswap::builder(lz4()).build().unwrap();
    // Offsets no other test of this binary loads: the hook is process-wide.
    let (old, new) = (0x5eed_0000_0000_0011, 0x5eed_0000_0000_0012);
    z.store(old, &page(old, 1)).unwrap();
    let (looked_up, go, _serial) = hold_first_load(old);
    std::thread::scope(|s| {
        let z = &z;
        let loader = s.spawn(move || {
            let mut out = zero();
            z.load(old, &mut out).map(|_| out)
        });
        looked_up
            .recv_timeout(std::time::Duration::from_secs(60))
            .expect("the load reaches the hook (the test-hooks feature is on)");
        // The load's slot is freed, and taken by a store of another offset.
        assert!(z.invalidate(old));
        z.store(new, &page(new, 2)).unwrap();
        go.send(()).unwrap();
        let got = loader.join().unwrap();
        acomp_zswap::hooks::after_lookup(None);
        assert!(
            matches!(got, Err(LoadError::NotFound)),
            "the load of the invalidated offset gave {:?}",
            got.map(|p| check(new, &p))
        );
    });
    let mut out = zero();
    z.load(new, &mut out).unwrap();
    assert_eq!(check(new, &out), 2);
}
