//! Property test: any sequence of operations on one thread, under a small budget with a
//! device and recompression of idle entries, matches a map from offset to page.

mod common;

use std::collections::HashMap;
use std::sync::Arc;

use acomp::Acomp;
use acomp_zswap::{LoadError, PAGE_SIZE, Zswap};
use common::{MemDevice, check, page, within_budget};
use proptest::prelude::*;

#[derive(Debug, Clone)]
enum Op {
    Store(u8),
    Fill(u8, u8),
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
        4 => any::<u8>().prop_map(Op::Load),
        1 => any::<u8>().prop_map(Op::Take),
        1 => any::<u8>().prop_map(Op::Invalidate),
        1 => any::<u8>().prop_map(Op::Writeback),
        1 => Just(Op::Compact),
        1 => Just(Op::MarkIdle),
        1 => any::<u8>().prop_map(Op::Recompress),
    ]
}

/// Offsets spread over the whole u64 range.
fn offset(o: u8) -> u64 {
    (o as u64).wrapping_mul(0x0101_0101_0101_0101) ^ ((o as u64) << 60)
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
                Op::Load(o) | Op::Take(o) => {
                    let take = matches!(op, Op::Take(_));
                    let got = if take {
                        z.take(offset(o), &mut out).map(|_| ())
                    } else {
                        z.load(offset(o), &mut out)
                    };
                    match (got, model.get(&offset(o))) {
                        (Ok(()), Some(p)) => {
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
