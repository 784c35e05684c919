//! zstd: the first algorithm, after the kernel's `crypto/zstd.c`.

use zstd_safe::zstd_sys::{ZSTD_EndDirective, ZSTD_ErrorCode};
use zstd_safe::{CCtx, CParameter, DCtx, DParameter, InBuffer, OutBuffer, ResetDirective};

use super::{Algorithm, Path};
use crate::segment::SegmentCursor;
use crate::sys::{self, FrameHeader};
use crate::{Error, Segment, Walk};

/// The kernel's `ZSTD_DEF_LEVEL`.
pub const DEFAULT_LEVEL: i32 = 3;

/// The default largest window a frame may ask for, as a log: 2^23 = 8 MiB, enough for every
/// frame the reference CLI writes without `--ultra` or `--long`.
pub const DEFAULT_WINDOW_LOG_MAX: u32 = 23;

/// Smallest and largest window logs zstd's format allows (`ZSTD_WINDOWLOG_ABSOLUTEMIN`,
/// `ZSTD_WINDOWLOG_MAX_64`).
const WINDOW_LOG_RANGE: std::ops::RangeInclusive<u32> = 10..=31;

/// Longest frame header (`ZSTD_FRAMEHEADERSIZE_MAX`).
const FRAME_HEADER_MAX: usize = 18;

/// Header of a skippable frame: magic and size (`ZSTD_SKIPPABLEHEADERSIZE`).
const SKIPPABLE_HEADER: usize = 8;

/// Largest source the one-shot compression takes: one block (`ZSTD_BLOCKSIZE_MAX`). Up to
/// here `ZSTD_compress2` writes the same frame as the stream path; beyond, its one-pass
/// block splitting gives other bytes, and the frame must not depend on the cut.
const ONE_SHOT_COMPRESS_MAX: usize = 128 * 1024;

/// Size of a workspace's scratch buffer: one page.
const SCRATCH_BYTES: usize = 4096;

/// zstd parameters of a transform (the kernel's `zstd_parameters`, plus the window limit of
/// `ZSTD_d_windowLogMax`). Build with [`Default`] and the setters.
///
/// ```
/// let params = acomp::ZstdParams::default().level(-5).checksum(true).window_log_max(27);
/// let tfm = acomp::Acomp::with_zstd(params).unwrap();
/// # let _ = tfm;
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ZstdParams {
    level: i32,
    checksum: bool,
    content_size: bool,
    window_log_max: u32,
}

impl Default for ZstdParams {
    /// Level 3, no checksum, content size in the header, window log limit 23.
    fn default() -> Self {
        ZstdParams {
            level: DEFAULT_LEVEL,
            checksum: false,
            content_size: true,
            window_log_max: DEFAULT_WINDOW_LOG_MAX,
        }
    }
}

impl ZstdParams {
    /// Compression level (`ZSTD_c_compressionLevel`): from `zstd_safe::min_c_level()`
    /// (negative: faster) to `zstd_safe::max_c_level()` (22); 0 means zstd's default, 3.
    pub fn level(mut self, level: i32) -> Self {
        self.level = level;
        self
    }

    /// Whether frames end with an XXH64 checksum of their content (`ZSTD_c_checksumFlag`).
    pub fn checksum(mut self, on: bool) -> Self {
        self.checksum = on;
        self
    }

    /// Whether frame headers carry the content size (`ZSTD_c_contentSizeFlag`).
    pub fn content_size(mut self, on: bool) -> Self {
        self.content_size = on;
        self
    }

    /// The largest window a frame may ask for when decompressing, as a log of bytes
    /// (`ZSTD_d_windowLogMax`): 10 to 31. A frame asking for more fails with
    /// [`Error::WindowTooLarge`] on every path. The limit bounds the memory a frame can make
    /// a workspace take on the stream path (about the window plus two blocks: a limit of 31
    /// lets a frame of a few bytes make it reserve 2 GiB). Compression keeps to it too
    /// (`ZSTD_c_windowLog`, where the level would use a larger window), so a transform
    /// reads back every frame it writes.
    pub fn window_log_max(mut self, log: u32) -> Self {
        self.window_log_max = log;
        self
    }

    /// The largest window a frame may ask for, in bytes (saturating at `u64::MAX` for a
    /// log that [`Acomp::with_zstd`](crate::Acomp::with_zstd) would refuse anyway).
    pub fn window_limit(&self) -> u64 {
        1u64.checked_shl(self.window_log_max).unwrap_or(u64::MAX)
    }

    pub(crate) fn validate(&self) -> Result<(), Error> {
        let levels = zstd_safe::min_c_level()..=zstd_safe::max_c_level();
        if !levels.contains(&self.level) {
            return Err(Error::InvalidParameter {
                reason: format!("zstd level {} outside {levels:?}", self.level),
            });
        }
        if !WINDOW_LOG_RANGE.contains(&self.window_log_max) {
            return Err(Error::InvalidParameter {
                reason: format!(
                    "zstd window log {} outside {WINDOW_LOG_RANGE:?}",
                    self.window_log_max
                ),
            });
        }
        Ok(())
    }
}

/// The zstd algorithm with fixed parameters.
#[derive(Debug, Clone)]
pub struct Zstd {
    params: ZstdParams,
}

impl Zstd {
    /// zstd with these parameters.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidParameter`] where a parameter is out of range.
    pub fn new(params: ZstdParams) -> Result<Self, Error> {
        params.validate()?;
        Ok(Zstd { params })
    }

    /// The parameters.
    pub fn params(&self) -> &ZstdParams {
        &self.params
    }

    fn cctx<'w>(
        params: &ZstdParams,
        slot: &'w mut Option<CCtx<'static>>,
    ) -> Result<&'w mut CCtx<'static>, Error> {
        if slot.is_none() {
            let mut cctx = CCtx::try_create().ok_or(Error::NoMemory)?;
            for param in [
                CParameter::CompressionLevel(params.level),
                CParameter::ChecksumFlag(params.checksum),
                CParameter::ContentSizeFlag(params.content_size),
            ] {
                cctx.set_parameter(param)
                    .map_err(|c| Error::from_zstd(c, 0))?;
            }
            // Never write a frame this transform would refuse to read back: levels from 20
            // on ask for windows of up to 2^27 bytes on large sources.
            if sys::level_window_log(params.level) > params.window_log_max {
                cctx.set_parameter(CParameter::WindowLog(params.window_log_max))
                    .map_err(|c| Error::from_zstd(c, 0))?;
            }
            *slot = Some(cctx);
        }
        Ok(slot.as_mut().expect("created above"))
    }

    fn dctx<'w>(
        params: &ZstdParams,
        slot: &'w mut Option<DCtx<'static>>,
    ) -> Result<&'w mut DCtx<'static>, Error> {
        if slot.is_none() {
            let mut dctx = DCtx::try_create().ok_or(Error::NoMemory)?;
            dctx.set_parameter(DParameter::WindowLogMax(params.window_log_max))
                .map_err(|c| Error::from_zstd(c, 0))?;
            *slot = Some(dctx);
        }
        Ok(slot.as_mut().expect("created above"))
    }

    /// The one-shot compression: `ZSTD_compress2` on the persistent context, with room for
    /// `ZSTD_compressBound` bytes. Given less, zstd refuses some frames that would fit (it
    /// wants room for a compressed block before it falls back to a raw one) and encodes
    /// others otherwise; the stream path always has that room (zstd's own buffer), so the
    /// frame would depend on the cut. A destination smaller than the bound gets the frame
    /// through `frame`, a buffer of the workspace, and a copy of it when it fits.
    fn compress_one_shot(
        cctx: &mut CCtx<'static>,
        frame: &mut Vec<u8>,
        src: &[u8],
        dst: &mut [u8],
    ) -> Result<usize, Error> {
        let bound = zstd_safe::compress_bound(src.len());
        let capacity = dst.len();
        let zerr = |c| Error::from_zstd(c, capacity);
        if dst.len() >= bound {
            return cctx.compress2(dst, src).map_err(zerr);
        }
        if frame.len() < bound {
            frame
                .try_reserve_exact(bound - frame.len())
                .map_err(|_| Error::NoMemory)?;
            frame.resize(bound, 0);
        }
        let n = cctx.compress2(&mut frame[..bound], src).map_err(zerr)?;
        let out = dst.get_mut(..n).ok_or(Error::NoSpace {
            needed: None,
            capacity,
        })?;
        out.copy_from_slice(&frame[..n]);
        Ok(n)
    }

    /// Compresses fragment by fragment: starts the stream (session reset and pledged
    /// source size, the kernel's `zstd_init_cstream`), feeds each source fragment, and ends
    /// the frame across as many destination fragments as it needs.
    ///
    /// Data goes in with `ZSTD_e_continue` and the frame ends with an empty `ZSTD_e_end`:
    /// zstd then always buffers whole blocks, so the frame is the same however the source
    /// is cut. (Given all the data with `ZSTD_e_end` and room for `ZSTD_compressBound`,
    /// zstd compresses it in one pass instead, which gives other bytes on inputs of more than
    /// a block.)
    fn compress_stream(cctx: &mut CCtx<'static>, walk: &mut Walk<'_, '_>) -> Result<(), Error> {
        let zerr = |c, walk: &Walk<'_, '_>| Error::from_zstd(c, walk.dlen());
        cctx.reset(ResetDirective::SessionOnly)
            .map_err(|c| zerr(c, walk))?;
        cctx.set_pledged_src_size(Some(walk.slen() as u64))
            .map_err(|c| zerr(c, walk))?;
        loop {
            let src = walk.next_src();
            let mode = if src.is_empty() {
                ZSTD_EndDirective::ZSTD_e_end
            } else {
                ZSTD_EndDirective::ZSTD_e_continue
            };
            let mut input = InBuffer::around(src);
            let mut output = OutBuffer::around(walk.next_dst());
            let ret = cctx.compress_stream2(&mut output, &mut input, mode);
            let (used, wrote) = (input.pos(), output.pos());
            walk.done_src(used);
            walk.done_dst(wrote);
            let left = ret.map_err(|c| zerr(c, walk))?;
            if src.is_empty() && left == 0 {
                return Ok(());
            }
            if used == 0 && wrote == 0 {
                // zstd can neither take input nor write: the destination is full.
                return Err(Error::NoSpace {
                    needed: None,
                    capacity: walk.dlen(),
                });
            }
        }
    }

    /// The one-shot decompression, where it gives exactly the outcome the stream path
    /// would: one whole frame (see [`single_frame`]), with its window within the limit and
    /// its content size in the header, into a destination cut to exactly that size. `None`
    /// leaves the request to the stream path, which also decides every error, so that errors
    /// never depend on the path.
    ///
    /// The cut matters: `ZSTD_decompressDCtx` uses the whole destination it is given as
    /// scratch, parking literals past the current block (`ZSTD_allocateLiteralsBuffer`) and
    /// copying matches 32 bytes at a time (`ZSTD_wildcopy`). In a destination larger than
    /// the output those bytes stay behind; within exactly the output, later output covers
    /// them. A frame without content size gives no such bound, so it streams.
    fn decompress_one_shot(
        &self,
        dctx: &mut DCtx<'static>,
        src: &[u8],
        dst: &mut [u8],
    ) -> Option<usize> {
        let (content_size, window) = single_frame(src)?;
        if window > self.params.window_limit() {
            return None;
        }
        let size = usize::try_from(content_size)
            .ok()
            .filter(|&s| s <= dst.len())?;
        dctx.decompress(&mut dst[..size], src).ok()
    }

    /// Decompresses fragment by fragment, straight into each destination fragment in turn.
    /// Output past the end of the destination goes to the scratch buffer, only to learn
    /// whether the rest of the source is valid: then the error is `ENOSPC` with the size
    /// needed, else the source's own error.
    fn decompress_stream(
        &self,
        dctx: &mut DCtx<'static>,
        scratch: &mut [u8],
        walk: &mut Walk<'_, '_>,
    ) -> Result<(), Error> {
        let mut overflow = 0;
        self.stream_frames(dctx, scratch, walk, &mut Target::Dst(&mut overflow))?;
        if overflow > 0 {
            return Err(Error::NoSpace {
                needed: Some(walk.produced() as u64 + overflow),
                capacity: walk.dlen(),
            });
        }
        Ok(())
    }

    /// The stream path: decodes the walk's source frame by frame into `target`.
    ///
    /// Starts the stream (session reset: the kernel's `zstd_init_dstream`, deferred to the
    /// first request that streams; it sits outside the loop, so no flag is needed to run it
    /// once). Then, at the start of each frame, reads its header across fragments, checks
    /// its window against the limit, and hands zstd the header alone, so that zstd's
    /// single-pass shortcut (which skips the window check and uses the whole output buffer
    /// as scratch) never runs. Goes on through concatenated and skippable frames; a range
    /// read stops after the first frame, or as soon as its last segment is full. Input
    /// that ends inside a frame is corrupt.
    fn stream_frames(
        &self,
        dctx: &mut DCtx<'static>,
        scratch: &mut [u8],
        walk: &mut Walk<'_, '_>,
        target: &mut Target<'_, '_, '_>,
    ) -> Result<(), Error> {
        // zstd's streaming decoder writes into its own buffer, sized for any valid frame:
        // its "destination too small" means a frame whose sizes contradict each other.
        // (acomp finds a full destination itself, through the scratch buffer.)
        let zerr = |c, walk: &Walk<'_, '_>| match Error::from_zstd(c, walk.dlen()) {
            Error::NoSpace { .. } => Error::Corrupt {
                zstd_error: zstd_safe::get_error_name(c),
            },
            e => e,
        };
        dctx.reset(ResetDirective::SessionOnly)
            .map_err(|c| zerr(c, walk))?;
        let mut header_left = 0;
        // Whether the current frame is skippable; `None` between frames.
        let mut frame: Option<bool> = None;
        loop {
            let skippable = match frame {
                Some(skippable) => skippable,
                None if walk.src_remaining() == 0 => return Ok(()),
                None => {
                    let (size, skippable) = self.check_frame_header(walk)?;
                    header_left = size;
                    *frame.insert(skippable)
                }
            };
            let src = walk.next_src();
            let feed = if header_left > 0 {
                &src[..src.len().min(header_left)]
            } else {
                src
            };
            let into_scratch = matches!(target, Target::Dst(_)) && walk.dst_remaining() == 0;
            let out: &mut [u8] = match target {
                Target::Dst(_) if into_scratch => scratch,
                Target::Dst(_) => walk.next_dst(),
                Target::Range(cursor) => match cursor.chunk(scratch) {
                    Some(chunk) => chunk,
                    None => return Ok(()), // every segment is full: decode no further
                },
            };
            let out_len = out.len();
            let mut input = InBuffer::around(feed);
            let mut output = OutBuffer::around(out);
            let ret = dctx.decompress_stream(&mut output, &mut input);
            let (used, wrote) = (input.pos(), output.pos());
            walk.done_src(used);
            header_left -= used.min(header_left);
            match target {
                Target::Dst(overflow) if into_scratch => **overflow += wrote as u64,
                Target::Dst(_) => walk.done_dst(wrote),
                Target::Range(cursor) => cursor.done(wrote),
            }
            let hint = ret.map_err(|c| zerr(c, walk))?;
            if hint == 0 {
                frame = None;
                if !skippable && matches!(target, Target::Range(_)) {
                    return Ok(()); // a range read decodes the first frame only
                }
            } else if wrote < out_len && walk.src_remaining() == 0 {
                // zstd flushed all it could and wants input that is not there.
                return Err(Error::Truncated);
            }
        }
    }

    /// Reads the header of the frame that starts at the walk's position (without consuming
    /// it): its size, and whether the frame is skippable. The same bytes give the same
    /// answer however they are cut.
    fn check_frame_header(&self, walk: &Walk<'_, '_>) -> Result<(usize, bool), Error> {
        let mut buf = [0u8; FRAME_HEADER_MAX];
        let n = walk.peek_src(&mut buf);
        match sys::frame_header(&buf[..n]) {
            FrameHeader::Frame {
                header_size,
                window,
                ..
            } => {
                let limit = self.params.window_limit();
                if window > limit {
                    return Err(Error::WindowTooLarge { window, limit });
                }
                Ok((header_size, false))
            }
            FrameHeader::Skippable => Ok((SKIPPABLE_HEADER, true)),
            FrameHeader::Incomplete(_) => Err(Error::Truncated),
            // zstd refuses a window log over 31 before any limit: over the limit all the same.
            FrameHeader::Invalid(code)
                if zstd_safe::is_error_kind(
                    code,
                    ZSTD_ErrorCode::ZSTD_error_frameParameter_windowTooLarge,
                ) && buf[4] & 0x20 == 0 =>
            {
                Err(Error::WindowTooLarge {
                    window: descriptor_window(buf[5]),
                    limit: self.params.window_limit(),
                })
            }
            FrameHeader::Invalid(code) => Err(Error::from_zstd(code, walk.dlen())),
        }
    }
}

/// The content size and window of the one zstd frame that `src` is, exactly, where its
/// header declares a content size; `None` for anything else (no content size, a skippable
/// frame, several frames, bytes after the frame, a malformed header or block header).
///
/// What `ZSTD_getFrameHeader` and `ZSTD_findFrameCompressedSize` would say together, read
/// in one pass over the frame header and the 3-byte block headers (RFC 8878 §3.1.1), since
/// it runs on every one-shot decompression. It decides only whether the one-shot path may
/// run; whatever it refuses streams, with zstd's own parser.
fn single_frame(src: &[u8]) -> Option<(u64, u64)> {
    const MAGIC: u32 = 0xFD2F_B528;
    if u32::from_le_bytes(src.get(..4)?.try_into().ok()?) != MAGIC {
        return None;
    }
    let fhd = *src.get(4)?;
    let single_segment = fhd & 0x20 != 0;
    if fhd & 0x08 != 0 {
        return None; // reserved bit
    }
    let mut pos = 5;
    let window_descriptor = if single_segment {
        None
    } else {
        pos += 1;
        Some(*src.get(5)?)
    };
    pos += [0, 1, 2, 4][usize::from(fhd & 3)]; // dictionary ID
    let fcs_size = [usize::from(single_segment), 2, 4, 8][usize::from(fhd >> 6)];
    let fcs = src.get(pos..pos + fcs_size)?;
    pos += fcs_size;
    let content_size = match *fcs {
        [] => return None,
        [a] => u64::from(a),
        [a, b] => u64::from(u16::from_le_bytes([a, b])) + 256,
        [a, b, c, d] => u64::from(u32::from_le_bytes([a, b, c, d])),
        _ => u64::from_le_bytes(fcs.try_into().ok()?),
    };
    let window = match window_descriptor {
        None => content_size,
        // zstd refuses a window log over 31 outright.
        Some(wd) if 10 + u32::from(wd >> 3) > *WINDOW_LOG_RANGE.end() => return None,
        Some(wd) => descriptor_window(wd),
    };
    loop {
        let h = src.get(pos..pos + 3)?;
        let h = u32::from_le_bytes([h[0], h[1], h[2], 0]);
        let size = (h >> 3) as usize;
        pos += 3 + match (h >> 1) & 3 {
            0 | 2 => size, // raw, compressed
            1 => 1,        // RLE
            _ => return None,
        };
        if h & 1 != 0 {
            break;
        }
    }
    pos += if fhd & 0x04 != 0 { 4 } else { 0 }; // content checksum
    (pos == src.len()).then_some((content_size, window))
}

/// The window a window descriptor byte declares (RFC 8878 §3.1.1.1.2): 2^(10 + exponent)
/// bytes plus as many eighths of that as the mantissa says; at most 2^41 + 7 · 2^38.
fn descriptor_window(wd: u8) -> u64 {
    let base = 1u64 << (10 + (wd >> 3));
    base + (base >> 3) * u64::from(wd & 7)
}

/// Where the stream path's output goes.
enum Target<'t, 's, 'a> {
    /// The walk's destination fragments; past their end, the scratch buffer, with the bytes
    /// sent there counted here.
    Dst(&'t mut u64),
    /// The segments of a range read; output before a segment goes to the scratch buffer.
    Range(SegmentCursor<'s, 'a>),
}

/// A zstd workspace: a persistent CCtx and DCtx, each created on first use with the
/// transform's parameters set once, a scratch buffer of `SCRATCH_BYTES`, and the frame
/// buffer of the one-shot compression.
pub struct ZstdWorkspace {
    cctx: Option<CCtx<'static>>,
    dctx: Option<DCtx<'static>>,
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
        scratch
            .try_reserve_exact(SCRATCH_BYTES)
            .map_err(|_| Error::NoMemory)?;
        scratch.resize(SCRATCH_BYTES, 0);
        Ok(ZstdWorkspace {
            cctx: None,
            dctx: None,
            scratch: scratch.into_boxed_slice(),
            frame: Vec::new(),
        })
    }

    fn compress(&self, ws: &mut ZstdWorkspace, walk: &mut Walk<'_, '_>) -> Result<Path, Error> {
        let cctx = Self::cctx(&self.params, &mut ws.cctx)?;
        if walk.slen() > ONE_SHOT_COMPRESS_MAX {
            Self::compress_stream(cctx, walk)?;
            return Ok(Path::Stream);
        }
        if let Some((src, dst)) = walk.one_shot() {
            let n = Self::compress_one_shot(cctx, &mut ws.frame, src, dst)?;
            walk.done_src(src.len());
            walk.done_dst(n);
            return Ok(Path::OneShot);
        }
        Self::compress_stream(cctx, walk)?;
        Ok(Path::Stream)
    }

    fn decompress(&self, ws: &mut ZstdWorkspace, walk: &mut Walk<'_, '_>) -> Result<Path, Error> {
        let dctx = Self::dctx(&self.params, &mut ws.dctx)?;
        if let Some((src, dst)) = walk.one_shot() {
            if let Some(n) = self.decompress_one_shot(dctx, src, dst) {
                walk.done_src(src.len());
                walk.done_dst(n);
                return Ok(Path::OneShot);
            }
        }
        self.decompress_stream(dctx, &mut ws.scratch, walk)?;
        Ok(Path::Stream)
    }

    fn decompress_range(
        &self,
        ws: &mut ZstdWorkspace,
        walk: &mut Walk<'_, '_>,
        segments: &mut [Segment<'_>],
    ) -> Result<u64, Error> {
        let dctx = Self::dctx(&self.params, &mut ws.dctx)?;
        let mut target = Target::Range(SegmentCursor::new(segments));
        self.stream_frames(dctx, &mut ws.scratch, walk, &mut target)?;
        let Target::Range(cursor) = target else {
            unreachable!("the target stays a range")
        };
        Ok(cursor.pos())
    }

    fn reset(&self, ws: &mut ZstdWorkspace) {
        // A session reset cannot fail; a failure here would surface on the next request.
        if let Some(c) = ws.cctx.as_mut() {
            let _ = c.reset(ResetDirective::SessionOnly);
        }
        if let Some(d) = ws.dctx.as_mut() {
            let _ = d.reset(ResetDirective::SessionOnly);
        }
    }

    fn workspace_bytes(&self, ws: &ZstdWorkspace) -> usize {
        ws.cctx.as_ref().map_or(0, |c| c.sizeof())
            + ws.dctx.as_ref().map_or(0, |d| d.sizeof())
            + ws.scratch.len()
            + ws.frame.capacity()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::rngs::StdRng;
    use rand::{Rng, SeedableRng};

    /// What zstd's own parsers say `single_frame` should answer.
    fn zstd_says(src: &[u8]) -> Option<(u64, u64)> {
        match sys::frame_header(src) {
            FrameHeader::Frame {
                window,
                content_size: Some(size),
                ..
            } if zstd_safe::find_frame_compressed_size(src) == Ok(src.len()) => {
                Some((size, window))
            }
            _ => None,
        }
    }

    fn frames(rng: &mut StdRng) -> Vec<Vec<u8>> {
        let mut out = Vec::new();
        for (len, level, checksum, size_flag, wlog) in [
            (0, 3, false, true, 0),
            (1, 1, true, true, 0),
            (255, 3, false, true, 0),
            (256, 3, true, true, 0),
            (4096, -5, false, true, 0),
            (70_000, 3, true, true, 0),
            (300_000, 1, false, true, 0),
            (5000, 3, false, true, 20),
            (5000, 3, false, false, 0),
        ] {
            let data: Vec<u8> = (0..len).map(|_| b'a' + rng.random_range(0..4u8)).collect();
            let mut cctx = CCtx::create();
            cctx.set_parameter(CParameter::CompressionLevel(level))
                .unwrap();
            cctx.set_parameter(CParameter::ChecksumFlag(checksum))
                .unwrap();
            cctx.set_parameter(CParameter::ContentSizeFlag(size_flag))
                .unwrap();
            if wlog > 0 {
                cctx.set_parameter(CParameter::WindowLog(wlog)).unwrap();
            }
            let mut f = vec![0u8; zstd_safe::compress_bound(len)];
            let mut output = OutBuffer::around(&mut f[..]);
            let mut input = InBuffer::around(&data[..]);
            // Data first, end apart: no single-segment shrink, a real window descriptor.
            let mode = if wlog > 0 {
                ZSTD_EndDirective::ZSTD_e_continue
            } else {
                ZSTD_EndDirective::ZSTD_e_end
            };
            let mut left = cctx
                .compress_stream2(&mut output, &mut input, mode)
                .unwrap();
            let mut end = InBuffer::around(&[]);
            if wlog > 0 {
                left = 1;
            }
            while left > 0 {
                left = cctx
                    .compress_stream2(&mut output, &mut end, ZSTD_EndDirective::ZSTD_e_end)
                    .unwrap();
            }
            let n = output.pos();
            f.truncate(n);
            out.push(f);
        }
        out
    }

    #[test]
    fn single_frame_agrees_with_zstd_on_every_input() {
        let mut rng = StdRng::seed_from_u64(7);
        let frames = frames(&mut rng);
        let mut agreed_some = 0;
        for f in &frames {
            assert_eq!(single_frame(f), zstd_says(f));
            agreed_some += usize::from(single_frame(f).is_some());
            for _ in 0..20_000 {
                let mut m = f.clone();
                match rng.random_range(0..5) {
                    // Mutate a header byte, or any byte, or a few.
                    0 => {
                        let i = rng.random_range(0..m.len().min(18));
                        m[i] = rng.random();
                    }
                    1 => {
                        let i = rng.random_range(0..m.len());
                        m[i] ^= 1 << rng.random_range(0..8);
                    }
                    2 => m.truncate(rng.random_range(0..m.len())),
                    3 => m.extend((0..rng.random_range(1..20)).map(|_| rng.random::<u8>())),
                    _ => {
                        for _ in 0..3 {
                            let i = rng.random_range(0..m.len());
                            m[i] = rng.random();
                        }
                    }
                }
                assert_eq!(single_frame(&m), zstd_says(&m), "{m:02x?}");
            }
        }
        // Two frames, a skippable frame: never one frame.
        let two = [frames[1].clone(), frames[1].clone()].concat();
        assert_eq!(single_frame(&two), None);
        assert_eq!(zstd_says(&two), None);
        assert!(agreed_some >= 7, "{agreed_some}");
    }
}
