//! Larger compression units: `ZstdParams::block_size_max` makes a unit of pages a frame of
//! page-sized blocks, standard zstd, out of which a range read takes a single page and stops.

use std::io::IoSlice;

use crate::common::surgery;
use crate::common::*;
use acomp::{Acomp, Error, Segment, ZstdParams};
use proptest::prelude::*;

const PAGE: usize = 4096;

/// A transform writing page-sized blocks.
fn paged(level: i32) -> Acomp {
    Acomp::with_zstd(
        ZstdParams::default()
            .level(level)
            .block_size_max(PAGE as u32),
    )
    .unwrap()
}

/// `pages` pages as memory holds them: text-like pages that repeat across the unit (the
/// redundancy a unit finds), a zero page and an incompressible one where there is room.
fn unit(pages: usize, seed: u64) -> Vec<u8> {
    let mut v = Vec::with_capacity(pages * PAGE);
    for i in 0..pages {
        match i % 7 {
            3 => v.extend_from_slice(&[0; PAGE]),
            5 => v.extend_from_slice(&random_bytes(PAGE, seed ^ i as u64)),
            k => v.extend_from_slice(&letters(PAGE, seed.wrapping_add(k as u64 % 3))),
        }
    }
    v
}

/// Page `k` of `frame` by a range read of one segment, the source cut as `cut`.
fn read_page(tfm: &Acomp, frame: &[u8], cut: Cut, k: usize) -> Result<(usize, Vec<u8>), Error> {
    let mut page = vec![0xEE; PAGE];
    let n = tfm.decompress_range(
        &split(frame, cut),
        &mut [Segment::new((k * PAGE) as u64, &mut page)],
    )?;
    Ok((n, page))
}

#[test]
fn block_size_limit_out_of_range_is_einval() {
    for bytes in [0, 1, 1023, 131_073, u32::MAX] {
        let err = Acomp::with_zstd(ZstdParams::default().block_size_max(bytes)).unwrap_err();
        assert_eq!(err.errno(), libc::EINVAL, "{bytes}");
        assert!(matches!(err, Error::InvalidParameter { .. }), "{bytes}");
    }
    for bytes in [1024, 4096, 131_072] {
        Acomp::with_zstd(ZstdParams::default().block_size_max(bytes)).unwrap();
    }
}

/// A 64 KiB unit becomes 16 or more blocks, none holding more than a page, and plain zstd
/// reads the frame back; without the limit it is one block.
#[test]
fn units_are_frames_of_page_sized_blocks_that_plain_zstd_reads() {
    for level in [-5, 1, 3, 9] {
        for pages in [1, 2, 4, 11, 16, 32] {
            let data = unit(pages, 7);
            let frame = frame_of(&paged(level), &data);
            let blocks = surgery::blocks(&frame);
            assert!(blocks.len() >= pages, "level {level}, {pages} pages");
            for b in &blocks {
                if b.kind != 2 {
                    assert!(b.size <= PAGE, "level {level}: {b:?}");
                }
            }
            assert_eq!(zstd::bulk::decompress(&frame, data.len()).unwrap(), data);
            let mut back = Vec::new();
            paged(level)
                .decompress_to_vec(&frame, &mut back, 1 << 20)
                .unwrap();
            assert!(back == data);
        }
        let whole = Acomp::with_zstd(ZstdParams::default().level(level)).unwrap();
        let frame = frame_of(&whole, &unit(16, 7));
        assert_eq!(surgery::blocks(&frame).len(), 1, "level {level}");
    }
}

/// Reading page 0 of a 64 KiB unit whose tail is gone decodes block 0 and stops before the
/// damage; reading its last page reaches it. A frame of one 64 KiB block has no such luck.
#[test]
fn a_page_read_stops_before_a_corrupt_tail() {
    let data = unit(16, 3);
    let tfm = paged(3);
    let frame = frame_of(&tfm, &data);
    let blocks = surgery::blocks(&frame);
    let last = blocks.last().unwrap();
    // Cut inside the last block, and also garble every byte of the last two blocks.
    let mut garbled = frame.clone();
    let from = blocks[blocks.len() - 2].at;
    garbled[from..].iter_mut().for_each(|b| *b = 0xFF);
    for bad in [frame[..last.at + 2].to_vec(), garbled] {
        for cut in [Cut::One, Cut::Every(100), Cut::Random(3)] {
            let (n, page) = read_page(&tfm, &bad, cut, 0).unwrap();
            assert_eq!(n, PAGE);
            assert!(page == data[..PAGE], "{cut:?}");
            let (_, page) = read_page(&tfm, &bad, cut, 1).unwrap();
            assert!(page == data[PAGE..2 * PAGE], "{cut:?}");
            let err = read_page(&tfm, &bad, cut, 15).unwrap_err();
            assert_eq!(err.errno(), libc::EBADMSG, "{cut:?}");
        }
    }
    let one_block = frame_of(&Acomp::new("zstd").unwrap(), &data);
    let cut_short = &one_block[..one_block.len() - 10];
    let err = read_page(&tfm, cut_short, Cut::One, 0).unwrap_err();
    assert_eq!(err.errno(), libc::EBADMSG);
}

/// With the limit set, one-shot and stream compression still write the same frame on every
/// cut, at every size around a block, a unit, and zstd's own block maximum.
#[test]
fn small_block_frames_are_identical_on_every_cut() {
    let mut inputs = exe_prefixes(&[0, 1, 4095, 4096, 4097, 16_384, 65_536, 131_072, 200_000]);
    inputs.push(unit(16, 1));
    let cuts = [
        (Cut::Every(4096), Cut::One),
        (Cut::One, Cut::Every(4096)),
        (Cut::Every(1000), Cut::Every(1)),
        (Cut::Random(5), Cut::Random(6)),
    ];
    for level in [-5, 1, 3, 9] {
        for bytes in [1024, 4096, 16_384] {
            let tfm =
                Acomp::with_zstd(ZstdParams::default().level(level).block_size_max(bytes)).unwrap();
            for data in &inputs {
                let what = format!("level {level}, blocks {bytes}");
                let one = same_frame_on_every_cut(&tfm, data, &cuts, &what);
                assert_eq!(zstd::bulk::decompress(&one, data.len()).unwrap(), **data);
            }
        }
    }
}

fn frame_of(tfm: &Acomp, data: &[u8]) -> Vec<u8> {
    let mut frame = Vec::new();
    tfm.compress_to_vec(data, &mut frame).unwrap();
    frame
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 32, ..ProptestConfig::default() })]

    /// Units of 1, 4 and 16 pages, some cut short at the end of the input: every page read
    /// alone, the last included, and the whole unit, through random cuts of the frame, give
    /// exactly the unit's bytes.
    #[test]
    fn pages_come_out_of_units_one_by_one_and_whole(pages in prop::sample::select(vec![1usize, 4, 16]),
                                                    short in 0usize..4, seed in any::<u64>(),
                                                    level in prop::sample::select(vec![-1, 3]),
                                                    c1 in any::<u64>(), c2 in any::<u64>()) {
        let pages = pages - short.min(pages - 1);
        let data = unit(pages, seed);
        let tfm = paged(level);
        let frame = compress(&tfm, &data, Cut::Random(c1), data.len() + 1024, Cut::Random(c2)).unwrap();
        for k in 0..pages {
            let (n, page) = read_page(&tfm, &frame, Cut::Random(c1 ^ k as u64), k).unwrap();
            prop_assert_eq!(n, PAGE);
            prop_assert!(page == data[k * PAGE..(k + 1) * PAGE], "page {} of {}", k, pages);
        }
        // Past the unit's end: nothing delivered, the page zero-filled.
        let (n, page) = read_page(&tfm, &frame, Cut::One, pages).unwrap();
        prop_assert_eq!(n, 0);
        prop_assert!(page.iter().all(|&b| b == 0));
        let back = decompress(&tfm, &frame, Cut::Random(c2), data.len(), Cut::Every(PAGE)).unwrap();
        prop_assert!(back == data);
        // Several pages in one read, with a gap.
        if pages >= 5 {
            let (mut a, mut b) = (vec![0u8; PAGE], vec![0u8; 2 * PAGE]);
            let n = tfm.decompress_range(&[IoSlice::new(&frame)],
                &mut [Segment::new(PAGE as u64, &mut a), Segment::new(2 * PAGE as u64 + PAGE as u64, &mut b)]).unwrap();
            prop_assert_eq!(n, 3 * PAGE);
            prop_assert!(a == data[PAGE..2 * PAGE] && b == data[3 * PAGE..5 * PAGE]);
        }
    }
}
