//! Which error wins when a zstd frame has several faults: `EBADMSG` (no destination and no
//! parameter could change it) before `EINVAL` (a window over the limit) before `ENOSPC`,
//! and among faults of one kind the first in the order acomp reads the source. A frame
//! over the window limit is not decoded; its structure is still read to its end (header,
//! every block header, its length, the content size its raw and RLE blocks give), and so
//! is every frame after it.
//!
//! Every pair of the faults acomp finds before libzstd sees a frame, on every path: one
//! fragment each side, every cut pair, a batch, the buffer and `Vec` calls, a range read
//! over the whole content, and `content_size` (which reads the header only).

use std::io::{IoSlice, IoSliceMut};

use crate::common::{Cut, decompress};
use acomp::{Acomp, Dictionary, Error, Request, Segment, ZstdParams};

/// One fragment each side, small and large even cuts, random cuts with empty fragments.
const CUT_PAIRS: [(Cut, Cut); 5] = [
    (Cut::One, Cut::One),
    (Cut::Every(7), Cut::One),
    (Cut::One, Cut::Every(64)),
    (Cut::Every(4096), Cut::Every(3)),
    (Cut::Random(1), Cut::Random(2)),
];

/// The faults, in the order acomp meets them reading a frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Fault {
    /// The frame header's reserved bit (§3.1.1.1.1).
    Reserved,
    /// A dictionary ID the transform has no dictionary for.
    Dictionary,
    /// A window of 16 MiB, over the default limit of 8 MiB (`EINVAL`).
    Window,
    /// The first block raw and over the block maximum (128 KiB).
    BlockOverMax,
    /// The second block compressed and 1 byte long.
    ShortCompressed,
    /// The third block of the reserved type.
    ReservedType,
    /// The header declares one byte more than the blocks give: known at the last block's
    /// header, before its content.
    ContentSize,
    /// The source ends inside the third block.
    Truncated,
    /// 16 zero bytes after the frame.
    Trailing,
}

use Fault::*;

const FAULTS: [Fault; 9] = [
    Reserved,
    Dictionary,
    Window,
    BlockOverMax,
    ShortCompressed,
    ReservedType,
    ContentSize,
    Truncated,
    Trailing,
];

const DICT_ID: u32 = 0xABCD;

/// A frame of three raw blocks of 100 bytes (not single-segment, 4-byte content size,
/// window 128 KiB) with `faults` applied.
fn frame(faults: &[Fault]) -> Vec<u8> {
    let has = |f| faults.contains(&f);
    let first = if has(BlockOverMax) { 131_073 } else { 100 };
    let mut blocks: Vec<(u8, Vec<u8>)> = vec![
        (0, vec![b'a'; first]),
        (0, vec![b'b'; 100]),
        (0, vec![b'c'; 100]),
    ];
    if has(ShortCompressed) {
        blocks[1] = (2, vec![0]);
    }
    if has(ReservedType) {
        blocks[2].0 = 3;
    }
    // The content the blocks give, as if the reserved-type block were raw.
    let content: usize = blocks.iter().filter(|b| b.0 != 2).map(|b| b.1.len()).sum();
    let declared = content as u32 + u32::from(has(ContentSize));
    let mut f = 0xFD2F_B528u32.to_le_bytes().to_vec();
    let mut fhd = 2 << 6; // 4-byte content size
    if has(Reserved) {
        fhd |= 0x08;
    }
    if has(Dictionary) {
        fhd |= 3; // 4-byte dictionary ID
    }
    f.push(fhd);
    f.push(if has(Window) { 24 - 10 } else { 17 - 10 } << 3);
    if has(Dictionary) {
        f.extend_from_slice(&DICT_ID.to_le_bytes());
    }
    f.extend_from_slice(&declared.to_le_bytes());
    for (i, (kind, data)) in blocks.iter().enumerate() {
        let last = u32::from(i == 2);
        let h = last | (u32::from(*kind) << 1) | ((data.len() as u32) << 3);
        f.extend_from_slice(&h.to_le_bytes()[..3]);
        f.extend_from_slice(data);
    }
    if has(Truncated) {
        f.truncate(f.len() - 50);
    }
    if has(Trailing) {
        f.extend_from_slice(&[0; 16]);
    }
    f
}

/// The error of each fault alone.
fn error_of(f: Fault) -> Error {
    match f {
        Reserved => Error::Corrupt {
            detail: "the frame header sets a reserved bit (zstd: Unsupported frame parameter)",
        },
        Dictionary => Error::Corrupt {
            detail: "frame names a dictionary this transform lacks",
        },
        Window => Error::WindowTooLarge {
            window: 1 << 24,
            limit: 1 << 23,
        },
        BlockOverMax => Error::Corrupt {
            detail: "block larger than the frame's block maximum",
        },
        ShortCompressed => Error::Corrupt {
            detail: "compressed block shorter than its section headers (2 bytes)",
        },
        ReservedType => Error::Corrupt {
            detail: "reserved block type",
        },
        Truncated => Error::Truncated,
        ContentSize => Error::Corrupt {
            detail: "frame content size does not match its blocks",
        },
        Trailing => Error::TrailingBytes { bytes: 16 },
    }
}

/// The rule: the first `EBADMSG` fault in reading order, else `EINVAL`.
fn expected(faults: &[Fault]) -> Error {
    FAULTS
        .iter()
        .filter(|f| faults.contains(f) && **f != Window)
        .map(|&f| error_of(f))
        .next()
        .unwrap_or_else(|| error_of(Window))
}

/// A transform with a dictionary (ID not [`DICT_ID`]), so that both ways of lacking one are
/// held: no dictionaries at all, and others.
fn with_other_dictionary() -> Acomp {
    let mut raw = 0xEC30_A437u32.to_le_bytes().to_vec();
    raw.extend_from_slice(&7u32.to_le_bytes());
    let samples: Vec<Vec<u8>> = (0..64u32)
        .map(|i| {
            format!("sample {i}: the quick brown fox {}", i * 7)
                .repeat(20)
                .into_bytes()
        })
        .collect();
    let refs: Vec<&[u8]> = samples.iter().map(|s| &s[..]).collect();
    let dict = Dictionary::train(&refs, 4096).unwrap();
    assert_ne!(dict.id(), DICT_ID);
    Acomp::with_zstd(ZstdParams::default().dictionary(dict)).unwrap()
}

/// Every call's outcome for `src` into `cap` bytes, with a name for the message.
fn every_call(tfm: &Acomp, src: &[u8], cap: usize) -> Vec<(String, Result<usize, Error>)> {
    let mut all = Vec::new();
    for (s, d) in CUT_PAIRS {
        all.push((
            format!("{s:?}/{d:?}"),
            decompress(tfm, src, s, cap, d).map(|b| b.len()),
        ));
    }
    let mut out = vec![0u8; cap];
    all.push(("to_buffer".into(), tfm.decompress_to_buffer(src, &mut out)));
    let mut v = Vec::new();
    all.push(("to_vec".into(), tfm.decompress_to_vec(src, &mut v, cap)));
    let srcs = [IoSlice::new(src)];
    let mut dst = [IoSliceMut::new(&mut out)];
    let mut reqs = [Request::new(&srcs, &mut dst)];
    tfm.decompress_batch(&mut reqs);
    all.push(("batch".into(), reqs[0].outcome().unwrap().clone()));
    all
}

#[test]
fn each_fault_alone_and_every_pair() {
    let tfms = [Acomp::new("zstd").unwrap(), with_other_dictionary()];
    let mut sets: Vec<Vec<Fault>> = FAULTS.iter().map(|&f| vec![f]).collect();
    for (i, &a) in FAULTS.iter().enumerate() {
        for &b in &FAULTS[i + 1..] {
            // Bytes after a truncated frame are the rest of its block.
            if (a, b) != (Truncated, Trailing) {
                sets.push(vec![a, b]);
            }
        }
    }
    assert_eq!(sets.len(), 9 + 36 - 1);
    for tfm in &tfms {
        for faults in &sets {
            let src = frame(faults);
            let want = expected(faults);
            for cap in [0, 150, 1 << 20] {
                for (how, res) in every_call(tfm, &src, cap) {
                    assert_eq!(res, Err(want.clone()), "{faults:?} cap {cap} {how}");
                }
            }
            // A range read over the whole content decodes the first frame only: bytes
            // after it are not its business.
            let in_frame: Vec<Fault> = faults.iter().copied().filter(|&f| f != Trailing).collect();
            let mut page = vec![0u8; 200_000];
            let res =
                tfm.decompress_range(&[IoSlice::new(&src)], &mut [Segment::new(0, &mut page)]);
            if in_frame.is_empty() {
                assert_eq!(res, Ok(300), "{faults:?} range");
            } else {
                assert_eq!(res, Err(expected(&in_frame)), "{faults:?} range");
            }
            // `content_size` reads the header only: its own faults, never the window.
            let declared = tfm.content_size(&[IoSlice::new(&src)]);
            if faults.contains(&Reserved) {
                assert_eq!(declared, Err(error_of(Reserved)), "{faults:?}");
            } else {
                let content = if faults.contains(&BlockOverMax) {
                    131_273
                } else {
                    300
                };
                let content = content
                    - if faults.contains(&ShortCompressed) {
                        100
                    } else {
                        0
                    };
                let content = content + u64::from(faults.contains(&ContentSize));
                assert_eq!(declared, Ok(Some(content)), "{faults:?}");
            }
        }
        // The frame without faults, for the builder's sake.
        for (how, res) in every_call(tfm, &frame(&[]), 300) {
            assert_eq!(res, Ok(300), "{how}");
        }
    }
}

/// The example: a frame naming a dictionary the transform lacks, its window over
/// the limit, is `EBADMSG` (libzstd says "Dictionary mismatch" too), as one-shot, streamed,
/// batched, and in a range read.
#[test]
fn unknown_dictionary_beside_an_oversized_window() {
    let src = frame(&[Dictionary, Window]);
    let tfm = Acomp::new("zstd").unwrap();
    let e = tfm
        .decompress_to_buffer(&src, &mut [0u8; 4096])
        .unwrap_err();
    assert_eq!(e, error_of(Dictionary));
    assert_eq!(e.errno(), libc::EBADMSG);
    // Alone, the window is `EINVAL`, and a larger limit reads the frame.
    let src = frame(&[Window]);
    assert_eq!(
        tfm.decompress_to_buffer(&src, &mut [0u8; 4096])
            .unwrap_err(),
        error_of(Window)
    );
    let wide = Acomp::with_zstd(ZstdParams::default().window_log_max(24)).unwrap();
    assert_eq!(wide.decompress_to_buffer(&src, &mut [0u8; 4096]), Ok(300));
}

/// A window over the limit before a frame that is corrupt: the later frame's fault wins, as
/// an `ENOSPC` loses to a corrupt frame after it.
#[test]
fn a_later_corrupt_frame_wins_over_the_window() {
    let tfm = Acomp::new("zstd").unwrap();
    let good = frame(&[]);
    let over = frame(&[Window]);
    let bad = frame(&[ReservedType]);
    for (src, want) in [
        ([&over[..], &bad].concat(), error_of(ReservedType)),
        ([&bad[..], &over].concat(), error_of(ReservedType)),
        ([&over[..], &good].concat(), error_of(Window)),
        ([&good[..], &over].concat(), error_of(Window)),
    ] {
        for cap in [0, 300, 1 << 20] {
            for (how, res) in every_call(&tfm, &src, cap) {
                assert_eq!(res, Err(want.clone()), "cap {cap} {how}");
            }
        }
    }
}
