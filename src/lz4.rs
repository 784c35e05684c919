//! lz4 without a transform: acomp's LZ4 block decoder as two functions, and the limits of
//! [`Lz4Params`](crate::Lz4Params).
//!
//! [`decompress_block`] and [`block_content_size`] read the raw LZ4 block format (lz4's
//! `doc/lz4_Block_format.md`, as the kernel's `crypto/lz4.c` writes it and zram and zswap
//! store it) from one slice, with the checks of an lz4 [`Acomp`](crate::Acomp) and no
//! workspace, lock or request limit: for a caller that holds its blocks in one buffer each
//! and wants no transform. The transform adds fragments, `Stats`, and compression.
//!
//! # Where acomp and liblz4 differ
//!
//! acomp decodes every block the same way at every destination size; the reference
//! decoder, `LZ4_decompress_safe` (liblz4 1.10.0), does not. Each row is held by a test in
//! `tests/lz4.rs`.
//!
//! | block | `LZ4_decompress_safe` | acomp |
//! | --- | --- | --- |
//! | a match offset of 0 | takes it (writes zeros) | `EBADMSG` |
//! | the end-of-block rules broken (fewer than 5 literals after the last match, or the last match less than 12 bytes before the end) | checks them against the end of the destination: takes the block once the destination is larger than the output | `EBADMSG` at every destination size |
//! | a last token with a non-zero match nibble (`0f`, each one-byte block `01`..`0f`; `1f 61`, `5f hello`) | ignores the nibble, but refuses a block of one such token (no literals) at capacity 0, where it takes only `00` | ignores the nibble at every capacity: `0f` is `Ok(0)` into 0 bytes too. The one place acomp is the more lenient: no real writer makes such a block, liblz4 takes it at every other capacity, and the outcome stays the same at every size |
//! | a destination too small for a valid block | an error, no size | `ENOSPC` with the exact size `needed` |

use crate::Error;
pub use crate::alg::lz4::params::{
    ACCELERATION_MAX, DEFAULT_ACCELERATION, DEFAULT_REQUEST_MAX, REQUEST_MAX_LIMIT,
};
use crate::alg::lz4::{Stop, block};

/// acomp's LZ4 block decoder called directly, without a transform (no workspace, no lock,
/// no request limit, one slice each side): decodes the raw block `src` into the front of
/// `dst` and returns the bytes written, with the same checks and errors as an lz4
/// [`Acomp`](crate::Acomp) and nothing written past the output.
///
/// ```
/// // 5 literals "abcde", then a 9-byte match at offset 5, then 5 literals "vwxyz".
/// let block = [0x55, b'a', b'b', b'c', b'd', b'e', 5, 0, 0x50, b'v', b'w', b'x', b'y', b'z'];
/// let mut out = [0u8; 32];
/// let n = acomp::lz4::decompress_block(&block, &mut out)?;
/// assert_eq!(&out[..n], b"abcdeabcdeabcdvwxyz");
/// # Ok::<(), acomp::Error>(())
/// ```
///
/// # Errors
///
/// [`Error::NoSpace`] with the exact size needed where the block is valid but `dst` too
/// small; [`Error::Corrupt`] where the block breaks the format (at every size of `dst`);
/// [`Error::EmptySource`] for an empty `src`.
pub fn decompress_block(src: &[u8], dst: &mut [u8]) -> Result<usize, Error> {
    if src.is_empty() {
        return Err(Error::EmptySource);
    }
    match block::decode_inline(src, dst) {
        Ok(n) => Ok(n),
        Err(Stop::Corrupt(detail)) => Err(block::corrupt(src, detail)),
        Err(Stop::Full) => Err(match block::measure(src) {
            Ok(n) => Error::NoSpace {
                needed: Some(n),
                capacity: dst.len(),
            },
            Err(detail) => block::corrupt(src, detail),
        }),
    }
}

/// The exact size the raw block `src` decodes to, in bytes, found by a scan of its sequence
/// headers that checks every rule [`decompress_block`] checks and writes nothing.
///
/// # Errors
///
/// [`Error::Corrupt`] where the block breaks the format; [`Error::EmptySource`].
pub fn block_content_size(src: &[u8]) -> Result<u64, Error> {
    if src.is_empty() {
        return Err(Error::EmptySource);
    }
    block::measure(src).map_err(|detail| block::corrupt(src, detail))
}
