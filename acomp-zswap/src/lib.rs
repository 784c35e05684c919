//! A compressed page tier on [`acomp`], as the Linux kernel's zswap: a pool of compressed
//! 4 KiB pages under a memory budget, in front of a swap device to which the coldest pages
//! are written back when the pool is full.
//!
//! ```
//! use acomp_zswap::{LoadError, PAGE_SIZE, Page, SwapFile, Zswap};
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! # let path = std::env::temp_dir().join(format!("acomp-zswap-doc-{}", std::process::id()));
//! let zswap = Zswap::builder(acomp::Acomp::new("lz4")?) // the transform, by value
//!     .max_pool_bytes(64 << 20)                      // the budget (zswap's max_pool_percent, in bytes)
//!     .device(SwapFile::create(&path)?)              // optional: where cold pages go
//!     .build()?;                                     // Send + Sync
//! let mut page: Page = [0; PAGE_SIZE];
//! page[..11].copy_from_slice(b"hello, swap");
//! zswap.store(1 << 40, &page)?;                      // offset: any u64
//! let mut back = [0; PAGE_SIZE];
//! zswap.load(1 << 40, &mut back)?;
//! assert_eq!(back, page);
//! zswap.invalidate(1 << 40);
//! assert!(matches!(zswap.load(1 << 40, &mut back), Err(LoadError::NotFound)));
//! assert_eq!(zswap.stats().stored_pages, 0);
//! # std::fs::remove_file(&path)?;
//! # Ok(())
//! # }
//! ```
//!
//! # The contract
//!
//! - A stored page loads back byte for byte until its offset is stored again or
//!   invalidated, whether it sits in the pool or was written back. Offsets are sparse:
//!   memory grows with the pages stored, never with the largest offset (a radix of runs of
//!   64 offsets, as zswap's xarray, not a vector indexed by offset: a run in use takes a
//!   group of 64 entries of 40 bytes, so dense offsets, as swap slots are, cost their
//!   entries and 0.2 bytes of index each, and a page alone in its run about 3.3 KiB, its
//!   group's and its block's); 0, 2^40 and `u64::MAX` are offsets like any.
//! - The pool never holds more than `max_pool_bytes` ([`Stats::pool_total_size`]: backing
//!   pages counted as zsmalloc counts them; the free backing pages its arena keeps resident
//!   for reuse, under two chunks of 2 MiB, are not counted, as the kernel's free pages are not
//!   zsmalloc's: `PoolStats::cached_pages`, which `Zswap::pool_stats` gives with the
//!   `inspect` feature). At the budget a store writes back the coldest entries to the
//!   device, in batches, until the pool is down to the accept threshold, and admits the
//!   page. Coldness is zswap's: an LRU with a second chance for entries loaded
//!   since they were last passed over. Without a device, or when the device fails, the
//!   store is refused ([`StoreError`]) and the page stays with the caller, as
//!   `zswap_store` returning false leaves it; the offset's old entry is invalidated. Once
//!   refused, stores stay refused until the pool falls to `accept_threshold_percent` of the
//!   budget (default 90): a full pool does not flip pages in and out. Invalidated pages
//!   free their objects, but a zspage's backing pages only once all its objects are gone:
//!   without a device, a refused store first compacts where the room so left could bring
//!   the pool to the threshold (the kernel's zsmalloc compacts from its shrinker), so that
//!   invalidating pages ends the refusals. (A store needs a whole zspage of its size class,
//!   up to 8 pages: with a budget of only a few dozen pages, a store may find none it can
//!   free and be refused with [`StoreError::PoolFull`] even with a device; so may a folio
//!   whose frame needs more than the threshold leaves room for: store its pages alone. A
//!   store that finds every entry left busy, with loads or as other stores' objects on
//!   their way in, waits for them up to [`BUSY_WAIT`], 100 ms, before it is refused.)
//! - Same-filled pages, those that repeat one 8-byte word (zswap's notion, wider than zram's
//!   byte), are kept as that word (nothing in the pool), incompressible pages
//!   as they are (a page-sized object), and counted ([`Stats::same_filled_pages`],
//!   [`Stats::stored_incompressible_pages`]).
//! - Any number of threads store, load, take, invalidate, write back and compact, on the
//!   same offsets too. A load returns the bytes of the last store at that offset that
//!   completed before it began, or of a store overlapping it, or `NotFound` after an
//!   invalidate that completed before it began: never another offset's bytes, never a mix
//!   of two stores, never a torn page. Each entry's lock is the guard of its object: a
//!   load holds it while it decompresses or reads the device, and an object is freed,
//!   moved or written back only under it; no device I/O happens under a lock that loads of
//!   other offsets need.
//! - Device faults lose nothing: a write that fails leaves the entries in the pool
//!   ([`Stats::device_write_fail`]); a read that fails is [`LoadError::Io`] with the entry
//!   kept, and the same load succeeds once the device does. Pages on the device carry a
//!   checksum (CRC-32 of key and page, kept in memory): a flipped bit, a torn write or
//!   another page's bytes is [`LoadError::Corrupt`], never returned as the page.
//! - After churn, [`Zswap::compact`] moves the objects of the emptiest zspages into fuller
//!   ones (zsmalloc's compaction): the pool gets back to at least 90% packing
//!   ([`Stats::packing`]) where each size class holds more than a few zspages' worth. A store
//!   that finds nothing left to write back compacts by itself, and so does a refused store
//!   without a device where that can make room.
//! - [`SwapFile`]: a file of page slots written with positional I/O, a batch of neighbouring
//!   slots in one `pwritev`; `discard` punches a hole and frees the slot for reuse.
//! - Recompression of idle entries (zram's `recomp_algorithm`, `idle`, `recompress
//!   type=idle`), with [`Builder::recompress`]: [`Zswap::mark_idle`] marks every entry idle,
//!   a load or store of the offset clears the mark, and [`Zswap::recompress_idle`] (or the
//!   thread of [`Zswap::recompress_every`]) recompresses the entries still idle with the
//!   second transform. Every line above holds through it: each entry is decoded by the
//!   transform that wrote it; the page is recompressed outside any lock and swapped in only
//!   if the entry is unchanged and still idle. A frame not at least one size class smaller
//!   is thrown away, and the entry is not tried again until stored again. Folio pages are
//!   not recompressed: their frame serves the folio's other pages. With
//!   [`Builder::recompress_unit_pages`], the idle pages of each aligned window of offsets are
//!   recompressed together into a unit, a folio's frame written by the second transform,
//!   kept only where it takes less of the pool than their objects did; a page joins it only
//!   if its entry is unchanged and still idle when the unit is swapped in (every page's lock
//!   held for writing, in offset order), and everything the folio lines below say holds for
//!   its pages ([`Stats::stored_units`], [`Stats::held_unit_pages`]). With
//!   [`Builder::recompress_pressure_percent`] the thread of [`Zswap::recompress_every`] also
//!   recompresses once the pool passes that share of its budget.
//! - Batches ([`Zswap::store_batch`]): up to [`STORE_BATCH`] pages compressed in one of
//!   acomp's batch requests and entered with one hold of the LRU's lock and one of each
//!   shard's lock the batch touches; each page's outcome is its own, and the tier is left
//!   as storing the pages one after another in order leaves it (an offset twice in a batch
//!   keeps its last page).
//! - Folios ([`Zswap::store_folio`]): up to [`MAX_FOLIO_PAGES`] neighbouring pages kept as
//!   one frame (zswap's large-folio store, zram's multi-page compression); each page is an
//!   entry of its own offset, and every line above holds for it as for a page stored alone:
//!   it loads (a range read where the algorithm has one: zstd), takes, invalidates, is
//!   stored again and is written back by its offset, counted in the budget and the LRU. The
//!   frame is freed when its last page leaves it; until then the pages that left are
//!   counted ([`Stats::held_folio_pages`], [`Stats::held_folio_bytes`]). Compaction moves
//!   a frame's objects when its first page is still its own.
//! - Clean copies ([`Zswap::load_clean`]): a page loaded for a pager that keeps it and its
//!   copy in the tier both (the kernel's swap cache keeping the swap slot of a page faulted
//!   in for reading). At the budget the tier drops them first, oldest first, before writing
//!   anything back and, without a device, instead of refusing a store; they are never
//!   written back. [`Zswap::clear_clean`] turns a copy back into an ordinary entry under its
//!   lock, or says that it was dropped: it never says a dropped copy is held.
//!
//! The device is addressed by keys the tier hands out, one per written-back copy, not by
//! swap offset: a slot freed and reused is never read back as another offset's page.
//!
//! # Sharing the tier
//!
//! [`Zswap`] is `Send + Sync` and not `Clone`: threads share it as `&Zswap` (scoped threads,
//! no reference count on any call) or as `Arc<Zswap>` where an owner outlives the call that
//! made it (a pager's handler thread; [`Zswap::recompress_every`] takes `&Arc<Zswap>` and its
//! thread holds a `Weak`, so the last `Arc` ends it). A tier is one pool, one budget and one
//! device: `Arc<Zswap>` says in its type that its owners share them, where a `Clone` handle
//! (moka's `Cache`) would put an `Arc` behind every call and make two clones look like two
//! tiers.
//!
//! ```
//! use std::sync::Arc;
//! use acomp_zswap::{PAGE_SIZE, Zswap};
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let zswap = Zswap::builder(acomp::Acomp::new("lz4")?).build()?;
//! std::thread::scope(|s| {
//!     for t in 0..4u64 {
//!         let zswap = &zswap; // a reference is enough for scoped threads
//!         s.spawn(move || zswap.store(t, &[t as u8; PAGE_SIZE]).unwrap());
//!     }
//! });
//! let shared = Arc::new(zswap); // for a thread that outlives this one
//! let owner = Arc::clone(&shared);
//! std::thread::spawn(move || owner.invalidate(0)).join().unwrap();
//! assert_eq!(shared.stats().stored_pages, 3);
//! # Ok(())
//! # }
//! ```
//!
//! # Features
//!
//! - `inspect`: measurement hooks (`Zswap::straddles`, `lru_len`, `pool_stats`,
//!   `bookkeeping_bytes`, `is_recompressed`, `recompress_acomp`) for tests, benches and measurements: answers
//!   about the tier's insides, outside the contract above, which may change in any release.
//!
//! # Where it comes from
//!
//! `mm/zswap.c` (store, load, invalidate, the shrinker's second chance, `accept_threshold_percent`,
//! the debugfs counters [`Stats`] is named after) and `mm/zsmalloc.c` (size classes 16 bytes
//! apart, zspages of up to 8 pages, objects straddling two pages read as two fragments (as
//! one where the pages are neighbours in one of the pool's chunks), compaction): the pool, `src/pool.rs`. Recompression is zram's (`drivers/block/zram/zram_drv.c`,
//! `Documentation/admin-guide/blockdev/zram.rst`): zswap has none.

#![deny(missing_docs, unsafe_code)]

// The files in one-way layers, each calling only into the layers above it in this list
// (ARCHITECTURE.md, "acomp-zswap/", draws them and says why the cuts are where they are).
// 0. Types and platform: leaves.
mod filled;
#[cfg(feature = "test-hooks")]
#[doc(hidden)]
pub mod hooks;
mod outcome;
mod stats;
mod sys;
// 1. Storage: the pool (zsmalloc) and the device, which know no entry.
mod device;
// The zsmalloc-style pool is the tier's own; its tests and benches (the `test-hooks`
// feature) read it: its size classes, its arena's constants, its allocator.
#[cfg(feature = "test-hooks")]
#[doc(hidden)]
pub mod pool;
#[cfg(not(feature = "test-hooks"))]
mod pool;
// 2. Entries: the slab (entries, their slots, their lists) and the index by offset.
mod index;
mod slab;
// 3. The tier's core: what makes and ends an entry, and what reads one.
mod read;
mod tier;
// 4. The calls on entries, and reclaim under them.
mod inspect;
mod load;
mod shrink;
mod store;
// 5. Extensions over those: folios, recompression, the builder.
mod builder;
mod folio;
mod recompress;

pub use builder::Builder;
pub use device::{SwapDevice, SwapFile};
pub use filled::{same_filled, same_filled_word};
pub use outcome::{
    BuildError, EntryInfo, FolioInfo, FolioKind, LoadError, LoadKind, MAX_FOLIO_PAGES, StoreError,
    StoreKind, WritebackError,
};
/// The pool's own counters, from `Zswap::pool_stats`: both behind the `inspect` feature,
/// answers about the tier's insides outside its contract.
#[cfg(feature = "inspect")]
pub use pool::PoolStats;
pub use recompress::{PRESSURE_POLL, Recompressing};
pub use shrink::{BUSY_WAIT, WRITEBACK_BATCH};
pub use stats::Stats;
pub use store::STORE_BATCH;
pub use tier::Zswap;

// The README's example runs as a doctest, so that what a user copies from it works.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;

/// Bytes in a page, stored or backing.
pub const PAGE_SIZE: usize = 4096;

/// A page as the tier sees it.
pub type Page = [u8; PAGE_SIZE];

/// The tier and what it hands out are shared between threads: a compile-time proof.
fn _assert_send_sync() {
    fn send_sync<T: Send + Sync>() {}
    send_sync::<Zswap>();
    send_sync::<SwapFile>();
    send_sync::<Stats>();
    send_sync::<Recompressing>();
    send_sync::<StoreError>();
    send_sync::<LoadError>();
    send_sync::<WritebackError>();
}
