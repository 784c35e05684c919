//! zstd: the first algorithm, after the kernel's `crypto/zstd.c`.
//!
//! One concept per file: [`ZstdParams`] (`params.rs`), the frame format as acomp reads it
//! (`frame.rs`), compression (`compress.rs`), decompression: one-shot (`one_shot.rs`),
//! stream and range reads (`decompress.rs`), zstd's seekable format (`seekable/`: the seek
//! table, and range reads that decode only the frames they touch). This file holds the [`Algorithm`] impl and
//! the workspace.
//!
//! # Where libzstd's paths disagree, and what acomp does
//!
//! libzstd's one-shot and streaming calls, and its streaming decoder fed whole or in pieces,
//! do not always agree. acomp makes every path and every cut give the same outcome; each
//! row is pinned by a test.
//!
//! | libzstd behaviour | what acomp does | where |
//! | --- | --- | --- |
//! | `ZSTD_compress2` on more than one block (128 KiB, or `ZstdParams::block_size_max`) writes other bytes than streaming does | one-shot compression up to one block; beyond, the stream path, fed with `ZSTD_e_continue` and ended with an empty `ZSTD_e_end` so that no call compresses in one pass | `compress::compress_stream` |
//! | `ZSTD_compress2` into less than `ZSTD_compressBound` refuses some frames that would fit, while streaming writes them | the one-shot compression always has the bound's room: the destination where it is that large, else a workspace buffer and a copy | `compress::compress_one_shot` |
//! | `ZSTD_decompressDCtx` uses the whole destination as scratch (literals parked past the block, 32-byte wild copies) | one-shot decompression only for a frame with its content size in the header, into a destination cut to exactly that size; other frames stream | `Zstd::decompress_one_shot` |
//! | `ZSTD_decompressDCtx` does not check a block's decompressed size against `Block_Maximum_Size`; the streaming decoder does ("Decompressed Block Size Exceeds Maximum") | one-shot decompression only for a frame whose content fits one block maximum; a larger frame streams, and a block that overflows is `EBADMSG` on every cut | `Zstd::decompress_one_shot` |
//! | the streaming decoder's single-pass shortcut skips the window check (`ZSTD_d_windowLogMax`) and writes like the one-shot decoder | acomp reads each frame header itself (across fragments), checks the window, and feeds zstd the header alone | `Zstd::open_frame` |
//! | a block larger than `Block_Maximum_Size = min(window, 128 KiB)`: the one-shot decoder takes a raw or RLE one; the streaming decoder refuses it in small pieces and takes it whole | `EBADMSG` everywhere: acomp reads every block header before zstd sees the block, and the one-shot scan refuses such a frame so that it streams | `BlockHeader::check` (in `FrameCursor::next_block`, `frame::single_frame`) |
//! | a frame whose blocks give other than its declared content size: the one-shot decoder refuses it; the streaming decoder, fed in pieces, skips the check after an empty last block | `EBADMSG` everywhere: acomp counts each frame's output and checks it against the header, also mid-frame | `Zstd::stream_frames`, `FrameCursor::finish` |
//! | a compressed block shorter than its two section headers (2 bytes, `MIN_CBLOCK_SIZE`): the one-shot decoder refuses it; the streaming decoder, fed block by block, skips a block of size 0 whatever its type | `EBADMSG` everywhere: acomp checks each block header before zstd sees the block | `BlockHeader::check` |
//! | a frame with several faults: the streaming decoder reports the first it checks (the dictionary ID before the window: "Dictionary mismatch" where acomp said `WindowTooLarge`), the one-shot decoder others | one rule on every path: `EBADMSG` before `EINVAL` before `ENOSPC`, the first in reading order within a kind; a frame over the window limit is read to its end without decoding (header, block headers, length, content size) before `EINVAL` | `Zstd::stream_frames`, `FrameCursor::skip` |
//! | a frame naming a dictionary ID the DCtx lacks: "Dictionary mismatch" | acomp checks the ID itself on every transform, with or without dictionaries: "frame names a dictionary this transform lacks" | `Zstd::open_frame` |
//! | bytes after the last frame that are no frame: "Unknown frame descriptor" | [`Error::TrailingBytes`] with their count; a source that starts with no frame: "not a zstd frame: no magic number" | `frame::header_error` |
//! | truncated input: an error one-shot, a "need more input" hint streaming | input that ends inside a frame (by acomp's own reading of its blocks) is `EBADMSG` | `Zstd::stream_frames` |
//! | a destination too small: `dstSize_tooSmall` even when the rest of the source is corrupt | the stream path decodes the rest into a 4 KiB scratch buffer: `ENOSPC` with the exact size needed only if it is valid | `Zstd::decompress_stream` |
//! | the streaming decoder reports `dstSize_tooSmall` for some corrupt frames, depending on how the input is chunked | on the stream path that code is corrupt input: zstd's own buffer fits any valid frame | `Zstd::stream_frames` |
//! | a corrupt frame without checksum may decode "successfully" on one CPU and fail on another (zstd picks its Huffman decoder by CPU) | nothing to do but say it: use [`ZstdParams::checksum`] where corruption must be caught | — |

mod compress;
mod decompress;
pub(crate) mod dictionary;
mod frame;
mod one_sequence;
mod one_shot;
pub(crate) mod params;
pub(crate) mod seekable;

use std::io::IoSlice;
use std::sync::Arc;

use zstd_safe::zstd_sys::ZSTD_ErrorCode as Code;
use zstd_safe::{CCtx, DCtx, ResetDirective};

pub(crate) use self::dictionary::Digested;
use self::params::ZstdParams;
use super::{Algorithm, grow_buffer, walk_slices};
use crate::Dictionary;
use crate::Path;
use crate::sys::WithDicts;
use crate::{Error, Segment, Walk, probe};

/// Size of a workspace's scratch buffer: one page.
const SCRATCH_BYTES: usize = 4096;

/// The zstd algorithm with fixed parameters.
#[derive(Debug, Clone)]
pub struct Zstd {
    params: ZstdParams,
    /// The dictionaries, digested once; every workspace's contexts reference them.
    dicts: Option<Arc<Digested>>,
}

impl Zstd {
    /// zstd with these parameters.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidParameter`] where a parameter is out of range or two different
    /// dictionaries have the same ID; [`Error::NoMemory`] where a dictionary cannot be
    /// digested.
    pub fn new(params: ZstdParams) -> Result<Self, Error> {
        params.validate()?;
        let dicts = Digested::new(&params)?;
        Ok(Zstd { params, dicts })
    }

    /// The parameters.
    #[cfg_attr(not(feature = "unstable-algorithm"), allow(dead_code))] // for algorithm writers
    pub fn params(&self) -> &ZstdParams {
        &self.params
    }

    /// Early rejection, where it is on: `ENOSPC` without `needed` for a source the probe
    /// finds incompressible, into a destination no larger than it.
    #[inline]
    fn reject(&self, src: &[IoSlice<'_>], slen: usize, dlen: usize) -> Result<(), Error> {
        if self.params.early_rejection && dlen <= slen && probe::incompressible(src, slen) {
            return Err(Error::NoSpace {
                needed: None,
                capacity: dlen,
            });
        }
        Ok(())
    }
}

/// Maps a zstd error code to an [`Error`]. `capacity` is the destination's size, for
/// `dstSize_tooSmall`.
pub(crate) fn zstd_error(code: usize, capacity: usize) -> Error {
    let is = |kind| zstd_safe::is_error_kind(code, kind);
    if is(Code::ZSTD_error_dstSize_tooSmall) {
        Error::NoSpace {
            needed: None,
            capacity,
        }
    } else if is(Code::ZSTD_error_memory_allocation) {
        Error::NoMemory
    } else if is(Code::ZSTD_error_parameter_unsupported)
        || is(Code::ZSTD_error_parameter_outOfBound)
        || is(Code::ZSTD_error_parameter_combination_unsupported)
    {
        Error::InvalidParameter {
            reason: zstd_safe::get_error_name(code).to_owned(),
        }
    } else {
        // Everything else is something zstd found wrong in the input, including a frame
        // that needs a dictionary ("Dictionary mismatch"): no destination helps.
        Error::Corrupt {
            detail: zstd_safe::get_error_name(code),
        }
    }
}

/// A zstd workspace: a persistent CCtx and DCtx, each created on first use with the
/// transform's parameters set once (and referencing the transform's digested dictionaries,
/// never a copy), a one-page scratch buffer, and the frame buffer of the one-shot
/// compression.
pub struct ZstdWorkspace {
    cctx: Option<WithDicts<CCtx<'static>>>,
    dctx: Option<WithDicts<DCtx<'static>>>,
    /// Where output goes that has no destination: the part of a range read before or
    /// between segments, and output past a full destination while the rest is checked.
    scratch: Box<[u8]>,
    /// Where a one-shot compression into a destination smaller than `ZSTD_compressBound`
    /// writes its frame; grown on first need, up to the bound of one block.
    frame: Vec<u8>,
}

impl std::fmt::Debug for ZstdWorkspace {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ZstdWorkspace")
            .field("cctx", &self.cctx.is_some())
            .field("dctx", &self.dctx.is_some())
            .finish()
    }
}

impl Algorithm for Zstd {
    type Workspace = ZstdWorkspace;

    fn name(&self) -> &'static str {
        "zstd"
    }

    fn new_workspace(&self) -> Result<ZstdWorkspace, Error> {
        let mut scratch = Vec::new();
        grow_buffer(&mut scratch, SCRATCH_BYTES)?;
        Ok(ZstdWorkspace {
            cctx: None,
            dctx: None,
            scratch: scratch.into_boxed_slice(),
            frame: Vec::new(),
        })
    }

    fn compress(&self, ws: &mut ZstdWorkspace, walk: &mut Walk<'_, '_>) -> Result<Path, Error> {
        self.reject(walk.src_fragments(), walk.slen(), walk.dlen())?;
        let cctx = compress::cctx(&self.params, &self.dicts, &mut ws.cctx)?;
        let (frame, scratch) = (&mut ws.frame, &mut ws.scratch);
        let one_shot_max = compress::one_shot_compress_max(&self.params);
        cctx.with(|cctx, _| {
            if walk.slen() <= one_shot_max {
                if let Some((src, dst)) = walk.one_shot() {
                    let n = compress::compress_one_shot(cctx, frame, src, dst)?;
                    walk.done_src(src.len());
                    walk.done_dst(n);
                    return Ok(Path::OneShot);
                }
            }
            compress::compress_stream(cctx, scratch, walk)?;
            Ok(Path::Stream)
        })
    }

    #[inline(always)]
    fn compress_slices(
        &self,
        ws: &mut ZstdWorkspace,
        src: &[u8],
        dst: &mut [u8],
    ) -> Result<(usize, Path), Error> {
        if src.len() > compress::one_shot_compress_max(&self.params) {
            return walk_slices(src, dst, |walk| self.compress(ws, walk));
        }
        self.reject(&[IoSlice::new(src)], src.len(), dst.len())?;
        let cctx = compress::cctx(&self.params, &self.dicts, &mut ws.cctx)?;
        let frame = &mut ws.frame;
        let n = cctx.with(|cctx, _| compress::compress_one_shot(cctx, frame, src, dst))?;
        Ok((n, Path::OneShot))
    }

    fn decompress(&self, ws: &mut ZstdWorkspace, walk: &mut Walk<'_, '_>) -> Result<Path, Error> {
        let dctx = decompress::dctx(&self.params, &self.dicts, &mut ws.dctx)?;
        let scratch = &mut ws.scratch;
        dctx.with(|dctx, dicts| {
            if let Some((src, dst)) = walk.one_shot() {
                if let Some(n) = self.decompress_one_shot(dctx, dicts, src, dst) {
                    walk.done_src(src.len());
                    walk.done_dst(n);
                    return Ok(Path::OneShot);
                }
            }
            self.decompress_stream(dctx, dicts, scratch, walk)?;
            Ok(Path::Stream)
        })
    }

    #[inline(always)]
    fn decompress_slices(
        &self,
        ws: &mut ZstdWorkspace,
        src: &[u8],
        dst: &mut [u8],
    ) -> Result<(usize, Path), Error> {
        let dctx = decompress::dctx(&self.params, &self.dicts, &mut ws.dctx)?;
        let scratch = &mut ws.scratch;
        dctx.with(|dctx, dicts| {
            if let Some(n) = self.decompress_one_shot(dctx, dicts, src, &mut *dst) {
                return Ok((n, Path::OneShot));
            }
            walk_slices(src, dst, |walk| {
                self.decompress_stream(dctx, dicts, scratch, walk)?;
                Ok(Path::Stream)
            })
        })
    }

    fn decompress_range(
        &self,
        ws: &mut ZstdWorkspace,
        walk: &mut Walk<'_, '_>,
        segments: &mut [Segment<'_>],
    ) -> Result<u64, Error> {
        let dctx = decompress::dctx(&self.params, &self.dicts, &mut ws.dctx)?;
        let scratch = &mut ws.scratch;
        dctx.with(|dctx, dicts| {
            // A source that ends with a seek table: only the frames the segments touch.
            if let Some(table) = seekable::SeekTable::find(walk)? {
                return self.seekable_range(dctx, dicts, scratch, walk, &table, segments);
            }
            Zstd::decompress_range(self, dctx, dicts, scratch, walk, segments, None)
        })
    }

    fn compress_bound(&self, slen: usize) -> usize {
        zstd_safe::compress_bound(slen)
    }

    fn content_size(&self, walk: &mut Walk<'_, '_>) -> Result<Option<u64>, Error> {
        // A source that ends with a seek table: the content of all its frames.
        if let Some(table) = seekable::SeekTable::find(walk)? {
            return table.content_size(walk).map(Some);
        }
        frame::content_size(walk)
    }

    fn reset(&self, ws: &mut ZstdWorkspace) {
        // A session reset cannot fail; a failure here would surface on the next request.
        // It keeps referenced dictionaries (a parameter reset would drop them).
        if let Some(c) = ws.cctx.as_mut() {
            c.with(|c, _| {
                let _ = c.reset(ResetDirective::SessionOnly);
            });
        }
        if let Some(d) = ws.dctx.as_mut() {
            d.with(|d, _| {
                let _ = d.reset(ResetDirective::SessionOnly);
            });
        }
    }

    fn workspace_bytes(&self, ws: &ZstdWorkspace) -> usize {
        ws.cctx.as_ref().map_or(0, |c| c.ctx().sizeof())
            + ws.dctx.as_ref().map_or(0, |d| d.ctx().sizeof())
            + ws.scratch.len()
            + ws.frame.capacity()
    }

    fn dictionary_bytes(&self) -> usize {
        self.dicts.as_ref().map_or(0, |d| d.bytes())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zstd_codes_map_to_kinds() {
        let code = |c: Code| (c as usize).wrapping_neg();
        assert_eq!(
            zstd_error(code(Code::ZSTD_error_dstSize_tooSmall), 7),
            Error::NoSpace {
                needed: None,
                capacity: 7
            }
        );
        assert_eq!(
            zstd_error(code(Code::ZSTD_error_checksum_wrong), 0),
            Error::Corrupt {
                detail: "Restored data doesn't match checksum"
            }
        );
        assert_eq!(
            zstd_error(code(Code::ZSTD_error_dictionary_wrong), 0).errno(),
            libc::EBADMSG
        );
        assert_eq!(
            zstd_error(code(Code::ZSTD_error_memory_allocation), 0),
            Error::NoMemory
        );
        assert_eq!(
            zstd_error(code(Code::ZSTD_error_parameter_outOfBound), 0).errno(),
            libc::EINVAL
        );
    }
}
