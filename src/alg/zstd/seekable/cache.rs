//! The frame a kept table decoded last (`kept.rs`), kept with it: its content and its
//! compressed bytes, so that a later read inside the same frame is a comparison and a copy
//! where it would be a decode. zstd's C library keeps a decoder and two 128 KiB buffers per
//! `ZSTD_seekable` and continues a read where the one before it stopped; this serves any
//! offset of the frame, in either order.
//!
//! A read is served from the cache only where the source still holds, byte for byte, the
//! frame that was decoded into it: the same bytes decode to the same content, so a read
//! served from it returns what a decode would, and a source changed under the table is
//! decoded again (and held to its entry, as any read). A checked read is served only from
//! a frame that a checked read decoded whole and checked.

use std::io::IoSlice;

use parking_lot::Mutex;

use super::{Frame, read_at, sub_fragments};
use crate::Segment;
use crate::alg::zstd::frame::{
    BLOCK_HEADER, BlockHeader, BlockType, FRAME_HEADER_MAX, FrameHeader,
};

/// The most content a cached frame may hold, in bytes (one block at most: zstd's
/// `ZSTD_BLOCKSIZE_MAX`); larger frames are read as before, never cached.
pub(crate) const CACHE_CONTENT_MAX: u64 = 128 * 1024;

/// The most compressed bytes a cached frame may take (a 128 KiB block stored raw, its
/// headers and checksum, with room to spare).
const CACHE_SIZE_MAX: usize = 132 * 1024;

/// No frame cached.
const NONE: usize = usize::MAX;

/// The last frame decoded whole through a kept table.
#[derive(Default)]
pub(crate) struct FrameCache {
    slot: Mutex<Slot>,
}

/// Which frame it holds and its sizes, not its bytes (a table's `Debug` stays short).
impl std::fmt::Debug for FrameCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut d = f.debug_struct("FrameCache");
        match self.slot.try_lock() {
            Some(s) if s.frame != NONE => d
                .field("frame", &s.frame)
                .field("checked", &s.checked)
                .field("compressed_bytes", &s.compressed.len())
                .field("content_bytes", &s.content.len()),
            Some(_) => d.field("frame", &None::<usize>),
            None => d.field("frame", &"(in use)"),
        };
        d.finish()
    }
}

struct Slot {
    /// The frame's index in the table, [`NONE`] where nothing is cached.
    frame: usize,
    /// Whether a checked read decoded it (its checksums checked).
    checked: bool,
    compressed: Vec<u8>,
    content: Vec<u8>,
}

impl Default for Slot {
    fn default() -> Self {
        Slot {
            frame: NONE,
            checked: false,
            compressed: Vec::new(),
            content: Vec::new(),
        }
    }
}

/// Whether the source's bytes of `frame` are `bytes`.
fn same_bytes(src: &[IoSlice<'_>], frame: &Frame, bytes: &[u8]) -> bool {
    if frame.size != bytes.len() {
        return false;
    }
    if let [one] = src {
        return one[frame.start..frame.start + frame.size] == *bytes;
    }
    let mut parts = Vec::new();
    sub_fragments(src, frame.start, frame.size, &mut parts);
    let mut at = 0;
    parts.iter().all(|p| {
        let same = p[..] == bytes[at..at + p.len()];
        at += p.len();
        same
    })
}

/// Whether `frame` is a zstd frame of one block of content: zstd decodes a block whole
/// whatever the read takes of it, so decoding such a frame to its end costs no more than
/// stopping early. zstd's C seekable writer ends each frame with an empty last block
/// (`ZSTD_endStream`): a block followed by an empty raw last block counts as one.
fn one_block(src: &[IoSlice<'_>], frame: &Frame) -> bool {
    let len: usize = src.iter().map(|s| s.len()).sum();
    let at = |offset: usize, buf: &mut [u8]| {
        let fits = offset + buf.len() <= frame.size;
        if fits {
            read_at(src, len, frame.start + offset, buf);
        }
        fits
    };
    let mut head = [0u8; FRAME_HEADER_MAX];
    let n = head.len().min(frame.size);
    at(0, &mut head[..n]);
    let FrameHeader::Frame { header_size, .. } = FrameHeader::read(&head[..n]) else {
        return false;
    };
    let block = |offset: usize| {
        let mut b = [0u8; BLOCK_HEADER];
        at(offset, &mut b).then(|| BlockHeader::parse(b)).flatten()
    };
    let Some(first) = block(header_size) else {
        return false;
    };
    if first.last {
        return true;
    }
    block(header_size + BLOCK_HEADER + first.content_len())
        .is_some_and(|b| b.last && b.kind == BlockType::Raw && b.size == 0)
}

impl FrameCache {
    /// Serves `segments` from the cache where every segment that takes bytes falls inside
    /// frame `index` (`frame`), the cache holds it (decoded by a checked read, where
    /// `checked`) and the source still holds its bytes. Returns the extent offset the
    /// output reached; `None` where the read must decode.
    pub(crate) fn serve(
        &self,
        src: &[IoSlice<'_>],
        index: usize,
        frame: &Frame,
        segments: &mut [Segment<'_>],
        checked: bool,
    ) -> Option<u64> {
        let slot = self.slot.try_lock()?;
        if slot.frame != index || (checked && !slot.checked) {
            return None;
        }
        let (start, end) = (frame.content_start, frame.content_start + frame.content);
        let mut reach = None;
        for s in segments.iter().filter(|s| !s.is_empty()) {
            if s.offset() < start || s.offset() + s.len() as u64 > end {
                return None;
            }
            reach = Some(s.offset() + s.len() as u64);
        }
        let reach = reach?;
        if !same_bytes(src, frame, &slot.compressed) {
            return None;
        }
        for s in segments.iter_mut().filter(|s| !s.is_empty()) {
            let from = (s.offset() - start) as usize;
            let len = s.len();
            s.buf_mut().copy_from_slice(&slot.content[from..from + len]);
        }
        Some(reach)
    }

    /// Whether a read that decodes `frame` should decode it whole into the cache: a frame
    /// small enough, that the read decodes whole anyway (`whole`) or that is one block.
    pub(crate) fn worth(&self, src: &[IoSlice<'_>], frame: &Frame, whole: bool) -> bool {
        frame.content <= CACHE_CONTENT_MAX
            && frame.size <= CACHE_SIZE_MAX
            && (whole || one_block(src, frame))
    }

    /// Decodes frame `index` (`frame`) whole into the cache with `decode` (given the
    /// content buffer, of the entry's size; it returns the offset the output reached, or
    /// its error), then keeps the frame's bytes. `None` where the cache is busy or its
    /// memory cannot be had: the caller decodes as without a cache. After an error the
    /// cache holds nothing.
    pub(crate) fn fill<E>(
        &self,
        src: &[IoSlice<'_>],
        index: usize,
        frame: &Frame,
        checked: bool,
        decode: impl FnOnce(&mut [u8]) -> Result<u64, E>,
    ) -> Option<Result<(u64, CachedContent<'_>), E>> {
        let mut slot = self.slot.try_lock()?;
        let content = frame.content as usize;
        slot.frame = NONE;
        // The content buffer keeps its length from frame to frame (zeroed only where it
        // grows); the compressed bytes are copied after the decode.
        if slot.content.len() != content {
            let grow = content.saturating_sub(slot.content.len());
            if slot.content.try_reserve_exact(grow).is_err() {
                return None;
            }
            slot.content.resize(content, 0);
        }
        slot.compressed.clear();
        if slot.compressed.try_reserve_exact(frame.size).is_err() {
            return None;
        }
        let pos = match decode(&mut slot.content) {
            Ok(pos) => pos,
            Err(e) => return Some(Err(e)),
        };
        let mut parts = Vec::new();
        sub_fragments(src, frame.start, frame.size, &mut parts);
        for p in &parts {
            slot.compressed.extend_from_slice(p);
        }
        slot.frame = index;
        slot.checked = checked;
        Some(Ok((pos, CachedContent { slot })))
    }
}

/// The content of a frame just cached, held until the read has copied its part out.
pub(crate) struct CachedContent<'a> {
    slot: parking_lot::MutexGuard<'a, Slot>,
}

impl CachedContent<'_> {
    /// The frame's content.
    pub(crate) fn content(&self) -> &[u8] {
        &self.slot.content
    }
}
