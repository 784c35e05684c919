//! [`Segment`]: a destination of a range read, at a byte offset of the decompressed extent.

use crate::Error;

/// A destination segment of a range read ([`Acomp::decompress_range`](crate::Acomp::decompress_range)):
/// `buf` receives the decompressed bytes at `offset .. offset + buf.len()` of the extent (the
/// frame's content). Segments of one read are sorted by offset and do not overlap; gaps
/// between them are allowed (pages already cached, as in btrfs's read path).
#[derive(Debug)]
pub struct Segment<'a> {
    offset: u64,
    buf: &'a mut [u8],
}

impl<'a> Segment<'a> {
    /// A segment receiving the extent's bytes from `offset` (in bytes) on.
    pub fn new(offset: u64, buf: &'a mut [u8]) -> Self {
        Segment { offset, buf }
    }

    /// Where the segment starts in the extent, in bytes.
    pub fn offset(&self) -> u64 {
        self.offset
    }

    /// The segment's size in bytes.
    pub fn len(&self) -> usize {
        self.buf.len()
    }

    /// Whether the segment has no bytes.
    pub fn is_empty(&self) -> bool {
        self.buf.is_empty()
    }

    /// The segment's bytes.
    pub fn buf(&self) -> &[u8] {
        self.buf
    }

    /// The segment's bytes, to read or refill between reads.
    pub fn buf_mut(&mut self) -> &mut [u8] {
        self.buf
    }

    /// The destination buffer, given back.
    pub fn into_buf(self) -> &'a mut [u8] {
        self.buf
    }

    /// One past the segment's last byte in the extent; `None` if that overflows a `u64`.
    fn end(&self) -> Option<u64> {
        self.offset.checked_add(self.buf.len() as u64)
    }
}

/// Checks that segments are sorted by offset, do not overlap and end within `u64`.
pub(crate) fn validate(segments: &[Segment<'_>]) -> Result<(), Error> {
    let mut prev_end = 0;
    for (i, s) in segments.iter().enumerate() {
        let end = s.end().ok_or_else(|| Error::InvalidParameter {
            reason: format!("segment {i} ends past 2^64 bytes"),
        })?;
        if s.offset < prev_end {
            return Err(Error::InvalidParameter {
                reason: format!(
                    "segment {i} at offset {} starts before the end of the one before it ({prev_end}): segments must be sorted and must not overlap",
                    s.offset
                ),
            });
        }
        prev_end = end;
    }
    Ok(())
}

/// Zero-fills the segments' bytes from extent offset `end` on (the frame ended there), and
/// returns how many bytes of the segments lie before `end`: the decompressed bytes delivered.
pub(crate) fn finish(segments: &mut [Segment<'_>], end: u64) -> usize {
    let mut delivered = 0;
    for s in segments {
        let filled = end.saturating_sub(s.offset).min(s.buf.len() as u64) as usize;
        s.buf[filled..].fill(0);
        delivered += filled;
    }
    delivered
}

/// The output side of a range read: hands out the next segment's unused part or, for
/// output that falls before a segment, the scratch buffer.
#[derive(Debug)]
pub(crate) struct SegmentCursor<'s, 'a> {
    segments: &'s mut [Segment<'a>],
    idx: usize,
    /// Extent offset of the next decompressed byte.
    pos: u64,
}

impl<'s, 'a> SegmentCursor<'s, 'a> {
    pub(crate) fn new(segments: &'s mut [Segment<'a>]) -> Self {
        SegmentCursor {
            segments,
            idx: 0,
            pos: 0,
        }
    }

    /// Extent offset of the next decompressed byte.
    pub(crate) fn pos(&self) -> u64 {
        self.pos
    }

    /// Whether every segment is full: nothing more to deliver.
    pub(crate) fn is_full(&mut self) -> bool {
        while self
            .segments
            .get(self.idx)
            .is_some_and(|s| self.pos >= s.offset + s.buf.len() as u64)
        {
            self.idx += 1;
        }
        self.idx == self.segments.len()
    }

    /// Where the next output goes: the current segment from `pos` on, or the part of
    /// `scratch` up to where the next segment starts; all of `scratch` once every segment
    /// is full.
    pub(crate) fn chunk<'b>(&'b mut self, scratch: &'b mut [u8]) -> &'b mut [u8] {
        if self.is_full() {
            return scratch;
        }
        let s = &mut self.segments[self.idx];
        if self.pos < s.offset {
            let gap = (s.offset - self.pos).min(scratch.len() as u64) as usize;
            &mut scratch[..gap]
        } else {
            &mut s.buf[(self.pos - s.offset) as usize..]
        }
    }

    /// Marks `n` bytes of the last chunk as written.
    pub(crate) fn done(&mut self, n: usize) {
        self.pos += n as u64;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn validation() {
        let (mut a, mut b) = ([0u8; 4], [0u8; 4]);
        assert!(validate(&[Segment::new(0, &mut a), Segment::new(4, &mut b)]).is_ok());
        let err = validate(&[Segment::new(0, &mut a), Segment::new(3, &mut b)]).unwrap_err();
        assert_eq!(err.errno(), libc::EINVAL);
        let err = validate(&[Segment::new(8, &mut a), Segment::new(0, &mut b)]).unwrap_err();
        assert_eq!(err.errno(), libc::EINVAL);
        let err = validate(&[Segment::new(u64::MAX - 2, &mut a)]).unwrap_err();
        assert_eq!(err.errno(), libc::EINVAL);
        assert!(validate(&[Segment::new(4, &mut []), Segment::new(4, &mut b)]).is_ok());
    }

    #[test]
    fn cursor_walks_gaps_through_scratch() {
        let (mut a, mut b) = ([0u8; 4], [0u8; 2]);
        let mut segs = [Segment::new(2, &mut a), Segment::new(10, &mut b)];
        let mut cur = SegmentCursor::new(&mut segs);
        let mut scratch = [0u8; 3];
        assert_eq!(cur.chunk(&mut scratch).len(), 2); // gap 0..2
        cur.done(2);
        assert_eq!(cur.chunk(&mut scratch).len(), 4); // segment a
        cur.done(4);
        assert_eq!(cur.chunk(&mut scratch).len(), 3); // gap 6..10, scratch-sized
        cur.done(3);
        assert!(!cur.is_full());
        assert_eq!(cur.chunk(&mut scratch).len(), 1);
        cur.done(1);
        assert_eq!(cur.chunk(&mut scratch).len(), 2); // segment b
        cur.done(2);
        assert!(cur.is_full());
        assert_eq!(cur.chunk(&mut scratch).len(), 3); // full: all of scratch
        assert_eq!(cur.pos(), 12);
        assert_eq!(finish(&mut segs, 12), 6);
    }

    #[test]
    fn finish_zero_fills_past_the_end() {
        let (mut a, mut b) = ([7u8; 4], [7u8; 4]);
        let mut segs = [Segment::new(0, &mut a), Segment::new(6, &mut b)];
        assert_eq!(finish(&mut segs, 7), 5);
        assert_eq!(segs[0].buf(), &[7, 7, 7, 7]);
        assert_eq!(segs[1].buf(), &[7, 0, 0, 0]);
    }
}
