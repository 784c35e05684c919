//! The decoder's fast loop: sequences far from both ends of the block and the destination,
//! decoded with fixed-size copies and few checks. Anything unusual (an offset to refuse, a
//! length that runs out of input, too little room) is left to the decoder's general step,
//! which decodes that sequence again from its token and says what is wrong.

use super::block::MIN_MATCH;
use super::copy::copy_short_match;

/// Input left (bytes, from a token on) that the fast loop wants. With this much input left,
/// a valid block has at least 38 bytes of output from the token's sequence on (`copy.rs`),
/// as many as the short copies below write: 16 of literals, then 24 from a match that
/// starts at most 14 bytes in.
pub(super) const FAST: usize = 40;

/// Room (bytes, from the output's end on) that the fast loop wants: the copies above, and
/// the 32-byte window of [`copy_short_match`] for a match that starts at most 14 bytes in.
pub(super) const FAST_ROOM: usize = 48;

/// For each token: whether a length nibble is 15 (length bytes follow), one load instead of
/// two tests in the loop.
const HAS_LENGTH_BYTES: [bool; 256] = {
    let mut t = [false; 256];
    let mut i = 0;
    while i < 256 {
        t[i] = i >= 0xF0 || i & 15 == 15;
        i += 1;
    }
    t
};

/// Decodes sequences from the front of `input` into `dst` at `op` while they are far from
/// both ends. Returns the rest of the input, the output's end and, where a match was
/// decoded, where the last one starts and ends (else `last` as given).
#[inline(always)]
pub(super) fn decode_fast<'a>(
    mut input: &'a [u8],
    dst: &mut [u8],
    mut op: usize,
    mut last: (usize, usize),
) -> (&'a [u8], usize, (usize, usize)) {
    while let Some(inp) = input.first_chunk::<FAST>() {
        let (head, tail) = dst.split_at_mut(op);
        let Some(out) = tail.first_chunk_mut::<FAST_ROOM>() else {
            break;
        };
        // Up to 14 literals, copied before the token is looked at (16 bytes, within the 38
        // that follow): a sequence left to the general step has its literals written again.
        *out.first_chunk_mut::<16>().expect("48 > 16") = *inp[1..].first_chunk().expect("40 > 17");
        let token = inp[0];
        if HAS_LENGTH_BYTES[usize::from(token)] {
            break;
        }
        let lit = usize::from(token >> 4);
        let offset = usize::from(u16::from_le_bytes(
            *inp[1 + lit..].first_chunk().expect("lit <= 14"),
        ));
        let mop = op + lit;
        let ml = usize::from(token & 15) + MIN_MATCH;
        // The match's source, counted back from the literals' start: where it ends 24 bytes
        // or more before them (so the offset is neither 0 nor before the output's start),
        // one 24-byte copy covers its up to 18 bytes (room: `lit` is at most 14).
        let back = offset.wrapping_sub(lit);
        if back >= 24 && back <= op {
            let s = *head[op - back..].first_chunk::<24>().expect("back >= 24");
            *out[lit..].first_chunk_mut::<24>().expect("lit <= 14") = s;
        } else if offset.wrapping_sub(1) < mop {
            copy_short_match(dst, mop, offset, ml);
        } else {
            break;
        }
        input = &input[3 + lit..];
        op = mop + ml;
        last = (mop, op);
    }
    (input, op, last)
}
