//! Stress: four times as many threads as CPUs on one transform, mixing valid requests,
//! corrupt frames, too-small destinations and range reads, some threads moving between
//! CPUs as they run, so that busy slots, lazy filling and the fallback slot all see use.
//!
//! `stress_short` runs in the suite (about two seconds); `stress_long` runs as long as
//! `ACOMP_STRESS_SECS` says (default 60): `cargo test --release --test stress -- --ignored`.

use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::common::*;
use acomp::{Acomp, Error, Segment};

/// Runs the mixed workload for `secs` seconds; returns the requests made.
fn stress(secs: u64) -> u64 {
    let tfm = Arc::new(Acomp::new("zstd").unwrap());
    let allowed = allowed_cpus();
    let cpus = allowed.len();
    let deadline = Instant::now() + Duration::from_secs(secs);
    let handles: Vec<_> = (0..cpus * 4)
        .map(|t| {
            let tfm = Arc::clone(&tfm);
            let allowed = allowed.clone();
            std::thread::spawn(move || {
                let mut made = 0u64;
                let mut i = 0u64;
                while Instant::now() < deadline {
                    i += 1;
                    let seed = (t as u64) << 40 | i;
                    if t % 2 == 1 {
                        // Odd threads hop between CPUs every few requests, and now and
                        // then may run anywhere again.
                        match ((i / 3) % (cpus as u64 + 1)) as usize {
                            0 => pin_to(&allowed),
                            k => pin_to(&allowed[k - 1..k]),
                        }
                    }
                    let len = [4096, 10_000, 1, 100_000][(i % 4) as usize];
                    let data = letters(len, seed);
                    let (sc, dc) = match i % 3 {
                        0 => (Cut::One, Cut::One),
                        1 => (Cut::Every(4096), Cut::One),
                        _ => (Cut::Random(seed), Cut::Random(seed >> 1)),
                    };
                    let frame = compress(&tfm, &data, sc, len + 64, dc).unwrap();
                    assert!(decompress(&tfm, &frame, dc, len, sc).unwrap() == data);
                    made += 2;
                    match i % 4 {
                        0 => {
                            let mut bad = frame.0.clone();
                            let n = bad.len();
                            bad.truncate(n - 1);
                            let e = decompress(&tfm, &bad, sc, len, dc).unwrap_err();
                            assert_eq!(e.errno(), libc::EBADMSG);
                        }
                        1 if len > 1 => {
                            let e = decompress(&tfm, &frame, sc, len - 1, dc).unwrap_err();
                            assert_eq!(
                                e,
                                Error::NoSpace {
                                    needed: Some(len as u64),
                                    capacity: len - 1
                                }
                            );
                        }
                        2 => {
                            let e = compress(&tfm, &random_bytes(4096, seed), sc, 4096, dc)
                                .unwrap_err();
                            assert_eq!(e.errno(), libc::ENOSPC);
                        }
                        3 if i % 8 == 3 => {
                            // A batch: the frame, a truncated copy, a too-small destination.
                            let short = &frame[..frame.len() - 1];
                            let srcs = [split(&frame, sc), split(short, sc), split(&frame, dc)];
                            let mut outs = [vec![0u8; len], vec![0u8; len], vec![0u8; len - 1]];
                            let mut dsts: Vec<_> =
                                outs.iter_mut().map(|o| split_mut(o, dc)).collect();
                            let mut reqs: Vec<_> = srcs
                                .iter()
                                .zip(dsts.iter_mut())
                                .map(|(s, d)| acomp::Request::new(s, d))
                                .collect();
                            tfm.decompress_batch(&mut reqs);
                            let kinds: Vec<_> = reqs
                                .iter()
                                .map(|r| {
                                    r.outcome()
                                        .unwrap()
                                        .as_ref()
                                        .map_err(|e| e.errno())
                                        .copied()
                                })
                                .collect();
                            let nospace = if len > 1 { Err(libc::ENOSPC) } else { Ok(0) };
                            assert_eq!(kinds, [Ok(len), Err(libc::EBADMSG), nospace]);
                            made += 2;
                        }
                        _ => {
                            let mut page = vec![0u8; 100];
                            let off = (seed % len as u64).min(len as u64 - 1);
                            let mut segs = [Segment::new(off, &mut page)];
                            let n = tfm.decompress_range(&split(&frame, sc), &mut segs).unwrap();
                            let end = (off as usize + 100).min(len);
                            assert_eq!(n, end - off as usize);
                            assert_eq!(&page[..n], &data[off as usize..end]);
                        }
                    }
                    made += 1;
                }
                pin_to(&allowed);
                made
            })
        })
        .collect();
    let made: u64 = handles.into_iter().map(|h| h.join().unwrap()).sum();
    let s = tfm.stats();
    assert_eq!(s.compress + s.decompress, made, "{s:?}");
    eprintln!("stress: {made} requests in {secs} s on {cpus} CPUs: {s:?}");
    made
}

#[test]
fn stress_short() {
    assert!(stress(2) > 100);
}

#[test]
#[ignore = "long: run with --ignored, ACOMP_STRESS_SECS sets the seconds"]
fn stress_long() {
    let secs = std::env::var("ACOMP_STRESS_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(60);
    stress(secs);
}
