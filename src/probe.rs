//! Early rejection: a cheap look at a sample of the source that tells data which will not
//! compress (random, already compressed, encrypted) before any compression runs, as btrfs's
//! `btrfs_compress_heuristic` samples an extent before compressing it.
//!
//! The sample is 32 runs of 8 bytes spread evenly over the source, wherever its fragments
//! are cut. Data counts as incompressible when the first 64 bytes of the sample show at
//! least 40 distinct byte values, the whole sample at least [`DISTINCT_MIN`] (random bytes show about 162 of 256; text 30 to 60;
//! machine code and heap pages fewer than 130) **and** no sampled run repeats (a repeat is
//! a match zstd would find). The answer depends on the source bytes only, never on the cut.

use std::io::IoSlice;

/// Runs of [`RUN`] bytes in the sample.
const RUNS: usize = 32;
/// Bytes in a run: one machine word.
const RUN: usize = 8;
/// Distinct byte values of the 256-byte sample from which data counts as incompressible.
pub(crate) const DISTINCT_MIN: u32 = 140;
/// The first bytes of the sample looked at on their own, and the distinct values they must
/// show for the rest to be looked at (random bytes: about 57 of 64; text: under 30).
const FIRST: usize = 64;
const FIRST_DISTINCT_MIN: u32 = 40;

/// Whether the source (`slen` bytes in `src`) looks incompressible. Sources shorter than
/// two samples are never judged so.
pub(crate) fn incompressible(src: &[IoSlice<'_>], slen: usize) -> bool {
    if slen < 2 * RUNS * RUN {
        return false;
    }
    let mut sample = [0u8; RUNS * RUN];
    gather(src, slen, &mut sample);
    let mut seen = [0u64; 4];
    let mut distinct = 0u32;
    let mut count = |bytes: &[u8]| {
        for &b in bytes {
            let (word, bit) = (usize::from(b >> 6), 1u64 << (b & 63));
            distinct += u32::from(seen[word] & bit == 0);
            seen[word] |= bit;
        }
        distinct
    };
    // Compressible data shows itself in the first quarter: stop there.
    let (first, rest) = sample.split_at(FIRST);
    if count(first) < FIRST_DISTINCT_MIN || count(rest) < DISTINCT_MIN {
        return false;
    }
    let mut runs = [0u64; RUNS];
    for (r, chunk) in runs.iter_mut().zip(sample.chunks_exact(RUN)) {
        *r = u64::from_le_bytes(chunk.try_into().expect("RUN bytes"));
    }
    runs.sort_unstable();
    !runs.windows(2).any(|w| w[0] == w[1])
}

/// Copies the runs of the sample out of the fragments: run `i` starts at byte
/// `i * (slen / RUNS)` of the source.
fn gather(src: &[IoSlice<'_>], slen: usize, sample: &mut [u8; RUNS * RUN]) {
    let stride = slen / RUNS;
    if let [one] = src {
        for (i, run) in sample.chunks_exact_mut(RUN).enumerate() {
            run.copy_from_slice(&one[i * stride..i * stride + RUN]);
        }
        return;
    }
    // Several fragments: walk them once, in order (the runs' offsets only grow).
    let mut frags = src.iter().filter(|f| !f.is_empty());
    let mut frag: &[u8] = frags.next().map_or(&[], |f| &f[..]);
    let mut frag_start = 0;
    for (i, run) in sample.chunks_exact_mut(RUN).enumerate() {
        for (j, byte) in run.iter_mut().enumerate() {
            let at = i * stride + j;
            while at >= frag_start + frag.len() {
                frag_start += frag.len();
                frag = frags.next().map_or(&[], |f| &f[..]);
            }
            *byte = frag[at - frag_start];
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::rngs::StdRng;
    use rand::{RngCore, SeedableRng};

    fn page(seed: u64) -> Vec<u8> {
        let mut p = vec![0u8; 4096];
        StdRng::seed_from_u64(seed).fill_bytes(&mut p);
        p
    }

    #[test]
    fn random_is_incompressible_text_and_zeros_are_not() {
        for seed in 0..50 {
            assert!(incompressible(&[IoSlice::new(&page(seed))], 4096), "{seed}");
        }
        let text = b"the quick brown fox jumps over the lazy dog; ".repeat(92);
        assert!(!incompressible(&[IoSlice::new(&text)], text.len()));
        assert!(!incompressible(&[IoSlice::new(&[0u8; 4096])], 4096));
        // Too short to judge.
        assert!(!incompressible(&[IoSlice::new(&page(1)[..511])], 511));
    }

    #[test]
    fn a_repeated_run_keeps_the_data() {
        // Random, but its second half repeats its first: zstd halves it.
        let mut p = page(7);
        let (a, b) = p.split_at_mut(2048);
        b.copy_from_slice(a);
        assert!(!incompressible(&[IoSlice::new(&p)], 4096));
    }

    #[test]
    fn the_answer_does_not_depend_on_the_cut() {
        for seed in 0..20 {
            let mut p = page(seed);
            if seed % 2 == 0 {
                p[..3000].fill(b'a'); // some compressible ones too
            }
            let whole = incompressible(&[IoSlice::new(&p)], 4096);
            for step in [1usize, 7, 100, 4095] {
                let frags: Vec<IoSlice<'_>> = p.chunks(step).map(IoSlice::new).collect();
                let mut with_empty = frags.clone();
                with_empty.insert(1, IoSlice::new(&[]));
                assert_eq!(incompressible(&frags, 4096), whole, "{seed} {step}");
                assert_eq!(incompressible(&with_empty, 4096), whole, "{seed} {step}");
            }
        }
    }
}
