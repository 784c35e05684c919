//! Line 3: same-filled and incompressible pages, kept and counted.

use super::*;

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
    assert_eq!(z.store(1, &zero()).unwrap(), StoreKind::SameFilled);
    assert_eq!(
        z.store(2, &[0xab; PAGE_SIZE]).unwrap(),
        StoreKind::SameFilled
    );
    assert_eq!(z.store(3, &random).unwrap(), StoreKind::Incompressible);
    assert_eq!(z.store(4, &page(4, 0)).unwrap(), StoreKind::Compressed);
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
    assert_eq!(z.load(1, &mut out).unwrap(), LoadKind::Filled);
    assert_eq!(out, zero());
    assert_eq!(z.load(2, &mut out).unwrap(), LoadKind::Filled);
    assert_eq!(out, [0xab; PAGE_SIZE]);
    assert_eq!(z.load(3, &mut out).unwrap(), LoadKind::Incompressible);
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
    // `take_kind` tells where the page came from as `load_kind` does; `take` does not.
    assert_eq!(z.take(4, &mut out).unwrap(), LoadKind::Decompressed);
    assert_eq!(out, page(4, 0));
    assert!(!z.contains(4));
    z.take(2, &mut out).unwrap();
    assert_eq!(out, [0xab; PAGE_SIZE]);
    assert_eq!(z.stats().stored_pages, 0);
}
