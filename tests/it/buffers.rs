//! The calls for contiguous buffers and `Vec`s, sizing a destination (`compress_bound`,
//! `content_size`, the exact `needed` of compression's `ENOSPC`), and error kinds without
//! libc.

use std::io::IoSlice;

use crate::common::*;
use acomp::{Acomp, Error, ErrorKind, ZstdParams};
use proptest::prelude::*;

#[test]
fn contiguous_calls_are_the_scatter_gather_calls() {
    let tfm = Acomp::new("zstd").unwrap();
    for data in [
        letters(4096, 1),
        random_bytes(4096, 2),
        vec![0; 4096],
        vec![],
    ] {
        let sg = compress(&tfm, &data, Cut::One, 8192, Cut::One).unwrap();
        let mut frame = vec![0u8; 8192];
        let n = tfm.compress_to_buffer(&data, &mut frame).unwrap();
        assert_eq!(&frame[..n], &sg[..]);
        let mut back = vec![0u8; data.len()];
        assert_eq!(
            tfm.decompress_to_buffer(&frame[..n], &mut back).unwrap(),
            data.len()
        );
        assert_eq!(back, data);
    }
    let s = tfm.stats();
    assert_eq!((s.one_shot, s.stream), (12, 0), "{s:?}");
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    /// A destination of `compress_bound` bytes always takes the frame, on every cut; one
    /// too small fails with the frame's exact size, the same on every cut, and a
    /// destination of that size takes it.
    #[test]
    fn bound_and_needed_hold_on_every_cut(
        len in prop_oneof![0usize..5000, 5000usize..300_000],
        incompressible in any::<bool>(),
        checksum in any::<bool>(),
        seed in any::<u64>(),
    ) {
        let data = if incompressible { random_bytes(len, seed) } else { letters(len, seed) };
        let tfm = Acomp::with_zstd(ZstdParams::default().checksum(checksum)).unwrap();
        let bound = tfm.compress_bound(len);
        let (s, d) = (Cut::Random(seed), Cut::Random(!seed));
        let frame = compress(&tfm, &data, s, bound, d).unwrap();
        prop_assert!(frame.len() <= bound);
        let small = frame.len() - 1 - (seed as usize % frame.len().min(50));
        for (s, d) in [(Cut::One, Cut::One), (s, d), (Cut::One, Cut::Every(7))] {
            let err = compress(&tfm, &data, s, small, d).unwrap_err();
            prop_assert_eq!(
                err,
                Error::NoSpace { needed: Some(frame.len() as u64), capacity: small }
            );
            let exact = compress(&tfm, &data, s, frame.len(), d).unwrap();
            prop_assert!(exact == frame);
        }
    }
}

#[test]
fn content_size_is_read_across_fragments() {
    let tfm = Acomp::new("zstd").unwrap();
    let data = letters(70_000, 3);
    let with = frame_with_size(&data, 3);
    let without = frame_without_size(&data, 3, 0);
    let mut skipped = skippable_frame(b"metadata before the frame");
    skipped.extend_from_slice(&with);
    for cut in CUTS {
        let size = |f: &[u8]| tfm.content_size(&split(f, cut));
        assert_eq!(size(&with), Ok(Some(70_000)), "{cut:?}");
        assert_eq!(size(&without), Ok(None));
        assert_eq!(size(&skipped), Ok(Some(70_000)));
        assert_eq!(size(&with[..3]), Err(Error::Truncated));
        assert_eq!(size(&skipped[..20]), Err(Error::Truncated));
        assert_eq!(size(&skippable_frame(b"only")), Ok(None));
        assert_eq!(size(b"not a frame").unwrap_err().kind(), ErrorKind::Corrupt);
    }
    assert_eq!(
        tfm.content_size(&[IoSlice::new(&[])]),
        Err(Error::EmptySource)
    );
    assert_eq!(tfm.stats().decompress, 0, "a header read is no request");
}

#[test]
fn vec_calls_append_and_size_themselves() {
    let tfm = Acomp::new("zstd").unwrap();
    let data = letters(50_000, 4);
    let mut frame = b"prefix".to_vec();
    let n = tfm.compress_to_vec(&data, &mut frame).unwrap();
    assert_eq!(frame.len(), 6 + n);
    assert_eq!(&frame[..6], b"prefix");
    let frame = frame[6..].to_vec();

    // The declared size: exactly the room needed.
    let mut out = b"kept".to_vec();
    assert_eq!(
        tfm.decompress_to_vec(&frame, &mut out, 50_000).unwrap(),
        50_000
    );
    assert_eq!((&out[..4], &out[4..]), (&b"kept"[..], &data[..]));
    // Over the maximum: ENOSPC with the size needed and the maximum; the Vec as it was.
    let mut out = b"kept".to_vec();
    let err = tfm.decompress_to_vec(&frame, &mut out, 49_999).unwrap_err();
    assert_eq!(
        err,
        Error::NoSpace {
            needed: Some(50_000),
            capacity: 49_999
        }
    );
    assert_eq!(out, b"kept");
    // No declared size, more than the first guess (4 x the source): decoded again, exactly.
    let unsized_frame = frame_without_size(&vec![0u8; 200_000], 3, 0);
    assert!(unsized_frame.len() * 4 < 200_000);
    let mut out = Vec::new();
    assert_eq!(
        tfm.decompress_to_vec(&unsized_frame, &mut out, 1 << 20)
            .unwrap(),
        200_000
    );
    assert!(out.len() == 200_000 && out.iter().all(|&b| b == 0));
    // Two frames: more than the first declares.
    let two = [frame.clone(), frame.clone()].concat();
    let mut out = Vec::new();
    assert_eq!(
        tfm.decompress_to_vec(&two, &mut out, 1 << 20).unwrap(),
        100_000
    );
    assert_eq!(&out[50_000..], &data[..]);
    // Corrupt input: the Vec as it was.
    let mut bad = frame.clone();
    bad.truncate(bad.len() - 1);
    let mut out = b"kept".to_vec();
    assert_eq!(
        tfm.decompress_to_vec(&bad, &mut out, 1 << 20)
            .unwrap_err()
            .kind(),
        ErrorKind::Corrupt
    );
    assert_eq!(out, b"kept");
}

#[test]
fn error_kinds_and_errnos() {
    let cases = [
        (
            Error::NoSpace {
                needed: None,
                capacity: 1,
            },
            ErrorKind::NoSpace,
            libc::ENOSPC,
        ),
        (Error::Truncated, ErrorKind::Corrupt, libc::EBADMSG),
        (
            Error::Corrupt { detail: "x" },
            ErrorKind::Corrupt,
            libc::EBADMSG,
        ),
        (Error::EmptySource, ErrorKind::Invalid, libc::EINVAL),
        (
            Error::WindowTooLarge {
                window: 2,
                limit: 1,
            },
            ErrorKind::Invalid,
            libc::EINVAL,
        ),
        (Error::NoMemory, ErrorKind::NoMemory, libc::ENOMEM),
    ];
    for (e, kind, errno) in cases {
        assert_eq!(
            (e.kind(), e.errno(), kind.errno()),
            (kind, errno, errno),
            "{e}"
        );
    }
}

#[test]
fn stats_print_themselves() {
    let tfm = Acomp::new("zstd").unwrap();
    let mut frame = Vec::new();
    tfm.compress_to_vec(b"some bytes", &mut frame).unwrap();
    let _ = tfm.decompress_to_buffer(&frame, &mut [0u8; 2]);
    let text = tfm.stats().to_string();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(
        lines[0],
        "requests: compress 1, decompress 1 (range 0); one-shot 1, stream 0, linearised 0, rejected early 0"
    );
    assert_eq!(
        lines[1],
        "errors: no_space 1, corrupt 0, invalid 0, no_memory 0; busy 0, fallback 0"
    );
    let slots = tfm.stats().slots;
    assert!(
        lines[2].starts_with("workspaces: ") && lines[2].contains(&format!(" of {slots} slots, ")),
        "{}",
        lines[2]
    );
}
