//! A workspace that saw an error serves the next request as if nothing happened.

use crate::common::*;
use acomp::{Acomp, Error, ZstdParams};

#[test]
fn after_every_kind_of_error_the_same_workspace_gives_the_right_bytes() {
    // Every request on one CPU lands on the same workspace.
    pin_to(&allowed_cpus()[..1]);
    // With a checksum, so that the flipped byte is caught whichever decoder zstd picks
    // for this CPU (without one, zstd cannot catch every corruption).
    let tfm = Acomp::with_zstd(ZstdParams::default().checksum(true)).unwrap();
    let data = letters(50_000, 1);
    let frame = compress(&tfm, &data, Cut::One, 60_000, Cut::One).unwrap();
    let mut corrupt = frame.0.clone();
    let mid = corrupt.len() / 2;
    corrupt[mid] ^= 0xff;
    let truncated = &frame[..frame.len() - 10];
    for (s, d) in [
        (Cut::One, Cut::One),
        (Cut::Every(1000), Cut::Every(4096)),
        (Cut::Random(3), Cut::One),
    ] {
        for bad in [&corrupt[..], truncated, &frame[..5]] {
            let err = decompress(&tfm, bad, s, 60_000, d).unwrap_err();
            assert_eq!(err.errno(), libc::EBADMSG);
            // Right after: a good request on each path.
            assert!(decompress(&tfm, &frame, s, 50_000, d).unwrap() == data);
            assert!(decompress(&tfm, &frame, Cut::One, 50_000, Cut::One).unwrap() == data);
        }
        let err = decompress(&tfm, &frame, s, 49_999, d).unwrap_err();
        assert!(matches!(
            err,
            Error::NoSpace {
                needed: Some(50_000),
                ..
            }
        ));
        assert!(decompress(&tfm, &frame, s, 50_000, d).unwrap() == data);
        // A compression cut short by ENOSPC, then one that fits: the same frame as before.
        assert_eq!(
            compress(&tfm, &data, s, 100, d).unwrap_err().errno(),
            libc::ENOSPC
        );
        assert_eq!(compress(&tfm, &data, s, 60_000, d).unwrap(), frame);
        assert_eq!(
            compress(&tfm, &data, Cut::One, 60_000, Cut::One).unwrap(),
            frame
        );
    }
    let stats = tfm.stats();
    assert_eq!(stats.workspaces, 1, "{stats:?}");
    assert!(stats.corrupt >= 9 && stats.no_space >= 6, "{stats:?}");
}
