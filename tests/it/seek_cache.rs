//! The frame a kept `SeekTable` decoded last, kept with it: reads served from it give what
//! a decode gives, byte for byte and error for error, whoever wrote the file and however
//! the source is cut; a source whose frame changed under the table is decoded again; a
//! checked read is never served from a frame an unchecked read decoded.

use std::io::IoSlice;

use crate::common::*;
use crate::seekable::{c_written, read_kept};
use acomp::{Acomp, Error, SeekTable, ZstdParams};

/// The three writers' sources of `data` in 16 KiB frames: the C library's with and
/// without table checksums, acomp's with its checksums.
fn sources(data: &[u8]) -> Vec<(&'static str, Vec<u8>)> {
    let mut own = Vec::new();
    Acomp::with_zstd(ZstdParams::default().checksum(true))
        .unwrap()
        .compress_seekable_to_vec(data, 16384, &mut own)
        .unwrap();
    vec![
        ("C, sums", c_written(data, 16384, true)),
        ("C", c_written(data, 16384, false)),
        ("acomp", own),
    ]
}

/// Reads in turn through one kept table, most inside the frame the read before decoded
/// (parts of it, the whole, several segments, an empty one), then across frames and past
/// the end: each gives exactly what a one-off `decompress_range` gives.
#[test]
fn reads_served_from_the_last_frame_are_what_a_decode_gives() {
    let data = letters(131_072, 21);
    let reads: &[&[(u64, usize)]] = &[
        &[(16_484, 50)],
        &[(16_384 + 5000, 4096)],
        &[(16_384, 16_384)],
        &[(32_768 - 384, 384)],
        &[(16_500, 10), (17_000, 0), (20_000, 100)],
        &[(16_000, 1000)], // frames 0 and 1
        &[(20_000, 4096)],
        &[(130_000, 2000)], // the last frame, past the end
        &[(131_000, 72)],
        &[(200_000, 10)],
        &[(20_000, 4096)],
    ];
    for checksum in [false, true] {
        let tfm = Acomp::with_zstd(ZstdParams::default().checksum(checksum)).unwrap();
        for (writer, src) in sources(&data) {
            for cut in [Cut::One, Cut::Every(1000)] {
                let table = SeekTable::parse(&split(&src, cut)).unwrap();
                for ranges in reads {
                    let want = read(&tfm, &src, cut, ranges);
                    assert_eq!(want, Ok(expected(&data, ranges)));
                    let got = read_kept(&tfm, &table, &src, cut, ranges);
                    assert!(got == want, "{writer} {cut:?} {checksum} {ranges:?}");
                }
            }
        }
    }
}

/// A frame changed under the table (its bytes, the seek table kept): the read after it
/// decodes the source it is given, as a fresh table's read does, never the bytes the table
/// decoded before; the source put back reads right again.
#[test]
fn a_frame_changed_under_the_table_is_decoded_again() {
    let data = letters(131_072, 22);
    let plain = Acomp::new("zstd").unwrap();
    let checked = Acomp::with_zstd(ZstdParams::default().checksum(true)).unwrap();
    let ranges = [(16_384 + 4096, 4096)];
    for (writer, src) in sources(&data) {
        for (tfm, sure) in [(&plain, false), (&checked, writer != "C")] {
            let table = SeekTable::parse(&[IoSlice::new(&src)]).unwrap();
            plain
                .verify_seek_table(&table, &[IoSlice::new(&src)])
                .unwrap();
            let good = read_kept(tfm, &table, &src, Cut::One, &ranges);
            assert_eq!(good, Ok(expected(&data, &ranges)), "{writer}");
            // Bytes in the middle of frame 1 (the second), every bit of one byte in turn,
            // and its last byte.
            let (_, start, size) = frame_bounds(&src, 1);
            for at in [start + size / 2, start + size - 1] {
                for bit in [0x01u8, 0x10, 0x80] {
                    let mut bad = src.clone();
                    bad[at] ^= bit;
                    let fresh = SeekTable::parse(&[IoSlice::new(&bad)]).unwrap();
                    let want = read_kept(tfm, &fresh, &bad, Cut::One, &ranges);
                    let got = read_kept(tfm, &table, &bad, Cut::One, &ranges);
                    let what = format!("{writer} byte {at} ^ {bit:#x}");
                    assert!(got == want, "{what}: not what a decode gives");
                    // Checked, with checksums: the change is seen, never the old bytes.
                    if sure {
                        assert_eq!(
                            got.map(|_| ()).unwrap_err().errno(),
                            libc::EBADMSG,
                            "{what}"
                        );
                    }
                    // Put back: the table reads right.
                    assert!(
                        read_kept(tfm, &table, &src, Cut::One, &ranges) == good,
                        "{what}"
                    );
                }
            }
        }
    }
}

/// Frame `i`'s index, first byte and size in a seekable source (its table read by hand).
fn frame_bounds(src: &[u8], i: usize) -> (usize, usize, usize) {
    let n = src.len();
    let frames = u32::from_le_bytes(src[n - 9..n - 5].try_into().unwrap()) as usize;
    let width = if src[n - 5] & 0x80 != 0 { 12 } else { 8 };
    let table = n - 9 - frames * width;
    let size = |k: usize| u32::from_le_bytes(src[table + k * width..][..4].try_into().unwrap());
    let start: usize = (0..i).map(|k| size(k) as usize).sum();
    (i, start, size(i) as usize)
}

/// A table whose entry 1 checksum lies, over acomp's frames (which carry their own): an
/// unchecked read of frame 1 returns its bytes (it checks no checksum) and leaves the frame
/// decoded with the table; a checked read of the same bytes after it is still refused.
#[test]
fn a_checked_read_is_not_served_from_an_unchecked_decode() {
    let data = letters(131_072, 23);
    let plain = Acomp::new("zstd").unwrap();
    let checked = Acomp::with_zstd(ZstdParams::default().checksum(true)).unwrap();
    let (_, src) = sources(&data).pop().unwrap();
    let n = src.len();
    let frames = u32::from_le_bytes(src[n - 9..n - 5].try_into().unwrap()) as usize;
    let mut bad = src.clone();
    bad[n - 9 - frames * 12 + 12 + 8] ^= 1; // entry 1's checksum
    let table = SeekTable::parse(&[IoSlice::new(&bad)]).unwrap();
    let ranges = [(16_384 + 100, 4096)];
    assert_eq!(
        read_kept(&plain, &table, &bad, Cut::One, &ranges),
        Ok(expected(&data, &ranges))
    );
    for _ in 0..2 {
        assert_eq!(
            read_kept(&checked, &table, &bad, Cut::One, &ranges),
            Err(Error::Corrupt {
                detail: "seek table checksum does not match the frame's content",
            })
        );
    }
}

/// Threads sharing one kept table read their bytes: a read that finds the last frame taken
/// by another decodes without it, never waits and never sees the other's frame.
#[test]
fn threads_sharing_a_table_read_their_bytes() {
    let data = letters(131_072, 24);
    for checksum in [false, true] {
        let tfm = Acomp::with_zstd(ZstdParams::default().checksum(checksum)).unwrap();
        for (writer, src) in sources(&data) {
            let table = SeekTable::parse(&[IoSlice::new(&src)]).unwrap();
            std::thread::scope(|s| {
                for t in 0..4u64 {
                    let (tfm, table, src, data) = (&tfm, &table, &src, &data);
                    s.spawn(move || {
                        let mut x = 0x9E37_79B9_7F4A_7C15u64 ^ t;
                        for _ in 0..400 {
                            x ^= x << 13;
                            x ^= x >> 7;
                            x ^= x << 17;
                            // Mostly inside two frames, so that threads meet on them.
                            let off = (x % 32_768) + (x >> 60) * 16_384;
                            let len = ((x >> 20) % 5000) as usize;
                            let ranges = [(off, len)];
                            let got = read_kept(tfm, table, src, Cut::One, &ranges);
                            assert!(got == Ok(expected(data, &ranges)), "{writer} {off}+{len}");
                        }
                    });
                }
            });
        }
    }
}

/// A table's `Debug` names the frame it keeps and its sizes, not its bytes.
#[test]
fn debug_shows_the_last_frame_not_its_bytes() {
    let data = letters(65_536, 25);
    let src = c_written(&data, 16384, false);
    let table = SeekTable::parse(&[IoSlice::new(&src)]).unwrap();
    assert!(format!("{table:?}").contains("cache: FrameCache { frame: None }"));
    let tfm = Acomp::new("zstd").unwrap();
    read_kept(&tfm, &table, &src, Cut::One, &[(20_000, 10)]).unwrap();
    let shown = format!("{table:?}");
    assert!(
        shown.contains("cache: FrameCache { frame: 1, checked: false, compressed_bytes: "),
        "{shown}"
    );
    assert!(shown.contains("content_bytes: 16384 }"), "{shown}");
    assert!(shown.len() < 2000, "{} bytes", shown.len());
}
