//! Arbitrary bytes, decompressed with arbitrary fragment cuts and destination sizes: no
//! panic; the same outcome as with one fragment each side; nothing past the output
//! written; errors of the four kinds only; `ENOSPC` only where the size it names succeeds.
#![no_main]

use libfuzzer_sys::fuzz_target;

#[path = "common.rs"]
mod common;
use common::*;

fuzz_target!(|data: &[u8]| {
    let (c, src) = split_input(data);
    let one = decompress(src, &[src.len()], c.cap, &[c.cap], 0xA5);
    let scut = sizes(src.len(), c.seed, c.max_frag);
    let dcut = sizes(c.cap, c.seed.rotate_left(16), c.max_frag);
    let cut = decompress(src, &scut, c.cap, &dcut, 0x5A);
    assert!(
        same_outcome(&one, &cut),
        "the outcome depends on the cut: {one:?} vs {cut:?}"
    );
    if let Err(e) = &one {
        assert_kind(e);
        if let acomp::Error::NoSpace {
            needed: Some(n), ..
        } = e
        {
            let n = *n as usize;
            assert!(n > c.cap);
            if n <= 1 << 24 {
                let out = decompress(src, &scut, n, &sizes(n, c.seed, c.max_frag), 0).unwrap();
                assert_eq!(out.len(), n);
            }
        }
    }
});
