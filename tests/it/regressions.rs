//! Inputs the fuzzers found, each with the property it broke.

use std::io::{IoSlice, IoSliceMut};

use crate::common::*;
use acomp::{Acomp, Request, ZstdParams};

/// A corrupt frame (RLE blocks overrunning its declared 1 MiB content) on which zstd's
/// streaming decoder said "Destination buffer is too small" for some input cuts and "Data
/// corruption detected" for others: acomp made the first `ENOSPC`, the second `EBADMSG`.
/// zstd's own buffer is sized for any valid frame, so on the stream path that code means
/// corrupt input. (fuzz/decompress, crash-c279c8db)
#[test]
fn stream_decoder_dst_too_small_is_corrupt_input() {
    let frame = b"\x28\xb5\x2f\xfd\xa4\x00\x00\x10\x00\x02\x00\x10\x00\x02\xd6\xd6\xd6\xd6\xd6\xd6\xd6\xd6\xd6\xd6\xd6\xd6\xd6\xd6\xd6\xd6\xd6\xd6\xd6\xd6\xd6\xd6\xd6\xd6\xd6\xd6\xd6\xd6\xd6\xd6\xd6\xd6\xd6\xd6\xd6\xd6\xd6\xd6\xd6\x00\x10\x00\x02\x00\x10\x00\x02\x00\x10\xff\xff\x3a\x32\x4d\x00\x00\x00\x00\x00\x00\x3e\x16\xe1";
    let tfm = Acomp::new("zstd").unwrap();
    for cap in [0, 7, 4096, 1 << 20, (1 << 20) + 1] {
        let one = decompress(&tfm, frame, Cut::One, cap, Cut::One);
        assert_eq!(
            one.as_ref().unwrap_err().errno(),
            libc::EBADMSG,
            "cap {cap}"
        );
        let mut cuts: Vec<(Cut, Cut)> = all_cut_pairs().collect();
        cuts.extend((1..=16).map(|n| (Cut::Every(n), Cut::Every(7))));
        cuts.extend((0..64).map(|s| (Cut::Random(s), Cut::Random(s + 1))));
        for (s, d) in cuts {
            let cut = decompress(&tfm, frame, s, cap, d);
            assert!(
                same_outcome(&one, &cut),
                "cap {cap} {s:?}/{d:?}: {one:?} vs {cut:?}"
            );
        }
    }
}

/// `ZSTD_compress2` refused a destination of exactly the frame's size (10 bytes for one
/// byte of data), wanting room for a compressed block before it falls back to a raw one;
/// the stream path wrote the same frame into it. (fuzz/round_trip, crash-4f96034c)
#[test]
fn tiny_frames_fit_a_destination_of_exactly_their_size() {
    for (level, checksum) in [(-5, false), (1, true), (3, false), (19, true)] {
        let tfm = Acomp::with_zstd(ZstdParams::default().level(level).checksum(checksum)).unwrap();
        for len in 0..300 {
            let data = letters(len, len as u64);
            let frame = compress(&tfm, &data, Cut::One, len + 100, Cut::One).unwrap();
            for (s, d) in all_cut_pairs() {
                let what = format!("level {level} checksum {checksum} len {len} {s:?}/{d:?}");
                assert_eq!(
                    compress(&tfm, &data, s, frame.len(), d).unwrap(),
                    frame,
                    "{what}"
                );
                let short = compress(&tfm, &data, s, frame.len() - 1, d).unwrap_err();
                assert_eq!(short.errno(), libc::ENOSPC, "{what}");
            }
        }
    }
}

/// A corrupt source on which a range read met "Data corruption detected" read as one
/// fragment and "Destination buffer is too small" read in 64-byte fragments: both corrupt
/// input, as the contract wants; only zstd's wording differs. (fuzz/range, crash-42443b59:
/// an 8-byte control header, then the source)
#[test]
fn range_read_of_a_corrupt_source_is_corrupt_on_every_cut() {
    let input = include_bytes!("data/range-crash-42443b59.bin");
    let src = &input[8..];
    let tfm = Acomp::new("zstd").unwrap();
    for ranges in [
        &[(0u64, 4096usize)][..],
        &[(0, 1), (70_000, 9000)],
        &[(1 << 20, 10)],
    ] {
        let read = |cut: Cut| {
            let mut bufs: Vec<Vec<u8>> = ranges.iter().map(|&(_, l)| vec![0; l]).collect();
            let mut segs: Vec<acomp::Segment<'_>> = bufs
                .iter_mut()
                .zip(ranges)
                .map(|(b, &(o, _))| acomp::Segment::new(o, b))
                .collect();
            tfm.decompress_range(&split(src, cut), &mut segs)
        };
        let one = read(Cut::One).unwrap_err();
        assert_eq!(one.errno(), libc::EBADMSG, "{ranges:?}: {one}");
        for cut in [
            Cut::Every(1),
            Cut::Every(64),
            Cut::Every(4096),
            Cut::Random(9),
        ] {
            assert_eq!(
                read(cut).unwrap_err().errno(),
                libc::EBADMSG,
                "{ranges:?} {cut:?}"
            );
        }
    }
}

/// A single-segment frame of empty content (so its block maximum is 0) holding an RLE block
/// of 0 bytes: libzstd's one-shot decoder gave `Ok([])`, its streaming decoder "Block Size
/// Exceeds Maximum" (it checks the RLE block's one byte of content against the maximum).
/// acomp refuses it on every path and cut. (fuzz/decompress, crash-d5d251e8)
#[test]
fn rle_block_in_a_frame_whose_block_maximum_is_zero() {
    let frame = b"\x28\xb5\x2f\xfd\x20\x00\x03\x00\x00\x00";
    let tfm = Acomp::new("zstd").unwrap();
    for cap in [0, 1, 4096] {
        for (s, d) in all_cut_pairs() {
            let err = decompress(&tfm, frame, s, cap, d).unwrap_err();
            assert_eq!(
                err,
                acomp::Error::Corrupt {
                    detail: "block larger than the frame's block maximum"
                },
                "cap {cap} {s:?}/{d:?}"
            );
        }
    }
    // The same frame with a raw block of 0 bytes is the empty frame zstd writes: it holds.
    let empty = b"\x28\xb5\x2f\xfd\x20\x00\x01\x00\x00";
    assert!(
        decompress(&tfm, empty, Cut::Every(1), 0, Cut::One)
            .unwrap()
            .is_empty()
    );
}

/// A frame of one compressed block (45 RLE literals, one match) whose output, 16,440 bytes,
/// is over its 16 KiB window, the block maximum (found by a reviewer's differential fuzzer):
/// libzstd's one-shot decoder took it, its streaming decoder refuses it ("Decompressed
/// Block Size Exceeds Maximum"). `EBADMSG` on every cut: a frame whose content is over the
/// block maximum streams.
#[test]
fn block_output_over_the_block_maximum_is_corrupt_on_every_cut() {
    let frame = [
        0x28, 0xb5, 0x2f, 0xfd, 0x80, 0x20, 0x38, 0x40, 0x00, 0x00, 0x4d, 0x00, 0x00, 0xd5, 0x02,
        0xe2, 0x01, 0x00, 0x08, 0xc0, 0x0e, 0xe0,
    ];
    let tfm = Acomp::new("zstd").unwrap();
    for (scut, dcut) in all_cut_pairs() {
        for cap in [16_440, 20_000] {
            let got = decompress(&tfm, &frame, scut, cap, dcut);
            assert!(
                matches!(got, Err(acomp::Error::Corrupt { .. })),
                "{scut:?}/{dcut:?}, {cap}: {got:?}"
            );
        }
    }
}

/// Compressed blocks shorter than their two section headers (RFC 8878 §3.1.1.3; libzstd's
/// `MIN_CBLOCK_SIZE`, 2 bytes), found by a differential fuzzer: libzstd's one-shot decoder
/// says "Data corruption detected", its streaming decoder, fed block by block, skipped a
/// block of size 0 whatever its type, so acomp gave `Ok` on every path. `EBADMSG` with
/// acomp's own detail on every path and cut: one-shot and stream, batch and range read.
#[test]
fn compressed_block_shorter_than_its_section_headers_is_corrupt() {
    const TOO_SHORT: acomp::Error = acomp::Error::Corrupt {
        detail: "compressed block shorter than its section headers (2 bytes)",
    };
    // Single segment, content size 0, one last compressed block of size 0 (the issue's).
    let last = b"\x28\xb5\x2f\xfd\x20\x00\x05\x00\x00".to_vec();
    // Content size 4: raw block "ab", a compressed block of size 0, last raw block "cd".
    let middle = b"\x28\xb5\x2f\xfd\x20\x04\x10\x00\x00ab\x04\x00\x00\x11\x00\x00cd".to_vec();
    // The same without content size (streamed only), and a compressed block of size 1.
    let no_size = b"\x28\xb5\x2f\xfd\x00\x00\x10\x00\x00ab\x04\x00\x00\x11\x00\x00cd".to_vec();
    let one_byte = b"\x28\xb5\x2f\xfd\x20\x04\x10\x00\x00ab\x0c\x00\x00\x00\x11\x00\x00cd".to_vec();
    // The frames are well formed but for that block: with it raw and empty, they hold.
    let tfm = Acomp::new("zstd").unwrap();
    let mut fixed = middle.clone();
    fixed[11] = 0x00;
    assert_eq!(
        &*decompress(&tfm, &fixed, Cut::One, 4, Cut::One).unwrap(),
        b"abcd"
    );
    assert_eq!(zstd::bulk::decompress(&fixed, 4).unwrap(), b"abcd");
    for frame in [&last, &middle, &no_size, &one_byte] {
        assert!(zstd::bulk::decompress(frame, 4096).is_err(), "{frame:02x?}");
        for cap in [0, 2, 4, 4096] {
            for (s, d) in all_cut_pairs() {
                let got = decompress(&tfm, frame, s, cap, d);
                assert_eq!(
                    got.unwrap_err(),
                    TOO_SHORT,
                    "{frame:02x?} cap {cap} {s:?}/{d:?}"
                );
            }
            let mut dst = vec![0u8; cap];
            let mut dsts = [IoSliceMut::new(&mut dst)];
            let srcs = [IoSlice::new(frame)];
            let mut batch = [Request::new(&srcs, &mut dsts)];
            tfm.decompress_batch(&mut batch);
            assert_eq!(
                batch[0].outcome(),
                Some(&Err(TOO_SHORT)),
                "batch {frame:02x?}"
            );
        }
        let mut buf = [0u8; 4];
        for cut in [Cut::One, Cut::Every(1), Cut::Random(5)] {
            let mut segs = [acomp::Segment::new(0, &mut buf)];
            let got = tfm.decompress_range(&split(frame, cut), &mut segs);
            assert_eq!(got.unwrap_err(), TOO_SHORT, "range {frame:02x?} {cut:?}");
        }
        let mut v = Vec::new();
        assert_eq!(
            tfm.decompress_to_vec(frame, &mut v, 4096).unwrap_err(),
            TOO_SHORT
        );
    }
    // Every request but the well-formed frame's was counted as corrupt input.
    let s = tfm.stats();
    assert_eq!(s.corrupt, s.decompress - 1, "{s:?}");
}
