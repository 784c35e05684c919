//! zstd's one-shot decompression: one whole frame into one destination slice, where it
//! gives exactly what the stream path would (`decompress.rs`).

use zstd_safe::DCtx;

use super::decompress::select;
use super::frame::{self, BlockType};
use super::{Digested, Zstd};

impl Zstd {
    /// The one-shot decompression, where it gives exactly the outcome the stream path
    /// would: one whole frame ([`frame::single_frame`]: content size declared, every block
    /// within the block maximum), its window within the limit, into a destination cut to
    /// exactly the content size. `None` leaves the request to the stream path, which also
    /// decides every error, so that errors never depend on the path.
    ///
    /// The cut matters: `ZSTD_decompressDCtx` uses the whole destination it is given as
    /// scratch, parking literals past the current block (`ZSTD_allocateLiteralsBuffer`) and
    /// copying matches 32 bytes at a time (`ZSTD_wildcopy`). In a destination larger than
    /// the output those bytes stay behind; within exactly the output, later output covers
    /// them. A frame without content size gives no such bound, so it streams.
    #[inline(always)]
    pub(super) fn decompress_one_shot<'x>(
        &self,
        dctx: &mut DCtx<'x>,
        dicts: Option<&'x Digested>,
        src: &[u8],
        dst: &mut [u8],
    ) -> Option<usize> {
        let f = frame::single_frame(src)?;
        if f.window > self.params.window_limit() {
            return None;
        }
        let size = usize::try_from(f.content_size)
            .ok()
            .filter(|&s| s <= dst.len())?;
        if let Some(n) = plain_block(&f, src, &mut dst[..size]) {
            return Some(n);
        }
        if let Some(dicts) = dicts {
            select(dctx, dicts, frame::dict_id(src)?).ok()?;
        }
        // zstd checks the content size against the blocks here itself.
        dctx.decompress(&mut dst[..size], src).ok()
    }
}

/// The content of a frame [`frame::single_frame`] accepted that is one raw or RLE block,
/// without checksum or dictionary ID, whose size is the declared content size: copied (raw)
/// or filled (RLE) into `dst` (cut to that size) by acomp itself, as every zstd decoder
/// gives it, without zstd's frame set-up, which costs more than a page's copy. `None` for
/// any other frame, left to zstd.
#[inline]
fn plain_block(f: &frame::OneFrame, src: &[u8], dst: &mut [u8]) -> Option<usize> {
    let (block, start) = f.only_block.filter(|_| !f.dict_or_checksum)?;
    if block.size as usize != dst.len() {
        return None;
    }
    match block.kind {
        BlockType::Raw => dst.copy_from_slice(src.get(start..start + dst.len())?),
        BlockType::Rle => dst.fill(*src.get(start)?),
        BlockType::Compressed => return None,
    }
    Some(dst.len())
}
