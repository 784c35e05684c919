//! The errors: exact kinds for the arguments the pager refuses.

use acomp_pager::{Error, PAGE_SIZE, Pager};

use crate::common;

#[test]
fn bad_lengths_and_ranges_are_invalid_input() {
    let _w = common::watchdog("errors", 300);
    let Some(pager) = common::pager(common::tier()) else {
        return;
    };
    assert!(invalid(&pager.region(0).unwrap_err()));
    assert!(invalid(&pager.region((1 << 48) + 1).unwrap_err()));
    let one = pager.region(1).unwrap();
    assert_eq!(one.len(), PAGE_SIZE, "rounded up to a page");
    let region = pager.region(4 * PAGE_SIZE).unwrap();
    let len = region.len();
    for (offset, n) in [
        (1, PAGE_SIZE),
        (0, PAGE_SIZE - 1),
        (0, PAGE_SIZE + 1),
        (PAGE_SIZE / 2, PAGE_SIZE / 2),
        (0, len + PAGE_SIZE),
        (len, PAGE_SIZE),
        (len + PAGE_SIZE, 0),
        (PAGE_SIZE, usize::MAX - PAGE_SIZE + 1),
        (usize::MAX - PAGE_SIZE + 1, PAGE_SIZE),
    ] {
        let e = region.page_out(offset, n).unwrap_err();
        assert!(invalid(&e), "page_out({offset}, {n}): {e}");
    }
    // The empty ranges inside, and the end itself, are fine and move nothing.
    assert_eq!(region.page_out(0, 0).unwrap(), 0);
    assert_eq!(region.page_out(len, 0).unwrap(), 0);
    assert_eq!(
        region.page_out(0, len).unwrap(),
        0,
        "nothing written: nothing moved"
    );
    // A resident limit under two batches (64 pages) is refused at build.
    let e = Pager::builder(common::tier())
        .resident_limit(63 * PAGE_SIZE as u64)
        .build()
        .unwrap_err();
    assert!(invalid(&e), "{e}");
}

/// `write_at` and `read_at` refuse a range not inside the region, copying nothing: the
/// region's bytes and the caller's buffer stay as they were.
#[test]
fn copies_outside_the_region_are_invalid_input_and_copy_nothing() {
    let _w = common::watchdog("errors", 300);
    let Some(pager) = common::pager(common::tier()) else {
        return;
    };
    let region = pager.region(2 * PAGE_SIZE).unwrap();
    let len = region.len();
    region.write_at(len - 3, &[1, 2, 3]).unwrap();
    for (offset, n) in [(len - 2, 3), (len, 1), (len + 1, 0), (usize::MAX, 2)] {
        let e = region.write_at(offset, &vec![9; n]).unwrap_err();
        assert!(invalid(&e), "write_at({offset}, {n} bytes): {e}");
        let mut out = vec![5; n];
        let e = region.read_at(offset, &mut out).unwrap_err();
        assert!(invalid(&e), "read_at({offset}, {n} bytes): {e}");
        assert!(
            out.iter().all(|&b| b == 5),
            "read_at({offset}) wrote into out"
        );
    }
    let mut tail = [0u8; 3];
    region.read_at(len - 3, &mut tail).unwrap();
    assert_eq!(tail, [1, 2, 3], "a refused write_at changed the region");
    // The end itself, empty, is inside.
    region.write_at(len, &[]).unwrap();
    region.read_at(len, &mut []).unwrap();
}

/// `Error::InvalidInput`, which converts to an `io::Error` of kind `InvalidInput`.
fn invalid(e: &Error) -> bool {
    matches!(e, Error::InvalidInput { .. })
        && e.io_kind() == std::io::ErrorKind::InvalidInput
        && e.raw_os_error().is_none()
}
