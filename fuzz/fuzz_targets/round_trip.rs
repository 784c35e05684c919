//! Arbitrary data through arbitrary cuts: the frame is the same as with one fragment each
//! side, fits a destination of exactly its size and not one byte less, and decompresses
//! through other cuts to the same data.
#![no_main]

use acomp::{Acomp, ZstdParams};
use libfuzzer_sys::fuzz_target;

#[path = "common.rs"]
mod common;
use common::*;

fn compress(
    tfm: &Acomp,
    src: &[u8],
    scut: &[usize],
    cap: usize,
    dcut: &[usize],
) -> Result<Vec<u8>, acomp::Error> {
    let mut out = vec![0u8; cap];
    let n = tfm.compress(&split(src, scut), &mut split_mut(&mut out, dcut))?;
    out.truncate(n);
    Ok(out)
}

fuzz_target!(|data: &[u8]| {
    let (c, src) = split_input(data);
    // A few transforms: levels from fast to slow, with and without checksum.
    static TFMS: std::sync::OnceLock<Vec<Acomp>> = std::sync::OnceLock::new();
    let tfms = TFMS.get_or_init(|| {
        [(-5, false), (1, true), (3, false), (9, true)]
            .into_iter()
            .map(|(l, s)| Acomp::with_zstd(ZstdParams::default().level(l).checksum(s)).unwrap())
            .collect()
    });
    let tfm = &tfms[c.extra as usize % tfms.len()];
    let bound = src.len() + src.len() / 128 + 1024;
    let one = compress(tfm, src, &[src.len()], bound, &[bound]).unwrap();
    let scut = sizes(src.len(), c.seed, c.max_frag);
    let frame = compress(tfm, src, &scut, bound, &sizes(bound, !c.seed, c.max_frag)).unwrap();
    assert_eq!(frame, one, "the frame depends on the cut");
    let exact = compress(
        tfm,
        src,
        &scut,
        frame.len(),
        &sizes(frame.len(), c.seed, c.max_frag),
    );
    assert_eq!(exact.unwrap(), frame);
    let short = compress(
        tfm,
        src,
        &scut,
        frame.len() - 1,
        &sizes(frame.len() - 1, c.seed, c.max_frag),
    );
    assert_eq!(short.unwrap_err().errno(), libc::ENOSPC);
    let dcut = sizes(src.len(), c.seed.rotate_left(7), c.max_frag);
    let back = decompress(
        &frame,
        &sizes(frame.len(), c.seed.rotate_left(3), c.max_frag),
        src.len(),
        &dcut,
        0,
    )
    .unwrap();
    assert!(back == src, "round trip differs");
});
