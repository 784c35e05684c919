//! The decoder's fast loop: sequences far from both ends of the block and the destination,
//! decoded with fixed-size copies and few checks. Anything unusual (an offset to refuse, a
//! length that runs out of input, too little room) is left to the decoder's general step,
//! which decodes that sequence again from its token and says what is wrong.

use super::block::{MIN_MATCH, RUN_MASK};
use super::copy::{FOLLOW, copy_long_match, repeat_short_pattern};

/// Input left (bytes, from a token on) that the fast loop wants. With this much input left,
/// a valid block has at least 38 bytes of output from the token's sequence on (`copy.rs`),
/// as many as the short copies below write: 16 of literals, then 24 from a match that
/// starts at most 14 bytes in.
pub(super) const FAST: usize = 40;

/// Room (bytes, from the output's end on) that the fast loop wants: the copies above, and
/// the 32-byte window of [`short_pattern`] for a match that starts at most 14 bytes in.
pub(super) const FAST_ROOM: usize = 48;

/// Decodes sequences from the front of `input` into `dst` at `op` while they are far from
/// both ends. Returns the rest of the input and the output's end.
///
/// It does not say where its matches are: the end-of-block rules hold for each of them.
/// At least 23 bytes of input follow each (32 after a match with length bytes), so if
/// it is the block's last match, at least 21 literals follow it (the last sequence is its
/// token, its length bytes and its literals: 23 bytes hold at least 21 literals, and a run
/// long enough to need a second length byte has over 270), more than `LASTLITERALS` (5)
/// and `MFLIMIT` (12) ask. The general step checks those rules against the last match it
/// decoded itself, which ends earlier in the output if a fast one came after it: the
/// checks it makes then are weaker than the fast match passes, never stronger.
///
/// Its branches follow what the data does most, so that they are predicted: a match at
/// least 8 bytes back is copied the same way whatever its offset (three 8-byte chunks),
/// and a long match (length bytes after the token) stays in the loop. Deciding instead on
/// where the match's source ends (one 24-byte copy where it ends before the literals) was
/// mispredicted on about one sequence in five of a real heap page: in cachegrind's branch
/// model, 2,000 pages of a Python heap cost 149 mispredictions a page against liblz4's 93
/// before, 96 now.
#[inline(always)]
pub(super) fn decode_fast<'a>(
    mut input: &'a [u8],
    dst: &mut [u8],
    mut op: usize,
) -> (&'a [u8], usize) {
    while let Some(inp) = input.first_chunk::<FAST>() {
        let Some(out) = dst[op..].first_chunk_mut::<FAST_ROOM>() else {
            break;
        };
        // Up to 14 literals, copied before the token is looked at (16 bytes, within the 38
        // that follow): a sequence left to the general step has its literals written again.
        *out.first_chunk_mut::<16>().expect("48 > 16") = *inp[1..].first_chunk().expect("40 > 17");
        let token = inp[0];
        let lit = usize::from(token >> 4);
        if lit == RUN_MASK {
            break;
        }
        let offset = usize::from(u16::from_le_bytes(
            *inp[1 + lit..].first_chunk().expect("lit <= 14"),
        ));
        let mop = op + lit;
        if usize::from(token & 15) == RUN_MASK {
            let Some((rest, ml)) = long_match(&input[3 + lit..], dst, mop, offset) else {
                break;
            };
            input = rest;
            op = mop + ml;
            continue;
        }
        let ml = usize::from(token & 15) + MIN_MATCH;
        if offset >= 8 && offset <= mop {
            // Up to 18 bytes in three chunks of 8, each from at least 8 bytes back: bytes
            // written before it. One length check for the window from the source's start
            // to the copies' end (24 bytes from a match that starts at most 14 bytes in).
            let w = &mut dst[mop - offset..mop + 24];
            w.copy_within(0..8, offset);
            w.copy_within(8..16, offset + 8);
            w.copy_within(16..24, offset + 16);
        } else if offset.wrapping_sub(1) < mop {
            short_pattern(dst, mop, offset, ml);
        } else {
            break;
        }
        input = &input[3 + lit..];
        op = mop + ml;
    }
    (input, op)
}

/// A short match at an offset under 8 (1 to `mop`), its pattern repeated 8 bytes at a
/// time ([`repeat_short_pattern`]). Out of the loop's line: it is about one sequence in 25
/// of a heap page, and inlined its registers cost every other sequence (callgrind: 3% more
/// instructions on text and heap pages, and 1–2% more time).
#[inline(never)]
fn short_pattern(dst: &mut [u8], mop: usize, offset: usize, ml: usize) {
    // Room: `mop` is at most 14 bytes past the token's output, which has 48 bytes of room.
    let w = dst[mop - offset..]
        .first_chunk_mut::<32>()
        .expect("32 bytes of room");
    repeat_short_pattern(w, offset, ml);
}

/// A match with length bytes, its offset checked, in the fast loop: `rest` is the input
/// after the match offset, `mop` where the match starts. Returns the input after its length
/// bytes and the match's length; `None` (nothing written) where the general step must take
/// it: length bytes that run out, fewer than [`FOLLOW`] bytes of input after them (so that
/// [`copy_long_match`]'s 15 bytes past the match are output that follows), an offset of 0
/// or before the output's start, or too little room.
#[inline(always)]
fn long_match<'a>(
    rest: &'a [u8],
    dst: &mut [u8],
    mop: usize,
    offset: usize,
) -> Option<(&'a [u8], usize)> {
    let mut ml = RUN_MASK + MIN_MATCH;
    let mut k = 0;
    loop {
        let b = *rest.get(k)?;
        k += 1;
        ml += usize::from(b);
        if b != 255 {
            break;
        }
    }
    let rest = &rest[k..];
    if rest.len() < FOLLOW || offset.wrapping_sub(1) >= mop || dst.len() - mop < ml + 16 {
        return None;
    }
    copy_long_match(dst, mop, offset, ml);
    Some((rest, ml))
}
