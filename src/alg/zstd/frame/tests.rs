use super::*;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use zstd_safe::zstd_sys::ZSTD_EndDirective;
use zstd_safe::{CCtx, CParameter, InBuffer, OutBuffer};

/// What zstd's own parsers say `scan_frame::<false>` should answer.
fn zstd_says(src: &[u8]) -> Option<(u64, u64)> {
    match FrameHeader::read(src) {
        FrameHeader::Frame {
            window,
            content_size: Some(size),
            ..
        } if zstd_safe::find_frame_compressed_size(src) == Ok(src.len()) => Some((size, window)),
        _ => None,
    }
}

/// `single_frame`'s content size and window: what zstd's parsers give.
fn sizes(f: Option<OneFrame>) -> Option<(u64, u64)> {
    f.map(|f| (f.content_size, f.window))
}

/// The [`OneFrame`] of a frame `single_frame` accepted, from zstd's header parser and the
/// block headers read one by one.
fn described(src: &[u8]) -> OneFrame {
    let FrameHeader::Frame {
        header_size,
        window,
        content_size: Some(content_size),
        checksum,
        ..
    } = FrameHeader::read(src)
    else {
        panic!("not a frame with content size");
    };
    let first = BlockHeader::parse([src[header_size], src[header_size + 1], src[header_size + 2]])
        .expect("scanned");
    OneFrame {
        content_size,
        window,
        dict_or_checksum: checksum || src[4] & FHD_DICT_ID != 0,
        only_block: first.last.then_some((first, header_size + BLOCK_HEADER)),
    }
}

/// Whether every block of the one frame `src` (as `scan_frame` read it) keeps to the
/// block maximum of `window` and, if compressed, is 2 bytes at least: the rules
/// `single_frame` adds to zstd's parsers.
fn blocks_within_max(src: &[u8], window: u64) -> bool {
    let FrameHeader::Frame { header_size, .. } = FrameHeader::read(src) else {
        return false;
    };
    let mut pos = header_size;
    loop {
        let b = BlockHeader::parse([src[pos], src[pos + 1], src[pos + 2]]).expect("scanned");
        if u64::from(b.size) > block_max(window)
            || b.content_len() as u64 > block_max(window)
            || (b.kind == BlockType::Compressed && b.size < 2)
        {
            return false;
        }
        if b.last {
            return true;
        }
        pos += BLOCK_HEADER + b.content_len();
    }
}

fn frames(rng: &mut StdRng) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    for (len, level, checksum, size_flag, wlog) in [
        (0, 3, false, true, 0),
        (1, 1, true, true, 0),
        (255, 3, false, true, 0),
        (256, 3, true, true, 0),
        (4096, -5, false, true, 0),
        (70_000, 3, true, true, 0),
        (300_000, 1, false, true, 0),
        (5000, 3, false, true, 20),
        (5000, 3, false, false, 0),
    ] {
        let data: Vec<u8> = (0..len).map(|_| b'a' + rng.random_range(0..4u8)).collect();
        let mut cctx = CCtx::create();
        cctx.set_parameter(CParameter::CompressionLevel(level))
            .unwrap();
        cctx.set_parameter(CParameter::ChecksumFlag(checksum))
            .unwrap();
        cctx.set_parameter(CParameter::ContentSizeFlag(size_flag))
            .unwrap();
        if wlog > 0 {
            cctx.set_parameter(CParameter::WindowLog(wlog)).unwrap();
        }
        let mut f = vec![0u8; zstd_safe::compress_bound(len)];
        let mut output = OutBuffer::around(&mut f[..]);
        let mut input = InBuffer::around(&data[..]);
        // Data first, end apart: no single-segment shrink, a real window descriptor.
        let mode = if wlog > 0 {
            ZSTD_EndDirective::ZSTD_e_continue
        } else {
            ZSTD_EndDirective::ZSTD_e_end
        };
        let mut left = cctx
            .compress_stream2(&mut output, &mut input, mode)
            .unwrap();
        let mut end = InBuffer::around(&[]);
        if wlog > 0 {
            left = 1;
        }
        while left > 0 {
            left = cctx
                .compress_stream2(&mut output, &mut end, ZSTD_EndDirective::ZSTD_e_end)
                .unwrap();
        }
        let n = output.pos();
        f.truncate(n);
        out.push(f);
    }
    out
}

#[test]
fn scan_agrees_with_zstd_on_every_input() {
    let mut rng = StdRng::seed_from_u64(7);
    let frames = frames(&mut rng);
    let mut agreed_some = 0;
    let mut over_max = 0;
    for f in &frames {
        assert_eq!(sizes(single_frame(f)), zstd_says(f));
        agreed_some += usize::from(single_frame(f).is_some());
        for _ in 0..20_000 {
            let mut m = f.clone();
            match rng.random_range(0..5) {
                // Mutate a header byte, or any byte, or a few.
                0 => {
                    let i = rng.random_range(0..m.len().min(18));
                    m[i] = rng.random();
                }
                1 => {
                    let i = rng.random_range(0..m.len());
                    m[i] ^= 1 << rng.random_range(0..8);
                }
                2 => m.truncate(rng.random_range(0..m.len())),
                3 => m.extend((0..rng.random_range(1..20)).map(|_| rng.random::<u8>())),
                _ => {
                    for _ in 0..3 {
                        let i = rng.random_range(0..m.len());
                        m[i] = rng.random();
                    }
                }
            }
            let zstd = zstd_says(&m);
            assert_eq!(sizes(scan_frame::<false>(&m)), zstd, "{m:02x?}");
            let within = zstd.filter(|&(_, window)| blocks_within_max(&m, window));
            if let Some(one) = single_frame(&m) {
                assert_eq!(one, described(&m), "{m:02x?}");
            }
            over_max += usize::from(zstd.is_some() && within.is_none());
            assert_eq!(sizes(single_frame(&m)), within, "{m:02x?}");
        }
    }
    // Two frames, a skippable frame: never one frame.
    let two = [frames[1].clone(), frames[1].clone()].concat();
    assert_eq!(single_frame(&two), None);
    assert_eq!(zstd_says(&two), None);
    assert!(agreed_some >= 7, "{agreed_some}");
    assert!(over_max > 0, "no mutation made a block over the maximum");
}

#[test]
fn block_headers() {
    // Last raw block of 5 bytes: 1 | 0 << 1 | 5 << 3.
    let raw = BlockHeader::parse(41u32.to_le_bytes()[..3].try_into().unwrap()).unwrap();
    assert_eq!(
        raw,
        BlockHeader {
            last: true,
            kind: BlockType::Raw,
            size: 5
        }
    );
    assert_eq!(raw.content_len(), 5);
    let rle = BlockHeader::parse([0b010, 0x10, 0]).unwrap();
    assert_eq!((rle.last, rle.kind, rle.size), (false, BlockType::Rle, 512));
    assert_eq!(rle.content_len(), 1);
    let cmp = BlockHeader::parse([0b101, 0, 0x80]).unwrap();
    assert_eq!((cmp.kind, cmp.size), (BlockType::Compressed, 1 << 20));
    assert_eq!(BlockHeader::parse([0b110, 0, 0]), None); // reserved type
    assert_eq!(block_max(1024), 1024);
    assert_eq!(block_max(1 << 23), 128 * 1024);
    assert_eq!(descriptor_window(0), 1024);
    assert_eq!(descriptor_window((13 << 3) | 4), (1 << 23) + 4 * (1 << 20));
}

#[test]
fn skippable_and_incomplete_headers() {
    let mut skip = 0x184D_2A53u32.to_le_bytes().to_vec();
    skip.extend(7u32.to_le_bytes());
    assert_eq!(FrameHeader::read(&skip), FrameHeader::Skippable { size: 7 });
    assert_eq!(FrameHeader::read(&skip[..5]), FrameHeader::Incomplete);
    assert!(matches!(
        FrameHeader::read(b"nope"),
        FrameHeader::Invalid(_)
    ));
}

/// `dict_id` reads the field `ZSTD_getFrameHeader` reads, for every field size, with and
/// without a window descriptor.
#[test]
fn dict_id_reads_what_zstd_reads() {
    for (flag, id) in [(0u8, 0u32), (1, 0xab), (2, 0xabcd), (3, 0x89ab_cdef)] {
        for single_segment in [false, true] {
            let mut frame = ZSTD_MAGICNUMBER.to_le_bytes().to_vec();
            frame.push(
                flag | if single_segment {
                    FHD_SINGLE_SEGMENT
                } else {
                    0
                },
            );
            if !single_segment {
                frame.push(0); // window 1 KiB
            }
            let size = [0, 1, 2, 4][usize::from(flag)];
            frame.extend_from_slice(&id.to_le_bytes()[..size]);
            if single_segment {
                frame.push(0); // content size 0
            }
            frame.extend_from_slice(&[1, 0, 0]); // last block: raw, empty
            let FrameHeader::Frame { dict_id: read, .. } = FrameHeader::read(&frame) else {
                panic!("flag {flag}: not a frame");
            };
            assert_eq!(read, id, "flag {flag}");
            if single_segment {
                assert!(single_frame(&frame).is_some());
                assert_eq!(dict_id(&frame), Some(id), "flag {flag}");
            }
        }
    }
}
