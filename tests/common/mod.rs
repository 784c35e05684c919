//! Helpers shared by the integration tests: fragment cuts and one-call requests.
#![allow(dead_code)]

use std::io::{IoSlice, IoSliceMut};
use std::path::PathBuf;

use acomp::{Acomp, Error};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

/// How to cut a buffer into fragments.
#[derive(Debug, Clone, Copy)]
pub enum Cut {
    /// One fragment.
    One,
    /// Fragments of this many bytes (the last one shorter).
    Every(usize),
    /// Random sizes from this seed, with some zero-length fragments.
    Random(u64),
}

/// The cuts every golden row is tried on.
pub const CUTS: [Cut; 5] = [
    Cut::One,
    Cut::Every(4096),
    Cut::Every(1),
    Cut::Random(1),
    Cut::Random(2),
];

/// Fragment sizes that add up to `len`.
pub fn sizes(len: usize, cut: Cut) -> Vec<usize> {
    match cut {
        Cut::One => vec![len],
        Cut::Every(n) => {
            let mut v: Vec<usize> = (0..len / n).map(|_| n).collect();
            if len % n != 0 || len == 0 {
                v.push(len % n);
            }
            v
        }
        Cut::Random(seed) => {
            let mut rng = StdRng::seed_from_u64(seed ^ len as u64);
            let max = [1, 3, 64, 1000, 5000, 70_000][rng.random_range(0..6)];
            let mut v = Vec::new();
            let mut left = len;
            while left > 0 {
                if rng.random_ratio(1, 8) {
                    v.push(0);
                }
                let n = rng.random_range(1..=max.min(left));
                v.push(n);
                left -= n;
            }
            if rng.random_bool(0.5) {
                v.push(0);
            }
            v
        }
    }
}

pub fn split<'a>(buf: &'a [u8], cut: Cut) -> Vec<IoSlice<'a>> {
    let mut rest = buf;
    sizes(buf.len(), cut)
        .into_iter()
        .map(|n| {
            let (a, b) = rest.split_at(n);
            rest = b;
            IoSlice::new(a)
        })
        .collect()
}

pub fn split_mut<'a>(buf: &'a mut [u8], cut: Cut) -> Vec<IoSliceMut<'a>> {
    let mut rest = buf;
    sizes(rest.len(), cut)
        .into_iter()
        .map(|n| {
            let (a, b) = std::mem::take(&mut rest).split_at_mut(n);
            rest = b;
            IoSliceMut::new(a)
        })
        .collect()
}

/// Decompresses `src` cut as `scut` into a destination of `cap` bytes cut as `dcut`;
/// returns the output.
pub fn decompress(tfm: &Acomp, src: &[u8], scut: Cut, cap: usize, dcut: Cut) -> Result<Vec<u8>, Error> {
    let mut out = vec![0u8; cap];
    let n = tfm.decompress(&split(src, scut), &mut split_mut(&mut out, dcut))?;
    out.truncate(n);
    Ok(out)
}

/// Compresses `src` cut as `scut` into a destination of `cap` bytes cut as `dcut`;
/// returns the frame.
pub fn compress(tfm: &Acomp, src: &[u8], scut: Cut, cap: usize, dcut: Cut) -> Result<Vec<u8>, Error> {
    let mut out = vec![0u8; cap];
    let n = tfm.compress(&split(src, scut), &mut split_mut(&mut out, dcut))?;
    out.truncate(n);
    Ok(out)
}

/// `../shared/testdata` from the repository root, or `None` (with a message saying the
/// tests that need it are skipped) where it is absent.
pub fn testdata() -> Option<PathBuf> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/testdata");
    if dir.join("EXPECTED.tsv").is_file() {
        Some(dir)
    } else {
        eprintln!(
            "SKIPPED: {} is absent; the golden tests need the shared test data beside the repository",
            dir.display()
        );
        None
    }
}

pub fn sha256_hex(data: &[u8]) -> String {
    use sha2::Digest;
    hex::encode(sha2::Sha256::digest(data))
}
