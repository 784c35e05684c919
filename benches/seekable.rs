//! Range reads of 128 KiB extents stored in zstd's seekable format, against one frame per
//! extent and against 16 KiB extents, on real files: the system's shared libraries
//! (`/usr/lib/x86_64-linux-gnu`) and shared data (`/usr/share`), half each, read in sorted
//! path order (at most 1 MiB from a file) up to `SEEK_CORPUS_MIB` MiB (default 16), cut into
//! 128 KiB extents. Level 3 (the default) everywhere.
//!
//! Variants (ids): `one_frame` (each extent one frame: `compress_to_vec`), `seek_16k`,
//! `seek_24k` and `seek_32k` (each extent `compress_seekable_to_vec` with frames of 16, 24
//! and 32 KiB of content; 24 KiB: five frames and one of 8 KiB), `extent_16k` (the same bytes as 16 KiB extents of one frame each: a read of
//! 64 KiB is four range reads), `blocks_4k` (each extent one frame of 4 KiB blocks:
//! `ZstdParams::block_size_max(4096)`). Reads: `random_4k` (one 4 KiB-aligned page of a
//! pseudo-random extent), `random_64k` (64 KiB at a pseudo-random 4 KiB-aligned offset
//! that keeps it inside its 128 KiB extent). Every read is checked once against the
//! corpus before timing.
//!
//! ```text
//! cargo bench --bench seekable                                  # criterion
//! SEEK_INTERLEAVED=200 target/release/deps/seekable-<hash>     # ratio, times, by offset
//! SEEK_CALLGRIND=random_4k/seek_16k valgrind --tool=callgrind \
//!     --toggle-collect='*callgrind_loop*' target/release/deps/seekable-<hash>
//! ```
//!
//! Against zstd's C library (`contrib/seekable_format`, `ZSTD_seekable` kept per extent):
//!
//! ```text
//! SEEK_REFERENCE=7 target/release/deps/seekable-<hash>   # rounds of SEEK_REFERENCE_READS (20000)
//! ```
//!
//! Reference mode stores each 128 KiB extent twice in 16 KiB frames with checksums, by
//! acomp (`compress_seekable_to_vec`, `checksum(true)`) and by the C library
//! (`ZSTD_seekable_compressStream`, level 3, checksum flag on: frames without a declared
//! content size), and reads random 4 KiB pages of each: `c_kept` (a `ZSTD_seekable` per
//! extent, initialised once, `ZSTD_seekable_decompress`), `one_off` (`decompress_range`,
//! the table read and checked on every call), `kept` (`decompress_seekable` through a
//! `SeekTable` per extent, parsed once), `kept_checked` (the same with `checksum(true)`,
//! through a verified table). A round is `SEEK_REFERENCE_READS` reads of each variant in
//! turn (their order rotating), each variant's reads timed as one batch; one round first,
//! dropped, to warm up. Printed: per file and variant, the median time per read, and the
//! median and range over the rounds of the round's ratio to `c_kept`.
//!
//! Interleaved mode prints the compression ratio of each variant, then per read the median
//! time of each variant over rounds in which every variant reads the same offset in turn,
//! each read timed alone (their order rotating; a fifth more rounds first, dropped, to warm
//! up), and the median of the rounds' ratios to `one_frame`; then the
//! cost of a 4 KiB read by its offset inside the extent. In callgrind mode the bench runs
//! `SEEK_CALLGRIND_N` (default 500) reads of one variant inside `callgrind_loop`.

use std::hint::black_box;
use std::io::IoSlice;
use std::path::{Path, PathBuf};
use std::time::Instant;

use acomp::{Acomp, Segment, ZstdParams};
use criterion::{BenchmarkId, Criterion, Throughput};

const EXTENT: usize = 128 * 1024;
const SMALL_EXTENT: usize = 16 * 1024;
const PAGE: usize = 4096;
/// Offsets in the pseudo-random sequence of reads.
const READS: usize = 512;

/// How one variant stores the corpus: each stored unit holds `unit` bytes of content.
struct Variant {
    name: &'static str,
    unit: usize,
    stored: Vec<Vec<u8>>,
}

impl Variant {
    fn new(tfm: &Acomp, name: &'static str, data: &[u8]) -> Variant {
        let small_blocks =
            Acomp::with_zstd(ZstdParams::default().block_size_max(4096)).expect("zstd");
        let unit = if name == "extent_16k" {
            SMALL_EXTENT
        } else {
            EXTENT
        };
        let stored = data
            .chunks(unit)
            .map(|chunk| {
                let mut out = Vec::new();
                match name {
                    "seek_16k" => tfm.compress_seekable_to_vec(chunk, 16 * 1024, &mut out),
                    "seek_24k" => tfm.compress_seekable_to_vec(chunk, 24 * 1024, &mut out),
                    "seek_32k" => tfm.compress_seekable_to_vec(chunk, 32 * 1024, &mut out),
                    "blocks_4k" => small_blocks.compress_to_vec(chunk, &mut out),
                    _ => tfm.compress_to_vec(chunk, &mut out),
                }
                .expect("compress");
                out
            })
            .collect();
        Variant { name, unit, stored }
    }

    fn stored_bytes(&self) -> usize {
        self.stored.iter().map(Vec::len).sum()
    }

    /// Reads `buf.len()` bytes at corpus offset `at` (inside one 128 KiB extent).
    fn read(&self, tfm: &Acomp, at: usize, buf: &mut [u8]) {
        let mut done = 0;
        while done < buf.len() {
            let pos = at + done;
            let (unit, off) = (pos / self.unit, pos % self.unit);
            let take = (self.unit - off).min(buf.len() - done);
            let src = [IoSlice::new(&self.stored[unit])];
            let mut segs = [Segment::new(off as u64, &mut buf[done..done + take])];
            let n = tfm.decompress_range(&src, &mut segs).expect("range read");
            black_box(n);
            done += take;
        }
    }
}

const VARIANTS: [&str; 6] = [
    "one_frame",
    "seek_16k",
    "seek_24k",
    "seek_32k",
    "extent_16k",
    "blocks_4k",
];

/// Up to `max` bytes of the files under `dir`, in sorted path order, at most 1 MiB of each.
fn collect(dir: &Path, max: usize, out: &mut Vec<u8>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let mut paths: Vec<PathBuf> = entries.flatten().map(|e| e.path()).collect();
    paths.sort();
    for p in paths {
        if out.len() >= max {
            return;
        }
        let Ok(meta) = std::fs::symlink_metadata(&p) else {
            continue;
        };
        if meta.is_dir() {
            collect(&p, max, out);
        } else if meta.is_file() && meta.len() > 0 {
            if let Ok(bytes) = std::fs::read(&p) {
                let take = bytes.len().min(1 << 20).min(max - out.len());
                out.extend_from_slice(&bytes[..take]);
            }
        }
    }
}

fn corpus() -> Vec<u8> {
    let mib: usize = std::env::var("SEEK_CORPUS_MIB").map_or(16, |v| v.parse().expect("MiB"));
    let half = mib << 19;
    let mut data = Vec::new();
    collect(Path::new("/usr/lib/x86_64-linux-gnu"), half, &mut data);
    collect(Path::new("/usr/share"), 2 * half, &mut data);
    data.truncate(data.len() / EXTENT * EXTENT);
    assert!(
        data.len() >= 8 * EXTENT,
        "too little corpus: {} bytes",
        data.len()
    );
    data
}

/// A fixed pseudo-random sequence of corpus offsets for reads of `len` bytes, 4 KiB
/// aligned, each inside one 128 KiB extent.
fn offsets(data_len: usize, len: usize) -> Vec<usize> {
    let mut x = 0x9E37_79B9_7F4A_7C15u64;
    let extents = data_len / EXTENT;
    let slots = (EXTENT - len) / PAGE + 1;
    (0..READS)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let e = (x % extents as u64) as usize;
            let s = ((x >> 32) % slots as u64) as usize;
            e * EXTENT + s * PAGE
        })
        .collect()
}

#[inline(never)]
fn callgrind_loop(n: usize, read: &mut dyn FnMut()) {
    for _ in 0..n {
        read();
    }
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn interleaved(tfm: &Acomp, data: &[u8], variants: &[Variant], rounds: usize) {
    println!(
        "corpus: {} bytes in {} extents of 128 KiB",
        data.len(),
        data.len() / EXTENT
    );
    println!("| variant | stored bytes | ratio | ratio / one_frame's |");
    println!("| --- | ---: | ---: | ---: |");
    let base = data.len() as f64 / variants[0].stored_bytes() as f64;
    for v in variants {
        let r = data.len() as f64 / v.stored_bytes() as f64;
        println!(
            "| {} | {} | {r:.3} | {:.3} |",
            v.name,
            v.stored_bytes(),
            r / base
        );
    }
    println!();
    println!("| read | variant | median µs/read | median ratio to one_frame |");
    println!("| --- | --- | ---: | ---: |");
    for (name, len) in [("random_4k", PAGE), ("random_64k", 64 * 1024)] {
        let offs = offsets(data.len(), len);
        let mut buf = vec![0u8; len];
        // Each read timed alone (a batch long enough to be preempted more often than a
        // short one would bias the ratio), the variants in turn on the same offset, their
        // order rotating; a fifth more rounds first, dropped, to warm up.
        let mut times: Vec<Vec<f64>> = vec![Vec::new(); variants.len()];
        let warm = rounds / 5;
        for round in 0..warm + rounds {
            let at = offs[round % READS];
            for k in 0..variants.len() {
                let i = (k + round) % variants.len();
                let start = Instant::now();
                variants[i].read(tfm, at, &mut buf);
                let t = start.elapsed().as_secs_f64() * 1e6;
                if round >= warm {
                    times[i].push(t);
                }
            }
        }
        for (i, v) in variants.iter().enumerate() {
            let ratios = times[i].iter().zip(&times[0]).map(|(a, b)| a / b).collect();
            println!(
                "| {name} | {} | {:.1} | {:.3} |",
                v.name,
                median(times[i].clone()),
                median(ratios)
            );
        }
    }
    println!();
    println!("4 KiB read by offset inside the extent (median µs over the extents, rounds):");
    print!("| offset |");
    variants.iter().for_each(|v| print!(" {} |", v.name));
    println!();
    println!("| ---: |{}", " ---: |".repeat(variants.len()));
    let extents = data.len() / EXTENT;
    let mut buf = vec![0u8; PAGE];
    for off in [0, 12, 16, 28, 60, 64, 92, 124].map(|k| k * 1024) {
        print!("| {} KiB |", off / 1024);
        for v in variants {
            let mut t = Vec::new();
            for round in 0..rounds.div_ceil(10) {
                let start = Instant::now();
                for e in 0..extents.min(16) {
                    v.read(tfm, ((e + round) % extents) * EXTENT + off, &mut buf);
                }
                t.push(start.elapsed().as_secs_f64() * 1e6 / extents.min(16) as f64);
            }
            print!(" {:.1} |", median(t));
        }
        println!();
    }
}

/// A seekable source as zstd's C library writes it (`ZSTD_seekable_compressStream`).
fn c_seekable(data: &[u8], frame_bytes: u32, checksum: bool) -> Vec<u8> {
    use zstd_safe::seekable::SeekableCStream;
    use zstd_safe::{InBuffer, OutBuffer};
    let frames = data.len() / frame_bytes as usize + 2;
    let mut out = vec![0u8; zstd_safe::compress_bound(data.len()) + 64 * frames];
    let mut cs = SeekableCStream::create();
    cs.init(3, checksum, frame_bytes).expect("C seekable init");
    let mut output = OutBuffer::around(&mut out[..]);
    let mut input = InBuffer::around(data);
    while input.pos() < data.len() {
        cs.compress_stream(&mut output, &mut input)
            .expect("C seekable compress");
    }
    while cs.end_stream(&mut output).expect("C seekable end") > 0 {}
    let n = output.pos();
    out.truncate(n);
    out
}

/// Random 4 KiB reads through kept tables against the C library's `ZSTD_seekable`, on
/// files of both writers (the module docs, "Against zstd's C library").
fn reference(data: &[u8], rounds: usize) {
    use acomp::SeekTable;
    use zstd_safe::seekable::Seekable;
    let reads: usize =
        std::env::var("SEEK_REFERENCE_READS").map_or(20_000, |v| v.parse().expect("reads"));
    let plain = Acomp::new("zstd").expect("zstd");
    let checked = Acomp::with_zstd(ZstdParams::default().checksum(true)).expect("zstd");
    let offs = offsets(data.len(), PAGE);
    println!(
        "corpus: {} bytes in {} extents of 128 KiB; {rounds} rounds of {reads} random 4 KiB reads",
        data.len(),
        data.len() / EXTENT
    );
    println!("| file | variant | median µs/read | ratio to c_kept: median | range |");
    println!("| --- | --- | ---: | ---: | ---: |");
    for writer in ["acomp", "C"] {
        let stored: Vec<Vec<u8>> = data
            .chunks(EXTENT)
            .map(|chunk| match writer {
                "acomp" => {
                    let mut out = Vec::new();
                    checked
                        .compress_seekable_to_vec(chunk, 16 * 1024, &mut out)
                        .expect("compress");
                    out
                }
                _ => c_seekable(chunk, 16 * 1024, true),
            })
            .collect();
        let tables: Vec<SeekTable> = stored
            .iter()
            .map(|s| {
                let src = [IoSlice::new(s)];
                let t = SeekTable::parse(&src).expect("seek table");
                checked.verify_seek_table(&t, &src).expect("verify");
                t
            })
            .collect();
        let unverified: Vec<SeekTable> = stored
            .iter()
            .map(|s| SeekTable::parse(&[IoSlice::new(s)]).expect("seek table"))
            .collect();
        let mut c: Vec<Seekable<'_>> = stored
            .iter()
            .map(|s| {
                let mut z = Seekable::create();
                z.init_buff(s).expect("C seekable");
                z
            })
            .collect();
        let names = ["c_kept", "one_off", "kept", "kept_checked"];
        let mut read = |v: usize, at: usize, buf: &mut [u8]| {
            let (e, off) = (at / EXTENT, (at % EXTENT) as u64);
            let src = [IoSlice::new(&stored[e])];
            let n = match v {
                0 => c[e].decompress(buf, off).expect("C read"),
                1 => plain
                    .decompress_range(&src, &mut [Segment::new(off, buf)])
                    .expect("read"),
                2 => plain
                    .decompress_seekable(&unverified[e], &src, &mut [Segment::new(off, buf)])
                    .expect("read"),
                _ => checked
                    .decompress_seekable(&tables[e], &src, &mut [Segment::new(off, buf)])
                    .expect("read"),
            };
            black_box(n);
        };
        let mut buf = vec![0u8; PAGE];
        for (v, name) in names.iter().enumerate() {
            for &at in &offs {
                buf.fill(0xEE);
                read(v, at, &mut buf);
                assert!(buf == data[at..at + PAGE], "{writer} {name} wrong at {at}");
            }
        }
        // SEEK_REFERENCE_CALLGRIND=<file>/<variant>: that variant's reads only, inside
        // `callgrind_loop`.
        if let Ok(spec) = std::env::var("SEEK_REFERENCE_CALLGRIND") {
            let (file, name) = spec.split_once('/').expect("<file>/<variant>");
            if file == writer {
                let v = names.iter().position(|n| *n == name).expect("variant");
                let mut i = 0;
                callgrind_loop(reads, &mut || {
                    read(v, offs[i % READS], &mut buf);
                    i += 1;
                });
                println!("{spec}: {reads} reads in callgrind_loop");
            }
            continue;
        }
        let mut times: Vec<Vec<f64>> = vec![Vec::new(); names.len()];
        for round in 0..rounds + 1 {
            for k in 0..names.len() {
                let v = (k + round) % names.len();
                let start = Instant::now();
                for i in 0..reads {
                    read(v, offs[(i + round * 7) % READS], &mut buf);
                }
                let t = start.elapsed().as_secs_f64() * 1e6 / reads as f64;
                if round > 0 {
                    times[v].push(t);
                }
            }
        }
        for (v, name) in names.iter().enumerate() {
            let ratios: Vec<f64> = times[v].iter().zip(&times[0]).map(|(a, b)| a / b).collect();
            let (lo, hi) = ratios
                .iter()
                .fold((f64::MAX, f64::MIN), |(lo, hi), &r| (lo.min(r), hi.max(r)));
            println!(
                "| {writer} | {name} | {:.2} | {:.3} | {lo:.3}–{hi:.3} |",
                median(times[v].clone()),
                median(ratios)
            );
        }
    }
}

fn main() {
    let tfm = Acomp::new("zstd").expect("zstd");
    let data = corpus();
    if let Ok(rounds) = std::env::var("SEEK_REFERENCE") {
        reference(&data, rounds.parse().expect("rounds"));
        return;
    }
    let variants: Vec<Variant> = VARIANTS
        .iter()
        .map(|n| Variant::new(&tfm, n, &data))
        .collect();
    // Every read, checked once.
    for len in [PAGE, 64 * 1024] {
        let mut buf = vec![0u8; len];
        for &at in &offsets(data.len(), len) {
            for v in &variants {
                buf.fill(0xEE);
                v.read(&tfm, at, &mut buf);
                assert!(buf == data[at..at + len], "{} wrong at {at}", v.name);
            }
        }
    }

    if let Ok(spec) = std::env::var("SEEK_CALLGRIND") {
        let n: usize = std::env::var("SEEK_CALLGRIND_N").map_or(500, |v| v.parse().expect("N"));
        let (read, name) = spec
            .split_once('/')
            .expect("SEEK_CALLGRIND=<read>/<variant>");
        let len = if read == "random_4k" { PAGE } else { 64 * 1024 };
        let v = variants.iter().find(|v| v.name == name).expect("variant");
        let offs = offsets(data.len(), len);
        let mut buf = vec![0u8; len];
        let mut i = 0;
        let mut r = || {
            v.read(&tfm, offs[i % READS], &mut buf);
            i += 1;
        };
        r();
        callgrind_loop(n, &mut r);
        println!("{spec}: {n} reads in callgrind_loop");
        return;
    }
    if let Ok(rounds) = std::env::var("SEEK_INTERLEAVED") {
        interleaved(&tfm, &data, &variants, rounds.parse().expect("rounds"));
        return;
    }

    let mut c = Criterion::default().configure_from_args();
    for (name, len) in [("random_4k", PAGE), ("random_64k", 64 * 1024)] {
        let mut group = c.benchmark_group(format!("seekable/{name}"));
        group.throughput(Throughput::Bytes(len as u64));
        let offs = offsets(data.len(), len);
        let mut buf = vec![0u8; len];
        for v in &variants {
            let mut i = 0;
            group.bench_function(BenchmarkId::from_parameter(v.name), |b| {
                b.iter(|| {
                    v.read(&tfm, offs[i % READS], &mut buf);
                    i += 1;
                })
            });
        }
        group.finish();
    }
    c.final_summary();
}
