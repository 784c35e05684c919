//! zstd's frame format as acomp reads it itself (RFC 8878 §3.1): frame headers, block
//! headers, the block maximum, and the one pass over a whole frame that lets the one-shot
//! path run.
//!
//! libzstd's decoders check some of these rules only on some paths (see the table in the
//! module above); acomp checks them here, the same way on every path and every cut.

use zstd_safe::zstd_sys::{
    ZSTD_BLOCKSIZE_MAX, ZSTD_CONTENTSIZE_UNKNOWN, ZSTD_ErrorCode, ZSTD_FRAMEHEADERSIZE_MAX,
    ZSTD_FrameType_e, ZSTD_MAGICNUMBER, ZSTD_SKIPPABLEHEADERSIZE,
};

use super::params::WINDOW_LOG_RANGE;
use super::zstd_error;
use crate::{Error, Walk, sys};

/// Longest frame header (`ZSTD_FRAMEHEADERSIZE_MAX`).
pub(super) const FRAME_HEADER_MAX: usize = ZSTD_FRAMEHEADERSIZE_MAX as usize;

/// Header of a skippable frame: magic and size (`ZSTD_SKIPPABLEHEADERSIZE`).
pub(super) const SKIPPABLE_HEADER: usize = ZSTD_SKIPPABLEHEADERSIZE as usize;

/// Largest block of any frame (`ZSTD_BLOCKSIZE_MAX`, 128 KiB).
pub(super) const BLOCK_SIZE_MAX: u64 = ZSTD_BLOCKSIZE_MAX as u64;

/// A block header's size (`ZSTD_blockHeaderSize`, RFC 8878 §3.1.1.2).
pub(super) const BLOCK_HEADER: usize = 3;

/// The content checksum at a frame's end: the low 4 bytes of XXH64 (§3.1.1).
pub(super) const CHECKSUM: usize = 4;

// Frame header descriptor bits (§3.1.1.1.1).
const FHD_DICT_ID: u8 = 0b0000_0011;
const FHD_CHECKSUM: u8 = 0b0000_0100;
const FHD_RESERVED: u8 = 0b0000_1000;
const FHD_SINGLE_SEGMENT: u8 = 0b0010_0000;
const FHD_FCS_SHIFT: u8 = 6;

/// The frame header at the start of a source, as libzstd's own parser reads it
/// (`ZSTD_getFrameHeader`), so that the window acomp checks is the one zstd's streaming
/// decoder would check.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum FrameHeader {
    /// A zstd frame.
    Frame {
        /// Bytes of the header.
        header_size: usize,
        /// The window in bytes; for a single-segment frame, its content size, as zstd's
        /// streaming decoder reckons it.
        window: u64,
        /// The content size the header declares, if it does.
        content_size: Option<u64>,
        /// Whether the frame ends with a content checksum.
        checksum: bool,
        /// The dictionary ID the header names; 0 where it names none.
        dict_id: u32,
    },
    /// A skippable frame (§3.1.2) of `size` bytes after its 8-byte header.
    Skippable { size: u32 },
    /// The bytes end before the header does.
    Incomplete,
    /// Not a valid header: the zstd error code.
    Invalid(usize),
}

impl FrameHeader {
    /// Reads the header at the start of `src`.
    pub(super) fn read(src: &[u8]) -> FrameHeader {
        let (ret, h) = sys::get_frame_header(src);
        if sys::is_error(ret) {
            return FrameHeader::Invalid(ret);
        }
        if ret > 0 {
            return FrameHeader::Incomplete;
        }
        if h.frameType == ZSTD_FrameType_e::ZSTD_skippableFrame {
            // zstd gives the skippable frame's size field as its content size.
            return FrameHeader::Skippable {
                size: h.frameContentSize as u32,
            };
        }
        FrameHeader::Frame {
            header_size: h.headerSize as usize,
            window: h.windowSize,
            content_size: (h.frameContentSize != ZSTD_CONTENTSIZE_UNKNOWN as u64)
                .then_some(h.frameContentSize),
            checksum: h.checksumFlag != 0,
            dict_id: h.dictID,
        }
    }
}

/// The largest block a frame of this window may hold (§3.1.1.2.4, `Block_Maximum_Size`):
/// `min(window, 128 KiB)`. It bounds every block's size field: the content of a raw block,
/// the repeat count of an RLE block, the compressed size of a compressed block.
#[inline]
pub(super) fn block_max(window: u64) -> u64 {
    window.min(BLOCK_SIZE_MAX)
}

/// The type of a block (§3.1.1.2.2).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum BlockType {
    Raw,
    Rle,
    Compressed,
}

/// A block header (§3.1.1.2): `Last_Block` (bit 0), `Block_Type` (bits 1-2),
/// `Block_Size` (bits 3-23), little-endian.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct BlockHeader {
    pub(super) last: bool,
    pub(super) kind: BlockType,
    /// `Block_Size`: bytes of content (raw), times the byte repeats (RLE), or compressed
    /// bytes (compressed).
    pub(super) size: u32,
}

impl BlockHeader {
    /// Parses a block header; `None` for the reserved block type.
    #[inline]
    pub(super) fn parse(b: [u8; BLOCK_HEADER]) -> Option<BlockHeader> {
        let h = u32::from_le_bytes([b[0], b[1], b[2], 0]);
        let kind = match (h >> 1) & 3 {
            0 => BlockType::Raw,
            1 => BlockType::Rle,
            2 => BlockType::Compressed,
            _ => return None,
        };
        Some(BlockHeader {
            last: h & 1 != 0,
            kind,
            size: h >> 3,
        })
    }

    /// Whether the block breaks the block maximum `max`: its `Block_Size`, or the bytes
    /// it takes in the frame, over it. The second matters for an RLE block (one byte of
    /// content) in a frame whose maximum is 0 (a single-segment frame of empty content):
    /// libzstd's streaming decoder checks the bytes a block takes, its one-shot decoder
    /// neither, so both are checked here for the paths to agree.
    #[inline]
    pub(super) fn exceeds(&self, max: u64) -> bool {
        u64::from(self.size) > max || self.content_len() as u64 > max
    }

    /// Checks the rules acomp holds for every block before zstd sees it, the same on
    /// every path: `Block_Size` within the block maximum `max` ([`BlockHeader::exceeds`]),
    /// and a compressed block at least as long as its literals and sequences section
    /// headers (§3.1.1.3: 2 bytes, libzstd's `MIN_CBLOCK_SIZE`). libzstd's one-shot decoder
    /// refuses a shorter compressed block; its streaming decoder, fed block by block, skips
    /// a block of size 0 whatever its type (found by differential fuzzing).
    #[inline]
    pub(super) fn check(&self, max: u64) -> Result<(), Error> {
        if self.exceeds(max) {
            Err(BLOCK_OVER_MAXIMUM)
        } else if self.kind == BlockType::Compressed && self.size < COMPRESSED_BLOCK_MIN {
            Err(COMPRESSED_BLOCK_TOO_SHORT)
        } else {
            Ok(())
        }
    }

    /// Bytes of the block's content in the frame, after its header.
    #[inline]
    pub(super) fn content_len(&self) -> usize {
        match self.kind {
            BlockType::Rle => 1,
            BlockType::Raw | BlockType::Compressed => self.size as usize,
        }
    }
}

/// The shortest compressed block (§3.1.1.3): a literals section header and a sequences
/// section header of one byte each (libzstd's `MIN_CBLOCK_SIZE`).
const COMPRESSED_BLOCK_MIN: u32 = 2;

/// A block whose `Block_Size` exceeds the frame's `Block_Maximum_Size` (§3.1.1.2.4).
/// libzstd's one-shot decoder takes such a raw or RLE block; its streaming decoder refuses
/// it or not depending on how the input is cut.
const BLOCK_OVER_MAXIMUM: Error = Error::Corrupt {
    detail: "block larger than the frame's block maximum",
};

/// A compressed block shorter than [`COMPRESSED_BLOCK_MIN`].
const COMPRESSED_BLOCK_TOO_SHORT: Error = Error::Corrupt {
    detail: "compressed block shorter than its section headers (2 bytes)",
};

/// What [`single_frame`] learned of the one frame a source is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct OneFrame {
    /// The content size the header declares.
    pub(super) content_size: u64,
    /// The window, as zstd reckons it (the content size for a single-segment frame).
    pub(super) window: u64,
    /// Whether the frame names a dictionary (a `Dictionary_ID` field, even of 0) or ends
    /// with a content checksum: then only zstd decodes it.
    pub(super) dict_or_checksum: bool,
    /// The frame's block, where it has only one: its header and where its content starts.
    pub(super) only_block: Option<(BlockHeader, usize)>,
}

/// The content size and window of the one zstd frame that `src` is, exactly, where its
/// header declares a content size and every block keeps to the block maximum; `None` for
/// anything else (no content size, a skippable frame, several frames, bytes after the
/// frame, a malformed header or block header, a block that fails [`BlockHeader::check`]).
///
/// What `ZSTD_getFrameHeader` and `ZSTD_findFrameCompressedSize` would say together, read
/// in one pass over the frame header and the block headers, since it runs on every one-shot
/// decompression; plus the block maximum, which libzstd's one-shot decoder does not check
/// for raw and RLE blocks, and the shortest compressed block, which its streaming decoder
/// does not check. It decides only whether the one-shot path may run: whatever it
/// refuses streams, and the stream path decides the error.
#[inline]
pub(super) fn single_frame(src: &[u8]) -> Option<OneFrame> {
    scan_frame::<true>(src)
}

/// Bytes of the `Dictionary_ID` field, by `Dictionary_ID_Flag` (§3.1.1.1.1).
const DICT_ID_BYTES: [usize; 4] = [0, 1, 2, 4];

/// [`single_frame`], with [`BlockHeader::check`] applied where `BLOCK_MAX` is true; without it,
/// exactly what zstd's parsers say (the test holds the two equal). Written for the common
/// case, a frame of one block: straight-line reads, one bounds check per field.
#[inline(always)]
fn scan_frame<const BLOCK_MAX: bool>(src: &[u8]) -> Option<OneFrame> {
    let (&[m0, m1, m2, m3, fhd, b5], _) = src.split_first_chunk::<6>()?;
    if u32::from_le_bytes([m0, m1, m2, m3]) != ZSTD_MAGICNUMBER || fhd & FHD_RESERVED != 0 {
        return None;
    }
    let single_segment = fhd & FHD_SINGLE_SEGMENT != 0;
    let fcs_flag = fhd >> FHD_FCS_SHIFT;
    if fcs_flag == 0 && !single_segment {
        return None; // no content size
    }
    let dict_bytes = DICT_ID_BYTES[usize::from(fhd & FHD_DICT_ID)];
    let mut pos = 5 + usize::from(!single_segment) + dict_bytes;
    let content_size = match fcs_flag {
        0 => u64::from(*src.get(pos)?),
        1 => u64::from(u16::from_le_bytes(*src.get(pos..)?.first_chunk()?)) + 256,
        2 => u64::from(u32::from_le_bytes(*src.get(pos..)?.first_chunk()?)),
        _ => u64::from_le_bytes(*src.get(pos..)?.first_chunk()?),
    };
    pos += [1, 2, 4, 8][usize::from(fcs_flag)];
    let window = if single_segment {
        content_size
    } else if 10 + u32::from(b5 >> 3) > *WINDOW_LOG_RANGE.end() {
        return None; // zstd refuses a window log over 31 outright
    } else {
        descriptor_window(b5)
    };
    let max = block_max(window);
    let checksum = fhd & FHD_CHECKSUM != 0;
    let first = pos;
    loop {
        let &[h0, h1, h2] = src.get(pos..)?.first_chunk()?;
        let block = BlockHeader::parse([h0, h1, h2])?;
        if BLOCK_MAX && block.check(max).is_err() {
            return None;
        }
        let start = pos + BLOCK_HEADER;
        pos = start + block.content_len();
        if block.last {
            let only_block = (start == first + BLOCK_HEADER).then_some((block, start));
            let end = pos + if checksum { CHECKSUM } else { 0 };
            return (end == src.len()).then_some(OneFrame {
                content_size,
                window,
                dict_or_checksum: checksum || dict_bytes != 0,
                only_block,
            });
        }
    }
}

/// The dictionary ID in the header of a frame [`single_frame`] accepted (§3.1.1.1.3): 0
/// where the header names none; `None` only where `src` is not such a frame.
#[inline]
pub(super) fn dict_id(src: &[u8]) -> Option<u32> {
    let fhd = *src.get(4)?;
    let pos = if fhd & FHD_SINGLE_SEGMENT != 0 { 5 } else { 6 };
    Some(match fhd & FHD_DICT_ID {
        0 => 0,
        1 => u32::from(*src.get(pos)?),
        2 => u32::from(u16::from_le_bytes(src.get(pos..pos + 2)?.try_into().ok()?)),
        _ => u32::from_le_bytes(src.get(pos..pos + 4)?.try_into().ok()?),
    })
}

/// The window a window descriptor byte declares (§3.1.1.1.2): 2^(10 + exponent) bytes plus
/// as many eighths of that as the mantissa says; at most 2^41 + 7 · 2^38.
pub(super) fn descriptor_window(wd: u8) -> u64 {
    let base = 1u64 << (10 + (wd >> 3));
    base + (base >> 3) * u64::from(wd & 7)
}

/// The error of a frame header zstd refuses (`code`, from `ZSTD_getFrameHeader`), in
/// acomp's words where the bytes are no frame at all: `remaining` bytes of source that do
/// not start with a magic number are [`Error::TrailingBytes`] after a frame
/// (`after_frame`), else [`NOT_A_FRAME`]. Any other refusal keeps zstd's name.
pub(super) fn header_error(code: usize, after_frame: bool, remaining: usize) -> Error {
    if !zstd_safe::is_error_kind(code, ZSTD_ErrorCode::ZSTD_error_prefix_unknown) {
        return zstd_error(code, 0);
    }
    if after_frame {
        Error::TrailingBytes {
            bytes: remaining as u64,
        }
    } else {
        NOT_A_FRAME
    }
}

/// A source that does not start with a zstd frame's magic number (`28 b5 2f fd`) nor a
/// skippable frame's: zstd's "Unknown frame descriptor".
pub(super) const NOT_A_FRAME: Error = Error::Corrupt {
    detail: "not a zstd frame: no magic number (28 b5 2f fd) at the start",
};

/// The content size the first frame's header declares, read across fragments; skippable
/// frames before it are skipped. `None` where the header does not say, or no frame follows
/// the skippable ones.
pub(super) fn content_size(walk: &mut Walk<'_, '_>) -> Result<Option<u64>, Error> {
    let mut after_frame = false;
    loop {
        if walk.src_remaining() == 0 {
            return Ok(None);
        }
        let mut buf = [0u8; FRAME_HEADER_MAX];
        let n = walk.peek_src(&mut buf);
        match FrameHeader::read(&buf[..n]) {
            FrameHeader::Frame { content_size, .. } => return Ok(content_size),
            FrameHeader::Skippable { size } => {
                consume(walk, SKIPPABLE_HEADER + size as usize)?;
                after_frame = true;
            }
            FrameHeader::Incomplete => return Err(Error::Truncated),
            FrameHeader::Invalid(code) => {
                return Err(header_error(code, after_frame, walk.src_remaining()));
            }
        }
    }
}

/// Consumes `n` bytes of the walk's source, across fragments; `Truncated` where it has
/// fewer.
pub(super) fn consume(walk: &mut Walk<'_, '_>, mut n: usize) -> Result<(), Error> {
    while n > 0 {
        let take = walk.next_src().len().min(n);
        if take == 0 {
            return Err(Error::Truncated);
        }
        walk.done_src(take);
        n -= take;
    }
    Ok(())
}

/// A frame whose blocks give more or fewer bytes than its header's content size
/// (RFC 8878 §3.1.1.1.4). libzstd's one-shot decoder says the same; its streaming decoder
/// skips the check after an empty last block.
pub(super) const CONTENT_SIZE_MISMATCH: Error = Error::Corrupt {
    detail: "frame content size does not match its blocks",
};

/// A block header of the reserved type (§3.1.1.2.2).
pub(super) const RESERVED_BLOCK_TYPE: Error = Error::Corrupt {
    detail: "reserved block type",
};

/// zstd wanted more of a frame than its blocks and checksum declare (never seen: a guard
/// against a loop without progress).
pub(super) const FRAME_LONGER_THAN_BLOCKS: Error = Error::Corrupt {
    detail: "frame longer than its blocks",
};

mod cursor;
pub(super) use cursor::FrameCursor;

#[cfg(test)]
mod tests;
