//! lz4: arbitrary bytes decompressed with arbitrary cuts and destination sizes into a reused
//! destination pre-filled with a canary (no panic; the same outcome as with one fragment
//! each side into a zeroed destination, so no canary byte comes back as output; nothing
//! past the output written; `ENOSPC` only where the size it names succeeds; corrupt at one
//! size, corrupt at a large one), and, where the control header's free byte is odd, the
//! bytes compressed and round-tripped through other cuts.
#![no_main]

use std::sync::Mutex;

use acomp::{Acomp, Error};
use libfuzzer_sys::fuzz_target;

#[path = "common.rs"]
mod common;
use common::*;

const CANARY: u8 = 0xA5;

fn lz4() -> &'static Acomp {
    static TFM: std::sync::OnceLock<Acomp> = std::sync::OnceLock::new();
    TFM.get_or_init(|| Acomp::new("lz4").unwrap())
}

/// Decompresses into a destination reused across runs, filled with the canary first (or
/// zeroed where `canary` is false); checks nothing past the output changed.
fn decompress(
    src: &[u8],
    scut: &[usize],
    cap: usize,
    dcut: &[usize],
    canary: bool,
) -> Result<Vec<u8>, Error> {
    static DST: Mutex<Vec<u8>> = Mutex::new(Vec::new());
    let mut dst = DST.lock().unwrap();
    let fill = if canary { CANARY } else { 0 };
    dst.clear();
    dst.resize(cap, fill);
    let res = lz4().decompress(&split(src, scut), &mut split_mut(&mut dst, dcut));
    res.map(|n| {
        assert!(n <= cap);
        assert!(
            dst[n..].iter().all(|&b| b == fill),
            "a byte past the output changed"
        );
        dst[..n].to_vec()
    })
}

fn compress(src: &[u8], scut: &[usize], cap: usize, dcut: &[usize]) -> Result<Vec<u8>, Error> {
    let mut out = vec![0u8; cap];
    let n = lz4().compress(&split(src, scut), &mut split_mut(&mut out, dcut))?;
    out.truncate(n);
    Ok(out)
}

fuzz_target!(|data: &[u8]| {
    let (c, src) = split_input(data);
    if src.is_empty() {
        return;
    }
    let one = decompress(src, &[src.len()], c.cap, &[c.cap], false);
    let scut = sizes(src.len(), c.seed, c.max_frag);
    let dcut = sizes(c.cap, c.seed.rotate_left(16), c.max_frag);
    let cut = decompress(src, &scut, c.cap, &dcut, true);
    assert!(
        same_outcome(&one, &cut),
        "the outcome depends on the cut: {one:?} vs {cut:?}"
    );
    match &one {
        Err(e) => {
            assert_kind(e);
            if let Error::NoSpace {
                needed: Some(n), ..
            } = e
            {
                let n = *n as usize;
                assert!(n > c.cap);
                let out = decompress(src, &scut, n, &sizes(n, c.seed, c.max_frag), true).unwrap();
                assert_eq!(out.len(), n);
            } else if e.errno() == libc::EBADMSG {
                let e = decompress(src, &scut, 1 << 20, &[1 << 20], true).unwrap_err();
                assert_eq!(e.errno(), libc::EBADMSG);
            }
        }
        Ok(out) if !out.is_empty() => {
            // Exactly as large as the output suffices; one byte less is ENOSPC.
            let n = out.len();
            let exact = decompress(src, &scut, n, &sizes(n, c.seed, c.max_frag), true).unwrap();
            assert!(exact == *out);
            let short = decompress(src, &[src.len()], n - 1, &[n - 1], true).unwrap_err();
            assert_eq!(
                short,
                Error::NoSpace {
                    needed: Some(n as u64),
                    capacity: n - 1
                }
            );
        }
        Ok(_) => {}
    }
    if c.extra % 2 == 1 && src.len() <= 128 * 1024 {
        let bound = src.len() + src.len() / 255 + 16;
        let block = compress(src, &[src.len()], bound, &[bound]).unwrap();
        let cut = compress(
            src,
            &scut,
            block.len(),
            &sizes(block.len(), !c.seed, c.max_frag),
        )
        .unwrap();
        assert_eq!(cut, block, "the block depends on the cut");
        let short = compress(
            src,
            &scut,
            block.len() - 1,
            &sizes(block.len() - 1, c.seed, c.max_frag),
        );
        assert_eq!(short.unwrap_err().errno(), libc::ENOSPC);
        let back = decompress(
            &block,
            &sizes(block.len(), c.seed.rotate_left(3), c.max_frag),
            src.len(),
            &sizes(src.len(), c.seed.rotate_left(7), c.max_frag),
            true,
        )
        .unwrap();
        assert!(back == src, "round trip differs");
    }
});
