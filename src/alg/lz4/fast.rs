//! The decoder's fast loop: sequences far from both ends of the block and the destination,
//! decoded with fixed-size copies and few checks. Anything unusual (an offset to refuse, a
//! length that runs out of input, too little room) is left to the decoder's general step,
//! which decodes that sequence again from its token and says what is wrong.

use crate::sys;
use crate::sys::lz4_copy::{AFTER_SHORT_MATCH, FAST_ROOM};

/// Decodes sequences from the front of `input` into `dst` at `op` while they are far from
/// both ends. Returns the rest of the input and the output's end.
///
/// Every sequence starts with [`FAST_ROOM`] bytes of room left; its 16 first bytes of
/// literals are copied before the token is looked at (a sequence left to the general step
/// has its literals written again). A sequence of short lengths is taken where
/// [`AFTER_SHORT_MATCH`] bytes of input follow its offset: its match, up to 18 bytes at
/// least 8 back, in three 8-byte chunks (24 bytes from its start), a nearer one as its
/// repeated pattern. A longer run (length bytes) is copied in 32-byte chunks where at least
/// `FOLLOW_WILD_LITERALS` bytes of input follow it, as `copy_literals` does; a match with
/// length bytes in 16-byte chunks where [`FOLLOW`](super::copy::FOLLOW) bytes of input
/// follow it, as `copy_long_match` does. The copies are unchecked
/// (`crate::sys::lz4_decode_fast`): the loop's test and one comparison per sequence bound
/// them, where safe code checked every copy (callgrind, text page: 20,248 instructions with
/// checked copies and the general step taking runs and matches with length bytes). A run
/// of 270 literals or more is left to the general step. The loop is one function out of
/// every path's line: inlined, each path's copy ran at its own speed over distinct pages
/// (the one-shot path's 1.12x liblz4's time, `decompress_block`'s 0.95x, with the same
/// instructions), out of line all run as one.
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
/// least 8 bytes back is copied the same way whatever its offset (three 8-byte chunks).
/// Deciding instead on where the match's source ends (one 24-byte copy where it ends before
/// the literals) was mispredicted on about one sequence in five of a real heap page: in
/// cachegrind's branch model, 2,000 pages of a Python heap cost 149 mispredictions a page
/// against liblz4's 93 before, 96 after; 83 with the unchecked copies (liblz4 91 on those
/// pages).
#[inline(always)]
pub(super) fn decode_fast<'a>(input: &'a [u8], dst: &mut [u8], op: usize) -> (&'a [u8], usize) {
    // Near the end the loop takes nothing: no call.
    if input.len() < 2 + AFTER_SHORT_MATCH || dst.len() - op < FAST_ROOM {
        return (input, op);
    }
    let (taken, op) = sys::lz4_decode_fast(input, dst, op);
    (&input[taken..], op)
}
