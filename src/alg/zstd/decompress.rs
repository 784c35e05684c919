//! zstd decompression: the stream loop that serves every request the one-shot path
//! (`one_shot.rs`) leaves, and range reads, with acomp reading the frame structure itself
//! as it feeds zstd.

use std::sync::Arc;

use xxhash_rust::xxh64::Xxh64;
use zstd_safe::zstd_sys::ZSTD_ErrorCode;
use zstd_safe::{DCtx, DParameter, InBuffer, OutBuffer, ResetDirective};

use super::frame::{
    self, BLOCK_HEADER, BlockHeader, BlockType, CHECKSUM, FRAME_HEADER_MAX, FrameHeader,
    SKIPPABLE_HEADER,
};
use super::{Digested, Zstd, ZstdParams, zstd_error};
use crate::segment::SegmentCursor;
use crate::sys::WithDicts;
use crate::{Error, Segment, Walk};

/// The workspace's DCtx, created on first use with the window limit set once. With
/// dictionaries, each frame's DDict is referenced before the frame ([`select`]).
#[inline]
pub(super) fn dctx<'w>(
    params: &ZstdParams,
    dicts: &Option<Arc<Digested>>,
    slot: &'w mut Option<WithDicts<DCtx<'static>>>,
) -> Result<&'w mut WithDicts<DCtx<'static>>, Error> {
    if slot.is_none() {
        *slot = Some(new_dctx(params, dicts)?);
    }
    Ok(slot.as_mut().expect("created above"))
}

#[cold]
fn new_dctx(
    params: &ZstdParams,
    dicts: &Option<Arc<Digested>>,
) -> Result<WithDicts<DCtx<'static>>, Error> {
    let mut dctx = DCtx::try_create().ok_or(Error::NoMemory)?;
    dctx.set_parameter(DParameter::WindowLogMax(params.window_log_max))
        .map_err(|c| zstd_error(c, 0))?;
    Ok(WithDicts::new(dctx, dicts.clone()))
}

impl Zstd {
    /// Decompresses fragment by fragment into each destination fragment in turn (zstd
    /// copies its output out of its window buffer into them).
    /// Output past the end of the destination goes to the scratch buffer, only to learn
    /// whether the rest of the source is valid: then the error is `ENOSPC` with the size
    /// needed, else the source's own error.
    pub(super) fn decompress_stream<'x>(
        &self,
        dctx: &mut DCtx<'x>,
        dicts: Option<&'x Digested>,
        scratch: &mut [u8],
        walk: &mut Walk<'_, '_>,
    ) -> Result<(), Error> {
        let mut sink = Destination::default();
        self.stream_frames(dctx, dicts, scratch, walk, &mut sink, &mut ())?;
        if sink.overflow > 0 {
            return Err(Error::NoSpace {
                needed: Some(walk.produced() as u64 + sink.overflow),
                capacity: walk.dlen(),
            });
        }
        Ok(())
    }

    /// Decodes the first frame of the walk's source into `segments`; returns the extent
    /// offset where the output stopped (see [`Range`] for when that is early).
    ///
    /// With the transform's `checksum(true)`, the frame is decoded to its end whatever the
    /// segments, so that its checksum and content size are checked. `hash`, where
    /// given, is fed every byte of the frame's content (the seekable reader checks a seek
    /// table's checksum with it: `seekable/read.rs`).
    pub(super) fn decompress_range<'x>(
        &self,
        dctx: &mut DCtx<'x>,
        dicts: Option<&'x Digested>,
        scratch: &mut [u8],
        walk: &mut Walk<'_, '_>,
        segments: &mut [Segment<'_>],
        mut hash: Option<&mut Xxh64>,
    ) -> Result<u64, Error> {
        let mut sink = Range {
            cursor: SegmentCursor::new(segments),
            overrun: 0,
            checked: self.params.checksum,
        };
        self.stream_frames(dctx, dicts, scratch, walk, &mut sink, &mut hash)?;
        Ok(sink.cursor.pos())
    }

    /// The stream path: decodes the walk's source frame by frame into `sink`.
    ///
    /// Starts the stream (session reset: the kernel's `zstd_init_dstream`, deferred to the
    /// first request that streams; it sits outside the loop, so no flag is needed to run it
    /// once). Then acomp reads the frame structure itself, across fragments, and lets zstd
    /// have only what it has read: the frame header alone (after checking the window, so
    /// zstd's single-pass shortcut never runs), then each block with its header checked
    /// against the block maximum, then the checksum. At each frame's end it checks the
    /// content size the header declared. Input that ends inside a frame is corrupt.
    ///
    /// Several faults: `EBADMSG` wins over `EINVAL`, as `ENOSPC` waits for the whole source
    /// ([`decompress_stream`](Zstd::decompress_stream)). A frame whose window is over the
    /// limit is not decoded (that is what the limit is for), but its structure is read to
    /// its end ([`FrameCursor::skip`]) and the frames after it are decoded; its
    /// `WindowTooLarge` is returned only where nothing else is wrong.
    fn stream_frames<'x>(
        &self,
        dctx: &mut DCtx<'x>,
        dicts: Option<&'x Digested>,
        scratch: &mut [u8],
        walk: &mut Walk<'_, '_>,
        sink: &mut impl Sink,
        hash: &mut impl Digest,
    ) -> Result<(), Error> {
        // zstd's streaming decoder writes into its own buffer, sized for any valid frame:
        // its "destination too small" means a frame whose sizes contradict each other.
        // (acomp finds a full destination itself, through the scratch buffer.)
        let zerr = |c, walk: &Walk<'_, '_>| match zstd_error(c, walk.dlen()) {
            Error::NoSpace { .. } => Error::Corrupt {
                detail: zstd_safe::get_error_name(c),
            },
            e => e,
        };
        dctx.reset(ResetDirective::SessionOnly)
            .map_err(|c| zerr(c, walk))?;
        let mut frame: Option<FrameCursor> = None;
        // A window over the limit, returned once the rest of the source shows no fault.
        let mut over_limit: Option<Error> = None;
        let mut after_frame = false;
        loop {
            let f = match &mut frame {
                Some(f) => f,
                None if walk.src_remaining() == 0 => return over_limit.map_or(Ok(()), Err),
                None => {
                    let mut f = self.open_frame(walk, dicts, after_frame)?;
                    after_frame = true;
                    if let Some(e) = f.over_limit.take() {
                        f.skip(walk)?;
                        let e = over_limit.get_or_insert(e);
                        if sink.first_frame_only() {
                            return Err(e.clone());
                        }
                        continue;
                    }
                    if let Some(dicts) = dicts.filter(|_| !f.skippable) {
                        select(dctx, dicts, f.dict_id)?;
                    }
                    frame.insert(f)
                }
            };
            if sink.stop(f) {
                return over_limit.map_or(Ok(()), Err);
            }
            // While zstd may hold output, it gets no input: what it holds comes out first,
            // so that a range read whose segments fill from it never reads further (nor
            // meets an error further on). The next block header is read only then.
            let flush = f.pending;
            if f.feed_left == 0 && !f.epilogue && !flush {
                f.next_block(walk)?;
            }
            let src = walk.next_src();
            let feed = if flush {
                &[]
            } else {
                &src[..src.len().min(f.feed_left)]
            };
            let out = sink.chunk(walk, scratch);
            let out_len = out.len();
            let mut input = InBuffer::around(feed);
            let mut output = OutBuffer::around(out);
            let ret = dctx.decompress_stream(&mut output, &mut input);
            let (used, wrote) = (input.pos(), output.pos());
            hash.update(&out[..wrote]); // a seek table's checksum (range reads only)
            walk.done_src(used);
            sink.done(walk, wrote);
            f.feed_left -= used;
            f.pending = wrote == out_len;
            f.produced += wrote as u64;
            let hint = ret.map_err(|c| zerr(c, walk))?;
            if f.content_size.is_some_and(|size| f.produced > size) {
                return Err(CONTENT_SIZE_MISMATCH);
            }
            if hint == 0 {
                let f = frame.take().expect("in a frame");
                f.finish()?;
                if !f.skippable && sink.first_frame_only() {
                    return over_limit.map_or(Ok(()), Err);
                }
            } else if used == 0 && wrote == 0 {
                if flush {
                    continue; // zstd held nothing more: it wants input
                }
                // zstd wants input: none is left, or acomp lets none through because the
                // frame, as its headers declare it, is over.
                return Err(if f.feed_left > 0 {
                    Error::Truncated
                } else {
                    FRAME_LONGER_THAN_BLOCKS
                });
            }
        }
    }

    /// Reads and checks the header of the frame that starts at the walk's position (without
    /// consuming it). The same bytes give the same answer however they are cut.
    ///
    /// The header's own faults (`EBADMSG`: a reserved bit, a dictionary the transform
    /// lacks) come before its window: a window over the limit is not an error here but
    /// `FrameCursor::over_limit`, for the caller to weigh against the rest of the source.
    /// `after_frame` says whether a frame came before, for the error of bytes that are none.
    fn open_frame(
        &self,
        walk: &Walk<'_, '_>,
        dicts: Option<&Digested>,
        after_frame: bool,
    ) -> Result<FrameCursor, Error> {
        let mut buf = [0u8; FRAME_HEADER_MAX];
        let n = walk.peek_src(&mut buf);
        let limit = self.params.window_limit();
        let mut header = FrameHeader::read(&buf[..n]);
        let mut window_over_31 = None;
        if let FrameHeader::Invalid(code) = header {
            // zstd refuses a window log over 31 before it reads the rest of the header:
            // over any limit. The rest is read with the window descriptor at log 10.
            if zstd_safe::is_error_kind(
                code,
                ZSTD_ErrorCode::ZSTD_error_frameParameter_windowTooLarge,
            ) && buf[4] & 0x20 == 0
            {
                window_over_31 = Some(frame::descriptor_window(buf[5]));
                let mut rest = buf;
                rest[5] = 0;
                header = FrameHeader::read(&rest[..n]);
            }
        }
        match header {
            FrameHeader::Frame {
                header_size,
                window,
                content_size,
                checksum,
                dict_id,
            } => {
                let known = dicts.map_or(dict_id == 0, |d| d.ddict(dict_id).is_ok());
                if !known {
                    return Err(UNKNOWN_DICTIONARY);
                }
                let window = window_over_31.unwrap_or(window);
                Ok(FrameCursor {
                    skippable: false,
                    dict_id,
                    content_size,
                    block_max: frame::block_max(window),
                    checksum,
                    feed_left: header_size,
                    epilogue: false,
                    pending: false,
                    produced: 0,
                    over_limit: (window > limit).then_some(Error::WindowTooLarge { window, limit }),
                    least: 0,
                    most: 0,
                })
            }
            FrameHeader::Skippable { size } => Ok(FrameCursor {
                skippable: true,
                dict_id: 0,
                content_size: Some(0),
                block_max: 0,
                checksum: false,
                feed_left: SKIPPABLE_HEADER + size as usize,
                epilogue: true,
                pending: false,
                produced: 0,
                over_limit: None,
                least: 0,
                most: 0,
            }),
            FrameHeader::Incomplete => Err(Error::Truncated),
            FrameHeader::Invalid(code) => {
                Err(frame::header_error(code, after_frame, walk.src_remaining()))
            }
        }
    }
}

/// A frame whose blocks give more or fewer bytes than its header's content size
/// (RFC 8878 §3.1.1.1.4). libzstd's one-shot decoder says the same; its streaming decoder
/// skips the check after an empty last block.
const CONTENT_SIZE_MISMATCH: Error = Error::Corrupt {
    detail: "frame content size does not match its blocks",
};

/// A frame whose header names a dictionary ID (RFC 8878 §3.1.1.1.3) that the transform has
/// no dictionary for.
const UNKNOWN_DICTIONARY: Error = Error::Corrupt {
    detail: "frame names a dictionary this transform lacks",
};

/// References the DDict a frame naming dictionary `id` is read with (none for 0 without a
/// raw-content dictionary), before zstd reads the frame. acomp picks it itself, from the
/// header it read: zstd's own pick (`ZSTD_d_refMultipleDDicts`) happens on its streaming
/// path only, after its one-shot decoder has already loaded the previous DDict's tables.
/// zstd takes a new reference only between frames; a range read that stopped mid-frame
/// leaves the stream inside one, so a refusal gets a session reset and a second try.
pub(super) fn select<'x>(dctx: &mut DCtx<'x>, dicts: &'x Digested, id: u32) -> Result<(), Error> {
    let ddict = dicts.ddict(id).map_err(|()| UNKNOWN_DICTIONARY)?;
    let set = |dctx: &mut DCtx<'x>| match ddict {
        Some(ddict) => dctx.ref_ddict(ddict),
        None => dctx.disable_dictionary(),
    };
    if set(dctx).is_err() {
        dctx.reset(ResetDirective::SessionOnly)
            .map_err(|c| zstd_error(c, 0))?;
        set(dctx).map_err(|c| zstd_error(c, 0))?;
    }
    Ok(())
}

/// A block header of the reserved type (§3.1.1.2.2).
const RESERVED_BLOCK_TYPE: Error = Error::Corrupt {
    detail: "reserved block type",
};

/// zstd wanted more of a frame than its blocks and checksum declare (never seen: a guard
/// against a loop without progress).
const FRAME_LONGER_THAN_BLOCKS: Error = Error::Corrupt {
    detail: "frame longer than its blocks",
};

/// Where the stream loop stands in the current frame, as acomp reads it.
#[derive(Debug)]
struct FrameCursor {
    skippable: bool,
    /// The dictionary ID the header names (0: none).
    dict_id: u32,
    /// The content size the header declares (0 for a skippable frame).
    content_size: Option<u64>,
    block_max: u64,
    checksum: bool,
    /// Source bytes zstd may still be fed before acomp reads the next block header.
    feed_left: usize,
    /// Whether the last block (and the checksum) is let through: nothing more to read.
    epilogue: bool,
    /// Whether zstd filled the last output chunk, and so may hold more output.
    pending: bool,
    /// Content bytes the frame has given so far.
    produced: u64,
    /// `WindowTooLarge` for a frame whose window is over the limit: not decoded, only
    /// [`skip`](FrameCursor::skip)ped.
    over_limit: Option<Error>,
    /// The least and the most content the block headers read so far allow, in bytes.
    least: u64,
    most: u64,
}

impl FrameCursor {
    /// Reads the next block header across fragments and lets zstd have that block (with
    /// the checksum after the last block).
    fn next_block(&mut self, walk: &Walk<'_, '_>) -> Result<BlockHeader, Error> {
        let mut h = [0u8; BLOCK_HEADER];
        if walk.peek_src(&mut h) < BLOCK_HEADER {
            return Err(Error::Truncated);
        }
        let block = BlockHeader::parse(h).ok_or(RESERVED_BLOCK_TYPE)?;
        block.check(self.block_max)?;
        // What the blocks so far can give: raw and RLE blocks exactly, a compressed one 0
        // to the block maximum. Where the declared size is outside, say so before zstd
        // sees the block.
        let known = match block.kind {
            BlockType::Compressed => None,
            BlockType::Raw | BlockType::Rle => Some(u64::from(block.size)),
        };
        self.least += known.unwrap_or(0);
        self.most += known.unwrap_or(self.block_max);
        if let Some(size) = self.content_size {
            if self.least > size || (block.last && self.most < size) {
                return Err(CONTENT_SIZE_MISMATCH);
            }
        }
        self.feed_left = BLOCK_HEADER + block.content_len();
        if block.last {
            self.epilogue = true;
            if self.checksum {
                self.feed_left += CHECKSUM;
            }
        }
        Ok(block)
    }

    /// Reads a frame that is not decoded (its window over the limit) to its end, with
    /// every check that needs no decoding, in the order decoding meets them: each block
    /// header ([`next_block`](FrameCursor::next_block): type, block maximum, the declared
    /// content size against what the blocks can give), then the block's bytes and, after
    /// the last, the checksum (else `Truncated`). Consumes the frame.
    fn skip(&mut self, walk: &mut Walk<'_, '_>) -> Result<(), Error> {
        loop {
            frame::consume(walk, self.feed_left)?;
            self.feed_left = 0;
            if self.epilogue {
                return Ok(());
            }
            self.next_block(walk)?;
        }
    }

    /// Checks a frame zstd has finished: all of it read, and as much content as declared.
    fn finish(&self) -> Result<(), Error> {
        if !self.epilogue || self.feed_left != 0 {
            return Err(FRAME_LONGER_THAN_BLOCKS);
        }
        match self.content_size {
            Some(size) if size != self.produced => Err(CONTENT_SIZE_MISMATCH),
            _ => Ok(()),
        }
    }
}

/// What the stream loop feeds every byte of output to: a seek table's checksum, for a
/// range read of a seekable source (`Option<&mut Xxh64>`); nothing (`()`, compiled away)
/// for every other request.
trait Digest {
    fn update(&mut self, bytes: &[u8]);
}

impl Digest for () {
    #[inline(always)]
    fn update(&mut self, _: &[u8]) {}
}

impl Digest for Option<&mut Xxh64> {
    #[inline]
    fn update(&mut self, bytes: &[u8]) {
        if let Some(h) = self {
            h.update(bytes);
        }
    }
}

/// Where the stream loop's output goes.
trait Sink {
    /// Whether to stop decoding now, successfully, with the frame unfinished.
    fn stop(&mut self, frame: &FrameCursor) -> bool;
    /// Where the next output goes: never empty.
    fn chunk<'b>(&'b mut self, walk: &'b mut Walk<'_, '_>, scratch: &'b mut [u8]) -> &'b mut [u8];
    /// Marks `n` bytes of the last chunk as written.
    fn done(&mut self, walk: &mut Walk<'_, '_>, n: usize);
    /// Whether decoding ends after the first frame that is not skippable.
    fn first_frame_only(&self) -> bool;
}

/// The walk's destination fragments; past their end, the scratch buffer, with the bytes
/// sent there counted.
#[derive(Debug, Default)]
struct Destination {
    overflow: u64,
    in_scratch: bool,
}

impl Sink for Destination {
    fn stop(&mut self, _: &FrameCursor) -> bool {
        false
    }

    fn chunk<'b>(&'b mut self, walk: &'b mut Walk<'_, '_>, scratch: &'b mut [u8]) -> &'b mut [u8] {
        self.in_scratch = walk.dst_remaining() == 0;
        if self.in_scratch {
            scratch
        } else {
            walk.next_dst()
        }
    }

    fn done(&mut self, walk: &mut Walk<'_, '_>, n: usize) {
        if self.in_scratch {
            self.overflow += n as u64;
        } else {
            walk.done_dst(n);
        }
    }

    fn first_frame_only(&self) -> bool {
        false
    }
}

/// The segments of a range read; output before and between segments goes to the scratch
/// buffer.
///
/// Once every segment is full, the read stops early where the frame's content goes on past
/// them: known from the declared content size, or, without one, from one more byte of
/// output. Where the segments reach the content's end, the frame is decoded to its end
/// (last block, checksum, content size), as a whole decompression would.
#[derive(Debug)]
struct Range<'s, 'a> {
    cursor: SegmentCursor<'s, 'a>,
    /// Output past the last segment (into scratch) while finishing the frame.
    overrun: u64,
    /// Whether the frame is decoded to its end whatever the segments (`checksum(true)`):
    /// then a range read checks what a decompression checks.
    checked: bool,
}

impl Sink for Range<'_, '_> {
    fn stop(&mut self, frame: &FrameCursor) -> bool {
        if frame.skippable || self.checked || !self.cursor.is_full() {
            return false;
        }
        match frame.content_size {
            Some(size) => self.cursor.pos() < size,
            None => self.overrun > 0,
        }
    }

    fn chunk<'b>(&'b mut self, _: &'b mut Walk<'_, '_>, scratch: &'b mut [u8]) -> &'b mut [u8] {
        self.cursor.chunk(scratch)
    }

    fn done(&mut self, _: &mut Walk<'_, '_>, n: usize) {
        if self.cursor.is_full() {
            self.overrun += n as u64;
        } else {
            self.cursor.done(n);
        }
    }

    fn first_frame_only(&self) -> bool {
        true
    }
}
