//! The seekable format's calls: the writer (content cut into independent zstd frames with
//! zstd's seek table after them, the format: `alg/zstd/seekable/`), so that a range read
//! decodes only the frames it touches; and the reads through a seek table the caller keeps
//! ([`SeekTable`]).

use std::io::{IoSlice, IoSliceMut};

use crate::alg::zstd::seekable::{self, Entry, MAX_FRAME_CONTENT, MAX_FRAMES};
use crate::pool::RequestKind;
use crate::{Acomp, Error, SeekTable, Segment, Walk, segment};

/// Bytes of a frame header's first two fields: magic and frame header descriptor, whose
/// bit 2 is `Content_Checksum_Flag` (RFC 8878 §3.1.1.1.1).
const DESCRIPTOR_AT: usize = 4;
const FHD_CHECKSUM: u8 = 0b100;

impl Acomp {
    /// Compresses `src` as zstd's seekable format and appends it to `dst`: independent
    /// frames of `frame_bytes` bytes of content each (the last one shorter), each as
    /// [`compress`](Acomp::compress) writes it, then the seek table (a skippable frame
    /// listing each frame's compressed and decompressed size and, where the transform has
    /// [`ZstdParams::checksum`](crate::ZstdParams::checksum)`(true)`, its checksum).
    /// Returns the bytes appended. Any zstd decoder decompresses the result whole;
    /// [`decompress_range`](Acomp::decompress_range) decodes only the frames a read touches
    /// (the cost and the trade-off: there). An empty `src` gives a seek table of no frames.
    ///
    /// ```
    /// use std::io::IoSlice;
    /// use acomp::{Acomp, Segment};
    ///
    /// let tfm = Acomp::new("zstd")?;
    /// let extent: Vec<u8> = (0..131072u32).map(|i| (i / 512) as u8).collect();
    /// let mut stored = Vec::new();
    /// tfm.compress_seekable_to_vec(&extent, 16384, &mut stored)?;
    /// assert_eq!(tfm.content_size(&[IoSlice::new(&stored)])?, Some(131072));
    ///
    /// // The page at 100 KiB: only the frame at 96..112 KiB is decoded.
    /// let mut page = [0u8; 4096];
    /// let mut segs = [Segment::new(102400, &mut page)];
    /// assert_eq!(tfm.decompress_range(&[IoSlice::new(&stored)], &mut segs)?, 4096);
    /// assert_eq!(&page[..], &extent[102400..106496]);
    /// # Ok::<(), acomp::Error>(())
    /// ```
    ///
    /// # Errors
    ///
    /// - [`Error::InvalidParameter`] (`EINVAL`): a transform other than zstd; `frame_bytes`
    ///   of 0 or over 1 GiB, or more than 2^27 frames (the format's limits: the reference's
    ///   `ZSTD_SEEKABLE_MAX_FRAME_DECOMPRESSED_SIZE` and `ZSTD_SEEKABLE_MAXFRAMES`).
    /// - [`Error::NoMemory`] (`ENOMEM`).
    ///
    /// `dst` is as it was after any error.
    pub fn compress_seekable_to_vec(
        &self,
        src: &[u8],
        frame_bytes: usize,
        dst: &mut Vec<u8>,
    ) -> Result<usize, Error> {
        let start = dst.len();
        let res = self.seekable_frames(&[IoSlice::new(src)], frame_bytes, dst);
        if res.is_err() {
            dst.truncate(start);
        }
        res
    }

    /// [`compress_seekable_to_vec`](Acomp::compress_seekable_to_vec) over fragments: the
    /// source fragments (`slen` bytes in all) as seekable frames and their seek table, into
    /// the destination fragments (a bio's pages). Returns the bytes written, at the front of
    /// the destination. The output is built in memory (one buffer of its size) and copied
    /// into the fragments; it is the same however either side is cut. A destination of
    /// [`compress_seekable_bound`](Acomp::compress_seekable_bound) bytes always suffices.
    ///
    /// # Errors
    ///
    /// As [`compress_seekable_to_vec`](Acomp::compress_seekable_to_vec), and
    /// [`Error::NoSpace`] (`ENOSPC`) where the output does not fit, with `needed` its exact
    /// size (the whole source is compressed to learn it).
    pub fn compress_seekable(
        &self,
        src: &[IoSlice<'_>],
        frame_bytes: usize,
        dst: &mut [IoSliceMut<'_>],
    ) -> Result<usize, Error> {
        let mut out = Vec::new();
        let n = self.seekable_frames(src, frame_bytes, &mut out)?;
        let capacity = dst.iter().map(|d| d.len()).sum();
        if n > capacity {
            return Err(Error::NoSpace {
                needed: Some(n as u64),
                capacity,
            });
        }
        let mut rest = &out[..];
        for d in dst.iter_mut() {
            let take = d.len().min(rest.len());
            d[..take].copy_from_slice(&rest[..take]);
            rest = &rest[take..];
        }
        Ok(n)
    }

    /// The largest output [`compress_seekable`](Acomp::compress_seekable) can give for
    /// `slen` bytes of source in frames of `frame_bytes` (both in bytes): each frame's
    /// [`compress_bound`](Acomp::compress_bound) and the seek table with checksums.
    /// `usize::MAX` where `frame_bytes` is 0.
    pub fn compress_seekable_bound(&self, slen: usize, frame_bytes: usize) -> usize {
        if frame_bytes == 0 {
            return usize::MAX;
        }
        let (full, last) = (slen / frame_bytes, slen % frame_bytes);
        let frames = full + usize::from(last > 0);
        let bound = full
            .saturating_mul(self.compress_bound(frame_bytes))
            .saturating_add(if last > 0 {
                self.compress_bound(last)
            } else {
                0
            });
        bound.saturating_add(seekable::table_bytes(frames, true))
    }

    /// Reads a byte range of a seekable source through its kept [`SeekTable`], as
    /// [`decompress_range`](Acomp::decompress_range) reads it (the same segments, the same
    /// result, the same zero fill), without reading or checking the table again: a binary
    /// search finds the first frame a segment touches, and only the frames the segments
    /// touch are decoded (a read inside the frame the table decoded last, its bytes in the
    /// source unchanged, copies it out: [`SeekTable`]). The source must be the one the
    /// table was parsed from: its length and its seek table are compared with the table's
    /// on every read (12 bytes per frame with checksums, 8 without).
    ///
    /// - **Unchecked** (the default parameters): each frame is decoded up to the last byte
    ///   the segments take (to its end where they reach it, then held to its entry's size;
    ///   a frame of one block is decoded whole into the table's last frame, and held to its
    ///   entry's size, whatever the read takes: [`SeekTable`], "The frame decoded last").
    ///   What such a read cannot see: a change inside the frame past where it stops, and,
    ///   through a table that is not confirmed ([`SeekTable::is_confirmed`]), an earlier
    ///   entry that lies about the size of a frame whose header declares none (the bytes
    ///   come from the right frame at the wrong place).
    /// - **Checked** ([`ZstdParams::checksum`](crate::ZstdParams::checksum)`(true)`): each
    ///   frame the read touches is decoded to its end and held to its entry (content size,
    ///   the table's checksum where it has them, the frame's own checksum where it has
    ///   one), and the entries before it that are not yet confirmed are confirmed first,
    ///   by decoding their frames (once: the table keeps what it learnt). So a checked read
    ///   never returns `Ok` with bytes other than the writer's, whoever wrote the file,
    ///   but for one in 2^32 where a frame's content changed and it carries a checksum
    ///   (with none, the frame or the table, a change inside a frame's content that keeps
    ///   the format valid decodes as other bytes: the crate docs' contract). Through a
    ///   table [`verify_seek_table`](Acomp::verify_seek_table) has verified, or one whose
    ///   frames all declare their sizes (acomp's), it costs what a checked read of one
    ///   frame costs.
    ///
    /// # Errors
    ///
    /// As [`decompress_range`](Acomp::decompress_range), and
    /// [`Error::InvalidParameter`] (`EINVAL`) for a source whose length or seek table
    /// differs from the table's (it changed under the table: parse it again), or a
    /// transform other than zstd. After any error the segments are zero-filled.
    pub fn decompress_seekable(
        &self,
        table: &SeekTable,
        src: &[IoSlice<'_>],
        segments: &mut [Segment<'_>],
    ) -> Result<usize, Error> {
        let mut walk = Walk::new(src, &mut []);
        let refusal = segment::validate(segments)
            .err()
            .or_else(|| table.check_source(&walk).err());
        let res = match refusal {
            None => self.inner.seekable(&mut walk, table, segments, false),
            Some(e) => Err(self.inner.refuse(RequestKind::Range, e)),
        };
        let end = res.as_ref().map_or(0, |&end| end);
        let delivered = segment::finish(segments, end);
        res.map(|_| delivered)
    }

    /// Verifies a kept [`SeekTable`] against its source in one decode pass: every frame
    /// decoded to its end and held to its entry (content size, the table's checksum where
    /// it has them, the frame's own checksum where it has one), whatever the transform's
    /// [`checksum`](crate::ZstdParams::checksum) setting. Afterwards
    /// [`SeekTable::is_verified`] is true, and checked reads through the table confirm
    /// nothing more: on frames that do not declare their content size (zstd's C writer,
    /// pyzstd) they cost what they cost on acomp's own. Verify once, where the source is
    /// read many times; a one-off read needs none.
    ///
    /// # Errors
    ///
    /// The first fault met, as a read of the whole content would meet it
    /// ([`decompress_range`](Acomp::decompress_range)'s errors; a frame whose content
    /// disagrees with its entry's size or checksum is [`Error::Corrupt`]), and
    /// `decompress_seekable`'s refusal of another source. The table is then not verified.
    pub fn verify_seek_table(&self, table: &SeekTable, src: &[IoSlice<'_>]) -> Result<(), Error> {
        let mut walk = Walk::new(src, &mut []);
        match table.check_source(&walk) {
            Ok(()) => self
                .inner
                .seekable(&mut walk, table, &mut [], true)
                .map(|_| ()),
            Err(e) => Err(self.inner.refuse(RequestKind::Range, e)),
        }
    }

    /// Appends the frames and the seek table to `dst`; returns the bytes appended.
    fn seekable_frames(
        &self,
        src: &[IoSlice<'_>],
        frame_bytes: usize,
        dst: &mut Vec<u8>,
    ) -> Result<usize, Error> {
        let slen: usize = src.iter().map(|s| s.len()).sum();
        check_seekable(self.name(), slen, frame_bytes)?;
        let start = dst.len();
        let mut entries = Vec::new();
        let mut frame = Vec::new();
        let mut fragments: Vec<IoSlice<'_>> = Vec::new();
        let mut at = 0;
        while at < slen {
            let len = frame_bytes.min(slen - at);
            seekable::sub_fragments(src, at, len, &mut fragments);
            at += len;
            frame.clear();
            let room = self.compress_bound(len);
            frame.try_reserve(room).map_err(|_| Error::NoMemory)?;
            frame.resize(room, 0);
            let n = self.compress(&fragments, &mut [IoSliceMut::new(&mut frame)])?;
            let frame = &frame[..n];
            let checksum = (frame[DESCRIPTOR_AT] & FHD_CHECKSUM != 0)
                .then(|| u32::from_le_bytes(frame[n - 4..].try_into().expect("4 bytes")));
            dst.try_reserve(n).map_err(|_| Error::NoMemory)?;
            dst.extend_from_slice(frame);
            entries.push(Entry {
                compressed: n as u32,
                content: len as u32,
                checksum,
            });
        }
        dst.try_reserve(seekable::table_bytes(entries.len(), true))
            .map_err(|_| Error::NoMemory)?;
        seekable::write_table(&entries, dst);
        Ok(dst.len() - start)
    }
}

/// The writer's refusals: a transform other than zstd, a frame size out of the format's
/// range, too many frames.
fn check_seekable(name: &str, slen: usize, frame_bytes: usize) -> Result<(), Error> {
    let reason = if name != "zstd" {
        format!("the seekable format is zstd's; this transform is {name}")
    } else if frame_bytes == 0 || frame_bytes > MAX_FRAME_CONTENT as usize {
        format!(
            "frame_bytes {frame_bytes} out of the seekable format's range 1..={MAX_FRAME_CONTENT}"
        )
    } else if slen.div_ceil(frame_bytes) > MAX_FRAMES as usize {
        format!(
            "{} frames of {frame_bytes} bytes: over the seekable format's {MAX_FRAMES}",
            slen.div_ceil(frame_bytes)
        )
    } else {
        return Ok(());
    };
    Err(Error::InvalidParameter { reason })
}
