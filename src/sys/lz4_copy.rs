//! The lz4 decoder's bounds and its copies that write past a match, below the algorithm
//! layer: the unchecked fast loop (`sys/lz4.rs`) is built on them, and the decoder in
//! `alg::lz4` (`block.rs`, `fast.rs`, `copy.rs`, which say where each bound comes from) uses
//! them from here, so that `sys` imports nothing from the algorithms. Safe code.

/// Shortest match (`MINMATCH`): the token's match nibble counts from here.
pub(crate) const MIN_MATCH: usize = 4;

/// A length nibble of 15: more length bytes follow.
pub(crate) const RUN_MASK: usize = 15;

/// Input left (bytes) past which at least 29 bytes of output follow in a valid block.
pub(crate) const FOLLOW: usize = 32;

/// Input left after a literal run (from its match offset on) for a 32-byte wild copy of
/// the run: at least 38 bytes of output follow the literals, more than 31.
pub(crate) const FOLLOW_WILD_LITERALS: usize = 40;

/// Input left (bytes, from a token on) at every token of the fast loop: the token and the
/// 16 bytes copied as literals before it is looked at, and one more, so that a valid block
/// has at least 16 bytes of output from the token on (`R` bytes decode to at least
/// `R - 2 - R / 255`, `copy.rs`).
pub(crate) const TOKEN_INPUT: usize = 18;

/// Input left (bytes) after the match offset of a sequence of short lengths (a literal
/// nibble and a match nibble under 15) that the fast loop takes. In a valid block at least
/// 21 bytes of output follow the offset, more than the 20 past a 4-byte match that its
/// three 8-byte chunks write; if it is the block's last match, at least 21 literals follow
/// it, more than `LASTLITERALS` (5) and `MFLIMIT` (12) ask; and the next token has at
/// least [`TOKEN_INPUT`] bytes.
pub(crate) const AFTER_SHORT_MATCH: usize = 23;

/// Room (bytes, from the output's end on) that the fast loop wants at every token: 16
/// bytes of literals, and 24 from a match that starts at most 14 bytes in.
pub(crate) const FAST_ROOM: usize = 38;

/// Writes the match of `ml` bytes at `op`, copied from `offset` bytes back (`1 <= offset <=
/// op`, `op + ml + 16 <= dst.len()`), in chunks of 16 bytes (`offset` 16 or more) or 8
/// (`offset` 8 to 15), or as its repeated pattern (`offset` 2 to 7, [`Pattern`]: chunks of
/// 16 bytes where the pattern repeats every 8, else 8): up to 15 bytes past the match,
/// where the caller knows more output follows. Exact for `offset` 1 (a `fill`).
#[inline(always)]
pub(crate) fn copy_long_match(dst: &mut [u8], op: usize, offset: usize, ml: usize) {
    debug_assert!((1..=op).contains(&offset) && op + ml + 16 <= dst.len());
    let from = op - offset;
    let mut done = 0;
    let wild = ml.next_multiple_of(16);
    if offset >= wild {
        // The source ends before the match: chunks of two slices, one length check.
        let (head, tail) = dst.split_at_mut(op);
        for (d, s) in tail[..wild]
            .chunks_exact_mut(16)
            .zip(head[from..from + wild].chunks_exact(16))
        {
            d.copy_from_slice(s);
        }
    } else if offset >= 16 {
        while done < ml {
            dst.copy_within(from + done..from + done + 16, op + done);
            done += 16;
        }
    } else if offset >= 8 {
        while done < ml {
            dst.copy_within(from + done..from + done + 8, op + done);
            done += 8;
        }
    } else if offset == 1 {
        let b = dst[from];
        dst[op..op + ml].fill(b);
    } else {
        let mut p = Pattern::new(*dst[from..].first_chunk().expect("room"), offset);
        if 8 % offset == 0 {
            // Every chunk is the same: 16 bytes at a time.
            let c = p.next_chunk();
            let mut c16 = [0; 16];
            c16[..8].copy_from_slice(&c);
            c16[8..].copy_from_slice(&c);
            for chunk in dst[op..op + ml.next_multiple_of(16)].chunks_exact_mut(16) {
                chunk.copy_from_slice(&c16);
            }
        } else {
            for chunk in dst[op..op + ml.next_multiple_of(8)].chunks_exact_mut(8) {
                chunk.copy_from_slice(&p.next_chunk());
            }
        }
    }
}

/// The output of a match whose offset `d` is under 8, 8 bytes at a time: the `d` bytes
/// before the match repeated, as a `u64` (little-endian), so that a chunk never waits on
/// the bytes the chunk before it stored.
pub(crate) struct Pattern {
    /// The next 8 bytes of the match.
    chunk: u64,
    /// Bits to shift right, then left, to get the chunk after it: `8 * (8 % d)` and
    /// `8 * (d - 8 % d)`.
    right: u32,
    left: u32,
}

impl Pattern {
    /// From the 8 bytes that start `d` bytes before the match (`1 <= d < 8`; only their
    /// first `d` are read).
    #[inline(always)]
    pub(crate) fn new(before: [u8; 8], d: usize) -> Self {
        debug_assert!((1..8).contains(&d));
        let bits = 8 * d as u32;
        let period = u64::from_le_bytes(before) & ((1 << bits) - 1);
        // The period copied to every `d`-byte step: copies that do not overlap, no carries.
        let chunk = period.wrapping_mul(REPEAT[d]);
        let r = 8 * EIGHT_MOD[d];
        Pattern {
            chunk,
            right: r,
            left: bits - r,
        }
    }

    /// The next 8 bytes of the match. Byte `j` of the chunk after `c` is `c[j + 8 % d]`,
    /// or `c[j + 8 % d - d]` where that passes the chunk's end: the two shifts, OR-ed,
    /// agree where they overlap (the chunk has period `d`).
    #[inline(always)]
    pub(crate) fn next_chunk(&mut self) -> [u8; 8] {
        let c = self.chunk;
        self.chunk = (c >> self.right) | (c << self.left);
        c.to_le_bytes()
    }
}

/// `8 % d` for an offset `d` under 8, without a division.
const EIGHT_MOD: [u32; 8] = {
    let mut t = [0u32; 8];
    let mut d = 1;
    while d < 8 {
        t[d] = 8 % d as u32;
        d += 1;
    }
    t
};

/// For an offset `d` under 8: `1 + 2^(8d) + 2^(16d) + ...` below `2^64`, which copies a
/// `d`-byte period to every step of a `u64`.
const REPEAT: [u64; 8] = {
    let mut t = [0u64; 8];
    let mut d = 1;
    while d < 8 {
        let mut s = 0;
        while s < 64 {
            t[d] |= 1 << s;
            s += 8 * d;
        }
        d += 1;
    }
    t
};
