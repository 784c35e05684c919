//! Valid frames with random single-byte mutations, truncations and appended bytes: the
//! outcome is identical across random cuts, every error is one of the four kinds, and
//! `ENOSPC` comes only where a larger destination succeeds.

use crate::common::*;
use acomp::{Acomp, Error, ZstdParams};
use proptest::prelude::*;

#[derive(Debug, Clone)]
enum Mutation {
    /// XOR the byte at this position (modulo the length) with a non-zero mask.
    Flip(usize, u8),
    /// Keep this many bytes (modulo the length).
    Truncate(usize),
    /// Append these bytes.
    Append(Vec<u8>),
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        (any::<usize>(), 1u8..=255).prop_map(|(p, m)| Mutation::Flip(p, m)),
        any::<usize>().prop_map(Mutation::Truncate),
        proptest::collection::vec(any::<u8>(), 1..40).prop_map(Mutation::Append),
    ]
}

fn apply(frame: &[u8], m: &Mutation) -> Vec<u8> {
    let mut f = frame.to_vec();
    match m {
        Mutation::Flip(p, mask) => {
            let i = p % f.len();
            f[i] ^= mask;
        }
        Mutation::Truncate(n) => f.truncate(n % f.len()),
        Mutation::Append(tail) => f.extend_from_slice(tail),
    }
    f
}

fn four_kinds(e: &Error) -> bool {
    [libc::ENOSPC, libc::EBADMSG, libc::EINVAL, libc::ENOMEM].contains(&e.errno())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 400, ..ProptestConfig::default() })]

    #[test]
    fn mutated_frames_same_outcome_on_every_cut(
        len in 0usize..40_000,
        seed in any::<u64>(),
        period in prop_oneof![Just(0usize), 1usize..20],
        checksum in any::<bool>(),
        content_size in any::<bool>(),
        level in -3i32..6,
        m in mutation(),
        cap_extra in -200i64..200,
        c1 in cut_strategy(5000), c2 in cut_strategy(5000),
    ) {
        let data = if period == 0 {
            letters(len, seed)
        } else {
            // Periodic data (zero and same-filled pages among it): frames of one sequence,
            // which the one-shot path decodes itself.
            letters(period, seed).into_iter().cycle().take(len).collect()
        };
        let params = ZstdParams::default().checksum(checksum).content_size(content_size).level(level);
        let tfm = Acomp::with_zstd(params).unwrap();
        let frame = compress(&tfm, &data, Cut::One, len + 100, Cut::One).unwrap();
        let bad = apply(&frame, &m);
        let cap = (len as i64 + cap_extra).max(0) as usize;
        let one = decompress(&tfm, &bad, Cut::One, cap, Cut::One);
        let cut = decompress(&tfm, &bad, c1, cap, c2);
        prop_assert!(same_outcome(&one, &cut), "{:?} vs {:?}", one, cut);
        match one {
            Ok(out) => prop_assert!(out.len() <= cap),
            Err(e) => {
                prop_assert!(four_kinds(&e), "{e}");
                if let Error::NoSpace { needed, .. } = e {
                    // A destination of the size needed succeeds, on both cuts.
                    let needed = needed.expect("decompression knows the size it needs") as usize;
                    prop_assert!(needed > cap);
                    let ok = decompress(&tfm, &bad, c2, needed, c1);
                    prop_assert_eq!(ok.as_ref().map(|b| b.len()), Ok(needed));
                    let one = decompress(&tfm, &bad, Cut::One, needed, Cut::One);
                    prop_assert!(same_outcome(&ok, &one));
                }
            }
        }
        // The workspace serves the intact frame right after, on both paths.
        prop_assert!(decompress(&tfm, &frame, c2, len, c1).unwrap() == data);
        prop_assert!(decompress(&tfm, &frame, Cut::One, len, Cut::One).unwrap() == data);
    }
}
