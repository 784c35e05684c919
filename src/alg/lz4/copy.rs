//! The decoder's copies: literals from the block, matches from the output, in fixed-size
//! chunks where the format leaves room, exactly where it does not.
//!
//! # Where a copy may write past its end
//!
//! After `Ok(n)`, `dst[n..]` must be as the caller left it, so a copy may write past its own
//! end only where, in any valid block, more output follows that later sequences overwrite.
//! Two rules of the format say where:
//!
//! - `MFLIMIT`: at least 12 bytes of output follow the start of every match (the last match
//!   starts at least 12 bytes before the end; every other one before it).
//! - The input left pays for the output left: from a sequence's token (or from a match
//!   offset) to the end of a valid block, `R` bytes of input decode to at least
//!   `R - 2 - R / 255` bytes. Each sequence's token, offset and length bytes are paid for by
//!   the 4 bytes of its match and the 15 literals or 19 match bytes that a length byte
//!   announces (a 255 announces 255 more); only the last sequence, literals alone, can owe
//!   its token and one length byte. So where [`FOLLOW`] bytes of input are left, at least
//!   29 bytes of output follow.
//!
//! A block that breaks either rule is refused, so bytes past the output change only on an
//! error. Each copy below says which rule it leans on.

use crate::alg::repeat::repeat_match;
pub(super) use crate::sys::lz4_copy::{FOLLOW, FOLLOW_WILD_LITERALS, Pattern, copy_long_match};

/// The longest match a short wild copy takes: a match-length nibble under 15.
const SHORT_MATCH: usize = 18;

/// Copies the literal run `input[..lit]` to the front of `out`, where a match follows it
/// (`lit < input.len()`). `None` where the run does not fit `out` (nothing is copied).
#[inline(always)]
pub(super) fn copy_literals(out: &mut [u8], input: &[u8], lit: usize) -> Option<()> {
    debug_assert!(lit < input.len());
    let wild = lit.next_multiple_of(32);
    if input.len() - lit >= FOLLOW_WILD_LITERALS && out.len() >= wild {
        // At most 31 bytes past the run, which the input left pays for.
        let (d, s) = (&mut out[..wild], &input[..wild]);
        for (d, s) in d.chunks_exact_mut(32).zip(s.chunks_exact(32)) {
            d.copy_from_slice(s);
        }
        return Some(());
    }
    // `MFLIMIT`: 8 bytes from a run of up to 3, or 16 from one of 4 to 16, stay within the
    // 12 bytes of output after the match's start.
    if lit < 4 {
        if let (Some(d), Some(s)) = (out.first_chunk_mut::<8>(), input.first_chunk::<8>()) {
            *d = *s;
            return Some(());
        }
    } else if lit <= 16 {
        if let (Some(d), Some(s)) = (out.first_chunk_mut::<16>(), input.first_chunk::<16>()) {
            *d = *s;
            return Some(());
        }
    }
    copy_exact(out.get_mut(..lit)?, &input[..lit]);
    Some(())
}

/// Writes the match of `ml` bytes at `op`, copied from `offset` bytes back (`1 <= offset <=
/// op`, `op + ml <= dst.len()`). `follow`: at least [`FOLLOW`] bytes of input are left after
/// the match's header, so that a match may be copied by [`copy_short_match`] (at most 20
/// bytes past its end) or [`copy_long_match`] (at most 15). Otherwise exact. Where the match overlaps its own output (`offset <
/// ml`), it repeats the last `offset` bytes.
#[inline(always)]
pub(super) fn copy_match(dst: &mut [u8], op: usize, offset: usize, ml: usize, follow: bool) {
    if follow && ml <= SHORT_MATCH && dst.len() - op >= 32 {
        copy_short_match(dst, op, offset, ml);
    } else if follow && dst.len() - op >= ml + 16 {
        copy_long_match(dst, op, offset, ml);
    } else {
        copy_match_exact(dst, op, offset, ml);
    }
}

/// Writes the match of `ml` bytes (4 to 18) at `op`, copied from `offset` bytes back (`1 <=
/// offset <= op`, `op + 32 <= dst.len()`), in 8- or 16-byte chunks: up to 24 bytes from
/// `op`, where the caller knows more output follows.
#[inline(always)]
pub(super) fn copy_short_match(dst: &mut [u8], op: usize, offset: usize, ml: usize) {
    debug_assert!(ml <= SHORT_MATCH && (1..=op).contains(&offset) && op + 32 <= dst.len());
    let from = op - offset;
    if offset >= 16 {
        dst.copy_within(from..from + 16, op);
        if ml > 16 {
            dst.copy_within(from + 16..from + 24, op + 16);
        }
    } else if offset >= 8 {
        // Each chunk reads bytes at least 8 back: written before it.
        dst.copy_within(from..from + 8, op);
        dst.copy_within(from + 8..from + 16, op + 8);
        if ml > 16 {
            dst.copy_within(from + 16..from + 24, op + 16);
        }
    } else {
        let w = dst[from..]
            .first_chunk_mut::<32>()
            .expect("32 bytes of room");
        repeat_short_pattern(w, offset, ml);
    }
}

/// In the window `w` that starts `d` (1 to 7) bytes before a match of up to 18 bytes,
/// repeats the window's first `d` bytes from `w[d]` on, in 8-byte chunks built in a
/// register ([`Pattern`]): no chunk reads bytes the match writes. Writes up to `w[d + 24]`.
#[inline(always)]
pub(super) fn repeat_short_pattern(w: &mut [u8; 32], d: usize, ml: usize) {
    debug_assert!((1..8).contains(&d) && ml <= SHORT_MATCH);
    let mut p = Pattern::new(*w.first_chunk().expect("32 > 8"), d);
    let n = if ml > 16 {
        3
    } else if ml > 8 {
        2
    } else {
        1
    };
    for chunk in w[d..d + 8 * n].chunks_exact_mut(8) {
        chunk.copy_from_slice(&p.next_chunk());
    }
}

/// [`copy_match`] without writing a byte past the match.
fn copy_match_exact(dst: &mut [u8], op: usize, offset: usize, ml: usize) {
    let from = op - offset;
    if offset >= ml {
        let (head, tail) = dst.split_at_mut(op);
        copy_exact(&mut tail[..ml], &head[from..from + ml]);
    } else if offset >= 8 && ml <= 64 {
        // 8 bytes at a time: each reads only bytes already written.
        let mut done = 0;
        while done + 8 <= ml {
            dst.copy_within(from + done..from + done + 8, op + done);
            done += 8;
        }
        if done < ml {
            dst.copy_within(from + ml - 8..from + ml, op + ml - 8);
        }
    } else if offset == 1 {
        let b = dst[from];
        dst[op..op + ml].fill(b);
    } else if offset < 8 && ml <= 64 {
        // The pattern 8 bytes at a time, the last chunk cut to the match's end.
        let mut before = [0; 8];
        before[..offset].copy_from_slice(&dst[from..op]);
        let mut p = Pattern::new(before, offset);
        for chunk in dst[op..op + ml].chunks_mut(8) {
            chunk.copy_from_slice(&p.next_chunk()[..chunk.len()]);
        }
    } else {
        repeat_match(dst, op, offset, ml);
    }
}

/// Copies `s` into `d` (of the same length): short runs, the common case, as two fixed-size
/// moves that overlap, and never a byte past `d`.
#[inline(always)]
pub(super) fn copy_exact(d: &mut [u8], s: &[u8]) {
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
