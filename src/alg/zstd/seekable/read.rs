//! Range reads of a seekable source: only the frames the segments touch are decoded, each
//! with the plain range read (`decompress.rs`) over its own bytes and into the part of the
//! segments its content covers. One loop serves both kinds of read: a one-off read that
//! finds and checks the table in the source ([`Zstd::seekable_range`]) and a read through a
//! table the caller keeps ([`Decoder::kept`], `kept.rs`).
//!
//! Where a frame's content lands is the sum of the entries before it. A frame whose header
//! declares its content size has its entry confirmed by the table's check; one that does
//! not (zstd's C writer and pyzstd write them so) only by decoding it to its end. A checked
//! read (`checksum(true)`) confirms every entry it depends on: the frames it decodes are
//! decoded whole and held to their entries, and the frames before them whose entries are
//! not yet confirmed are decoded too, to count their content.

use std::io::IoSlice;

use xxhash_rust::xxh64::Xxh64;
use zstd_safe::zstd_sys::ZSTD_MAGICNUMBER;
use zstd_safe::{DCtx, DParameter, ResetDirective};

use super::cache::FrameCache;
use super::kept::SeekTable;
use super::{ENTRY_DISAGREES, Frame, MAX_FRAME_CONTENT, TableFrame, read_at, sub_fragments};

/// `Content_Checksum_Flag` in a frame header descriptor.
const FHD_CHECKSUM: u8 = 0b100;
use crate::alg::zstd::{Digested, Zstd};
use crate::{Error, Segment, Walk};

/// A frame whose content's XXH64 disagrees with its seek table entry's checksum.
const CHECKSUM_DISAGREES: Error = Error::Corrupt {
    detail: "seek table checksum does not match the frame's content",
};

/// Whether the frame in `frame_src` (`size` bytes) is a zstd frame whose header sets
/// `Content_Checksum_Flag` (RFC 8878 §3.1.1.1.1): then its last four bytes are the low 32
/// bits of its content's XXH64.
fn own_flag(frame_src: &[IoSlice<'_>], size: usize) -> bool {
    let mut head = [0u8; 5];
    if size < 9 {
        return false;
    }
    read_at(frame_src, size, 0, &mut head);
    u32::from_le_bytes(head[..4].try_into().expect("4 bytes")) == ZSTD_MAGICNUMBER
        && head[4] & FHD_CHECKSUM != 0
}

/// The frame's own checksum (its last four bytes), where its header says it has one.
fn own_checksum(frame_src: &[IoSlice<'_>], size: usize) -> Option<u32> {
    own_flag(frame_src, size).then(|| {
        let mut tail = [0u8; 4];
        read_at(frame_src, size, size - 4, &mut tail);
        u32::from_le_bytes(tail)
    })
}

/// Sets zstd's `ZSTD_d_forceIgnoreChecksum` for the next frame (a session reset first:
/// parameters change only between frames). Every read that sets it clears it again, so
/// no other request of the workspace runs with it.
pub(super) fn ignore_checksum(dctx: &mut DCtx<'_>, on: bool) -> Result<(), Error> {
    let fail = |c| Error::Corrupt {
        detail: crate::alg::zstd::errors::corrupt_detail(c),
    };
    dctx.reset(ResetDirective::SessionOnly).map_err(fail)?;
    dctx.set_parameter(DParameter::ForceIgnoreChecksum(on))
        .map_err(fail)?;
    Ok(())
}

/// The codec state a read decodes with.
pub(crate) struct Decoder<'z, 'c, 'x> {
    pub(crate) zstd: &'z Zstd,
    pub(crate) dctx: &'c mut DCtx<'x>,
    pub(crate) dicts: Option<&'x Digested>,
    pub(crate) scratch: &'c mut [u8],
}

impl Decoder<'_, '_, '_> {
    /// Decodes `frame` alone into `parts` (segments at offsets in its content), which the
    /// caller has ended with a one-byte probe at the content's end where the frame is to
    /// be decoded whole (`whole`). Returns the content offset the output reached. A frame
    /// decoded whole must end where its entry says (its content and its bytes); with
    /// `check_sum`, its content's XXH64 must match the entry's checksum where it has one.
    /// `stop_early`: the read needs less than the whole frame (the frame's own checksum,
    /// which it would not reach, is not computed).
    #[allow(clippy::too_many_arguments)]
    pub(super) fn frame(
        &mut self,
        src: &[IoSlice<'_>],
        frame: &Frame,
        parts: &mut [Segment<'_>],
        want: u64,
        whole: bool,
        check_sum: bool,
        stop_early: bool,
    ) -> Result<u64, Error> {
        debug_assert!(frame.content <= u64::from(MAX_FRAME_CONTENT));
        let mut frame_src = Vec::new();
        sub_fragments(src, frame.start, frame.size, &mut frame_src);
        // The entry's checksum against the content: where the frame carries its own
        // checksum (acomp's frames with `checksum(true)`), zstd checks the content against
        // that one as it decodes the frame whole, and the entry's is compared with it: the
        // content is hashed once, not twice.
        let own = check_sum
            .then_some(frame.checksum)
            .flatten()
            .and_then(|_| own_checksum(&frame_src, frame.size));
        let mut hash =
            (check_sum && frame.checksum.is_some() && own.is_none()).then(|| Xxh64::new(0));
        // A read that stops inside a frame that declares its content size never reaches
        // the frame's checksum: zstd is told not to compute it (restored below).
        let skip_checksum = stop_early && frame.declared && own_flag(&frame_src, frame.size);
        if skip_checksum {
            ignore_checksum(self.dctx, true)?;
        }
        let mut frame_walk = Walk::new(&frame_src, &mut []);
        let res = self.zstd.decompress_range(
            self.dctx,
            self.dicts,
            self.scratch,
            &mut frame_walk,
            parts,
            hash.as_mut(),
        );
        if skip_checksum {
            ignore_checksum(self.dctx, false)?;
        }
        let pos = res?;
        if pos < want || (whole && (pos != frame.content || frame_walk.src_remaining() != 0)) {
            return Err(ENTRY_DISAGREES);
        }
        let content_sum = own.or_else(|| hash.map(|h| h.digest() as u32));
        if let (Some(sum), Some(listed)) = (content_sum, frame.checksum) {
            if sum != listed {
                return Err(CHECKSUM_DISAGREES);
            }
        }
        Ok(pos)
    }

    /// Decodes `frame` whole, its output to scratch memory only, to confirm its entry: its
    /// content ends where the entry says, and (with `check_sum`) its checksums match.
    pub(crate) fn confirm(
        &mut self,
        src: &[IoSlice<'_>],
        frame: &Frame,
        check_sum: bool,
    ) -> Result<(), Error> {
        let mut probe = [0u8; 1];
        let mut parts = [Segment::new(frame.content, &mut probe)];
        self.frame(src, frame, &mut parts, 0, true, check_sum, false)
            .map(|_| ())
    }

    /// Reads the segments out of `frames`, in order, the first of them at or before the
    /// first frame a segment touches. Each frame whose content a segment overlaps is
    /// decoded, alone, into that part of the segments. With `checked` each such frame is
    /// decoded to its end and its checksums checked, and every frame passed on the way
    /// whose entry is not confirmed (and whose content starts before the segments end) is
    /// decoded to confirm it. With `cache` (a kept table's, and the index of the first of
    /// `frames`), a frame worth it is decoded whole into the cache and the segments' part
    /// copied out of it. Returns the extent offset the output reached, as the plain range
    /// read does, and how many of `frames` were passed.
    pub(crate) fn read(
        &mut self,
        src: &[IoSlice<'_>],
        frames: impl Iterator<Item = Frame>,
        segments: &mut [Segment<'_>],
        checked: bool,
        cache: Option<(&FrameCache, usize)>,
    ) -> Result<(u64, usize), Error> {
        // Where the last segment that takes bytes ends: the entries of the frames before
        // it place every byte the read returns (and where the content ends).
        let reach = segments
            .iter()
            .rev()
            .find(|s| !s.is_empty())
            .map_or(0, |s| s.offset() + s.len() as u64);
        let (mut end, mut passed) = (0u64, 0usize);
        let mut first = 0; // the first segment that may still take output
        for frame in frames {
            let (frame_start, content) = (frame.content_start, frame.content);
            let base = frame_start + content;
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
            passed += 1;
            let touched = segments[first..]
                .iter()
                .take_while(|s| s.offset() < base)
                .any(|s| !s.is_empty());
            if !touched {
                if checked && !frame.confirmed && frame_start < reach {
                    self.confirm(src, &frame, false)?;
                }
                continue;
            }
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
            if let Some((cache, at)) = cache.filter(|(c, _)| c.worth(src, &frame, whole)) {
                let filled = cache.fill(src, at + passed - 1, &frame, checked, |buf| {
                    self.whole_into(src, &frame, buf, checked, !whole)
                });
                if let Some(res) = filled {
                    let (pos, cached) = res?;
                    for p in &mut parts {
                        let from = p.offset() as usize;
                        let len = p.len();
                        p.buf_mut()
                            .copy_from_slice(&cached.content()[from..from + len]);
                    }
                    end = frame_start + pos;
                    continue;
                }
            }
            if whole {
                parts.push(Segment::new(content, &mut probe));
            }
            let pos = self.frame(src, &frame, &mut parts, want, whole, checked, !whole)?;
            end = frame_start + pos;
        }
        Ok((end, passed))
    }
}

impl Zstd {
    /// A range read of a source that ends with `table`: the table is checked whole
    /// ([`TableFrame::check`]), then the frames are read ([`Decoder::read`]). Returns the
    /// extent offset the output reached, as the plain range read does.
    ///
    /// Each decoded frame is held to its entry (every frame's header is, on every read, by
    /// the table's check): content that ends before the segments' part of it does, or
    /// (where the segments reach the frame's end, or `checked`) content of another length
    /// or a frame of other bytes than listed, is `EBADMSG`. With `checked` (the transform's
    /// `checksum(true)`) the frame is decoded to its end, the entry's checksum, where the
    /// table has them, is checked against the content's XXH64, and the frames before it
    /// whose headers declare no content size are decoded to confirm their entries.
    pub(in crate::alg::zstd) fn seekable_range<'x>(
        &self,
        dctx: &mut DCtx<'x>,
        dicts: Option<&'x Digested>,
        scratch: &mut [u8],
        walk: &Walk<'_, '_>,
        table: &TableFrame,
        segments: &mut [Segment<'_>],
    ) -> Result<u64, Error> {
        let src: &[IoSlice<'_>] = walk.src_fragments();
        let mut frames = Vec::new();
        let (mut start, mut content_start) = (0usize, 0u64);
        table.check(src, |e, declared| {
            frames.push(Frame {
                start,
                size: e.compressed as usize,
                content_start,
                content: u64::from(e.content),
                checksum: e.checksum,
                confirmed: declared,
                declared,
            });
            start += e.compressed as usize;
            content_start += u64::from(e.content);
        })?;
        let mut decoder = Decoder {
            zstd: self,
            dctx,
            dicts,
            scratch,
        };
        let checked = self.params.checksum;
        decoder
            .read(src, frames.into_iter(), segments, checked, None)
            .map(|(end, _)| end)
    }
}

impl Decoder<'_, '_, '_> {
    /// A range read through a kept table (`kept.rs`), the source already matched to it; or,
    /// with `verify`, the verification pass: every frame decoded whole and confirmed.
    pub(crate) fn kept(
        &mut self,
        walk: &Walk<'_, '_>,
        table: &SeekTable,
        segments: &mut [Segment<'_>],
        verify: bool,
    ) -> Result<u64, Error> {
        let src: &[IoSlice<'_>] = walk.src_fragments();
        let decoder = self;
        if verify {
            for i in 0..table.frames() {
                decoder.confirm(src, &table.frame(i), true)?;
            }
            table.set_verified();
            return Ok(0);
        }
        let checked = decoder.zstd.params.checksum;
        // The first frame a segment that takes bytes touches; a checked read starts
        // earlier, at the first frame whose entry is not confirmed.
        let offset = segments
            .iter()
            .find(|s| !s.is_empty())
            .map_or(u64::MAX, |s| s.offset());
        let touched = table.frame_at(offset);
        let confirmed = table.confirmed();
        // The frame decoded last, where the read falls inside it (a checked read: where the
        // entries before it are confirmed).
        if touched < table.frames() && (!checked || touched <= confirmed) {
            let frame = table.frame(touched);
            if let Some(end) = table.cache().serve(src, touched, &frame, segments, checked) {
                return Ok(end);
            }
        }
        let first = if checked {
            touched.min(confirmed)
        } else {
            touched
        };
        let frames = (first..table.frames()).map(|i| table.frame(i));
        let cache = Some((table.cache(), first));
        let (end, passed) = decoder.read(src, frames, segments, checked, cache)?;
        // A checked read that started at or before the first unconfirmed frame confirmed
        // every frame it passed (decoded whole, confirmed, or declared).
        if checked && first <= confirmed && first + passed > confirmed {
            table.confirm_to(first + passed);
        }
        Ok(end)
    }
}
