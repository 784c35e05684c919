//! What the tier's calls give: the kinds of stores, loads and entries, and the errors.

use std::io;

use crate::PAGE_SIZE;
#[cfg(doc)]
use crate::{Builder, Zswap};

/// Most pages in a folio: 256 KiB.
pub const MAX_FOLIO_PAGES: usize = 64;

/// How [`Zswap::store_folio`] kept a folio. Non-exhaustive, as the other kinds: a new way
/// of keeping pages may come with a new variant.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum FolioKind {
    /// One frame, shared by the pages (or, for a folio of one page, that page compressed).
    Frame,
    /// Page by page: the frame was not smaller than the folio; each page is kept as it is,
    /// or as its fill value.
    Pages,
    /// Every page same-filled: fill values only, nothing in the pool.
    SameFilled,
}

/// A folio's frame that serves a page, from [`Zswap::folio`] and [`Zswap::decode_folio`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FolioInfo {
    /// Unique over every folio stored by any tier of the process: a decoded copy of this id
    /// holds the bytes of every page the folio still serves.
    pub id: u64,
    /// The offset of its first page.
    pub first: u64,
    /// Its pages (offsets `first..first + pages`). A unit of recompressed idle pages
    /// ([`crate::Builder::recompress_unit_pages`]) serves only some of them: those whose
    /// [`Zswap::folio`] gives its id.
    pub pages: usize,
    /// Bytes of its frame.
    pub length: usize,
}

/// How [`Zswap::store`] kept a page. Non-exhaustive: match it with a `_` arm, since a new
/// way of keeping pages may come with a new variant.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum StoreKind {
    /// Compressed by acomp.
    Compressed,
    /// Compression failed or did not pay: kept as it is.
    Incompressible,
    /// One 8-byte word repeated (all bytes equal, or not): kept as that word.
    SameFilled,
}

/// Where [`Zswap::load`] (and [`Zswap::take`], [`Zswap::load_clean`]) found a page.
/// Non-exhaustive: a new place for pages may come with a new variant.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum LoadKind {
    /// Decompressed from the pool (zswap's `zswap_decompress`). Whether the object sat in one
    /// backing page or straddled two is the pool's business, not the page's: `Zswap::straddles`
    /// answers it with the `inspect` feature.
    Decompressed,
    /// Copied from the pool: the page was kept as it is ([`StoreKind::Incompressible`]).
    Incompressible,
    /// Filled with the page's one repeated word (or byte).
    Filled,
    /// Read from the device and checked.
    Device,
    /// Decoded from a folio's frame ([`Zswap::store_folio`]): a range read where the
    /// algorithm has one.
    Folio,
}

/// What an offset holds, from [`Zswap::entry`]. Non-exhaustive: it gained `SameFilledWord`
/// and `Folio` before 0.1.0, and a new way of keeping pages would add another.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum EntryInfo {
    /// A frame of this many bytes in the pool.
    Compressed {
        /// Bytes of the frame (zswap's `entry->length`).
        length: usize,
    },
    /// The page as it is, in a page-sized object of the pool.
    Incompressible,
    /// Every byte is this value; nothing in the pool.
    SameFilled(u8),
    /// Every 8-byte word is this value (native-endian), its bytes not all equal; nothing in
    /// the pool (zswap's same-filled `unsigned long`).
    SameFilledWord(u64),
    /// Written back to the device.
    Device,
    /// A page of a folio's frame ([`Zswap::store_folio`]).
    Folio(FolioInfo),
}

/// Why a store was refused: the page stays with the caller (who sends it to swap as the
/// kernel does when `zswap_store` returns false). Any entry the offset had is invalidated,
/// so that a stale copy is never loaded.
#[derive(Debug)]
#[non_exhaustive]
pub enum StoreError {
    /// The pool is at its budget and no room could be made: there is no device, or the pool
    /// has not yet fallen below the accept threshold since it was last full, or the page's
    /// size class opens zspages of more pages than the whole budget (a budget under 8
    /// pages), which no writeback makes room for.
    PoolFull,
    /// The pool is at its budget and writing back to the device failed with this error.
    Writeback(io::Error),
    /// [`Zswap::store_folio`] was given no pages, more than [`MAX_FOLIO_PAGES`], or pages
    /// that run past `u64::MAX`: nothing was stored or invalidated.
    BadFolio {
        /// The first offset given.
        offset: u64,
        /// The pages given.
        pages: usize,
    },
}

impl std::fmt::Display for StoreError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            StoreError::PoolFull => write!(f, "page refused: the pool is at its budget"),
            StoreError::BadFolio { offset, pages } => write!(
                f,
                "folio of {pages} pages at offset {offset} refused: 1 to {MAX_FOLIO_PAGES} pages, ending at u64::MAX at most"
            ),
            StoreError::Writeback(e) => {
                write!(
                    f,
                    "page refused: the pool is at its budget and writeback failed: {e}"
                )
            }
        }
    }
}

/// The message includes the device's error, so `source` is that error's own source (what
/// it came from), not the error itself: a chain printed whole says each cause once.
impl std::error::Error for StoreError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            StoreError::Writeback(e) => e.source(),
            StoreError::PoolFull | StoreError::BadFolio { .. } => None,
        }
    }
}

/// Why [`Zswap::writeback`] failed.
#[derive(Debug)]
#[non_exhaustive]
pub enum WritebackError {
    /// The tier has no device to write back to ([`Builder::device`]).
    NoDevice,
    /// The device failed to write a batch: its pages stay in the pool; the batches written
    /// before it stay written, `written` pages in all.
    Io {
        /// The device's error.
        error: io::Error,
        /// Pages this call wrote back before the batch that failed (what `Ok` would have
        /// counted).
        written: usize,
    },
}

impl std::fmt::Display for WritebackError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            WritebackError::NoDevice => write!(f, "writeback without a swap device"),
            WritebackError::Io { error, written } => write!(
                f,
                "writing back to the device failed after {written} pages: {error}"
            ),
        }
    }
}

/// As [`StoreError`]'s: the message includes the device's error, `source` is its source.
impl std::error::Error for WritebackError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            WritebackError::Io { error, .. } => error.source(),
            WritebackError::NoDevice => None,
        }
    }
}

/// `NoDevice` is [`io::ErrorKind::Unsupported`], as `writeback` returned it before it had a
/// type of its own; `Io` is the device's error.
impl From<WritebackError> for io::Error {
    fn from(e: WritebackError) -> io::Error {
        match e {
            WritebackError::NoDevice => io::Error::new(io::ErrorKind::Unsupported, e),
            WritebackError::Io { error, .. } => error,
        }
    }
}

/// Why a load failed. The entry is kept in every case but `NotFound`; `page` is then
/// unspecified.
#[derive(Debug)]
#[non_exhaustive]
pub enum LoadError {
    /// No entry at this offset: never stored, invalidated, or taken.
    NotFound,
    /// The device failed to read the page; the same load may succeed once it does.
    Io(io::Error),
    /// The page read from the device does not match its checksum (a flipped bit, a torn
    /// write, another page's bytes).
    Corrupt {
        /// The device key it was read from.
        key: u64,
        /// The checksum kept at writeback.
        expected: u32,
        /// The checksum of what was read.
        found: u32,
    },
    /// acomp refused the frame in the pool (counted in `decompress_fail`).
    Decompress(acomp::Error),
    /// The frame in the pool decompressed to this many bytes, not a page (or not the
    /// folio's pages).
    WrongLength(usize),
    /// [`Zswap::decode_folio`]'s buffer has fewer pages than the folio's `needed`.
    ShortBuffer {
        /// The folio's pages.
        needed: usize,
    },
}

impl std::fmt::Display for LoadError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            LoadError::NotFound => write!(f, "no entry at this offset"),
            LoadError::Io(e) => write!(f, "reading the page from the device failed: {e}"),
            LoadError::Corrupt {
                key,
                expected,
                found,
            } => write!(
                f,
                "the page under device key {key} is corrupt: checksum {found:08x}, expected {expected:08x}"
            ),
            LoadError::Decompress(e) => write!(f, "decompression failed: {e}"),
            LoadError::WrongLength(n) => write!(f, "decompressed {n} bytes, not what was stored"),
            LoadError::ShortBuffer { needed } => {
                write!(f, "the buffer is shorter than the folio's {needed} pages")
            }
        }
    }
}

/// As [`StoreError`]'s: the message includes the device's or acomp's error, `source` is
/// that error's source.
impl std::error::Error for LoadError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            LoadError::Io(e) => e.source(),
            LoadError::Decompress(e) => e.source(),
            _ => None,
        }
    }
}

/// Why [`Builder::build`] refused the configuration.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum BuildError {
    /// `max_pool_bytes` is less than one page.
    BudgetTooSmall(u64),
    /// `accept_threshold_percent` is above 100.
    BadThreshold(u8),
    /// `recompress_unit_pages` is 0 or above [`MAX_FOLIO_PAGES`].
    BadUnit(usize),
    /// `recompress_pressure_percent` is 0 or above 100.
    BadPressure(u8),
}

impl std::fmt::Display for BuildError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            BuildError::BudgetTooSmall(n) => {
                write!(
                    f,
                    "max_pool_bytes {n} is less than a page ({PAGE_SIZE} bytes)"
                )
            }
            BuildError::BadThreshold(p) => {
                write!(f, "accept_threshold_percent {p} is above 100")
            }
            BuildError::BadPressure(p) => {
                write!(f, "recompress_pressure_percent {p} is not 1..=100")
            }
            BuildError::BadUnit(n) => {
                write!(
                    f,
                    "recompress_unit_pages {n} is not 1..={MAX_FOLIO_PAGES} pages"
                )
            }
        }
    }
}

impl std::error::Error for BuildError {}
