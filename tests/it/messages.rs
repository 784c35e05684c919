//! Errors in acomp's words, each message exact: bytes after the last zstd frame (how many),
//! a source that is no zstd frame at all, a zstd frame given to the lz4 transform, an empty
//! dictionary. On every path and cut, as the rest of the contract.

use std::io::{IoSlice, IoSliceMut};

use crate::common::{Cut, all_cut_pairs, compress, decompress, letters, skippable_frame};
use acomp::{Acomp, Dictionary, Error, ErrorKind, Request, Segment};

/// Every decompression call's outcome and message for `src` into `cap` bytes.
fn every_call(tfm: &Acomp, src: &[u8], cap: usize) -> Vec<(String, Result<usize, String>)> {
    let mut all = Vec::new();
    let msg = |r: Result<usize, Error>| r.map_err(|e| e.to_string());
    for (s, d) in all_cut_pairs() {
        let res = decompress(tfm, src, s, cap, d).map(|b| b.len());
        all.push((format!("{s:?}/{d:?}"), msg(res)));
    }
    let mut out = vec![0u8; cap];
    all.push((
        "to_buffer".into(),
        msg(tfm.decompress_to_buffer(src, &mut out)),
    ));
    let mut v = Vec::new();
    all.push((
        "to_vec".into(),
        msg(tfm.decompress_to_vec(src, &mut v, cap)),
    ));
    let srcs = [IoSlice::new(src)];
    let mut dst = [IoSliceMut::new(&mut out)];
    let mut reqs = [Request::new(&srcs, &mut dst)];
    tfm.decompress_batch(&mut reqs);
    all.push(("batch".into(), msg(reqs[0].outcome().unwrap().clone())));
    all
}

fn zstd_frame(data: &[u8]) -> Vec<u8> {
    let tfm = Acomp::new("zstd").unwrap();
    compress(&tfm, data, Cut::One, 4096, Cut::One).unwrap().0
}

/// zstd says "Unknown frame descriptor" for the bytes after the last frame; acomp says how
/// many there are, after one frame, two, and a skippable one.
#[test]
fn bytes_after_the_last_frame_are_counted() {
    let tfm = Acomp::new("zstd").unwrap();
    let frame = zstd_frame(&letters(1000, 1));
    for (src, n) in [
        ([&frame[..], &[0; 16]].concat(), 16),
        ([&frame[..], &frame, b"garbage"].concat(), 7),
        ([&skippable_frame(b"meta")[..], &[0xff; 5]].concat(), 5),
        ([&frame[..], &[0]].concat(), 1),
    ] {
        let want = format!("corrupt input: {n} bytes after the last frame are not a frame");
        for cap in [0, 1000, 4096] {
            for (how, res) in every_call(&tfm, &src, cap) {
                assert_eq!(res, Err(want.clone()), "cap {cap} {how}");
            }
        }
        let e = tfm
            .decompress_to_buffer(&src, &mut [0u8; 4096])
            .unwrap_err();
        assert_eq!(e, Error::TrailingBytes { bytes: n });
        assert_eq!(e.kind(), ErrorKind::Corrupt);
    }
    // A range read ignores what follows its frame (an extent padded to its sector size).
    let src = [&frame[..], &[0; 16]].concat();
    let mut page = [0u8; 1000];
    assert_eq!(
        tfm.decompress_range(&[IoSlice::new(&src)], &mut [Segment::new(0, &mut page)]),
        Ok(1000)
    );
    // `content_size` after skippable frames says the same.
    let src = [&skippable_frame(b"meta")[..], &[0; 9]].concat();
    assert_eq!(
        tfm.content_size(&[IoSlice::new(&src)]),
        Err(Error::TrailingBytes { bytes: 9 })
    );
}

/// A source with no frame at all (an lz4 block, text) names what it lacks.
#[test]
fn a_source_that_is_no_frame() {
    let tfm = Acomp::new("zstd").unwrap();
    let want = "corrupt input: not a zstd frame: no magic number (28 b5 2f fd) at the start";
    let lz4 = Acomp::new("lz4").unwrap();
    let block = compress(&lz4, &letters(1000, 2), Cut::One, 2000, Cut::One)
        .unwrap()
        .0;
    for src in [&block[..], b"hello, this is text", &[0u8; 16]] {
        for (how, res) in every_call(&tfm, src, 4096) {
            assert_eq!(res, Err(want.to_owned()), "{how}");
        }
        let mut page = [0u8; 100];
        let e = tfm
            .decompress_range(&[IoSlice::new(src)], &mut [Segment::new(0, &mut page)])
            .unwrap_err();
        assert_eq!(e.to_string(), want);
        assert_eq!(
            tfm.content_size(&[IoSlice::new(src)])
                .unwrap_err()
                .to_string(),
            want
        );
    }
}

/// A zstd frame given to the lz4 transform: the decoder's own finding ("lz4 match offset
/// before the start of the output") becomes a hint at the magic number, on every path, cut
/// and size, and from the block functions.
#[test]
fn a_zstd_frame_given_to_lz4() {
    let tfm = Acomp::new("lz4").unwrap();
    let want = "corrupt input: not an lz4 block: it starts with zstd's magic number \
                (28 b5 2f fd), as a zstd frame does";
    let frame = zstd_frame(&letters(1000, 3));
    for src in [&frame[..], &frame[..4], &frame[..5]] {
        for cap in [0, 4, 1000, 1 << 20] {
            for (how, res) in every_call(&tfm, src, cap) {
                assert_eq!(
                    res,
                    Err(want.to_owned()),
                    "{} bytes cap {cap} {how}",
                    src.len()
                );
            }
            let e = acomp::lz4::decompress_block(src, &mut vec![0u8; cap]).unwrap_err();
            assert_eq!(e.to_string(), want);
        }
        assert_eq!(
            acomp::lz4::block_content_size(src).unwrap_err().to_string(),
            want
        );
    }
    // Other corrupt blocks keep the decoder's words.
    let e = acomp::lz4::decompress_block(&[0x28, 0xB5, 0x2F, 0xFE, 0], &mut [0u8; 64]).unwrap_err();
    assert_eq!(
        e.to_string(),
        "corrupt input: lz4 match offset before the start of the output"
    );
}

#[test]
fn an_empty_dictionary_is_refused() {
    let e = Dictionary::from_bytes(&[]).unwrap_err();
    assert_eq!(
        e.to_string(),
        "invalid dictionary: 0 bytes: an empty dictionary is no dictionary"
    );
    assert_eq!(e.errno(), libc::EINVAL);
    // One byte is a raw-content dictionary, as zstd takes it.
    assert_eq!(Dictionary::from_bytes(&[7]).unwrap().id(), 0);
}

/// The page and the corrupt frame of the report: zstd level 3 (the default) compresses the
/// page to 32 bytes; bit 1 of byte 29 (inside the block's sequences) flipped.
fn corrupt_page_frame() -> Vec<u8> {
    let page = [b"swap me out, ".repeat(315), b"!".to_vec()].concat();
    assert_eq!(page.len(), 4096);
    let mut frame = zstd_frame(&page);
    assert_eq!(frame.len(), 32);
    frame[29] ^= 0x02;
    frame
}

/// zstd's streaming decoder says "Destination buffer is too small" when a corrupt block's
/// sequences decode past the block, though its buffer fits any valid block: the message
/// says what is wrong with the source, with zstd's name as a detail, on every path and cut,
/// into a destination of 1 MiB.
#[test]
fn a_block_decoding_past_its_maximum_says_so() {
    let tfm = Acomp::new("zstd").unwrap();
    for (call, res) in every_call(&tfm, &corrupt_page_frame(), 1 << 20) {
        assert_eq!(
            res,
            Err(
                "corrupt input: a block decodes to more than the frame's block maximum \
                 (zstd: Destination buffer is too small)"
                    .to_owned()
            ),
            "{call}"
        );
    }
}

/// zstd's bare names for its own state (its buffers, its dictionaries), which mislead as
/// the whole message about a source.
const ZSTD_BARE_NAMES: [&str; 7] = [
    "Destination buffer is too small",
    "Dictionary is corrupted",
    "Dictionary mismatch",
    "Data corruption detected",
    "Src size is incorrect",
    "Restored data doesn't match checksum",
    "Unsupported frame parameter",
];

/// The message of each `EBADMSG` of `frame` with one bit flipped, for each bit of `bits`,
/// on every call and cut ([`every_call`]), into `cap` bytes.
fn messages_of_flips(frame: &[u8], bits: std::ops::Range<usize>, cap: usize) -> Vec<String> {
    let tfm = Acomp::new("zstd").unwrap();
    let mut all = Vec::new();
    for bit in bits {
        let mut f = frame.to_vec();
        f[bit / 8] ^= 1 << (bit % 8);
        for (call, res) in every_call(&tfm, &f, cap) {
            if let Err(msg) = res {
                all.push(format!("{msg}\tbit {bit}, {call}"));
            }
        }
    }
    all
}

/// Every one-bit change of the report's frame and of the first 48 bytes of a text page's
/// frame (its headers and the first block's literals header, where a "repeat" table mode
/// with no table before makes zstd say "Dictionary is corrupted" of a frame without
/// dictionary), on every path and cut: no `EBADMSG` message is zstd's bare name, each says
/// what is wrong with the source in acomp's words.
#[test]
fn corrupt_frames_never_get_zstds_bare_names() {
    let page = [b"swap me out, ".repeat(315), b"!".to_vec()].concat();
    let text = letters(4096, 3);
    let mut all = messages_of_flips(&zstd_frame(&page), 0..32 * 8, 4096);
    all.extend(messages_of_flips(&zstd_frame(&text), 0..48 * 8, 4096));
    let mut seen = std::collections::BTreeSet::new();
    for line in &all {
        let (msg, at) = line.split_once('\t').unwrap();
        let detail = msg.strip_prefix("corrupt input: ").unwrap_or(msg);
        assert!(!ZSTD_BARE_NAMES.contains(&detail), "{at}: {msg}");
        seen.insert(msg);
    }
    // The two the report names are among them, in acomp's words.
    for zstd_name in ["Destination buffer is too small", "Dictionary is corrupted"] {
        assert!(
            seen.iter()
                .any(|m| m.contains(&format!("(zstd: {zstd_name})"))),
            "{zstd_name}: {seen:#?}"
        );
    }
}
