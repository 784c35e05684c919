//! The store path (`zswap_store`): a page whose bytes are all equal is kept as its fill
//! value (zram's same-filled pages); any other is compressed in one request of one fragment
//! each side into a destination of one page; a compression that fails or gives a page or
//! more keeps the page as it is (zswap since Linux 6.18), the reason counted. The object
//! comes from the shrinker's admission ([`Zswap::alloc`], `shrink.rs`).

use std::cell::RefCell;
use std::io::{IoSlice, IoSliceMut};
use std::sync::atomic::Ordering::Relaxed;

use crate::entry::{FrameTag, State};
use crate::filled::same_filled_word;
use crate::outcome::{StoreError, StoreKind};
use crate::stats::inc;
use crate::tier::Zswap;
use crate::{PAGE_SIZE, Page};

thread_local! {
    /// The destination of compression, one page per thread: the counterpart of the kernel's
    /// per-CPU `acomp_ctx->buffer`.
    static DST: RefCell<Box<Page>> = RefCell::new(Box::new([0; PAGE_SIZE]));
}

impl Zswap {
    /// Stores `page` at `offset` (any `u64`), replacing any entry there.
    ///
    /// # Errors
    ///
    /// [`StoreError::PoolFull`] or [`StoreError::Writeback`] where the pool is at its budget
    /// and no room could be made; the page stays with the caller and the offset's old entry
    /// is invalidated.
    pub fn store(&self, offset: u64, page: &Page) -> Result<(), StoreError> {
        self.store_kind(offset, page).map(|_| ())
    }

    /// [`Zswap::store`], telling how the page was kept.
    ///
    /// # Errors
    ///
    /// As [`Zswap::store`].
    pub fn store_kind(&self, offset: u64, page: &Page) -> Result<StoreKind, StoreError> {
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

    /// `zswap_compress`: one request, one fragment each side, a destination of one page;
    /// then the object, within the budget.
    fn compress(
        &self,
        offset: u64,
        page: &Page,
        dst: &mut Page,
    ) -> Result<(State, StoreKind), StoreError> {
        let c = &self.counters;
        let res = self
            .tfm
            .compress(&[IoSlice::new(page)], &mut [IoSliceMut::new(dst)]);
        let frame = match res {
            Ok(dlen) if dlen < PAGE_SIZE => Some(&dst[..dlen]),
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
        };
        let data: &[u8] = frame.unwrap_or(page);
        let handle = self.alloc(offset, data.len())?;
        self.pool.write(&handle, data);
        let incompressible = frame.is_none();
        let state = State::Pool {
            handle,
            length: data.len() as u32,
            incompressible,
            codec: FrameTag::Primary,
        };
        let kind = if incompressible {
            StoreKind::Incompressible
        } else {
            StoreKind::Compressed
        };
        Ok((state, kind))
    }
}
