//! zstd's seekable format: the writer (`compress_seekable_to_vec`, `compress_seekable`),
//! range reads that decode only the frames they touch, seek tables that lie or are cut,
//! checked range reads (`checksum(true)`), and pyzstd's `SeekableZstdFile` both ways.

use std::io::{IoSlice, IoSliceMut};

use crate::common::surgery;
use crate::common::*;
use acomp::{Acomp, Error, SeekTable, Segment, ZstdParams};
use proptest::prelude::*;

const SEEKABLE_MAGIC: u32 = 0x8F92_EAB1;
const TABLE_MAGIC: u32 = 0x184D_2A5E;

/// One seek table entry: compressed size, decompressed size, checksum.
type Entry = (u32, u32, Option<u32>);

/// The frames' bytes and the entries of a seekable source, read by hand from its table.
fn parse(src: &[u8]) -> (Vec<u8>, Vec<Entry>) {
    let n = src.len();
    assert_eq!(u32_at(src, n - 4), SEEKABLE_MAGIC);
    let frames = u32_at(src, n - 9) as usize;
    let checksums = src[n - 5] & 0x80 != 0;
    let size = if checksums { 12 } else { 8 };
    let table = 8 + frames * size + 9;
    let at = n - table;
    assert_eq!(u32_at(src, at), TABLE_MAGIC);
    assert_eq!(u32_at(src, at + 4) as usize, table - 8);
    let entries = (0..frames)
        .map(|i| {
            let e = at + 8 + i * size;
            let sum = checksums.then(|| u32_at(src, e + 8));
            (u32_at(src, e), u32_at(src, e + 4), sum)
        })
        .collect();
    (src[..at].to_vec(), entries)
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().unwrap())
}

/// A seekable source of these frames and this table (as the format lays it out), with
/// `descriptor` as the footer's descriptor byte.
fn build(frames: &[u8], entries: &[Entry], descriptor: u8) -> Vec<u8> {
    let checksums = descriptor & 0x80 != 0;
    let size = if checksums { 12 } else { 8 };
    let mut out = frames.to_vec();
    out.extend(TABLE_MAGIC.to_le_bytes());
    out.extend(((entries.len() * size + 9) as u32).to_le_bytes());
    for &(c, d, s) in entries {
        out.extend(c.to_le_bytes());
        out.extend(d.to_le_bytes());
        if checksums {
            out.extend(s.unwrap_or(0).to_le_bytes());
        }
    }
    out.extend((entries.len() as u32).to_le_bytes());
    out.push(descriptor);
    out.extend(SEEKABLE_MAGIC.to_le_bytes());
    out
}

fn summed() -> Acomp {
    Acomp::with_zstd(ZstdParams::default().checksum(true)).unwrap()
}

fn errno(r: Result<(usize, Vec<Vec<u8>>), Error>) -> i32 {
    r.expect_err("an error").errno()
}

#[test]
fn the_writer_lays_out_frames_and_table() {
    let data = letters(100_000, 1);
    for (tfm, checksums) in [(Acomp::new("zstd").unwrap(), false), (summed(), true)] {
        let mut out = b"kept".to_vec();
        let n = tfm
            .compress_seekable_to_vec(&data, 16384, &mut out)
            .unwrap();
        assert_eq!(&out[..4], b"kept");
        let src = out[4..].to_vec();
        assert_eq!(n, src.len());
        let (frames, entries) = parse(&src);
        assert_eq!(entries.len(), 7);
        // Each frame is exactly what `compress` writes for its content.
        let mut at = 0;
        for (i, &(c, d, sum)) in entries.iter().enumerate() {
            let content = &data[i * 16384..(i * 16384 + 16384).min(data.len())];
            assert_eq!(d as usize, content.len());
            let mut alone = Vec::new();
            tfm.compress_to_vec(content, &mut alone).unwrap();
            assert_eq!(&frames[at..at + c as usize], &alone[..], "frame {i}");
            // The table's checksum is the frame's own: XXH64's low 32 bits.
            let xxh = xxhash_rust::xxh64::xxh64(content, 0) as u32;
            assert_eq!(sum, checksums.then_some(xxh), "frame {i}");
            at += c as usize;
        }
        assert_eq!(at, frames.len());
        // Every decoder reads it whole: acomp's decompress, and libzstd's.
        let mut back = Vec::new();
        tfm.decompress_to_vec(&src, &mut back, 1 << 20).unwrap();
        assert_eq!(back, data);
        assert_eq!(zstd::stream::decode_all(&src[..]).unwrap(), data);
        for cut in CUTS {
            assert_eq!(tfm.content_size(&split(&src, cut)).unwrap(), Some(100_000));
        }
        // Into fragments: the same bytes on every cut, ENOSPC with the exact size.
        for (scut, dcut) in [(Cut::One, Cut::One), (Cut::Random(3), Cut::Every(1000))] {
            let mut dst = vec![0u8; tfm.compress_seekable_bound(data.len(), 16384)];
            let got = tfm
                .compress_seekable(&split(&data, scut), 16384, &mut split_mut(&mut dst, dcut))
                .unwrap();
            assert_eq!(&dst[..got], &src[..]);
        }
        let mut small = vec![0u8; src.len() - 1];
        let err = tfm
            .compress_seekable(
                &[IoSlice::new(&data)],
                16384,
                &mut [IoSliceMut::new(&mut small)],
            )
            .unwrap_err();
        assert_eq!(
            err,
            Error::NoSpace {
                needed: Some(src.len() as u64),
                capacity: src.len() - 1
            }
        );
    }
    // No content: a table of no frames, which reads as empty.
    let tfm = Acomp::new("zstd").unwrap();
    let mut empty = Vec::new();
    assert_eq!(
        tfm.compress_seekable_to_vec(&[], 4096, &mut empty).unwrap(),
        17
    );
    assert_eq!(empty, build(&[], &[], 0));
    assert_eq!(tfm.content_size(&[IoSlice::new(&empty)]).unwrap(), Some(0));
    assert_eq!(
        read(&tfm, &empty, Cut::One, &[(0, 10)]).unwrap(),
        (0, vec![vec![0; 10]])
    );
}

#[test]
fn the_writer_refuses_what_the_format_cannot_hold() {
    let tfm = Acomp::new("zstd").unwrap();
    let mut out = vec![1, 2, 3];
    for frame_bytes in [0, (1 << 30) + 1] {
        let err = tfm
            .compress_seekable_to_vec(b"abc", frame_bytes, &mut out)
            .unwrap_err();
        assert!(matches!(err, Error::InvalidParameter { .. }), "{err}");
    }
    // 2^27 frames is the format's most; one more is refused before anything is written.
    let big = vec![0u8; (1 << 27) + 1];
    let err = tfm.compress_seekable_to_vec(&big, 1, &mut out).unwrap_err();
    assert!(matches!(err, Error::InvalidParameter { .. }), "{err}");
    let lz4 = Acomp::new("lz4").unwrap();
    let err = lz4
        .compress_seekable_to_vec(b"abc", 4096, &mut out)
        .unwrap_err();
    assert!(matches!(err, Error::InvalidParameter { .. }), "{err}");
    assert_eq!(out, [1, 2, 3]);
    // 1 GiB frames are within the format.
    tfm.compress_seekable_to_vec(b"abc", 1 << 30, &mut out)
        .unwrap();
    assert_eq!(parse(&out[3..]).1, [(12, 3, None)]);
}

#[test]
fn ranges_read_exact_bytes_across_frames() {
    let data = letters(131_072, 2);
    for tfm in [Acomp::new("zstd").unwrap(), summed()] {
        let mut src = Vec::new();
        tfm.compress_seekable_to_vec(&data, 16384, &mut src)
            .unwrap();
        let len = data.len() as u64;
        let cases: Vec<Vec<(u64, usize)>> = vec![
            vec![(0, 1)],
            vec![(len - 1, 1)],
            vec![(16383, 2)],                                  // across two frames
            vec![(0, data.len())],                             // everything
            vec![(100, 4096), (40_000, 30_000), (120_000, 8)], // gaps, spans
            vec![(130_000, 4096)],                             // past the end
            vec![(len, 10)],                                   // wholly past the end
            vec![(5, 0), (16384, 0), (16384, 3), (50_000, 0)], // empty segments
            vec![(0, 4096), (len + 5, 7)],                     // a frame, then past the end
        ];
        for ranges in &cases {
            for cut in [
                Cut::One,
                Cut::Every(4096),
                Cut::Every(1),
                Cut::Random(ranges[0].0),
            ] {
                let got = read(&tfm, &src, cut, ranges).unwrap();
                assert!(got == expected(&data, ranges), "{ranges:?} {cut:?}");
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// Any source cut, any frame size, any sorted segments: the content's bytes, zero past
    /// its end, the same as a plain frame of the same content gives.
    #[test]
    fn every_cut_reads_the_same(
        len in 0usize..70_000,
        frame_bytes in prop_oneof![Just(4096usize), Just(16384), 1usize..20_000],
        seed in any::<u64>(),
        raw in proptest::collection::vec((0u64..80_000, 0usize..9000), 0..5),
        checksum in any::<bool>(),
    ) {
        let data = letters(len, seed);
        let tfm = Acomp::with_zstd(ZstdParams::default().checksum(checksum)).unwrap();
        let mut src = Vec::new();
        tfm.compress_seekable_to_vec(&data, frame_bytes, &mut src).unwrap();
        let mut ranges = Vec::new();
        let mut at = 0;
        let mut sorted = raw.clone();
        sorted.sort();
        for (off, n) in sorted {
            let off = off.max(at);
            ranges.push((off, n));
            at = off + n as u64;
        }
        let want = expected(&data, &ranges);
        for cut in [Cut::One, Cut::Random(seed), Cut::Random(seed ^ 1)] {
            let got = read(&tfm, &src, cut, &ranges).unwrap();
            prop_assert!(got == want, "{ranges:?} {cut:?}");
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    /// A seekable source with bytes changed (most often in its table) or cut short: never a
    /// panic, `Ok` with the same bytes or the same error on every cut and through a kept
    /// table (verified or not), and the segments zero-filled after an error.
    #[test]
    fn damaged_sources_give_one_outcome_on_every_cut(
        seed in any::<u64>(),
        flips in proptest::collection::vec((any::<prop::sample::Index>(), 1u8..=255, any::<bool>()), 1..4),
        cut_tail in 0usize..3,
        off in 0u64..50_000,
        len in 0usize..20_000,
        checksum in any::<bool>(),
    ) {
        let data = letters(40_000, seed);
        let tfm = Acomp::with_zstd(ZstdParams::default().checksum(checksum)).unwrap();
        let mut src = Vec::new();
        tfm.compress_seekable_to_vec(&data, 8192, &mut src).unwrap();
        let table = 8 + 5 * if checksum { 12 } else { 8 } + 9;
        for (at, xor, in_table) in flips {
            let i = if in_table {
                src.len() - table + at.index(table)
            } else {
                at.index(src.len())
            };
            src[i] ^= xor;
        }
        src.truncate(src.len() - cut_tail);
        let ranges = [(off, len)];
        let first = read(&tfm, &src, Cut::One, &ranges);
        for cut in [Cut::Every(1), Cut::Random(seed)] {
            let again = read(&tfm, &src, cut, &ranges);
            match (&first, &again) {
                (Ok(a), Ok(b)) => prop_assert!(a == b),
                (Err(a), Err(b)) => prop_assert_eq!(a, b),
                _ => prop_assert!(false, "{first:?} against {again:?} on {cut:?}"),
            }
        }
        // A table kept from the damaged source (where it parses) reads as a one-off read
        // does.
        if let Ok(table) = SeekTable::parse(&[IoSlice::new(&src)]) {
            for cut in [Cut::One, Cut::Random(seed)] {
                let kept = read_kept(&tfm, &table, &src, cut, &ranges);
                prop_assert!(kept == first, "{kept:?} against {first:?} on {cut:?}");
            }
            if tfm.verify_seek_table(&table, &[IoSlice::new(&src)]).is_ok() {
                let kept = read_kept(&tfm, &table, &src, Cut::One, &ranges);
                prop_assert!(kept == first, "verified: {kept:?} against {first:?}");
            }
        }
        if let Err(e) = &first {
            prop_assert!([libc::EBADMSG, libc::EINVAL].contains(&e.errno()), "{e}");
            let mut buf = vec![0xEEu8; len];
            let mut segs = [Segment::new(off, &mut buf)];
            prop_assert!(tfm.decompress_range(&[IoSlice::new(&src)], &mut segs).is_err());
            prop_assert!(buf.iter().all(|&b| b == 0));
        }
    }
}

/// Only the frames a read touches are decoded: a corrupt frame elsewhere goes unseen, and
/// the read that touches it fails.
#[test]
fn untouched_frames_are_not_decoded() {
    let data = letters(65536, 3);
    let tfm = summed();
    let mut src = Vec::new();
    tfm.compress_seekable_to_vec(&data, 16384, &mut src)
        .unwrap();
    let (frames, entries) = parse(&src);
    let third: usize = entries[..2].iter().map(|e| e.0 as usize).sum();
    let mut bad = src.clone();
    bad[third + entries[2].0 as usize / 2] ^= 0x10;
    let _ = frames;
    for cut in [Cut::One, Cut::Every(7)] {
        for ranges in [vec![(0, 4096)], vec![(16384, 16384), (49152, 16384)]] {
            assert!(read(&tfm, &bad, cut, &ranges).unwrap() == expected(&data, &ranges));
        }
        assert_eq!(errno(read(&tfm, &bad, cut, &[(40_000, 1)])), libc::EBADMSG);
        assert_eq!(errno(read(&tfm, &bad, cut, &[(0, 65536)])), libc::EBADMSG);
    }
    // Whole decompression meets it.
    let mut back = Vec::new();
    let err = tfm.decompress_to_vec(&bad, &mut back, 1 << 20).unwrap_err();
    assert_eq!(err.errno(), libc::EBADMSG);
}

/// Seek tables that contradict their frames: every read that the lie could mislead is
/// `EBADMSG`, with the kind's exact error.
#[test]
fn tables_that_lie() {
    let data = letters(65536, 4);
    let tfm = Acomp::new("zstd").unwrap();
    let mut src = Vec::new();
    tfm.compress_seekable_to_vec(&data, 16384, &mut src)
        .unwrap();
    let (frames, entries) = parse(&src);
    let lie = |f: &dyn Fn(&mut Vec<Entry>)| {
        let mut e = entries.clone();
        f(&mut e);
        build(&frames, &e, 0)
    };
    let disagrees = Error::Corrupt {
        detail: "seek table entry contradicts its frame (content size or length)",
    };
    let sizes = Error::Corrupt {
        detail: "seek table's compressed sizes do not add up to the frames before it",
    };
    let cases: Vec<(&str, Vec<u8>, Error)> = vec![
        ("content size +1", lie(&|e| e[1].1 += 1), disagrees.clone()),
        ("content size -1", lie(&|e| e[1].1 -= 1), disagrees.clone()),
        ("sizes swapped", lie(&|e| e.swap(0, 3)), disagrees.clone()),
        (
            "compressed sizes shifted",
            lie(&|e| {
                e[0].0 += 1;
                e[1].0 -= 1
            }),
            disagrees.clone(),
        ),
        ("compressed size +1", lie(&|e| e[3].0 += 1), sizes.clone()),
        ("a frame left out", lie(&|e| e.truncate(3)), sizes.clone()),
        (
            "a frame added",
            lie(&|e| e.push((0, 0, None))),
            disagrees.clone(),
        ),
        (
            "a frame over 1 GiB",
            lie(&|e| e[2].1 = (1 << 30) + 1),
            Error::Corrupt {
                detail: "seek table lists a frame of more than 1 GiB of content (the format's limit)",
            },
        ),
    ];
    // An entry whose compressed size takes in bytes after its frame (a skippable frame
    // here): a read that decodes the frame to its end finds the frame shorter.
    let mut padded = frames[..entries[0].0 as usize].to_vec();
    padded.extend(skippable_frame(b""));
    padded.extend(&frames[entries[0].0 as usize..]);
    let mut e = entries.clone();
    e[0].0 += 8;
    let bad = build(&padded, &e, 0);
    for cut in [Cut::One, Cut::Every(5)] {
        assert_eq!(
            read(&tfm, &bad, cut, &[(16000, 384)]).unwrap_err(),
            disagrees
        );
        let inside = [(0, 4096), (20_000, 100)];
        assert!(read(&tfm, &bad, cut, &inside).unwrap() == expected(&data, &inside));
    }
    for (what, bad, err) in &cases {
        for cut in [Cut::One, Cut::Every(5), Cut::Random(9)] {
            for ranges in [vec![(0, 10)], vec![(60_000, 4096)], vec![]] {
                let got = read(&tfm, bad, cut, &ranges);
                assert_eq!(got.unwrap_err(), *err, "{what} {cut:?} {ranges:?}");
            }
            let got = tfm.content_size(&split(bad, cut));
            assert_eq!(got.unwrap_err(), *err, "{what} {cut:?}");
        }
        // Every zstd decoder skips the table: decompress gives the frames' content.
        let mut back = Vec::new();
        tfm.decompress_to_vec(bad, &mut back, 1 << 20).unwrap();
        assert_eq!(back, data, "{what}");
    }
}

/// A frame that declares no content size (as pyzstd and zstd's own seekable writer
/// write them) lying about it: caught when the read decodes the frame to its end.
#[test]
fn lies_about_frames_without_content_size() {
    let data = letters(40_000, 5);
    let mut frames = Vec::new();
    let mut entries = Vec::new();
    for chunk in data.chunks(16384) {
        let f = frame_without_size(chunk, 3, 0);
        entries.push((f.len() as u32, chunk.len() as u32, None));
        frames.extend(f);
    }
    let tfm = Acomp::new("zstd").unwrap();
    let good = build(&frames, &entries, 0);
    let all = [(0, 40_000)];
    assert!(read(&tfm, &good, Cut::Every(3), &all).unwrap() == expected(&data, &all));
    let disagrees = Error::Corrupt {
        detail: "seek table entry contradicts its frame (content size or length)",
    };
    for delta in [1i64, -1] {
        let mut e = entries.clone();
        e[0].1 = (i64::from(e[0].1) + delta) as u32;
        e[1].1 = (i64::from(e[1].1) - delta) as u32;
        let bad = build(&frames, &e, 0);
        for ranges in [vec![(16000, 1000)], vec![(0, 40_000)]] {
            assert_eq!(read(&tfm, &bad, Cut::One, &ranges).unwrap_err(), disagrees);
        }
        // Checked reads decode each frame they touch to its end: every read it misleads.
        for ranges in [vec![(16000, 1000)], vec![(0, 40_000)], vec![(16384, 1)]] {
            assert_eq!(
                read(&summed(), &bad, Cut::One, &ranges).unwrap_err(),
                disagrees
            );
        }
        // A read that stops inside the first frame's true content decodes nothing the lie
        // changes: the bytes are right.
        let inside = [(0, 16000)];
        assert!(read(&tfm, &bad, Cut::One, &inside).unwrap() == expected(&data, &inside));
    }
}

#[test]
fn truncated_and_malformed_tables() {
    let data = letters(50_000, 6);
    let tfm = summed();
    let mut src = Vec::new();
    tfm.compress_seekable_to_vec(&data, 16384, &mut src)
        .unwrap();
    let n = src.len();
    let (frames, entries) = parse(&src);
    let no_frame = Error::Corrupt {
        detail: "seek table footer without a skippable frame of its size (magic 0x184D2A5E) before it",
    };
    let mut reserved = src.clone();
    reserved[n - 5] |= 0x04;
    let mut unused = src.clone();
    unused[n - 5] |= 0x03; // unused bits: ignored
    let mut many = src.clone();
    many[n - 9..n - 5].copy_from_slice(&0x800_0001u32.to_le_bytes());
    let mut wrong_magic = src.clone();
    wrong_magic[frames.len()] ^= 1;
    let mut wrong_size = src.clone();
    wrong_size[frames.len() + 4] ^= 1;
    let mut entry_gone = src.clone();
    entry_gone.drain(frames.len() + 8..frames.len() + 20);
    let cases: Vec<(&str, Vec<u8>, Error)> = vec![
        ("only the footer", src[n - 9..].to_vec(), Error::Truncated),
        (
            "the table without its first byte",
            [&frames[..], &src[frames.len() + 1..]].concat(),
            no_frame.clone(),
        ),
        ("an entry cut out", entry_gone, no_frame.clone()),
        (
            "the first frame cut off",
            src[entries[0].0 as usize..].to_vec(),
            Error::Corrupt {
                detail: "seek table entry contradicts its frame (content size or length)",
            },
        ),
        ("wrong table magic", wrong_magic, no_frame.clone()),
        ("wrong frame size", wrong_size, no_frame),
        (
            "reserved bits",
            reserved,
            Error::Corrupt {
                detail: "seek table descriptor sets reserved bits",
            },
        ),
        (
            "too many frames",
            many,
            Error::Corrupt {
                detail: "seek table lists more frames than the format allows (0x8000000)",
            },
        ),
    ];
    for (what, bad, err) in &cases {
        for cut in [Cut::One, Cut::Every(1), Cut::Random(2)] {
            let got = read(&tfm, bad, cut, &[(0, 100)]).unwrap_err();
            assert_eq!(got, *err, "{what} {cut:?}");
        }
    }
    let ranges = [(20_000, 9000)];
    assert!(read(&tfm, &unused, Cut::Every(2), &ranges).unwrap() == expected(&data, &ranges));
    // Without its last byte the source no longer ends with a seek table: it is a plain
    // source, whose range reads read its first frame (a frame of 16 KiB here).
    let cut_short = &src[..n - 1];
    let first = [(0, 16384)];
    assert!(read(&tfm, cut_short, Cut::One, &first).unwrap() == expected(&data, &first));
    assert_eq!(
        tfm.content_size(&[IoSlice::new(cut_short)]).unwrap(),
        Some(16384)
    );
}

/// Checked range reads (`checksum(true)`): each frame a read touches is decoded to its
/// end and its checksums checked, the table's too; without, a read stops early.
#[test]
fn checked_reads_check_table_checksums() {
    let data = letters(40_000, 7);
    // Frames without their own checksum, a table with: only the table's checksum guards.
    let plain = Acomp::new("zstd").unwrap();
    let mut frames = Vec::new();
    let mut entries = Vec::new();
    for chunk in data.chunks(16384) {
        let mut f = Vec::new();
        plain.compress_to_vec(chunk, &mut f).unwrap();
        let sum = xxhash_rust::xxh64::xxh64(chunk, 0) as u32;
        entries.push((f.len() as u32, chunk.len() as u32, Some(sum)));
        frames.extend(f);
    }
    let good = build(&frames, &entries, 0x80);
    let mut wrong = entries.clone();
    wrong[1].2 = Some(wrong[1].2.unwrap() ^ 1);
    let bad = build(&frames, &wrong, 0x80);
    let tfm = summed();
    let mismatch = Error::Corrupt {
        detail: "seek table checksum does not match the frame's content",
    };
    for cut in [Cut::One, Cut::Every(1), Cut::Random(4)] {
        for ranges in [vec![(16384, 1)], vec![(20_000, 4096)], vec![(0, 40_000)]] {
            assert!(read(&tfm, &good, cut, &ranges).unwrap() == expected(&data, &ranges));
            assert_eq!(read(&tfm, &bad, cut, &ranges).unwrap_err(), mismatch);
            // Unchecked, the table's checksum is not read.
            assert!(read(&plain, &bad, cut, &ranges).unwrap() == expected(&data, &ranges));
        }
        // Frames the read does not touch are not checked.
        let first = [(0, 16384)];
        assert!(read(&tfm, &bad, cut, &first).unwrap() == expected(&data, &first));
    }
}

/// The contract's "any such change is `EBADMSG` but for one in 2^32" for range reads: with
/// `checksum(true)`, a read of a checksummed frame's first page fails for every flipped
/// byte after the frame header (before checked reads, 3.6% of them gave `Ok`).
#[test]
fn checked_reads_catch_every_flip() {
    let data = letters(32_768, 8);
    let tfm = summed();
    let mut frame = Vec::new();
    tfm.compress_to_vec(&data, &mut frame).unwrap();
    let mut seekable = Vec::new();
    tfm.compress_seekable_to_vec(&data, 32_768, &mut seekable)
        .unwrap();
    let header = surgery::blocks(&frame)[0].at;
    for src in [&frame, &seekable] {
        let mut ok = Vec::new();
        for at in header..frame.len() {
            let mut bad = src.clone();
            bad[at] ^= 0x04;
            match read(&tfm, &bad, Cut::One, &[(0, 4096)]) {
                Ok(_) => ok.push(at),
                Err(e) => assert_eq!(e.errno(), libc::EBADMSG, "byte {at}: {e}"),
            }
        }
        assert!(
            ok.is_empty(),
            "flips read as Ok: {} of {}",
            ok.len(),
            frame.len() - header
        );
    }
}

/// A frame whose declared content size was raised by one: `decompress` says `EBADMSG`,
/// and so does a checked read of its last page (before: `Ok(4096)`).
#[test]
fn checked_reads_finish_the_frame() {
    let data = letters(131_072, 9);
    let tfm = summed();
    let frame = frame_without_size(&data, 3, 0);
    let bad = surgery::with_content_size(&frame, 4, Some(131_073)).unwrap();
    let mut back = Vec::new();
    assert_eq!(
        tfm.decompress_to_vec(&bad, &mut back, 1 << 20)
            .unwrap_err()
            .errno(),
        libc::EBADMSG
    );
    for cut in [Cut::One, Cut::Every(1)] {
        let got = read(&tfm, &bad, cut, &[(126_976, 4096)]);
        assert_eq!(errno(got), libc::EBADMSG);
        let got = read(&tfm, &bad, cut, &[(0, 4096)]);
        assert_eq!(errno(got), libc::EBADMSG);
    }
    // Unchecked, a read that ends before the declared end stops early, as documented.
    let plain = Acomp::new("zstd").unwrap();
    let last = [(126_976, 4096)];
    assert!(read(&plain, &bad, Cut::One, &last).unwrap() == expected(&data, &last));
}

/// After an error the segments are zero-filled: no partial output is left in them.
#[test]
fn segments_are_zeroed_after_an_error() {
    let data = letters(40_000, 10);
    let tfm = summed();
    let mut src = Vec::new();
    tfm.compress_seekable_to_vec(&data, 16384, &mut src)
        .unwrap();
    let (_, entries) = parse(&src);
    let second = entries[0].0 as usize;
    src[second + 20] ^= 1;
    let (mut a, mut b) = ([0xEEu8; 4096], [0xEEu8; 4096]);
    let mut segs = [Segment::new(0, &mut a), Segment::new(20_000, &mut b)];
    let err = tfm
        .decompress_range(&[IoSlice::new(&src)], &mut segs)
        .unwrap_err();
    assert_eq!(err.errno(), libc::EBADMSG);
    assert!(a.iter().chain(&b).all(|&x| x == 0));
    // Refused segments too.
    let (mut a, mut b) = ([0xEEu8; 8], [0xEEu8; 8]);
    let mut segs = [Segment::new(4, &mut a), Segment::new(0, &mut b)];
    let err = tfm
        .decompress_range(&[IoSlice::new(&src)], &mut segs)
        .unwrap_err();
    assert_eq!(err.errno(), libc::EINVAL);
    assert!(a.iter().chain(&b).all(|&x| x == 0));
}

/// pyzstd's `SeekableZstdFile` reads what acomp writes, and acomp's range reads (one-off
/// and through kept tables) read what pyzstd writes, byte for byte. Needs python3 with pyzstd (`.ci/run` installs it): skips
/// with a message without, fails under `CI=true`.
#[test]
fn pyzstd_reads_and_writes_the_same_format() {
    let ok = std::process::Command::new("python3")
        .args(["-c", "import pyzstd; pyzstd.SeekableZstdFile"])
        .status()
        .is_ok_and(|s| s.success());
    if !ok {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "CI=true: python3 with pyzstd (SeekableZstdFile) is required: python3 -m pip install pyzstd"
        );
        eprintln!("skipped: python3 with pyzstd not found (python3 -m pip install pyzstd)");
        return;
    }
    let dir = std::env::temp_dir().join(format!("acomp-seekable-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let data = letters(300_000, 11);
    let content = dir.join("content");
    std::fs::write(&content, &data).unwrap();
    let (ours, theirs) = (dir.join("acomp.zst"), dir.join("pyzstd.zst"));
    let tfm = summed();
    let mut src = Vec::new();
    tfm.compress_seekable_to_vec(&data, 32_768, &mut src)
        .unwrap();
    std::fs::write(&ours, &src).unwrap();
    // pyzstd reads ours (seeking, then reading ranges) and writes its own, frames of 40000.
    let script = r#"
import sys, pyzstd
ours, theirs, content = sys.argv[1:4]
data = open(content, 'rb').read()
with pyzstd.SeekableZstdFile(ours, 'r') as f:
    assert f.read() == data, 'whole'
    for off, n in [(0, 10), (32767, 2), (100000, 70000), (299990, 100)]:
        f.seek(off)
        assert f.read(n) == data[off:off + n], (off, n)
with pyzstd.SeekableZstdFile(theirs, 'w', max_frame_content_size=40000) as f:
    f.write(data)
"#;
    let status = std::process::Command::new("python3")
        .args(["-c", script])
        .args([&ours, &theirs, &content])
        .status()
        .unwrap();
    assert!(status.success(), "pyzstd failed on acomp's seekable output");
    let theirs = std::fs::read(&theirs).unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    let (_, entries) = parse(&theirs);
    assert_eq!(entries.len(), 8, "pyzstd's frames of 40000");
    assert_eq!(
        tfm.content_size(&[IoSlice::new(&theirs)]).unwrap(),
        Some(300_000)
    );
    // Through kept tables too: one not confirmed (pyzstd's frames declare no content
    // size: checked reads confirm the entries), one verified.
    let fresh = SeekTable::parse(&[IoSlice::new(&theirs)]).unwrap();
    let verified = SeekTable::parse(&[IoSlice::new(&theirs)]).unwrap();
    tfm.verify_seek_table(&verified, &[IoSlice::new(&theirs)])
        .unwrap();
    for cut in [Cut::One, Cut::Random(11)] {
        for ranges in [
            vec![(0, 300_000)],
            vec![(39_999, 2), (150_000, 4096)],
            vec![(299_000, 4096)],
        ] {
            let want = expected(&data, &ranges);
            for tfm in [&tfm, &Acomp::new("zstd").unwrap()] {
                assert!(read(tfm, &theirs, cut, &ranges).unwrap() == want);
                for table in [&fresh, &verified] {
                    assert!(read_kept(tfm, table, &theirs, cut, &ranges).unwrap() == want);
                }
            }
        }
    }
}

/// A seekable source as zstd's C library writes it (`ZSTD_seekable_compressStream`, level
/// 3, frames of `frame_bytes`): frames that declare no content size, checksums in the
/// table where `checksum`.
pub(crate) fn c_written(data: &[u8], frame_bytes: u32, checksum: bool) -> Vec<u8> {
    use zstd_safe::seekable::SeekableCStream;
    use zstd_safe::{InBuffer, OutBuffer};
    let frames = data.len() / frame_bytes as usize + 2;
    let mut out = vec![0u8; zstd_safe::compress_bound(data.len()) + 64 * frames];
    let mut cs = SeekableCStream::create();
    cs.init(3, checksum, frame_bytes).unwrap();
    let mut output = OutBuffer::around(&mut out[..]);
    let mut input = InBuffer::around(data);
    while input.pos() < data.len() {
        cs.compress_stream(&mut output, &mut input).unwrap();
    }
    while cs.end_stream(&mut output).unwrap() > 0 {}
    let n = output.pos();
    out.truncate(n);
    out
}

/// Reads `ranges` through a kept table.
pub(crate) fn read_kept(
    tfm: &Acomp,
    table: &SeekTable,
    src: &[u8],
    cut: Cut,
    ranges: &[(u64, usize)],
) -> Result<(usize, Vec<Vec<u8>>), Error> {
    read_by(src, cut, ranges, |src, segs| {
        tfm.decompress_seekable(table, src, segs)
    })
}

/// `data` shifted: `Ok` with the bytes at `from`, as a read that a lying entry misplaced
/// returns them.
fn shifted(data: &[u8], from: usize, len: usize) -> (usize, Vec<Vec<u8>>) {
    (len, vec![data[from..from + len].to_vec()])
}

const DISAGREES: Error = Error::Corrupt {
    detail: "seek table entry contradicts its frame (content size or length)",
};

/// Issue 39: C-written files (frames that declare no content size) whose table lies about
/// an earlier entry's decompressed size by one byte. A checked read never returns `Ok`
/// with other bytes: it confirms the entries before it (decoding their frames) and finds
/// the lie; an unchecked read that stops early returns the misplaced bytes (the documented
/// price), exactly these. The same through a kept table.
#[test]
fn checked_reads_confirm_the_entries_before_them() {
    let data = letters(131_072, 12);
    let checked = summed();
    let plain = Acomp::new("zstd").unwrap();
    for sums in [false, true] {
        let src = c_written(&data, 16384, sums);
        let (frames, entries) = parse(&src);
        assert_eq!(entries.len(), 9, "{entries:?}");
        let descriptor = if sums { 0x80 } else { 0 };
        let lie = |f: &dyn Fn(&mut Vec<Entry>)| {
            let mut e = entries.clone();
            f(&mut e);
            build(&frames, &e, descriptor)
        };
        // The file as written reads right, every way.
        for ranges in [
            vec![(110_592, 4096)],
            vec![(98_304, 100)],
            vec![(0, 131_072)],
        ] {
            let want = expected(&data, &ranges);
            for tfm in [&checked, &plain] {
                assert!(read(tfm, &src, Cut::One, &ranges).unwrap() == want);
                let table = SeekTable::parse(&[IoSlice::new(&src)]).unwrap();
                assert!(read_kept(tfm, &table, &src, Cut::Random(3), &ranges).unwrap() == want);
            }
        }
        // Entry 3 one byte too large, then too small (the sum changed): frames 4 to 7
        // are placed one byte later, then earlier.
        for (delta, shift) in [(1i64, -1i64), (-1, 1)] {
            let bad = lie(&|e| e[3].1 = (i64::from(e[3].1) + delta) as u32);
            for (off, len) in [(110_592u64, 4096usize), (98_304, 100)] {
                let ranges = [(off, len)];
                let what = format!("sums {sums}, entry 3 {delta:+}, {off}+{len}");
                for cut in [Cut::One, Cut::Every(1000)] {
                    assert_eq!(read(&checked, &bad, cut, &ranges), Err(DISAGREES), "{what}");
                    // Unchecked, the read stops inside frame 6: misplaced bytes.
                    let from = (off as i64 + shift) as usize;
                    let got = read(&plain, &bad, cut, &ranges).unwrap();
                    assert!(got == shifted(&data, from, len), "{what}");
                    let table = SeekTable::parse(&[IoSlice::new(&bad)]).unwrap();
                    assert_eq!(
                        read_kept(&checked, &table, &bad, cut, &ranges),
                        Err(DISAGREES),
                        "{what}"
                    );
                    let got = read_kept(&plain, &table, &bad, cut, &ranges).unwrap();
                    assert!(got == shifted(&data, from, len), "{what}");
                    assert_eq!(
                        checked.verify_seek_table(&table, &split(&bad, cut)),
                        Err(DISAGREES)
                    );
                    assert!(!table.is_verified());
                }
            }
        }
        // Entries 2 and 3 trade a byte (the sum kept): only frame 3 is misplaced.
        let bad = lie(&|e| {
            e[2].1 += 1;
            e[3].1 -= 1;
        });
        let table = SeekTable::parse(&[IoSlice::new(&bad)]).unwrap();
        let across = [(50_000, 4096)]; // inside frame 3, stopping early
        assert!(read(&plain, &bad, Cut::One, &across).unwrap() == shifted(&data, 49_999, 4096));
        // Through a kept table, a frame of one block is decoded whole into the table's
        // cache whatever the read takes of it, and held to its entry: the lie is seen.
        for cut in [Cut::One, Cut::Every(1000)] {
            assert_eq!(
                read_kept(&plain, &table, &bad, cut, &across),
                Err(DISAGREES)
            );
        }
        // Unchecked reads see the lie where they decode frame 3 to its end.
        let to_end = [(60_000, 5536)];
        assert_eq!(read(&plain, &bad, Cut::One, &to_end), Err(DISAGREES));
        assert_eq!(
            read_kept(&plain, &table, &bad, Cut::One, &to_end),
            Err(DISAGREES)
        );
        // Checked reads refuse every read that depends on the lying entries, the later
        // frames too, where the lies cancel out.
        for ranges in [
            vec![(50_000, 4096)],
            vec![(90_000, 10)],
            vec![(200_000, 10)],
        ] {
            assert_eq!(read(&checked, &bad, Cut::One, &ranges), Err(DISAGREES));
            assert_eq!(
                read_kept(&checked, &table, &bad, Cut::One, &ranges),
                Err(DISAGREES)
            );
        }
        // What is before the lie reads right.
        let before = [(20_000, 8000)];
        assert!(read(&checked, &bad, Cut::One, &before).unwrap() == expected(&data, &before));
        assert_eq!(
            checked.verify_seek_table(&table, &[IoSlice::new(&bad)]),
            Err(DISAGREES)
        );
    }
}

/// A verified table: checked reads through it confirm nothing more (a frame before the
/// read, changed after the verification, is not decoded again), and read right; the
/// verification pass itself decodes every frame (a lie anywhere, a changed frame, a
/// checksum that does not match: refused, the table not verified).
#[test]
fn verification_confirms_every_entry_once() {
    let data = letters(131_072, 13);
    let checked = summed();
    let plain = Acomp::new("zstd").unwrap();
    for sums in [false, true] {
        let src = c_written(&data, 16384, sums);
        let (frames, entries) = parse(&src);
        let table = SeekTable::parse(&[IoSlice::new(&src)]).unwrap();
        assert_eq!((table.frames(), table.content_size()), (9, 131_072)); // the last empty
        assert!(!table.is_verified() && !table.is_confirmed());
        // The unchecked transform verifies as thoroughly: it is one pass whatever the
        // parameters.
        plain
            .verify_seek_table(&table, &split(&src, Cut::Every(777)))
            .unwrap();
        assert!(table.is_verified() && table.is_confirmed());
        // Frame 0 changed after the verification (its magic number: wrong with or
        // without checksums), the table left as it was: a checked read of frame 5 does
        // not decode it again (what was confirmed stands); a read of frame 0 meets it.
        let mut changed = src.clone();
        changed[0] ^= 0xFF;
        let later = [(90_000, 4096)];
        let got = read_kept(&checked, &table, &changed, Cut::One, &later).unwrap();
        assert!(got == expected(&data, &later));
        assert_eq!(
            read_kept(&checked, &table, &changed, Cut::One, &[(100, 10)])
                .unwrap_err()
                .errno(),
            libc::EBADMSG
        );
        // A table not confirmed decodes frames 0 to 4 for that read, and meets it.
        let lazy = SeekTable::parse(&[IoSlice::new(&src)]).unwrap();
        let err = read_kept(&checked, &lazy, &changed, Cut::One, &later).unwrap_err();
        assert_eq!(err.errno(), libc::EBADMSG);
        assert!(!lazy.is_confirmed());
        // A checked read confirms what it decodes and keeps it: after one read of the
        // last frames, the whole table.
        let last = [(130_000, 2000)]; // to the end, and past it
        let got = read_kept(&checked, &lazy, &src, Cut::One, &last).unwrap();
        assert!(got == expected(&data, &last));
        assert!(lazy.is_confirmed() && !lazy.is_verified());
        let got = read_kept(&checked, &lazy, &changed, Cut::One, &later).unwrap();
        assert!(got == expected(&data, &later));
        // The verification decodes every frame: a changed frame anywhere is refused (the
        // table parsed before the change).
        let sixth: usize = entries[..6].iter().map(|e| e.0 as usize).sum();
        let mut at = vec![0, sixth];
        if sums {
            at.push(sixth + entries[6].0 as usize / 2); // inside: only checksums see it
        }
        for at in at {
            let mut bad = src.clone();
            bad[at] ^= 0x20;
            let t = SeekTable::parse(&[IoSlice::new(&src)]).unwrap();
            let err = plain.verify_seek_table(&t, &[IoSlice::new(&bad)]);
            assert_eq!(err.unwrap_err().errno(), libc::EBADMSG, "byte {at}");
            assert!(!t.is_verified());
        }
        if sums {
            let mut e = entries.clone();
            e[6].2 = Some(e[6].2.unwrap() ^ 1);
            let bad = build(&frames, &e, 0x80);
            let t = SeekTable::parse(&[IoSlice::new(&bad)]).unwrap();
            assert_eq!(
                plain.verify_seek_table(&t, &[IoSlice::new(&bad)]),
                Err(Error::Corrupt {
                    detail: "seek table checksum does not match the frame's content",
                })
            );
        }
    }
    // acomp's own frames declare their sizes: confirmed by the parse.
    let mut own = Vec::new();
    checked
        .compress_seekable_to_vec(&data, 16384, &mut own)
        .unwrap();
    let table = SeekTable::parse(&[IoSlice::new(&own)]).unwrap();
    assert!(table.is_confirmed() && !table.is_verified());
}

/// A kept table used with a source that changed under it: a source of another length, or
/// whose seek table differs in any byte, is refused (`EINVAL`, naming why and what to
/// do), the segments zero-filled; a change inside the frames, the table kept, is a corrupt
/// source like any (`EBADMSG` where a read decodes it).
#[test]
fn a_kept_table_refuses_a_source_that_changed() {
    let data = letters(65_536, 14);
    let tfm = summed();
    let mut src = Vec::new();
    tfm.compress_seekable_to_vec(&data, 16384, &mut src)
        .unwrap();
    let table = SeekTable::parse(&[IoSlice::new(&src)]).unwrap();
    let (frames, entries) = parse(&src);
    let other = Error::InvalidParameter {
        reason: "the source's length or seek table differs from the one this SeekTable was \
                 parsed from: the source changed; parse its table again (SeekTable::parse)"
            .into(),
    };
    let mut longer = src.clone();
    longer.push(0);
    let mut new_data = data.clone();
    new_data[20_000] ^= 1;
    let mut rewritten = Vec::new(); // another extent: other sizes, other table
    tfm.compress_seekable_to_vec(&new_data[..60_000], 16384, &mut rewritten)
        .unwrap();
    let mut changed_entry = src.clone();
    changed_entry[frames.len() + 8 + 12 + 4] ^= 1; // entry 1's decompressed size
    let mut changed_sum = src.clone();
    changed_sum[frames.len() + 8 + 8] ^= 1; // entry 0's checksum
    let mut changed_footer = src.clone();
    let n = src.len();
    changed_footer[n - 5] |= 0x01; // an unused descriptor bit
    for (what, bad) in [
        ("a byte longer", &longer),
        ("shorter", &src[..n - 1].to_vec()),
        ("rewritten", &rewritten),
        ("an entry's size", &changed_entry),
        ("an entry's checksum", &changed_sum),
        ("the footer", &changed_footer),
    ] {
        for cut in [Cut::One, Cut::Every(7), Cut::Random(5)] {
            let mut buf = [0xEEu8; 100];
            let mut segs = [Segment::new(100, &mut buf)];
            let got = tfm.decompress_seekable(&table, &split(bad, cut), &mut segs);
            assert_eq!(got, Err(other.clone()), "{what} {cut:?}");
            assert_eq!(got.unwrap_err().errno(), libc::EINVAL);
            assert!(buf.iter().all(|&b| b == 0), "{what}");
            assert_eq!(
                tfm.verify_seek_table(&table, &split(bad, cut)),
                Err(other.clone())
            );
        }
    }
    // Inside a frame, the table kept: the read that decodes it fails, others read right.
    let mut inside = src.clone();
    inside[entries[0].0 as usize + entries[1].0 as usize / 2] ^= 0x10;
    assert_eq!(
        read_kept(&tfm, &table, &inside, Cut::One, &[(20_000, 10)])
            .unwrap_err()
            .errno(),
        libc::EBADMSG
    );
    let ranges = [(40_000, 4096)];
    assert!(
        read_kept(&tfm, &table, &inside, Cut::One, &ranges).unwrap() == expected(&data, &ranges)
    );
    // And the table reads its own source as it did.
    assert!(
        read_kept(&tfm, &table, &src, Cut::Every(3), &ranges).unwrap() == expected(&data, &ranges)
    );
}

/// `SeekTable::parse` refuses what is not a seekable source, and a table that breaks the
/// format, as a range read does; reads through it give what `decompress_range` gives.
#[test]
fn kept_tables_read_as_one_off_reads_do() {
    let tfm = Acomp::new("zstd").unwrap();
    assert_eq!(SeekTable::parse(&[]).unwrap_err(), Error::EmptySource);
    let mut plain = Vec::new();
    tfm.compress_to_vec(b"abc", &mut plain).unwrap();
    assert_eq!(
        SeekTable::parse(&[IoSlice::new(&plain)]).unwrap_err(),
        Error::InvalidParameter {
            reason: "not a seekable source: its last four bytes are not the seekable magic \
                     number 0x8F92EAB1"
                .into(),
        }
    );
    let data = letters(70_000, 15);
    let mut src = Vec::new();
    tfm.compress_seekable_to_vec(&data, 10_000, &mut src)
        .unwrap();
    let (frames, entries) = parse(&src);
    let mut e = entries.clone();
    e[2].1 += 1;
    assert_eq!(
        SeekTable::parse(&[IoSlice::new(&build(&frames, &e, 0))]).unwrap_err(),
        DISAGREES
    );
    let table = SeekTable::parse(&split(&src, Cut::Every(5))).unwrap();
    let lz4 = Acomp::new("lz4").unwrap();
    let mut buf = [0u8; 10];
    let got = lz4.decompress_seekable(
        &table,
        &[IoSlice::new(&src)],
        &mut [Segment::new(0, &mut buf)],
    );
    assert_eq!(got.unwrap_err().errno(), libc::EINVAL);
    for checksum in [false, true] {
        let tfm = Acomp::with_zstd(ZstdParams::default().checksum(checksum)).unwrap();
        for ranges in [
            vec![(0, 1)],
            vec![(9_999, 2)],
            vec![(100, 4096), (30_000, 25_000), (69_990, 100)],
            vec![(5, 0), (10_000, 0), (10_000, 3), (50_000, 0)],
            vec![(70_000, 10)],
            vec![],
        ] {
            for cut in [Cut::One, Cut::Every(1), Cut::Random(7)] {
                let want = read(&tfm, &src, cut, &ranges);
                assert!(want.as_ref().unwrap() == &expected(&data, &ranges));
                let got = read_kept(&tfm, &table, &src, cut, &ranges);
                assert!(got == want, "{ranges:?} {cut:?}");
            }
        }
        // Segments out of order: EINVAL, as a one-off read.
        let (mut a, mut b) = ([0u8; 8], [0u8; 8]);
        let mut segs = [Segment::new(8, &mut a), Segment::new(0, &mut b)];
        let got = tfm.decompress_seekable(&table, &[IoSlice::new(&src)], &mut segs);
        assert_eq!(got.unwrap_err().errno(), libc::EINVAL);
    }
}

/// zstd's C library (contrib/seekable_format) and acomp agree on each other's files:
/// random reads, through a kept table and one-off, checked and not, on both writers'
/// files with and without checksums.
#[test]
fn the_c_library_reads_and_writes_the_same_format() {
    use zstd_safe::seekable::Seekable;
    let data = letters(200_000, 16);
    let mut mismatches = 0;
    for sums in [false, true] {
        let tfm = Acomp::with_zstd(ZstdParams::default().checksum(sums)).unwrap();
        let mut ours = Vec::new();
        tfm.compress_seekable_to_vec(&data, 16384, &mut ours)
            .unwrap();
        for src in [ours, c_written(&data, 16384, sums)] {
            let table = SeekTable::parse(&[IoSlice::new(&src)]).unwrap();
            tfm.verify_seek_table(&table, &[IoSlice::new(&src)])
                .unwrap();
            let mut c = Seekable::create();
            c.init_buff(&src).unwrap();
            let mut x = 0x2545_F491_4F6C_DD1Du64;
            for _ in 0..300 {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                let off = x % 200_100;
                let len = (x >> 40) as usize % 40_000;
                let mut theirs = vec![0u8; len];
                let n = c.decompress(&mut theirs[..], off).unwrap();
                let ranges = [(off, len)];
                let mut want = expected(&data, &ranges);
                theirs[n..].fill(0);
                mismatches += usize::from(want.0 != n || want.1[0] != theirs);
                want = (n, vec![theirs]);
                mismatches += usize::from(read(&tfm, &src, Cut::One, &ranges).unwrap() != want);
                let got = read_kept(&tfm, &table, &src, Cut::One, &ranges).unwrap();
                mismatches += usize::from(got != want);
            }
        }
    }
    assert_eq!(mismatches, 0);
}

/// Frames that carry their own checksum (acomp's with `checksum(true)`): a checked read
/// holds the table's checksum to the frame's (zstd checks the content against the frame's
/// as it decodes), so a table checksum that differs is refused; and an unchecked read that
/// stops inside such a frame (zstd told not to compute its checksum) leaves the workspace
/// checking checksums for every request after it.
#[test]
fn table_checksums_against_frames_that_carry_their_own() {
    let data = letters(65_536, 17);
    let checked = summed();
    let mut src = Vec::new();
    checked
        .compress_seekable_to_vec(&data, 16384, &mut src)
        .unwrap();
    let (frames, entries) = parse(&src);
    let mut e = entries.clone();
    e[1].2 = Some(e[1].2.unwrap() ^ 0x100);
    let bad = build(&frames, &e, 0x80);
    let mismatch = Error::Corrupt {
        detail: "seek table checksum does not match the frame's content",
    };
    let table = SeekTable::parse(&[IoSlice::new(&bad)]).unwrap();
    for cut in [Cut::One, Cut::Every(9)] {
        for ranges in [vec![(16_384, 1)], vec![(20_000, 4096)], vec![(0, 65_536)]] {
            assert_eq!(read(&checked, &bad, cut, &ranges), Err(mismatch.clone()));
            let got = read_kept(&checked, &table, &bad, cut, &ranges);
            assert_eq!(got, Err(mismatch.clone()));
        }
        let first = [(0, 16_384)];
        assert!(read(&checked, &bad, cut, &first).unwrap() == expected(&data, &first));
    }
    assert_eq!(
        checked.verify_seek_table(&table, &[IoSlice::new(&bad)]),
        Err(mismatch)
    );
    // A frame whose checksum is wrong, read whole after reads that stopped early.
    let plain = Acomp::new("zstd").unwrap();
    let mut frame = Vec::new();
    checked.compress_to_vec(&data, &mut frame).unwrap();
    let n = frame.len();
    frame[n - 1] ^= 1;
    let good = SeekTable::parse(&[IoSlice::new(&src)]).unwrap();
    for _ in 0..50 {
        let early = [(100, 100)];
        assert!(read(&plain, &src, Cut::One, &early).unwrap() == expected(&data, &early));
        let got = read_kept(&plain, &good, &src, Cut::One, &early).unwrap();
        assert!(got == expected(&data, &early));
        let mut back = Vec::new();
        let err = plain.decompress_to_vec(&frame, &mut back, 1 << 20);
        assert_eq!(err.unwrap_err().errno(), libc::EBADMSG);
        let err = read(&plain, &frame, Cut::One, &[(0, 65_536)]);
        assert_eq!(err.unwrap_err().errno(), libc::EBADMSG);
    }
}

/// Issue 39's goal, kept inside the project: C-written files (frames without a declared
/// content size), both checksum settings, many kinds of damage to the seek table (every
/// entry's sizes off by one or a page, two entries trading sizes, entries swapped,
/// checksums changed, the descriptor and the frame count changed); for each, reads at
/// every frame boundary and inside frames, one-off and through a kept table (verified where
/// the verification passes). A checked read never returns `Ok` with bytes other than the
/// original's; every outcome is `Ok` or `EBADMSG`/`EINVAL`, never a panic.
#[test]
fn checked_reads_of_damaged_c_tables_never_return_other_bytes() {
    let data = letters(131_072, 18);
    let checked = summed();
    let plain = Acomp::new("zstd").unwrap();
    let mut reads: Vec<(u64, usize)> = Vec::new();
    for k in 0..=8u64 {
        let b = k * 16384;
        for (off, len) in [(b, 4096), (b.saturating_sub(1), 2), (b + 100, 16384)] {
            reads.push((off, len));
        }
    }
    reads.extend([
        (0, 131_072),
        (131_000, 1000),
        (200_000, 10),
        (77_777, 33_333),
    ]);
    let mut cases = 0;
    for sums in [false, true] {
        let src = c_written(&data, 16384, sums);
        let (frames, entries) = parse(&src);
        let descriptor = if sums { 0x80 } else { 0 };
        let mut damaged: Vec<(String, Vec<u8>)> = Vec::new();
        let n = entries.len();
        for i in 0..n {
            for delta in [1i64, -1, 4096, -4096] {
                let mut e = entries.clone();
                e[i].1 = (i64::from(e[i].1) + delta).max(0) as u32;
                damaged.push((
                    format!("entry {i} size {delta:+}"),
                    build(&frames, &e, descriptor),
                ));
                if i + 1 < n {
                    e[i + 1].1 = (i64::from(e[i + 1].1) - delta).max(0) as u32;
                    damaged.push((
                        format!("entries {i}, +1 trade {delta}"),
                        build(&frames, &e, descriptor),
                    ));
                }
            }
            for delta in [1i64, -1] {
                let mut e = entries.clone();
                e[i].0 = (i64::from(e[i].0) + delta) as u32;
                if i + 1 < n {
                    e[i + 1].0 = (i64::from(e[i + 1].0) - delta) as u32;
                }
                damaged.push((
                    format!("entry {i} compressed {delta:+}"),
                    build(&frames, &e, descriptor),
                ));
            }
            if i + 1 < n {
                let mut e = entries.clone();
                e.swap(i, i + 1);
                damaged.push((
                    format!("entries {i}, +1 swapped"),
                    build(&frames, &e, descriptor),
                ));
            }
            if sums {
                let mut e = entries.clone();
                e[i].2 = Some(e[i].2.unwrap() ^ 1);
                damaged.push((
                    format!("entry {i} checksum"),
                    build(&frames, &e, descriptor),
                ));
            }
        }
        // Checksums added (all 0: they lie), or a reserved bit set. (Without its
        // checksums a table still tells the truth.)
        let flag = if sums { 0x84 } else { 0x80 };
        damaged.push(("descriptor".into(), build(&frames, &entries, flag)));
        let mut fewer = entries.clone();
        fewer.pop();
        damaged.push(("a frame fewer".into(), build(&frames, &fewer, descriptor)));
        let original = build(&frames, &entries, descriptor);
        assert_eq!(original, src);
        damaged.retain(|(_, bad)| *bad != original); // a change that changed nothing (the empty last frame's size below 0)
        for (what, bad) in &damaged {
            cases += 1;
            let src = [IoSlice::new(bad)];
            let table = SeekTable::parse(&src).ok();
            let verified = table
                .as_ref()
                .is_some_and(|t| checked.verify_seek_table(t, &src).is_ok());
            let fresh = SeekTable::parse(&src).ok();
            for &(off, len) in &reads {
                let ranges = [(off, len)];
                let want = expected(&data, &ranges);
                let mut outcomes = vec![read(&checked, bad, Cut::One, &ranges)];
                if let Some(t) = &table {
                    outcomes.push(read_kept(&checked, t, bad, Cut::One, &ranges));
                }
                if let Some(t) = &fresh {
                    outcomes.push(read_kept(&checked, t, bad, Cut::One, &ranges));
                }
                for got in outcomes {
                    match got {
                        Ok(got) => assert!(got == want, "{what}: Ok with other bytes: {off}+{len}"),
                        Err(e) => assert!([libc::EBADMSG, libc::EINVAL].contains(&e.errno())),
                    }
                }
                // Unchecked: any outcome but a panic (the documented price).
                let _ = read(&plain, bad, Cut::One, &ranges);
                if let Some(t) = &fresh {
                    let _ = read_kept(&plain, t, bad, Cut::One, &ranges);
                }
            }
            // A table that lies is never verified.
            assert!(!verified, "{what}: damaged table verified");
        }
    }
    assert!(cases > 100, "{cases} cases");
}
