//! zstd decompression: the stream loop that serves every request the one-shot path
//! (`one_shot.rs`) leaves, and range reads, with acomp reading the frame structure itself
//! as it feeds zstd.

use xxhash_rust::xxh64::Xxh64;
use zstd_safe::{DCtx, InBuffer, OutBuffer, ResetDirective};

use super::dictionary::select;
use super::errors::corrupt_detail;
use super::frame::{CONTENT_SIZE_MISMATCH, FRAME_LONGER_THAN_BLOCKS, FrameCursor};
use super::sink::{Destination, Digest, Range, Sink};
use super::{Digested, Zstd, zstd_error};
use crate::segment::SegmentCursor;
use crate::{Error, Segment, Walk};

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
        sink.finish(walk)
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
                detail: corrupt_detail(c),
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
}
