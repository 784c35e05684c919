//! Many more threads than CPUs share one transform; every result is checked.

use std::sync::Arc;

use crate::common::*;
use acomp::Acomp;

#[test]
fn many_threads_share_one_transform() {
    let tfm = Arc::new(Acomp::new("zstd").unwrap());
    let cpus = std::thread::available_parallelism().map_or(2, |n| n.get());
    let threads = (cpus * 8).max(16);
    let handles: Vec<_> = (0..threads)
        .map(|t| {
            let tfm = Arc::clone(&tfm);
            std::thread::spawn(move || {
                for i in 0..60u64 {
                    let seed = (t as u64) << 32 | i;
                    let len = [4096, 1, 10_000, 70_000][(i % 4) as usize];
                    let data = letters(len, seed);
                    let (sc, dc) = if i % 2 == 0 {
                        (Cut::One, Cut::One)
                    } else {
                        (Cut::Random(seed), Cut::Random(!seed))
                    };
                    let cap = zstd_safe::compress_bound(len);
                    let frame = compress(&tfm, &data, sc, cap, dc).unwrap();
                    assert!(decompress(&tfm, &frame, dc, len, sc).unwrap() == data);
                    // An error now and then, which must not leak into the next request.
                    if i % 5 == 0 {
                        assert_eq!(
                            decompress(&tfm, &frame[..frame.len() / 2], sc, len, dc)
                                .unwrap_err()
                                .errno(),
                            libc::EBADMSG
                        );
                        assert_eq!(
                            compress(&tfm, &random_bytes(4096, seed), sc, 4096, dc)
                                .unwrap_err()
                                .errno(),
                            libc::ENOSPC
                        );
                    }
                }
            })
        })
        .collect();
    for h in handles {
        h.join().unwrap();
    }
    let s = tfm.stats();
    let n = threads as u64 * 60;
    assert_eq!(s.compress, n + n / 5);
    assert_eq!(s.decompress, n + n / 5);
    assert_eq!(
        s.one_shot + s.stream + s.no_space + s.corrupt,
        s.compress + s.decompress
    );
}
