//! The main job's parts: a user-space zswap on `acomp` (`zswap`, over a zsmalloc-style
//! `pool`), the inputs it stores (`input`, `snapshot`), the workload and its report, the
//! side-by-side with the kernel's zram (`zram`, `compare`), folio-sized units (`units`) and
//! dictionaries (`dict`, `lz4dict`), the load patterns of units and their decoded-unit cache
//! (`patterns`, `cache`), lz4 with idle pages recompressed with zstd (`recomp`), and the
//! frontier plot (`plot`); `--pager`'s paging beside the kernel's zram used as swap (`paging`,
//! `swap`, `pagingplot`). `main.rs` is the command line; `tests/zswap.rs` tests
//! these modules.

pub mod cache;
pub mod compare;
pub mod dict;
pub mod input;
pub mod lz4dict;
pub mod paging;
pub mod pagingplot;
pub mod patterns;
pub mod plot;
pub mod recomp;
/// The tier's zsmalloc-style pool.
pub use acomp_zswap::pool;
pub mod report;
pub mod snapshot;
pub mod swap;
pub mod tiered;
pub mod units;
pub mod workload;
pub mod zram;
pub mod zswap;
