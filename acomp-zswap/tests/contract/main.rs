//! The crate docs' contract, a test (or more) for each line, on pages the tests make: a
//! module per line or two, the helpers here.

mod budget;
#[path = "../common/mod.rs"]
mod common;
mod compaction;
mod config;
mod device;
mod kinds;
mod pages;
mod threads;

pub(crate) use std::collections::HashMap;
pub(crate) use std::sync::Arc;
pub(crate) use std::sync::atomic::Ordering::Relaxed;

pub(crate) use acomp::Acomp;
pub(crate) use acomp_zswap::{
    BuildError, LoadError, LoadKind, PAGE_SIZE, Page, StoreError, StoreKind, SwapDevice, SwapFile,
    WRITEBACK_BATCH, WritebackError, Zswap,
};
pub(crate) use common::{MemDevice, check, mix, page, page_with, within_budget};
pub(crate) use parking_lot::Mutex;

pub(crate) fn lz4() -> Acomp {
    Acomp::new("lz4").unwrap()
}

/// A tier over lz4 with this budget and an in-memory device the test keeps a hold on.
pub(crate) fn with_mem_device(budget: u64) -> (Zswap, Arc<MemDevice>) {
    let dev = Arc::new(MemDevice::default());
    let z = Zswap::builder(lz4())
        .max_pool_bytes(budget)
        .device(Arc::clone(&dev))
        .build()
        .unwrap();
    (z, dev)
}

pub(crate) fn zero() -> Page {
    [0; PAGE_SIZE]
}
