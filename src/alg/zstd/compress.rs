//! zstd compression: the one-shot path on the workspace's persistent CCtx, and the stream
//! path, which writes the same frame on every cut.

use zstd_safe::zstd_sys::ZSTD_EndDirective;
use zstd_safe::{CCtx, InBuffer, OutBuffer, ResetDirective};

use super::frame::BLOCK_SIZE_MAX;
use super::sink::{Destination, Sink};
use super::{ZstdParams, zstd_error};
use crate::alg::grow_buffer;
use crate::{Error, Walk};

/// Largest source the one-shot compression takes: one block (`ZSTD_BLOCKSIZE_MAX`, or the
/// transform's [`ZstdParams::block_size_max`]). Up to here `ZSTD_compress2` writes the same
/// frame as the stream path; beyond, its one-pass block splitting gives other bytes, and the
/// frame must not depend on the cut.
#[inline]
pub(super) fn one_shot_compress_max(params: &ZstdParams) -> usize {
    params
        .block_size_max
        .map_or(BLOCK_SIZE_MAX, u64::from)
        .min(BLOCK_SIZE_MAX) as usize
}

/// `ZSTD_compressBound` for a source of at most one block (`ZSTD_COMPRESSBOUND` in
/// `zstd.h`), computed here rather than through a call: the one-shot path runs it on every
/// request.
#[inline]
fn one_block_bound(len: usize) -> usize {
    debug_assert!(len as u64 <= BLOCK_SIZE_MAX);
    let block = BLOCK_SIZE_MAX as usize;
    len + (len >> 8) + (block.saturating_sub(len) >> 11)
}

/// The one-shot compression: `ZSTD_compress2` on the persistent context, with room for
/// `ZSTD_compressBound` bytes. Given less, zstd refuses some frames that would fit (it wants
/// room for a compressed block before it falls back to a raw one) and encodes others
/// otherwise; the stream path always has that room (zstd's own buffer), so the frame would
/// depend on the cut. A destination smaller than the bound gets the frame through `frame`,
/// a buffer of the workspace, and a copy of it when it fits.
#[inline(always)]
pub(super) fn compress_one_shot(
    cctx: &mut CCtx<'_>,
    frame: &mut Vec<u8>,
    src: &[u8],
    dst: &mut [u8],
) -> Result<usize, Error> {
    let bound = one_block_bound(src.len());
    let capacity = dst.len();
    let zerr = |c| zstd_error(c, capacity);
    if dst.len() >= bound {
        return cctx.compress2(dst, src).map_err(zerr);
    }
    let frame = grow_buffer(frame, bound)?;
    let n = cctx.compress2(frame, src).map_err(zerr)?;
    let out = dst.get_mut(..n).ok_or(Error::NoSpace {
        needed: Some(n as u64),
        capacity,
    })?;
    out.copy_from_slice(&frame[..n]);
    Ok(n)
}

/// Compresses fragment by fragment: starts the stream (session reset and pledged source
/// size, the kernel's `zstd_init_cstream`), feeds each source fragment, and ends the frame
/// across as many destination fragments as it needs. Past a full destination the frame goes
/// on into `scratch` ([`Destination`], as decompression's), only to count it: the error is then `ENOSPC` with the frame's exact
/// size, as the one-shot path gives it.
///
/// Data goes in with `ZSTD_e_continue` and the frame ends with an empty `ZSTD_e_end`: zstd
/// then always buffers whole blocks, so the frame is the same however the source is cut.
/// (Given all the data with `ZSTD_e_end` and room for `ZSTD_compressBound`, zstd compresses
/// it in one pass instead, which gives other bytes on inputs of more than a block.)
pub(super) fn compress_stream(
    cctx: &mut CCtx<'_>,
    scratch: &mut [u8],
    walk: &mut Walk<'_, '_>,
) -> Result<(), Error> {
    let zerr = |c, walk: &Walk<'_, '_>| zstd_error(c, walk.dlen());
    cctx.reset(ResetDirective::SessionOnly)
        .map_err(|c| zerr(c, walk))?;
    cctx.set_pledged_src_size(Some(walk.slen() as u64))
        .map_err(|c| zerr(c, walk))?;
    let mut sink = Destination::default();
    loop {
        let src = walk.next_src();
        let mode = if src.is_empty() {
            ZSTD_EndDirective::ZSTD_e_end
        } else {
            ZSTD_EndDirective::ZSTD_e_continue
        };
        let mut input = InBuffer::around(src);
        let mut output = OutBuffer::around(sink.chunk(walk, scratch));
        let ret = cctx.compress_stream2(&mut output, &mut input, mode);
        let (used, wrote) = (input.pos(), output.pos());
        walk.done_src(used);
        sink.done(walk, wrote);
        let left = ret.map_err(|c| zerr(c, walk))?;
        if src.is_empty() && left == 0 {
            return sink.finish(walk);
        }
        if used == 0 && wrote == 0 {
            // zstd can neither take input nor write, with room to write: never seen; an
            // error rather than a loop, and not one a larger destination would mend.
            return Err(Error::InvalidParameter {
                reason: "zstd made no progress compressing the source (please report)".to_owned(),
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_block_bound_is_zstds() {
        for len in (0..=BLOCK_SIZE_MAX as usize)
            .step_by(7)
            .chain([4096, 131_071, 131_072])
        {
            assert_eq!(
                one_block_bound(len),
                zstd_safe::compress_bound(len),
                "{len}"
            );
        }
    }
}
