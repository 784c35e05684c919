//! Range reads of a compressed 128 KiB extent: btrfs's read path before and after
//! "decompress straight into the bio's pages", on the same frames and the same reads.
//!
//! - `copy`, the old way ([`CopyWay`]): pre-patch btrfs `zstd_decompress_bio`. One workspace
//!   (a reused DCtx) streams `ZSTD_decompressStream` into a sector-sized scratch buffer;
//!   after each fill, `btrfs_decompress_buf2page` copies the part that overlaps the
//!   destination pages; it stops once the last page is full.
//! - `direct`, the new way: [`Acomp::decompress_range`], where zstd copies its output out
//!   of its window buffer into the segments and only output before or between them goes to
//!   a scratch buffer.
//!
//! The extent is compressed as btrfs compresses it: a stream at level 3, window 128 KiB
//! (`ZSTD_BTRFS_MAX_WINDOWLOG`), fed a page at a time; no size is pledged, so the frame has
//! no content size (like `testdata/cases/extent_128k.zst`) and no way gets a one-shot
//! shortcut. Both ways read the frame from 4 KiB compressed pages. Inputs: `source` (this
//! crate's own source files, concatenated and repeated to 128 KiB: text, about 3.5:1) and
//! `testvec` (`../shared/testdata/cases/extent_128k.bin`, highly repetitive, 80:1; skipped
//! when the test data is absent). `source` changes with the crate: compare within one run.
//!
//! Groups `extent_read/seq_4k`, `seq_16k`, `seq_64k` (the whole extent into contiguous
//! segments of that size) and `random_4k` (one 4 KiB-aligned page per iteration, cycling
//! through a fixed pseudo-random sequence of offsets); ids `<direct|copy>/<input>`,
//! throughput the bytes read. Before timing, every read is checked once against the
//! extent's bytes in both ways.
//!
//! ```text
//! cargo bench --bench extent_read -- --warm-up-time 1 --measurement-time 4
//! EXTENT_INTERLEAVED=500 target/release/deps/extent_read-<hash>   # paired ratios, table
//! EXTENT_CALLGRIND=seq_4k/direct/source valgrind --tool=callgrind \
//!     --toggle-collect='*callgrind_loop*' target/release/deps/extent_read-<hash>
//! ```
//!
//! Interleaved mode alternates the two ways in rounds and prints the median of the paired
//! ratios: on a shared, noisy machine, the figure to trust. In callgrind mode the bench runs
//! `EXTENT_CALLGRIND_N` (default 1000) reads of one variant inside `callgrind_loop`, after
//! one read outside it. (Callgrind counts each byte of a `rep movsb` copy as an instruction:
//! glibc's memcpy uses it above 4 KiB, so counts overstate copies into larger segments.)

use std::hint::black_box;
use std::io::IoSlice;
use std::path::Path;
use std::time::Instant;

use acomp::{Acomp, Segment};
use criterion::{BenchmarkId, Criterion, Throughput};
use zstd_safe::{CCtx, CParameter, DCtx, InBuffer, OutBuffer};

/// The extent's size: btrfs's largest compressed extent (`BTRFS_MAX_UNCOMPRESSED`).
const EXTENT: usize = 128 * 1024;
/// Sector and page size: btrfs's scratch buffer and its compressed pages.
const PAGE: usize = 4096;
/// The level btrfs and acomp default to.
const LEVEL: i32 = 3;
/// `ZSTD_BTRFS_MAX_WINDOWLOG`: btrfs caps the window at the extent's size.
const WINDOW_LOG: u32 = 17;
/// Offsets in the random sequence.
const RANDOM_READS: usize = 64;

/// One extent: its bytes and its frame.
struct Extent {
    name: &'static str,
    data: Vec<u8>,
    frame: Vec<u8>,
}

impl Extent {
    fn new(name: &'static str, data: Vec<u8>) -> Self {
        assert_eq!(data.len(), EXTENT);
        let frame = btrfs_compress(&data);
        eprintln!(
            "extent_read: {name}: {EXTENT} bytes in a frame of {}",
            frame.len()
        );
        Extent { name, data, frame }
    }

    /// The frame as btrfs holds it: in compressed pages.
    fn pages(&self) -> Vec<&[u8]> {
        self.frame.chunks(PAGE).collect()
    }
}

/// Compresses as btrfs's `zstd_compress_pages` does: a stream fed a page at a time, then
/// ended. No size is pledged, so the header has no content size.
fn btrfs_compress(data: &[u8]) -> Vec<u8> {
    let mut cctx = CCtx::create();
    cctx.set_parameter(CParameter::CompressionLevel(LEVEL))
        .expect("level");
    cctx.set_parameter(CParameter::WindowLog(WINDOW_LOG))
        .expect("window");
    let mut frame = vec![0u8; zstd_safe::compress_bound(data.len())];
    let mut out = OutBuffer::around(&mut frame[..]);
    for page in data.chunks(PAGE) {
        let mut input = InBuffer::around(page);
        while input.pos() < page.len() {
            cctx.compress_stream(&mut out, &mut input)
                .expect("compress");
        }
    }
    while cctx.end_stream(&mut out).expect("end") > 0 {}
    let n = out.pos();
    frame.truncate(n);
    assert!(matches!(
        zstd_safe::get_frame_content_size(&frame),
        Ok(None)
    ));
    frame
}

/// This crate's source files, concatenated and repeated to one extent.
fn crate_source() -> Vec<u8> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    for dir in ["src", "src/alg", "tests", "benches"] {
        if let Ok(entries) = std::fs::read_dir(root.join(dir)) {
            files.extend(entries.flatten().map(|e| e.path()));
        }
    }
    files.retain(|p| p.extension().is_some_and(|e| e == "rs"));
    files.sort();
    let mut text: Vec<u8> = files
        .iter()
        .flat_map(|p| std::fs::read(p).unwrap_or_default())
        .collect();
    if text.is_empty() {
        // Generated text, should the sources be missing.
        text = (0..4000u32)
            .flat_map(|i| {
                format!(
                    "{i}: fn walk(src, dst) -> usize {{ {} }}\n",
                    i * 7919 % 1000
                )
                .into_bytes()
            })
            .collect();
    }
    text.iter().copied().cycle().take(EXTENT).collect()
}

/// The extents to read.
fn extents() -> Vec<Extent> {
    let mut v = vec![Extent::new("source", crate_source())];
    let path =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/testdata/cases/extent_128k.bin");
    match std::fs::read(&path) {
        Ok(data) => v.push(Extent::new("testvec", data)),
        Err(e) => eprintln!("extent_read: skipping testvec: {}: {e}", path.display()),
    }
    v
}

/// A fixed pseudo-random sequence of page-aligned offsets inside the extent.
fn random_offsets() -> Vec<u64> {
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    (0..RANDOM_READS)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x % (EXTENT / PAGE) as u64) * PAGE as u64
        })
        .collect()
}

/// The old way: pre-patch btrfs `zstd_decompress_bio` on one workspace.
struct CopyWay {
    /// The workspace's stream, created once and re-initialised per read.
    dctx: DCtx<'static>,
    /// `workspace->buf`: one page, where every output goes first.
    buf: Box<[u8]>,
}

impl CopyWay {
    fn new() -> Self {
        CopyWay {
            dctx: DCtx::create(),
            buf: vec![0u8; PAGE].into_boxed_slice(),
        }
    }

    /// Reads the frame in `pages` into `segs` (extent offset, destination page), sorted and
    /// within the extent: `zstd_init_dstream`, then `zstd_decompress_stream` into the page
    /// buffer and `btrfs_decompress_buf2page` after each call, input a compressed page at a
    /// time, until the last segment is full or the frame ends.
    fn read(&mut self, pages: &[&[u8]], segs: &mut [(u64, &mut [u8])]) {
        self.dctx.init().expect("init");
        let mut page = 0;
        let mut input = InBuffer::around(pages[page]);
        let mut total_out = 0u64;
        let mut seg = 0;
        loop {
            let mut out = OutBuffer::around(&mut self.buf[..]);
            let ret = self
                .dctx
                .decompress_stream(&mut out, &mut input)
                .expect("corrupt frame");
            let n = out.pos();
            let buf_start = total_out;
            total_out += n as u64;
            if !buf2page(&self.buf[..n], buf_start, segs, &mut seg) || ret == 0 {
                break;
            }
            if input.pos() == pages[page].len() {
                page += 1;
                input = InBuffer::around(pages.get(page).expect("truncated frame"));
            }
        }
        for (_, buf) in &mut segs[seg..] {
            buf.fill(0); // zero_fill_bio; nothing for reads within the extent
        }
    }
}

/// `btrfs_decompress_buf2page`: copies the part of `buf` (extent bytes from `buf_start` on)
/// that overlaps the segments, from segment `*seg` on, advancing `*seg` past full ones as
/// `bio_advance` does. Returns false once the last segment is full.
fn buf2page(buf: &[u8], buf_start: u64, segs: &mut [(u64, &mut [u8])], seg: &mut usize) -> bool {
    let buf_end = buf_start + buf.len() as u64;
    while let Some((off, dst)) = segs.get_mut(*seg) {
        let seg_end = *off + dst.len() as u64;
        let (start, end) = ((*off).max(buf_start), seg_end.min(buf_end));
        if start < end {
            let to = (start - *off) as usize..(end - *off) as usize;
            let from = (start - buf_start) as usize..(end - buf_start) as usize;
            dst[to].copy_from_slice(&buf[from]);
        }
        if seg_end > buf_end {
            return true; // this segment wants more than the buffer held
        }
        *seg += 1;
    }
    false
}

/// The reads of the groups.
#[derive(Debug, Clone, Copy)]
enum Read {
    /// The whole extent, into contiguous segments of this many bytes.
    Seq(usize),
    /// One page per read, at the next offset of [`random_offsets`].
    Random,
}

impl Read {
    const ALL: [Read; 4] = [
        Read::Seq(4096),
        Read::Seq(16384),
        Read::Seq(65536),
        Read::Random,
    ];

    fn name(self) -> String {
        match self {
            Read::Seq(len) => format!("seq_{}k", len / 1024),
            Read::Random => format!("random_{}k", PAGE / 1024),
        }
    }

    fn bytes(self) -> u64 {
        match self {
            Read::Seq(_) => EXTENT as u64,
            Read::Random => PAGE as u64,
        }
    }
}

/// One way to read, with its state.
enum Way<'t> {
    Direct(&'t Acomp),
    Copy(&'t mut CopyWay),
}

impl Way<'_> {
    /// The way's name in the ids.
    fn name(&self) -> &'static str {
        match self {
            Way::Direct(_) => "direct",
            Way::Copy(_) => "copy",
        }
    }
}

/// Builds the source and destination of `read` done `way` on `ext` (outside any timing),
/// and hands `f` a closure that does one read (the next offset, for random reads). With
/// `check`, every read asserts that the segments hold the extent's bytes.
fn with_reader(
    way: Way<'_>,
    ext: &Extent,
    read: Read,
    check: bool,
    f: impl FnOnce(&mut dyn FnMut()),
) {
    let pages = ext.pages();
    let src: Vec<IoSlice<'_>> = pages.iter().map(|p| IoSlice::new(p)).collect();
    let name = way.name();
    let expect = |off: u64, buf: &[u8]| {
        if check {
            let off = off as usize;
            assert!(
                buf == &ext.data[off..off + buf.len()],
                "{name} {read:?} wrong at {off}"
            );
        }
    };
    let offsets = random_offsets();
    let mut next = offsets.iter().copied().cycle();
    let mut page = vec![0xEEu8; PAGE];
    let mut dst = vec![0xEEu8; EXTENT];
    match (way, read) {
        (Way::Direct(tfm), Read::Seq(len)) => {
            let mut segs: Vec<Segment<'_>> = dst
                .chunks_mut(len)
                .enumerate()
                .map(|(i, b)| Segment::new((i * len) as u64, b))
                .collect();
            f(&mut || {
                let n = tfm.decompress_range(&src, &mut segs).expect("range read");
                black_box(n);
                segs.iter().for_each(|s| expect(s.offset(), s.buf()));
            });
        }
        (Way::Direct(tfm), Read::Random) => f(&mut || {
            let off = next.next().expect("cycles");
            let mut segs = [Segment::new(off, &mut page)];
            let n = tfm.decompress_range(&src, &mut segs).expect("range read");
            black_box(n);
            expect(off, &page);
        }),
        (Way::Copy(copy), Read::Seq(len)) => {
            let mut segs: Vec<(u64, &mut [u8])> = dst
                .chunks_mut(len)
                .enumerate()
                .map(|(i, b)| ((i * len) as u64, b))
                .collect();
            f(&mut || {
                copy.read(&pages, &mut segs);
                segs.iter().for_each(|(off, b)| expect(*off, b));
            });
        }
        (Way::Copy(copy), Read::Random) => f(&mut || {
            let off = next.next().expect("cycles");
            copy.read(&pages, &mut [(off, &mut page[..])]);
            expect(off, black_box(&page));
        }),
    }
}

/// Runs `n` reads; callgrind collects inside this function only (`--toggle-collect`).
#[inline(never)]
fn callgrind_loop(n: u64, read: &mut dyn FnMut()) {
    for _ in 0..n {
        read();
    }
}

/// Interleaved mode: per row, `rounds` rounds of a batch of direct reads and a batch of
/// copy reads (their order alternating), so that both ways see the same machine load.
/// Prints per row the median time per read of each way and the median of the rounds'
/// direct/copy ratios. For whole-extent rows it also times the floor, in the same rounds:
/// one `ZSTD_decompressDCtx` of the whole frame into one 128 KiB buffer, which decodes
/// straight into it with no copy at all (what no reader into separate segments can do).
fn interleaved(tfm: &Acomp, copy: &mut CopyWay, extents: &[Extent], rounds: usize) {
    println!("| read | input | direct (µs) | copy (µs) | direct/copy | floor/copy |");
    println!("| --- | --- | ---: | ---: | ---: | ---: |");
    let mut dctx = DCtx::create();
    let mut whole = vec![0u8; EXTENT];
    for read in Read::ALL {
        for ext in extents {
            let batch = if let Read::Random = read { 64 } else { 16 };
            let (mut d, mut c, mut ratio, mut floor) = (vec![], vec![], vec![], vec![]);
            let mut one_pass = || {
                let n = dctx.decompress(&mut whole, &ext.frame).expect("one pass");
                assert_eq!(&whole[..n], &ext.data[..]);
            };
            with_reader(Way::Direct(tfm), ext, read, false, |direct| {
                with_reader(Way::Copy(copy), ext, read, false, |copied| {
                    let time = |r: &mut dyn FnMut()| {
                        let t = Instant::now();
                        (0..batch).for_each(|_| r());
                        t.elapsed().as_secs_f64() * 1e6 / batch as f64
                    };
                    time(direct);
                    time(copied);
                    for round in 0..rounds {
                        let (td, tc) = if round % 2 == 0 {
                            (time(direct), time(copied))
                        } else {
                            let tc = time(copied);
                            (time(direct), tc)
                        };
                        d.push(td);
                        c.push(tc);
                        ratio.push(td / tc);
                        if let Read::Seq(_) = read {
                            floor.push(time(&mut one_pass) / tc);
                        }
                    }
                });
            });
            let (d, c, r) = (median(d), median(c), median(ratio));
            let f = match floor.is_empty() {
                true => "-".to_owned(),
                false => format!("{:.3}", median(floor)),
            };
            println!(
                "| {} | {} | {d:.1} | {c:.1} | {r:.3} | {f} |",
                read.name(),
                ext.name
            );
        }
    }
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() {
    let tfm = Acomp::new("zstd").expect("zstd");
    let mut copy = CopyWay::new();
    let extents = extents();
    for ext in &extents {
        for read in Read::ALL {
            let reads = if let Read::Random = read {
                RANDOM_READS
            } else {
                1
            };
            for way in [Way::Direct(&tfm), Way::Copy(&mut copy)] {
                with_reader(way, ext, read, true, |r| (0..reads).for_each(|_| r()));
            }
        }
    }

    if let Ok(spec) = std::env::var("EXTENT_CALLGRIND") {
        let n: u64 = std::env::var("EXTENT_CALLGRIND_N")
            .map_or(1000, |n| n.parse().expect("EXTENT_CALLGRIND_N"));
        let parts: Vec<&str> = spec.split('/').collect();
        let [group, way, input] = parts[..] else {
            panic!(
                "EXTENT_CALLGRIND={spec}: want <group>/<way>/<input>, e.g. seq_4k/direct/source"
            );
        };
        let read = Read::ALL
            .into_iter()
            .find(|r| r.name() == group)
            .expect("unknown group");
        let ext = extents
            .iter()
            .find(|e| e.name == input)
            .expect("unknown input");
        let way = match way {
            "direct" => Way::Direct(&tfm),
            "copy" => Way::Copy(&mut copy),
            _ => panic!("unknown way {way}: direct or copy"),
        };
        with_reader(way, ext, read, false, |r| {
            r();
            callgrind_loop(n, r);
        });
        println!("{spec}: {n} reads in callgrind_loop");
        return;
    }
    if let Ok(rounds) = std::env::var("EXTENT_INTERLEAVED") {
        let rounds = rounds.parse().expect("EXTENT_INTERLEAVED=<rounds>");
        interleaved(&tfm, &mut copy, &extents, rounds);
        return;
    }

    let mut c = Criterion::default().configure_from_args();
    for read in Read::ALL {
        let mut group = c.benchmark_group(format!("extent_read/{}", read.name()));
        group.throughput(Throughput::Bytes(read.bytes()));
        for ext in &extents {
            for way in [Way::Direct(&tfm), Way::Copy(&mut copy)] {
                let id = BenchmarkId::new(way.name(), ext.name);
                with_reader(way, ext, read, false, |r| {
                    group.bench_function(id, |b| b.iter(&mut *r));
                });
            }
        }
        group.finish();
    }
    c.final_summary();
}
