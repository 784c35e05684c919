//! The in-memory load path allocates nothing: a global allocator that counts the calls of
//! the thread that asks (other tests' threads run meanwhile) around loads of every kind of
//! page the pool holds.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

use acomp::Acomp;
use acomp_zswap::{LoadKind, PAGE_SIZE, Page, StoreKind, Zswap};

struct Counting;

thread_local! {
    static ALLOCS: Cell<u64> = const { Cell::new(0) };
}

// SAFETY: every call is forwarded to `System` unchanged; the count is a thread-local `Cell`
// of a const initialiser, which allocates nothing.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCS.with(|a| a.set(a.get() + 1));
        // SAFETY: the caller's contract, passed on.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: the caller's contract, passed on.
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new: usize) -> *mut u8 {
        ALLOCS.with(|a| a.set(a.get() + 1));
        // SAFETY: the caller's contract, passed on.
        unsafe { System.realloc(ptr, layout, new) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

fn allocs() -> u64 {
    ALLOCS.with(Cell::get)
}

/// A page of text-like bytes with `seed` in it: compresses about 2x.
fn text(seed: u64) -> Page {
    let mut p = [0u8; PAGE_SIZE];
    let mut s = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    for (i, b) in p.iter_mut().enumerate() {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        *b = if i % 3 == 0 {
            (s % 26) as u8 + b'a'
        } else {
            b" the page "[i % 10]
        };
    }
    p
}

#[test]
fn in_memory_loads_allocate_nothing() {
    // With `split`, objects that straddle neighbouring backing pages come to acomp in two
    // fragments too (the test hook), so that its multi-fragment path is taken; without, a
    // new pool's objects all lie on neighbouring pages and come in one.
    for (alg, split) in [
        ("lz4", false),
        ("lz4", true),
        ("zstd", false),
        ("zstd", true),
    ] {
        let z = Zswap::builder(Acomp::new(alg).unwrap()).build().unwrap();
        z.pool_split_reads(split);
        let mut kinds = Vec::new();
        for o in 0..200u64 {
            kinds.push(z.store(o, &text(o)).unwrap());
        }
        let mut noise = [0u8; PAGE_SIZE];
        let mut s = 7u64;
        for b in &mut noise {
            s = s
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            *b = (s >> 56) as u8;
        }
        assert_eq!(z.store(1000, &noise).unwrap(), StoreKind::Incompressible);
        assert_eq!(
            z.store(1001, &[9; PAGE_SIZE]).unwrap(),
            StoreKind::SameFilled
        );
        let mut back = [0u8; PAGE_SIZE];
        // Each kind once untimed, so that per-thread and per-CPU state is in place.
        let mut seen = std::collections::BTreeSet::new();
        for o in (0..200).chain([1000, 1001]) {
            seen.insert(format!("{:?}", z.load(o, &mut back).unwrap()));
        }
        // Objects in one fragment among the 200 and, with `split`, objects in two (acomp's
        // one-shot and multi-fragment paths), and each other kind.
        let straddling = (0..200).filter(|&o| z.straddles(o)).count();
        assert!(
            (straddling > 0) == split && straddling < 200,
            "{alg}: {straddling} of 200 objects come in two fragments (split {split})"
        );
        for kind in [
            LoadKind::Decompressed,
            LoadKind::Incompressible,
            LoadKind::Filled,
        ] {
            assert!(
                seen.contains(&format!("{kind:?}")),
                "{alg}: no {kind:?} load in {seen:?}"
            );
        }
        let before = allocs();
        for o in (0..200).chain([1000, 1001]) {
            z.load(o, &mut back).unwrap();
        }
        assert_eq!(allocs() - before, 0, "{alg}: allocations in 202 loads");
    }
}
