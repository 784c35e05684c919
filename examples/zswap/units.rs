//! Larger compression units (`--unit`): a unit of contiguous pages (a large folio) stored as
//! one object, as zswap keeps a large folio's entry and zram's multi-page compression its
//! objects.
//!
//! - Store: a unit whose pages are all same-filled is kept as their fill values (no memory).
//!   Any other is compressed as one frame of page-sized blocks
//!   (`ZstdParams::block_size_max(4096)`), its same-filled pages included (zstd writes each
//!   as a block of a few bytes). Where the frame is not smaller than the unit, each page is
//!   kept on its own instead, as today's zswap keeps it: its fill value, or the page as it
//!   is in a page-sized object. A frame larger than a page is kept in page-sized pool
//!   objects (the pool's largest class, a backing page each) and a tail in the class that
//!   fits: zsmalloc's classes end at a page.
//! - Load of one page (a page fault): a range read of one segment at the page's offset,
//!   which decodes the unit's blocks up to that page and stops. A unit of one page is
//!   decompressed whole, as today's zswap does.
//! - Load of a unit (a folio swap-in): one decompression of the frame into the unit.
//! - Invalidate of a page: a page kept on its own is freed at once; a frame stays until every
//!   page of its unit is invalidated, as zswap keeps a large folio's entry. Those pages,
//!   invalidated but still held, are counted with the frames' bytes that hold them.

use std::io::IoSliceMut;
use std::sync::Arc;
use std::time::{Duration, Instant};

use acomp::{Acomp, Segment, ZstdParams};
use hdrhistogram::Histogram;
use parking_lot::Mutex;
use rand::SeedableRng;
use rand::rngs::StdRng;
use rand::seq::SliceRandom;

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

/// How a page of a unit kept page by page is held.
#[derive(Debug, Clone)]
enum Kept {
    Filled(u8),
    Raw(Handle),
}

#[derive(Debug)]
enum Body {
    /// The unit's frame in page-sized pieces, and its bytes.
    Frame {
        chunks: Arc<[Handle]>,
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
    /// Bit `k`: page `k` is stored (not invalidated).
    live: u64,
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
    pool: Pool,
    unit_pages: usize,
    slots: Mutex<Vec<Option<Slot>>>,
    /// The destination of compression: a unit's bytes.
    dst: Mutex<Vec<u8>>,
    /// Where a unit load gathers a frame kept in pieces, so that it decompresses from one
    /// fragment (the one-shot path), as zsmalloc copies an object that straddles pages into
    /// a per-CPU buffer to map it.
    gather: Mutex<Vec<u8>>,
}

impl Units {
    /// A store of units of `unit_pages` pages, compressing with `params` (with
    /// `block_size_max(4096)` for page-sized blocks).
    ///
    /// # Errors
    ///
    /// Where acomp refuses the parameters.
    ///
    /// # Panics
    ///
    /// If `unit_pages` is 0 or more than [`MAX_UNIT_PAGES`].
    pub fn new(params: ZstdParams, unit_pages: usize) -> Result<Self, acomp::Error> {
        assert!((1..=MAX_UNIT_PAGES).contains(&unit_pages));
        Ok(Units {
            tfm: Acomp::with_zstd(params)?,
            pool: Pool::new(None),
            unit_pages,
            slots: Mutex::default(),
            dst: Mutex::new(vec![0; unit_pages * PAGE_SIZE]),
            gather: Mutex::new(vec![0; unit_pages * PAGE_SIZE]),
        })
    }

    /// Stores `pages` (whole pages, at most a unit's) as unit `unit`, replacing any there.
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
                            None => match self.pool.alloc(PAGE_SIZE) {
                                Ok(h) => {
                                    self.pool.write(&h, p);
                                    Kept::Raw(h)
                                }
                                Err(e) => {
                                    self.free(Slot {
                                        body: Body::Pages(kept),
                                        pages: n,
                                        live: 0,
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
        let mut slots = self.slots.lock();
        if slots.len() <= unit {
            slots.resize_with(unit + 1, || None);
        }
        let live = if n == 64 { u64::MAX } else { (1 << n) - 1 };
        slots[unit] = Some(Slot {
            body,
            pages: n,
            live,
        });
        Ok(kind)
    }

    /// The frame in page-sized objects.
    fn alloc_frame(&self, frame: &[u8]) -> Result<Arc<[Handle]>, AllocError> {
        let mut chunks = Vec::with_capacity(frame.len().div_ceil(PAGE_SIZE));
        for piece in frame.chunks(PAGE_SIZE) {
            match self.pool.alloc(piece.len()) {
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
        match slot.body {
            // Handles are shared with a load only if the caller breaks the contract (no
            // invalidation while loading): freeing by a clone is then what zswap's would do.
            Body::Frame { chunks, .. } => chunks.iter().for_each(|h| self.pool.free(h.clone())),
            Body::Pages(kept) => kept.into_iter().flatten().for_each(|k| {
                if let Kept::Raw(h) = k {
                    self.pool.free(h);
                }
            }),
        }
    }

    /// Loads page `page` (page `page % unit_pages` of its unit) into `out`: a range read
    /// out of the unit's frame, or the page as it was kept. The caller must not invalidate
    /// the page while loading it, as the kernel pins the swap entry.
    ///
    /// # Errors
    ///
    /// [`LoadError::NotFound`] where the page is not stored; [`LoadError::Decompress`] or
    /// [`LoadError::WrongLength`] where the frame does not give the page.
    pub fn load_page(&self, page: usize, out: &mut Page) -> Result<(), LoadError> {
        let (unit, k) = (page / self.unit_pages, page % self.unit_pages);
        enum What {
            Frame(Arc<[Handle]>, usize),
            Kept(Kept),
        }
        let what = {
            let slots = self.slots.lock();
            let slot = slots
                .get(unit)
                .and_then(Option::as_ref)
                .filter(|s| k < s.pages && s.live & (1 << k) != 0)
                .ok_or(LoadError::NotFound)?;
            match &slot.body {
                Body::Frame { chunks, length } => What::Frame(Arc::clone(chunks), *length),
                Body::Pages(kept) => What::Kept(kept[k].clone().ok_or(LoadError::NotFound)?),
            }
        };
        match what {
            What::Kept(Kept::Filled(fill)) => out.fill(fill),
            What::Kept(Kept::Raw(h)) => self.pool.read_sg(&h, PAGE_SIZE, |frags| {
                let mut at = 0;
                for f in frags {
                    out[at..at + f.len()].copy_from_slice(f);
                    at += f.len();
                }
            }),
            What::Frame(chunks, length) => {
                let res = self.read_frame(&chunks, length, |src| {
                    if self.unit_pages == 1 {
                        self.tfm.decompress(src, &mut [IoSliceMut::new(out)])
                    } else {
                        let offset = (k * PAGE_SIZE) as u64;
                        self.tfm
                            .decompress_range(src, &mut [Segment::new(offset, out)])
                    }
                });
                match res {
                    Ok(PAGE_SIZE) => {}
                    Ok(n) => return Err(LoadError::WrongLength(n)),
                    Err(e) => return Err(LoadError::Decompress(e)),
                }
            }
        }
        Ok(())
    }

    /// Loads every page of unit `unit` into `out` (at least a unit's bytes), as a folio is
    /// swapped in; returns the unit's pages (fewer than a unit's at the end of the input).
    ///
    /// # Errors
    ///
    /// [`LoadError::NotFound`] where the unit or one of its pages kept on its own is gone;
    /// else as [`Units::load_page`].
    pub fn load_unit(&self, unit: usize, out: &mut [u8]) -> Result<usize, LoadError> {
        let (body, pages) = {
            let slots = self.slots.lock();
            let slot = slots
                .get(unit)
                .and_then(Option::as_ref)
                .ok_or(LoadError::NotFound)?;
            let body = match &slot.body {
                Body::Frame { chunks, length } => Ok((Arc::clone(chunks), *length)),
                Body::Pages(kept) => Err(kept.clone()),
            };
            (body, slot.pages)
        };
        let out = &mut out[..pages * PAGE_SIZE];
        match body {
            Ok((chunks, length)) => {
                let mut gather = self.gather.lock();
                let frame = &mut gather[..length];
                self.read_frame(&chunks, length, |src| {
                    let mut at = 0;
                    for f in src {
                        frame[at..at + f.len()].copy_from_slice(f);
                        at += f.len();
                    }
                });
                let res = self.tfm.decompress_to_buffer(frame, out);
                match res {
                    Ok(n) if n == pages * PAGE_SIZE => Ok(pages),
                    Ok(n) => Err(LoadError::WrongLength(n)),
                    Err(e) => Err(LoadError::Decompress(e)),
                }
            }
            Err(kept) => {
                for (k, one) in kept.into_iter().enumerate() {
                    let page: &mut Page = (&mut out[k * PAGE_SIZE..][..PAGE_SIZE])
                        .try_into()
                        .expect("a page");
                    match one.ok_or(LoadError::NotFound)? {
                        Kept::Filled(fill) => page.fill(fill),
                        Kept::Raw(h) => self.pool.read_sg(&h, PAGE_SIZE, |frags| {
                            let mut at = 0;
                            for f in frags {
                                page[at..at + f.len()].copy_from_slice(f);
                                at += f.len();
                            }
                        }),
                    }
                }
                Ok(pages)
            }
        }
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

    /// Invalidates page `page`: a page kept on its own is freed now, a unit's frame once its
    /// last page goes. Returns whether the page was stored.
    pub fn invalidate(&self, page: usize) -> bool {
        let (unit, k) = (page / self.unit_pages, page % self.unit_pages);
        let mut slots = self.slots.lock();
        let Some(slot) = slots.get_mut(unit).and_then(Option::as_mut) else {
            return false;
        };
        if k >= slot.pages || slot.live & (1 << k) == 0 {
            return false;
        }
        slot.live &= !(1 << k);
        let freed = match &mut slot.body {
            Body::Pages(kept) => kept[k].take(),
            Body::Frame { .. } => None,
        };
        let gone = (slot.live == 0).then(|| slots[unit].take()).flatten();
        drop(slots);
        if let Some(Kept::Raw(h)) = freed {
            self.pool.free(h);
        }
        if let Some(slot) = gone {
            self.free(slot);
        }
        true
    }

    /// A snapshot of the counters (a walk over the units).
    pub fn counters(&self) -> UnitCounters {
        let mut c = UnitCounters::default();
        for slot in self.slots.lock().iter().flatten() {
            c.units += 1;
            let live = u64::from(slot.live.count_ones());
            c.stored_pages += live;
            match &slot.body {
                Body::Frame { length, .. } => {
                    c.frame_units += 1;
                    c.stored_bytes += *length as u64;
                    let held = slot.pages as u64 - live;
                    c.held_pages += held;
                    if held > 0 {
                        c.held_frame_bytes += *length as u64;
                    }
                }
                Body::Pages(kept) => {
                    for k in kept.iter().flatten() {
                        match k {
                            Kept::Filled(_) => c.same_filled_pages += 1,
                            Kept::Raw(_) => {
                                c.raw_pages += 1;
                                c.stored_bytes += PAGE_SIZE as u64;
                            }
                        }
                    }
                }
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

/// One unit size measured on one thread: every unit stored in order, every page loaded alone
/// in random order, every unit loaded whole in order, half the pages invalidated, then all.
#[derive(Debug, Clone)]
pub struct UnitRun {
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
    /// Latency of each single-page load.
    pub page_load_lat: Histogram<u64>,
    /// Time in the whole-unit load calls.
    pub unit_load_time: Duration,
    /// Thread CPU time of the whole-unit load pass (the check of the bytes included).
    pub unit_load_cpu: Duration,
    /// Counters with a random half of the pages invalidated.
    pub half: UnitCounters,
    /// Backing pages once every page is invalidated (0 unless leaked).
    pub pool_pages_at_end: usize,
    /// Pages that came back right both ways (alone and in their unit).
    pub verified_pages: usize,
}

/// Measures every unit size asked for (in pages), smallest first, 4 KiB units beside any
/// larger; nothing where none is asked for.
///
/// # Errors
///
/// Where acomp refuses the parameters.
pub fn run_all(
    unit_pages: &[usize],
    params: ZstdParams,
    input: &Input,
    seed: u64,
) -> Result<Vec<UnitRun>, acomp::Error> {
    let mut sizes = unit_pages.to_vec();
    if !sizes.is_empty() {
        sizes.push(1);
    }
    sizes.sort_unstable();
    sizes.dedup();
    sizes
        .into_iter()
        .map(|n| measure(params.clone(), n, input, seed))
        .collect()
}

/// Measures units of `unit_pages` pages on `input`'s pages, on this thread.
///
/// # Errors
///
/// Where acomp refuses the parameters.
pub fn measure(
    params: ZstdParams,
    unit_pages: usize,
    input: &Input,
    seed: u64,
) -> Result<UnitRun, acomp::Error> {
    let store = Units::new(params, unit_pages)?;
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
            eprintln!("zswap: {}K units: store of unit {u}: {e}", unit_pages * 4);
        }
    }
    let store_cpu = thread_cpu() - cpu;
    let stored = store.counters();

    let mut ok = vec![false; n];
    let mut order: Vec<usize> = (0..n).collect();
    order.shuffle(&mut StdRng::seed_from_u64(seed));
    let mut page: Box<Page> = Box::new([0; PAGE_SIZE]);
    let mut page_load_lat = latency();
    for &i in &order {
        page[0] = !input.page(i)[0];
        let start = Instant::now();
        let res = store.load_page(i, &mut page);
        let t = start.elapsed();
        page_load_lat.saturating_record(t.as_nanos() as u64);
        ok[i] = res.is_ok() && *page == *input.page(i);
    }
    let mut buf = vec![0u8; unit_pages * PAGE_SIZE];
    let mut unit_load_time = Duration::ZERO;
    let cpu = thread_cpu();
    for u in 0..units {
        let want = input.pages(u * unit_pages, unit_len(u));
        buf[0] = !want[0];
        let start = Instant::now();
        let res = store.load_unit(u, &mut buf);
        let t = start.elapsed();
        unit_load_time += t;
        let right = res == Ok(unit_len(u)) && buf[..want.len()] == *want;
        for o in &mut ok[u * unit_pages..u * unit_pages + unit_len(u)] {
            *o &= right;
        }
    }
    let unit_load_cpu = thread_cpu() - cpu;
    order.shuffle(&mut StdRng::seed_from_u64(seed ^ 0x5eed));
    let (first, rest) = order.split_at(n / 2);
    first.iter().for_each(|&i| {
        store.invalidate(i);
    });
    let half = store.counters();
    rest.iter().for_each(|&i| {
        store.invalidate(i);
    });
    Ok(UnitRun {
        unit_pages,
        pages: n,
        units,
        stored,
        store_cpu,
        store_time,
        store_lat,
        page_load_lat,
        unit_load_time,
        unit_load_cpu,
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
        format!("{}K", self.unit_pages * PAGE_SIZE / 1024)
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
        self.per_page_us(self.unit_load_cpu)
    }

    /// The side-by-side table's row: store and load MiB/s from the store calls and the
    /// whole-unit loads; store latencies per call (a unit), load latencies of single pages.
    pub fn row(&self, level: i32) -> Row {
        let original = (self.pages * PAGE_SIZE) as u64;
        let memory = self.stored.memory_bytes();
        Row {
            name: format!("acomp zstd level {level}, {} units", self.label()),
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
            load_mib_s: mib_s(original, self.unit_load_time),
            store_p50_us: Some(us(&self.store_lat, 0.5)),
            store_p99_us: Some(us(&self.store_lat, 0.99)),
            load_p50_us: Some(us(&self.page_load_lat, 0.5)),
            load_p99_us: Some(us(&self.page_load_lat, 0.99)),
            verified_pages: self.verified_pages as u64,
            memory_vs_lzo_rle: None,
            store_vs_lzo_rle: None,
            load_vs_lzo_rle: None,
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
    let base = runs.iter().find(|r| r.unit_pages == 1);
    println!();
    println!(
        "units: the same {} pages, one thread; stored a unit per call in order, loaded a page \
         per call in random order (range reads), then a unit per call in order",
        first.pages
    );
    println!(
        "  units stored: {}",
        runs.iter()
            .map(|r| format!("{} {}", r.label(), r.units))
            .collect::<Vec<_>>()
            .join(", ")
    );
    println!(
        "  {:<5} {:>14} {:>6} {:>9} {:>6} {:>9} {:>6} {:>8} {:>8} {:>6} {:>8} {:>12}",
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
        "  {:<5} {:>14} {:>6} {:>9} {:>6} {:>9} {:>6} {:>8} {:>8} {:>6} {:>8} {:>12}",
        "", "", "", "CPU us/p", "", "CPU us/p", "", "p50 us", "p99 us", "p50", "pages", "bytes"
    );
    let ratio = |a: f64, b: Option<f64>| b.map_or("-".into(), |b| format!("{:.2}", a / b));
    for r in runs {
        println!(
            "  {:<5} {:>14} {:>6} {:>9.2} {:>6} {:>9.2} {:>6} {:>8.2} {:>8.2} {:>6} {:>8} {:>12}",
            r.label(),
            r.stored.memory_bytes(),
            ratio(
                r.stored.memory_bytes() as f64,
                base.map(|b| b.stored.memory_bytes() as f64)
            ),
            r.store_cpu_us(),
            ratio(r.store_cpu_us(), base.map(UnitRun::store_cpu_us)),
            r.unit_load_us(),
            ratio(r.unit_load_us(), base.map(UnitRun::unit_load_us)),
            us(&r.page_load_lat, 0.5),
            us(&r.page_load_lat, 0.99),
            ratio(
                us(&r.page_load_lat, 0.5),
                base.map(|b| us(&b.page_load_lat, 0.5))
            ),
            r.half.held_pages,
            r.half.held_frame_bytes
        );
    }
    println!(
        "  frames: {}; pages kept on their own: {}; held: pages invalidated (a random half) \
         whose unit's frame stays for its other pages, and those frames' bytes",
        runs.iter()
            .map(|r| format!("{} {}", r.label(), r.stored.frame_units))
            .collect::<Vec<_>>()
            .join(", "),
        runs.iter()
            .map(|r| format!(
                "{} {} raw + {} same-filled",
                r.label(),
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
                r.label(),
                r.half.memory_bytes(),
                100.0 * r.half.memory_bytes() as f64 / r.stored.memory_bytes().max(1) as f64
            ))
            .collect::<Vec<_>>()
            .join(", ")
    );
    for r in runs {
        if r.pool_pages_at_end != 0 {
            println!(
                "  {} units: {} BACKING PAGES LEFT AFTER EVERY PAGE WAS INVALIDATED",
                r.label(),
                r.pool_pages_at_end
            );
        }
    }
    let Some(base) = base else { return };
    for r in runs.iter().filter(|r| r.unit_pages > 1) {
        let m = r.stored.memory_bytes() as f64 / base.stored.memory_bytes().max(1) as f64;
        let s = r.store_cpu_us() / base.store_cpu_us();
        let l = r.unit_load_us() / base.unit_load_us();
        let p = us(&r.page_load_lat, 0.5) / us(&base.page_load_lat, 0.5);
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
            r.label(),
            mark(m <= TARGET_MEMORY),
            mark(s <= TARGET_STORE_CPU),
            mark(l <= TARGET_UNIT_LOAD),
            mark(p <= TARGET_PAGE_LOAD_P50),
            us(&r.page_load_lat, 0.99)
        );
    }
}
