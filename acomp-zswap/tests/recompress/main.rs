//! Recompression of idle entries (the crate docs' recompression lines): exact counts
//! computed from the transforms and the pool's size classes, on pages the tests make.
//! Recompression racing loads, stores, invalidates and writeback is in `contract/threads.rs`'s
//! model test and `model.rs`; here, the same offsets raced at random, and other offsets
//! made to go on while recompression compresses (a test hook holds it there).

mod background;
#[path = "../common/mod.rs"]
mod common;
mod passes;
mod races;
mod units;

pub(crate) use std::io::{IoSlice, IoSliceMut};
pub(crate) use std::sync::Arc;
pub(crate) use std::time::Duration;

pub(crate) use acomp::Acomp;
pub(crate) use acomp_zswap::{EntryInfo, PAGE_SIZE, Page, Zswap};
pub(crate) use common::{check, page};

/// The recompression hook is the process's one (`hooks::while_recompressing`): each test that
/// sets it holds this meanwhile, so that no test's hook replaces or clears another's.
pub(crate) static RECOMPRESS_HOOK: parking_lot::Mutex<()> = parking_lot::Mutex::new(());

pub(crate) fn tier(recomp: &str) -> Zswap {
    Zswap::builder(Acomp::new("lz4").unwrap())
        .max_pool_bytes(64 << 20)
        .recompress(Acomp::new(recomp).unwrap())
        .build()
        .unwrap()
}

pub(crate) fn compressed_len(tfm: &Acomp, p: &Page) -> usize {
    let mut dst = [0u8; PAGE_SIZE];
    tfm.compress(&[IoSlice::new(p)], &mut [IoSliceMut::new(&mut dst)])
        .unwrap()
}

/// The class size of an object of `n` bytes.
pub(crate) fn class(n: usize) -> usize {
    acomp_zswap::pool::class_of(n).unwrap().size
}
