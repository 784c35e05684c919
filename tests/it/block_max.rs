//! A block larger than its frame's block maximum (RFC 8878 §3.1.1.2.4:
//! `Block_Maximum_Size = min(Window_Size, 128 KiB)`) is corrupt input: `EBADMSG` on every
//! path, every cut, every destination size and in range reads, for every block type and
//! both limits. libzstd's one-shot decoder takes such a raw or RLE block, and its streaming
//! decoder takes it or not depending on the cut; acomp reads each block header itself.

use crate::common::surgery::{self, Block};
use crate::common::*;
use acomp::{Acomp, Error, Segment};
use proptest::prelude::*;
use zstd_safe::{CCtx, CParameter};

/// Data whose frame has raw blocks (random bytes), RLE blocks (zeros after the first
/// block) and compressed blocks (letters), `block` bytes each.
fn data(block: usize, seed: u64) -> Vec<u8> {
    let mut d = letters(block, seed);
    d.extend(random_bytes(block * 2, seed));
    d.extend(vec![0u8; block * 2]);
    d.extend(letters(block, seed + 1));
    d
}

/// A real frame of `data` with this window; with or without the content size.
fn real_frame(data: &[u8], window_log: u32, with_size: bool) -> Vec<u8> {
    if !with_size {
        return frame_without_size(data, 3, window_log);
    }
    let mut cctx = CCtx::create();
    cctx.set_parameter(CParameter::WindowLog(window_log))
        .unwrap();
    let mut f = vec![0u8; zstd_safe::compress_bound(data.len())];
    let n = cctx.compress2(&mut f[..], data).unwrap();
    f.truncate(n);
    f
}

/// What decompression, a small destination and a range read to the end all say, on `cut`.
fn outcomes(tfm: &Acomp, frame: &[u8], len: usize, cut: Cut) -> Vec<Result<Bytes, Error>> {
    let mut out = vec![
        decompress(tfm, frame, cut, len + 64, cut),
        decompress(tfm, frame, cut, len / 2, Cut::One),
    ];
    let mut buf = vec![0u8; len + 64];
    let mut segs = [Segment::new(0, &mut buf)];
    out.push(
        tfm.decompress_range(&split(frame, cut), &mut segs)
            .map(|_| Bytes(vec![])),
    );
    out
}

/// The frame with `block` grown to `block_max + over` bytes (content inserted where the
/// block type carries it, the content size adjusted where the header declares one).
fn grown(frame: &[u8], block: &Block, over: usize, seed: u64) -> Vec<u8> {
    let h = surgery::header(frame);
    let size = surgery::block_max(h.window) as usize + over;
    let f = surgery::with_block_size(frame, block, size, &random_bytes(64, seed));
    match surgery::content_size(frame, &h) {
        Some(cs) if block.kind != 2 => {
            let cs = cs + (size - block.size) as u64;
            surgery::with_content_size(&f, h.fcs_width, Some(cs))
                .or_else(|| surgery::with_content_size(&f, 8, Some(cs)))
                .unwrap()
        }
        _ => f,
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 32, ..ProptestConfig::default() })]

    #[test]
    fn a_block_over_the_maximum_is_corrupt_on_every_cut(
        // 1 KiB and 64 KiB windows: the window is the limit; 256 KiB: 128 KiB is.
        window_log in prop_oneof![Just(10u32), Just(16), Just(18)],
        kind in 0u8..3,
        with_size in any::<bool>(),
        over in prop_oneof![Just(1usize), 2usize..5000],
        pick in any::<usize>(),
        seed in any::<u64>(),
    ) {
        let block = (1usize << window_log).min(128 * 1024);
        let data = data(block, seed % 1000);
        let frame = real_frame(&data, window_log, with_size);
        let blocks: Vec<Block> = surgery::blocks(&frame)
            .into_iter()
            .filter(|b| b.kind == kind)
            .collect();
        prop_assert!(!blocks.is_empty(), "no block of kind {kind}");
        let bad = grown(&frame, &blocks[pick % blocks.len()], over, seed);
        let tfm = Acomp::new("zstd").unwrap();
        let cuts = [Cut::One, Cut::Every(4096), Cut::Random(seed), Cut::Random(!seed)];
        for cut in cuts {
            // The frame as zstd wrote it holds: a control.
            prop_assert!(decompress(&tfm, &frame, cut, data.len(), cut).unwrap() == data);
            for (i, got) in outcomes(&tfm, &bad, data.len(), cut).into_iter().enumerate() {
                let err = got.unwrap_err();
                prop_assert_eq!(err.errno(), libc::EBADMSG, "request {} {:?}: {}", i, cut, err);
            }
        }
    }
}

/// Hand-written frames at the boundary: a raw or RLE block of exactly the maximum holds,
/// one byte more is corrupt; on 1-byte fragments too.
#[test]
fn the_maximum_itself_holds_one_byte_more_does_not() {
    let tfm = Acomp::new("zstd").unwrap();
    for window_log in [10u8, 12, 17, 20] {
        let max = (1usize << window_log).min(128 * 1024);
        for kind in [0u8, 1] {
            for (size, ok) in [(max, true), (max + 1, false)] {
                let content = if kind == 0 {
                    letters(size, 5)
                } else {
                    vec![0xAB; size]
                };
                let frame = surgery::hand_frame(window_log, &[(kind, content.clone())]);
                for (s, d) in [(Cut::One, Cut::One), (Cut::Every(1), Cut::Every(7))] {
                    let got = decompress(&tfm, &frame, s, size + 10, d);
                    if ok {
                        assert!(got.unwrap() == content, "{window_log} {kind} {size}");
                    } else {
                        assert_eq!(
                            got.unwrap_err(),
                            Error::Corrupt {
                                detail: "block larger than the frame's block maximum"
                            },
                            "{window_log} {kind} {size} {s:?}"
                        );
                    }
                }
            }
        }
    }
}

/// With the content size declared too, the one-shot path meets these frames first: it must
/// give them to the stream path rather than take them.
#[test]
fn the_one_shot_path_refuses_what_the_stream_path_refuses() {
    let tfm = Acomp::new("zstd").unwrap();
    let content = letters(2000, 1);
    let frame = surgery::hand_frame(10, &[(0, content.clone())]);
    let frame = surgery::with_content_size(&frame, 2, Some(2000)).unwrap();
    let before = tfm.stats();
    let err = decompress(&tfm, &frame, Cut::One, 2000, Cut::One).unwrap_err();
    assert_eq!(err.errno(), libc::EBADMSG);
    let after = tfm.stats();
    assert_eq!(
        (after.one_shot, after.corrupt),
        (before.one_shot, before.corrupt + 1)
    );
    // libzstd's one-shot decoder alone takes it: the fault acomp closes.
    assert_eq!(zstd::bulk::decompress(&frame, 2000).unwrap(), content);
}
