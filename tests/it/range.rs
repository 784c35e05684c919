//! Range reads of a compressed extent into segments with gaps (the btrfs read path).

use std::io::IoSlice;

use crate::common::surgery;
use crate::common::*;
use acomp::{Acomp, Error};

/// A 128 KiB extent of text-like bytes and its frame without content size (as btrfs
/// writes them), and the same with content size.
fn extent() -> (Vec<u8>, Vec<Vec<u8>>) {
    let data = letters(128 * 1024, 42);
    let frames = vec![frame_without_size(&data, 3, 0), frame_with_size(&data, 3)];
    (data, frames)
}

#[test]
fn ranges_at_every_alignment_and_length() {
    let tfm = Acomp::new("zstd").unwrap();
    let (data, frames) = extent();
    let len = data.len() as u64;
    let mut cases: Vec<Vec<(u64, usize)>> = vec![
        vec![(0, 1)],                                // first byte
        vec![(len - 1, 1)],                          // last byte
        vec![(4095, 2)],                             // across a 4 KiB boundary
        vec![(0, data.len())],                       // the whole extent
        vec![(0, 4096), (8192, 4096), (65536, 100)], // gaps
        vec![(131_000, 4096)],                       // past the end: zero fill
        vec![(len, 10)],                             // wholly past the end
        vec![(5, 0), (5, 3), (8, 0), (9, 1)],        // empty segments, touching ones
    ];
    for start in [1u64, 511, 4096, 4097, 70_000, 131_071] {
        for size in [1usize, 100, 4096, 16384, 65536] {
            cases.push(vec![(start, size)]);
        }
    }
    for frame in &frames {
        for ranges in &cases {
            for cut in [Cut::One, Cut::Every(4096), Cut::Random(ranges[0].0)] {
                let got = read(&tfm, frame, cut, ranges).unwrap();
                assert!(got == expected(&data, ranges), "{ranges:?} {cut:?}");
            }
        }
    }
    // Every 4 KiB page of the extent on its own, through 1-byte source fragments.
    for page in 0..32u64 {
        let ranges = [(page * 4096, 4096)];
        let got = read(&tfm, &frames[0], Cut::Every(1), &ranges).unwrap();
        assert!(got == expected(&data, &ranges), "page {page}");
    }
}

#[test]
fn decoding_stops_once_the_last_segment_is_full() {
    // Two frames' worth of blocks in one: the second half of this frame is corrupt, so
    // only a read that stops early can succeed.
    let data = letters(512 * 1024, 7);
    let summed = Acomp::with_zstd(acomp::ZstdParams::default().checksum(true)).unwrap();
    let mut frame = compress(&summed, &data, Cut::One, 600_000, Cut::One)
        .unwrap()
        .0;
    let n = frame.len();
    frame[n - 100] ^= 0xff;
    let tfm = Acomp::new("zstd").unwrap();
    let full = decompress(&tfm, &frame, Cut::One, data.len(), Cut::One).unwrap_err();
    assert_eq!(full.errno(), libc::EBADMSG);
    let ranges = [(1000, 4096), (20_000, 10)];
    let got = read(&tfm, &frame, Cut::Every(4096), &ranges).unwrap();
    assert!(got == expected(&data, &ranges));
    // A range that reaches the damage fails.
    let err = read(&tfm, &frame, Cut::One, &[(0, data.len())]).unwrap_err();
    assert_eq!(err.errno(), libc::EBADMSG);
}

#[test]
fn padding_after_the_frame_is_ignored() {
    let tfm = Acomp::new("zstd").unwrap();
    let (data, frames) = extent();
    for frame in &frames {
        let mut padded = frame.clone();
        padded.resize(frame.len().next_multiple_of(4096), 0);
        assert!(padded.len() > frame.len());
        let ranges = [(0, 4096), (126_976, 8192)];
        for cut in [Cut::One, Cut::Every(1000)] {
            assert!(read(&tfm, &padded, cut, &ranges).unwrap() == expected(&data, &ranges));
        }
    }
    // The plain decompression refuses the same padding.
    let mut padded = frames[0].clone();
    padded.extend_from_slice(&[0; 100]);
    assert_eq!(
        decompress(&tfm, &padded, Cut::One, 200_000, Cut::One)
            .unwrap_err()
            .errno(),
        libc::EBADMSG
    );
}

#[test]
fn short_frame_zero_fills_and_counts_only_real_bytes() {
    let tfm = Acomp::new("zstd").unwrap();
    let data = letters(10_000, 3);
    let frame = frame_with_size(&data, 3);
    let ranges = [(0, 4096), (8192, 4096), (20_000, 50)];
    let (n, bufs) = read(&tfm, &frame, Cut::One, &ranges).unwrap();
    assert_eq!(n, 4096 + (10_000 - 8192));
    assert_eq!(&bufs[1][..10_000 - 8192], &data[8192..]);
    assert!(bufs[1][10_000 - 8192..].iter().all(|&b| b == 0));
    assert!(bufs[2].iter().all(|&b| b == 0));
}

#[test]
fn corrupt_truncated_and_bad_requests() {
    let tfm = Acomp::new("zstd").unwrap();
    let (_, frames) = extent();
    for frame in &frames {
        // A segment past the extent's end: the read must reach the frame's end, and so the
        // cut. (A read that ends before the cut succeeds: it stops before.)
        for len in [1, 5, frame.len() / 2, frame.len() - 1] {
            for cut in [Cut::One, Cut::Every(3)] {
                let err = read(&tfm, &frame[..len], cut, &[(0, 131_073)]).unwrap_err();
                assert_eq!(err.errno(), libc::EBADMSG, "len {len} {cut:?}: {err}");
            }
        }
        let mut bad = frame.clone();
        bad[0] ^= 1; // magic
        assert_eq!(
            read(&tfm, &bad, Cut::One, &[(0, 10)]).unwrap_err().errno(),
            libc::EBADMSG
        );
    }
    let f = &frames[0];
    let err = read(&tfm, f, Cut::One, &[(100, 10), (105, 10)]).unwrap_err();
    assert!(matches!(err, Error::InvalidParameter { .. }), "{err}");
    let err = read(&tfm, f, Cut::One, &[(100, 10), (0, 10)]).unwrap_err();
    assert_eq!(err.errno(), libc::EINVAL);
    let err = tfm
        .decompress_range(&[IoSlice::new(&[])], &mut [])
        .unwrap_err();
    assert_eq!(err, Error::EmptySource);
    assert_eq!(read(&tfm, f, Cut::One, &[]).unwrap().0, 0);
    let s = tfm.stats();
    assert_eq!(s.range, s.decompress, "{s:?}");
    assert!(s.range >= 20 && s.corrupt >= 16 && s.invalid >= 3, "{s:?}");
    // The workspace that saw all this still serves a good read.
    let (data, _) = extent();
    assert!(read(&tfm, f, Cut::One, &[(0, 4096)]).unwrap() == expected(&data, &[(0, 4096)]));
}

#[test]
fn window_limit_applies() {
    let data = letters(10_000, 9);
    let frame = frame_without_size(&data, 3, 24);
    let tfm = Acomp::new("zstd").unwrap();
    let err = read(&tfm, &frame, Cut::One, &[(0, 10)]).unwrap_err();
    assert!(matches!(err, Error::WindowTooLarge { .. }), "{err}");
}

#[test]
fn skippable_frames_before_the_extent_are_skipped() {
    let tfm = Acomp::new("zstd").unwrap();
    let data = letters(9000, 4);
    let mut src = skippable_frame(b"meta");
    src.extend(frame_with_size(&data, 3));
    src.extend(frame_with_size(b"second frame: not read", 3));
    let ranges = [(8000, 2000)];
    assert!(read(&tfm, &src, Cut::Every(5), &ranges).unwrap() == expected(&data, &ranges));
}

/// A frame with a bad epilogue, read by ranges: a read whose segments reach the content's
/// end finishes the frame and says `EBADMSG`, as `decompress` does; a read that ends
/// before it stops early and succeeds. With and without the content size in the header.
#[test]
fn a_read_to_the_end_finishes_the_frame() {
    let tfm = Acomp::new("zstd").unwrap();
    let summed = Acomp::with_zstd(acomp::ZstdParams::default().checksum(true)).unwrap();
    let data = letters(10_600, 11);
    let len = data.len();
    for with_size in [true, false] {
        let params = acomp::ZstdParams::default()
            .checksum(true)
            .content_size(with_size);
        let writer = Acomp::with_zstd(params).unwrap();
        let good = compress(&writer, &data, Cut::Every(3000), 20_000, Cut::One)
            .unwrap()
            .0;
        let n = good.len();
        let mut wrong = good.clone();
        wrong[n - 1] ^= 0x40;
        // The last block's header: the frame's only block, right after the header.
        let block = surgery::blocks(&good)[0];
        assert!(block.last);
        let mut not_last = good[..n - 4].to_vec();
        not_last[block.at] &= !1;
        let bad = [
            ("checksum missing", good[..n - 4].to_vec()),
            ("checksum one byte short", good[..n - 1].to_vec()),
            ("wrong checksum", wrong),
            ("last block not marked last", not_last),
        ];
        for (what, frame) in &bad {
            let whole = decompress(&summed, frame, Cut::One, len, Cut::One).unwrap_err();
            assert_eq!(whole.errno(), libc::EBADMSG, "{what}: {whole}");
            for cut in [Cut::One, Cut::Every(1), Cut::Random(5)] {
                for to_end in [
                    vec![(0, len)],
                    vec![(0, len + 100)],
                    vec![(0, 4096), (8192, len - 8192)],
                    vec![(len as u64 - 1, 1)],
                ] {
                    let err = read(&tfm, frame, cut, &to_end).unwrap_err();
                    assert_eq!(
                        err.errno(),
                        libc::EBADMSG,
                        "{what} {with_size} {cut:?} {to_end:?}"
                    );
                }
                for before in [vec![(0, 4096)], vec![(100, 10), (len as u64 - 2, 1)]] {
                    let got = read(&tfm, frame, cut, &before).unwrap();
                    assert!(got == expected(&data, &before), "{what} {cut:?} {before:?}");
                }
            }
        }
        // The good frame read to its end holds.
        let whole = [(0, len)];
        assert!(read(&tfm, &good, Cut::Every(1), &whole).unwrap() == expected(&data, &whole));
    }
}

#[test]
fn the_shared_missing_checksum_case() {
    let Some(dir) = testdata("") else { return };
    let frame = std::fs::read(dir.join("cases/checksum_missing.zst")).unwrap();
    let tfm = Acomp::new("zstd").unwrap();
    let err = read(&tfm, &frame, Cut::One, &[(0, 10_600)]).unwrap_err();
    assert_eq!(err, Error::Truncated);
    assert_eq!(
        decompress(&tfm, &frame, Cut::One, 10_600, Cut::One).unwrap_err(),
        Error::Truncated
    );
    assert!(read(&tfm, &frame, Cut::One, &[(0, 10_599)]).is_ok());
}
