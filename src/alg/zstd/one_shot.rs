//! zstd's one-shot decompression: one whole frame into one destination slice, where it
//! gives exactly what the stream path would (`decompress.rs`).

use zstd_safe::DCtx;

use super::dictionary::select;
use super::frame::{self, BlockType};
use super::{Digested, Zstd, one_sequence};

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
        // libzstd's one-shot decoder does not check a block's output against the block
        // maximum (`min(window, 128 KiB)`); its streaming decoder does ("Decompressed Block
        // Size Exceeds Maximum"). Only a frame whose whole content fits one block maximum
        // cannot break that rule; a larger one streams, so that both paths refuse it.
        if f.window > self.params.window_limit() || f.content_size > frame::block_max(f.window) {
            return None;
        }
        let size = usize::try_from(f.content_size)
            .ok()
            .filter(|&s| s <= dst.len())?;
        if let Some(n) = plain_block(&f, src, &mut dst[..size], dicts) {
            return Some(n);
        }
        if let Some(dicts) = dicts {
            select(dctx, dicts, frame::dict_id(src)?).ok()?;
        }
        // zstd checks the content size against the blocks here itself.
        dctx.decompress(&mut dst[..size], src).ok()
    }
}

/// The content of a frame [`frame::single_frame`] accepted that is one block, without
/// checksum or dictionary ID, whose output is the declared content size, where acomp
/// decodes it itself, as every zstd decoder gives it, without zstd's frame set-up (which
/// costs more than a page's copy): a raw block copied, an RLE block filled, a compressed
/// block of one sequence in the predefined codes decoded ([`one_sequence`]: a zero or
/// same-filled page) into `dst` (cut to the content size). `None` for any other frame,
/// left to zstd.
#[inline(always)]
fn plain_block(
    f: &frame::OneFrame,
    src: &[u8],
    dst: &mut [u8],
    dicts: Option<&Digested>,
) -> Option<usize> {
    let (block, start) = f.only_block.filter(|_| !f.dict_or_checksum)?;
    let content = src.get(start..start + block.content_len())?;
    match block.kind {
        BlockType::Raw if block.size as usize == dst.len() => dst.copy_from_slice(content),
        BlockType::Rle if block.size as usize == dst.len() => dst.fill(*content.first()?),
        // Huffman-coded literals (the first byte's low bits 2 or 3: a page that compresses)
        // are zstd's, decided on one byte. A frame without dictionary ID is read with the
        // transform's dictionary of ID 0 where it has one (`select`; a raw-content one, or a
        // structured one of ID 0 with its own repeat offsets): then zstd decodes it. The
        // output is within the block maximum (checked by the caller).
        BlockType::Compressed
            if content.first().is_some_and(|&b| b & 2 == 0)
                && dicts.is_none_or(|d| matches!(d.ddict(0), Ok(None))) =>
        {
            return one_sequence::decode(content, dst);
        }
        _ => return None,
    }
    Some(dst.len())
}
