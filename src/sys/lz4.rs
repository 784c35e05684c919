//! The lz4 decoder's fast loop (`src/alg/lz4/fast.rs` describes it), its copies unchecked:
//! the one place the decoder leaves safe Rust.
//!
//! The loop's test, [`FAST_ROOM`] bytes of room left at the token, and one comparison of
//! where the match offset starts against the end of the input bound every fixed-size copy
//! of a sequence of short lengths; literals or a match with length bytes are bounded by one
//! comparison each against the end of the input and of the destination before they are
//! copied. Anything it does not take (an offset to refuse, a length that runs out of input,
//! too little room) it leaves to the decoder's general step, which decodes that sequence again from its token with checked
//! copies and says what is wrong. Indices are `usize` and compared before any pointer is
//! formed, so that a bad block can only send the loop back to the general step.
//!
//! Which bytes past its output the loop may write, and why a valid block always has more
//! output there, is the decoder's argument (`copy.rs`): the bounds below only keep every
//! access inside `src` and `dst`.

use std::ptr;

use super::lz4_copy::{
    AFTER_SHORT_MATCH, FAST_ROOM, FOLLOW, FOLLOW_WILD_LITERALS, MIN_MATCH, Pattern, RUN_MASK,
    TOKEN_INPUT, copy_long_match,
};

/// Decodes sequences from `src` into `dst` at `op` while they are far from both ends:
/// returns how many bytes of `src` it took (up to the first token it left) and the
/// output's end. Takes nothing where `op > dst.len()`.
#[inline(never)]
pub(crate) fn lz4_decode_fast(src: &[u8], dst: &mut [u8], mut op: usize) -> (usize, usize) {
    // The last index at which a short match's offset may start, and the last output's end
    // the loop takes, computed once: one comparison each per sequence.
    let (Some(mlimit), Some(olimit)) = (
        src.len().checked_sub(2 + AFTER_SHORT_MATCH),
        dst.len().checked_sub(FAST_ROOM),
    ) else {
        return (0, op);
    };
    let mut ip = 0;
    // At every token: `ip + TOKEN_INPUT <= src.len()` (here `src.len() >= 2 +
    // AFTER_SHORT_MATCH > TOKEN_INPUT`; after a sequence, each path below leaves more).
    // The loop's test: `op + FAST_ROOM <= dst.len()`.
    while op <= olimit {
        // SAFETY:
        // - `ip + 17 <= ip + TOKEN_INPUT <= src.len()`: the token and 16 bytes after it are
        //   in `src`;
        // - `op + 16 <= op + FAST_ROOM <= dst.len()`: 16 bytes at `op` are in `dst`;
        // - `src` and `dst` are distinct borrows, so they do not overlap.
        let token = unsafe {
            debug_assert!(ip + TOKEN_INPUT <= src.len() && op + 16 <= dst.len());
            let s = src.as_ptr().add(ip);
            ptr::copy_nonoverlapping(s.add(1), dst.as_mut_ptr().add(op), 16);
            *s
        };
        let mut lit = usize::from(token >> 4);
        let mp;
        if lit == RUN_MASK {
            // One length byte: a run of 270 literals or more (a first length byte of 255) is
            // left to the general step, where the copy costs more than reading the
            // length bytes again (an incompressible page is one such run, the block's last).
            let n = src[ip + 1];
            if n == 255 {
                break;
            }
            lit += usize::from(n);
            let lp = ip + 2;
            if !run_fits(src.len(), dst.len(), lp, op, lit) {
                break;
            }
            let wild = lit.next_multiple_of(32);
            // SAFETY:
            // - `32 <= wild` (`lit >= 15`): the first chunk is within the run's chunks;
            // - `lp + wild <= lp + lit + 31 < src.len()` (`run_fits`): every chunk read is
            //   in `src`;
            // - `op + wild <= dst.len()` (`run_fits`): every chunk written is in `dst`;
            // - `src` and `dst` do not overlap.
            unsafe {
                debug_assert!(lp + wild < src.len() && op + wild <= dst.len());
                let (s, d) = (src.as_ptr().add(lp), dst.as_mut_ptr().add(op));
                // The first chunk apart (every run here is 15 bytes or more): most runs
                // take one or two, which a `memcpy` call would cost more than.
                ptr::copy_nonoverlapping(s, d, 32);
                let mut k = 32;
                while k < wild {
                    ptr::copy_nonoverlapping(s.add(k), d.add(k), 32);
                    k += 32;
                }
            }
            mp = lp + lit;
        } else {
            // Up to 14 literals, already copied.
            mp = ip + 1 + lit;
            if mp > mlimit {
                break;
            }
        }
        // SAFETY: the offset's 2 bytes are in `src`: `mp + 2 + AFTER_SHORT_MATCH <=
        // src.len()` (`mlimit`) after a short run, `mp + FOLLOW_WILD_LITERALS <= src.len()`
        // (`run_fits`) after a longer one.
        let offset = usize::from(u16::from_le(unsafe {
            debug_assert!(mp + 2 <= src.len());
            src.as_ptr().add(mp).cast::<u16>().read_unaligned()
        }));
        // `mop + 24 <= dst.len()`: at most 14 bytes into the token's `FAST_ROOM`, or after
        // a longer run (`run_fits`). From here at least `AFTER_SHORT_MATCH` bytes of input
        // are left after the offset, at least `TOKEN_INPUT` at the next token.
        let mop = op + lit;
        let mut next = mp + 2;
        let ml;
        if usize::from(token & 15) == RUN_MASK {
            let Some((n, after)) = length_at(src, next) else {
                break;
            };
            ml = RUN_MASK + MIN_MATCH + n;
            next = after;
            // As `copy_long_match` asks: at least `FOLLOW` bytes of input after the match
            // (so that the 15 bytes it may write past the match are output that follows),
            // the offset within the output, and the room.
            if src.len() - next < FOLLOW
                || offset.wrapping_sub(1) >= mop
                || dst.len() - mop < 16
                || ml > dst.len() - mop - 16
            {
                break;
            }
            long_match(dst, mop, offset, ml);
        } else {
            ml = usize::from(token & 15) + MIN_MATCH;
            if offset >= 8 && offset <= mop {
                // SAFETY:
                // - `8 <= offset <= mop`: the source, `mop - offset .. mop - offset + 24`,
                //   starts in `dst` and ends at most 16 bytes past `mop`, before the end;
                // - `mop + 24 <= dst.len()`: the three chunks written are in `dst`;
                // - each chunk reads from at least 8 bytes back: source and destination of
                //   one chunk do not overlap (a chunk may read what the one before wrote).
                unsafe {
                    debug_assert!((8..=mop).contains(&offset) && mop + 24 <= dst.len());
                    let d = dst.as_mut_ptr().add(mop);
                    let s = d.sub(offset);
                    ptr::copy_nonoverlapping(s, d, 8);
                    ptr::copy_nonoverlapping(s.add(8), d.add(8), 8);
                    ptr::copy_nonoverlapping(s.add(16), d.add(16), 8);
                }
            } else if offset.wrapping_sub(1) < mop {
                // SAFETY:
                // - `1 <= offset <= mop`: the 8 bytes at `mop - offset` start in `dst`
                //   and end before `mop + 8`;
                // - `mop + 24 <= dst.len()`: the 24 bytes at `mop` are in `dst`.
                unsafe {
                    debug_assert!((1..=mop).contains(&offset) && mop + 24 <= dst.len());
                    short_pattern(dst.as_mut_ptr().add(mop), offset);
                }
            } else {
                break;
            }
        }
        ip = next;
        op = mop + ml;
        debug_assert!(ip <= src.len() && op <= dst.len());
    }
    (ip, op)
}

/// Whether the literal run of `lit` bytes at `lp` in a source of `slen` bytes, to be
/// written at `op` in a destination of `dlen`, can be copied in 32-byte chunks and leaves
/// room for a short match's 24 bytes after it: `lp + lit + FOLLOW_WILD_LITERALS <= slen`
/// (as `copy_literals`: a valid block has more output after the run than the 31 bytes a
/// chunk writes past it), `op + lit.next_multiple_of(32) <= dlen` and `op + lit + 24 <=
/// dlen`. Compared without a sum that can overflow (`lp <= slen`, `op <= dlen`).
#[inline(always)]
fn run_fits(slen: usize, dlen: usize, lp: usize, op: usize, lit: usize) -> bool {
    let (ileft, oleft) = (slen - lp, dlen - op);
    ileft >= FOLLOW_WILD_LITERALS
        && lit <= ileft - FOLLOW_WILD_LITERALS
        && oleft >= 32
        && lit <= oleft - 32
}

/// The length bytes after a nibble of 15 that start at `at`: their sum, up to the first
/// that is not 255, and the index after it; `None` where they run past the end of `src`.
#[inline(always)]
fn length_at(src: &[u8], mut at: usize) -> Option<(usize, usize)> {
    let mut n = 0;
    loop {
        let b = *src.get(at)?;
        at += 1;
        n += usize::from(b);
        if b != 255 {
            return Some((n, at));
        }
    }
}

/// A match of up to 18 bytes at an offset under 8, written at `d` as its pattern
/// ([`Pattern`]) in three 8-byte chunks. Out of the loop's line: it is about one sequence
/// in 25 of a heap page, and inlined its registers cost every other sequence.
///
/// # Safety
///
/// `1 <= offset < 8`; the 8 bytes at `d - offset` are readable and the 24 bytes at `d`
/// writable, all in one allocation.
#[inline(never)]
unsafe fn short_pattern(d: *mut u8, offset: usize) {
    // SAFETY: the caller's bounds: 8 bytes read at `d - offset`, 24 written at `d`, one
    // chunk at a time (a chunk is built in a register before it is stored).
    unsafe {
        let before = d.sub(offset).cast::<[u8; 8]>().read_unaligned();
        let mut p = Pattern::new(before, offset);
        d.cast::<[u8; 8]>().write_unaligned(p.next_chunk());
        d.add(8).cast::<[u8; 8]>().write_unaligned(p.next_chunk());
        d.add(16).cast::<[u8; 8]>().write_unaligned(p.next_chunk());
    }
}

/// [`copy_long_match`] for an offset under 16, out of the loop's line: its patterns hold
/// registers that every other sequence would pay for.
#[inline(never)]
fn long_match_near(dst: &mut [u8], mop: usize, offset: usize, ml: usize) {
    copy_long_match(dst, mop, offset, ml);
}

/// A match with length bytes (`1 <= offset <= mop`, `mop + ml + 16 <= dst.len()`), in
/// chunks of 16 bytes where `offset` is 16 or more; nearer ones by [`copy_long_match`].
#[inline(always)]
fn long_match(dst: &mut [u8], mop: usize, offset: usize, ml: usize) {
    if offset < 16 {
        long_match_near(dst, mop, offset, ml);
        return;
    }
    // SAFETY:
    // - `16 <= offset <= mop`: every chunk's source is in `dst`, before its destination;
    // - `mop + ml.next_multiple_of(16) <= mop + ml + 15 < dst.len()`: every chunk written
    //   is in `dst`;
    // - each chunk reads from at least 16 bytes back: source and destination of one chunk
    //   do not overlap.
    unsafe {
        debug_assert!((16..=mop).contains(&offset) && mop + ml + 16 <= dst.len());
        let d = dst.as_mut_ptr().add(mop);
        let s = d.sub(offset);
        let mut k = 0;
        while k < ml {
            ptr::copy_nonoverlapping(s.add(k), d.add(k), 16);
            k += 16;
        }
    }
}
