//! Where the stream paths' output goes: the destination fragments, then scratch memory
//! past their end (to learn the size needed), or the segments of a range read.

use xxhash_rust::xxh64::Xxh64;

use super::frame::FrameCursor;
use crate::segment::SegmentCursor;
use crate::{Error, Walk};

/// Where the stream loop's output goes.
pub(super) trait Sink {
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
pub(super) struct Destination {
    overflow: u64,
    in_scratch: bool,
}

impl Destination {
    /// The request's outcome once the codec is done: `Ok`, or `ENOSPC` with the size needed
    /// (what the destination took, and what went to scratch) where the output went past
    /// the destination.
    pub(super) fn finish(&self, walk: &Walk<'_, '_>) -> Result<(), Error> {
        if self.overflow > 0 {
            return Err(Error::NoSpace {
                needed: Some(walk.produced() as u64 + self.overflow),
                capacity: walk.dlen(),
            });
        }
        Ok(())
    }
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
pub(super) struct Range<'s, 'a> {
    pub(super) cursor: SegmentCursor<'s, 'a>,
    /// Output past the last segment (into scratch) while finishing the frame.
    pub(super) overrun: u64,
    /// Whether the frame is decoded to its end whatever the segments (`checksum(true)`):
    /// then a range read checks what a decompression checks.
    pub(super) checked: bool,
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

/// What the stream loop feeds every byte of output to: a seek table's checksum, for a
/// range read of a seekable source (`Option<&mut Xxh64>`); nothing (`()`, compiled away)
/// for every other request.
pub(super) trait Digest {
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
