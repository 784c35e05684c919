//! The contract for folios (`Zswap::store_folio`): each line of the crate docs holds for
//! the pages of a folio as for pages stored alone.

mod budget;
#[path = "../common/mod.rs"]
mod common;
mod loads;

pub(crate) use std::collections::HashMap;
pub(crate) use std::sync::Arc;
pub(crate) use std::sync::atomic::Ordering::Relaxed;

pub(crate) use acomp::Acomp;
pub(crate) use acomp_zswap::{
    EntryInfo, FolioKind, LoadError, LoadKind, MAX_FOLIO_PAGES, PAGE_SIZE, Page, StoreError, Zswap,
};
pub(crate) use common::{MemDevice, check, mix, page, page_with, within_budget};

pub(crate) fn zero() -> Page {
    [0; PAGE_SIZE]
}

/// The pages of store `id` of the folio at `first`: [`page`]s, each naming its offset.
pub(crate) fn folio(first: u64, n: usize, id: u64) -> Vec<Page> {
    (0..n as u64).map(|k| page(first + k, id)).collect()
}

pub(crate) fn tier(alg: &str, budget: u64) -> Zswap {
    Zswap::builder(Acomp::new(alg).unwrap())
        .max_pool_bytes(budget)
        .build()
        .unwrap()
}
