//! Range reads of a seekable source: only the frames the segments touch are decoded, each
//! with the plain range read (`decompress.rs`) over its own bytes and into the part of the
//! segments its content covers.

use std::io::IoSlice;

use xxhash_rust::xxh64::Xxh64;
use zstd_safe::DCtx;

use super::{ENTRY_DISAGREES, MAX_FRAME_CONTENT, SeekTable, sub_fragments};
use crate::alg::zstd::{Digested, Zstd};
use crate::{Error, Segment, Walk};

/// A frame whose content's XXH64 disagrees with its seek table entry's checksum.
const CHECKSUM_DISAGREES: Error = Error::Corrupt {
    detail: "seek table checksum does not match the frame's content",
};

impl Zstd {
    /// A range read of a source that ends with `table`: the table is checked whole
    /// ([`SeekTable::content_size`]), then each frame whose content a segment overlaps is
    /// decoded, alone, into that part of the segments. Returns the extent offset the
    /// output reached, as the plain range read does.
    ///
    /// Each decoded frame is held to its entry (every frame's header is, on every read, by
    /// the table's check): content that ends before the segments' part of it does, or
    /// (where the segments reach the frame's end, or `checked`) content of another length
    /// or a frame of other bytes than listed, is `EBADMSG`. With `checked` (the transform's
    /// `checksum(true)`) the frame is decoded to its end, and the entry's checksum, where
    /// the table has them, is checked against the content's XXH64.
    pub(in crate::alg::zstd) fn seekable_range<'x>(
        &self,
        dctx: &mut DCtx<'x>,
        dicts: Option<&'x Digested>,
        scratch: &mut [u8],
        walk: &Walk<'_, '_>,
        table: &SeekTable,
        segments: &mut [Segment<'_>],
    ) -> Result<u64, Error> {
        table.content_size(walk)?;
        let checked = self.params.checksum;
        let src: &[IoSlice<'_>] = walk.src_fragments();
        let mut frame_src = Vec::new();
        let (mut at, mut base, mut end) = (0usize, 0u64, 0u64);
        let mut first = 0; // the first segment that may still take output
        for entry in table.entries(src) {
            let (start, size) = (at, entry.compressed as usize);
            at += size;
            let frame_start = base;
            let content = u64::from(entry.content);
            base += content;
            // Segments wholly before this frame's content take nothing more.
            while segments
                .get(first)
                .is_some_and(|s| s.offset() + s.len() as u64 <= frame_start)
            {
                first += 1;
            }
            if first == segments.len() {
                break; // every segment is behind: nothing more to decode
            }
            let touched = segments[first..]
                .iter()
                .take_while(|s| s.offset() < base)
                .any(|s| !s.is_empty());
            if !touched {
                continue;
            }
            debug_assert!(entry.content <= MAX_FRAME_CONTENT);
            sub_fragments(src, start, size, &mut frame_src);
            // The segments' part of this frame, at offsets in its content.
            let mut parts: Vec<Segment<'_>> = Vec::new();
            for s in segments[first..].iter_mut() {
                let (offset, len) = (s.offset(), s.len() as u64);
                if offset >= base {
                    break;
                }
                let from = offset.max(frame_start);
                let to = (offset + len).min(base);
                if to > from {
                    let buf = &mut s.buf_mut()[(from - offset) as usize..(to - offset) as usize];
                    parts.push(Segment::new(from - frame_start, buf));
                }
            }
            let want = parts.last().map_or(0, |p| p.offset() + p.len() as u64);
            // Where the whole frame is decoded, one byte past its listed content shows
            // content longer than listed.
            let mut probe = [0u8; 1];
            let whole = checked || want == content;
            if whole {
                parts.push(Segment::new(content, &mut probe));
            }
            let mut hash = (checked && entry.checksum.is_some()).then(|| Xxh64::new(0));
            let mut frame_walk = Walk::new(&frame_src, &mut []);
            let pos = self.decompress_range(
                dctx,
                dicts,
                scratch,
                &mut frame_walk,
                &mut parts,
                hash.as_mut(),
            )?;
            if pos < want || (whole && (pos != content || frame_walk.src_remaining() != 0)) {
                return Err(ENTRY_DISAGREES);
            }
            if let (Some(h), Some(listed)) = (hash, entry.checksum) {
                if h.digest() as u32 != listed {
                    return Err(CHECKSUM_DISAGREES);
                }
            }
            end = frame_start + pos;
        }
        Ok(end)
    }
}
