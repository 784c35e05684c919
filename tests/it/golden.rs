//! Every row of `../shared/testdata/EXPECTED.tsv`, on the source and the destination cut as
//! one fragment, 4 KiB fragments, 1-byte fragments and random cuts.

use crate::common::{CUTS, Cut, Row, compress, decompress, expected_rows, sha256_hex, testdata};
use acomp::{Acomp, Error, ZstdParams};

fn rows() -> Option<(std::path::PathBuf, Vec<Row>)> {
    let dir = testdata("")?;
    let rows = expected_rows(&dir);
    Some((dir, rows))
}

fn errno_of(expect: &str) -> i32 {
    match expect {
        "corrupt" => libc::EBADMSG,
        "nospace" => libc::ENOSPC,
        "invalid" => libc::EINVAL,
        other => panic!("unknown outcome {other}"),
    }
}

fn check_decompress(tfm: &Acomp, row: &Row, src: &[u8]) {
    for scut in CUTS {
        for dcut in CUTS {
            let what = format!("{} src {scut:?} dst {dcut:?}", row.source);
            if row.expect == "ok" {
                // Exactly as large as the output, and larger.
                for cap in [row.size, row.size + 4096] {
                    let out = decompress(tfm, src, scut, cap, dcut)
                        .unwrap_or_else(|e| panic!("{what} cap {cap}: {e}"));
                    assert_eq!(out.len(), row.size, "{what}");
                    assert_eq!(sha256_hex(&out), row.sha256, "{what}");
                }
                if row.size > 0 {
                    let err = decompress(tfm, src, scut, row.size - 1, dcut).unwrap_err();
                    assert_eq!(
                        err,
                        Error::NoSpace {
                            needed: Some(row.size as u64),
                            capacity: row.size - 1
                        },
                        "{what}"
                    );
                }
            } else {
                for cap in [0, 16, 4096, 1 << 20] {
                    let err = decompress(tfm, src, scut, cap, dcut).unwrap_err();
                    assert_eq!(
                        err.errno(),
                        errno_of(&row.expect),
                        "{what} cap {cap}: {err}"
                    );
                }
            }
        }
    }
}

fn check_compress(tfm: &Acomp, row: &Row, src: &[u8]) {
    let err = compress(tfm, src, Cut::One, 4096, Cut::One).unwrap_err();
    for scut in CUTS {
        for dcut in CUTS {
            let e = compress(tfm, src, scut, 4096, dcut).unwrap_err();
            assert_eq!(
                e.errno(),
                errno_of(&row.expect),
                "{} {scut:?} {dcut:?}: {e}",
                row.source
            );
            assert_eq!(e, err);
        }
    }
}

fn check_round_trip(row: &Row, src: &[u8]) {
    assert_eq!(sha256_hex(src), row.sha256, "{}: input", row.source);
    let levels: Vec<i32> = if row.note.contains("levels 1..19") {
        (1..=19).collect()
    } else {
        vec![3]
    };
    let cap = if row.note.contains("4096-byte destination") {
        4096
    } else {
        zstd_safe::compress_bound(src.len())
    };
    for level in levels {
        let tfm = Acomp::with_zstd(ZstdParams::default().level(level)).unwrap();
        // Levels above 3 on large inputs are slow at 1-byte cuts; the cut-sensitive part
        // is the walk, which level 3 and the first level cover.
        let cuts: &[Cut] = if level <= 3 || src.len() <= 4096 {
            &CUTS
        } else {
            &[Cut::One, Cut::Random(3)]
        };
        for &scut in cuts {
            for &dcut in cuts {
                let what = format!("{} level {level} src {scut:?} dst {dcut:?}", row.source);
                let frame =
                    compress(&tfm, src, scut, cap, dcut).unwrap_or_else(|e| panic!("{what}: {e}"));
                let back = decompress(&tfm, &frame, dcut, src.len(), scut)
                    .unwrap_or_else(|e| panic!("{what}: {e}"));
                assert_eq!(back.len(), row.size, "{what}");
                assert!(back == src, "{what}: round trip differs");
                // The reference decoder reads every frame acomp writes.
                assert_eq!(
                    zstd::bulk::decompress(&frame, src.len()).unwrap(),
                    src,
                    "{what}"
                );
            }
        }
    }
}

#[test]
fn every_expected_row_on_every_cut() {
    let Some((dir, rows)) = rows() else { return };
    let tfm = Acomp::new("zstd").unwrap();
    assert!(rows.len() >= 30, "EXPECTED.tsv has {} rows", rows.len());
    for row in &rows {
        let src = std::fs::read(dir.join(&row.source)).expect(&row.source);
        match row.direction.as_str() {
            "decompress" => check_decompress(&tfm, row, &src),
            "compress" => check_compress(&tfm, row, &src),
            "round-trip" => check_round_trip(row, &src),
            other => panic!("unknown direction {other}"),
        }
    }
    let s = tfm.stats();
    assert!(s.one_shot > 0 && s.stream > 0, "{s:?}");
}
