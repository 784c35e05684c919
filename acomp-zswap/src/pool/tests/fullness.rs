//! zsmalloc's fullness groups, allocation from the fullest, and compaction.

use super::*;

#[test]
fn compaction_moves_objects_out_of_the_emptiest_zspages() {
    let pool = Pool::default();
    let info = pool.class_info(1000).unwrap();
    let n = info.objs_per_zspage * 4;
    let mut handles: Vec<_> = (0..n)
        .map(|i| pool.alloc(1000, i as u64).unwrap())
        .collect();
    for (i, h) in handles.iter_mut().enumerate() {
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
fn fullness_groups_are_zsmallocs() {
    // get_fullness_group over 127 objects (a class of 32-byte objects... any class).
    assert_eq!(fullness_group(0, 127), 0);
    assert_eq!(fullness_group(1, 127), ZS_INUSE_RATIO_10);
    assert_eq!(fullness_group(12, 127), ZS_INUSE_RATIO_10);
    assert_eq!(fullness_group(13, 127), 2);
    assert_eq!(fullness_group(64, 127), 6);
    assert_eq!(fullness_group(126, 127), ZS_INUSE_RATIO_99);
    assert_eq!(fullness_group(127, 127), ZS_INUSE_RATIO_100);
    assert_eq!(fullness_group(1, 2), 6);
}

#[test]
fn every_class_finds_its_groups_by_multiply_as_by_division() {
    for i in 0..NR_CLASSES {
        let info = ClassInfo::new(i);
        let state = ClassState::new(&info);
        for inuse in 0..=info.objs_per_zspage {
            assert_eq!(
                state.group_of(inuse as u16),
                fullness_group(inuse, info.objs_per_zspage),
                "class {i}, {inuse} of {}",
                info.objs_per_zspage
            );
        }
    }
}

/// Zspages of the 100-byte class, each full, then freed down to `kept[i]` objects.
fn zspages_kept(pool: &Pool, kept: &[usize]) -> Vec<Vec<Handle>> {
    let per = pool.class_info(100).unwrap().objs_per_zspage;
    let mut all: Vec<Vec<Handle>> = kept
        .iter()
        .map(|_| (0..per).map(|_| pool.alloc(100, 0).unwrap()).collect())
        .collect();
    for (hs, &k) in all.iter_mut().zip(kept) {
        assert!(hs.iter().all(|h| h.zspage == hs[0].zspage));
        for h in hs.drain(k..) {
            pool.free(h);
        }
    }
    all
}

#[test]
fn alloc_takes_from_the_fullest_group() {
    let pool = Pool::default();
    let per = pool.class_info(100).unwrap().objs_per_zspage;
    assert!(per >= 10, "{per} objects a zspage");
    // Three zspages: one object in use, half in use, all but one: three groups apart.
    let zs = zspages_kept(&pool, &[1, per / 2, per - 1]);
    let ids: Vec<u32> = zs.iter().map(|hs| hs[0].zspage).collect();
    // The fullest (all but one in use) takes the next object, then, full, the half one.
    let a = pool.alloc(100, 0).unwrap();
    assert_eq!(a.zspage, ids[2]);
    let b = pool.alloc(100, 0).unwrap();
    assert_eq!(b.zspage, ids[1]);
    // Filling the half one takes its free objects before the emptiest gets one.
    let rest: Vec<_> = (0..per - per / 2 - 1)
        .map(|_| pool.alloc(100, 0).unwrap())
        .collect();
    assert!(rest.iter().all(|h| h.zspage == ids[1]));
    assert_eq!(pool.alloc(100, 0).unwrap().zspage, ids[0]);
}

#[test]
fn compaction_drains_the_emptiest_group_into_the_fullest() {
    let pool = Pool::default();
    let per = pool.class_info(100).unwrap().objs_per_zspage;
    // One object in use, and three quarters in use: the first moves into the second.
    let mut zs = zspages_kept(&pool, &[1, per * 3 / 4]);
    let (sparse, full) = (zs[0][0].zspage, zs[1][0].zspage);
    let candidates = pool.compaction_candidates();
    assert_eq!(candidates.len(), 1);
    assert_eq!(candidates[0].1, zs[0][0].place());
    pool.write(&mut zs[0][0], &[7; 100]);
    assert!(pool.migrate(&mut zs[0][0], 100));
    assert_eq!(zs[0][0].zspage, full);
    assert_ne!(full, sparse);
    assert_eq!(read(&pool, &zs[0][0], 100).1, vec![7; 100]);
    assert_eq!(
        pool.stats().pages,
        pool.class_info(100).unwrap().pages_per_zspage
    );
}
