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

use super::copy::{FOLLOW, copy_exact, copy_literals, copy_match};
use super::fast::decode_fast;
use crate::Error;

/// Bytes of output after the last match that must be literals (`LASTLITERALS`).
pub(super) const LAST_LITERALS: usize = 5;

/// The last match starts at least this many bytes before the end of the output (`MFLIMIT`).
pub(super) const MF_LIMIT: usize = 12;

/// Shortest match (`MINMATCH`): the token's match nibble counts from here.
pub(crate) const MIN_MATCH: usize = 4;

/// A length nibble of 15: more length bytes follow.
pub(crate) const RUN_MASK: usize = 15;

/// Why decoding stopped short of the block's end.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Stop {
    /// The block breaks the format here: no destination could take it.
    Corrupt(&'static str),
    /// The next literals or match do not fit the destination; the rest of the block is not
    /// checked yet ([`measure`] does).
    Full,
}

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
                copy_literals(&mut dst[op..], input, lit)?;
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
mod tests {
    use super::*;

    fn both(src: &[u8], cap: usize) -> (Result<usize, Stop>, Result<u64, &'static str>) {
        let mut dst = vec![0u8; cap];
        (decode(src, &mut dst), measure(src))
    }

    #[test]
    fn literals_only_blocks() {
        assert_eq!(both(&[0x00], 0), (Ok(0), Ok(0)));
        assert_eq!(both(&[0x10, b'a'], 1), (Ok(1), Ok(1)));
        assert_eq!(both(&[0x10, b'a'], 0), (Err(Stop::Full), Ok(1)));
    }

    #[test]
    fn overlapping_matches_repeat_their_pattern() {
        // "abc", then a 17-byte match at offset 3, then 5 literals.
        let src = [
            0x3D, b'a', b'b', b'c', 3, 0, 0x50, b'v', b'w', b'x', b'y', b'z',
        ];
        let mut dst = [0u8; 25];
        assert_eq!(decode(&src, &mut dst), Ok(25));
        let mut want = b"abc".repeat(7)[..20].to_vec();
        want.extend_from_slice(b"vwxyz");
        assert_eq!(&dst[..], &want[..]);
        assert_eq!(measure(&src), Ok(25));
    }

    #[test]
    fn format_faults() {
        let lit5 = [0x50, 1, 2, 3, 4, 5];
        let mut b = vec![0x54, 1, 2, 3, 4, 5, 0, 0];
        assert_eq!(measure(&b), Err(OFFSET_ZERO));
        b[6] = 6;
        assert_eq!(measure(&b), Err(OFFSET_BEFORE_START));
        b[6] = 1;
        assert_eq!(measure(&b), Err(ENDS_WITH_MATCH));
        b.extend_from_slice(&lit5);
        // 5 literals, an 8-byte match at 5, 5 literals: 18 bytes.
        assert_eq!(measure(&b), Ok(18));
        assert_eq!(measure(&b[..7]), Err(TRUNCATED_OFFSET));
        assert_eq!(measure(&[0xF0]), Err(TRUNCATED_LENGTH));
        assert_eq!(measure(&[0x30, 1]), Err(LITERALS_PAST_END));
        let mut short = b[..8].to_vec();
        short.extend_from_slice(&[0x40, 1, 2, 3, 4]);
        assert_eq!(measure(&short), Err(LAST_LITERALS_SHORT));
        // A 4-byte match at 1, then 5 literals: it starts 9 bytes before the end.
        assert_eq!(
            measure(&[0x10, 7, 1, 0, 0x50, 1, 2, 3, 4, 5]),
            Err(LAST_MATCH_LATE)
        );
    }

    /// A valid block of random sequences (literal runs and matches of every length class,
    /// half the offsets short, the last match as late as the rules allow), and its output.
    fn random_block(seed: u64) -> (Vec<u8>, Vec<u8>) {
        let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
        let mut next = move |n: usize| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x % n as u64) as usize
        };
        let pick = |next: &mut dyn FnMut(usize) -> usize| match next(4) {
            0 => next(4),
            1 => next(19),
            2 => next(40),
            _ => next(600),
        };
        let (mut seqs, mut len) = (Vec::new(), 0);
        let mut last_ml = MF_LIMIT;
        for _ in 0..next(30) {
            let lit = pick(&mut next).max(usize::from(len == 0));
            let ml = MIN_MATCH + pick(&mut next);
            let lits: Vec<u8> = (0..lit).map(|_| next(256) as u8).collect();
            len += lit;
            // Half of the offsets short (1 to 24: patterns and the fast loop's chunk
            // copies), the rest anywhere back.
            let span = if next(2) == 0 { 24 } else { 65535 };
            let offset = 1 + next(len.min(span));
            len += ml;
            seqs.push((lits, offset, ml));
            last_ml = ml;
        }
        let lit = (LAST_LITERALS + pick(&mut next)).max(MF_LIMIT.saturating_sub(last_ml));
        let last: Vec<u8> = (0..lit).map(|_| b"xyz"[next(3)]).collect();
        let seqs: Vec<(&[u8], usize, usize)> =
            seqs.iter().map(|(l, o, m)| (&l[..], *o, *m)).collect();
        block_of(&seqs, &last)
    }

    /// A block of `seqs` (literals, offset, match length), then the literals `last`, and
    /// its output.
    fn block_of(seqs: &[(&[u8], usize, usize)], last: &[u8]) -> (Vec<u8>, Vec<u8>) {
        fn length(block: &mut Vec<u8>, n: usize) {
            if n >= RUN_MASK {
                let mut rest = n - RUN_MASK;
                while rest >= 255 {
                    block.push(255);
                    rest -= 255;
                }
                block.push(rest as u8);
            }
        }
        let (mut block, mut out) = (Vec::new(), Vec::new());
        for &(lit, offset, ml) in seqs {
            block.push(((lit.len().min(15) << 4) | (ml - MIN_MATCH).min(15)) as u8);
            length(&mut block, lit.len());
            block.extend_from_slice(lit);
            out.extend_from_slice(lit);
            block.extend_from_slice(&(offset as u16).to_le_bytes());
            length(&mut block, ml - MIN_MATCH);
            for _ in 0..ml {
                out.push(out[out.len() - offset]);
            }
        }
        block.push((last.len().min(15) << 4) as u8);
        length(&mut block, last.len());
        block.extend_from_slice(last);
        out.extend_from_slice(last);
        (block, out)
    }

    /// Long matches at short offsets, ending as close to the block's end as the rules
    /// allow: where the fast loop must hand over to the general step so that its chunked
    /// copies stay within the output (a match of over 4,000 bytes has 17 or more length
    /// bytes, so the fast loop can take it with 5 literals left after it).
    #[test]
    fn long_matches_near_the_end() {
        let bytes: Vec<u8> = (0..64u8).map(|i| i.wrapping_mul(37) ^ 0x5A).collect();
        for lit in [0, 1, 7, 14, 15, 40] {
            for offset in [1, 2, 3, 4, 5, 7, 8, 9, 15, 16, 17, 30] {
                for ml in [19, 20, 33, 270, 300, 1000, 3000, 4113, 5000, 8001] {
                    for last in 5..=13 {
                        let head = &bytes[..offset.max(1)];
                        let lits = &bytes[3..3 + lit];
                        let (block, want) =
                            block_of(&[(head, 1, 4), (lits, offset, ml)], &bytes[40..40 + last]);
                        let n = want.len();
                        for extra in [0, 1, 7, 8, 15, 16, 31, 32, 48, 64] {
                            let mut dst = vec![0xA5u8; n + extra];
                            let case = format!(
                                "lit {lit} offset {offset} ml {ml} last {last} room {extra}"
                            );
                            assert_eq!(decode(&block, &mut dst), Ok(n), "{case}");
                            assert!(dst[..n] == want[..], "{case}");
                            assert!(dst[n..].iter().all(|&b| b == 0xA5), "{case}");
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn nothing_past_the_output_at_any_room() {
        for seed in 0..6000 {
            let (block, want) = random_block(seed);
            let n = want.len();
            assert_eq!(measure(&block), Ok(n as u64), "seed {seed}");
            for extra in [
                0, 1, 2, 3, 5, 8, 12, 16, 17, 24, 31, 32, 33, 40, 63, 64, 65, 100,
            ] {
                let mut dst = vec![0xA5u8; n + extra];
                assert_eq!(decode(&block, &mut dst), Ok(n), "seed {seed}, room {extra}");
                assert!(dst[..n] == want[..], "seed {seed}, room {extra}");
                assert!(
                    dst[n..].iter().all(|&b| b == 0xA5),
                    "seed {seed}, room {extra}"
                );
            }
            if n > 0 {
                assert_eq!(decode(&block, &mut vec![0; n - 1]), Err(Stop::Full));
            }
        }
    }
}
