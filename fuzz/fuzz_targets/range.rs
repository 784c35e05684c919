//! Range reads with arbitrary segment lists: over arbitrary bytes, no panic and the same
//! outcome on any source cut; over a valid frame of arbitrary data, exactly the data's
//! bytes in every segment and zeros past its end.
#![no_main]

use acomp::{Error, Segment};
use libfuzzer_sys::fuzz_target;

#[path = "common.rs"]
mod common;
use common::*;

/// Reads `ranges` out of `src` cut by `scut`; returns the count and the segments' bytes.
fn read(
    src: &[u8],
    scut: &[usize],
    ranges: &[(u64, usize)],
) -> Result<(usize, Vec<Vec<u8>>), Error> {
    let mut bufs: Vec<Vec<u8>> = ranges.iter().map(|&(_, l)| vec![0xEE; l]).collect();
    let mut segs: Vec<Segment<'_>> = bufs
        .iter_mut()
        .zip(ranges)
        .map(|(b, &(o, _))| Segment::new(o, b))
        .collect();
    let n = tfm().decompress_range(&split(src, scut), &mut segs)?;
    drop(segs);
    Ok((n, bufs))
}

fuzz_target!(|data: &[u8]| {
    let (c, payload) = split_input(data);
    // Segments from the seed: mostly sorted and apart, sometimes not.
    let mut x = c.seed as u64;
    let mut ranges = Vec::new();
    let mut at = 0u64;
    for _ in 0..(c.extra % 6) {
        x = x
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        let gap = (x >> 33) % 70_000;
        let len = ((x >> 13) % 9000) as usize;
        at = if x % 17 == 0 {
            at.saturating_sub(gap)
        } else {
            at + gap
        };
        ranges.push((at, len));
        at += len as u64;
    }
    let scut = sizes(payload.len(), c.seed, c.max_frag);
    // Arbitrary bytes as the source.
    let one = read(payload, &[payload.len()], &ranges);
    // The same bytes, or the same error kind (zstd's wording may differ with the cut).
    let cut = read(payload, &scut, &ranges);
    let same = match (&one, &cut) {
        (Ok(a), Ok(b)) => a == b,
        (Err(a), Err(b)) => a.errno() == b.errno(),
        _ => false,
    };
    assert!(same, "the outcome depends on the cut: {one:?} vs {cut:?}");
    if let Err(e) = &one {
        assert_kind(e);
    }
    // A valid frame of the payload: exact bytes.
    let mut frame = vec![0u8; payload.len() + payload.len() / 128 + 1024];
    let n = tfm()
        .compress(
            &[std::io::IoSlice::new(payload)],
            &mut [std::io::IoSliceMut::new(&mut frame)],
        )
        .unwrap();
    frame.truncate(n);
    let sorted = ranges.windows(2).all(|w| w[1].0 >= w[0].0 + w[0].1 as u64);
    match read(&frame, &sizes(n, c.seed, c.max_frag), &ranges) {
        Ok((count, bufs)) => {
            assert!(sorted);
            let mut want = 0;
            for (&(off, len), buf) in ranges.iter().zip(&bufs) {
                for (i, &b) in buf.iter().enumerate().take(len) {
                    let at = off as usize + i;
                    let expect = payload.get(at).copied().unwrap_or(0);
                    want += usize::from(at < payload.len());
                    assert_eq!(b, expect, "segment at {off}, byte {i}");
                }
            }
            assert_eq!(count, want);
        }
        Err(e) => {
            assert!(!sorted, "a valid read failed: {e}");
            assert_eq!(e.errno(), libc::EINVAL);
        }
    }
});
