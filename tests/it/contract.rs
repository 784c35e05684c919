//! What the docs promise about corruption, held for the defaults and with a checksum:
//! without a checksum a change inside a block's content can decode as `Ok` with other bytes
//! (never of another length); with one, every change is `EBADMSG` or leaves the output as
//! it was (an ignored bit of the frame header).

use crate::common::surgery;
use crate::common::*;
use acomp::{Acomp, ErrorKind, ZstdParams};

/// Every single-bit flip of `frame`: what decompression into a page says.
fn flips(tfm: &Acomp, frame: &[u8]) -> Vec<(usize, Result<Bytes, acomp::Error>)> {
    let mut out = Vec::new();
    for i in 0..frame.len() {
        for bit in [0, 3, 7] {
            let mut f = frame.to_vec();
            f[i] ^= 1 << bit;
            let cut = if i % 2 == 0 {
                Cut::One
            } else {
                Cut::Random(i as u64)
            };
            out.push((i, decompress(tfm, &f, cut, 4096, cut)));
        }
    }
    out
}

#[test]
fn default_frames_say_what_the_docs_say() {
    let tfm = Acomp::new("zstd").unwrap();
    // A raw block (random page): a flip in its content decodes as Ok with that one byte
    // changed. That is the documented limit of a frame without a checksum.
    let page = random_bytes(4096, 1);
    let frame = compress(&tfm, &page, Cut::One, 8192, Cut::One).unwrap().0;
    let block = surgery::blocks(&frame)[0];
    assert_eq!(block.kind, 0, "a raw block");
    let at = block.at + 3 + 100;
    let mut f = frame.clone();
    f[at] ^= 0x10;
    let got = decompress(&tfm, &f, Cut::Every(1), 4096, Cut::Every(1)).unwrap();
    let changed: Vec<usize> = (0..4096).filter(|&i| got[i] != page[i]).collect();
    assert_eq!(changed, vec![100]);

    // A compressed block (text): every flip is EBADMSG, EINVAL (a window flag) or Ok with
    // a page of the same length; some flips pass unseen, as the docs say.
    let page = letters(4096, 2);
    let frame = compress(&tfm, &page, Cut::One, 8192, Cut::One).unwrap().0;
    let mut unseen = 0;
    for (i, got) in flips(&tfm, &frame) {
        match got {
            Ok(out) => {
                assert_eq!(out.len(), 4096, "flip at {i}");
                unseen += usize::from(out != page);
            }
            Err(e) => assert!(
                [ErrorKind::Corrupt, ErrorKind::Invalid].contains(&e.kind()),
                "flip at {i}: {e}"
            ),
        }
    }
    assert!(
        unseen > 0,
        "no flip passed unseen: the docs would say too little"
    );
}

#[test]
fn checksummed_frames_catch_every_change() {
    let tfm = Acomp::with_zstd(ZstdParams::default().checksum(true)).unwrap();
    for page in [letters(4096, 3), random_bytes(4096, 4), vec![9; 4096]] {
        let frame = compress(&tfm, &page, Cut::One, 8192, Cut::One).unwrap().0;
        let mut same = 0;
        for (i, got) in flips(&tfm, &frame) {
            match got {
                Ok(out) => {
                    assert!(out == page, "flip at {i} gave other bytes");
                    same += 1;
                }
                Err(e) => assert!(
                    [ErrorKind::Corrupt, ErrorKind::Invalid].contains(&e.kind()),
                    "flip at {i}: {e}"
                ),
            }
        }
        // Bits the decoder does not read (padding in entropy tables, a header bit zstd
        // ignores) leave the output as it was: few of them.
        assert!(
            same * 100 < frame.len() * 3,
            "{same} flips left the page as it was"
        );
    }
}
