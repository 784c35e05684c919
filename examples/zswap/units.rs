//! Larger compression units (`--unit`): a unit of contiguous pages (a large folio) stored as
//! one object, as zswap keeps a large folio's entry and zram's multi-page compression its
//! objects.
//!
//! - Store: a unit whose pages are all same-filled is kept as their fill values (no memory).
//!   Any other is compressed as one frame (zstd, blocks of at most `--unit-block` bytes,
//!   `ZstdParams::block_size_max`) or one raw block (lz4), its same-filled pages included
//!   (zstd writes each as a block of a few bytes). Where the frame is not smaller than the unit, each page is
//!   kept on its own instead, as today's zswap keeps it: its fill value, or the page as it
//!   is in a page-sized object. A frame larger than a page is kept in page-sized pool
//!   objects (the pool's largest class, a backing page each) and a tail in the class that
//!   fits: zsmalloc's classes end at a page.
//! - Load of one page (a page fault): a range read of one segment at the page's offset,
//!   which decodes the unit's blocks up to that page and stops (lz4, without range reads:
//!   the unit decoded into a scratch buffer, the page copied out). A unit of one page is
//!   decompressed whole, as today's zswap does. Through a loading thread's
//!   [`UnitCache`] (fault-around), the unit is decoded whole once and its pages copied out.
//! - Load of a unit (a folio swap-in): one decompression of the frame into the unit, straight
//!   out of the pool where the frame is one object, else gathered into one buffer first.
//! - A page written after its unit was stored ([`Units::store_page`]) is kept on its own, as
//!   zswap stores a split folio's page: the frame no longer serves it.
//! - Invalidate of a page: a page kept on its own is freed at once; a frame stays until every
//!   page of its unit is invalidated, as zswap keeps a large folio's entry. Those pages,
//!   invalidated but still held, are counted with the frames' bytes that hold them.

use std::io::IoSliceMut;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::time::{Duration, Instant};

use acomp::{Acomp, Lz4Params, Segment, ZstdParams};
use hdrhistogram::Histogram;
use parking_lot::Mutex;
use rand::SeedableRng;
use rand::rngs::StdRng;
use rand::seq::SliceRandom;

use crate::cache::{Key, UnitCache};
use crate::compare::Row;
use crate::input::Input;
use crate::pool::{AllocError, Handle, PAGE_SIZE, Pool};
use crate::zswap::{LoadError, Page, same_filled};

/// Most pages in a unit: 256 KiB (a unit's live pages are the bits of a `u64`).
pub const MAX_UNIT_PAGES: usize = 64;

/// The largest block of a unit's frame, `1K` to `128K`, in bytes.
///
/// # Errors
///
/// A message naming what was given, for any other.
pub fn parse_block(s: &str) -> Result<u32, String> {
    let bad = || format!("block size {s:?}: expected 1K to 128K");
    let kib: u32 = s
        .trim()
        .strip_suffix(['K', 'k'])
        .ok_or_else(bad)?
        .parse()
        .map_err(|_| bad())?;
    if !(1..=128).contains(&kib) {
        return Err(bad());
    }
    Ok(kib * 1024)
}

/// Pages in a unit of `s` bytes: `4K`, `16K`, `64K`... (4 KiB times a power of two, at most
/// 256 KiB).
///
/// # Errors
///
/// A message naming what was given, for any other.
pub fn parse_unit(s: &str) -> Result<usize, String> {
    let bad = || format!("unit {s:?}: expected 4K, 8K, 16K, 32K, 64K, 128K or 256K");
    let kib: usize = s
        .trim()
        .strip_suffix(['K', 'k'])
        .ok_or_else(bad)?
        .parse()
        .map_err(|_| bad())?;
    let pages = kib / 4;
    if !kib.is_multiple_of(4) || !pages.is_power_of_two() || pages > MAX_UNIT_PAGES {
        return Err(bad());
    }
    Ok(pages)
}

/// How a page kept on its own is held: outside any frame, or stored again on its own after
/// its unit (`Units::store_page`).
#[derive(Debug, Clone)]
enum Kept {
    Filled(u8),
    Raw(Obj),
    /// A page compressed on its own: the object and the frame's bytes.
    Compressed(Obj, usize),
}

/// A pool object shared with the loads that read it (a pool [`Handle`] is not `Clone`):
/// freed by the last holder through [`free_shared`].
type Obj = Arc<Handle>;

#[derive(Debug)]
enum Body {
    /// The unit's frame in page-sized pieces, and its bytes.
    Frame {
        chunks: Arc<Vec<Handle>>,
        length: usize,
    },
    /// Page by page; `None` once invalidated (freed at once).
    Pages(Vec<Option<Kept>>),
}

#[derive(Debug)]
struct Slot {
    body: Body,
    /// Pages in the unit: fewer than a unit's at the end of the input.
    pages: usize,
    /// Bit `k`: page `k` is served by `body` (stored, not invalidated nor stored again).
    live: u64,
    /// The store that wrote `body`, unique over all stores: the key of a decoded copy in a
    /// [`UnitCache`].
    generation: u64,
    /// Pages of a frame unit stored again on their own (empty until one is).
    own: Vec<Option<Kept>>,
}

/// Generations of unit stores, over every [`Units`]: a cached copy of one never matches
/// another.
static GENERATION: AtomicU64 = AtomicU64::new(1);

fn next_generation() -> u64 {
    GENERATION.fetch_add(1, Relaxed)
}

fn bit(k: usize) -> u64 {
    1 << k
}

/// How a unit was kept, for [`Units::store`]'s caller.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UnitKind {
    /// One frame.
    Frame,
    /// Page by page: the frame was not smaller than the unit.
    Pages,
    /// Every page same-filled: fill values only.
    SameFilled,
}

/// A snapshot of the store's counters.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct UnitCounters {
    /// Units with at least one page stored, or held.
    pub units: u64,
    /// Of those, kept as one frame.
    pub frame_units: u64,
    /// Pages stored (not invalidated).
    pub stored_pages: u64,
    /// Of those, kept as their fill value outside any frame.
    pub same_filled_pages: u64,
    /// Of those, kept as they are.
    pub raw_pages: u64,
    /// Bytes of the objects: frames, and pages kept as they are.
    pub stored_bytes: u64,
    /// Pages invalidated whose unit's frame is still held for its other pages.
    pub held_pages: u64,
    /// Bytes of the frames of units with such pages.
    pub held_frame_bytes: u64,
    /// Backing pages of the pool: memory.
    pub pool_pages: usize,
}

impl UnitCounters {
    /// The pool's bytes: memory holding the units.
    pub fn memory_bytes(&self) -> u64 {
        (self.pool_pages * PAGE_SIZE) as u64
    }
}

/// A store of units of `unit_pages` pages, by unit index; page `i` is page `i % unit_pages`
/// of unit `i / unit_pages`. `Send + Sync`.
#[derive(Debug)]
pub struct Units {
    tfm: Acomp,
    /// Whether the algorithm reads a byte range (zstd); else a single page's load decodes
    /// its unit into `scratch` and copies the page out (lz4's raw blocks).
    range_reads: bool,
    pool: Pool,
    unit_pages: usize,
    slots: Mutex<Vec<Option<Slot>>>,
    /// The destination of compression: a unit's bytes.
    dst: Mutex<Vec<u8>>,
    /// Where a unit load gathers a frame kept in pieces, so that it decompresses from one
    /// fragment (the one-shot path), as zsmalloc copies an object that straddles pages into
    /// a per-CPU buffer to map it.
    gather: Mutex<Vec<u8>>,
    /// A unit decoded for one page, without range reads.
    scratch: Mutex<Vec<u8>>,
}

/// A page's place: its unit, and its index in the unit.
fn place(page: usize, unit_pages: usize) -> (usize, usize) {
    (page / unit_pages, page % unit_pages)
}

fn copy_frags(frags: &[std::io::IoSlice<'_>], out: &mut [u8]) {
    let mut at = 0;
    for f in frags {
        out[at..at + f.len()].copy_from_slice(f);
        at += f.len();
    }
}

/// Frees a shared object once its last holder lets go: a load that still holds it (a
/// caller that invalidates while loading, against the contract) keeps it, and its object
/// is then not returned to the pool.
fn free_shared(pool: &Pool, h: Obj) {
    if let Some(h) = Arc::into_inner(h) {
        pool.free(h);
    }
}

/// What a page's load reads, taken under the slots' lock.
enum What {
    Frame {
        chunks: Arc<Vec<Handle>>,
        length: usize,
        pages: usize,
        generation: u64,
    },
    Kept(Kept),
}

impl Units {
    /// A store of units of `unit_pages` pages on any transform: zstd's single-page loads
    /// are range reads; any other algorithm's decode the unit and copy the page.
    ///
    /// # Panics
    ///
    /// If `unit_pages` is 0 or more than [`MAX_UNIT_PAGES`].
    pub fn with_transform(tfm: Acomp, unit_pages: usize) -> Self {
        assert!((1..=MAX_UNIT_PAGES).contains(&unit_pages));
        let bytes = unit_pages * PAGE_SIZE;
        Units {
            range_reads: tfm.name() == "zstd",
            tfm,
            pool: Pool::new(None),
            unit_pages,
            slots: Mutex::default(),
            dst: Mutex::new(vec![0; bytes]),
            gather: Mutex::new(vec![0; bytes]),
            scratch: Mutex::new(vec![0; bytes]),
        }
    }

    /// Stores `pages` (whole pages, at most a unit's) as unit `unit`, replacing any there
    /// (and any of its pages stored on their own).
    ///
    /// # Errors
    ///
    /// Where the pool cannot allocate; nothing is stored then, and an old unit is freed.
    ///
    /// # Panics
    ///
    /// If `pages` is empty, not whole pages, or more than a unit.
    pub fn store(&self, unit: usize, pages: &[u8]) -> Result<UnitKind, AllocError> {
        let n = pages.len() / PAGE_SIZE;
        assert!(pages.len().is_multiple_of(PAGE_SIZE) && (1..=self.unit_pages).contains(&n));
        let page = |k: usize| -> &Page { pages[k * PAGE_SIZE..][..PAGE_SIZE].try_into().unwrap() };
        let old = self.take(unit);
        if let Some(old) = old {
            self.free(old);
        }
        let (body, kind) = if (0..n).all(|k| same_filled(page(k)).is_some()) {
            let fills = (0..n).map(|k| Some(Kept::Filled(page(k)[0]))).collect();
            (Body::Pages(fills), UnitKind::SameFilled)
        } else {
            let mut dst = self.dst.lock();
            match self.tfm.compress_to_buffer(pages, &mut dst[..pages.len()]) {
                Ok(length) if length < pages.len() => {
                    let chunks = self.alloc_frame(&dst[..length])?;
                    (Body::Frame { chunks, length }, UnitKind::Frame)
                }
                // ENOSPC, a unit or more, or another failure: page by page, as today.
                _ => {
                    drop(dst);
                    let mut kept = Vec::with_capacity(n);
                    for k in 0..n {
                        let p = page(k);
                        let one = match same_filled(p) {
                            Some(fill) => Kept::Filled(fill),
                            None => match self.pool.alloc(PAGE_SIZE, 0) {
                                Ok(h) => {
                                    self.pool.write(&h, p);
                                    Kept::Raw(Arc::new(h))
                                }
                                Err(e) => {
                                    self.free(Slot {
                                        body: Body::Pages(kept),
                                        pages: n,
                                        live: 0,
                                        generation: 0,
                                        own: Vec::new(),
                                    });
                                    return Err(e);
                                }
                            },
                        };
                        kept.push(Some(one));
                    }
                    (Body::Pages(kept), UnitKind::Pages)
                }
            }
        };
        let generation = next_generation();
        let mut slots = self.slots.lock();
        if slots.len() <= unit {
            slots.resize_with(unit + 1, || None);
        }
        let live = if n == 64 { u64::MAX } else { (1 << n) - 1 };
        let replaced = slots[unit].replace(Slot {
            body,
            pages: n,
            live,
            generation,
            own: Vec::new(),
        });
        drop(slots);
        // Another thread stored the same unit meanwhile (callers serialise a unit's
        // stores, as swap does a folio's): the later one stays.
        if let Some(old) = replaced {
            self.free(old);
        }
        Ok(kind)
    }

    /// Stores page `page` again on its own (a page of a folio written after the folio was
    /// stored: zswap then stores the split page as its own entry): the unit's frame no
    /// longer serves it, and is freed once it serves no page. A page of no stored unit
    /// starts a unit of pages kept on their own.
    ///
    /// # Errors
    ///
    /// Where the pool cannot allocate; the page is then not stored (its old content is
    /// gone, as when zswap's store fails).
    pub fn store_page(&self, page: usize, data: &Page) -> Result<(), AllocError> {
        let (unit, k) = place(page, self.unit_pages);
        let one = self.keep_page(data);
        let mut slots = self.slots.lock();
        if slots.len() <= unit {
            slots.resize_with(unit + 1, || None);
        }
        let slot = slots[unit].get_or_insert_with(|| Slot {
            body: Body::Pages((0..self.unit_pages).map(|_| None).collect()),
            pages: self.unit_pages,
            live: 0,
            generation: next_generation(),
            own: Vec::new(),
        });
        let mut freed = Vec::new();
        let one = match one {
            Ok(one) => Some(one),
            Err(e) => {
                freed.extend(Self::drop_page(slot, k));
                let gone = Self::settle(&mut slots[unit]);
                drop(slots);
                self.free_all(freed, gone);
                return Err(e);
            }
        };
        if k >= slot.pages {
            // A short last unit grows to hold the page.
            slot.pages = k + 1;
            if let Body::Pages(kept) = &mut slot.body {
                kept.resize_with(slot.pages, || None);
            }
        }
        freed.extend(Self::drop_page(slot, k));
        match &mut slot.body {
            Body::Pages(kept) => {
                kept[k] = one;
                slot.live |= bit(k);
            }
            Body::Frame { .. } => {
                if slot.own.len() < slot.pages {
                    slot.own.resize_with(slot.pages, || None);
                }
                slot.own[k] = one;
            }
        }
        let gone = Self::settle(&mut slots[unit]);
        drop(slots);
        self.free_all(freed, gone);
        Ok(())
    }

    /// A page on its own: its fill value, its frame where it compresses, else as it is.
    fn keep_page(&self, data: &Page) -> Result<Kept, AllocError> {
        if let Some(fill) = same_filled(data) {
            return Ok(Kept::Filled(fill));
        }
        let mut dst = self.dst.lock();
        if let Ok(n) = self.tfm.compress_to_buffer(data, &mut dst[..PAGE_SIZE])
            && n < PAGE_SIZE
        {
            let h = self.pool.alloc(n, 0)?;
            self.pool.write(&h, &dst[..n]);
            return Ok(Kept::Compressed(Arc::new(h), n));
        }
        drop(dst);
        let h = self.pool.alloc(PAGE_SIZE, 0)?;
        self.pool.write(&h, data);
        Ok(Kept::Raw(Arc::new(h)))
    }

    /// Takes page `k` out of the slot (the frame stops serving it, or its object is taken
    /// to free); returns any object to free.
    fn drop_page(slot: &mut Slot, k: usize) -> Option<Kept> {
        let served = slot.live & bit(k) != 0;
        slot.live &= !bit(k);
        match &mut slot.body {
            Body::Pages(kept) => kept.get_mut(k).and_then(Option::take),
            Body::Frame { .. } if served => None,
            Body::Frame { .. } => slot.own.get_mut(k).and_then(Option::take),
        }
    }

    /// A frame that serves no page goes (its pages stored on their own stay, as a unit of
    /// pages); a slot with nothing left goes. Returns what to free.
    fn settle(slot: &mut Option<Slot>) -> Option<Body> {
        let s = slot.as_mut()?;
        if s.live != 0 {
            return None;
        }
        if matches!(s.body, Body::Frame { .. }) {
            let own: Vec<Option<Kept>> = std::mem::take(&mut s.own);
            let mut kept: Vec<Option<Kept>> = (0..s.pages).map(|_| None).collect();
            for (k, one) in own.into_iter().enumerate() {
                if one.is_some() {
                    s.live |= bit(k);
                }
                kept[k] = one;
            }
            let frame = std::mem::replace(&mut s.body, Body::Pages(kept));
            s.generation = next_generation();
            if s.live == 0 {
                *slot = None;
            }
            return Some(frame);
        }
        *slot = None;
        None
    }

    fn free_all(&self, kept: Vec<Kept>, body: Option<Body>) {
        kept.into_iter().for_each(|k| self.free_kept(k));
        if let Some(body) = body {
            self.free_body(body);
        }
    }

    fn free_kept(&self, k: Kept) {
        match k {
            Kept::Filled(_) => {}
            Kept::Raw(h) | Kept::Compressed(h, _) => free_shared(&self.pool, h),
        }
    }

    /// The frame in page-sized objects.
    fn alloc_frame(&self, frame: &[u8]) -> Result<Arc<Vec<Handle>>, AllocError> {
        let mut chunks = Vec::with_capacity(frame.len().div_ceil(PAGE_SIZE));
        for piece in frame.chunks(PAGE_SIZE) {
            match self.pool.alloc(piece.len(), 0) {
                Ok(h) => {
                    self.pool.write(&h, piece);
                    chunks.push(h);
                }
                Err(e) => {
                    chunks.into_iter().for_each(|h| self.pool.free(h));
                    return Err(e);
                }
            }
        }
        Ok(chunks.into())
    }

    fn take(&self, unit: usize) -> Option<Slot> {
        self.slots.lock().get_mut(unit).and_then(Option::take)
    }

    fn free(&self, slot: Slot) {
        slot.own
            .into_iter()
            .flatten()
            .for_each(|k| self.free_kept(k));
        self.free_body(slot.body);
    }

    fn free_body(&self, body: Body) {
        match body {
            // Handles are shared with a load only if the caller breaks the contract (no
            // invalidation while loading): freeing by a clone is then what zswap's would do.
            Body::Frame { chunks, .. } => {
                Arc::into_inner(chunks)
                    .into_iter()
                    .flatten()
                    .for_each(|h| self.pool.free(h));
            }
            Body::Pages(kept) => kept.into_iter().flatten().for_each(|k| self.free_kept(k)),
        }
    }

    /// What serves page `k` of `unit`, under the lock.
    fn what(&self, unit: usize, k: usize) -> Result<What, LoadError> {
        let slots = self.slots.lock();
        let slot = slots
            .get(unit)
            .and_then(Option::as_ref)
            .filter(|s| k < s.pages)
            .ok_or(LoadError::NotFound)?;
        let served = slot.live & bit(k) != 0;
        match &slot.body {
            Body::Frame { chunks, length } if served => Ok(What::Frame {
                chunks: Arc::clone(chunks),
                length: *length,
                pages: slot.pages,
                generation: slot.generation,
            }),
            Body::Frame { .. } => slot
                .own
                .get(k)
                .cloned()
                .flatten()
                .map(What::Kept)
                .ok_or(LoadError::NotFound),
            Body::Pages(kept) => kept[k].clone().map(What::Kept).ok_or(LoadError::NotFound),
        }
    }

    fn load_kept(&self, kept: &Kept, out: &mut Page) -> Result<(), LoadError> {
        match kept {
            Kept::Filled(fill) => out.fill(*fill),
            Kept::Raw(h) => self
                .pool
                .read_sg(h, PAGE_SIZE, |frags| copy_frags(frags, out)),
            Kept::Compressed(h, n) => {
                match self.pool.read_sg(h, *n, |src| {
                    self.tfm.decompress(src, &mut [IoSliceMut::new(out)])
                }) {
                    Ok(PAGE_SIZE) => {}
                    Ok(n) => return Err(LoadError::WrongLength(n)),
                    Err(e) => return Err(LoadError::Decompress(e)),
                }
            }
        }
        Ok(())
    }

    /// Loads page `page` (page `page % unit_pages` of its unit) into `out`: a range read
    /// out of the unit's frame (zstd; other algorithms decode the unit and copy the page),
    /// or the page as it was kept. The caller must not invalidate the page while loading
    /// it, as the kernel pins the swap entry.
    ///
    /// # Errors
    ///
    /// [`LoadError::NotFound`] where the page is not stored; [`LoadError::Decompress`] or
    /// [`LoadError::WrongLength`] where the frame does not give the page.
    pub fn load_page(&self, page: usize, out: &mut Page) -> Result<(), LoadError> {
        let (unit, k) = place(page, self.unit_pages);
        match self.what(unit, k)? {
            What::Kept(kept) => self.load_kept(&kept, out),
            What::Frame {
                chunks,
                length,
                pages,
                ..
            } => {
                let res = if self.unit_pages == 1 {
                    self.read_frame(&chunks, length, |src| {
                        self.tfm.decompress(src, &mut [IoSliceMut::new(out)])
                    })
                } else if self.range_reads {
                    let offset = (k * PAGE_SIZE) as u64;
                    self.read_frame(&chunks, length, |src| {
                        self.tfm
                            .decompress_range(src, &mut [Segment::new(offset, out)])
                    })
                } else {
                    let mut scratch = self.scratch.lock();
                    let unit = &mut scratch[..pages * PAGE_SIZE];
                    self.decode_frame(&chunks, length, unit)?;
                    out.copy_from_slice(&unit[k * PAGE_SIZE..][..PAGE_SIZE]);
                    Ok(PAGE_SIZE)
                };
                match res {
                    Ok(PAGE_SIZE) => Ok(()),
                    Ok(n) => Err(LoadError::WrongLength(n)),
                    Err(e) => Err(LoadError::Decompress(e)),
                }
            }
        }
    }

    /// Loads page `page` as [`Units::load_page`] does, through `cache` (the loading
    /// thread's): a page its unit's frame serves is copied out of the decoded unit, which
    /// is decoded whole into the cache where it is not there (a fault-around swap-in: the
    /// folio's other pages follow). Pages kept on their own load as they are.
    ///
    /// # Errors
    ///
    /// As [`Units::load_page`].
    pub fn load_page_cached(
        &self,
        page: usize,
        out: &mut Page,
        cache: &mut UnitCache,
    ) -> Result<(), LoadError> {
        let (unit, k) = place(page, self.unit_pages);
        match self.what(unit, k)? {
            What::Kept(kept) => self.load_kept(&kept, out),
            What::Frame {
                chunks,
                length,
                pages,
                generation,
            } => {
                let key = Key { unit, generation };
                let at = k * PAGE_SIZE..(k + 1) * PAGE_SIZE;
                if let Some(data) = cache.get(key) {
                    out.copy_from_slice(&data[at]);
                    return Ok(());
                }
                let data = cache.fill(key, |buf| {
                    self.decode_frame(&chunks, length, &mut buf[..pages * PAGE_SIZE])
                })?;
                out.copy_from_slice(&data[at]);
                Ok(())
            }
        }
    }

    /// Decodes a unit's frame into `out`, exactly its pages' bytes: straight from the
    /// object where the frame lies in one fragment, else gathered into one buffer first.
    fn decode_frame(
        &self,
        chunks: &[Handle],
        length: usize,
        out: &mut [u8],
    ) -> Result<(), LoadError> {
        let res = match chunks {
            [one] => self.pool.read_sg(one, length, |src| match src {
                [s] => self.tfm.decompress_to_buffer(s, out),
                _ => self.tfm.decompress(src, &mut [IoSliceMut::new(out)]),
            }),
            _ => {
                let mut gather = self.gather.lock();
                let frame = &mut gather[..length];
                self.pool
                    .read_chain_sg(chunks, length, |src| copy_frags(src, frame));
                self.tfm.decompress_to_buffer(frame, out)
            }
        };
        match res {
            Ok(n) if n == out.len() => Ok(()),
            Ok(n) => Err(LoadError::WrongLength(n)),
            Err(e) => Err(LoadError::Decompress(e)),
        }
    }

    /// Loads every page of unit `unit` into `out` (at least a unit's bytes), as a folio is
    /// swapped in; returns the unit's pages (fewer than a unit's at the end of the input).
    ///
    /// # Errors
    ///
    /// [`LoadError::NotFound`] where the unit or one of its pages is gone; else as
    /// [`Units::load_page`].
    pub fn load_unit(&self, unit: usize, out: &mut [u8]) -> Result<usize, LoadError> {
        let (frame, kept, live, pages) = {
            let slots = self.slots.lock();
            let slot = slots
                .get(unit)
                .and_then(Option::as_ref)
                .ok_or(LoadError::NotFound)?;
            match &slot.body {
                Body::Frame { chunks, length } => (
                    Some((Arc::clone(chunks), *length)),
                    slot.own.clone(),
                    slot.live,
                    slot.pages,
                ),
                Body::Pages(kept) => (None, kept.clone(), 0, slot.pages),
            }
        };
        let out = &mut out[..pages * PAGE_SIZE];
        if let Some((chunks, length)) = frame {
            self.decode_frame(&chunks, length, out)?;
        }
        for k in (0..pages).filter(|&k| live & bit(k) == 0) {
            let page: &mut Page = (&mut out[k * PAGE_SIZE..][..PAGE_SIZE])
                .try_into()
                .expect("a page");
            let one = kept.get(k).and_then(Option::as_ref);
            self.load_kept(one.ok_or(LoadError::NotFound)?, page)?;
        }
        Ok(pages)
    }

    /// Hands `f` the frame as fragments: one object's (one or two), or a chain's.
    fn read_frame<R>(
        &self,
        chunks: &[Handle],
        length: usize,
        f: impl FnOnce(&[std::io::IoSlice<'_>]) -> R,
    ) -> R {
        if let [one] = chunks {
            self.pool.read_sg(one, length, f)
        } else {
            self.pool.read_chain_sg(chunks, length, f)
        }
    }

    /// Invalidates page `page`: a page kept on its own is freed now, a unit's frame once it
    /// serves no page. Returns whether the page was stored.
    pub fn invalidate(&self, page: usize) -> bool {
        let (unit, k) = place(page, self.unit_pages);
        let mut slots = self.slots.lock();
        let Some(slot) = slots.get_mut(unit).and_then(Option::as_mut) else {
            return false;
        };
        let stored = k < slot.pages
            && (slot.live & bit(k) != 0 || slot.own.get(k).is_some_and(Option::is_some));
        if !stored {
            return false;
        }
        let freed = Self::drop_page(slot, k);
        let gone = Self::settle(&mut slots[unit]);
        drop(slots);
        self.free_all(freed.into_iter().collect(), gone);
        true
    }

    /// A snapshot of the counters (a walk over the units).
    pub fn counters(&self) -> UnitCounters {
        let mut c = UnitCounters::default();
        let count = |c: &mut UnitCounters, k: &Kept| match k {
            Kept::Filled(_) => c.same_filled_pages += 1,
            Kept::Raw(_) => {
                c.raw_pages += 1;
                c.stored_bytes += PAGE_SIZE as u64;
            }
            Kept::Compressed(_, n) => c.stored_bytes += *n as u64,
        };
        for slot in self.slots.lock().iter().flatten() {
            c.units += 1;
            let live = u64::from(slot.live.count_ones());
            c.stored_pages += live;
            match &slot.body {
                Body::Frame { length, .. } => {
                    c.frame_units += 1;
                    c.stored_bytes += *length as u64;
                    let own = slot.own.iter().flatten().count() as u64;
                    let held = slot.pages as u64 - live - own;
                    c.held_pages += held;
                    if held > 0 {
                        c.held_frame_bytes += *length as u64;
                    }
                    for k in slot.own.iter().flatten() {
                        c.stored_pages += 1;
                        count(&mut c, k);
                    }
                }
                Body::Pages(kept) => kept.iter().flatten().for_each(|k| count(&mut c, k)),
            }
        }
        c.pool_pages = self.pool.stats().pages;
        c
    }
}

/// The CPU time this thread has used.
fn thread_cpu() -> Duration {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY:
    // - `ts` is a valid, writable timespec for the call's duration;
    // - CLOCK_THREAD_CPUTIME_ID exists on every Linux this example runs on.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    assert_eq!(rc, 0, "clock_gettime(CLOCK_THREAD_CPUTIME_ID)");
    Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
}

fn latency() -> Histogram<u64> {
    Histogram::new_with_bounds(1, 60_000_000_000, 3).expect("valid bounds")
}

/// What a unit is compressed with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Codec {
    /// zstd at `level`, its blocks at most `block` bytes (`ZstdParams::block_size_max`).
    Zstd {
        /// The compression level.
        level: i32,
        /// The largest block, bytes.
        block: u32,
    },
    /// lz4 raw blocks, acceleration 1: a unit is one block (no range reads).
    Lz4,
}

/// One configuration of the units table: a codec and a unit size.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UnitConfig {
    /// What compresses the units.
    pub codec: Codec,
    /// Pages per unit.
    pub unit_pages: usize,
}

impl UnitConfig {
    /// The transform serving these units.
    ///
    /// # Errors
    ///
    /// Where acomp refuses the parameters.
    pub fn transform(&self) -> Result<Acomp, acomp::Error> {
        match self.codec {
            Codec::Zstd { level, block } => {
                Acomp::with_zstd(ZstdParams::default().level(level).block_size_max(block))
            }
            Codec::Lz4 => Acomp::with_lz4(
                Lz4Params::default().request_max((self.unit_pages * PAGE_SIZE).max(128 << 10)),
            ),
        }
    }

    /// `4K`, `64K`...
    pub fn label(&self) -> String {
        format!("{}K", self.unit_pages * PAGE_SIZE / 1024)
    }

    /// `zstd -1/128K`, `lz4`: the codec in a few characters.
    pub fn codec_label(&self) -> String {
        match self.codec {
            Codec::Zstd { level, block } => format!("zstd {level}/{}K", block / 1024),
            Codec::Lz4 => "lz4".into(),
        }
    }

    /// The side-by-side table's name: `acomp zstd level 3, 64K units` (page-sized blocks),
    /// `acomp zstd level -1, 64K units, 128K blocks`, `acomp lz4, 64K units`.
    pub fn name(&self) -> String {
        match self.codec {
            Codec::Zstd { level, block: 4096 } => {
                format!("acomp zstd level {level}, {} units", self.label())
            }
            Codec::Zstd { level, block } => format!(
                "acomp zstd level {level}, {} units, {}K blocks",
                self.label(),
                block / 1024
            ),
            Codec::Lz4 => format!("acomp lz4, {} units", self.label()),
        }
    }

    /// The largest block in bytes: zstd's limit, or the unit for lz4.
    pub fn block_bytes(&self) -> u64 {
        match self.codec {
            Codec::Zstd { block, .. } => u64::from(block),
            Codec::Lz4 => (self.unit_pages * PAGE_SIZE) as u64,
        }
    }
}

/// Every configuration asked for: each unit size (4 KiB units beside any larger) with each
/// zstd level and block size, and with lz4 where asked; nothing where no unit is asked for.
/// Sorted by codec, then unit size; duplicates once.
pub fn configs(unit_pages: &[usize], levels: &[i32], blocks: &[u32], lz4: bool) -> Vec<UnitConfig> {
    if unit_pages.is_empty() {
        return Vec::new();
    }
    let mut sizes = unit_pages.to_vec();
    sizes.push(1);
    sizes.sort_unstable();
    sizes.dedup();
    let mut codecs: Vec<Codec> = levels
        .iter()
        .flat_map(|&level| {
            blocks
                .iter()
                .map(move |&block| Codec::Zstd { level, block })
        })
        .collect();
    if lz4 {
        codecs.push(Codec::Lz4);
    }
    let mut out = Vec::new();
    for codec in codecs {
        for &unit_pages in &sizes {
            // A 4 KiB unit is the same frame whatever the block limit (4 KiB and up).
            let codec = match codec {
                Codec::Zstd { level, block } if unit_pages == 1 => Codec::Zstd {
                    level,
                    block: block.min(4096),
                },
                c => c,
            };
            let c = UnitConfig { codec, unit_pages };
            if !out.contains(&c) {
                out.push(c);
            }
        }
    }
    out
}

/// Loads of one pattern: the time in the calls and their latencies (per call).
#[derive(Debug, Clone)]
pub struct Loads {
    /// Time in the load calls.
    pub time: Duration,
    /// Thread CPU time of the pass (the check of the bytes included).
    pub cpu: Duration,
    /// Latency of each call.
    pub lat: Histogram<u64>,
}

/// One configuration measured on one thread: every unit stored in order, then loaded in
/// each of the three patterns, then half the pages invalidated, then all.
#[derive(Debug, Clone)]
pub struct UnitRun {
    /// What was measured.
    pub config: UnitConfig,
    /// Pages per unit.
    pub unit_pages: usize,
    /// Pages stored, and units.
    pub pages: usize,
    /// See `pages`.
    pub units: usize,
    /// Counters with every unit stored.
    pub stored: UnitCounters,
    /// Thread CPU time of the store pass, and its wall time in the store calls.
    pub store_cpu: Duration,
    /// See `store_cpu`.
    pub store_time: Duration,
    /// Latency of each store call (a unit).
    pub store_lat: Histogram<u64>,
    /// Pattern 3: single pages in random order (a page fault each), range reads.
    pub single: Loads,
    /// Pattern 1: whole units in random unit order (large-folio swap-in), a call per unit.
    pub folio: Loads,
    /// Pattern 2: units in random order, the pages of each in address order, a call per
    /// page through a per-thread cache of decoded units (fault-around).
    pub around: Loads,
    /// Pattern 2's cache: loads served from it, and units decoded into it.
    pub cache_hits: u64,
    /// See `cache_hits`.
    pub cache_misses: u64,
    /// Counters with a random half of the pages invalidated.
    pub half: UnitCounters,
    /// Backing pages once every page is invalidated (0 unless leaked).
    pub pool_pages_at_end: usize,
    /// Pages that came back right in all three patterns.
    pub verified_pages: usize,
}

/// Measures every configuration, in order.
///
/// # Errors
///
/// Where acomp refuses the parameters.
pub fn run_all(
    configs: &[UnitConfig],
    input: &Input,
    seed: u64,
) -> Result<Vec<UnitRun>, acomp::Error> {
    configs.iter().map(|c| measure(*c, input, seed)).collect()
}

/// Entries of pattern 2's cache: the unit being faulted in and the one before.
pub const CACHE_ENTRIES: usize = 2;

/// Measures one configuration on `input`'s pages, on this thread.
///
/// # Errors
///
/// Where acomp refuses the parameters.
pub fn measure(config: UnitConfig, input: &Input, seed: u64) -> Result<UnitRun, acomp::Error> {
    let unit_pages = config.unit_pages;
    let store = Units::with_transform(config.transform()?, unit_pages);
    let n = input.len();
    let units = n.div_ceil(unit_pages);
    let unit_len = |u: usize| unit_pages.min(n - u * unit_pages);
    let mut store_lat = latency();
    let mut store_time = Duration::ZERO;
    let cpu = thread_cpu();
    for u in 0..units {
        let pages = input.pages(u * unit_pages, unit_len(u));
        let start = Instant::now();
        let res = store.store(u, pages);
        let t = start.elapsed();
        store_time += t;
        store_lat.saturating_record(t.as_nanos() as u64);
        if let Err(e) = res {
            eprintln!("zswap: {}: store of unit {u}: {e}", config.name());
        }
    }
    let store_cpu = thread_cpu() - cpu;
    let stored = store.counters();
    let mut rng = StdRng::seed_from_u64(seed);

    // Pattern 3: single pages, random order.
    let mut ok = vec![true; n];
    let mut order: Vec<usize> = (0..n).collect();
    order.shuffle(&mut rng);
    let mut page: Box<Page> = Box::new([0; PAGE_SIZE]);
    let mut single = Loads {
        time: Duration::ZERO,
        cpu: Duration::ZERO,
        lat: latency(),
    };
    let cpu = thread_cpu();
    for &i in &order {
        page[0] = !input.page(i)[0];
        let start = Instant::now();
        let res = store.load_page(i, &mut page);
        let t = start.elapsed();
        single.time += t;
        single.lat.saturating_record(t.as_nanos() as u64);
        ok[i] &= res.is_ok() && *page == *input.page(i);
    }
    single.cpu = thread_cpu() - cpu;

    // Pattern 1: whole units, random order.
    let mut unit_order: Vec<usize> = (0..units).collect();
    unit_order.shuffle(&mut rng);
    let mut buf = vec![0u8; unit_pages * PAGE_SIZE];
    let mut folio = Loads {
        time: Duration::ZERO,
        cpu: Duration::ZERO,
        lat: latency(),
    };
    let cpu = thread_cpu();
    for &u in &unit_order {
        let want = input.pages(u * unit_pages, unit_len(u));
        buf[0] = !want[0];
        let start = Instant::now();
        let res = store.load_unit(u, &mut buf);
        let t = start.elapsed();
        folio.time += t;
        folio.lat.saturating_record(t.as_nanos() as u64);
        let right = res == Ok(unit_len(u)) && buf[..want.len()] == *want;
        for o in &mut ok[u * unit_pages..u * unit_pages + unit_len(u)] {
            *o &= right;
        }
    }
    folio.cpu = thread_cpu() - cpu;

    // Pattern 2: units in random order, pages in address order, through the cache.
    unit_order.shuffle(&mut rng);
    let mut cache = UnitCache::new(CACHE_ENTRIES, unit_pages * PAGE_SIZE);
    let mut around = Loads {
        time: Duration::ZERO,
        cpu: Duration::ZERO,
        lat: latency(),
    };
    let cpu = thread_cpu();
    for &u in &unit_order {
        let first = u * unit_pages;
        for (i, o) in (first..).zip(&mut ok[first..first + unit_len(u)]) {
            page[0] = !input.page(i)[0];
            let start = Instant::now();
            let res = store.load_page_cached(i, &mut page, &mut cache);
            let t = start.elapsed();
            around.time += t;
            around.lat.saturating_record(t.as_nanos() as u64);
            *o &= res.is_ok() && *page == *input.page(i);
        }
    }
    around.cpu = thread_cpu() - cpu;

    order.shuffle(&mut StdRng::seed_from_u64(seed ^ 0x5eed));
    let (first, rest) = order.split_at(n / 2);
    first.iter().for_each(|&i| {
        store.invalidate(i);
    });
    let half = store.counters();

    // Pages of folios written after the folio was stored: every 16th page still stored
    // kept again on its own with other bytes, then every page still stored loaded through
    // the same cache (which holds the units last decoded) and checked against what it now
    // holds. (After `half`: the counters are of the units as stored.)
    let mut gone = vec![false; n];
    first.iter().for_each(|&i| gone[i] = true);
    let rewritten = |i: usize| i % 16 == 7 && !gone[i];
    let other = |i: usize| -> Box<Page> {
        let mut p: Box<Page> = Box::new(*input.page(i));
        p.iter_mut().for_each(|b| *b = !*b);
        p
    };
    for i in (0..n).filter(|&i| rewritten(i)) {
        if let Err(e) = store.store_page(i, &other(i)) {
            eprintln!(
                "zswap: {}: store of page {i} on its own: {e}",
                config.name()
            );
            ok[i] = false;
        }
    }
    for &u in &unit_order {
        for i in (u * unit_pages..u * unit_pages + unit_len(u)).filter(|&i| !gone[i]) {
            let res = store.load_page_cached(i, &mut page, &mut cache);
            let want = if rewritten(i) {
                other(i)
            } else {
                Box::new(*input.page(i))
            };
            ok[i] &= res.is_ok() && *page == *want;
        }
    }
    rest.iter().for_each(|&i| {
        store.invalidate(i);
    });
    Ok(UnitRun {
        config,
        unit_pages,
        pages: n,
        units,
        stored,
        store_cpu,
        store_time,
        store_lat,
        single,
        folio,
        around,
        cache_hits: cache.hits,
        cache_misses: cache.misses,
        half,
        pool_pages_at_end: store.counters().pool_pages,
        verified_pages: ok.iter().filter(|&&o| o).count(),
    })
}

fn us(h: &Histogram<u64>, q: f64) -> f64 {
    h.value_at_quantile(q) as f64 / 1000.0
}

fn mib_s(bytes: u64, time: Duration) -> f64 {
    bytes as f64 / (1024.0 * 1024.0) / time.as_secs_f64().max(1e-9)
}

impl UnitRun {
    /// `4K`, `64K`...
    pub fn label(&self) -> String {
        self.config.label()
    }

    /// `zstd -1/128K 64K`: codec and unit, for the units table.
    pub fn tag(&self) -> String {
        format!("{} {}", self.config.codec_label(), self.label())
    }

    fn per_page_us(&self, t: Duration) -> f64 {
        t.as_secs_f64() * 1e6 / self.pages.max(1) as f64
    }

    /// Store CPU per page in µs.
    pub fn store_cpu_us(&self) -> f64 {
        self.per_page_us(self.store_cpu)
    }

    /// CPU time per page of the whole-unit load pass in µs: less noisy than the time in
    /// the calls on a shared machine (the check of the bytes, the same for every size,
    /// included).
    pub fn unit_load_us(&self) -> f64 {
        self.per_page_us(self.folio.cpu)
    }

    /// MiB/s of pattern 1 (whole units), 2 (fault-around) and 3 (single pages).
    pub fn load_mib_s(&self) -> [f64; 3] {
        let original = (self.pages * PAGE_SIZE) as u64;
        [
            mib_s(original, self.folio.time),
            mib_s(original, self.around.time),
            mib_s(original, self.single.time),
        ]
    }

    /// The side-by-side table's row: store MiB/s and latencies per call (a unit); load
    /// MiB/s of whole units in random order (pattern 1), with patterns 2 and 3 beside it;
    /// load latencies of single pages (pattern 3).
    pub fn row(&self) -> Row {
        let original = (self.pages * PAGE_SIZE) as u64;
        let memory = self.stored.memory_bytes();
        let [folio, around, single] = self.load_mib_s();
        Row {
            name: self.config.name(),
            kind: "acomp".into(),
            pages: self.pages as u64,
            original_bytes: original,
            memory_bytes: memory,
            compressed_bytes: self.stored.stored_bytes,
            same_filled_pages: self.stored.same_filled_pages,
            ratio: original as f64 / memory.max(1) as f64,
            threads: 1,
            request_bytes: (self.unit_pages * PAGE_SIZE) as u64,
            store_mib_s: mib_s(original, self.store_time),
            load_mib_s: folio,
            store_p50_us: Some(us(&self.store_lat, 0.5)),
            store_p99_us: Some(us(&self.store_lat, 0.99)),
            load_p50_us: Some(us(&self.single.lat, 0.5)),
            load_p99_us: Some(us(&self.single.lat, 0.99)),
            verified_pages: self.verified_pages as u64,
            memory_vs_lzo_rle: None,
            store_vs_lzo_rle: None,
            load_vs_lzo_rle: None,
            unit_bytes: Some((self.unit_pages * PAGE_SIZE) as u64),
            block_bytes: Some(self.config.block_bytes()),
            load_pattern: crate::compare::PATTERN_FOLIO.into(),
            load_folio_mib_s: Some(folio),
            load_fault_around_mib_s: Some(around),
            load_single_page_mib_s: Some(single),
            recompress: None,
        }
    }
}

/// The targets for 64 KiB units against 4 KiB units.
pub const TARGET_MEMORY: f64 = 0.82;
/// See [`TARGET_MEMORY`]: store CPU per page.
pub const TARGET_STORE_CPU: f64 = 0.6;
/// See [`TARGET_MEMORY`]: whole-unit load time per page.
pub const TARGET_UNIT_LOAD: f64 = 0.5;
/// See [`TARGET_MEMORY`]: single-page load p50.
pub const TARGET_PAGE_LOAD_P50: f64 = 2.0;

/// Prints the units table, each size against 4 KiB units, and where 64 KiB units stand
/// against the targets.
pub fn print(runs: &[UnitRun]) {
    let Some(first) = runs.first() else { return };
    // Each run beside the 4 KiB units of its codec (at 4 KiB, zstd's block limit is moot).
    let base_of = |r: &UnitRun| {
        runs.iter().find(|b| {
            b.unit_pages == 1
                && match (b.config.codec, r.config.codec) {
                    (Codec::Zstd { level: a, .. }, Codec::Zstd { level: c, .. }) => a == c,
                    (a, c) => a == c,
                }
        })
    };
    println!();
    println!(
        "units: the same {} pages, one thread; stored a unit per call in order, loaded a page \
         per call in random order (range reads), then a unit per call in random order; each \
         against 4K units of its codec",
        first.pages
    );
    println!(
        "  units stored: {}",
        runs.iter()
            .map(|r| format!("{} {}", r.tag(), r.units))
            .collect::<Vec<_>>()
            .join(", ")
    );
    println!(
        "  {:<16} {:>14} {:>6} {:>9} {:>6} {:>9} {:>6} {:>8} {:>8} {:>6} {:>8} {:>12}",
        "unit",
        "memory (bytes)",
        "vs 4K",
        "store",
        "vs 4K",
        "unit load",
        "vs 4K",
        "page",
        "page",
        "vs 4K",
        "held",
        "held frame"
    );
    println!(
        "  {:<16} {:>14} {:>6} {:>9} {:>6} {:>9} {:>6} {:>8} {:>8} {:>6} {:>8} {:>12}",
        "", "", "", "CPU us/p", "", "CPU us/p", "", "p50 us", "p99 us", "p50", "pages", "bytes"
    );
    let ratio = |a: f64, b: Option<f64>| b.map_or("-".into(), |b| format!("{:.2}", a / b));
    for r in runs {
        let base = base_of(r);
        println!(
            "  {:<16} {:>14} {:>6} {:>9.2} {:>6} {:>9.2} {:>6} {:>8.2} {:>8.2} {:>6} {:>8} {:>12}",
            r.tag(),
            r.stored.memory_bytes(),
            ratio(
                r.stored.memory_bytes() as f64,
                base.map(|b| b.stored.memory_bytes() as f64)
            ),
            r.store_cpu_us(),
            ratio(r.store_cpu_us(), base.map(UnitRun::store_cpu_us)),
            r.unit_load_us(),
            ratio(r.unit_load_us(), base.map(UnitRun::unit_load_us)),
            us(&r.single.lat, 0.5),
            us(&r.single.lat, 0.99),
            ratio(us(&r.single.lat, 0.5), base.map(|b| us(&b.single.lat, 0.5))),
            r.half.held_pages,
            r.half.held_frame_bytes
        );
    }
    println!(
        "  frames: {}; pages kept on their own: {}; held: pages invalidated (a random half) \
         whose unit's frame stays for its other pages, and those frames' bytes",
        runs.iter()
            .map(|r| format!("{} {}", r.tag(), r.stored.frame_units))
            .collect::<Vec<_>>()
            .join(", "),
        runs.iter()
            .map(|r| format!(
                "{} {} raw + {} same-filled",
                r.tag(),
                r.stored.raw_pages,
                r.stored.same_filled_pages
            ))
            .collect::<Vec<_>>()
            .join(", ")
    );
    println!(
        "  memory with that half invalidated: {}",
        runs.iter()
            .map(|r| format!(
                "{} {} bytes ({:.0}% of full)",
                r.tag(),
                r.half.memory_bytes(),
                100.0 * r.half.memory_bytes() as f64 / r.stored.memory_bytes().max(1) as f64
            ))
            .collect::<Vec<_>>()
            .join(", ")
    );
    println!(
        "  pattern 2's cache ({CACHE_ENTRIES} units per thread): {}",
        runs.iter()
            .map(|r| format!(
                "{} {} hits, {} decodes",
                r.tag(),
                r.cache_hits,
                r.cache_misses
            ))
            .collect::<Vec<_>>()
            .join(", ")
    );
    for r in runs {
        if r.pool_pages_at_end != 0 {
            println!(
                "  {} units: {} BACKING PAGES LEFT AFTER EVERY PAGE WAS INVALIDATED",
                r.tag(),
                r.pool_pages_at_end
            );
        }
    }
    for r in runs.iter().filter(|r| r.unit_pages > 1) {
        let Some(base) = base_of(r) else { continue };
        let m = r.stored.memory_bytes() as f64 / base.stored.memory_bytes().max(1) as f64;
        let s = r.store_cpu_us() / base.store_cpu_us();
        let l = r.unit_load_us() / base.unit_load_us();
        let p = us(&r.single.lat, 0.5) / us(&base.single.lat, 0.5);
        let mark = |ok: bool| if ok { "ok" } else { "MISSED" };
        let targets = if r.unit_pages == 16 {
            "targets"
        } else {
            "64K targets"
        };
        println!(
            "  {} units vs 4K ({targets}): memory {m:.2}x ({} <= {TARGET_MEMORY}), store CPU/page \
             {s:.2}x ({} <= {TARGET_STORE_CPU}), unit load CPU/page {l:.2}x ({} <= \
             {TARGET_UNIT_LOAD}), page load p50 {p:.2}x ({} <= {TARGET_PAGE_LOAD_P50}), p99 {:.2} us",
            r.tag(),
            mark(m <= TARGET_MEMORY),
            mark(s <= TARGET_STORE_CPU),
            mark(l <= TARGET_UNIT_LOAD),
            mark(p <= TARGET_PAGE_LOAD_P50),
            us(&r.single.lat, 0.99)
        );
    }
}
