//! Transforms by name and with typed parameters.

use crate::common::*;
use acomp::{Acomp, Error, ZstdParams};

#[test]
fn by_name() {
    assert_eq!(Acomp::new("zstd").unwrap().name(), "zstd");
    let err = Acomp::new("lz5").unwrap_err();
    assert_eq!(err, Error::UnknownAlgorithm { name: "lz5".into() });
    assert_eq!(err.errno(), libc::EINVAL);
}

#[test]
fn out_of_range_parameters_are_einval() {
    for params in [
        ZstdParams::default().level(23),
        ZstdParams::default().level(zstd_safe::min_c_level() - 1),
        ZstdParams::default().window_log_max(9),
        ZstdParams::default().window_log_max(32),
    ] {
        let err = Acomp::with_zstd(params.clone()).unwrap_err();
        assert_eq!(err.errno(), libc::EINVAL, "{params:?}");
        assert!(matches!(err, Error::InvalidParameter { .. }));
    }
}

/// Reads the frame header descriptor's flags: (content size present, checksum).
fn header_flags(frame: &[u8]) -> (bool, bool) {
    let fhd = frame[4];
    let single_segment = fhd & 0x20 != 0;
    (fhd >> 6 != 0 || single_segment, fhd & 0x04 != 0)
}

#[test]
fn checksum_and_content_size_flags_reach_the_frame() {
    let data = letters(10_000, 1);
    for (checksum, content_size) in [(false, true), (true, true), (true, false), (false, false)] {
        let tfm = Acomp::with_zstd(
            ZstdParams::default()
                .checksum(checksum)
                .content_size(content_size),
        )
        .unwrap();
        for (s, d) in [(Cut::One, Cut::One), (Cut::Every(1000), Cut::Every(333))] {
            let frame = compress(&tfm, &data, s, 20_000, d).unwrap();
            assert_eq!(
                header_flags(&frame),
                (content_size, checksum),
                "{s:?}/{d:?}"
            );
            assert_eq!(zstd::bulk::decompress(&frame, data.len()).unwrap(), data);
            assert!(decompress(&tfm, &frame, d, data.len(), s).unwrap() == data);
        }
    }
    // A flipped content byte under a checksum: corrupt on every cut.
    let tfm = Acomp::with_zstd(ZstdParams::default().checksum(true).level(-1)).unwrap();
    let stored = random_bytes(3000, 2);
    let mut frame = compress(&tfm, &stored, Cut::One, 4000, Cut::One).unwrap().0;
    let n = frame.len();
    frame[n - 10] ^= 1; // inside the raw block's content
    for (s, d) in all_cut_pairs() {
        let err = decompress(&tfm, &frame, s, 3000, d).unwrap_err();
        assert_eq!(err.errno(), libc::EBADMSG, "{s:?}/{d:?}");
    }
}

#[test]
fn negative_and_high_levels_round_trip() {
    let data = letters(50_000, 3);
    let mut sizes = vec![];
    for level in [zstd_safe::min_c_level(), -5, 0, 3, 19, 22] {
        let tfm = Acomp::with_zstd(ZstdParams::default().level(level)).unwrap();
        let frame = compress(&tfm, &data, Cut::Every(4096), 60_000, Cut::One).unwrap();
        assert!(decompress(&tfm, &frame, Cut::One, 50_000, Cut::Every(4096)).unwrap() == data);
        sizes.push(frame.len());
    }
    // Higher levels compress this text better than the fastest.
    assert!(sizes[5] < sizes[0], "{sizes:?}");
}

/// Compression keeps to the window limit, so a transform reads back every frame it writes,
/// whatever its level and limit.
#[test]
fn a_transform_reads_back_every_frame_it_writes() {
    for wlog in [10, 12, 16, 23] {
        for level in [1, 3, 19, 22] {
            let tfm =
                Acomp::with_zstd(ZstdParams::default().level(level).window_log_max(wlog)).unwrap();
            for len in [4096, 300_000] {
                let data = letters(len, len as u64);
                let cap = zstd_safe::compress_bound(len);
                for (s, d) in [(Cut::One, Cut::One), (Cut::Every(4096), Cut::Random(1))] {
                    let what =
                        format!("window log {wlog}, level {level}, {len} bytes, {s:?}/{d:?}");
                    let frame = compress(&tfm, &data, s, cap, d).unwrap();
                    assert!(
                        declared_window(&frame) <= 1 << wlog,
                        "{what}: window {}",
                        declared_window(&frame)
                    );
                    assert!(
                        decompress(&tfm, &frame, d, len, s).unwrap() == data,
                        "{what}"
                    );
                }
            }
        }
    }
    // Where the level's window fits the limit, nothing changes: the frame is zstd's own.
    let data = letters(300_000, 1);
    let tfm = Acomp::new("zstd").unwrap();
    assert_eq!(
        compress(&tfm, &data, Cut::One, 400_000, Cut::One).unwrap(),
        frame_with_size(&data, 3)
    );
}
