//! The fuzz targets' own seeds (`fuzz/seeds/<target>/`, copied into the corpus by
//! `fuzz/seed.sh`) are the issues' examples: each gives its outcome here, behind either
//! control header, so that a seed that stops being the example fails.

use acomp::{Acomp, Error};

/// The payload of a seed file: the bytes after its 8-byte control header
/// (`fuzz/fuzz_targets/common.rs`).
fn payload(target: &str, name: &str) -> Vec<u8> {
    let path = format!("{}/fuzz/seeds/{target}/{name}", env!("CARGO_MANIFEST_DIR"));
    let seed = std::fs::read(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let plain = std::fs::read(format!("{path}-4k")).unwrap();
    assert_eq!(seed[8..], plain[8..], "{name}: both headers, one payload");
    assert_eq!(seed[..8], [0; 8]);
    assert_eq!(plain[..8], *b"\0\0\x02\x01\x02\x03\x04\x02");
    seed[8..].to_vec()
}

#[test]
fn zstd_seeds_are_the_examples() {
    let tfm = Acomp::new("zstd").unwrap();
    for target in ["decompress", "range", "round_trip"] {
        let outcome = |name| tfm.decompress_to_buffer(&payload(target, name), &mut [0u8; 4096]);
        assert_eq!(
            payload(target, "issue22-case1-empty-compressed-block"),
            [0x28, 0xb5, 0x2f, 0xfd, 0x20, 0x00, 0x05, 0x00, 0x00]
        );
        assert_eq!(
            outcome("issue22-case1-empty-compressed-block"),
            Err(Error::Corrupt {
                detail: "compressed block shorter than its section headers (2 bytes)"
            })
        );
        assert_eq!(
            outcome("issue22-case2-dictionary-and-window"),
            Err(Error::Corrupt {
                detail: "frame names a dictionary this transform lacks"
            })
        );
        assert_eq!(
            outcome("issue23-trailing-16-zero-bytes"),
            Err(Error::TrailingBytes { bytes: 16 })
        );
    }
    // The second example without its dictionary ID is the window alone.
    let mut window = payload("decompress", "issue22-case2-dictionary-and-window");
    window[4] = 0;
    window.drain(6..10);
    assert_eq!(
        tfm.decompress_to_buffer(&window, &mut [0u8; 4096]),
        Err(Error::WindowTooLarge {
            window: 1 << 24,
            limit: 1 << 23
        })
    );
}

#[test]
fn lz4_seeds_are_the_examples() {
    let tfm = Acomp::new("lz4").unwrap();
    let outcome = |name| tfm.decompress_to_buffer(&payload("lz4", name), &mut []);
    // A last token's match nibble is not read, at every capacity (0 here).
    assert_eq!(payload("lz4", "issue22-case3-token-0f"), [0x0f]);
    assert_eq!(outcome("issue22-case3-token-0f"), Ok(0));
    assert_eq!(
        outcome("issue22-case3-token-1f-61"),
        Err(Error::NoSpace {
            needed: Some(1),
            capacity: 0
        })
    );
    assert_eq!(
        outcome("issue23-zstd-frame-to-lz4"),
        Err(Error::Corrupt {
            detail: "not an lz4 block: it starts with zstd's magic number (28 b5 2f fd), as a zstd frame does"
        })
    );
}
