//! Inputs the fuzzers found, each with the property it broke.

mod common;

use acomp::{Acomp, ZstdParams};
use common::*;

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
