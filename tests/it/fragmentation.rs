//! Fragmentation never changes the outcome: same bytes on success, same error kind on
//! failure, whatever way source and destination are cut.

use crate::common::*;
use acomp::{Acomp, Error, ZstdParams};
use proptest::prelude::*;

/// Compressed frames are byte-identical on every cut, at every size around the one-shot
/// limit (one block) and its multiples, so that whether a frame fits a destination never
/// depends on the cut either.
#[test]
fn compressed_frames_are_identical_on_every_cut() {
    let mut inputs = exe_prefixes(&[
        0, 1, 4096, 65536, 131_071, 131_072, 131_073, 262_144, 300_000,
    ]);
    inputs.push(letters(200_000, 3));
    let cuts = [
        (Cut::Every(4096), Cut::One),
        (Cut::One, Cut::Every(4096)),
        (Cut::Every(131_072), Cut::One),
        (Cut::Random(5), Cut::Random(6)),
        (Cut::One, Cut::Every(1)),
    ];
    for level in [-5, 1, 3, 9] {
        let tfm = Acomp::with_zstd(ZstdParams::default().level(level)).unwrap();
        for data in &inputs {
            same_frame_on_every_cut(&tfm, data, &cuts, &format!("level {level}"));
        }
    }
}

/// Random data: compressible (from a small alphabet with repeats) or not.
fn data_strategy() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        proptest::collection::vec(any::<u8>(), 0..300 * 1024),
        (0usize..300 * 1024, any::<u64>(), 1u8..20).prop_map(|(len, seed, alphabet)| {
            let mut v = letters(len, seed);
            v.iter_mut()
                .for_each(|b| *b = b'a' + (*b - b'a') % alphabet);
            v
        }),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    /// Compressed through random cuts and decompressed through other random cuts: back to
    /// the same bytes, and the same frame and output as with one fragment each side.
    #[test]
    fn round_trip_through_random_cuts(data in data_strategy(), c1 in cut_strategy(9000), c2 in cut_strategy(9000),
                                      c3 in cut_strategy(9000), c4 in cut_strategy(9000)) {
        let tfm = Acomp::new("zstd").unwrap();
        let cap = zstd_safe::compress_bound(data.len());
        let frame = compress(&tfm, &data, c1, cap, c2).unwrap();
        prop_assert_eq!(&frame, &compress(&tfm, &data, Cut::One, cap, Cut::One).unwrap());
        let back = decompress(&tfm, &frame, c3, data.len(), c4).unwrap();
        prop_assert!(back == data);
        prop_assert!(decompress(&tfm, &frame, Cut::One, data.len(), Cut::One).unwrap() == data);
        // One byte short: the same ENOSPC with the size needed, on both cuts.
        if !data.is_empty() {
            let want = Error::NoSpace { needed: Some(data.len() as u64), capacity: data.len() - 1 };
            prop_assert_eq!(decompress(&tfm, &frame, c3, data.len() - 1, c4).unwrap_err(), want.clone());
            prop_assert_eq!(decompress(&tfm, &frame, Cut::One, data.len() - 1, Cut::One).unwrap_err(), want);
        }
    }

    /// With a block limit (`ZstdParams::block_size_max`, a unit of pages as page-sized
    /// blocks): the same frame on random cuts as from one fragment, and back to the bytes.
    #[test]
    fn small_blocks_same_frame_through_random_cuts(data in data_strategy(), kib in 1u32..=128,
                                                   c1 in cut_strategy(9000), c2 in cut_strategy(9000)) {
        let tfm = Acomp::with_zstd(ZstdParams::default().block_size_max(kib * 1024)).unwrap();
        let cap = zstd_safe::compress_bound(data.len());
        let frame = compress(&tfm, &data, c1, cap, c2).unwrap();
        prop_assert_eq!(&frame, &compress(&tfm, &data, Cut::One, cap, Cut::One).unwrap());
        prop_assert!(decompress(&tfm, &frame, c2, data.len(), c1).unwrap() == data);
    }

    /// A frame without content size (as the kernel writes them), random destination sizes:
    /// the outcome on random cuts equals the one-fragment outcome.
    #[test]
    fn frames_without_size_any_capacity(len in 0usize..200_000, seed in any::<u64>(), extra in -3i64..100_000,
                                        c1 in cut_strategy(9000), c2 in cut_strategy(9000)) {
        let data = letters(len, seed);
        let frame = frame_without_size(&data, 3, 0);
        let cap = (len as i64 + extra).max(0) as usize;
        let tfm = Acomp::new("zstd").unwrap();
        let one = decompress(&tfm, &frame, Cut::One, cap, Cut::One);
        let cut = decompress(&tfm, &frame, c1, cap, c2);
        prop_assert_eq!(&one, &cut);
        if cap >= len {
            prop_assert!(one.unwrap() == data);
        }
    }
}
