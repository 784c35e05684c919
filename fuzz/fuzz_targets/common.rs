//! What the fuzz targets share: the input layout, fragment cuts, the checks.
//!
//! An input is a control header of `HEADER` bytes, then the payload (a frame, or data to
//! compress). Seeds are the files of `../shared/testdata` behind a zero header
//! (`fuzz/seed.sh`), so the fuzzer starts from real frames.
#![allow(dead_code)] // each target uses part of this module

use std::io::{IoSlice, IoSliceMut};

use acomp::{Acomp, Error};

pub const HEADER: usize = 8;

/// The control header, read from the front of the input (zero-padded where short).
pub struct Control {
    /// Destination capacity in bytes (up to 1 MiB).
    pub cap: usize,
    /// Seed of the fragment cuts.
    pub seed: u32,
    /// Largest fragment size, from 1 byte to 64 KiB.
    pub max_frag: usize,
    /// A free byte for the target's own choices.
    pub extra: u8,
}

pub fn split_input(data: &[u8]) -> (Control, &[u8]) {
    let mut h = [0u8; HEADER];
    let n = data.len().min(HEADER);
    h[..n].copy_from_slice(&data[..n]);
    let cap = match h[2] % 4 {
        0 => u16::from_le_bytes([h[0], h[1]]) as usize,
        1 => (u16::from_le_bytes([h[0], h[1]]) as usize) << 4,
        2 => 4096,
        _ => 131_072,
    };
    let control = Control {
        cap,
        seed: u32::from_le_bytes([h[3], h[4], h[5], h[6]]) | 1,
        max_frag: [1, 2, 7, 64, 512, 4096, 65_536, usize::MAX][(h[7] % 8) as usize],
        extra: h[2] >> 2,
    };
    (control, &data[n..])
}

/// Fragment sizes adding up to `len`, from a xorshift sequence; some are zero.
pub fn sizes(len: usize, seed: u32, max: usize) -> Vec<usize> {
    let mut x = seed;
    let mut next = move || {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        x as usize
    };
    let mut v = Vec::new();
    let mut left = len;
    while left > 0 {
        if next() % 8 == 0 {
            v.push(0);
        }
        let n = 1 + next() % max.min(left);
        v.push(n);
        left -= n;
    }
    v
}

pub fn split<'a>(buf: &'a [u8], sizes: &[usize]) -> Vec<IoSlice<'a>> {
    let mut rest = buf;
    sizes
        .iter()
        .map(|&n| {
            let (a, b) = rest.split_at(n);
            rest = b;
            IoSlice::new(a)
        })
        .collect()
}

pub fn split_mut<'a>(buf: &'a mut [u8], sizes: &[usize]) -> Vec<IoSliceMut<'a>> {
    let mut rest = buf;
    sizes
        .iter()
        .map(|&n| {
            let (a, b) = std::mem::take(&mut rest).split_at_mut(n);
            rest = b;
            IoSliceMut::new(a)
        })
        .collect()
}

/// One transform for the whole run, as a service has: a workspace left dirty by one input
/// shows up in a later one.
pub fn tfm() -> &'static Acomp {
    static TFM: std::sync::OnceLock<Acomp> = std::sync::OnceLock::new();
    TFM.get_or_init(|| Acomp::new("zstd").unwrap())
}

pub fn assert_kind(e: &Error) {
    assert!(
        [libc::ENOSPC, libc::EBADMSG, libc::EINVAL, libc::ENOMEM].contains(&e.errno()),
        "error outside the four kinds: {e:?}"
    );
}

/// Whether two outcomes are the same in the contract's terms: the same bytes, or the same
/// error kind (and, for `ENOSPC`, the same size needed). zstd's own name for a corruption
/// may differ with the cut; its kind may not.
pub fn same_outcome(a: &Result<Vec<u8>, Error>, b: &Result<Vec<u8>, Error>) -> bool {
    match (a, b) {
        (Ok(x), Ok(y)) => x == y,
        (Err(Error::NoSpace { needed: x, .. }), Err(Error::NoSpace { needed: y, .. })) => x == y,
        (Err(x), Err(y)) => x.errno() == y.errno(),
        _ => false,
    }
}

/// Decompresses `src` (cut by `scut`) into a destination of `cap` bytes (cut by `dcut`),
/// pre-filled with `fill`; checks that no byte past the output changed, and returns the
/// output.
pub fn decompress(
    src: &[u8],
    scut: &[usize],
    cap: usize,
    dcut: &[usize],
    fill: u8,
) -> Result<Vec<u8>, Error> {
    let mut out = vec![fill; cap];
    let res = tfm().decompress(&split(src, scut), &mut split_mut(&mut out, dcut));
    if let Ok(n) = res {
        assert!(n <= cap);
        assert!(
            out[n..].iter().all(|&b| b == fill),
            "a byte past the output changed"
        );
        out.truncate(n);
    }
    res.map(|_| out)
}
