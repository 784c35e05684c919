//! Frames that ask for large windows never make a workspace hold more than the window
//! limit allows.

use crate::common::*;
use acomp::{Acomp, ZstdParams};

#[test]
fn workspace_memory_is_bounded_by_the_window_limit() {
    // Every request on one CPU lands on the same workspace.
    pin_to(&allowed_cpus()[..1]);
    let limit_log = 20;
    let tfm = Acomp::with_zstd(ZstdParams::default().window_log_max(limit_log)).unwrap();
    // 3 MiB of data without content size, in windows of 2^18 up to 2^27: those within the
    // limit decode (on the stream path, which holds a window), the others are refused.
    let data = letters(3 << 20, 1);
    let mut largest = 0;
    for wlog in 18..=27 {
        let frame = frame_without_size(&data, 1, wlog);
        for (s, d) in [
            (Cut::Every(65_536), Cut::Every(65_536)),
            (Cut::One, Cut::One),
        ] {
            let res = decompress(&tfm, &frame, s, data.len(), d);
            if wlog <= limit_log {
                assert!(res.unwrap() == data, "window 2^{wlog}");
            } else {
                assert_eq!(res.unwrap_err().errno(), libc::EINVAL, "window 2^{wlog}");
            }
            let stats = tfm.stats();
            assert_eq!(stats.workspaces, 1);
            largest = largest.max(stats.workspace_bytes);
        }
    }
    // The window, zstd's block buffers and the contexts themselves: well under twice the
    // window, never the 2^27 some frames asked for.
    let limit = 1usize << limit_log;
    assert!(
        largest > limit / 2,
        "the stream path held a window: {largest}"
    );
    assert!(
        largest < 2 * limit,
        "workspace of {largest} bytes for a limit of {limit}"
    );
}
