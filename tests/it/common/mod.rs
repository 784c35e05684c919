//! Helpers shared by the integration tests: fragment cuts and one-call requests.
#![allow(dead_code)]

use std::io::{IoSlice, IoSliceMut};
use std::path::PathBuf;

use proptest::prelude::*;

pub mod surgery;

use acomp::{Acomp, Error};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

/// How to cut a buffer into fragments.
#[derive(Debug, Clone, Copy)]
pub enum Cut {
    /// One fragment.
    One,
    /// Fragments of this many bytes (the last one shorter).
    Every(usize),
    /// Random sizes from this seed, with some zero-length fragments.
    Random(u64),
}

/// The cuts every golden row is tried on.
pub const CUTS: [Cut; 5] = [
    Cut::One,
    Cut::Every(4096),
    Cut::Every(1),
    Cut::Random(1),
    Cut::Random(2),
];

/// One fragment, fragments of 1 to `max_every - 1` bytes, or random cuts: for proptest.
pub fn cut_strategy(max_every: usize) -> impl Strategy<Value = Cut> {
    prop_oneof![
        Just(Cut::One),
        (1..max_every).prop_map(Cut::Every),
        any::<u64>().prop_map(Cut::Random),
    ]
}

/// Fragment sizes that add up to `len`.
pub fn sizes(len: usize, cut: Cut) -> Vec<usize> {
    match cut {
        Cut::One => vec![len],
        Cut::Every(n) => {
            let mut v: Vec<usize> = (0..len / n).map(|_| n).collect();
            if len % n != 0 || len == 0 {
                v.push(len % n);
            }
            v
        }
        Cut::Random(seed) => {
            let mut rng = StdRng::seed_from_u64(seed ^ len as u64);
            let max = [1, 3, 64, 1000, 5000, 70_000][rng.random_range(0..6)];
            let mut v = Vec::new();
            let mut left = len;
            while left > 0 {
                if rng.random_ratio(1, 8) {
                    v.push(0);
                }
                let n = rng.random_range(1..=max.min(left));
                v.push(n);
                left -= n;
            }
            if rng.random_bool(0.5) {
                v.push(0);
            }
            v
        }
    }
}

/// `buf` cut as `cut`.
pub fn split<'a>(buf: &'a [u8], cut: Cut) -> Vec<IoSlice<'a>> {
    split_at_sizes(buf, &sizes(buf.len(), cut))
}

/// `buf` cut into fragments of these sizes, which add up to its length.
pub fn split_at_sizes<'a>(buf: &'a [u8], sizes: &[usize]) -> Vec<IoSlice<'a>> {
    let mut rest = buf;
    sizes
        .iter()
        .map(|&n| {
            let (a, b) = rest.split_at(n);
            rest = b;
            IoSlice::new(a)
        })
        .collect()
}

/// `buf` cut as `cut`, for a destination.
pub fn split_mut<'a>(buf: &'a mut [u8], cut: Cut) -> Vec<IoSliceMut<'a>> {
    let mut rest = buf;
    sizes(rest.len(), cut)
        .into_iter()
        .map(|n| {
            let (a, b) = std::mem::take(&mut rest).split_at_mut(n);
            rest = b;
            IoSliceMut::new(a)
        })
        .collect()
}

/// Output bytes whose `Debug` shows their length and hash, not every byte, so that a failed
/// `unwrap_err` stays readable.
#[derive(Clone)]
pub struct Bytes(pub Vec<u8>);

impl std::fmt::Debug for Bytes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "Bytes({} bytes, sha256 {})",
            self.0.len(),
            &sha256_hex(&self.0)[..16]
        )
    }
}

impl std::ops::Deref for Bytes {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        &self.0
    }
}

impl AsRef<[u8]> for Bytes {
    fn as_ref(&self) -> &[u8] {
        &self.0
    }
}

impl<T: AsRef<[u8]>> PartialEq<T> for Bytes {
    fn eq(&self, other: &T) -> bool {
        self.0 == other.as_ref()
    }
}

/// Decompresses `src` cut as `scut` into a destination of `cap` bytes cut as `dcut`;
/// returns the output.
pub fn decompress(
    tfm: &Acomp,
    src: &[u8],
    scut: Cut,
    cap: usize,
    dcut: Cut,
) -> Result<Bytes, Error> {
    let mut out = vec![0u8; cap];
    let n = tfm.decompress(&split(src, scut), &mut split_mut(&mut out, dcut))?;
    out.truncate(n);
    Ok(Bytes(out))
}

/// Compresses `src` cut as `scut` into a destination of `cap` bytes cut as `dcut`;
/// returns the frame.
pub fn compress(tfm: &Acomp, src: &[u8], scut: Cut, cap: usize, dcut: Cut) -> Result<Bytes, Error> {
    let mut out = vec![0u8; cap];
    let n = tfm.compress(&split(src, scut), &mut split_mut(&mut out, dcut))?;
    out.truncate(n);
    Ok(Bytes(out))
}

/// `../shared/testdata/<sub>` beside the repository, where the tests that read it find it.
///
/// Where it is absent (a plain clone) the test is skipped: it prints `SKIPPED` with the
/// folder and the caller returns, so that the README's test command passes for anyone who
/// clones the repository alone. Under `CI=true` an absent folder fails the test instead,
/// naming it, so that a green CI has run every test. `ACOMP_TESTDATA` names another folder
/// (CI points it at one that does not exist to check both halves of this rule).
pub fn testdata(sub: &str) -> Option<PathBuf> {
    let root = std::env::var_os("ACOMP_TESTDATA").map_or_else(
        || PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/testdata"),
        PathBuf::from,
    );
    let dir = root.join(sub);
    shared_folder(&dir, &dir.join("EXPECTED.tsv"))
}

/// `Some(dir)` where `witness` (a file in it) exists; else skips (`None`, with a message) or,
/// under `CI=true`, panics naming `dir`.
pub fn shared_folder(dir: &std::path::Path, witness: &std::path::Path) -> Option<PathBuf> {
    if witness.is_file() {
        return Some(dir.to_path_buf());
    }
    let what = format!(
        "{} is absent (no {}); this test reads the shared test data beside the repository",
        dir.display(),
        witness.display()
    );
    if std::env::var("CI").is_ok_and(|v| v == "true") {
        panic!("CI=true and {what}");
    }
    eprintln!("SKIPPED: {what}");
    None
}

pub fn sha256_hex(data: &[u8]) -> String {
    use sha2::Digest;
    hex::encode(sha2::Sha256::digest(data))
}

/// A frame written by zstd's streaming API without a pledged size, so its header has no
/// content size (as the kernel's and btrfs's frames have none) and its window is not
/// shrunk to the data; `window_log` 0 leaves the window to the level.
pub fn frame_without_size(data: &[u8], level: i32, window_log: u32) -> Vec<u8> {
    use zstd_safe::{CCtx, CParameter, InBuffer, OutBuffer, zstd_sys::ZSTD_EndDirective};
    let mut cctx = CCtx::create();
    cctx.set_parameter(CParameter::CompressionLevel(level))
        .unwrap();
    cctx.set_parameter(CParameter::ContentSizeFlag(false))
        .unwrap();
    if window_log > 0 {
        cctx.set_parameter(CParameter::WindowLog(window_log))
            .unwrap();
    }
    let mut frame = vec![0u8; zstd_safe::compress_bound(data.len()) + 64];
    let mut out = OutBuffer::around(&mut frame[..]);
    let mut inp = InBuffer::around(data);
    // Data first, end apart: given all of it with `e_end`, zstd would learn its size.
    cctx.compress_stream2(&mut out, &mut inp, ZSTD_EndDirective::ZSTD_e_continue)
        .unwrap();
    assert_eq!(inp.pos(), data.len());
    let mut end = InBuffer::around(&[]);
    let left = cctx
        .compress_stream2(&mut out, &mut end, ZSTD_EndDirective::ZSTD_e_end)
        .unwrap();
    assert_eq!(left, 0);
    let n = out.pos();
    frame.truncate(n);
    frame
}

/// A frame with the content size in its header, from the reference encoder.
pub fn frame_with_size(data: &[u8], level: i32) -> Vec<u8> {
    zstd::bulk::compress(data, level).unwrap()
}

/// A skippable frame (RFC 8878 §3.1.2) carrying `payload`.
pub fn skippable_frame(payload: &[u8]) -> Vec<u8> {
    let mut f = 0x184D_2A53u32.to_le_bytes().to_vec();
    f.extend_from_slice(&(payload.len() as u32).to_le_bytes());
    f.extend_from_slice(payload);
    f
}

/// Text-like bytes: `len` letters from an alphabet of 16, few long matches, so zstd's
/// blocks are mostly Huffman-coded literals.
pub fn letters(len: usize, seed: u64) -> Vec<u8> {
    let mut rng = StdRng::seed_from_u64(seed);
    (0..len).map(|_| b'a' + rng.random_range(0..16u8)).collect()
}

/// Random bytes: incompressible.
pub fn random_bytes(len: usize, seed: u64) -> Vec<u8> {
    let mut rng = StdRng::seed_from_u64(seed);
    (0..len).map(|_| rng.random()).collect()
}

/// Every way the tests cut the destination and source, for one source.
pub fn all_cut_pairs() -> impl Iterator<Item = (Cut, Cut)> {
    CUTS.into_iter()
        .flat_map(|s| CUTS.into_iter().map(move |d| (s, d)))
}

/// Whether two outcomes are the same in the contract's terms: the same bytes, or the same
/// error kind (and, for `ENOSPC`, the same size needed). zstd's own name for a corruption
/// may differ with the cut; its kind may not.
pub fn same_outcome(a: &Result<Bytes, Error>, b: &Result<Bytes, Error>) -> bool {
    match (a, b) {
        (Ok(x), Ok(y)) => x.0 == y.0,
        (Err(Error::NoSpace { needed: x, .. }), Err(Error::NoSpace { needed: y, .. })) => x == y,
        (Err(x), Err(y)) => x.errno() == y.errno(),
        _ => false,
    }
}

/// The CPUs the calling thread may run on (`sched_getaffinity(2)`).
pub fn allowed_cpus() -> Vec<usize> {
    // SAFETY: `set` is a zeroed `cpu_set_t` the kernel fills during the call; `CPU_ISSET`
    // reads bits below its size.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        assert_eq!(
            libc::sched_getaffinity(0, std::mem::size_of_val(&set), &mut set),
            0
        );
        (0..libc::CPU_SETSIZE as usize)
            .filter(|&c| libc::CPU_ISSET(c, &set))
            .collect()
    }
}

/// Lets the calling thread run on these CPUs only (`sched_setaffinity(2)`).
pub fn pin_to(cpus: &[usize]) {
    // SAFETY: `set` is a zeroed `cpu_set_t` on the stack with bits set below its size; the
    // kernel reads it during the call only.
    let ret = unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        for &c in cpus {
            libc::CPU_SET(c, &mut set);
        }
        libc::sched_setaffinity(0, std::mem::size_of_val(&set), &set)
    };
    assert_eq!(ret, 0, "sched_setaffinity({cpus:?})");
}

/// The window a frame header declares, in bytes: the content size for a single-segment
/// frame, else what its window descriptor says (RFC 8878 §3.1.1.1.2).
pub fn declared_window(frame: &[u8]) -> u64 {
    let fhd = frame[4];
    if fhd & 0x20 != 0 {
        let fcs_size = [1, 2, 4, 8][usize::from(fhd >> 6)];
        let start = 5 + [0, 1, 2, 4][usize::from(fhd & 3)];
        let mut b = [0u8; 8];
        b[..fcs_size].copy_from_slice(&frame[start..start + fcs_size]);
        u64::from_le_bytes(b) + if fcs_size == 2 { 256 } else { 0 }
    } else {
        let wd = frame[5];
        let base = 1u64 << (10 + (wd >> 3));
        base + (base >> 3) * u64::from(wd & 7)
    }
}

/// One row of an `EXPECTED.tsv` of the shared test data (see its README): the source file,
/// the direction, the outcome, and for `ok` the output's size and SHA-256.
#[derive(Debug)]
pub struct Row {
    pub source: String,
    pub direction: String,
    pub expect: String,
    pub size: usize,
    pub sha256: String,
    pub note: String,
}

/// The rows of `dir/EXPECTED.tsv`, its header line left out.
pub fn expected_rows(dir: &std::path::Path) -> Vec<Row> {
    let text = std::fs::read_to_string(dir.join("EXPECTED.tsv")).expect("EXPECTED.tsv");
    text.lines()
        .skip(1)
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            let f: Vec<&str> = l.split('\t').collect();
            Row {
                source: f[0].to_owned(),
                direction: f[1].to_owned(),
                expect: f[2].to_owned(),
                size: f[3].parse().unwrap_or(0),
                sha256: f[4].to_owned(),
                note: f.get(5).copied().unwrap_or("").to_owned(),
            }
        })
        .collect()
}

/// Prefixes of the running test's own executable (real machine code) of these sizes, each
/// at most the whole file.
pub fn exe_prefixes(sizes: &[usize]) -> Vec<Vec<u8>> {
    let exe = std::fs::read(std::env::current_exe().unwrap()).unwrap();
    sizes
        .iter()
        .map(|&n| exe[..n.min(exe.len())].to_vec())
        .collect()
}

/// Compresses `data` with one fragment each side and on each of `cuts` (into room for the
/// bound), asserts the frame is the same on all of them, that it fits a destination of
/// exactly its size (one fragment; and cut) and not one byte less (one fragment; and a
/// source in 4 KiB fragments into 1-byte ones); returns the frame. `what` names the case.
pub fn same_frame_on_every_cut(tfm: &Acomp, data: &[u8], cuts: &[(Cut, Cut)], what: &str) -> Bytes {
    let cap = zstd_safe::compress_bound(data.len());
    let one = compress(tfm, data, Cut::One, cap, Cut::One).unwrap();
    for &(scut, dcut) in cuts {
        let other = compress(tfm, data, scut, cap, dcut).unwrap();
        assert!(
            other == one,
            "{what}, {} bytes, {scut:?}/{dcut:?}: {} vs {} bytes",
            data.len(),
            other.len(),
            one.len()
        );
    }
    for (s, d) in [(Cut::One, Cut::One), (Cut::Every(1000), Cut::Random(7))] {
        assert!(
            compress(tfm, data, s, one.len(), d).unwrap() == one,
            "{what}: exact size"
        );
    }
    for (s, d) in [(Cut::One, Cut::One), (Cut::Every(4096), Cut::Every(1))] {
        let err = compress(tfm, data, s, one.len() - 1, d).unwrap_err();
        assert_eq!(err.errno(), libc::ENOSPC, "{what}: one byte less");
    }
    one
}

/// Reads `[(offset, len)]` out of `frame` with [`Acomp::decompress_range`], its source cut as
/// `cut`; returns the count and the segments' bytes (which start as 0xEE).
pub fn read(
    tfm: &Acomp,
    frame: &[u8],
    cut: Cut,
    ranges: &[(u64, usize)],
) -> Result<(usize, Vec<Vec<u8>>), Error> {
    read_by(frame, cut, ranges, |src, segs| {
        tfm.decompress_range(src, segs)
    })
}

/// [`read`] by any range read call (`decompress_range`, or `decompress_seekable` through a
/// kept table).
pub fn read_by(
    frame: &[u8],
    cut: Cut,
    ranges: &[(u64, usize)],
    call: impl FnOnce(&[IoSlice<'_>], &mut [acomp::Segment<'_>]) -> Result<usize, Error>,
) -> Result<(usize, Vec<Vec<u8>>), Error> {
    let mut bufs: Vec<Vec<u8>> = ranges.iter().map(|&(_, len)| vec![0xEE; len]).collect();
    let mut segs: Vec<acomp::Segment<'_>> = bufs
        .iter_mut()
        .zip(ranges)
        .map(|(b, &(off, _))| acomp::Segment::new(off, b))
        .collect();
    let n = call(&split(frame, cut), &mut segs)?;
    drop(segs);
    Ok((n, bufs))
}

/// What a range read of `ranges` must give: the count, and the extent's bytes, zero past its
/// end.
pub fn expected(data: &[u8], ranges: &[(u64, usize)]) -> (usize, Vec<Vec<u8>>) {
    let mut delivered = 0;
    let bufs = ranges
        .iter()
        .map(|&(off, len)| {
            (0..len)
                .map(|i| match data.get(off as usize + i) {
                    Some(&b) => {
                        delivered += 1;
                        b
                    }
                    None => 0,
                })
                .collect()
        })
        .collect();
    (delivered, bufs)
}
