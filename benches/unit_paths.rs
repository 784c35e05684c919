//! Where a whole unit's load and store go, and which libzstd call serves a whole-unit frame
//! fastest: zstd-safe alone on one reused context (the floor) beside acomp, on the same
//! frames of 64 KiB and 256 KiB units (zstd level -1, blocks of at most 128 KiB: the
//! configuration of the zswap example's goal rows).
//!
//! - `one-shot`: `ZSTD_decompressDCtx` into the unit's buffer (what acomp does for a frame
//!   whose content fits one block maximum: the 64 KiB units).
//! - `stream-blocks`: `ZSTD_decompressStream` fed the frame header, then a block at a time
//!   into the whole buffer, as acomp's stream path feeds it (a frame over the block
//!   maximum: the 256 KiB units); zstd decodes into its window buffer and copies out.
//! - `stream-stable`: the same with `ZSTD_d_stableOutBuffer`: zstd decodes straight into
//!   the buffer.
//! - `acomp`: `Acomp::decompress_to_buffer`, as the example's whole-unit load calls it.
//! - `compress2` and `acomp-compress`: the store side, a unit per call.
//! - `compress2-minmatch7`, `stream-stable-minmatch7`: the same frames with a minimum match
//!   of 7 (level -1 uses 6 here), and what they cost in bytes (printed).
//!
//! Criterion's time is for a pass over every unit: MiB/s is criterion's throughput.
//!
//! ```text
//! cargo run --release --example zswap -- --pid PID --save-pages heap.pages
//! ACOMP_PAGES=heap.pages cargo bench --bench unit_paths
//! ```
//!
//! `ACOMP_PAGES_MAX` (default 16,384) bounds the pages taken from the front of the file.
//! Without `ACOMP_PAGES`, the bench's own executable's pages.

use std::hint::black_box;

use acomp::{Acomp, ZstdParams};
use criterion::{Criterion, Throughput};

use acomp_pages::file as page_file;
use zstd_safe::{CCtx, CParameter, DCtx, DParameter, InBuffer, OutBuffer, ResetDirective};

const PAGE: usize = 4096;
const LEVEL: i32 = -1;
const BLOCK: u32 = 128 << 10;

/// The length of a frame's header (magic number included), from its descriptor byte
/// (zstd's format, "Frame_Header").
fn header_len(frame: &[u8]) -> usize {
    let fhd = frame[4];
    let single_segment = fhd & 0x20 != 0;
    let dict_id = [0, 1, 2, 4][usize::from(fhd & 3)];
    let fcs = match fhd >> 6 {
        0 if single_segment => 1,
        0 => 0,
        1 => 2,
        2 => 4,
        _ => 8,
    };
    5 + usize::from(!single_segment) + dict_id + fcs
}

/// Decodes `frame` into `out` by feeding zstd the header, then a block (3-byte header and
/// content) at a time, as acomp's stream path does.
fn stream_blocks(dctx: &mut DCtx<'_>, frame: &[u8], out: &mut [u8]) -> usize {
    dctx.reset(ResetDirective::SessionOnly).expect("reset");
    let mut output = OutBuffer::around(out);
    let mut at = 0;
    let mut next = header_len(frame);
    loop {
        let mut input = InBuffer::around(&frame[at..next]);
        while input.pos() < input.src.len() {
            dctx.decompress_stream(&mut output, &mut input)
                .expect("a frame zstd wrote");
        }
        at = next;
        if at == frame.len() {
            // Flush what zstd holds.
            let mut empty = InBuffer::around(&[][..]);
            loop {
                let before = output.pos();
                let hint = dctx
                    .decompress_stream(&mut output, &mut empty)
                    .expect("a frame zstd wrote");
                if hint == 0 || output.pos() == before {
                    break;
                }
            }
            return output.pos();
        }
        let h = u32::from_le_bytes([frame[at], frame[at + 1], frame[at + 2], 0]);
        let (kind, size) = ((h >> 1) & 3, (h >> 3) as usize);
        next = at + 3 + if kind == 1 { 1 } else { size };
    }
}

fn main() {
    let (path, bytes) = page_file::read();
    let max = page_file::max_pages(16_384);
    let bytes = &bytes[..bytes.len().min(max * PAGE) / PAGE * PAGE];
    let mut c = Criterion::default().configure_from_args();
    for unit_pages in [16usize, 64] {
        let unit = unit_pages * PAGE;
        let units: Vec<&[u8]> = bytes.chunks_exact(unit).collect();
        assert!(!units.is_empty(), "{path}: fewer pages than a unit");
        let mut cctx = CCtx::create();
        cctx.set_parameter(CParameter::CompressionLevel(LEVEL))
            .expect("level");
        cctx.set_parameter(CParameter::MaxBlockSize(BLOCK))
            .expect("block");
        let frames: Vec<Vec<u8>> = units
            .iter()
            .map(|u| {
                let mut f = vec![0u8; zstd_safe::compress_bound(u.len())];
                let n = cctx.compress2(&mut f[..], u).expect("compress2");
                f.truncate(n);
                f
            })
            .collect();
        let stored: usize = frames.iter().map(Vec::len).sum();
        println!(
            "{} units of {} KiB from {path}: {stored} bytes of frames ({:.2}x)",
            units.len(),
            unit / 1024,
            (units.len() * unit) as f64 / stored as f64
        );
        let tfm = Acomp::with_zstd(ZstdParams::default().level(LEVEL).block_size_max(BLOCK))
            .expect("acomp zstd");
        let mut out = vec![0u8; unit];
        let mut dctx = DCtx::create();
        let mut stable = DCtx::create();
        stable
            .set_parameter(DParameter::StableOutBuffer(true))
            .expect("ZSTD_d_stableOutBuffer");
        // Every path gives every unit back.
        for (u, f) in units.iter().zip(&frames) {
            out.fill(0);
            assert_eq!(tfm.decompress_to_buffer(f, &mut out), Ok(unit));
            assert!(out == *u);
            out.fill(0);
            assert_eq!(stream_blocks(&mut dctx, f, &mut out), unit);
            assert!(out == *u);
            out.fill(0);
            assert_eq!(stream_blocks(&mut stable, f, &mut out), unit);
            assert!(out == *u);
            if unit <= BLOCK as usize {
                out.fill(0);
                assert_eq!(dctx.decompress(&mut out[..], f), Ok(unit));
                assert!(out == *u);
            }
        }
        let mut g = c.benchmark_group(format!("unit-{}K", unit / 1024));
        g.throughput(Throughput::Bytes((units.len() * unit) as u64));
        if unit <= BLOCK as usize {
            g.bench_function("one-shot", |b| {
                b.iter(|| {
                    for f in &frames {
                        black_box(dctx.decompress(&mut out[..], f).expect("a frame"));
                    }
                });
            });
        }
        g.bench_function("stream-blocks", |b| {
            b.iter(|| {
                for f in &frames {
                    black_box(stream_blocks(&mut dctx, f, &mut out));
                }
            });
        });
        g.bench_function("stream-stable", |b| {
            b.iter(|| {
                for f in &frames {
                    black_box(stream_blocks(&mut stable, f, &mut out));
                }
            });
        });
        g.bench_function("acomp", |b| {
            b.iter(|| {
                for f in &frames {
                    black_box(tfm.decompress_to_buffer(f, &mut out).expect("a frame"));
                }
            });
        });
        let mut dst = vec![0u8; zstd_safe::compress_bound(unit)];
        g.bench_function("compress2", |b| {
            b.iter(|| {
                for u in &units {
                    black_box(cctx.compress2(&mut dst[..], u).expect("compress2"));
                }
            });
        });
        // What a longer minimum match (`ZSTD_c_minMatch`; level -1 uses 6 at these sizes)
        // would buy: fewer sequences to find, code and decode, for some bytes.
        {
            let min_match = 7u32;
            let mut mm = CCtx::create();
            mm.set_parameter(CParameter::CompressionLevel(LEVEL))
                .expect("level");
            mm.set_parameter(CParameter::MaxBlockSize(BLOCK))
                .expect("block");
            mm.set_parameter(CParameter::MinMatch(min_match))
                .expect("ZSTD_c_minMatch");
            let mm_frames: Vec<Vec<u8>> = units
                .iter()
                .map(|u| {
                    let mut f = vec![0u8; zstd_safe::compress_bound(u.len())];
                    let n = mm.compress2(&mut f[..], u).expect("compress2");
                    f.truncate(n);
                    f
                })
                .collect();
            let bytes: usize = mm_frames.iter().map(Vec::len).sum();
            println!(
                "  minMatch {min_match}: {bytes} bytes of frames ({:.4}x the default's)",
                bytes as f64 / stored as f64
            );
            g.bench_function(format!("compress2-minmatch{min_match}"), |b| {
                b.iter(|| {
                    for u in &units {
                        black_box(mm.compress2(&mut dst[..], u).expect("compress2"));
                    }
                });
            });
            g.bench_function(format!("stream-stable-minmatch{min_match}"), |b| {
                b.iter(|| {
                    for f in &mm_frames {
                        black_box(stream_blocks(&mut stable, f, &mut out));
                    }
                });
            });
        }
        g.bench_function("acomp-compress", |b| {
            b.iter(|| {
                for u in &units {
                    black_box(
                        tfm.compress_to_buffer(u, &mut dst[..unit])
                            .expect("compress"),
                    );
                }
            });
        });
        g.finish();
    }
}
