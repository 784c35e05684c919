//! The output is exactly the first `n` bytes of the destination: nothing past it changes,
//! also where zstd's own one-shot decoder would park literals there.

use crate::common::*;
use acomp::Acomp;

const FILL: u8 = 0xA5;

fn check(tfm: &Acomp, frame: &[u8], data: &[u8], cap: usize) {
    // 1-byte fragments over a large destination add time, not cases: the stream path's
    // writes are the same at any fragment size.
    let small = |c: &Cut| cap <= 65_536 || !matches!(c, Cut::Every(1));
    for (s, d) in all_cut_pairs().filter(|(s, d)| small(s) && small(d)) {
        let mut out = vec![FILL; cap];
        let n = tfm
            .decompress(&split(frame, s), &mut split_mut(&mut out, d))
            .unwrap_or_else(|e| panic!("cap {cap} {s:?}/{d:?}: {e}"));
        assert!(out[..n] == *data, "cap {cap} {s:?}/{d:?}: wrong output");
        let changed = out[n..].iter().filter(|&&b| b != FILL).count();
        assert_eq!(
            changed, 0,
            "cap {cap} {s:?}/{d:?}: bytes past the output changed"
        );
    }
}

#[test]
fn nothing_past_the_output_changes() {
    let tfm = Acomp::new("zstd").unwrap();
    // Mostly literals, so that zstd's one-shot decoder would keep them in the destination.
    for len in [100, 4096, 100_000, 200_000] {
        let data = letters(len, len as u64);
        for frame in [frame_without_size(&data, 3, 0), frame_with_size(&data, 3)] {
            for cap in [len, len + 1, len + 33, len + 20_000, 300_000, 1 << 20] {
                check(&tfm, &frame, &data, cap);
            }
        }
    }
}
