//! Batches: every request of a batch gets exactly the outcome of the single call (bytes,
//! error kind, `needed`), whatever else the batch holds, on random cuts; the counters count
//! each request once.

use std::io::{IoSlice, IoSliceMut};

use crate::common::*;
use acomp::{Acomp, Error, Request, RequestPath};
use proptest::prelude::*;

/// One request to send: its source, the destination size, and the cuts of both.
#[derive(Debug, Clone)]
struct Case {
    src: Vec<u8>,
    cap: usize,
    scut: Cut,
    dcut: Cut,
}

/// Valid frames of pages, corrupt and truncated ones, too-small destinations, empty
/// sources; for compression, pages that do not fit.
fn case(compress_dir: bool) -> impl Strategy<Value = Case> {
    (
        0u8..6,
        0usize..9000,
        any::<u64>(),
        cut_strategy(3000),
        cut_strategy(3000),
    )
        .prop_map(move |(kind, len, seed, scut, dcut)| {
            let data = if kind == 3 {
                random_bytes(len, seed)
            } else {
                letters(len, seed)
            };
            if compress_dir {
                let cap = match kind {
                    0 => 0,
                    1 => len / 3,
                    _ => len + 64,
                };
                return Case {
                    src: data,
                    cap,
                    scut,
                    dcut,
                };
            }
            let mut frame = frame_with_size(&data, 3);
            let mut cap = len;
            match kind {
                0 => frame.truncate(frame.len() / 2),
                1 => {
                    let i = seed as usize % frame.len();
                    frame[i] ^= 0x55;
                }
                2 => cap = len.saturating_sub(1 + seed as usize % 100),
                4 => frame.clear(),
                _ => {}
            }
            Case {
                src: frame,
                cap,
                scut,
                dcut,
            }
        })
}

/// The batch's outcomes and outputs, beside the single calls'.
fn check(tfm: &Acomp, cases: &[Case], compress_dir: bool) {
    let single: Vec<Result<Bytes, Error>> = cases
        .iter()
        .map(|c| {
            if compress_dir {
                compress(tfm, &c.src, c.scut, c.cap, c.dcut)
            } else {
                decompress(tfm, &c.src, c.scut, c.cap, c.dcut)
            }
        })
        .collect();
    let before = tfm.stats();
    let srcs: Vec<Vec<IoSlice<'_>>> = cases.iter().map(|c| split(&c.src, c.scut)).collect();
    let mut outs: Vec<Vec<u8>> = cases.iter().map(|c| vec![0u8; c.cap]).collect();
    let mut dsts: Vec<Vec<IoSliceMut<'_>>> = outs
        .iter_mut()
        .zip(cases)
        .map(|(o, c)| split_mut(o, c.dcut))
        .collect();
    let mut reqs: Vec<Request<'_, '_>> = srcs
        .iter()
        .zip(dsts.iter_mut())
        .map(|(s, d)| Request::new(s, d))
        .collect();
    if compress_dir {
        tfm.compress_batch(&mut reqs);
    } else {
        tfm.decompress_batch(&mut reqs);
    }
    let outcomes: Vec<(Result<usize, Error>, Option<RequestPath>)> = reqs
        .iter()
        .map(|r| (r.outcome().expect("served").clone(), r.path()))
        .collect();
    drop(reqs);
    drop(dsts);
    for (i, ((got, path), want)) in outcomes.into_iter().zip(&single).enumerate() {
        let got = got.map(|n| Bytes(outs[i][..n].to_vec()));
        assert!(
            same_outcome(&got, want),
            "request {i}: {got:?} alone {want:?}"
        );
        assert_eq!(path.is_some(), got.is_ok(), "request {i}");
    }
    let after = tfm.stats();
    let n = cases.len() as u64;
    let counted = if compress_dir {
        after.compress - before.compress
    } else {
        after.decompress - before.decompress
    };
    assert_eq!(counted, n);
    let ok = single.iter().filter(|r| r.is_ok()).count() as u64;
    assert_eq!(
        after.one_shot + after.stream - before.one_shot - before.stream,
        ok
    );
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn decompression_batches_give_each_request_its_own_outcome(
        cases in proptest::collection::vec(case(false), 0..40),
    ) {
        check(&Acomp::new("zstd").unwrap(), &cases, false);
    }

    #[test]
    fn compression_batches_give_each_request_its_own_outcome(
        cases in proptest::collection::vec(case(true), 0..40),
    ) {
        check(&Acomp::new("zstd").unwrap(), &cases, true);
    }
}

#[test]
fn an_empty_batch_is_fine() {
    let tfm = Acomp::new("zstd").unwrap();
    tfm.compress_batch(&mut []);
    tfm.decompress_batch(&mut []);
    assert_eq!(tfm.stats().compress + tfm.stats().decompress, 0);
}

#[test]
fn a_request_not_served_has_no_outcome() {
    let src = [IoSlice::new(b"x")];
    let mut out = [0u8; 1];
    let mut dst = [IoSliceMut::new(&mut out)];
    let r = Request::new(&src, &mut dst);
    assert!(r.outcome().is_none() && r.path().is_none());
    assert_eq!(r.dst().len(), 1);
}
