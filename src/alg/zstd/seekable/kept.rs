//! A seek table parsed once and kept by the caller for many reads, as zstd's C library
//! keeps a `ZSTD_seekable` and pyzstd a `SeekableZstdFile`: the entries as offsets (a read
//! finds its first frame by binary search), and what is known of them. The reads and the
//! verification pass: `read.rs`; the calls: `Acomp::decompress_seekable` and
//! `Acomp::verify_seek_table` (`src/seekable.rs`).

use std::io::IoSlice;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use super::cache::FrameCache;
use super::{FOOTER, Frame, SEEKABLE_MAGIC, TableFrame, read_at};
use crate::{Error, Walk};

/// zstd's seek table of a seekable source, parsed and checked once, for many range reads
/// through [`Acomp::decompress_seekable`](crate::Acomp::decompress_seekable) (zstd's
/// `ZSTD_seekable`, pyzstd's `SeekableZstdFile`).
///
/// [`SeekTable::parse`] checks what a one-off [`decompress_range`](crate::Acomp::decompress_range)
/// checks on every call: the table's frame, its entries' compressed sizes against the
/// source, each frame's header against its entry. A read through the table then goes
/// straight to its frames: a binary search, no table to read again.
///
/// **What a table knows of its entries.** Where a frame's header declares its content
/// size (acomp's frames do), the entry's decompressed size is confirmed by the parse. Where
/// it does not (zstd's C writer and pyzstd write such frames), only decoding the frame
/// confirms it, and every frame after it is placed by that size. A checked read
/// ([`ZstdParams::checksum`](crate::ZstdParams::checksum)`(true)`) confirms the entries it
/// depends on that are not yet confirmed, by decoding their frames once (the table keeps
/// what it learnt: later reads do not pay again);
/// [`Acomp::verify_seek_table`](crate::Acomp::verify_seek_table) confirms them all in one
/// decode pass, up front, with every checksum. Unchecked reads confirm nothing: through a
/// table that is not verified, an entry that lies about a frame without a declared size
/// places the frames after it elsewhere, unseen where the read stops early.
///
/// **The table belongs to its source.** Every read compares the source's length and its
/// seek table (the skippable frame at its end, byte for byte: 12 bytes per frame with
/// checksums, 8 without) with the ones the table was parsed from, and refuses a source
/// where they differ ([`Error::InvalidParameter`], `EINVAL`: parse it again). A change
/// inside the frames, the table left as it was, is a corrupt source, as for any read:
/// each frame a read decodes is held to its entry (checked: to its checksums too), and
/// what was confirmed of the frames it does not decode stands.
///
/// **The frame decoded last.** The table keeps the last frame a read decoded whole, where
/// its content is at most 128 KiB: that content and the frame's compressed bytes (so at
/// most about 260 KiB, allocated on the first such read, against the 33 bytes a frame of
/// the offsets; zstd's C library keeps a decoder and two 128 KiB buffers per
/// `ZSTD_seekable`). A read whose segments fall inside that frame, where the source still
/// holds the same bytes there (one comparison), is a copy out of it, not a decode; a
/// checked read is served only from a frame a checked read decoded and checked. A read
/// decodes a frame whole into it where that costs about what stopping early would: a frame
/// the read decodes whole anyway, or a frame of one block (zstd decodes a block whole
/// whatever part the read takes; zstd's C writer's empty last block counts as none). Such
/// an unchecked read then holds the frame to its entry's size too.
///
/// The table is `Send + Sync`: threads share it by reference; what reads confirm is kept
/// with atomics, the last frame behind a lock only ever tried (a read that finds it taken
/// decodes as without it, never waits).
///
/// ```
/// use std::io::IoSlice;
/// use acomp::{Acomp, Segment, SeekTable, ZstdParams};
///
/// let tfm = Acomp::with_zstd(ZstdParams::default().checksum(true))?;
/// let extent: Vec<u8> = (0..131072u32).map(|i| (i / 512) as u8).collect();
/// let mut stored = Vec::new();
/// tfm.compress_seekable_to_vec(&extent, 16384, &mut stored)?;
///
/// let src = [IoSlice::new(&stored)];
/// let table = SeekTable::parse(&src)?;
/// assert_eq!((table.frames(), table.content_size()), (8, 131072));
/// tfm.verify_seek_table(&table, &src)?; // one decode pass, every checksum
/// assert!(table.is_verified());
///
/// let mut page = [0u8; 4096];
/// let mut segs = [Segment::new(102400, &mut page)];
/// assert_eq!(tfm.decompress_seekable(&table, &src, &mut segs)?, 4096);
/// assert_eq!(&page[..], &extent[102400..106496]);
/// # Ok::<(), acomp::Error>(())
/// ```
#[derive(Debug)]
pub struct SeekTable {
    /// Where each frame's content starts in the extent, and the content's end: one more
    /// than the frames.
    content: Box<[u64]>,
    /// Where each frame's bytes start in the source, and the frames' end.
    at: Box<[usize]>,
    /// The entries' checksums, where the table has them.
    checksums: Option<Box<[u32]>>,
    /// Whether each frame's header declares its content size.
    declared: Box<[bool]>,
    /// The source's seek table, byte for byte, and the source's length.
    table: Box<[u8]>,
    src_len: usize,
    /// Every frame before this one has its entry confirmed.
    confirmed: AtomicUsize,
    verified: AtomicBool,
    /// The frame decoded last (`cache.rs`).
    cache: FrameCache,
}

/// A clone starts with no last frame of its own: its reads fill it.
impl Clone for SeekTable {
    fn clone(&self) -> Self {
        SeekTable {
            content: self.content.clone(),
            at: self.at.clone(),
            checksums: self.checksums.clone(),
            declared: self.declared.clone(),
            table: self.table.clone(),
            src_len: self.src_len,
            confirmed: AtomicUsize::new(self.confirmed.load(Ordering::Relaxed)),
            verified: AtomicBool::new(self.verified.load(Ordering::Relaxed)),
            cache: FrameCache::default(),
        }
    }
}

/// The source given to a read is not the one the table was parsed from.
fn other_source() -> Error {
    Error::InvalidParameter {
        reason: "the source's length or seek table differs from the one this SeekTable was \
                 parsed from: the source changed; parse its table again (SeekTable::parse)"
            .into(),
    }
}

impl SeekTable {
    /// Parses and checks the seek table at the end of a seekable source (its fragments,
    /// read across): the table's frame (magic, size, descriptor), each entry's compressed
    /// size against the source, each frame's header against its entry's content size where
    /// the header declares one, no frame over 1 GiB of content. Reads the table and each
    /// frame's header, nothing more.
    ///
    /// # Errors
    ///
    /// - [`Error::EmptySource`] (`EINVAL`); [`Error::InvalidParameter`] (`EINVAL`): the
    ///   source does not end with the seekable magic number (not a seekable source).
    /// - [`Error::Corrupt`], [`Error::Truncated`] (`EBADMSG`): a table that breaks the
    ///   format or contradicts its frames, as [`decompress_range`](crate::Acomp::decompress_range)
    ///   finds them.
    /// - [`Error::NoMemory`] (`ENOMEM`): the table's offsets (25 bytes a frame, 33 with
    ///   checksums) cannot be had.
    pub fn parse(src: &[IoSlice<'_>]) -> Result<SeekTable, Error> {
        let walk = Walk::new(src, &mut []);
        let len = walk.slen();
        if len == 0 {
            return Err(Error::EmptySource);
        }
        let Some(frame) = TableFrame::find(&walk)? else {
            return Err(Error::InvalidParameter {
                reason: format!(
                    "not a seekable source: its last four bytes are not the seekable magic \
                     number {SEEKABLE_MAGIC:#010X}"
                ),
            });
        };
        let n = frame.frames() as usize;
        let mut content = Vec::new();
        let mut at = Vec::new();
        let mut declared = Vec::new();
        let mut checksums = Vec::new();
        let sums = frame.checksums();
        content
            .try_reserve_exact(n + 1)
            .and(at.try_reserve_exact(n + 1))
            .and(declared.try_reserve_exact(n))
            .and(checksums.try_reserve_exact(if sums { n } else { 0 }))
            .map_err(|_| Error::NoMemory)?;
        let (mut c, mut a) = (0u64, 0usize);
        let total = frame.check(src, |e, d| {
            content.push(c);
            at.push(a);
            declared.push(d);
            if let Some(s) = e.checksum {
                checksums.push(s);
            }
            c += u64::from(e.content);
            a += e.compressed as usize;
        })?;
        content.push(total);
        at.push(frame.data());
        let mut table = Vec::new();
        table
            .try_reserve_exact(len - frame.data())
            .map_err(|_| Error::NoMemory)?;
        table.resize(len - frame.data(), 0);
        read_at(src, len, frame.data(), &mut table);
        let first_undeclared = declared.iter().position(|d| !d).unwrap_or(n);
        Ok(SeekTable {
            content: content.into(),
            at: at.into(),
            checksums: sums.then(|| checksums.into()),
            declared: declared.into(),
            table: table.into(),
            src_len: len,
            confirmed: AtomicUsize::new(first_undeclared),
            verified: AtomicBool::new(false),
            cache: FrameCache::default(),
        })
    }

    /// The number of frames the table lists.
    pub fn frames(&self) -> usize {
        self.declared.len()
    }

    /// The content's size in bytes: the sum of the entries' decompressed sizes.
    pub fn content_size(&self) -> u64 {
        self.content[self.frames()]
    }

    /// Whether [`Acomp::verify_seek_table`](crate::Acomp::verify_seek_table) has confirmed
    /// every entry against its frame.
    pub fn is_verified(&self) -> bool {
        self.verified.load(Ordering::Acquire)
    }

    /// Whether the table has every entry's decompressed size confirmed: by the frames'
    /// headers, by a verification, or by the checked reads so far.
    pub fn is_confirmed(&self) -> bool {
        self.confirmed() >= self.frames()
    }

    /// The source's length the table was parsed from, in bytes.
    pub fn source_len(&self) -> usize {
        self.src_len
    }

    /// Refuses a source other than the one the table was parsed from (its length, its
    /// seek table's bytes).
    pub(crate) fn check_source(&self, walk: &Walk<'_, '_>) -> Result<(), Error> {
        let len = walk.slen();
        if len != self.src_len {
            return Err(other_source());
        }
        let src = walk.src_fragments();
        let start = len - self.table.len();
        // A source of one fragment (the common case): one comparison in place.
        let same = match src {
            [one] => one[start..] == self.table[..],
            _ => {
                let mut tail = [0u8; 256];
                let mut at = 0;
                let mut same = true;
                while same && at < self.table.len() {
                    let n = (self.table.len() - at).min(tail.len());
                    read_at(src, len, start + at, &mut tail[..n]);
                    same = tail[..n] == self.table[at..at + n];
                    at += n;
                }
                same
            }
        };
        if !same {
            return Err(other_source());
        }
        debug_assert!(self.table.len() >= FOOTER);
        Ok(())
    }

    /// Frame `i` as a read sees it.
    #[inline]
    pub(crate) fn frame(&self, i: usize) -> Frame {
        Frame {
            start: self.at[i],
            size: self.at[i + 1] - self.at[i],
            content_start: self.content[i],
            content: self.content[i + 1] - self.content[i],
            checksum: self.checksums.as_ref().map(|s| s[i]),
            confirmed: self.declared[i] || i < self.confirmed(),
            declared: self.declared[i],
        }
    }

    /// The frame whose content holds `offset`: the first whose content ends past it (the
    /// number of frames where it is past the content's end).
    #[inline]
    pub(crate) fn frame_at(&self, offset: u64) -> usize {
        self.content[1..].partition_point(|&end| end <= offset)
    }

    /// Every frame before this one has its entry confirmed.
    #[inline]
    pub(crate) fn confirmed(&self) -> usize {
        self.confirmed.load(Ordering::Acquire)
    }

    /// Records that every frame before `to` has its entry confirmed; the first frame from
    /// there whose header declares no content size is the next to confirm.
    pub(crate) fn confirm_to(&self, to: usize) {
        let next = (to..self.frames())
            .find(|&i| !self.declared[i])
            .unwrap_or(self.frames());
        self.confirmed.fetch_max(next, Ordering::AcqRel);
    }

    /// The frame decoded last.
    #[inline]
    pub(crate) fn cache(&self) -> &FrameCache {
        &self.cache
    }

    pub(crate) fn set_verified(&self) {
        self.confirmed.store(self.frames(), Ordering::Release);
        self.verified.store(true, Ordering::Release);
    }
}
