//! The main job's parts: a user-space zswap on `acomp` (`zswap`: the tier, `acomp_zswap`;
//! the pages it stores come from `acomp_pages`), the workload and its report, the
//! side-by-side with the kernel's zram (`zram`, `compare`), folio-sized units (`units`) and
//! dictionaries (`dict`, `lz4dict`), the load patterns of units and their decoded-unit cache
//! (`patterns`, `cache`), lz4 with idle pages recompressed with zstd (`recomp`), the
//! frontier plot (`plot`), how every table times its calls (`measure`), and `--pager`'s
//! paging through acomp-pager beside the kernel's zram used as swap (`paging`, `pager`,
//! `swap`, `pagingplot`), and `--under-budget`'s records under a memory budget on both sides
//! (`budget`, `budgetkernel` with its `cgroup`, `budgetplot`), and `--record-store`'s
//! records read and written by threads under a resident limit on each side
//! (`recordstore`, `recordkernel`). `main.rs` is the command line; `tests/` tests these
//! modules.

pub mod budget;
pub mod budgetkernel;
pub mod budgetplot;
pub mod cache;
pub mod cgroup;
pub mod compare;
pub mod dict;
pub mod lz4dict;
pub mod measure;
pub mod pager;
pub mod paging;
pub mod pagingplot;
pub mod patterns;
pub mod plot;
pub mod recomp;
pub mod recordkernel;
pub mod recordstore;
pub mod report;
pub mod swap;
pub mod tiered;
pub mod units;
pub mod workload;
pub mod zram;
pub mod zswap;
