//! The floor under larger compression units (BENCHMARKS.md, "Larger compression units"): what
//! zstd itself (zstd-safe on one reused `DCtx`, no acomp in between) spends to load pages
//! out of 64 KiB units, against 4 KiB frames, on a live process's memory.
//!
//! From the second half of the process's private memory (read as the zswap example's
//! `--pid` reads it), the first `ACOMP_UNIT_COUNT` (default 300) runs of 16 contiguous pages
//! none of which is same-filled are compressed at level 3 as 16 page frames and as one
//! 64 KiB frame with blocks of at most 4 KiB, 16 KiB and 128 KiB (zstd's own limit). Then:
//!
//! - `pages`: every page frame decompressed (`ZSTD_decompressDCtx`);
//! - `units-<block>`: every unit frame decompressed whole;
//! - `single-<block>`: one page `k` of each unit (`k` = unit number mod 16, so every page
//!   position equally often) by streaming the frame (`ZSTD_decompressStream`) until the
//!   output reaches the page's end, as a range read does.
//!
//! ```sh
//! python3 ../shared/workloads/python_heap.py &              # wait for "ready PID"
//! cargo bench --bench unit_floor --no-run                    # names target/release/deps/unit_floor-<hash>
//! ACOMP_UNIT_PID=PID target/release/deps/unit_floor-<hash> --bench   # times, a quick look
//! ACOMP_UNIT_PID=PID ACOMP_CALLGRIND=single-4K valgrind --tool=callgrind \
//!     --toggle-collect='*callgrind_loop*' target/release/deps/unit_floor-<hash>
//! ```
//!
//! Instructions per page are callgrind's "Collected" over the pages each mode yields
//! (16 × units for `pages` and `units-*`, one per unit for `single-*`; the bench prints
//! the count), after a warm-up pass outside the collection. Without `ACOMP_UNIT_PID` (as `cargo test --benches` runs it) it checks
//! every mode on a few synthetic units.

use std::hint::black_box;
use std::time::{Duration, Instant};

use zstd_safe::{CCtx, CParameter, DCtx, InBuffer, OutBuffer, ResetDirective};

use acomp_pages::snapshot;

const PAGE: usize = 4096;
/// Pages per unit: 64 KiB.
const UNIT: usize = 16;
const LEVEL: i32 = 3;
/// Block limits of the unit frames; 128 KiB is zstd's own.
const BLOCKS: [(&str, u32); 3] = [("4K", 4 << 10), ("16K", 16 << 10), ("128K", 128 << 10)];

/// Frames of the same pages: one per page, and one per unit at each block limit.
struct Frames {
    pages: Vec<Vec<u8>>,
    units: Vec<Vec<Vec<u8>>>,
}

fn compress(cctx: &mut CCtx<'_>, src: &[u8]) -> Vec<u8> {
    let mut frame = vec![0u8; zstd_safe::compress_bound(src.len())];
    let n = cctx.compress2(&mut frame[..], src).expect("ZSTD_compress2");
    frame.truncate(n);
    frame
}

fn cctx(block: Option<u32>) -> CCtx<'static> {
    let mut c = CCtx::create();
    c.set_parameter(CParameter::CompressionLevel(LEVEL))
        .expect("level");
    if let Some(b) = block {
        c.set_parameter(CParameter::MaxBlockSize(b))
            .expect("ZSTD_c_maxBlockSize");
    }
    c
}

fn frames(units: &[&[u8]]) -> Frames {
    let mut page = cctx(None);
    let pages = units
        .iter()
        .flat_map(|u| u.chunks_exact(PAGE))
        .map(|p| compress(&mut page, p))
        .collect();
    let units = BLOCKS
        .iter()
        .map(|&(_, b)| {
            let mut c = cctx(Some(b));
            units.iter().map(|u| compress(&mut c, u)).collect()
        })
        .collect();
    Frames { pages, units }
}

/// Page `k` of a unit frame: streams it until the output reaches the page's end.
fn single_page(dctx: &mut DCtx<'_>, frame: &[u8], k: usize, out: &mut [u8]) {
    dctx.reset(ResetDirective::SessionOnly).expect("reset");
    let end = (k + 1) * PAGE;
    let mut ob = OutBuffer::around(&mut out[..end]);
    let mut ib = InBuffer::around(frame);
    while ob.pos() < end {
        let before = (ib.pos(), ob.pos());
        dctx.decompress_stream(&mut ob, &mut ib)
            .expect("ZSTD_decompressStream");
        assert_ne!(before, (ib.pos(), ob.pos()), "no progress");
    }
}

/// One pass of [`pass`]: the code callgrind counts (`--toggle-collect`).
#[inline(never)]
fn callgrind_loop(mode: &str, f: &Frames, dctx: &mut DCtx<'_>, out: &mut [u8]) -> usize {
    pass(mode, f, dctx, out)
}

/// One pass of a mode over its frames. Returns the pages out.
fn pass(mode: &str, f: &Frames, dctx: &mut DCtx<'_>, out: &mut [u8]) -> usize {
    let mut total = 0;
    if mode == "pages" {
        for frame in &f.pages {
            let n = dctx
                .decompress(&mut out[..PAGE], black_box(&frame[..]))
                .expect("page frame");
            total += n / PAGE;
        }
        return total;
    }
    let (kind, block) = mode
        .split_once('-')
        .expect("units-<block> or single-<block>");
    let b = BLOCKS
        .iter()
        .position(|&(name, _)| name == block)
        .expect("a block limit of BLOCKS");
    for (i, frame) in f.units[b].iter().enumerate() {
        total += match kind {
            "units" => {
                let n = dctx
                    .decompress(&mut out[..], black_box(&frame[..]))
                    .expect("unit frame");
                n / PAGE
            }
            "single" => {
                single_page(dctx, black_box(frame), i % UNIT, out);
                1
            }
            _ => panic!("mode: pages, units-<block> or single-<block>"),
        };
    }
    total
}

/// The units: runs of [`UNIT`] pages, none same-filled, from the second half of a live
/// process's private memory, or a few synthetic ones.
fn input() -> Vec<u8> {
    let count: usize = std::env::var("ACOMP_UNIT_COUNT").map_or(300, |v| v.parse().expect("N"));
    let Ok(pid) = std::env::var("ACOMP_UNIT_PID") else {
        // Text-like pages that vary: enough for every mode to run.
        return (0..4 * UNIT * PAGE / 8)
            .flat_map(|i: usize| (i.wrapping_mul(2_654_435_761) % 977).to_le_bytes())
            .collect();
    };
    let pid: i32 = pid.parse().expect("ACOMP_UNIT_PID: a pid");
    let maps = snapshot::read_maps(pid).expect("the process's maps");
    let snap = snapshot::read_mappings(pid, &maps, None).expect("its memory");
    let data = &snap.data[snap.data.len() / 2 / (UNIT * PAGE) * (UNIT * PAGE)..];
    data.chunks_exact(UNIT * PAGE)
        .filter(|u| {
            u.chunks_exact(PAGE)
                .all(|p| p.chunks_exact(8).any(|w| w != &p[..8]))
        })
        .take(count)
        .flatten()
        .copied()
        .collect()
}

fn main() {
    let data = input();
    let units: Vec<&[u8]> = data.chunks_exact(UNIT * PAGE).collect();
    let f = frames(&units);
    let mut dctx = DCtx::create();
    let mut out = vec![0u8; UNIT * PAGE];
    let mut modes = vec!["pages".to_owned()];
    for kind in ["units", "single"] {
        modes.extend(BLOCKS.iter().map(|(b, _)| format!("{kind}-{b}")));
    }
    if let Ok(mode) = std::env::var("ACOMP_CALLGRIND") {
        pass(&mode, &f, &mut dctx, &mut out); // warm-up, outside the collection
        let pages = callgrind_loop(&mode, &f, &mut dctx, &mut out);
        println!("{mode}: {pages} pages out (divide Collected by this)");
        return;
    }
    for mode in &modes {
        assert!(pass(mode, &f, &mut dctx, &mut out) > 0);
    }
    // Every unit frame decodes to its unit, every page frame to its page.
    for (b, frames) in f.units.iter().enumerate() {
        for (frame, unit) in frames.iter().zip(&units) {
            let n = dctx.decompress(&mut out[..], &frame[..]).expect("unit");
            assert_eq!(&out[..n], *unit, "units-{}", BLOCKS[b].0);
        }
    }
    if std::env::args().all(|a| a != "--bench") {
        println!("unit_floor: every mode ran; see the file's head to measure");
        return;
    }
    let bytes = |frames: &[Vec<u8>]| frames.iter().map(Vec::len).sum::<usize>();
    println!(
        "{} units of {UNIT} pages; frame bytes: pages {}, {}",
        units.len(),
        bytes(&f.pages),
        BLOCKS
            .iter()
            .zip(&f.units)
            .map(|((b, _), u)| format!(
                "units-{b} {} ({:.3}x)",
                bytes(u),
                bytes(u) as f64 / bytes(&f.pages) as f64
            ))
            .collect::<Vec<_>>()
            .join(", ")
    );
    println!("| mode | ns per page out (median of 5 passes) | vs pages |");
    println!("|---|---:|---:|");
    let mut base = None;
    for mode in &modes {
        let mut times: Vec<Duration> = (0..5)
            .map(|_| {
                let start = Instant::now();
                let n = pass(mode, &f, &mut dctx, &mut out);
                start.elapsed() / u32::try_from(n).expect("pages")
            })
            .collect();
        times.sort();
        let t = times[2].as_nanos() as f64;
        let b = *base.get_or_insert(t);
        println!("| {mode} | {t:.0} | {:.2}x |", t / b);
    }
}
