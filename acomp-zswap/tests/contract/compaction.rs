//! Line 6: compaction after churn.

use super::*;

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
