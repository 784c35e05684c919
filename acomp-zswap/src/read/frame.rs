//! Frames of more than one page (a stored folio's, a recompressed unit's): a frame decoded
//! whole, and one page of it, through the one per-thread cache of decoded frames.
//!
//! - [`Zswap::decode_frame`] decodes a frame into a buffer of its pages: straight from the
//!   object where the frame is one, else gathered into one buffer first (the one-shot path),
//!   as zsmalloc copies an object that straddles pages into a per-CPU buffer to map it.
//! - [`Zswap::read_frame_page`] gives page `k` of a frame. A stored folio's frame, written by
//!   a transform with range reads (zstd), is read up to its page straight into the page
//!   (`decompress_range`), nothing kept. Any other frame goes through [`DECODED`], the
//!   thread's last decoded frame: a page it holds is copied from it; else the frame is
//!   decoded there up to the page (a unit's first page, where its transform has range
//!   reads) or whole (a second page of the same unit, or a transform without range reads),
//!   and the page copied. Frame ids are never reused and a frame's bytes never change, so
//!   the cache is keyed by the id alone.

use std::cell::RefCell;
use std::io::IoSliceMut;

use acomp::{Codec, Segment};

use crate::outcome::{LoadError, LoadKind};
use crate::pool::Handle;
use crate::slab::{Folio, FrameTag};
use crate::stats::inc;
use crate::tier::Zswap;
use crate::{PAGE_SIZE, Page};

thread_local! {
    /// The frame this thread decoded last: its folio's id (0: none), how many of its pages
    /// are decoded (from the first), and those pages.
    static DECODED: RefCell<(u64, usize, Vec<u8>)> = const { RefCell::new((0, 0, Vec::new())) };
    /// A frame kept in several objects, gathered into one buffer for the one-shot path.
    static GATHER: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
}

/// A decode's result as a load's: `Ok` only for exactly `want` bytes.
fn decoded(res: Result<usize, acomp::Error>, want: usize) -> Result<(), LoadError> {
    match res {
        Ok(n) if n == want => Ok(()),
        Ok(n) => Err(LoadError::WrongLength(n)),
        Err(e) => Err(LoadError::Decompress(e)),
    }
}

impl Zswap {
    /// Page `k` of `folio`'s frame, under its entry's lock (see the module's docs: a range
    /// read of the page, or through the thread's decoded frame). A failure is counted in
    /// `decompress_fail`.
    pub(crate) fn read_frame_page(
        &self,
        folio: &Folio,
        k: usize,
        page: &mut Page,
    ) -> Result<LoadKind, LoadError> {
        let tfm = self.transform(folio.codec);
        let range = tfm.codec() == Codec::Zstd;
        let chunks = folio.chunks.read();
        let res = if range && folio.codec == FrameTag::Primary {
            let at = (k * PAGE_SIZE) as u64;
            decoded(
                self.pool.read_frame_sg(&chunks, folio.length, |src| {
                    tfm.decompress_range(src, &mut [Segment::new(at, page)])
                }),
                PAGE_SIZE,
            )
        } else {
            DECODED.with_borrow_mut(|(held, upto, buf)| {
                if *held != folio.id || k >= *upto {
                    let whole = *held == folio.id || !range;
                    let want = if whole { folio.pages } else { k + 1 };
                    *held = 0;
                    buf.resize(buf.len().max(want * PAGE_SIZE), 0);
                    let out = &mut buf[..want * PAGE_SIZE];
                    if whole {
                        self.decode_frame(folio.codec, &chunks, folio.length, out)?;
                    } else {
                        let res = self.pool.read_frame_sg(&chunks, folio.length, |src| {
                            tfm.decompress_range(src, &mut [Segment::new(0, out)])
                        });
                        decoded(res, want * PAGE_SIZE)?;
                    }
                    (*held, *upto) = (folio.id, want);
                }
                page.copy_from_slice(&buf[k * PAGE_SIZE..][..PAGE_SIZE]);
                Ok(())
            })
        };
        res.inspect_err(|_| inc(&self.counters.decompress_fail))
            .map(|()| LoadKind::Folio)
    }

    /// Decodes a frame written by `codec`'s transform into `out`, exactly its bytes: straight
    /// from the object where the frame is one, else gathered into one buffer first (the
    /// one-shot path), as zsmalloc copies an object that straddles pages into a per-CPU
    /// buffer to map it. Not counted: the caller counts a failure.
    pub(crate) fn decode_frame(
        &self,
        codec: FrameTag,
        chunks: &[Handle],
        length: usize,
        out: &mut [u8],
    ) -> Result<(), LoadError> {
        let tfm = self.transform(codec);
        let want = out.len();
        let res = match chunks {
            [one] => self.pool.read_sg(one, length, |src| match src {
                [s] => tfm.decompress_to_buffer(s, out),
                _ => tfm.decompress(src, &mut [IoSliceMut::new(out)]),
            }),
            _ => GATHER.with_borrow_mut(|gather| {
                gather.resize(length, 0);
                self.pool.read_into(chunks, gather);
                tfm.decompress_to_buffer(gather, out)
            }),
        };
        decoded(res, want)
    }
}
