//! The source's bytes by position, across its fragments: a seek table sits at the end of
//! a source cut anywhere, and its frames are sub-ranges of it.

use std::io::IoSlice;

use crate::Walk;

/// Consumes `n` bytes of the walk's source (the caller knows they are there).
pub(super) fn skip(walk: &mut Walk<'_, '_>, mut n: usize) {
    while n > 0 {
        let take = walk.next_src().len().min(n);
        if take == 0 {
            return;
        }
        walk.done_src(take);
        n -= take;
    }
}

/// Copies the source's bytes at `offset..offset + buf.len()`, across fragments, into
/// `buf`; `len` is the source's length, at least `offset + buf.len()`. Reads the fragments
/// from the end, where a seek table is: for a plain source of one fragment, one copy.
#[inline]
pub(super) fn read_at(src: &[IoSlice<'_>], len: usize, offset: usize, buf: &mut [u8]) {
    let want_end = offset + buf.len();
    debug_assert!(want_end <= len);
    let mut end = len;
    for s in src.iter().rev() {
        let start = end - s.len();
        if start < want_end && end > offset {
            let from = offset.max(start);
            let to = want_end.min(end);
            buf[from - offset..to - offset].copy_from_slice(&s[from - start..to - start]);
        }
        if start <= offset {
            break;
        }
        end = start;
    }
}

/// The fragments of the source's bytes `start..start + len` (the caller knows they are
/// there), into `out`.
pub(crate) fn sub_fragments<'a>(
    src: &'a [IoSlice<'a>],
    start: usize,
    len: usize,
    out: &mut Vec<IoSlice<'a>>,
) {
    out.clear();
    let (mut pos, end) = (0usize, start + len);
    for s in src {
        let (s_start, s_end) = (pos, pos + s.len());
        pos = s_end;
        if s_end <= start || s.is_empty() {
            continue;
        }
        if s_start >= end {
            break;
        }
        let bytes: &'a [u8] = s;
        out.push(IoSlice::new(
            &bytes[start.max(s_start) - s_start..end.min(s_end) - s_start],
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn read_at_crosses_fragments() {
        let (a, b, c) = ([1u8, 2, 3], [4u8], [5u8, 6, 7, 8]);
        let src = [
            IoSlice::new(&a),
            IoSlice::new(&b),
            IoSlice::new(&[]),
            IoSlice::new(&c),
        ];
        let mut buf = [0u8; 4];
        read_at(&src, 8, 2, &mut buf);
        assert_eq!(buf, [3, 4, 5, 6]);
        read_at(&src, 8, 4, &mut buf);
        assert_eq!(buf, [5, 6, 7, 8]);
        read_at(&src, 8, 0, &mut buf);
        assert_eq!(buf, [1, 2, 3, 4]);
        let mut out = Vec::new();
        sub_fragments(&src, 1, 5, &mut out);
        let got: Vec<u8> = out.iter().flat_map(|s| s.iter().copied()).collect();
        assert_eq!(got, [2, 3, 4, 5, 6]);
    }
}
