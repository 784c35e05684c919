//! Property test: any sequence of operations on one thread, pages and folios, under a small
//! budget with a device and recompression of idle entries, matches a map from offset to page.

mod common;

use std::collections::HashMap;
use std::sync::Arc;

use acomp::Acomp;
use acomp_zswap::{LoadError, PAGE_SIZE, Page, StoreError, Zswap};
use common::{MemDevice, check, page, within_budget};
use proptest::prelude::*;

#[derive(Debug, Clone)]
enum Op {
    Store(u8),
    Fill(u8, u8),
    /// A folio at `offset(o)` of 1 to 8 pages, cut at the end of the offset's run.
    StoreFolio(u8, u8),
    /// `load_pages` of the same shape.
    LoadFolio(u8, u8),
    Load(u8),
    Take(u8),
    Invalidate(u8),
    Writeback(u8),
    Compact,
    MarkIdle,
    Recompress(u8),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => any::<u8>().prop_map(Op::Store),
        1 => (any::<u8>(), any::<u8>()).prop_map(|(o, v)| Op::Fill(o, v)),
        2 => (any::<u8>(), any::<u8>()).prop_map(|(o, n)| Op::StoreFolio(o, n)),
        2 => (any::<u8>(), any::<u8>()).prop_map(|(o, n)| Op::LoadFolio(o, n)),
        4 => any::<u8>().prop_map(Op::Load),
        1 => any::<u8>().prop_map(Op::Take),
        1 => any::<u8>().prop_map(Op::Invalidate),
        1 => any::<u8>().prop_map(Op::Writeback),
        1 => Just(Op::Compact),
        1 => Just(Op::MarkIdle),
        1 => any::<u8>().prop_map(Op::Recompress),
    ]
}

/// Offsets in 8 runs of 32 neighbours, the runs spread over the whole u64 range (the last
/// ends at `u64::MAX`), so that folios of neighbouring offsets meet pages stored alone.
fn offset(o: u8) -> u64 {
    let run = u64::from(o >> 5);
    let base = if run == 7 {
        u64::MAX - 31
    } else {
        run * (u64::MAX / 7)
    };
    base + u64::from(o & 31)
}

/// The pages of a folio op at `o`: 1 + `n` % 8 of them, not past the end of `o`'s run.
fn folio_len(o: u8, n: u8) -> usize {
    (1 + usize::from(n % 8)).min(32 - usize::from(o & 31))
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]
    #[test]
    fn operations_match_a_map(ops in proptest::collection::vec(op(), 1..400)) {
        let dev = Arc::new(MemDevice::default());
        let z = Zswap::builder(Acomp::new("lz4").unwrap())
            .max_pool_bytes(48 * PAGE_SIZE as u64)
            .device(Arc::clone(&dev))
            .recompress(Acomp::new("zstd").unwrap())
            .build()
            .unwrap();
        let mut model: HashMap<u64, [u8; PAGE_SIZE]> = HashMap::new();
        let mut id = 0;
        let mut out = [0; PAGE_SIZE];
        for op in ops {
            match op {
                Op::Store(o) => {
                    id += 1;
                    let p = page(offset(o), id);
                    z.store(offset(o), &p).unwrap();
                    model.insert(offset(o), p);
                }
                Op::Fill(o, v) => {
                    z.store(offset(o), &[v; PAGE_SIZE]).unwrap();
                    model.insert(offset(o), [v; PAGE_SIZE]);
                }
                Op::StoreFolio(o, n) => {
                    id += 1;
                    let first = offset(o);
                    // Not `first..`: the last run ends at u64::MAX, which `RangeFrom` passes.
                    let offsets = (0..folio_len(o, n) as u64).map(|k| first + k);
                    let pages: Vec<Page> = offsets.clone().map(|off| page(off, id)).collect();
                    match z.store_folio(first, &pages) {
                        Ok(_) => {
                            for (off, p) in offsets.zip(&pages) {
                                model.insert(off, *p);
                            }
                        }
                        // Refused: the pages stay with the caller, the offsets' old entries go.
                        Err(StoreError::PoolFull) => {
                            for off in offsets {
                                model.remove(&off);
                            }
                        }
                        Err(e) => prop_assert!(false, "store_folio: {}", e),
                    }
                }
                Op::LoadFolio(o, n) => {
                    let first = offset(o);
                    let mut pages: Vec<Page> = vec![[0; PAGE_SIZE]; folio_len(o, n)];
                    let want: Option<Vec<Page>> = (0..pages.len() as u64)
                        .map(|k| model.get(&(first + k)).copied())
                        .collect();
                    match (z.load_pages(first, &mut pages), want) {
                        (Ok(()), Some(want)) => prop_assert!(pages == want),
                        (Err(LoadError::NotFound), None) => {}
                        (got, want) => prop_assert!(false, "{:?} against {:?}", got, want.is_some()),
                    }
                }
                Op::Load(o) | Op::Take(o) => {
                    let take = matches!(op, Op::Take(_));
                    let got = if take {
                        z.take(offset(o), &mut out)
                    } else {
                        z.load(offset(o), &mut out)
                    };
                    match (got, model.get(&offset(o))) {
                        (Ok(_), Some(p)) => {
                            prop_assert!(out == *p);
                            if !same(p) {
                                check(offset(o), &out);
                            }
                        }
                        (Err(LoadError::NotFound), None) => {}
                        (got, want) => prop_assert!(false, "{:?} against {:?}", got, want.is_some()),
                    }
                    if take {
                        model.remove(&offset(o));
                    }
                }
                Op::Invalidate(o) => {
                    prop_assert_eq!(z.invalidate(offset(o)), model.remove(&offset(o)).is_some());
                }
                Op::Writeback(n) => {
                    z.writeback(n as usize % 40).unwrap();
                }
                Op::Compact => {
                    z.compact();
                }
                Op::MarkIdle => z.mark_idle(),
                Op::Recompress(n) => {
                    z.recompress_idle(n as usize % 40);
                }
            }
            within_budget(&z);
            let s = z.stats();
            prop_assert_eq!(s.stored_pages + s.device_pages, model.len() as u64);
            prop_assert_eq!(s.device_pages as usize, dev.pages.lock().len());
        }
    }
}

fn same(p: &[u8; PAGE_SIZE]) -> bool {
    p.iter().all(|&b| b == p[0])
}
