//! Every row of `../shared/testdata/lz4/EXPECTED.tsv` (the kernel's lz4 and lz4hc self-test
//! vectors and blocks from public LZ4 bug reports) on every cut: one fragment, 4 KiB, 1-byte
//! and random fragments each side, and for blocks under 64 bytes the source split in two at
//! every byte.

use std::io::IoSlice;

use crate::common::{
    CUTS, Cut, Row, expected_rows, sha256_hex, split, split_at_sizes, split_mut, testdata,
};
use acomp::{Acomp, Error};

/// What a reused destination holds before each request: no byte of it may come back as
/// output, and none past the output may change.
const CANARY: u8 = 0xA5;

/// The source cuts of a block: the common five, plus every two-fragment split of a block
/// under 64 bytes (inside length runs and between the offset bytes among them).
fn source_cuts(len: usize) -> Vec<Vec<usize>> {
    let mut v: Vec<Vec<usize>> = CUTS.iter().map(|&c| crate::common::sizes(len, c)).collect();
    if len < 64 {
        v.extend((1..len).map(|k| vec![k, len - k]));
    }
    v
}

/// Decompresses into `dst` (pre-filled with the canary by the caller), cut as `dcut`;
/// checks that nothing past the output changed; returns the output.
fn decompress(
    tfm: &Acomp,
    src: &[IoSlice<'_>],
    dst: &mut Vec<u8>,
    cap: usize,
    dcut: Cut,
) -> Result<Vec<u8>, Error> {
    dst.clear();
    dst.resize(cap, CANARY);
    let res = tfm.decompress(src, &mut split_mut(dst, dcut));
    if let Ok(n) = res {
        assert!(
            dst[n..].iter().all(|&b| b == CANARY),
            "bytes past the output changed"
        );
    }
    res.map(|n| dst[..n].to_vec())
}

fn check_decompress(tfm: &Acomp, row: &Row, block: &[u8]) {
    let mut dst = Vec::new();
    for scut in source_cuts(block.len()) {
        let src = split_at_sizes(block, &scut);
        for dcut in CUTS {
            let what = format!("{} src {scut:?} dst {dcut:?}", row.source);
            match row.expect.as_str() {
                "ok" => {
                    for cap in [row.size, row.size + 1, row.size + 4096, 1 << 20] {
                        let out = decompress(tfm, &src, &mut dst, cap, dcut)
                            .unwrap_or_else(|e| panic!("{what} cap {cap}: {e}"));
                        assert_eq!(out.len(), row.size, "{what} cap {cap}");
                        assert_eq!(sha256_hex(&out), row.sha256, "{what} cap {cap}");
                    }
                }
                "nospace" => {
                    let caps: Vec<usize> = if row.size <= 300 {
                        (0..row.size).collect()
                    } else {
                        vec![0, 1, row.size / 2, row.size - 1]
                    };
                    for cap in caps {
                        let err = decompress(tfm, &src, &mut dst, cap, dcut).unwrap_err();
                        assert_eq!(
                            err,
                            Error::NoSpace {
                                needed: Some(row.size as u64),
                                capacity: cap
                            },
                            "{what} cap {cap}"
                        );
                    }
                    let out = decompress(tfm, &src, &mut dst, row.size, dcut)
                        .unwrap_or_else(|e| panic!("{what} cap {}: {e}", row.size));
                    assert_eq!(out.len(), row.size, "{what}");
                }
                "corrupt" | "invalid" => {
                    let errno = if row.expect == "corrupt" {
                        libc::EBADMSG
                    } else {
                        libc::EINVAL
                    };
                    // Every size up to 64 (the sizes the reference decoder's leniency turns
                    // on are all below it), and large ones.
                    for cap in (0..=64).chain([4096, 1 << 20]) {
                        let err = decompress(tfm, &src, &mut dst, cap, dcut).unwrap_err();
                        assert_eq!(err.errno(), errno, "{what} cap {cap}: {err}");
                    }
                }
                other => panic!("unknown outcome {other}"),
            }
        }
    }
}

fn check_round_trip(tfm: &Acomp, row: &Row, plain: &[u8]) {
    assert_eq!(sha256_hex(plain), row.sha256, "{}: input", row.source);
    let bound = plain.len() + plain.len() / 255 + 16;
    let reference = crate::common::compress(tfm, plain, Cut::One, bound, Cut::One).unwrap();
    for scut in CUTS {
        for dcut in CUTS {
            let what = format!("{} src {scut:?} dst {dcut:?}", row.source);
            for cap in [bound, reference.len()] {
                let block = crate::common::compress(tfm, plain, scut, cap, dcut)
                    .unwrap_or_else(|e| panic!("{what} cap {cap}: {e}"));
                assert!(block == reference.0, "{what}: the block depends on the cut");
            }
            let err =
                crate::common::compress(tfm, plain, scut, reference.len() - 1, dcut).unwrap_err();
            assert_eq!(err.errno(), libc::ENOSPC, "{what}");
            let back = crate::common::decompress(tfm, &reference, dcut, plain.len(), scut)
                .unwrap_or_else(|e| panic!("{what}: {e}"));
            assert!(back == plain, "{what}: round trip differs");
        }
    }
    // The reference decoder reads the block too.
    assert_eq!(
        lz4_flex::block::decompress(&reference, plain.len()).unwrap(),
        plain,
        "{}",
        row.note
    );
}

#[test]
fn every_expected_lz4_row_on_every_cut() {
    let Some(dir) = testdata("lz4") else { return };
    let rows = expected_rows(&dir);
    assert!(rows.len() >= 50, "EXPECTED.tsv has {} rows", rows.len());
    let tfm = Acomp::new("lz4").unwrap();
    for row in &rows {
        let data = std::fs::read(dir.join(&row.source)).expect(&row.source);
        match row.direction.as_str() {
            "decompress" => check_decompress(&tfm, row, &data),
            "round-trip" => check_round_trip(&tfm, row, &data),
            other => panic!("unknown direction {other}"),
        }
    }
    let s = tfm.stats();
    assert!(s.one_shot > 0 && s.linearised > 0 && s.stream == 0, "{s:?}");
}

/// The empty source is refused before any workspace is touched, on every cut of the
/// destination.
#[test]
fn empty_source_is_einval() {
    let tfm = Acomp::new("lz4").unwrap();
    let mut out = vec![0u8; 64];
    for dcut in CUTS {
        let err = tfm
            .decompress(&split(&[], Cut::One), &mut split_mut(&mut out, dcut))
            .unwrap_err();
        assert_eq!(err, Error::EmptySource);
    }
}

/// The kernel's own self-test (`lz4_comp_tv_template[0]` in `crypto/testmgr.h`) compares
/// bytes: acomp writes exactly the block the kernel expects, on every cut (liblz4 1.9.4
/// writes 219 bytes, 1.10.0 the kernel's 218).
#[test]
fn kernel_compression_vector_byte_for_byte() {
    let Some(dir) = testdata("lz4") else { return };
    let plain = std::fs::read(dir.join("testmgr/lz4_comp_1.plain")).unwrap();
    let expected = std::fs::read(dir.join("testmgr/lz4_comp_1.lz4")).unwrap();
    let tfm = Acomp::new("lz4").unwrap();
    for scut in CUTS {
        for dcut in CUTS {
            let block = crate::common::compress(&tfm, &plain, scut, expected.len(), dcut).unwrap();
            assert!(block == expected, "{scut:?} {dcut:?}");
        }
    }
}
