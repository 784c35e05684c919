//! The store path (`zswap_store`): a page whose bytes are all equal is kept as its fill
//! value (zram's same-filled pages); any other is compressed in one request of one fragment
//! each side into a destination of one page; a compression that fails or gives a page or
//! more keeps the page as it is (zswap since Linux 6.18), the reason counted. The object
//! comes from the shrinker's admission ([`Zswap::alloc`], `shrink.rs`).

use std::cell::RefCell;
use std::io::{IoSlice, IoSliceMut};

use acomp::Request;
use std::sync::atomic::Ordering::Relaxed;

use crate::filled::same_filled_word;
use crate::outcome::{StoreError, StoreKind};
use crate::slab::{FrameTag, State};
use crate::stats::inc;
use crate::tier::Zswap;
use crate::{PAGE_SIZE, Page};

/// Most pages [`Zswap::store_batch`] sends to acomp in one batch request.
pub const STORE_BATCH: usize = 32;

thread_local! {
    /// The destination of compression, one page per thread: the counterpart of the kernel's
    /// per-CPU `acomp_ctx->buffer`.
    static DST: RefCell<Box<Page>> = RefCell::new(Box::new([0; PAGE_SIZE]));
    /// The destinations of a batch, [`STORE_BATCH`] pages per thread, allocated on the
    /// thread's first batch.
    static BATCH_DST: RefCell<Vec<Page>> = const { RefCell::new(Vec::new()) };
}

impl Zswap {
    /// Stores `page` at `offset` (any `u64`), replacing any entry there; returns how the
    /// page was kept (compressed, as it is, or as its fill value).
    ///
    /// # Errors
    ///
    /// [`StoreError::PoolFull`] or [`StoreError::Writeback`] where the pool is at its budget
    /// and no room could be made; the page stays with the caller and the offset's old entry
    /// is invalidated.
    pub fn store(&self, offset: u64, page: &Page) -> Result<StoreKind, StoreError> {
        let c = &self.counters;
        let (state, kind) = match same_filled_word(page) {
            Some(fill) => (State::Filled(fill), StoreKind::SameFilled),
            None => match DST.with_borrow_mut(|dst| self.compress(offset, page, dst)) {
                Ok(x) => x,
                Err(e) => {
                    c.reject_reclaim_fail.fetch_add(1, Relaxed);
                    self.invalidate(offset);
                    return Err(e);
                }
            },
        };
        self.install(offset, state);
        Ok(kind)
    }

    /// Stores a batch of pages, each `(offset, page)` kept as [`Zswap::store`] would
    /// keep it, with the same outcome in the same place of the result: the pages to compress
    /// go to acomp in one batch request ([`Acomp::compress_batch`](acomp::Acomp::compress_batch),
    /// one workspace), and the entries into the index with one hold of the LRU's lock and
    /// one of each shard's lock the batch touches (zswap's store of a large folio's pages).
    /// The result is what storing the pages one after another, in order, leaves: where an
    /// offset appears twice, its last page is the one kept; a refused page invalidates its
    /// offset's earlier entry, as a refused store does. Up to [`STORE_BATCH`] pages go in one
    /// batch; a longer slice is served [`STORE_BATCH`] at a time.
    pub fn store_batch(&self, pages: &[(u64, &Page)]) -> Vec<Result<StoreKind, StoreError>> {
        let mut out = Vec::with_capacity(pages.len());
        for chunk in pages.chunks(STORE_BATCH) {
            BATCH_DST.with_borrow_mut(|dst| {
                if dst.is_empty() {
                    dst.resize(STORE_BATCH, [0; PAGE_SIZE]);
                }
                self.store_chunk(chunk, dst, &mut out);
            });
        }
        out
    }

    fn store_chunk(
        &self,
        pages: &[(u64, &Page)],
        dst: &mut [Page],
        out: &mut Vec<Result<StoreKind, StoreError>>,
    ) {
        let c = &self.counters;
        let fills: Vec<Option<u64>> = pages.iter().map(|(_, p)| same_filled_word(p)).collect();
        // One request per page to compress, one fragment each side.
        let mut srcs: Vec<[IoSlice<'_>; 1]> = Vec::with_capacity(pages.len());
        let mut dsts: Vec<[IoSliceMut<'_>; 1]> = Vec::with_capacity(pages.len());
        for (((_, p), fill), d) in pages.iter().zip(&fills).zip(dst.iter_mut()) {
            if fill.is_none() {
                srcs.push([IoSlice::new(&p[..])]);
                dsts.push([IoSliceMut::new(&mut d[..])]);
            }
        }
        let mut reqs: Vec<Request<'_, '_>> = srcs
            .iter()
            .zip(dsts.iter_mut())
            .map(|(s, d)| Request::new(s, d))
            .collect();
        self.tfm.compress_batch(&mut reqs);
        let mut items = Vec::with_capacity(pages.len());
        let mut served = reqs.iter();
        for ((offset, page), fill) in pages.iter().zip(&fills) {
            let res = match fill {
                Some(word) => Ok((State::Filled(*word), StoreKind::SameFilled)),
                None => {
                    let req = served.next().expect("a request per page to compress");
                    let frame = req.outcome().and_then(|r| self.frame_len(r));
                    let data: &[u8] = match frame {
                        Some(len) => &req.dst()[0][..len],
                        None => &page[..],
                    };
                    self.object(*offset, data)
                }
            };
            match res {
                Ok((state, kind)) => {
                    items.push((*offset, Some(state)));
                    out.push(Ok(kind));
                }
                Err(e) => {
                    c.reject_reclaim_fail.fetch_add(1, Relaxed);
                    items.push((*offset, None));
                    out.push(Err(e));
                }
            }
        }
        drop(reqs);
        self.install_batch(items);
    }

    /// The frame's length where compression gave less than a page; else `None` (the page is
    /// kept as it is), the reason counted.
    fn frame_len(&self, res: &Result<usize, acomp::Error>) -> Option<usize> {
        let c = &self.counters;
        match res {
            Ok(dlen) if *dlen < PAGE_SIZE => Some(*dlen),
            Ok(_) => {
                inc(&c.reject_compress_poor);
                None
            }
            Err(e) if e.errno() == libc::ENOSPC => {
                inc(&c.reject_compress_poor);
                None
            }
            Err(_) => {
                inc(&c.reject_compress_fail);
                None
            }
        }
    }

    /// The object of `data` (a frame, shorter than a page, or the page as it is), within
    /// the budget.
    fn object(&self, offset: u64, data: &[u8]) -> Result<(State, StoreKind), StoreError> {
        let mut handle = self.alloc(offset, data.len())?;
        self.pool.write(&mut handle, data);
        let state = State::Pool {
            handle,
            length: data.len() as u16,
            codec: FrameTag::Primary,
        };
        let kind = if data.len() == PAGE_SIZE {
            StoreKind::Incompressible
        } else {
            StoreKind::Compressed
        };
        Ok((state, kind))
    }

    /// `zswap_compress`: one request, one fragment each side, a destination of one page;
    /// then the object, within the budget.
    fn compress(
        &self,
        offset: u64,
        page: &Page,
        dst: &mut Page,
    ) -> Result<(State, StoreKind), StoreError> {
        let res = self
            .tfm
            .compress(&[IoSlice::new(page)], &mut [IoSliceMut::new(dst)]);
        match self.frame_len(&res) {
            Some(len) => self.object(offset, &dst[..len]),
            None => self.object(offset, page),
        }
    }
}
