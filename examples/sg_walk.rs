//! The scatterlist walker: how a request's fragments are walked, and which path a request
//! takes.
//!
//! A request is a source scatter-gather list (`&[IoSlice]`, `slen` bytes in all) and a
//! destination one (`&mut [IoSliceMut]`, `dlen` bytes). An algorithm never indexes them: it
//! walks them with [`acomp::alg::Walk`], the counterpart of the kernel's `struct acomp_walk`.
//!
//! - `next_src()` / `next_dst()` give the current *chunk*: the unused rest of the current
//!   fragment (`acomp_walk_next_src/dst`). Zero-length fragments are skipped, so a chunk is
//!   empty only when that side is used up.
//! - `done_src(n)` / `done_dst(n)` say how many bytes of that chunk were used
//!   (`acomp_walk_done_src/dst`); `consumed()` and `produced()` count them, against
//!   `slen()` and `dlen()`. The result of a request is `produced()`.
//! - `one_shot()` gives both sides as two plain slices when each is one fragment and nothing
//!   was used yet: the kernel's rule (`dcur == req->dlen && scur == req->slen`) for its
//!   one-call path, which needs no stream state at all. Otherwise the algorithm streams.
//! - `peek_src(buf)` copies upcoming source bytes across fragments without consuming them
//!   (zstd reads a frame header that may straddle two fragments this way).
//!
//! What the output shows: (1) a walk copying an unevenly cut source into a destination cut
//! elsewhere, one line per step: which fragment each chunk comes from, how many bytes moved,
//! and which side's fragment ended; (2) the same source compressed, and decompressed into a
//! destination cut differently, with the path each request took (read from the difference
//! in `Acomp::stats()`); (3) the same data as one fragment each side, which takes the
//! one-shot path and gives the very same frame. It exits with status 1 if any bytes differ.
//!
//! ```text
//! cargo run --example sg_walk --features unstable-algorithm
//! ```

use std::io::{IoSlice, IoSliceMut};
use std::process::ExitCode;

use acomp::Acomp;
use acomp::alg::Walk;

/// Fragment sizes: `head`, then the rest of `len` as the last fragment.
fn sizes(len: usize, head: &[usize]) -> Vec<usize> {
    let mut v = head.to_vec();
    v.push(len - head.iter().sum::<usize>());
    v
}

fn cut<'a>(mut buf: &'a [u8], sizes: &[usize]) -> Vec<IoSlice<'a>> {
    let mut v = Vec::new();
    for &n in sizes {
        let (a, b) = buf.split_at(n);
        v.push(IoSlice::new(a));
        buf = b;
    }
    v
}

fn cut_mut<'a>(mut buf: &'a mut [u8], sizes: &[usize]) -> Vec<IoSliceMut<'a>> {
    let mut v = Vec::new();
    for &n in sizes {
        let (a, b) = std::mem::take(&mut buf).split_at_mut(n);
        v.push(IoSliceMut::new(a));
        buf = b;
    }
    v
}

/// Index of the fragment holding byte `pos` (zero-length fragments never hold one).
fn fragment(sizes: &[usize], pos: usize) -> usize {
    let mut end = 0;
    for (i, &n) in sizes.iter().enumerate() {
        end += n;
        if pos < end {
            return i;
        }
    }
    sizes.len()
}

/// Copies `data`, cut as `src_sizes`, into a buffer cut as `dst_sizes`, chunk by chunk
/// through a [`Walk`], printing one line per step.
fn walk_copy(data: &[u8], src_sizes: &[usize], dst_sizes: &[usize]) -> Vec<u8> {
    let mut copy = vec![0u8; dst_sizes.iter().sum()];
    let src = cut(data, src_sizes);
    let mut dst = cut_mut(&mut copy, dst_sizes);
    let mut walk = Walk::new(&src, &mut dst);
    let one_shot = walk.one_shot().map(|(s, d)| (s.len(), d.len()));
    println!(
        "walk {src_sizes:?} -> {dst_sizes:?}: slen {}, dlen {}",
        walk.slen(),
        walk.dlen()
    );
    println!("one_shot(): {one_shot:?} (not one fragment each side: an algorithm streams)\n");
    println!("step  src frag  chunk  dst frag  chunk  moved  consumed  produced  fragment ended");
    for step in 1.. {
        let sfrag = fragment(src_sizes, walk.consumed());
        let dfrag = fragment(dst_sizes, walk.produced());
        let s = walk.next_src();
        if s.is_empty() {
            break; // the source is used up
        }
        let d = walk.next_dst();
        let n = s.len().min(d.len());
        d[..n].copy_from_slice(&s[..n]);
        let (slen, dlen) = (s.len(), d.len());
        let ended = match (n == slen, n == dlen) {
            (true, true) => "both",
            (true, false) => "src",
            _ => "dst",
        };
        walk.done_src(n);
        walk.done_dst(n);
        let (c, p) = (walk.consumed(), walk.produced());
        println!(
            "{step:>4}  {sfrag:>8}  {slen:>5}  {dfrag:>8}  {dlen:>5}  {n:>5}  {c:>8}  {p:>8}  {ended}"
        );
    }
    copy
}

/// Compresses or decompresses `input`, cut as `src_head` and the rest, into `cap` bytes cut
/// as `dst_head` and the rest; prints the path the request took, read from the difference
/// in `Acomp::stats()`. Returns the output.
fn request(
    tfm: &Acomp,
    compress: bool,
    input: &[u8],
    src_head: &[usize],
    cap: usize,
    dst_head: &[usize],
) -> Vec<u8> {
    let (src_sizes, dst_sizes) = (sizes(input.len(), src_head), sizes(cap, dst_head));
    let mut out = vec![0u8; cap];
    let src = cut(input, &src_sizes);
    let mut dst = cut_mut(&mut out, &dst_sizes);
    let before = tfm.stats();
    let n = match compress {
        true => tfm.compress(&src, &mut dst),
        false => tfm.decompress(&src, &mut dst),
    };
    let n = n.expect("request failed");
    let after = tfm.stats();
    let path = if after.one_shot > before.one_shot {
        "one-shot"
    } else {
        "stream"
    };
    let op = if compress { "compress" } else { "decompress" };
    println!("{op:<10} {src_sizes:?} -> {dst_sizes:?}: {n} bytes, {path} path");
    out.truncate(n);
    out
}

fn main() -> ExitCode {
    let data: Vec<u8> = (0..160)
        .flat_map(|i| format!("line {i:03}: a chunk is the rest of one fragment\n").into_bytes())
        .collect();
    let len = data.len();
    let uneven = [1500, 0, 4000, 700];

    // (1) The walk itself: an uneven source into a destination cut elsewhere.
    let copy = walk_copy(&data, &sizes(len, &uneven), &sizes(len, &[3000, 3000]));
    println!();

    // (2) The same source through the transform: several fragments, so the stream path;
    // then back into a destination cut differently (and larger than the output).
    let tfm = Acomp::new("zstd").expect("zstd is built in");
    let bound = zstd_safe::compress_bound(len);
    let frame = request(&tfm, true, &data, &uneven, bound, &[64, 0, 100]);
    let cap = len + 100;
    let back = request(
        &tfm,
        false,
        &frame,
        &[frame.len() / 3],
        cap,
        &[4096, 0, 1000],
    );

    // (3) One fragment each side: the one-shot path, and the same frame byte for byte.
    let frame1 = request(&tfm, true, &data, &[], bound, &[]);
    let back1 = request(&tfm, false, &frame1, &[], len, &[]);

    println!();
    let mut ok = true;
    for (what, same) in [
        ("walked copy = source", copy == data),
        ("stream round trip = source", back == data),
        ("one-shot frame = stream frame", frame1 == frame),
        ("one-shot round trip = source", back1 == data),
    ] {
        let verdict = if same { "identical" } else { "DIFFERENT" };
        println!("{what:<30} {verdict}");
        ok &= same;
    }
    ExitCode::from(u8::from(!ok)) // 1 if any bytes differ
}
