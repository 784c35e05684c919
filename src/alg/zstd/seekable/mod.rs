//! zstd's seekable format (`contrib/seekable_format/zstd_seekable_compression_format.md`
//! in zstd's repository): content cut into independent frames, followed by a seek table in
//! a skippable frame. Every zstd decoder reads such a source whole (it skips the table); a
//! reader that knows the table decodes only the frames a range touches (`read.rs`).
//!
//! The seek table, at the very end of the source:
//!
//! | field | bytes | value |
//! | --- | --- | --- |
//! | `Skippable_Magic_Number` | 4 | `0x184D2A5E` (LE) |
//! | `Frame_Size` | 4 | bytes after this field: entries and footer |
//! | `Seek_Table_Entries` | 8 or 12 each | `Compressed_Size`, `Decompressed_Size` (u32 LE), `Checksum` (the low 32 bits of the content's XXH64) where the descriptor says so |
//! | `Number_Of_Frames` | 4 | u32 LE, at most [`MAX_FRAMES`] |
//! | `Seek_Table_Descriptor` | 1 | bit 7 `Checksum_Flag`, bits 2-6 reserved (must be 0), bits 0-1 unused |
//! | `Seekable_Magic_Number` | 4 | `0x8F92EAB1` (LE) |
//!
//! A source is read as seekable when its last four bytes are the seekable magic number;
//! from then on, a table that breaks the format, or contradicts the frames before it, is
//! `EBADMSG`.

mod cache;
mod fragments;
pub(crate) mod kept;
mod read;
mod whole;

pub(crate) use fragments::sub_fragments;
use fragments::{read_at, skip};
pub(crate) use read::Decoder;

use std::io::IoSlice;

use super::frame::{self, FRAME_HEADER_MAX, FrameHeader};
use crate::{Error, Walk};

/// `Seekable_Magic_Number`, the last four bytes of a seekable source.
pub(crate) const SEEKABLE_MAGIC: u32 = 0x8F92_EAB1;

/// The skippable frame magic number the seek table's frame carries (one of the sixteen of
/// RFC 8878 §3.1.2, fixed by the seekable format).
pub(crate) const SEEK_TABLE_MAGIC: u32 = 0x184D_2A5E;

/// Bytes of the footer: `Number_Of_Frames`, `Seek_Table_Descriptor`, `Seekable_Magic_Number`
/// (the reference's `ZSTD_seekTableFooterSize`).
const FOOTER: usize = 9;

/// Bytes of the skippable frame header: magic and `Frame_Size`.
const SKIPPABLE_HEADER: usize = 8;

/// Most frames a seek table may list (the reference's `ZSTD_SEEKABLE_MAXFRAMES`).
pub(crate) const MAX_FRAMES: u32 = 0x800_0000;

/// Most content one frame may hold, in bytes (the reference's
/// `ZSTD_SEEKABLE_MAX_FRAME_DECOMPRESSED_SIZE`, 1 GiB): the writer refuses larger frames, the
/// reader a table that lists one.
pub(crate) const MAX_FRAME_CONTENT: u32 = 0x4000_0000;

/// `Checksum_Flag` in the descriptor.
const DESCRIPTOR_CHECKSUM: u8 = 0x80;

/// The descriptor's reserved bits: a reader must refuse a table that sets them.
const DESCRIPTOR_RESERVED: u8 = 0x7C;

/// Bytes a seek table of `frames` entries takes, with or without checksums.
pub(crate) fn table_bytes(frames: usize, checksums: bool) -> usize {
    SKIPPABLE_HEADER + frames * entry_bytes(checksums) + FOOTER
}

fn entry_bytes(checksums: bool) -> usize {
    if checksums { 12 } else { 8 }
}

/// One frame as the seek table lists it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Entry {
    /// `Compressed_Size`: bytes of the frame in the source.
    pub(crate) compressed: u32,
    /// `Decompressed_Size`: bytes of its content.
    pub(crate) content: u32,
    /// `Checksum`: the low 32 bits of the content's XXH64, where the table has them.
    pub(crate) checksum: Option<u32>,
}

/// Appends the seek table of `entries` to `dst`: with checksums where every entry has one.
pub(crate) fn write_table(entries: &[Entry], dst: &mut Vec<u8>) {
    let checksums = !entries.is_empty() && entries.iter().all(|e| e.checksum.is_some());
    let frame_size = table_bytes(entries.len(), checksums) - SKIPPABLE_HEADER;
    dst.extend_from_slice(&SEEK_TABLE_MAGIC.to_le_bytes());
    dst.extend_from_slice(&(frame_size as u32).to_le_bytes());
    for e in entries {
        dst.extend_from_slice(&e.compressed.to_le_bytes());
        dst.extend_from_slice(&e.content.to_le_bytes());
        if let (true, Some(c)) = (checksums, e.checksum) {
            dst.extend_from_slice(&c.to_le_bytes());
        }
    }
    dst.extend_from_slice(&(entries.len() as u32).to_le_bytes());
    dst.push(if checksums { DESCRIPTOR_CHECKSUM } else { 0 });
    dst.extend_from_slice(&SEEKABLE_MAGIC.to_le_bytes());
}

/// One frame as a read sees it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Frame {
    /// Where its bytes start in the source.
    pub(crate) start: usize,
    /// `Compressed_Size`.
    pub(crate) size: usize,
    /// Where its content starts in the extent: the sum of the entries before it.
    pub(crate) content_start: u64,
    /// `Decompressed_Size`.
    pub(crate) content: u64,
    /// The entry's checksum, where the table has them.
    pub(crate) checksum: Option<u32>,
    /// Whether the entry's content size is confirmed: by the frame's header, which declares
    /// it, or by an earlier decode of the frame (a kept table's).
    pub(crate) confirmed: bool,
    /// Whether the frame's header declares its content size (checked against the entry).
    pub(crate) declared: bool,
}

/// A seek table found at the end of a source, its frame checked (magic, size, footer); the
/// entries are read on demand.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct TableFrame {
    frames: u32,
    checksums: bool,
    /// Bytes of the source before the table: the frames the entries describe.
    data: usize,
}

impl TableFrame {
    /// Bytes of the source before the table: the frames.
    pub(crate) fn data(&self) -> usize {
        self.data
    }

    /// The number of entries.
    pub(crate) fn frames(&self) -> u32 {
        self.frames
    }

    /// Whether the entries carry checksums.
    pub(crate) fn checksums(&self) -> bool {
        self.checksums
    }
}

/// The footer's descriptor sets a reserved bit.
const RESERVED_BITS: Error = Error::Corrupt {
    detail: "seek table descriptor sets reserved bits",
};

/// More frames than the format allows.
const TOO_MANY_FRAMES: Error = Error::Corrupt {
    detail: "seek table lists more frames than the format allows (0x8000000)",
};

/// The footer's frame count does not match the skippable frame around it.
const NO_TABLE_FRAME: Error = Error::Corrupt {
    detail: "seek table footer without a skippable frame of its size (magic 0x184D2A5E) before it",
};

/// The entries' compressed sizes do not add up to the bytes before the table.
const SIZES_DISAGREE: Error = Error::Corrupt {
    detail: "seek table's compressed sizes do not add up to the frames before it",
};

/// A frame whose header, content or length disagrees with its seek table entry.
pub(crate) const ENTRY_DISAGREES: Error = Error::Corrupt {
    detail: "seek table entry contradicts its frame (content size or length)",
};

/// An entry lists a frame of more content than the format allows.
const FRAME_OVER_LIMIT: Error = Error::Corrupt {
    detail: "seek table lists a frame of more than 1 GiB of content (the format's limit)",
};

impl TableFrame {
    /// The seek table at the end of the walk's source (the walk at its start), where its
    /// last four bytes are the seekable magic number; `Ok(None)` where they are not (a
    /// plain source: one read of four bytes). A table whose frame is malformed or
    /// longer than the source is `EBADMSG`.
    #[inline]
    pub(crate) fn find(walk: &Walk<'_, '_>) -> Result<Option<TableFrame>, Error> {
        let src = walk.src_fragments();
        let len = walk.slen();
        let mut magic = [0u8; 4];
        if len < FOOTER {
            return Ok(None);
        }
        read_at(src, len, len - 4, &mut magic);
        if u32::from_le_bytes(magic) != SEEKABLE_MAGIC {
            return Ok(None);
        }
        TableFrame::parse(src, len).map(Some)
    }

    #[cold]
    fn parse(src: &[IoSlice<'_>], len: usize) -> Result<TableFrame, Error> {
        let mut footer = [0u8; FOOTER];
        read_at(src, len, len - FOOTER, &mut footer);
        let frames = u32::from_le_bytes(footer[..4].try_into().expect("4 bytes"));
        let descriptor = footer[4];
        if descriptor & DESCRIPTOR_RESERVED != 0 {
            return Err(RESERVED_BITS);
        }
        if frames > MAX_FRAMES {
            return Err(TOO_MANY_FRAMES);
        }
        let checksums = descriptor & DESCRIPTOR_CHECKSUM != 0;
        let bytes = table_bytes(frames as usize, checksums);
        if bytes > len {
            return Err(Error::Truncated);
        }
        let mut header = [0u8; SKIPPABLE_HEADER];
        read_at(src, len, len - bytes, &mut header);
        let magic = u32::from_le_bytes(header[..4].try_into().expect("4 bytes"));
        let size = u32::from_le_bytes(header[4..].try_into().expect("4 bytes"));
        if magic != SEEK_TABLE_MAGIC || size as usize != bytes - SKIPPABLE_HEADER {
            return Err(NO_TABLE_FRAME);
        }
        Ok(TableFrame {
            frames,
            checksums,
            data: len - bytes,
        })
    }

    /// The table's entries, in order, read across the source's fragments.
    pub(crate) fn entries<'w>(&self, src: &'w [IoSlice<'w>]) -> Entries<'w> {
        let mut walk = Walk::new(src, &mut []);
        skip(&mut walk, self.data + SKIPPABLE_HEADER);
        Entries {
            walk,
            left: self.frames,
            checksums: self.checksums,
        }
    }

    /// Checks the entries against the source and returns the content's size, the sum of
    /// their decompressed sizes: their compressed sizes add up to the bytes before the
    /// table, each points at a frame header that lies within its compressed size and
    /// declares, where it declares one, the entry's content size, and none lists more than
    /// [`MAX_FRAME_CONTENT`]. Reads each frame's header, nothing past it.
    pub(crate) fn content_size(&self, walk: &Walk<'_, '_>) -> Result<u64, Error> {
        self.check(walk.src_fragments(), |_, _| {})
    }

    /// [`content_size`](TableFrame::content_size), calling `seen` with each entry and
    /// whether its frame's header declares its content size (then checked against the
    /// entry): an entry whose frame declares none is confirmed only by decoding the frame.
    pub(crate) fn check(
        &self,
        src: &[IoSlice<'_>],
        mut seen: impl FnMut(Entry, bool),
    ) -> Result<u64, Error> {
        let mut frames = Walk::new(src, &mut []);
        let (mut compressed, mut content) = (0u64, 0u64);
        for e in self.entries(src) {
            if e.content > MAX_FRAME_CONTENT {
                return Err(FRAME_OVER_LIMIT);
            }
            compressed += u64::from(e.compressed);
            content += u64::from(e.content);
            if compressed > self.data as u64 {
                return Err(SIZES_DISAGREE);
            }
            let mut buf = [0u8; FRAME_HEADER_MAX];
            let n = frames.peek_src(&mut buf[..FRAME_HEADER_MAX.min(e.compressed as usize)]);
            let declared = match FrameHeader::read(&buf[..n]) {
                FrameHeader::Frame { content_size, .. } => content_size,
                FrameHeader::Skippable { .. } => Some(0),
                FrameHeader::Incomplete => return Err(ENTRY_DISAGREES),
                // No magic number where the entry says a frame starts.
                FrameHeader::Invalid(code) => {
                    return Err(match frame::header_error(code, false, 0) {
                        frame::NOT_A_FRAME => ENTRY_DISAGREES,
                        e => e,
                    });
                }
            };
            if declared.is_some_and(|d| d != u64::from(e.content)) {
                return Err(ENTRY_DISAGREES);
            }
            seen(e, declared.is_some());
            skip(&mut frames, e.compressed as usize);
        }
        if compressed != self.data as u64 {
            return Err(SIZES_DISAGREE);
        }
        Ok(content)
    }
}

/// The entries of a [`TableFrame`], read one by one.
#[derive(Debug)]
pub(crate) struct Entries<'w> {
    walk: Walk<'w, 'static>,
    left: u32,
    checksums: bool,
}

impl Iterator for Entries<'_> {
    type Item = Entry;

    fn next(&mut self) -> Option<Entry> {
        if self.left == 0 {
            return None;
        }
        self.left -= 1;
        let mut b = [0u8; 12];
        let n = entry_bytes(self.checksums);
        self.walk.peek_src(&mut b[..n]);
        skip(&mut self.walk, n);
        let word = |i: usize| u32::from_le_bytes(b[i..i + 4].try_into().expect("4 bytes"));
        Some(Entry {
            compressed: word(0),
            content: word(4),
            checksum: self.checksums.then(|| word(8)),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_layout() {
        let mut t = Vec::new();
        let e = |c, d, s| Entry {
            compressed: c,
            content: d,
            checksum: s,
        };
        write_table(&[e(10, 20, Some(7)), e(11, 21, Some(8))], &mut t);
        assert_eq!(t.len(), table_bytes(2, true));
        assert_eq!(&t[..8], &[0x5E, 0x2A, 0x4D, 0x18, 33, 0, 0, 0]);
        assert_eq!(
            &t[t.len() - 9..],
            &[2, 0, 0, 0, 0x80, 0xB1, 0xEA, 0x92, 0x8F]
        );
        t.clear();
        write_table(&[e(10, 20, None)], &mut t);
        assert_eq!(t.len(), 8 + 8 + 9);
        assert_eq!(t[t.len() - 5], 0);
    }
}
