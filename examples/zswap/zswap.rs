//! The swap cache itself: `store`, `load` and `invalidate` of 4 KiB pages by swap offset,
//! embedding an [`Acomp`] the way the kernel's `mm/zswap.c` embeds `crypto_acomp`.
//!
//! - `store` (`zswap_store`, `zswap_compress`): a page whose bytes are all equal is kept as
//!   its fill value alone (zram's same-filled pages); any other is compressed in one request
//!   of one fragment each side, into a destination of one page. A compression that fails,
//!   or gives a page or more, stores the page as it is (zswap since Linux 6.18, for the LRU
//!   order of writeback), and the reason is counted.
//! - `load` (`zswap_load`, `zswap_decompress`): decompresses straight out of the pool's
//!   fragments (two where the object straddles backing pages: the stream path) into the
//!   page, and succeeds only when exactly a page comes out.
//! - `invalidate` (`zswap_invalidate`): frees the entry and its object.

use std::cell::RefCell;
use std::io::{IoSlice, IoSliceMut};
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

use acomp::{Acomp, Error};
use parking_lot::Mutex;

use crate::pool::{AllocError, Handle, PAGE_SIZE, Pool, PoolStats};

/// A page as zswap sees it.
pub type Page = [u8; PAGE_SIZE];

/// Independent locks on the entries, so that threads storing and loading different
/// offsets seldom meet (the kernel has one xarray per 64 MiB of swap space). Offset `o` is
/// in shard `o % TREE_SHARDS`, at index `o / TREE_SHARDS`.
const TREE_SHARDS: usize = 64;

/// One shard of the entries, indexed by offset as the kernel's xarray is: swap offsets are
/// dense, so a vector beats a hash map.
type Shard = Mutex<Vec<Option<Entry>>>;

/// What is kept for one swap offset (`struct zswap_entry`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Entry {
    /// A compressed page: its object and the frame's length in bytes (`entry->length`).
    Compressed {
        /// The pool object.
        handle: Handle,
        /// Bytes of the frame.
        length: usize,
    },
    /// A page kept as it is, in a page-sized object.
    Incompressible {
        /// The pool object.
        handle: Handle,
    },
    /// A page whose bytes all equal this value; nothing in the pool.
    SameFilled(u8),
}

/// Why a store failed: the page stays with the caller, who sends it to the swap device,
/// as `zswap_store` returning false leaves it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reject {
    /// The pool could not allocate an object.
    Alloc(AllocError),
}

impl std::fmt::Display for Reject {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Reject::Alloc(e) => write!(f, "page rejected: {e}"),
        }
    }
}

impl std::error::Error for Reject {}

/// Why a load failed (each counts in `decompress_fail`, where acomp was asked).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LoadError {
    /// No entry at this offset.
    NotFound,
    /// acomp refused the frame.
    Decompress(Error),
    /// The frame held this many bytes, not a page.
    WrongLength(usize),
}

impl std::fmt::Display for LoadError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            LoadError::NotFound => write!(f, "no entry at this offset"),
            LoadError::Decompress(e) => write!(f, "decompression failed: {e}"),
            LoadError::WrongLength(n) => write!(f, "decompressed {n} bytes, not {PAGE_SIZE}"),
        }
    }
}

impl std::error::Error for LoadError {}

/// How a page was kept, for [`Zswap::store`]'s caller.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StoreKind {
    /// Compressed by acomp.
    Compressed,
    /// Compression failed or did not pay: kept as it is.
    Incompressible,
    /// All bytes equal: kept as the fill value.
    SameFilled,
}

/// How a page was loaded, for [`Zswap::load`]'s caller (who times each kind on its own).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LoadKind {
    /// Decompressed from one fragment: acomp's one-shot path.
    OneFragment,
    /// Decompressed from two fragments (the object straddles backing pages): the stream path.
    Straddling,
    /// Copied: the page was stored as it is.
    Copied,
    /// Filled with the page's one byte value.
    Filled,
}

/// zswap's debugfs counters (`/sys/kernel/debug/zswap/`), plus acomp's and the pool's.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Counters {
    /// Pages stored now, of every kind.
    pub stored_pages: u64,
    /// Of those, pages kept as they are.
    pub stored_incompressible_pages: u64,
    /// Of those, pages kept as their fill value.
    pub same_filled_pages: u64,
    /// Compressions that gave `ENOSPC` or a page or more: stored as they are.
    pub reject_compress_poor: u64,
    /// Compressions that failed otherwise: stored as they are.
    pub reject_compress_fail: u64,
    /// Stores refused because the pool could not allocate.
    pub reject_alloc_fail: u64,
    /// Loads whose decompression failed or gave other than a page.
    pub decompress_fail: u64,
    /// Sum of the stored objects' lengths in bytes (frames, and pages kept as they are).
    pub stored_bytes: u64,
    /// The pool's counters; `pool.total_size()` is zswap's `pool_total_size`.
    pub pool: PoolStats,
}

#[derive(Default)]
struct AtomicCounters {
    stored_pages: AtomicU64,
    stored_incompressible_pages: AtomicU64,
    same_filled_pages: AtomicU64,
    reject_compress_poor: AtomicU64,
    reject_compress_fail: AtomicU64,
    reject_alloc_fail: AtomicU64,
    decompress_fail: AtomicU64,
    stored_bytes: AtomicU64,
}

thread_local! {
    /// The destination of compression, one page per thread: the counterpart of the kernel's
    /// per-CPU `acomp_ctx->buffer`, reused so that a store allocates nothing but its object.
    static DST: RefCell<Box<Page>> = RefCell::new(Box::new([0; PAGE_SIZE]));
}

/// A zswap: a transform, a pool and the entries by swap offset. `Send + Sync`.
#[derive(Debug)]
pub struct Zswap {
    tfm: Acomp,
    pool: Pool,
    tree: Box<[Shard]>,
    counters: AtomicCounters,
}

impl std::fmt::Debug for AtomicCounters {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AtomicCounters").finish_non_exhaustive()
    }
}

/// The value every byte of `page` has, if they all have the same one.
pub fn same_filled(page: &Page) -> Option<u8> {
    // Compare in words, as zram's `page_same_filled` does: most pages differ early.
    let word = u64::from_ne_bytes([page[0]; 8]);
    page.chunks_exact(8)
        .all(|w| u64::from_ne_bytes(w.try_into().expect("8 bytes")) == word)
        .then_some(page[0])
}

impl Zswap {
    /// A zswap over `tfm`, with a pool of at most `max_pool_pages` backing pages if given.
    pub fn new(tfm: Acomp, max_pool_pages: Option<usize>) -> Self {
        Zswap {
            tfm,
            pool: Pool::new(max_pool_pages),
            tree: (0..TREE_SHARDS).map(|_| Mutex::default()).collect(),
            counters: AtomicCounters::default(),
        }
    }

    /// The transform, for its [`Acomp::stats`].
    pub fn acomp(&self) -> &Acomp {
        &self.tfm
    }

    /// The shard of `offset`, and the index in it.
    fn shard(&self, offset: u64) -> (&Shard, usize) {
        let shards = TREE_SHARDS as u64;
        let index = usize::try_from(offset / shards).expect("offset fits the address space");
        (&self.tree[(offset % shards) as usize], index)
    }

    /// Puts `entry` at `offset`; returns the entry it replaces.
    fn insert(&self, offset: u64, entry: Entry) -> Option<Entry> {
        let (shard, i) = self.shard(offset);
        let mut shard = shard.lock();
        if shard.len() <= i {
            shard.resize(i + 1, None);
        }
        shard[i].replace(entry)
    }

    /// The entry at `offset`, if any: a clone, so that no lock on the entries is held while
    /// its object is read.
    pub fn entry(&self, offset: u64) -> Option<Entry> {
        let (shard, i) = self.shard(offset);
        shard.lock().get(i).cloned().flatten()
    }

    /// Stores `page` at `offset`, replacing (and freeing) any entry there.
    ///
    /// # Errors
    ///
    /// [`Reject::Alloc`] where the pool cannot allocate the object; nothing is stored then
    /// and an old entry at `offset` is freed, as zswap does so that a stale copy is never
    /// loaded.
    pub fn store(&self, offset: u64, page: &Page) -> Result<StoreKind, Reject> {
        let c = &self.counters;
        let (entry, kind) = if let Some(fill) = same_filled(page) {
            (Entry::SameFilled(fill), StoreKind::SameFilled)
        } else {
            DST.with_borrow_mut(|dst| self.compress(page, dst))
                .inspect_err(|_| {
                    c.reject_alloc_fail.fetch_add(1, Relaxed);
                    self.invalidate(offset);
                })?
        };
        if let Some(old) = self.insert(offset, entry) {
            self.free_entry(old);
        }
        c.stored_pages.fetch_add(1, Relaxed);
        match kind {
            StoreKind::SameFilled => c.same_filled_pages.fetch_add(1, Relaxed),
            StoreKind::Incompressible => c.stored_incompressible_pages.fetch_add(1, Relaxed),
            StoreKind::Compressed => 0,
        };
        Ok(kind)
    }

    /// `zswap_compress`: one request, one fragment each side, a destination of one page.
    fn compress(&self, page: &Page, dst: &mut Page) -> Result<(Entry, StoreKind), Reject> {
        let c = &self.counters;
        let res = self
            .tfm
            .compress(&[IoSlice::new(page)], &mut [IoSliceMut::new(dst)]);
        let frame = match res {
            Ok(dlen) if dlen < PAGE_SIZE => Some(&dst[..dlen]),
            Ok(_) => {
                c.reject_compress_poor.fetch_add(1, Relaxed);
                None
            }
            Err(e) if e.errno() == libc::ENOSPC => {
                c.reject_compress_poor.fetch_add(1, Relaxed);
                None
            }
            Err(_) => {
                c.reject_compress_fail.fetch_add(1, Relaxed);
                None
            }
        };
        let data: &[u8] = frame.unwrap_or(page);
        let handle = self.pool.alloc(data.len()).map_err(Reject::Alloc)?;
        self.pool.write(&handle, data);
        c.stored_bytes.fetch_add(data.len() as u64, Relaxed);
        Ok(match frame {
            Some(f) => (
                Entry::Compressed {
                    handle,
                    length: f.len(),
                },
                StoreKind::Compressed,
            ),
            None => (Entry::Incompressible { handle }, StoreKind::Incompressible),
        })
    }

    /// Loads the page at `offset` into `page`; the entry stays (a swap cache keeps it until
    /// invalidated). The caller must not invalidate `offset` while loading it, as the kernel
    /// pins the swap entry: if it does, the load may fail or give another page's bytes.
    ///
    /// # Errors
    ///
    /// [`LoadError::NotFound`]; [`LoadError::Decompress`] where acomp refuses the frame;
    /// [`LoadError::WrongLength`] where it holds other than a page. `page` is then
    /// unspecified.
    pub fn load(&self, offset: u64, page: &mut Page) -> Result<LoadKind, LoadError> {
        match self.entry(offset).ok_or(LoadError::NotFound)? {
            Entry::SameFilled(fill) => {
                page.fill(fill);
                Ok(LoadKind::Filled)
            }
            Entry::Incompressible { handle } => {
                self.pool.read_sg(&handle, PAGE_SIZE, |frags| {
                    let mut at = 0;
                    for f in frags {
                        page[at..at + f.len()].copy_from_slice(f);
                        at += f.len();
                    }
                });
                Ok(LoadKind::Copied)
            }
            Entry::Compressed { handle, length } => {
                let (res, kind) = self.pool.read_sg(&handle, length, |src| {
                    let kind = if src.len() == 1 {
                        LoadKind::OneFragment
                    } else {
                        LoadKind::Straddling
                    };
                    (self.tfm.decompress(src, &mut [IoSliceMut::new(page)]), kind)
                });
                match res {
                    Ok(PAGE_SIZE) => Ok(kind),
                    Ok(n) => Err(LoadError::WrongLength(n)),
                    Err(e) => Err(LoadError::Decompress(e)),
                }
                .inspect_err(|_| {
                    self.counters.decompress_fail.fetch_add(1, Relaxed);
                })
            }
        }
    }

    /// Frees the entry at `offset` and its object, if there is one (`zswap_invalidate`).
    /// Returns whether there was.
    pub fn invalidate(&self, offset: u64) -> bool {
        let (shard, i) = self.shard(offset);
        let old = shard.lock().get_mut(i).and_then(Option::take);
        old.map(|e| self.free_entry(e)).is_some()
    }

    fn free_entry(&self, entry: Entry) {
        let c = &self.counters;
        c.stored_pages.fetch_sub(1, Relaxed);
        match entry {
            Entry::SameFilled(_) => {
                c.same_filled_pages.fetch_sub(1, Relaxed);
            }
            Entry::Incompressible { handle } => {
                c.stored_incompressible_pages.fetch_sub(1, Relaxed);
                c.stored_bytes.fetch_sub(PAGE_SIZE as u64, Relaxed);
                self.pool.free(handle);
            }
            Entry::Compressed { handle, length } => {
                c.stored_bytes.fetch_sub(length as u64, Relaxed);
                self.pool.free(handle);
            }
        }
    }

    /// Whether loading the entry at `offset` hands acomp two fragments.
    pub fn straddles(&self, offset: u64) -> bool {
        match self.entry(offset) {
            Some(Entry::Compressed { handle, length }) => self.pool.straddles(&handle, length),
            _ => false,
        }
    }

    /// A snapshot of the counters.
    pub fn counters(&self) -> Counters {
        let c = &self.counters;
        Counters {
            stored_pages: c.stored_pages.load(Relaxed),
            stored_incompressible_pages: c.stored_incompressible_pages.load(Relaxed),
            same_filled_pages: c.same_filled_pages.load(Relaxed),
            reject_compress_poor: c.reject_compress_poor.load(Relaxed),
            reject_compress_fail: c.reject_compress_fail.load(Relaxed),
            reject_alloc_fail: c.reject_alloc_fail.load(Relaxed),
            decompress_fail: c.decompress_fail.load(Relaxed),
            stored_bytes: c.stored_bytes.load(Relaxed),
            pool: self.pool.stats(),
        }
    }
}
