//! Where the stream loop stands in a frame, as acomp reads the frame's structure itself
//! across fragments: which bytes zstd may be fed next, the block maximum and the declared
//! content size checked block by block.

use super::{
    BLOCK_HEADER, BlockHeader, BlockType, CHECKSUM, CONTENT_SIZE_MISMATCH,
    FRAME_LONGER_THAN_BLOCKS, RESERVED_BLOCK_TYPE, consume,
};
use crate::{Error, Walk};

/// Where the stream loop stands in the current frame, as acomp reads it.
#[derive(Debug)]
pub(in crate::alg::zstd) struct FrameCursor {
    pub(in crate::alg::zstd) skippable: bool,
    /// The dictionary ID the header names (0: none).
    pub(in crate::alg::zstd) dict_id: u32,
    /// The content size the header declares (0 for a skippable frame).
    pub(in crate::alg::zstd) content_size: Option<u64>,
    pub(in crate::alg::zstd) block_max: u64,
    pub(in crate::alg::zstd) checksum: bool,
    /// Source bytes zstd may still be fed before acomp reads the next block header.
    pub(in crate::alg::zstd) feed_left: usize,
    /// Whether the last block (and the checksum) is let through: nothing more to read.
    pub(in crate::alg::zstd) epilogue: bool,
    /// Whether zstd filled the last output chunk, and so may hold more output.
    pub(in crate::alg::zstd) pending: bool,
    /// Content bytes the frame has given so far.
    pub(in crate::alg::zstd) produced: u64,
    /// `WindowTooLarge` for a frame whose window is over the limit: not decoded, only
    /// [`skip`](FrameCursor::skip)ped.
    pub(in crate::alg::zstd) over_limit: Option<Error>,
    /// The least and the most content the block headers read so far allow, in bytes.
    pub(in crate::alg::zstd) least: u64,
    pub(in crate::alg::zstd) most: u64,
}

impl FrameCursor {
    /// Reads the next block header across fragments and lets zstd have that block (with
    /// the checksum after the last block).
    pub(in crate::alg::zstd) fn next_block(
        &mut self,
        walk: &Walk<'_, '_>,
    ) -> Result<BlockHeader, Error> {
        let mut h = [0u8; BLOCK_HEADER];
        if walk.peek_src(&mut h) < BLOCK_HEADER {
            return Err(Error::Truncated);
        }
        let block = BlockHeader::parse(h).ok_or(RESERVED_BLOCK_TYPE)?;
        block.check(self.block_max)?;
        // What the blocks so far can give: raw and RLE blocks exactly, a compressed one 0
        // to the block maximum. Where the declared size is outside, say so before zstd
        // sees the block.
        let known = match block.kind {
            BlockType::Compressed => None,
            BlockType::Raw | BlockType::Rle => Some(u64::from(block.size)),
        };
        self.least += known.unwrap_or(0);
        self.most += known.unwrap_or(self.block_max);
        if let Some(size) = self.content_size {
            if self.least > size || (block.last && self.most < size) {
                return Err(CONTENT_SIZE_MISMATCH);
            }
        }
        self.feed_left = BLOCK_HEADER + block.content_len();
        if block.last {
            self.epilogue = true;
            if self.checksum {
                self.feed_left += CHECKSUM;
            }
        }
        Ok(block)
    }

    /// Reads a frame that is not decoded (its window over the limit) to its end, with
    /// every check that needs no decoding, in the order decoding meets them: each block
    /// header ([`next_block`](FrameCursor::next_block): type, block maximum, the declared
    /// content size against what the blocks can give), then the block's bytes and, after
    /// the last, the checksum (else `Truncated`). Consumes the frame.
    pub(in crate::alg::zstd) fn skip(&mut self, walk: &mut Walk<'_, '_>) -> Result<(), Error> {
        loop {
            consume(walk, self.feed_left)?;
            self.feed_left = 0;
            if self.epilogue {
                return Ok(());
            }
            self.next_block(walk)?;
        }
    }

    /// Checks a frame zstd has finished: all of it read, and as much content as declared.
    pub(in crate::alg::zstd) fn finish(&self) -> Result<(), Error> {
        if !self.epilogue || self.feed_left != 0 {
            return Err(FRAME_LONGER_THAN_BLOCKS);
        }
        match self.content_size {
            Some(size) if size != self.produced => Err(CONTENT_SIZE_MISMATCH),
            _ => Ok(()),
        }
    }
}
