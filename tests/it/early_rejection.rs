//! Early rejection: data that will not compress is refused with `ENOSPC` before compression
//! runs, the same on every cut; compressible data, and a destination of the bound, are never
//! refused; off by default.

use crate::common::*;
use acomp::{Acomp, Error, ZstdParams};

fn on() -> Acomp {
    Acomp::with_zstd(ZstdParams::default().early_rejection(true)).unwrap()
}

#[test]
fn random_pages_are_refused_on_every_cut() {
    let tfm = on();
    let mut refused = 0;
    for seed in 0..10 {
        let page = random_bytes(4096, seed);
        for (s, d) in all_cut_pairs() {
            let err = compress(&tfm, &page, s, 4096, d).unwrap_err();
            assert_eq!(err, Error::Incompressible { capacity: 4096 }, "{s:?}/{d:?}");
            assert_eq!(err.errno(), libc::ENOSPC);
            refused += 1;
        }
        // Room for the bound: compressed, never refused.
        let bound = tfm.compress_bound(4096);
        assert!(compress(&tfm, &page, Cut::Every(100), bound, Cut::One).is_ok());
    }
    let s = tfm.stats();
    // A rejection is its own outcome, not an error.
    assert_eq!((s.rejected, s.no_space), (refused, 0));
    assert_eq!(s.compress, refused + 10);
    // And prints among the requests, not the errors.
    let text = s.to_string();
    assert!(
        text.lines()
            .next()
            .unwrap()
            .ends_with(&format!(", rejected early {refused}")),
        "{text}"
    );
    assert!(
        text.lines()
            .nth(1)
            .unwrap()
            .starts_with("errors: no_space 0,"),
        "{text}"
    );
}

#[test]
fn compressible_data_is_compressed_as_without_it() {
    let plain = Acomp::new("zstd").unwrap();
    let tfm = on();
    let mut half_random = random_bytes(4096, 3);
    half_random[2048..].fill(b'x');
    let mut repeated = random_bytes(4096, 4);
    let (a, b) = repeated.split_at_mut(2048);
    b.copy_from_slice(a);
    for page in [letters(4096, 1), vec![0u8; 4096], half_random, repeated] {
        for (s, d) in [(Cut::One, Cut::One), (Cut::Every(7), Cut::Random(2))] {
            let want = compress(&plain, &page, s, 4096, d);
            let got = compress(&tfm, &page, s, 4096, d);
            assert!(same_outcome(&got, &want), "{got:?} {want:?}");
            assert!(got.is_ok());
        }
    }
    assert_eq!(tfm.stats().rejected, 0);
}

#[test]
fn off_by_default() {
    let tfm = Acomp::new("zstd").unwrap();
    let page = random_bytes(4096, 5);
    let err = compress(&tfm, &page, Cut::One, 4096, Cut::One).unwrap_err();
    assert!(
        matches!(err, Error::NoSpace { needed: Some(n), .. } if n > 4096),
        "{err:?}"
    );
    assert_eq!(tfm.stats().rejected, 0);
}
