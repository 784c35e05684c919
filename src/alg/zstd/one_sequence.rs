//! A compressed block of one sequence, decoded by acomp itself (RFC 8878 §3.1.1.3): what
//! zstd writes for a zero, same-filled or otherwise periodic page (a few literals, then one
//! match that repeats them to the end). libzstd spends most of a 4 KiB page's decompression
//! there on its frame set-up and on a match copy 8 bytes at a time, `ZSTD_safecopy`, at the
//! block's end; acomp reads the one sequence and copies the match in doubling chunks
//! (`repeat_match`).
//!
//! Only the plainest form is taken: literals raw or RLE, exactly one sequence, the
//! predefined codes for all three symbols, no dictionary. Everything here is checked as
//! libzstd checks it or more strictly (a block it declines goes to libzstd, which decides),
//! and nothing is written before the whole block has been read and found to fill the
//! destination exactly; `tests::same_as_libzstd_*` hold every accepted block to libzstd's
//! output.

use crate::alg::repeat::repeat_match;

/// The accuracy log of the predefined literal-length, offset and match-length codes
/// (§3.1.1.3.2.2).
const LL_LOG: u32 = 6;
const OF_LOG: u32 = 5;
const ML_LOG: u32 = 6;

/// The predefined distributions (§3.1.1.3.2.2): `-1` is a "less than 1" probability.
const LL_DIST: [i8; 36] = [
    4, 3, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 1, 1, 1, 2, 2, 2, 2, 2, 2, 2, 2, 2, 3, 2, 1, 1, 1, 1, 1,
    -1, -1, -1, -1,
];
const OF_DIST: [i8; 29] = [
    1, 1, 1, 1, 1, 1, 2, 2, 2, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, -1, -1, -1, -1, -1,
];
const ML_DIST: [i8; 53] = [
    1, 4, 3, 2, 2, 2, 2, 2, 2, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, -1, -1, -1, -1, -1, -1, -1,
];

/// The symbol of each state of an FSE table built from `dist` (§4.1.1): "less than 1"
/// symbols take the last cells, one each; the others are spread with the step
/// `size/2 + size/8 + 3`, skipping those cells. The one sequence of a block is decoded from
/// its initial states, with no state update, so their symbols are all that is needed.
const fn spread<const SIZE: usize>(dist: &[i8]) -> [u8; SIZE] {
    let mut table = [0u8; SIZE];
    let mut high = SIZE - 1;
    let mut s = 0;
    while s < dist.len() {
        if dist[s] == -1 {
            table[high] = s as u8;
            high -= 1;
        }
        s += 1;
    }
    let step = (SIZE >> 1) + (SIZE >> 3) + 3;
    let mut pos = 0;
    s = 0;
    while s < dist.len() {
        let mut n = 0;
        while n < dist[s] {
            table[pos] = s as u8;
            pos = (pos + step) & (SIZE - 1);
            while pos > high {
                pos = (pos + step) & (SIZE - 1);
            }
            n += 1;
        }
        s += 1;
    }
    table
}

const LL_SYMBOL: [u8; 1 << LL_LOG] = spread(&LL_DIST);
const OF_SYMBOL: [u8; 1 << OF_LOG] = spread(&OF_DIST);
const ML_SYMBOL: [u8; 1 << ML_LOG] = spread(&ML_DIST);

/// Literal-length codes 16 to 35: baseline and extra bits (§3.1.1.3.2.1.1); codes 0 to 15
/// are their own value.
const LL_LONG: [(u32, u32); 20] = [
    (16, 1),
    (18, 1),
    (20, 1),
    (22, 1),
    (24, 2),
    (28, 2),
    (32, 3),
    (40, 3),
    (48, 4),
    (64, 6),
    (128, 7),
    (256, 8),
    (512, 9),
    (1024, 10),
    (2048, 11),
    (4096, 12),
    (8192, 13),
    (16384, 14),
    (32768, 15),
    (65536, 16),
];

/// Match-length codes 32 to 52: baseline and extra bits (§3.1.1.3.2.1.1); codes 0 to 31
/// are their value minus 3.
const ML_LONG: [(u32, u32); 21] = [
    (35, 1),
    (37, 1),
    (39, 1),
    (41, 1),
    (43, 2),
    (47, 2),
    (51, 3),
    (59, 3),
    (67, 4),
    (83, 4),
    (99, 5),
    (131, 7),
    (259, 8),
    (515, 9),
    (1027, 10),
    (2051, 11),
    (4099, 12),
    (8195, 13),
    (16387, 14),
    (32771, 15),
    (65539, 16),
];

/// The longest sequence bitstream taken: three states (17 bits) and the extra bits of the
/// longest codes (28 + 16 + 16) fit in 10 bytes; a longer one is not a lone sequence's.
const BITSTREAM_MAX: usize = 16;

/// A backward bitstream (§4.1): read from the last byte's highest set bit down.
struct Bits {
    value: u128,
    /// Bits not read yet, below the marker bit.
    left: u32,
}

impl Bits {
    #[inline]
    fn new(bytes: &[u8]) -> Option<Bits> {
        let &last = bytes.last()?;
        if last == 0 || bytes.len() > BITSTREAM_MAX {
            return None; // no marker bit: libzstd's BIT_initDStream refuses it too
        }
        let mut le = [0u8; BITSTREAM_MAX];
        le[..bytes.len()].copy_from_slice(bytes);
        Some(Bits {
            value: u128::from_le_bytes(le),
            left: 8 * (bytes.len() as u32 - 1) + (7 - last.leading_zeros()),
        })
    }

    #[inline]
    fn read(&mut self, n: u32) -> Option<u32> {
        self.left = self.left.checked_sub(n)?;
        Some(((self.value >> self.left) as u32) & ((1u32 << n) - 1))
    }
}

/// The block's literals: raw bytes, or one byte repeated.
enum Literals<'a> {
    Raw(&'a [u8]),
    Rle(u8, usize),
}

impl Literals<'_> {
    fn len(&self) -> usize {
        match *self {
            Literals::Raw(b) => b.len(),
            Literals::Rle(_, n) => n,
        }
    }

    /// Writes literals `from..from + dst.len()` into `dst`.
    #[inline]
    fn write(&self, from: usize, dst: &mut [u8]) {
        match *self {
            Literals::Raw(b) => dst.copy_from_slice(&b[from..from + dst.len()]),
            Literals::Rle(byte, _) => dst.fill(byte),
        }
    }
}

/// Decodes `block`, the content of the only block of a frame (a compressed block), into
/// `dst`, which must come out exactly full: `Some(dst.len())`. `None`, with `dst`
/// untouched, for any block that is not raw or RLE literals and one sequence in the
/// predefined codes, or that breaks a rule; libzstd decides those.
#[inline(never)]
pub(super) fn decode(block: &[u8], dst: &mut [u8]) -> Option<usize> {
    let (literals, rest) = literals(block)?;
    // Sequences section header (§3.1.1.3.2.1): one sequence, all three codes predefined.
    let [1, 0, ref bitstream @ ..] = *rest else {
        return None;
    };
    let mut bits = Bits::new(bitstream)?;
    let ll_code = LL_SYMBOL[bits.read(LL_LOG)? as usize];
    let of_code = u32::from(OF_SYMBOL[bits.read(OF_LOG)? as usize]);
    let ml_code = ML_SYMBOL[bits.read(ML_LOG)? as usize];
    // Extra bits: offset, then match length, then literal length (§3.1.1.3.2.1.1).
    let of_value = (1u32 << of_code) + bits.read(of_code)?;
    let ml = match ml_code.checked_sub(32) {
        None => u32::from(ml_code) + 3,
        Some(i) => {
            let (base, n) = ML_LONG[usize::from(i)];
            base + bits.read(n)?
        }
    };
    let ll = match ll_code.checked_sub(16) {
        None => u32::from(ll_code),
        Some(i) => {
            let (base, n) = LL_LONG[usize::from(i)];
            base + bits.read(n)?
        }
    };
    if bits.left != 0 {
        return None; // libzstd wants the bitstream read to its exact end
    }
    let (ll, ml) = (ll as usize, ml as usize);
    // Offset values 1 to 3 are repeat offsets, from their initial values 1, 4, 8
    // (§3.1.1.5); with no literals they shift by one, and the last is 1 - 1: corrupt.
    let offset = match (of_value, ll) {
        (4.., _) => of_value as usize - 3,
        (1, 1..) => 1,
        (2, 1..) | (1, 0) => 4,
        (3, 1..) | (2, 0) => 8,
        _ => return None,
    };
    // The match starts after the sequence's literals, with nothing before them (the
    // frame's first block, no dictionary): it may reach back at most that far.
    if ll > literals.len() || offset > ll || literals.len() + ml != dst.len() {
        return None;
    }
    literals.write(0, &mut dst[..ll]);
    repeat_match(dst, ll, offset, ml);
    let end = ll + ml;
    literals.write(ll, &mut dst[end..]);
    Some(dst.len())
}

/// The literals section (§3.1.1.3.1) where it is raw or RLE, and what follows it.
#[inline]
fn literals(block: &[u8]) -> Option<(Literals<'_>, &[u8])> {
    let &b0 = block.first()?;
    let rle = match b0 & 3 {
        0 => false,
        1 => true,
        _ => return None, // Huffman-coded: libzstd's work
    };
    let (header, size) = match (b0 >> 2) & 3 {
        0 | 2 => (1, usize::from(b0 >> 3)),
        1 => (
            2,
            usize::from(u16::from_le_bytes([b0, *block.get(1)?]) >> 4),
        ),
        _ => {
            let &[_, b1, b2] = block.first_chunk()?;
            (3, (u32::from_le_bytes([b0, b1, b2, 0]) >> 4) as usize)
        }
    };
    if rle {
        let &byte = block.get(header)?;
        Some((Literals::Rle(byte, size), block.get(header + 1..)?))
    } else {
        let raw = block.get(header..header + size)?;
        Some((Literals::Raw(raw), block.get(header + size..)?))
    }
}

#[cfg(test)]
mod tests;
