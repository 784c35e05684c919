//! Folios: `n` neighbouring pages stored as one frame (zswap's large-folio store, zram's
//! multi-page compression), each page still an entry of its own offset.
//!
//! - [`Zswap::store_folio`] compresses the pages as one frame into one destination of the
//!   folio's size. A frame smaller than the folio is kept in the pool, in page-sized objects
//!   (zsmalloc's classes end at a page) and a tail in the class that fits, and every page
//!   becomes an entry ([`State::Folio`]) that shares it. A frame not smaller than the folio
//!   keeps each page on its own (its fill value, or as it is); a folio whose pages are all
//!   same-filled keeps their fill values.
//! - A page's load is a range read of that page (zstd's `decompress_range`, which decodes
//!   the blocks up to the page and stops); an algorithm without range reads decodes the
//!   frame into a per-thread buffer and copies the page out, and copies the next page of
//!   the same folio from there without a decode (folio ids are never reused).
//!   [`Zswap::load_pages`] decodes the frame once for all its pages.
//! - Each page loads, takes, invalidates, is stored again and is written back by its own
//!   offset. The frame is freed when the last page it serves leaves it; until then the pages
//!   that left are counted as held ([`Stats::held_folio_pages`](crate::Stats)).
//! - The frame's objects are read under the folio's own lock (for reading), so that
//!   compaction (which holds it for writing) can move them.

use std::cell::RefCell;
use std::io::{IoSlice, IoSliceMut};
use std::sync::Arc;

use crate::filled::same_filled_word;
use crate::outcome::{FolioInfo, FolioKind, LoadError, MAX_FOLIO_PAGES, StoreError, StoreKind};
use crate::slab::EntryRef;
use crate::slab::{AS_IS, Folio, FrameTag, Mark, State};
use crate::stats::inc;
use crate::tier::Zswap;
use crate::{PAGE_SIZE, Page};

thread_local! {
    /// The destination of a folio's compression (the folio's size).
    static FOLIO_DST: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
}

impl Zswap {
    /// Stores `pages` at the neighbouring offsets `offset..offset + pages.len()` as one folio:
    /// compressed as one frame where that is smaller than the pages, else page by page. Each
    /// page replaces any entry at its offset and is then an entry of its own: it loads,
    /// takes, invalidates and is written back by its offset, as a page [`Zswap::store`]d
    /// alone does. The frame stays in the pool until the last of its pages leaves it
    /// (invalidated, taken, stored again or written back). A folio of one page is a
    /// [`Zswap::store`].
    ///
    /// The cost of a page's load grows with the folio: zstd's range read decodes the frame's
    /// blocks up to the page's end (smaller blocks, [`acomp::ZstdParams::block_size_max`],
    /// decode less), and lz4 (no range reads) decodes the whole frame, once for the pages of
    /// one folio that a thread loads (or writes back) in a row, again whenever it goes to
    /// another folio in between. Folios serve pages that are loaded together
    /// ([`Zswap::load_pages`], one decode); pages loaded one by one at random are cheaper
    /// stored alone.
    ///
    /// ```
    /// use acomp_zswap::{EntryInfo, FolioKind, LoadError, PAGE_SIZE, Page, Zswap};
    ///
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let zswap = Zswap::builder(acomp::Acomp::new("zstd")?).build()?;
    /// let mut pages: Vec<Page> = vec![[0; PAGE_SIZE]; 16]; // a 64 KiB folio
    /// for (k, p) in pages.iter_mut().enumerate() {
    ///     p[..20].copy_from_slice(format!("page {k:>15}").as_bytes());
    /// }
    /// assert_eq!(zswap.store_folio(100, &pages)?, FolioKind::Frame);
    /// assert!(matches!(zswap.entry(107), Some(EntryInfo::Folio(f)) if f.first == 100));
    /// let mut page = [0; PAGE_SIZE];
    /// zswap.load(107, &mut page)?; // a range read of page 7
    /// assert_eq!(page, pages[7]);
    /// zswap.invalidate(107); // the frame stays for the other 15
    /// assert!(matches!(zswap.load(107, &mut page), Err(LoadError::NotFound)));
    /// assert_eq!(zswap.stats().held_folio_pages, 1);
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// # Errors
    ///
    /// [`StoreError::BadFolio`] where `pages` is empty, longer than [`MAX_FOLIO_PAGES`], or
    /// runs past `u64::MAX` (nothing changes); else as [`Zswap::store`]: the pages stay with
    /// the caller and the old entries of all the offsets are invalidated.
    pub fn store_folio(&self, offset: u64, pages: &[Page]) -> Result<FolioKind, StoreError> {
        let n = pages.len();
        if n == 0 || n > MAX_FOLIO_PAGES || offset.checked_add(n as u64 - 1).is_none() {
            return Err(StoreError::BadFolio { offset, pages: n });
        }
        if n == 1 {
            return self.store(offset, &pages[0]).map(|k| match k {
                StoreKind::Compressed => FolioKind::Frame,
                StoreKind::Incompressible => FolioKind::Pages,
                StoreKind::SameFilled => FolioKind::SameFilled,
            });
        }
        let offsets = offset..=offset + (n as u64 - 1);
        let refuse = |e: StoreError| {
            inc(&self.counters.reject_reclaim_fail);
            offsets.clone().for_each(|o| {
                self.invalidate(o);
            });
            Err(e)
        };
        if pages.iter().all(|p| same_filled_word(p).is_some()) {
            for (o, p) in offsets.clone().zip(pages) {
                let word = u64::from_ne_bytes(p[..8].try_into().expect("8 bytes"));
                self.install(o, State::Filled(word));
            }
            return Ok(FolioKind::SameFilled);
        }
        let src = pages.as_flattened();
        let frame = FOLIO_DST.with_borrow_mut(|dst| {
            dst.resize(src.len(), 0);
            match self
                .tfm
                .compress(&[IoSlice::new(src)], &mut [IoSliceMut::new(dst)])
            {
                Ok(len) if len < src.len() => {
                    let chunks = self
                        .pool
                        .write_frame(&dst[..len], |n| self.alloc(offset, n))?;
                    Ok(Some((chunks, len)))
                }
                Ok(_) => Ok(None),
                Err(e) if e.errno() == libc::ENOSPC => Ok(None),
                Err(_) => {
                    inc(&self.counters.reject_compress_fail);
                    Ok(None)
                }
            }
        });
        let Some((chunks, length)) = (match frame {
            Ok(f) => f,
            Err(e) => return refuse(e),
        }) else {
            // Not smaller than the folio: each page on its own, as it is.
            for (o, p) in offsets.clone().zip(pages) {
                let state = match same_filled_word(p) {
                    Some(fill) => State::Filled(fill),
                    None => {
                        inc(&self.counters.reject_compress_poor);
                        match self.alloc(o, PAGE_SIZE) {
                            Ok(mut handle) => {
                                self.pool.write(&mut handle, p);
                                State::Pool {
                                    handle,
                                    length: AS_IS,
                                    codec: FrameTag::Primary,
                                }
                            }
                            Err(e) => return refuse(e),
                        }
                    }
                };
                self.install(o, state);
            }
            return Ok(FolioKind::Pages);
        };
        let folio = Arc::new(Folio::new(offset, n, n, FrameTag::Primary, length, chunks));
        self.count_folio(&folio);
        for (k, o) in offsets.enumerate() {
            let state = State::Folio {
                folio: Arc::clone(&folio),
                index: k as u32,
            };
            self.install(o, state);
        }
        Ok(FolioKind::Frame)
    }

    /// Loads the `pages.len()` pages at `offset..` (any run of offsets, a folio's or not):
    /// each page is what [`Zswap::load`] of its offset gives. Where they are exactly one
    /// folio's, all still served by its frame, the frame is decoded once into them (a folio
    /// swap-in); else page by page. Unlike [`Zswap::decode_folio`], it never gives a page
    /// the offset no longer holds.
    ///
    /// # Errors
    ///
    /// As [`Zswap::load`], for the first page that fails ([`LoadError::NotFound`] where one
    /// has no entry, or would be past `u64::MAX`); `pages` is then unspecified.
    pub fn load_pages(&self, offset: u64, pages: &mut [Page]) -> Result<(), LoadError> {
        let n = pages.len();
        if n > 1 && offset.checked_add(n as u64 - 1).is_some() {
            let entries: Option<Vec<EntryRef<'_>>> =
                (0..n as u64).map(|k| self.lookup(offset + k)).collect();
            if let Some(entries) = entries {
                // The first page's lock, then the others' where no writer holds them: a
                // thread that holds an entry's lock never waits for another's (`slab.rs`);
                // where one is busy, the pages are loaded one by one below.
                let guards: Option<Vec<_>> = entries
                    .iter()
                    .enumerate()
                    .map(|(i, e)| if i == 0 { Some(e.read()) } else { e.try_read() })
                    .collect();
                let whole = guards.as_deref().and_then(|guards| match &*guards[0] {
                    State::Folio { folio, index: 0 } if folio.pages == n => {
                        let all = guards.iter().enumerate().all(|(k, g)| match &**g {
                            State::Folio { folio: f, index } => {
                                *index as usize == k && Arc::ptr_eq(f, folio)
                            }
                            _ => false,
                        });
                        all.then(|| Arc::clone(folio))
                    }
                    _ => None,
                });
                if let Some(folio) = whole {
                    entries.iter().for_each(|e| {
                        e.marks.set(Mark::Referenced);
                    });
                    let chunks = folio.chunks.read();
                    return self
                        .decode_frame(folio.codec, &chunks, folio.length, pages.as_flattened_mut())
                        .inspect_err(|_| inc(&self.counters.decompress_fail));
                }
            }
        }
        // Not `offset..`: a run that ends at u64::MAX would step past it (a panic in a debug
        // build, offset 0's page in a release build); past it no page has an entry.
        for (k, page) in (0u64..).zip(pages.iter_mut()) {
            let o = offset.checked_add(k).ok_or(LoadError::NotFound)?;
            self.load(o, page)?;
        }
        Ok(())
    }

    /// The folio whose frame serves `offset` now, if one does.
    pub fn folio(&self, offset: u64) -> Option<FolioInfo> {
        let e = self.lookup(offset)?;
        match &*e.read() {
            State::Folio { folio, .. } => Some(folio.info()),
            _ => None,
        }
    }

    /// Not a load: decodes the whole frame of the folio that serves `offset` into `out`'s first
    /// `pages` pages (a fault-around swap-in decoding the folio into a buffer of its own),
    /// and says which folio it was. Pages of the folio that left it since come out as they
    /// were stored: only a page the folio still serves ([`Zswap::folio`] gives its id) is
    /// its page now.
    ///
    /// # Errors
    ///
    /// [`LoadError::NotFound`] where no folio's frame serves `offset`;
    /// [`LoadError::ShortBuffer`] where `out` has fewer pages than the folio;
    /// [`LoadError::Decompress`] or [`LoadError::WrongLength`] where the frame is bad.
    pub fn decode_folio(&self, offset: u64, out: &mut [Page]) -> Result<FolioInfo, LoadError> {
        loop {
            let entry = self.lookup(offset).ok_or(LoadError::NotFound)?;
            let state = entry.read();
            let folio = match &*state {
                State::Dead => continue,
                State::Folio { folio, .. } => folio,
                _ => return Err(LoadError::NotFound),
            };
            if out.len() < folio.pages {
                return Err(LoadError::ShortBuffer {
                    needed: folio.pages,
                });
            }
            entry.marks.set(Mark::Referenced);
            let chunks = folio.chunks.read();
            self.decode_frame(
                folio.codec,
                &chunks,
                folio.length,
                out[..folio.pages].as_flattened_mut(),
            )
            .inspect_err(|_| inc(&self.counters.decompress_fail))?;
            return Ok(folio.info());
        }
    }
}
