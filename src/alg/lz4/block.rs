//! The LZ4 block format (lz4's `doc/lz4_Block_format.md`) as acomp reads it: a decoder that
//! checks every rule of the format while it decodes, and a scan that checks the same rules
//! without writing, to size a block and to tell a full destination from a corrupt block.
//!
//! A block is a run of sequences: a token (literal length in its high nibble, match length
//! minus 4 in its low one; 15 means more length bytes follow, each added, until one is not
//! 255), the literals, a 2-byte little-endian match offset, more match length bytes. The last
//! sequence is literals only: the block ends right after them, and its token's match nibble
//! is not read (liblz4's decoder ignores it too). Where the block has a match, the format's end-of-block rules hold: the last 5 bytes of output are literals
//! (`LASTLITERALS`) and the last match starts at least 12 bytes before the end (`MFLIMIT`).
//!
//! The reference decoder (`LZ4_decompress_safe`) is lenient where acomp is not, so that no
//! destination size changes the outcome: it takes offset 0 (writing zeros), it checks the
//! end-of-block rules against the end of the destination rather than of the output, and it
//! refuses a one-token block with a match nibble (`0f`) at a destination of 0 bytes only.
//! The table is in `src/lz4.rs`.

use super::Stop;
use super::copy::{FOLLOW, copy_exact, copy_literals, copy_match};
use super::fast::decode_fast;
use crate::Error;
pub(super) use crate::sys::lz4_copy::{MIN_MATCH, RUN_MASK};

/// Bytes of output after the last match that must be literals (`LASTLITERALS`).
pub(super) const LAST_LITERALS: usize = 5;

/// The last match starts at least this many bytes before the end of the output (`MFLIMIT`).
pub(super) const MF_LIMIT: usize = 12;

/// The block ends inside the length bytes of a literal run or a match.
pub(super) const TRUNCATED_LENGTH: &str = "lz4 block ends inside a length";
/// A literal run reaches past the end of the block.
pub(super) const LITERALS_PAST_END: &str = "lz4 literals run past the end of the block";
/// The block ends inside a match offset: a token that is not the last is followed by fewer
/// than 2 bytes after its literals.
pub(super) const TRUNCATED_OFFSET: &str = "lz4 block ends inside a match offset";
/// A match offset of 0 (the reference decoder writes zeros).
pub(super) const OFFSET_ZERO: &str = "lz4 match offset 0";
/// A match offset that reaches before the start of the output.
pub(super) const OFFSET_BEFORE_START: &str = "lz4 match offset before the start of the output";
/// The block ends with a match: its last sequence is not literals only.
pub(super) const ENDS_WITH_MATCH: &str = "lz4 block ends with a match";
/// Fewer than [`LAST_LITERALS`] literals after the last match.
pub(super) const LAST_LITERALS_SHORT: &str =
    "lz4 block: fewer than 5 literals after the last match";
/// The last match starts less than [`MF_LIMIT`] bytes before the end of the output.
pub(super) const LAST_MATCH_LATE: &str =
    "lz4 block: the last match starts less than 12 bytes before the end";

/// A source given as a block that starts with zstd's magic number, `28 b5 2f fd`: no LZ4
/// block can (its first token has 2 literals and a match at least 253 bytes back).
pub(crate) const ZSTD_FRAME: &str =
    "not an lz4 block: it starts with zstd's magic number (28 b5 2f fd), as a zstd frame does";

/// The error of the corrupt block `src`: `detail`, or [`ZSTD_FRAME`] where `src` starts
/// with zstd's magic number. Called on the error path only.
#[cold]
#[inline(never)]
pub(crate) fn corrupt(src: &[u8], detail: &'static str) -> Error {
    let detail = if src.starts_with(&[0x28, 0xB5, 0x2F, 0xFD]) {
        ZSTD_FRAME
    } else {
        detail
    };
    Error::Corrupt { detail }
}

/// Decodes the block `src` into the front of `dst`; returns the bytes written. Writes
/// nothing past the output, so that `dst[n..]` is as the caller left it after `Ok(n)`.
///
/// Literals and matches are copied in fixed-size chunks (8, 16 or 32 bytes) a few bytes
/// past their end, but only where the format puts more output there: at least 12 bytes
/// after the start of every match (`MFLIMIT`), and, in a valid block, nearly as many bytes
/// of output after any point as there are bytes of input left (see `copy.rs`). A block that
/// breaks the rules is refused, so the bytes past the output can only change on an error.
///
/// # Errors
///
/// [`Stop::Corrupt`] where the block breaks the format before the destination is full;
/// [`Stop::Full`] where the output does not fit (what follows is not checked).
#[inline(always)]
pub(crate) fn decode_inline(src: &[u8], dst: &mut [u8]) -> Result<usize, Stop> {
    // The rest of the block, as a slice: one length to check against, no index to overflow.
    let mut input = src;
    let mut op = 0;
    // Where the last match started and ended in the output (`last_end` 0: no match yet).
    let (mut last_start, mut last_end) = (0, 0);
    loop {
        (input, op) = decode_fast(input, dst, op);
        let Some((&token, rest)) = input.split_first() else {
            return Err(Stop::Corrupt(ENDS_WITH_MATCH));
        };
        input = rest;
        let mut lit = usize::from(token >> 4);
        match (
            input.first_chunk::<FOLLOW>(),
            dst[op..].first_chunk_mut::<16>(),
        ) {
            // Short literals with input to spare: a match follows them, and 16 bytes stay
            // within the output the input left pays for.
            (Some(s), Some(d)) if lit < RUN_MASK => *d = *s.first_chunk().expect("32 > 16"),
            _ => {
                if lit == RUN_MASK {
                    lit += read_length(&mut input)?;
                }
                if lit >= input.len() {
                    // The last sequence: literals only, to the end of the block (its match
                    // nibble is not read, as liblz4 does not read it).
                    if lit > input.len() {
                        return Err(Stop::Corrupt(LITERALS_PAST_END));
                    }
                    let d = dst[op..].get_mut(..lit).ok_or(Stop::Full)?;
                    copy_exact(d, input);
                    return end_of_block(op + lit, last_start, last_end).map_err(Stop::Corrupt);
                }
                copy_literals(&mut dst[op..], input, lit).ok_or(Stop::Full)?;
            }
        }
        input = &input[lit..];
        op += lit;
        let Some((&[a, b], rest)) = input.split_first_chunk::<2>() else {
            return Err(Stop::Corrupt(TRUNCATED_OFFSET));
        };
        input = rest;
        let offset = usize::from(u16::from_le_bytes([a, b]));
        if offset.wrapping_sub(1) >= op {
            return Err(Stop::Corrupt(bad_offset(offset)));
        }
        let mut ml = usize::from(token & 15) + MIN_MATCH;
        if ml == RUN_MASK + MIN_MATCH {
            ml += read_length(&mut input)?;
        }
        if ml > dst.len() - op {
            return Err(Stop::Full);
        }
        copy_match(dst, op, offset, ml, input.len() >= FOLLOW);
        last_start = op;
        op += ml;
        last_end = op;
    }
}

/// [`decode_inline`], for the linearised path: inlined there too, where out of line it was
/// compiled less well than the one-shot path's copy (callgrind, text page: the linearised
/// path 695 instructions over the one-shot path with the decoder out of line, 364 inlined).
///
/// # Errors
///
/// As [`decode_inline`].
#[inline(always)]
pub(super) fn decode(src: &[u8], dst: &mut [u8]) -> Result<usize, Stop> {
    decode_inline(src, dst)
}

/// The size of the block's output, checking every rule [`decode`] checks, without writing.
///
/// # Errors
///
/// What is wrong with the block.
pub(crate) fn measure(src: &[u8]) -> Result<u64, &'static str> {
    let corrupt = |s| match s {
        Stop::Corrupt(detail) => detail,
        Stop::Full => unreachable!("measure writes nothing"),
    };
    let end = src.len();
    let mut ip = 0;
    let mut op: usize = 0;
    let (mut last_start, mut last_end) = (0, 0);
    loop {
        let &token = src.get(ip).ok_or(ENDS_WITH_MATCH)?;
        ip += 1;
        let mut lit = usize::from(token >> 4);
        if lit == RUN_MASK {
            lit += read_length_at(src, &mut ip).map_err(corrupt)?;
        }
        if lit > end - ip {
            return Err(LITERALS_PAST_END);
        }
        ip += lit;
        op += lit;
        if ip == end {
            return end_of_block(op, last_start, last_end).map(|n| n as u64);
        }
        if end - ip < 2 {
            return Err(TRUNCATED_OFFSET);
        }
        let offset = usize::from(u16::from_le_bytes([src[ip], src[ip + 1]]));
        ip += 2;
        if offset.wrapping_sub(1) >= op {
            return Err(bad_offset(offset));
        }
        let mut ml = usize::from(token & 15) + MIN_MATCH;
        if ml == RUN_MASK + MIN_MATCH {
            ml += read_length_at(src, &mut ip).map_err(corrupt)?;
        }
        last_start = op;
        op += ml;
        last_end = op;
    }
}

/// The end-of-block rules, where the block has a match: `op` is the output's end.
#[inline]
fn end_of_block(op: usize, last_start: usize, last_end: usize) -> Result<usize, &'static str> {
    if last_end != 0 {
        if op - last_end < LAST_LITERALS {
            return Err(LAST_LITERALS_SHORT);
        }
        if op - last_start < MF_LIMIT {
            return Err(LAST_MATCH_LATE);
        }
    }
    Ok(op)
}

#[cold]
fn bad_offset(offset: usize) -> &'static str {
    if offset == 0 {
        OFFSET_ZERO
    } else {
        OFFSET_BEFORE_START
    }
}

/// Reads the length bytes after a nibble of 15 off the front of `input`: their sum, up to the
/// first that is not 255.
#[inline(always)]
pub(super) fn read_length(input: &mut &[u8]) -> Result<usize, Stop> {
    let mut n = 0;
    loop {
        let Some((&b, rest)) = input.split_first() else {
            return Err(Stop::Corrupt(TRUNCATED_LENGTH));
        };
        *input = rest;
        n += usize::from(b);
        if b != 255 {
            return Ok(n);
        }
    }
}

/// [`read_length`] at an index of `src`.
#[inline(always)]
fn read_length_at(src: &[u8], ip: &mut usize) -> Result<usize, Stop> {
    let mut n = 0;
    loop {
        let Some(&b) = src.get(*ip) else {
            return Err(Stop::Corrupt(TRUNCATED_LENGTH));
        };
        *ip += 1;
        n += usize::from(b);
        if b != 255 {
            return Ok(n);
        }
    }
}

#[cfg(test)]
mod tests;
