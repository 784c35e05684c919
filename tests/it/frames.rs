//! Sources of several frames, skippable frames, trailing bytes, the window limit and the
//! order in which errors are found: the same outcome on every cut.

use crate::common::*;
use acomp::{Acomp, Error, ZstdParams};

/// Asserts `src` decompresses to `want` into `cap` bytes on every cut.
fn expect_ok(tfm: &Acomp, src: &[u8], cap: usize, want: &[u8]) {
    for (s, d) in all_cut_pairs() {
        let out = decompress(tfm, src, s, cap, d).unwrap_or_else(|e| panic!("{s:?}/{d:?}: {e}"));
        assert!(out == want, "{s:?}/{d:?}: wrong output");
    }
}

/// Asserts `src` fails with `want` into `cap` bytes on every cut.
fn expect_err(tfm: &Acomp, src: &[u8], cap: usize, want: &Error) {
    for (s, d) in all_cut_pairs() {
        let err = decompress(tfm, src, s, cap, d).unwrap_err();
        assert_eq!(&err, want, "{s:?}/{d:?}");
    }
}

fn corrupt_kind(err: Error) -> i32 {
    err.errno()
}

#[test]
fn concatenated_and_skippable_frames() {
    let tfm = Acomp::new("zstd").unwrap();
    let (a, b) = (letters(5000, 1), letters(70_000, 2));
    let mut src = skippable_frame(b"leading metadata");
    src.extend(frame_with_size(&a, 3));
    src.extend(skippable_frame(&[]));
    src.extend(frame_without_size(&b, 1, 0));
    src.extend(skippable_frame(&[9; 100]));
    let want = [a.clone(), b.clone()].concat();
    expect_ok(&tfm, &src, want.len(), &want);
    expect_ok(&tfm, &src, want.len() + 100_000, &want);
    expect_err(
        &tfm,
        &src,
        want.len() - 1,
        &Error::NoSpace {
            needed: Some(want.len() as u64),
            capacity: want.len() - 1,
        },
    );
    // Only skippable frames: nothing comes out.
    expect_ok(&tfm, &skippable_frame(b"x"), 10, b"");
}

#[test]
fn bytes_after_the_last_frame_are_corrupt() {
    let tfm = Acomp::new("zstd").unwrap();
    let data = letters(3000, 4);
    for tail in [
        &[0u8][..],
        &[0; 3],
        &[0; 4],
        &[0; 40],
        &[0x28, 0xb5],
        &[0x28, 0xb5, 0x2f, 0xfd],
    ] {
        let mut src = frame_with_size(&data, 3);
        src.extend_from_slice(tail);
        for cap in [3000, 10_000] {
            for (s, d) in all_cut_pairs() {
                let err = decompress(&tfm, &src, s, cap, d).unwrap_err();
                assert_eq!(
                    corrupt_kind(err),
                    libc::EBADMSG,
                    "tail {tail:?} {s:?}/{d:?}"
                );
            }
        }
    }
}

#[test]
fn truncated_frames_are_corrupt_at_every_length() {
    let tfm = Acomp::new("zstd").unwrap();
    let data = letters(20_000, 5);
    for frame in [frame_with_size(&data, 3), frame_without_size(&data, 3, 0)] {
        let first =
            decompress(&tfm, &frame[..frame.len() - 1], Cut::One, 30_000, Cut::One).unwrap_err();
        for len in 1..frame.len() {
            for (s, d) in [
                (Cut::One, Cut::One),
                (Cut::Every(7), Cut::Every(4096)),
                (Cut::Random(len as u64), Cut::One),
            ] {
                for cap in [20_000, 30_000, 100] {
                    let err = decompress(&tfm, &frame[..len], s, cap, d).unwrap_err();
                    assert_eq!(
                        err.errno(),
                        libc::EBADMSG,
                        "len {len} {s:?}/{d:?} cap {cap}: {err}"
                    );
                }
            }
        }
        assert_eq!(first, Error::Truncated);
    }
}

#[test]
fn window_limit_holds_on_both_paths() {
    let data = letters(10_000, 6);
    // No content size, so the header asks for the whole 2^24-byte window.
    let frame = frame_without_size(&data, 3, 24);
    let strict = Acomp::new("zstd").unwrap();
    let want = Error::WindowTooLarge {
        window: 1 << 24,
        limit: 1 << 23,
    };
    expect_err(&strict, &frame, 10_000, &want);
    expect_err(&strict, &frame, 1 << 20, &want);
    let loose = Acomp::with_zstd(ZstdParams::default().window_log_max(24)).unwrap();
    expect_ok(&loose, &frame, 10_000, &data);
    // A single-segment frame's window is its content size.
    let big = vec![7u8; (1 << 23) + 1];
    let mut cctx = zstd_safe::CCtx::create();
    cctx.set_parameter(zstd_safe::CParameter::WindowLog(24))
        .unwrap();
    let mut frame = vec![0u8; 1 << 20];
    let n = cctx.compress2(&mut frame[..], &big).unwrap();
    frame.truncate(n);
    assert_ne!(frame[4] & 0x20, 0, "single-segment flag");
    let err = decompress(&strict, &frame, Cut::One, big.len(), Cut::One).unwrap_err();
    assert_eq!(
        err,
        Error::WindowTooLarge {
            window: big.len() as u64,
            limit: 1 << 23
        }
    );
    assert_eq!(
        decompress(&strict, &frame, Cut::Every(4096), big.len(), Cut::Random(1)).unwrap_err(),
        err
    );
    assert!(decompress(&loose, &frame, Cut::One, big.len(), Cut::One).unwrap() == big);
}

/// Windows past what zstd's format allows (a window log over 31) are over any limit too:
/// `EINVAL` with the window the header declares, as for smaller ones.
#[test]
fn windows_past_2_to_the_31_are_over_the_limit_too() {
    let tfm = Acomp::new("zstd").unwrap();
    for exponent in 14..=31u8 {
        for mantissa in [0u8, 7] {
            let wd = exponent << 3 | mantissa;
            // Magic, a descriptor without content size or single segment, the window, and
            // an empty last raw block.
            let mut frame = vec![0x28, 0xB5, 0x2F, 0xFD, 0x00, wd, 0x01, 0x00, 0x00];
            let base = 1u64 << (10 + u32::from(exponent));
            let want = Error::WindowTooLarge {
                window: base + (base >> 3) * u64::from(mantissa),
                limit: 1 << 23,
            };
            for (s, d) in all_cut_pairs() {
                assert_eq!(
                    decompress(&tfm, &frame, s, 100, d).unwrap_err(),
                    want,
                    "{s:?}/{d:?}"
                );
            }
            // Cut after the header, the frame is truncated: `EBADMSG` wins over the window
            // (tests/precedence.rs).
            frame.truncate(6);
            assert_eq!(
                decompress(&tfm, &frame, Cut::Every(1), 100, Cut::One).unwrap_err(),
                Error::Truncated
            );
        }
    }
}

#[test]
fn errors_come_in_source_order() {
    let tfm = Acomp::new("zstd").unwrap();
    let data = letters(10_000, 7);
    let good = frame_with_size(&data, 3);
    let wide = frame_without_size(&data, 3, 24);
    // A corrupt frame: one with a checksum, so that any flipped bit is caught.
    let summed = Acomp::with_zstd(ZstdParams::default().checksum(true)).unwrap();
    let mut bad = compress(&summed, &data, Cut::One, 20_000, Cut::One)
        .unwrap()
        .0;
    let mid = bad.len() / 2;
    bad[mid] ^= 0xff;
    bad[mid + 1] ^= 0x55;
    let bad_err = decompress(&tfm, &bad, Cut::One, 20_000, Cut::One).unwrap_err();
    assert_eq!(bad_err.errno(), libc::EBADMSG);

    // A corrupt frame before a too-wide one: corrupt, also where the destination is small.
    let src = [bad.clone(), wide.clone()].concat();
    for cap in [100, 20_000, 1 << 20] {
        for (s, d) in all_cut_pairs() {
            assert_eq!(
                decompress(&tfm, &src, s, cap, d).unwrap_err().errno(),
                libc::EBADMSG
            );
        }
    }
    // A good frame before a too-wide one: the window error, even when the first frame
    // already overflows the destination (no destination could make it succeed).
    let src = [good.clone(), wide].concat();
    for cap in [100, 10_000, 1 << 20] {
        for (s, d) in all_cut_pairs() {
            assert_eq!(
                decompress(&tfm, &src, s, cap, d).unwrap_err().errno(),
                libc::EINVAL
            );
        }
    }
    // A good frame that overflows, then a corrupt one: corrupt, never ENOSPC.
    let src = [good, bad].concat();
    for (s, d) in all_cut_pairs() {
        assert_eq!(
            decompress(&tfm, &src, s, 5000, d).unwrap_err().errno(),
            libc::EBADMSG
        );
    }
}

#[test]
fn empty_source_and_empty_content() {
    let tfm = Acomp::new("zstd").unwrap();
    let err = tfm.decompress(&[], &mut []).unwrap_err();
    assert_eq!(err, Error::EmptySource);
    assert_eq!(err.errno(), libc::EINVAL);
    let err = decompress(&tfm, &[], Cut::One, 100, Cut::One).unwrap_err();
    assert_eq!(err, Error::EmptySource);
    // Compressing nothing gives a valid frame of nothing, on every cut.
    for (s, d) in all_cut_pairs() {
        let frame = compress(&tfm, &[], s, 64, d).unwrap();
        assert!(!frame.is_empty());
        assert_eq!(zstd::bulk::decompress(&frame, 10).unwrap(), b"");
        expect_ok(&tfm, &frame, 0, b"");
        expect_ok(&tfm, &frame, 10, b"");
    }
    // Into no destination at all: ENOSPC.
    assert_eq!(
        tfm.compress(&[], &mut []).unwrap_err().errno(),
        libc::ENOSPC
    );
}

#[test]
fn frame_needing_a_dictionary_is_corrupt() {
    let Some(dir) = testdata("") else { return };
    let dict = std::fs::read(dir.join("zstd-golden/golden-dictionaries/http-dict-missing-symbols"))
        .unwrap();
    let data = std::fs::read(dir.join("zstd-golden/golden-compression/http")).unwrap();
    let mut cctx = zstd_safe::CCtx::create();
    cctx.load_dictionary(&dict).unwrap();
    let mut frame = vec![0u8; zstd_safe::compress_bound(data.len())];
    let n = cctx.compress2(&mut frame[..], &data).unwrap();
    frame.truncate(n);
    let tfm = Acomp::new("zstd").unwrap();
    for (s, d) in all_cut_pairs() {
        let err = decompress(&tfm, &frame, s, data.len(), d).unwrap_err();
        assert_eq!(err.errno(), libc::EBADMSG, "{s:?}/{d:?}: {err}");
        assert_eq!(
            err,
            acomp::Error::Corrupt {
                detail: "frame names a dictionary this transform lacks"
            },
            "{s:?}/{d:?}"
        );
    }
}
