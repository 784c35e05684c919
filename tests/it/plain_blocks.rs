//! Frames of one raw or RLE block, which the one-shot path copies or fills itself rather
//! than through zstd: the same outcome as the stream path on every cut and in a batch,
//! valid or not (content size, checksum, dictionary ID, block maximum, trailing bytes), and
//! nothing written past the output.

use std::io::{IoSlice, IoSliceMut};

use crate::common::*;
use acomp::{Acomp, Request};

/// A single-segment frame with a 2-byte content size field (256 to 65791 bytes) and one
/// last block of `kind` (0 raw, 1 RLE) and `size`, its content `body`; `fhd_extra` adds
/// descriptor bits (4: checksum, 1: a 1-byte dictionary ID of 9).
fn frame(content_size: u16, kind: u32, size: u32, body: &[u8], fhd_extra: u8) -> Vec<u8> {
    let mut f = 0xFD2F_B528u32.to_le_bytes().to_vec();
    f.push(0x60 | fhd_extra);
    if fhd_extra & 1 != 0 {
        f.push(9);
    }
    f.extend_from_slice(&(content_size - 256).to_le_bytes());
    f.extend_from_slice(&(1 | kind << 1 | size << 3).to_le_bytes()[..3]);
    f.extend_from_slice(body);
    f
}

#[test]
fn raw_and_rle_blocks_agree_with_the_stream_path() {
    let page = random_bytes(4096, 5);
    let raw = frame(4096, 0, 4096, &page, 0);
    let rle = frame(4096, 1, 4096, &[0xAB], 0);
    let cases: Vec<(&str, Vec<u8>, bool)> = vec![
        ("raw", raw.clone(), true),
        ("rle", rle.clone(), true),
        (
            "raw, content size larger",
            frame(4097, 0, 4096, &page, 0),
            false,
        ),
        (
            "raw, content size smaller",
            frame(4095, 0, 4096, &page, 0),
            false,
        ),
        (
            "rle, content size smaller",
            frame(4000, 1, 4096, &[7], 0),
            false,
        ),
        (
            "rle over the block maximum",
            frame(300, 1, 301, &[7], 0),
            false,
        ),
        ("raw, truncated", raw[..raw.len() - 1].to_vec(), false),
        ("raw, trailing byte", [&raw[..], &[0]].concat(), false),
        ("rle, trailing byte", [&rle[..], &[0]].concat(), false),
        (
            "raw, wrong checksum",
            [&frame(4096, 0, 4096, &page, 4)[..], &[1, 2, 3, 4]].concat(),
            false,
        ),
        (
            "raw, unknown dictionary",
            frame(4096, 0, 4096, &page, 1),
            false,
        ),
        (
            "raw, then a skippable frame",
            [&raw[..], &skippable_frame(b"x")].concat(),
            true,
        ),
        ("raw twice", [&raw[..], &raw[..]].concat(), true),
    ];
    let tfm = Acomp::new("zstd").unwrap();
    for (what, src, valid) in &cases {
        let content = crate::common::decompress(&tfm, src, Cut::Every(7), 1 << 14, Cut::Every(5));
        assert_eq!(content.is_ok(), *valid, "{what}: {content:?}");
        let len = content.as_ref().map_or(4096, |c| c.len());
        for cap in [len - 1, len, len + 100] {
            let streamed = crate::common::decompress(&tfm, src, Cut::Every(7), cap, Cut::Every(5));
            for (scut, dcut) in all_cut_pairs() {
                let got = crate::common::decompress(&tfm, src, scut, cap, dcut);
                assert!(
                    same_outcome(&got, &streamed),
                    "{what}, {cap}, {scut:?}/{dcut:?}: {got:?}"
                );
            }
            // One-shot into a canary-filled destination, alone and in a batch.
            let mut outs = [vec![0xEEu8; cap], vec![0xEEu8; cap]];
            let one = [IoSlice::new(src)];
            let [a, b] = &mut outs;
            let n = tfm.decompress(&one, &mut [IoSliceMut::new(a)]);
            let mut dst = [IoSliceMut::new(b)];
            let mut reqs = [Request::new(&one, &mut dst)];
            tfm.decompress_batch(&mut reqs);
            let batch = reqs[0].outcome().unwrap().clone();
            assert_eq!(
                n.as_ref().map_err(|e| e.errno()),
                batch.as_ref().map_err(|e| e.errno())
            );
            if let Ok(n) = n {
                assert_eq!(
                    Ok(&outs[0][..n]),
                    streamed.as_ref().map(|b| &b[..]),
                    "{what}"
                );
                for out in &outs {
                    assert_eq!(&out[..n], &outs[0][..n]);
                    assert!(
                        out[n..].iter().all(|&x| x == 0xEE),
                        "{what}: written past the output"
                    );
                }
            }
        }
    }
    // The raw frame's bytes are the page's; the RLE frame's, its byte repeated.
    let mut out = [0u8; 4096];
    assert_eq!(tfm.decompress_to_buffer(&raw, &mut out), Ok(4096));
    assert_eq!(&out[..], &page[..]);
    assert_eq!(tfm.decompress_to_buffer(&rle, &mut out), Ok(4096));
    assert!(out.iter().all(|&x| x == 0xAB));
}

/// zstd's frame of `page`: one compressed block of one sequence for a periodic page.
fn zstd_frame(page: &[u8], level: i32) -> Vec<u8> {
    zstd::bulk::compress(page, level).unwrap()
}

/// Frames of one compressed block holding one sequence (zero, same-filled and other
/// periodic pages), which the one-shot path decodes itself: the stream path's outcome
/// (libzstd) for every one-byte change of the frame, at three destination sizes, and in a
/// batch; nothing written past the output.
#[test]
fn one_sequence_blocks_agree_with_the_stream_path_under_every_one_byte_change() {
    let tfm = Acomp::new("zstd").unwrap();
    let mut checked = 0;
    for (unit, size, level) in [
        (&[0u8][..], 4096, 3),
        (&0x0123_4567_89ab_cdefu64.to_le_bytes()[..], 4096, 1),
        (&[1, 2, 3][..], 1000, 19),
        (&[9; 40][..], 20_000, -5),
    ] {
        let page: Vec<u8> = unit.iter().copied().cycle().take(size).collect();
        let frame = zstd_frame(&page, level);
        let mut out = vec![0u8; size];
        assert_eq!(tfm.decompress_to_buffer(&frame, &mut out), Ok(size));
        assert_eq!(out, page);
        for at in 0..frame.len() {
            for mask in [1u8, 2, 4, 8, 16, 32, 64, 128, 0xff] {
                let mut bad = frame.clone();
                bad[at] ^= mask;
                for cap in [size - 1, size, size + 100] {
                    let streamed =
                        crate::common::decompress(&tfm, &bad, Cut::Every(3), cap, Cut::Every(5));
                    let mut canary = vec![0xEEu8; cap];
                    let one = tfm.decompress_to_buffer(&bad, &mut canary);
                    assert_eq!(
                        one.as_ref().map(|&n| &canary[..n]).map_err(|e| e.errno()),
                        streamed.as_ref().map(|b| &b[..]).map_err(|e| e.errno()),
                        "byte {at} ^ {mask:#x}, destination {cap}"
                    );
                    if let Ok(n) = one {
                        assert!(canary[n..].iter().all(|&x| x == 0xEE), "past the output");
                    }
                    let mut batch_out = vec![0u8; cap];
                    let src = [IoSlice::new(&bad)];
                    let mut dst = [IoSliceMut::new(&mut batch_out)];
                    let mut reqs = [Request::new(&src, &mut dst)];
                    tfm.decompress_batch(&mut reqs);
                    let batch = reqs[0].outcome().unwrap().clone();
                    assert_eq!(batch.map_err(|e| e.errno()), one.map_err(|e| e.errno()));
                    checked += 1;
                }
            }
        }
    }
    assert!(checked > 1000);
}

/// A frame without dictionary ID is read with the transform's dictionary of ID 0, where it
/// has one (zstd's rule): its repeat offsets are the dictionary's, not 1, 4, 8. Here a
/// structured dictionary of ID 0 whose first repeat offset is 2 turns zstd's frame of
/// `a b b b ...` (literals `ab`, then the repeat offset 1 for 4094 bytes) into `a b a b ...`
/// on the one-shot path as on the stream path.
#[test]
fn one_sequence_block_takes_its_repeat_offsets_from_a_dictionary_of_id_0() {
    use acomp::{Dictionary, ZstdParams};
    let samples: Vec<Vec<u8>> = (0..200).map(|i| letters(1000, i)).collect();
    let refs: Vec<&[u8]> = samples.iter().map(|s| &s[..]).collect();
    let mut dict = Dictionary::train(&refs, 4096).unwrap().as_bytes().to_vec();
    dict[4..8].copy_from_slice(&[0; 4]); // the ID
    // zstd's trainer writes the repeat offsets 1, 4, 8 between the tables and the content.
    let reps: Vec<u8> = [1u32, 4, 8].iter().flat_map(|r| r.to_le_bytes()).collect();
    let at = dict
        .windows(12)
        .position(|w| w == reps)
        .expect("repeat offsets");
    dict[at] = 2;
    let tfm =
        Acomp::with_zstd(ZstdParams::default().dictionary(Dictionary::from_bytes(&dict).unwrap()))
            .unwrap();

    let mut page = vec![b'b'; 4096];
    page[0] = b'a';
    let frame = zstd_frame(&page, 3);
    assert_eq!(frame[4] & 3, 0, "no dictionary ID field");
    let abab: Vec<u8> = b"ab".iter().copied().cycle().take(4096).collect();
    let streamed = crate::common::decompress(&tfm, &frame, Cut::Every(3), 4096, Cut::Every(5));
    assert_eq!(streamed.as_ref().map(|b| &b[..]), Ok(&abab[..]));
    let mut out = vec![0u8; 4096];
    assert_eq!(tfm.decompress_to_buffer(&frame, &mut out), Ok(4096));
    assert_eq!(out, abab);
    // Without the dictionary, the same frame is the page.
    assert_eq!(
        Acomp::new("zstd")
            .unwrap()
            .decompress_to_buffer(&frame, &mut out),
        Ok(4096)
    );
    assert_eq!(out, page);
}
