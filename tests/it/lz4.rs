//! lz4 behind the same contract as zstd: round trips over random cuts, blocks identical on
//! every cut, exact `ENOSPC`, corrupt blocks `EBADMSG` at every size and cut, the request
//! limit, parameters, and agreement with the reference C decoder on every valid block.

use std::io::{IoSlice, IoSliceMut};

use crate::common::{Cut, compress, decompress, letters, random_bytes, same_outcome};
use acomp::{Acomp, Error, Lz4Params, Segment};
use proptest::prelude::*;

/// liblz4's `LZ4_decompress_safe` into exactly `n` bytes: where a block is valid, the
/// reference decoder's output.
fn reference_decode(block: &[u8], n: usize) -> Option<Vec<u8>> {
    let mut out = vec![0u8; n];
    // SAFETY: `block` and `out` are valid for their lengths; liblz4 keeps no pointer.
    let ret = unsafe {
        lz4_sys::LZ4_decompress_safe(
            block.as_ptr().cast(),
            out.as_mut_ptr().cast(),
            block.len() as i32,
            n as i32,
        )
    };
    (ret == n as i32).then_some(out)
}

/// liblz4's `LZ4_compress_default`: the kernel's call.
fn reference_compress(data: &[u8]) -> Vec<u8> {
    let mut out = vec![0u8; data.len() + data.len() / 255 + 16];
    // SAFETY: `data` and `out` are valid for their lengths; liblz4 keeps no pointer.
    let n = unsafe {
        lz4_sys::LZ4_compress_default(
            data.as_ptr().cast(),
            out.as_mut_ptr().cast(),
            data.len() as i32,
            out.len() as i32,
        )
    };
    assert!(n > 0);
    out.truncate(n as usize);
    out
}

fn bound(len: usize) -> usize {
    len + len / 255 + 16
}

/// Data of every texture: text-like, random, runs, and a mix.
fn data_strategy() -> impl Strategy<Value = Vec<u8>> {
    (0usize..70_000, any::<u64>(), 0u8..4).prop_map(|(len, seed, kind)| match kind {
        0 => letters(len, seed),
        1 => random_bytes(len, seed),
        2 => (0..len).map(|i| ((i / 300) as u8) ^ (seed as u8)).collect(),
        _ => {
            let mut v = letters(len, seed);
            for (i, b) in random_bytes(len / 3, seed).into_iter().enumerate() {
                v[i * 3 % len.max(1)] = b;
            }
            v
        }
    })
}

/// The common cuts, and 4 KiB fragments (a page each) on their own.
fn lz4_cuts() -> impl Strategy<Value = Cut> {
    prop_oneof![1 => Just(Cut::Every(4096)), 3 => crate::common::cut_strategy(300)]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(96))]

    /// The block is the same on every cut and at every capacity that holds it, liblz4
    /// writes it byte for byte at acceleration 1 (the kernel's `LZ4_compress_default`), one
    /// byte less is `ENOSPC`, and it decompresses to the data on every cut.
    #[test]
    fn round_trip_on_random_cuts(data in data_strategy(), scut in lz4_cuts(), dcut in lz4_cuts()) {
        let tfm = Acomp::new("lz4").unwrap();
        let block = compress(&tfm, &data, Cut::One, bound(data.len()), Cut::One).unwrap();
        prop_assert!(block == reference_compress(&data));
        for cap in [bound(data.len()), block.len()] {
            let cut = compress(&tfm, &data, scut, cap, dcut).unwrap();
            prop_assert!(cut == block.0, "the block depends on the cut or the capacity");
        }
        let err = compress(&tfm, &data, scut, block.len() - 1, dcut).unwrap_err();
        prop_assert_eq!(err.errno(), libc::ENOSPC);
        let back = decompress(&tfm, &block, dcut, data.len(), scut).unwrap();
        prop_assert!(back == data);
        if !data.is_empty() {
            let err = decompress(&tfm, &block, dcut, data.len() - 1, scut).unwrap_err();
            prop_assert_eq!(err, Error::NoSpace { needed: Some(data.len() as u64), capacity: data.len() - 1 });
        }
    }

    /// Mutated, truncated and extended blocks: the same outcome on every cut; `Ok` only with
    /// the reference decoder's output for a destination of exactly that size and nothing
    /// past the output written; `ENOSPC` only where the size it names succeeds; corrupt at
    /// one size, corrupt at all.
    #[test]
    fn hostile_blocks_same_outcome(
        data in data_strategy(),
        edits in proptest::collection::vec((any::<usize>(), any::<u8>()), 0..4),
        cut_to in any::<Option<usize>>(),
        extra in proptest::collection::vec(any::<u8>(), 0..3),
        cap in 0usize..80_000,
        scut in lz4_cuts(),
        dcut in lz4_cuts(),
    ) {
        let tfm = Acomp::new("lz4").unwrap();
        let mut block = compress(&tfm, &data, Cut::One, bound(data.len()), Cut::One).unwrap().0;
        for (at, b) in edits {
            let at = at % block.len();
            block[at] = b;
        }
        if let Some(n) = cut_to {
            block.truncate(n % (block.len() + 1));
        }
        block.extend_from_slice(&extra);
        prop_assume!(!block.is_empty());
        let one = decompress(&tfm, &block, Cut::One, cap, Cut::One);
        let cut = decompress(&tfm, &block, scut, cap, dcut);
        prop_assert!(same_outcome(&one, &cut), "{:?} vs {:?}", one, cut);
        // Nothing past the output: a destination full of a canary keeps it there.
        let mut canary = vec![0xA5u8; cap];
        let res = tfm.decompress(&[IoSlice::new(&block)], &mut [IoSliceMut::new(&mut canary)]);
        match (&one, res) {
            (Ok(out), Ok(n)) => {
                prop_assert_eq!(&canary[..n], &out[..]);
                prop_assert!(canary[n..].iter().all(|&b| b == 0xA5));
                let reference = reference_decode(&block, n);
                prop_assert_eq!(reference.as_deref(), Some(&out[..]));
            }
            (Err(a), Err(b)) => prop_assert_eq!(a.errno(), b.errno()),
            (a, b) => prop_assert!(false, "{:?} vs {:?}", a, b),
        }
        match one {
            Err(Error::NoSpace { needed: Some(n), .. }) => {
                let n = n as usize;
                prop_assert!(n > cap);
                let out = decompress(&tfm, &block, dcut, n, scut).unwrap();
                prop_assert_eq!(out.len(), n);
            }
            Err(e) if e.errno() == libc::EBADMSG => {
                let e = decompress(&tfm, &block, scut, 1 << 20, dcut).unwrap_err();
                prop_assert_eq!(e.errno(), libc::EBADMSG);
            }
            _ => {}
        }
    }
}

#[test]
fn empty_source_compresses_to_one_token() {
    let tfm = Acomp::new("lz4").unwrap();
    let block = compress(&tfm, &[], Cut::One, 16, Cut::One).unwrap();
    assert_eq!(&block[..], &[0u8]);
    assert_eq!(
        decompress(&tfm, &block, Cut::One, 0, Cut::One)
            .unwrap()
            .len(),
        0
    );
    assert_eq!(
        compress(&tfm, &[], Cut::One, 0, Cut::One).unwrap_err(),
        Error::NoSpace {
            needed: Some(1),
            capacity: 0
        }
    );
}

/// Over the request limit: `EINVAL` on every cut and every destination size, never
/// `ENOSPC` (no destination helps).
#[test]
fn requests_over_the_limit_are_einval() {
    let tfm = Acomp::with_lz4(Lz4Params::default().request_max(8192)).unwrap();
    assert_eq!(tfm.name(), "lz4");
    let data = letters(8193, 1);
    let small = letters(8192, 1);
    let over = lz4_flex::block::compress(&data);
    let within = compress(&tfm, &small, Cut::One, bound(8192), Cut::One).unwrap();
    for (scut, dcut) in crate::common::all_cut_pairs() {
        let e = compress(&tfm, &data, scut, bound(8193), dcut).unwrap_err();
        assert_eq!(e.errno(), libc::EINVAL, "{e}");
        for cap in [0, 100, 8192, 1 << 20] {
            let e = decompress(&tfm, &over, scut, cap, dcut).unwrap_err();
            assert_eq!(e.errno(), libc::EINVAL, "{scut:?} {dcut:?} {cap}: {e}");
        }
        let back = decompress(&tfm, &within, scut, 8192, dcut).unwrap();
        assert!(back == small);
    }
    // A source larger than any block of a request.
    let big = vec![0u8; bound(8192) + 1];
    let e = decompress(&tfm, &big, Cut::One, 1 << 20, Cut::One).unwrap_err();
    assert_eq!(e.errno(), libc::EINVAL);
    // A corrupt block stays corrupt, whatever its size would be.
    let mut bad = over.clone();
    bad.truncate(over.len() - 1);
    let e = decompress(&tfm, &bad, Cut::Every(7), 1 << 20, Cut::One).unwrap_err();
    assert_eq!(e.errno(), libc::EBADMSG, "{e}");
}

/// The default limit is 64 MiB, `EINVAL` past it on one fragment too, with the limit in
/// the message. The limit costs no memory: a one-fragment request uses no workspace buffer,
/// and a request in fragments grows the two buffers to its own size (source and bound),
/// which the workspace then keeps.
#[test]
fn default_limit_is_64_mib_and_buffers_grow_with_requests() {
    crate::common::pin_to(&crate::common::allowed_cpus()[..1]);
    let tfm = Acomp::new("lz4").unwrap();
    assert_eq!(acomp::lz4::DEFAULT_REQUEST_MAX, 64 * 1024 * 1024);
    let over = vec![0u8; 64 * 1024 * 1024 + 1];
    let e = compress(&tfm, &over, Cut::One, 1 << 20, Cut::One).unwrap_err();
    assert_eq!(
        e.to_string(),
        "invalid parameter: lz4 source of 67108865 bytes over the request limit of 67108864 bytes"
    );
    // `compress_to_vec` refuses it the same way, before it reserves any room.
    assert_eq!(tfm.compress_bound(over.len()), usize::MAX);
    let mut v = vec![1, 2, 3];
    assert_eq!(tfm.compress_to_vec(&over, &mut v), Err(e));
    assert_eq!((v.len(), v.capacity()), (3, 3));
    let mib = 1 << 20;
    // Runs: a block smaller than the source, so that the source buffer is the source's size.
    let data: Vec<u8> = (0..mib).map(|i| (i / 300) as u8).collect();
    let block = compress(&tfm, &data, Cut::One, bound(mib), Cut::One).unwrap();
    let back = decompress(&tfm, &block, Cut::One, mib, Cut::One).unwrap();
    assert!(back == data);
    let state = tfm.stats().workspace_bytes;
    assert_eq!(state, 16_416, "liblz4's state alone (LZ4_sizeofState)");
    let cut = compress(&tfm, &data, Cut::Every(5000), bound(mib), Cut::Random(3)).unwrap();
    assert!(cut == block);
    let back = decompress(&tfm, &block, Cut::Random(4), mib, Cut::Every(4096)).unwrap();
    assert!(back == data);
    let s = tfm.stats();
    assert_eq!(s.workspace_bytes - state, mib + bound(mib), "{s:?}");
}

#[test]
fn parameters_out_of_range_are_einval() {
    for params in [
        Lz4Params::default().acceleration(0),
        Lz4Params::default().acceleration(65_538),
        Lz4Params::default().request_max(4095),
        Lz4Params::default().request_max(64 * 1024 * 1024 + 1),
    ] {
        let e = Acomp::with_lz4(params).unwrap_err();
        assert_eq!(e.errno(), libc::EINVAL, "{e}");
    }
}

/// A larger acceleration writes other (here: larger) blocks, which read back the same.
#[test]
fn acceleration_trades_ratio_for_speed() {
    let fast = Acomp::with_lz4(Lz4Params::default().acceleration(64)).unwrap();
    let tfm = Acomp::new("lz4").unwrap();
    let data = letters(60_000, 3);
    let a = compress(&tfm, &data, Cut::One, bound(60_000), Cut::One).unwrap();
    let b = compress(&fast, &data, Cut::Every(999), bound(60_000), Cut::One).unwrap();
    assert!(b.len() > a.len(), "{} vs {}", b.len(), a.len());
    for block in [&a, &b] {
        let back = decompress(&tfm, block, Cut::Every(3), 60_000, Cut::One).unwrap();
        assert!(back == data);
    }
}

/// Paths and counters: one fragment each side is one-shot; anything else linearised; a
/// corrupt request leaves the workspace fit for the next.
#[test]
fn paths_errors_and_reuse() {
    let tfm = Acomp::new("lz4").unwrap();
    let data = letters(4096, 4);
    let block = compress(&tfm, &data, Cut::One, 4096, Cut::One).unwrap();
    decompress(&tfm, &block, Cut::Every(100), 4096, Cut::One).unwrap();
    decompress(&tfm, &block, Cut::One, 4096, Cut::Every(1000)).unwrap();
    let mut bad = block.0.clone();
    bad.truncate(block.len() - 1);
    let e = decompress(&tfm, &bad, Cut::Every(10), 4096, Cut::Every(10)).unwrap_err();
    assert_eq!(e.errno(), libc::EBADMSG);
    let back = decompress(&tfm, &block, Cut::Every(10), 4096, Cut::Every(10)).unwrap();
    assert!(back == data);
    let s = tfm.stats();
    assert_eq!((s.compress, s.decompress), (1, 4));
    assert_eq!(
        (s.one_shot, s.linearised, s.stream, s.corrupt),
        (1, 3, 0, 1)
    );
    assert!(s.workspace_bytes >= 16 * 1024, "{s:?}");
}

/// A page's block in fragments, into one fragment, is linearised on the stack: counted as
/// linearised, no workspace buffer grown; a larger source goes through the workspace's.
#[test]
fn a_page_block_linearises_on_the_stack() {
    let tfm = Acomp::new("lz4").unwrap();
    let before = tfm.stats().workspace_bytes;
    // Incompressible: 4114 bytes, about the largest block of a page.
    let data = random_bytes(4096, 3);
    let block = reference_compress(&data);
    assert_eq!(block.len(), 4114);
    let back = decompress(&tfm, &block, Cut::Every(1000), 4096, Cut::One).unwrap();
    assert!(back == data);
    let s = tfm.stats();
    assert_eq!((s.linearised, s.workspace_bytes), (1, before), "{s:?}");
    let data = random_bytes(8192, 3);
    let block = reference_compress(&data);
    let back = decompress(&tfm, &block, Cut::Every(1000), 8192, Cut::One).unwrap();
    assert!(back == data);
    let s = tfm.stats();
    assert_eq!(s.linearised, 2);
    assert!(s.workspace_bytes >= before + block.len(), "{s:?}");
}

/// lz4 has no range reads: `EINVAL`, as for any algorithm without them.
#[test]
fn range_reads_are_einval() {
    let tfm = Acomp::new("lz4").unwrap();
    let mut page = [0u8; 16];
    let e = tfm
        .decompress_range(&[IoSlice::new(&[0x00])], &mut [Segment::new(0, &mut page)])
        .unwrap_err();
    assert_eq!(e.errno(), libc::EINVAL);
}

/// A destination of `compress_bound` bytes always takes the block (an incompressible page:
/// 4114 bytes of 4096).
#[test]
fn compress_bound_always_fits() {
    let tfm = Acomp::new("lz4").unwrap();
    assert_eq!(tfm.compress_bound(4096), 4096 + 4096 / 255 + 16);
    for data in [random_bytes(4096, 9), random_bytes(1, 9), Vec::new()] {
        let cap = tfm.compress_bound(data.len());
        compress(&tfm, &data, Cut::One, cap, Cut::Every(5)).unwrap();
    }
}

/// Every way to send one lz4 decompression: one fragment each side, every cut pair, a batch
/// of one, `decompress_to_buffer`, `decompress_to_vec`, and the block functions; the
/// outcomes with what served them.
fn every_call(tfm: &Acomp, block: &[u8], cap: usize) -> Vec<(String, Result<usize, Error>)> {
    let mut all = Vec::new();
    for (scut, dcut) in crate::common::all_cut_pairs() {
        let res = decompress(tfm, block, scut, cap, dcut).map(|b| b.len());
        all.push((format!("{scut:?}/{dcut:?}"), res));
    }
    let mut out = vec![0u8; cap];
    all.push((
        "to_buffer".into(),
        tfm.decompress_to_buffer(block, &mut out),
    ));
    let mut v = Vec::new();
    all.push(("to_vec".into(), tfm.decompress_to_vec(block, &mut v, cap)));
    let src = [IoSlice::new(block)];
    let mut dst = [IoSliceMut::new(&mut out)];
    let mut reqs = [acomp::Request::new(&src, &mut dst)];
    tfm.decompress_batch(&mut reqs);
    all.push(("batch".into(), reqs[0].outcome().unwrap().clone()));
    all.push((
        "decompress_block".into(),
        acomp::lz4::decompress_block(block, &mut out),
    ));
    all.push((
        "block_content_size".into(),
        acomp::lz4::block_content_size(block).map(|n| n as usize),
    ));
    all
}

/// liblz4 on `block` into `cap` bytes: the bytes written, or its negative error.
fn liblz4(block: &[u8], cap: usize) -> i32 {
    let mut out = vec![0u8; cap.max(1)];
    // SAFETY: `block` is valid for its length and `out` for at least `cap` bytes; liblz4
    // keeps no pointer.
    unsafe {
        lz4_sys::LZ4_decompress_safe(
            block.as_ptr().cast(),
            out.as_mut_ptr().cast(),
            block.len() as i32,
            cap as i32,
        )
    }
}

/// A last token's match nibble is not read: the last sequence is literals only, and
/// liblz4 ignores the nibble there too. acomp gives the same outcome at every destination
/// size, on every path and cut (`0f` is `Ok(0)` into 0 bytes); liblz4 refuses a block of one
/// such token at capacity 0 (its `outputSize == 0` case takes only `00`) and takes it from 1.
/// Documented in `src/lz4.rs` (where acomp and liblz4 differ).
#[test]
fn last_token_match_nibble_is_ignored_at_every_capacity() {
    let tfm = Acomp::new("lz4").unwrap();
    // (block, its output)
    let mut blocks: Vec<(Vec<u8>, Vec<u8>)> = (0x01..=0x0f).map(|t| (vec![t], vec![])).collect();
    blocks.push((vec![0x1f, b'a'], b"a".to_vec()));
    let long = letters(16, 5);
    blocks.push(([&[0xf4, 0x01][..], &long].concat(), long.clone()));
    // 5 literals, an 8-byte match at offset 1, then a last token of 5 literals with a
    // match nibble of 3: 18 bytes, as with a nibble of 0.
    let with_match = [0x54, 1, 2, 3, 4, 5, 1, 0, 0x53, 1, 2, 3, 4, 5];
    let out = [1, 2, 3, 4, 5, 5, 5, 5, 5, 5, 5, 5, 5, 1, 2, 3, 4, 5];
    blocks.push((with_match.to_vec(), out.to_vec()));
    for (block, want) in &blocks {
        let n = want.len();
        for cap in [0, 1, 2, 16, 64, 4096] {
            for (how, res) in every_call(&tfm, block, cap) {
                if cap >= n || how == "block_content_size" {
                    assert_eq!(res, Ok(n), "{block:02x?} cap {cap} {how}");
                } else {
                    let err = res.unwrap_err();
                    assert_eq!(err.errno(), libc::ENOSPC, "{block:02x?} cap {cap} {how}");
                }
            }
            let mut dst = vec![0u8; cap];
            if cap >= n {
                assert_eq!(acomp::lz4::decompress_block(block, &mut dst), Ok(n));
                assert_eq!(&dst[..n], &want[..], "{block:02x?} cap {cap}");
            }
            // liblz4 gives the same bytes wherever it takes the block.
            if cap >= n.max(1) {
                assert_eq!(
                    liblz4(block, cap),
                    n as i32,
                    "liblz4 {block:02x?} cap {cap}"
                );
            }
        }
    }
    // The one difference: a one-token block into 0 bytes.
    for t in 0x01..=0x0fu8 {
        assert!(liblz4(&[t], 0) < 0, "liblz4 {t:02x} cap 0");
        assert_eq!(acomp::lz4::decompress_block(&[t], &mut []), Ok(0));
    }
    assert_eq!(liblz4(&[0x00], 0), 0);
}

/// A block that does not fit is `ENOSPC` with its exact size on every cut, a batch and the
/// buffer call, one byte short or with no room at all; lz4 has no early rejection, so
/// `Stats::rejected` stays 0 while `no_space` counts every one.
#[test]
fn compression_enospc_says_needed() {
    let tfm = Acomp::new("lz4").unwrap();
    let mut refusals = 0;
    for data in [
        random_bytes(4096, 11),
        letters(4096, 12),
        letters(70_000, 13),
        Vec::new(),
    ] {
        let block = reference_compress(&data);
        for cap in [0, block.len() / 2, block.len() - 1] {
            let want = Err(Error::NoSpace {
                needed: Some(block.len() as u64),
                capacity: cap,
            });
            for (scut, dcut) in crate::common::all_cut_pairs() {
                let res = compress(&tfm, &data, scut, cap, dcut).map(|b| b.len());
                assert_eq!(
                    res,
                    want,
                    "{} bytes cap {cap} {scut:?}/{dcut:?}",
                    data.len()
                );
                refusals += 1;
            }
            let mut out = vec![0u8; cap];
            assert_eq!(tfm.compress_to_buffer(&data, &mut out), want);
            let src = [IoSlice::new(&data)];
            let mut dst = [IoSliceMut::new(&mut out)];
            let mut reqs = [acomp::Request::new(&src, &mut dst)];
            tfm.compress_batch(&mut reqs);
            assert_eq!(reqs[0].outcome(), Some(&want));
            refusals += 2;
        }
        // The size it names fits, on every cut.
        for (scut, dcut) in crate::common::all_cut_pairs() {
            let b = compress(&tfm, &data, scut, block.len(), dcut).unwrap();
            assert!(b == block);
        }
    }
    let s = tfm.stats();
    assert_eq!((s.no_space, s.rejected), (refusals, 0), "{s:?}");
}
