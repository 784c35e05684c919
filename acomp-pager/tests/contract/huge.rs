//! The program's `MADV_HUGEPAGE` on a region changes nothing: faults are served 4 KiB at a
//! time, no transparent huge page is mapped, and pages round-trip.

use acomp_pager::PAGE_SIZE;

use crate::common::{self, Mem, page};

/// `AnonHugePages` of the mappings of this process that overlap `[start, end)`, in kB.
fn anon_huge_kb(start: usize, end: usize) -> u64 {
    let smaps = std::fs::read_to_string("/proc/self/smaps").unwrap();
    let mut inside = false;
    let mut kb = 0;
    for line in smaps.lines() {
        let head = line.split_whitespace().next().unwrap_or("");
        if let Some((a, b)) = head.split_once('-') {
            if let (Ok(a), Ok(b)) = (usize::from_str_radix(a, 16), usize::from_str_radix(b, 16)) {
                inside = a < end && start < b;
                continue;
            }
        }
        if inside {
            if let Some(v) = line.strip_prefix("AnonHugePages:") {
                kb += v
                    .trim()
                    .trim_end_matches("kB")
                    .trim()
                    .parse::<u64>()
                    .unwrap();
            }
        }
    }
    kb
}

#[test]
fn madv_hugepage_on_a_region_still_faults_4k_pages() {
    let _w = common::watchdog("huge pages", 300);
    let Some(pager) = common::pager_without_around(common::tier()) else {
        return;
    };
    // 6 MiB: two whole 2 MiB-aligned ranges inside, wherever the mapping lands.
    const PAGES: usize = 1536;
    let region = pager.region(PAGES * PAGE_SIZE).unwrap();
    let mem = Mem::of(&region);
    mem.advise(0, PAGES, libc::MADV_HUGEPAGE).unwrap();
    for p in 0..PAGES {
        mem.write(p, &page(p, 1));
    }
    let s = pager.stats();
    assert_eq!(
        (s.faults, s.zero_faults, s.resident_pages),
        (PAGES as u64, PAGES as u64, PAGES as u64),
        "one fault per 4 KiB page"
    );
    assert_eq!(anon_huge_kb(mem.base, mem.base + PAGES * PAGE_SIZE), 0);
    assert_eq!(region.page_out(0, region.len()).unwrap(), PAGES);
    for p in 0..PAGES {
        mem.check(p, &page(p, 1), "read back under MADV_HUGEPAGE");
    }
    let s = pager.stats();
    assert_eq!((s.swap_ins, s.faults), (PAGES as u64, 2 * PAGES as u64));
    assert_eq!(anon_huge_kb(mem.base, mem.base + PAGES * PAGE_SIZE), 0);
}
