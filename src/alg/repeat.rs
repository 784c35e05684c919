//! A match that repeats the bytes before it, copied exactly: where an LZ77 match overlaps its
//! own output (zstd's one-sequence blocks, lz4's matches near a block's end).

/// Writes `len` bytes at `at` that repeat the `offset` bytes before it (`1 <= offset <= at`,
/// `at + len <= dst.len()`), in chunks that double: each copies from a whole number of
/// periods back, so no chunk overlaps its source (a `memmove` of at most half of what is
/// written by then). Writes nothing past `at + len`.
#[inline]
pub(crate) fn repeat_match(dst: &mut [u8], at: usize, offset: usize, len: usize) {
    debug_assert!((1..=at).contains(&offset) && at + len <= dst.len());
    let end = at + len;
    let (mut pos, mut back) = (at, offset);
    while pos < end {
        let n = back.min(end - pos);
        dst.copy_within(pos - back..pos - back + n, pos);
        pos += n;
        back *= 2;
    }
}
