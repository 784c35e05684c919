//! The LZ4 block format (lz4's `doc/lz4_Block_format.md`) as acomp reads it: a decoder that
//! checks every rule of the format while it decodes, and a scan that checks the same rules
//! without writing, to size a block and to tell a full destination from a corrupt block.
//!
//! A block is a run of sequences: a token (literal length in its high nibble, match length
//! minus 4 in its low one; 15 means more length bytes follow, each added, until one is not
//! 255), the literals, a 2-byte little-endian match offset, more match length bytes. The last
//! sequence is literals only: the block ends right after them. Where the block has a match,
//! the format's end-of-block rules hold: the last 5 bytes of output are literals
//! (`LASTLITERALS`) and the last match starts at least 12 bytes before the end (`MFLIMIT`).
//!
//! The reference decoder (`LZ4_decompress_safe`) is lenient where acomp is not, so that no
//! destination size changes the outcome: it takes offset 0 (writing zeros), and it checks
//! the end-of-block rules against the end of the destination rather than of the output.

/// Bytes of output after the last match that must be literals (`LASTLITERALS`).
pub(super) const LAST_LITERALS: usize = 5;

/// The last match starts at least this many bytes before the end of the output (`MFLIMIT`).
pub(super) const MF_LIMIT: usize = 12;

/// Shortest match (`MINMATCH`): the token's match nibble counts from here.
const MIN_MATCH: usize = 4;

/// A length nibble of 15: more length bytes follow.
const RUN_MASK: usize = 15;

/// Why decoding stopped short of the block's end.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Stop {
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
/// The block ends inside a match offset.
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

/// Decodes the block `src` into the front of `dst`; returns the bytes written. Writes
/// nothing past the output, so that `dst[n..]` is as the caller left it after `Ok(n)`.
///
/// Short literal runs and matches are copied 8 or 16 bytes at a time, a few bytes past
/// their end, but only where the format puts more output there: literals that a match
/// follows, and a match, have at least 12 bytes of output after their start in any valid
/// block (`MFLIMIT`), and an 8-byte copy of a run of up to 8 bytes, or a 16-byte copy of one
/// of 4 to 16 literals, stays within that. A block that breaks the rule is refused, so the
/// bytes past the output can only change on an error.
///
/// # Errors
///
/// [`Stop::Corrupt`] where the block breaks the format before the destination is full;
/// [`Stop::Full`] where the output does not fit (what follows is not checked).
#[inline]
pub(super) fn decode(src: &[u8], dst: &mut [u8]) -> Result<usize, Stop> {
    // The rest of the block, as a slice: one length to check against, no index to overflow.
    let mut input = src;
    let mut op = 0;
    // Where the last match started and ended in the output (`last_end` 0: no match yet).
    let (mut last_start, mut last_end) = (0, 0);
    loop {
        // The fast path, for a sequence with short lengths (both nibbles under 15) and room on
        // both sides: 32 bytes of input hold its token, literals and offset, and 32 bytes of
        // destination its output, so one check of each covers every copy.
        if let (Some(inp), Some(room)) = (input.first_chunk::<32>(), dst.len().checked_sub(op)) {
            let token = inp[0];
            let lit = usize::from(token >> 4);
            let ml = usize::from(token & 15) + MIN_MATCH;
            if room >= 32 && lit < RUN_MASK && ml < RUN_MASK + MIN_MATCH {
                let out = dst[op..].first_chunk_mut::<16>().expect("room checked");
                if lit >= 4 {
                    out.copy_from_slice(&inp[1..17]);
                } else {
                    out[..8].copy_from_slice(&inp[1..9]);
                }
                let offset = usize::from(u16::from_le_bytes([inp[1 + lit], inp[2 + lit]]));
                let mop = op + lit;
                if offset.wrapping_sub(1) >= mop {
                    return Err(Stop::Corrupt(bad_offset(offset)));
                }
                let at = mop - offset;
                if ml <= 8 && offset >= 8 {
                    let m: [u8; 8] = *dst[at..].first_chunk().expect("offset >= 8");
                    dst[mop..mop + 8].copy_from_slice(&m);
                } else if ml <= 16 && offset >= 16 {
                    let m: [u8; 16] = *dst[at..].first_chunk().expect("offset >= 16");
                    dst[mop..mop + 8].copy_from_slice(&m[..8]);
                    dst[mop + ml - 8..mop + ml].copy_from_slice(&m[ml - 8..ml]);
                } else {
                    copy_match(dst, mop, offset, ml);
                }
                input = &input[3 + lit..];
                last_start = mop;
                op = mop + ml;
                last_end = op;
                continue;
            }
        }
        let Some((&token, rest)) = input.split_first() else {
            return Err(Stop::Corrupt(ENDS_WITH_MATCH));
        };
        input = rest;
        let mut lit = usize::from(token >> 4);
        if lit == RUN_MASK {
            lit += read_length(&mut input)?;
        }
        let out = &mut dst[op..];
        if lit >= input.len() {
            // The last sequence: literals only, to the end of the block.
            if lit > input.len() {
                return Err(Stop::Corrupt(LITERALS_PAST_END));
            }
            let d = out.get_mut(..lit).ok_or(Stop::Full)?;
            copy_exact(d, input);
            return end_of_block(op + lit, last_start, last_end).map_err(Stop::Corrupt);
        }
        // A match follows these literals.
        if lit < 4 {
            match (out.first_chunk_mut::<8>(), input.first_chunk::<8>()) {
                (Some(d), Some(s)) => *d = *s,
                _ => copy_exact(out.get_mut(..lit).ok_or(Stop::Full)?, &input[..lit]),
            }
        } else {
            match (lit, out.first_chunk_mut::<16>(), input.first_chunk::<16>()) {
                (..=16, Some(d), Some(s)) => *d = *s,
                _ => copy_exact(out.get_mut(..lit).ok_or(Stop::Full)?, &input[..lit]),
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
        let (head, out) = dst.split_at_mut(op);
        if ml > out.len() {
            return Err(Stop::Full);
        }
        let from = &head[op - offset..];
        match (ml, from.first_chunk::<8>(), out.first_chunk_mut::<8>()) {
            (0..=8, Some(s), Some(d)) => *d = *s,
            _ => copy_match(dst, op, offset, ml),
        }
        last_start = op;
        op += ml;
        last_end = op;
    }
}

/// The size of the block's output, checking every rule [`decode`] checks, without writing.
///
/// # Errors
///
/// What is wrong with the block.
pub(super) fn measure(src: &[u8]) -> Result<u64, &'static str> {
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
fn read_length(input: &mut &[u8]) -> Result<usize, Stop> {
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

/// Copies `s` into `d` (of the same length): short runs, the common case, as two fixed-size
/// moves that overlap, and never a byte past `d`.
#[inline(always)]
fn copy_exact(d: &mut [u8], s: &[u8]) {
    let n = s.len();
    debug_assert_eq!(n, d.len());
    if n > 16 {
        d.copy_from_slice(s);
    } else if n >= 8 {
        d[..8].copy_from_slice(&s[..8]);
        d[n - 8..].copy_from_slice(&s[n - 8..]);
    } else if n >= 4 {
        d[..4].copy_from_slice(&s[..4]);
        d[n - 4..].copy_from_slice(&s[n - 4..]);
    } else {
        for (d, s) in d.iter_mut().zip(s) {
            *d = *s;
        }
    }
}

/// Writes the match of `ml` bytes at `op`, copied from `offset` bytes back (`1 <= offset <=
/// op`, `op + ml <= dst.len()`), exactly. Where the match overlaps its own output (`offset <
/// ml`), it repeats the last `offset` bytes.
#[inline(always)]
fn copy_match(dst: &mut [u8], op: usize, offset: usize, ml: usize) {
    let from = op - offset;
    if offset >= ml {
        let (head, tail) = dst.split_at_mut(op);
        copy_exact(&mut tail[..ml], &head[from..from + ml]);
    } else if offset >= 8 && ml <= 64 {
        // 8 bytes at a time: each reads only bytes already written.
        let mut done = 0;
        while done + 8 <= ml {
            let (head, tail) = dst.split_at_mut(op + done);
            tail[..8].copy_from_slice(&head[from + done..from + done + 8]);
            done += 8;
        }
        if done < ml {
            let at = ml - 8;
            let (head, tail) = dst.split_at_mut(op + at);
            tail[..8].copy_from_slice(&head[from + at..from + at + 8]);
        }
    } else if offset == 1 {
        let b = dst[from];
        dst[op..op + ml].fill(b);
    } else if ml <= 32 && offset < 8 {
        for i in op..op + ml {
            dst[i] = dst[i - offset];
        }
    } else {
        // The pattern doubles with each copy: after copying `offset` bytes, `2 * offset` are
        // a whole number of periods, then `4 * offset`, and so on.
        let mut done = 0;
        while done < ml {
            let n = (offset + done).min(ml - done);
            dst.copy_within(from..from + n, op + done);
            done += n;
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
}
