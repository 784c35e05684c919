//! Frames of one raw or RLE block, which the one-shot path copies or fills itself rather
//! than through zstd: the same outcome as the stream path on every cut and in a batch,
//! valid or not (content size, checksum, dictionary ID, block maximum, trailing bytes), and
//! nothing written past the output.

mod common;

use std::io::{IoSlice, IoSliceMut};

use acomp::{Acomp, Request};
use common::*;

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
        let content = common::decompress(&tfm, src, Cut::Every(7), 1 << 14, Cut::Every(5));
        assert_eq!(content.is_ok(), *valid, "{what}: {content:?}");
        let len = content.as_ref().map_or(4096, |c| c.len());
        for cap in [len - 1, len, len + 100] {
            let streamed = common::decompress(&tfm, src, Cut::Every(7), cap, Cut::Every(5));
            for (scut, dcut) in all_cut_pairs() {
                let got = common::decompress(&tfm, src, scut, cap, dcut);
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
