//! The content size a frame declares (RFC 8878 §3.1.1.1.4) is enforced on every path: a
//! frame whose blocks give more or fewer bytes is `EBADMSG`, for every block layout, with
//! and without a checksum, in concatenated frames and in range reads that reach the frame's
//! end, on every cut and destination size. libzstd's streaming decoder, fed in pieces,
//! skips the check after an empty last block.

use crate::common::surgery;
use crate::common::*;
use acomp::{Acomp, Error, Segment, ZstdParams};
use proptest::prelude::*;

const MISMATCH: Error = Error::Corrupt {
    detail: "frame content size does not match its blocks",
};

/// Every request the contract covers on `frame` (declaring `declared`, holding `actual`
/// bytes), on the given cuts: decompression into destinations of the declared size, the
/// actual size and ample room; after a valid frame; a range read to the end.
fn all_corrupt(tfm: &Acomp, frame: &[u8], declared: usize, actual: usize, cuts: &[(Cut, Cut)]) {
    let ok_frame = frame_with_size(b"a valid frame first", 3);
    let two = [ok_frame.as_slice(), frame].concat();
    for &(s, d) in cuts {
        for cap in [declared, actual, declared.max(actual) + 100] {
            let err = decompress(tfm, frame, s, cap, d).unwrap_err();
            assert_eq!(err.errno(), libc::EBADMSG, "cap {cap} {s:?}/{d:?}: {err}");
            let err = decompress(tfm, &two, s, cap + 19, d).unwrap_err();
            assert_eq!(
                err.errno(),
                libc::EBADMSG,
                "two frames, cap {cap} {s:?}/{d:?}"
            );
        }
        let mut buf = vec![0u8; declared.max(actual) + 10];
        let err = tfm
            .decompress_range(&split(frame, s), &mut [Segment::new(0, &mut buf)])
            .unwrap_err();
        assert_eq!(err.errno(), libc::EBADMSG, "range {s:?}: {err}");
    }
}

/// The shared case's kind: 10 bytes declared, 5 held, an empty last block; and the other
/// layouts: one raw block, raw then RLE, an RLE last block after an empty raw one.
#[test]
fn every_block_layout() {
    let tfm = Acomp::new("zstd").unwrap();
    let layouts: [&[(u8, Vec<u8>)]; 4] = [
        &[(0, b"hello".to_vec()), (0, vec![])],
        &[(0, letters(300, 1))],
        &[(0, letters(300, 2)), (1, vec![7; 50])],
        &[(0, vec![]), (1, vec![9; 4000])],
    ];
    for blocks in layouts {
        let actual: usize = blocks.iter().map(|(_, c)| c.len()).sum();
        let content: Vec<u8> = blocks.iter().flat_map(|(_, c)| c.clone()).collect();
        let frame = surgery::hand_frame(12, blocks);
        for width in [2, 4, 8] {
            for declared in [
                actual as u64,
                actual as u64 + 5,
                actual.saturating_sub(1) as u64,
            ] {
                let Some(f) = surgery::with_content_size(&frame, width, Some(declared)) else {
                    continue;
                };
                if declared == actual as u64 {
                    let got = decompress(&tfm, &f, Cut::Every(1), actual, Cut::Every(1));
                    assert!(got.unwrap() == content, "{width} {declared}");
                } else {
                    all_corrupt(
                        &tfm,
                        &f,
                        declared as usize,
                        actual,
                        &[
                            (Cut::One, Cut::One),
                            (Cut::Every(1), Cut::Every(1)),
                            (Cut::Random(3), Cut::Random(4)),
                        ],
                    );
                }
            }
        }
    }
}

#[test]
fn the_shared_case_and_what_libzstd_says() {
    let Some(dir) = testdata("") else { return };
    let frame = std::fs::read(dir.join("cases/fcs_lies_empty_last_block.zst")).unwrap();
    let tfm = Acomp::new("zstd").unwrap();
    for (s, d) in all_cut_pairs() {
        assert_eq!(decompress(&tfm, &frame, s, 10, d).unwrap_err(), MISMATCH);
    }
    // libzstd's one-shot decoder refuses it too; only its streaming decoder, in pieces, did not.
    assert!(zstd::bulk::decompress(&frame, 100).is_err());
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    /// Real frames (compressed, raw or RLE last blocks, or an empty last block added; with
    /// and without a checksum; each field width) with their content size rewritten, larger
    /// or smaller.
    #[test]
    fn a_rewritten_content_size_is_corrupt_on_every_cut(
        len in prop_oneof![0usize..256, 256usize..70_000],
        kind in 0u8..3,
        checksum in any::<bool>(),
        empty_last in any::<bool>(),
        width in prop_oneof![Just(1usize), Just(2), Just(4), Just(8)],
        delta in prop_oneof![Just(1i64), Just(-1), -5000i64..5000],
        seed in any::<u64>(),
    ) {
        let data = match kind {
            0 => letters(len, seed),
            1 => random_bytes(len, seed),
            _ => { let mut d = letters(len / 2, seed); d.resize(len, 0); d }
        };
        let tfm = Acomp::with_zstd(ZstdParams::default().checksum(checksum)).unwrap();
        let mut frame = compress(&tfm, &data, Cut::One, data.len() + 100, Cut::One).unwrap().0;
        if empty_last {
            frame = surgery::with_empty_last_block(&frame);
        }
        let declared = len as i64 + delta;
        prop_assume!(declared >= 0 && delta != 0);
        let Some(bad) = surgery::with_content_size(&frame, width, Some(declared as u64)) else {
            return Err(TestCaseError::reject("the width cannot hold it"));
        };
        let cuts = [
            (Cut::One, Cut::One),
            (Cut::Random(seed), Cut::Random(seed ^ 1)),
            (Cut::Every(1 + (seed % 700) as usize), Cut::One),
        ];
        all_corrupt(&tfm, &bad, declared as usize, len, &cuts);
        // The same frame with its own size in the same width holds.
        if let Some(good) = surgery::with_content_size(&frame, width, Some(len as u64)) {
            prop_assert!(decompress(&tfm, &good, cuts[1].0, len, cuts[1].1).unwrap() == data);
        }
    }
}
