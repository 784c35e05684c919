//! `fork`: a child inherits no region, and what it does with its copies of the handles
//! changes nothing in the parent. A child dropping its `Region`, its `Pager`, or both, or
//! exiting at once: the parent's paged-out pages read back exactly as written, and once
//! the child is gone the parent's pager costs no CPU while nothing faults.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::time::Duration;

use acomp_pager::{Error, PAGE_SIZE, Pager};

use crate::common::{self, Mem, page};

const PAGES: usize = 1024;
const ROLE: &str = "fork-drop-pager";

/// The closure's code in the child: 0 if `f` returned, 101 if it panicked.
fn in_child(f: impl FnOnce()) -> i32 {
    catch_unwind(AssertUnwindSafe(f)).map_or(101, |()| 0)
}

/// The process's CPU time so far (`getrusage(RUSAGE_SELF)`, user and system).
fn cpu_time() -> Duration {
    // SAFETY: an all-zero `rusage` is valid (plain integers).
    let mut u: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: getrusage writes one `rusage` through the pointer, which points to one.
    assert_eq!(unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut u) }, 0);
    let tv = |t: libc::timeval| Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1000);
    tv(u.ru_utime) + tv(u.ru_stime)
}

/// Asserts that each of the parent's [`PAGES`] paged-out pages reads as written, each
/// served from the tier by one fault.
fn read_back(pager: &Pager, mem: &Mem, what: &str) {
    for p in 0..PAGES {
        mem.check(p, &page(p, 1), what);
    }
    let s = pager.stats();
    assert_eq!((s.swap_ins, s.failed_faults), (PAGES as u64, 0), "{what}");
}

#[test]
fn a_child_dropping_its_region_changes_nothing_in_the_parent() {
    let _w = common::watchdog("a child drops its region", 300);
    let Some(pager) = common::pager(common::tier()) else {
        return;
    };
    let (region, mem) = common::written(&pager, PAGES);
    assert_eq!(region.page_out(0, region.len()).unwrap(), PAGES);
    let mut region = Some(region);
    let end = common::fork_child(60, || {
        in_child(|| {
            // A child's calls are refused, and do nothing.
            let r = region.as_ref().unwrap();
            assert!(matches!(r.page_out(0, r.len()), Err(Error::Forked)));
            assert!(matches!(pager.region(PAGE_SIZE), Err(Error::Forked)));
            drop(region.take())
        })
    });
    assert_eq!(end, (Some(0), None), "the child's end (code, signal)");
    read_back(&pager, &mem, "after a child dropped its region");
}

#[test]
fn a_child_that_exits_at_once_changes_nothing_in_the_parent() {
    let _w = common::watchdog("a child exits", 300);
    let Some(pager) = common::pager(common::tier()) else {
        return;
    };
    let (region, mem) = common::written(&pager, PAGES);
    assert_eq!(region.page_out(0, region.len()).unwrap(), PAGES);
    assert_eq!(common::fork_child(60, || 0), (Some(0), None));
    read_back(&pager, &mem, "after a child exited");
}

/// In a process of its own (`run_child`), so that `getrusage` counts this test's threads
/// only: a child drops a clone of the pager, its region and its pager, the last of its
/// handles; the parent then sleeps 500 ms on under 100 ms of CPU and reads its pages back.
#[test]
fn a_child_dropping_its_pager_leaves_the_parent_idle_and_its_pages() {
    if common::is_child(ROLE) {
        return pager_dropped_in_a_child();
    }
    let _w = common::watchdog("a child drops its pager", 300);
    let Some(end) = common::in_child_process(
        module_path!(),
        "a_child_dropping_its_pager_leaves_the_parent_idle_and_its_pages",
        ROLE,
        240,
    ) else {
        return;
    };
    assert!(
        end.stdout.contains("CHILD: done"),
        "the parent process failed: {}",
        end.stderr
    );
    assert_eq!((end.code, end.signal), (Some(0), None), "{end:?}");
}

fn pager_dropped_in_a_child() {
    let Some(pager) = common::pager(common::tier()) else {
        return;
    };
    let (region, mem) = common::written(&pager, PAGES);
    assert_eq!(region.page_out(0, region.len()).unwrap(), PAGES);
    let clone = pager.clone();
    let (mut region, mut pager) = (Some(region), Some(pager));
    let end = common::fork_child(60, || {
        in_child(|| {
            drop(clone);
            drop(region.take());
            drop(pager.take());
        })
    });
    // The child's end is checked last: the parent's state is what is tested first.
    std::thread::sleep(Duration::from_millis(100));
    let before = cpu_time();
    std::thread::sleep(Duration::from_millis(500));
    let used = cpu_time() - before;
    println!("CHILD: {} ms of CPU over 500 ms idle", used.as_millis());
    assert!(
        used < Duration::from_millis(100),
        "the parent used {} ms of CPU over 500 ms with nothing to do",
        used.as_millis()
    );
    for p in 0..PAGES {
        mem.check(p, &page(p, 1), "after a child dropped its pager");
    }
    let s = pager.as_ref().unwrap().stats();
    assert_eq!((s.swap_ins, s.failed_faults), (PAGES as u64, 0));
    assert_eq!(end, (Some(0), None), "the child's end (code, signal)");
    println!("CHILD: done");
}

const OWN_ROLE: &str = "fork-own-pager";

/// A child that builds a pager of its own after the parent paged out (and so read its own
/// page table): the child's page-out reads the child's page table, not the parent's (the
/// pagemap file the parent opened stays bound to the parent), and its pages read back as
/// written, never as zeros. In a process of its own (`run_child`), which forks a grandchild.
#[test]
fn a_child_building_its_own_pager_pages_out_its_own_pages() {
    if common::is_child(OWN_ROLE) {
        return own_pager_in_a_child();
    }
    let Some(end) = common::in_child_process(
        module_path!(),
        "a_child_building_its_own_pager_pages_out_its_own_pages",
        OWN_ROLE,
        240,
    ) else {
        return;
    };
    assert!(
        end.stdout
            .contains("CHILD: the grandchild ended with (Some(0), None)"),
        "{end:?}"
    );
    assert_eq!((end.code, end.signal), (Some(0), None), "{end:?}");
}

fn own_pager_in_a_child() {
    let pager = common::pager(common::tier()).expect("userfaultfd, as in the parent");
    let (region, _mem) = common::written(&pager, 64);
    assert_eq!(region.page_out(0, region.len()).unwrap(), 64);
    let end = common::fork_child(120, || {
        in_child(|| {
            let pager = common::pager(common::tier()).expect("a pager of the child's own");
            let (region, mem) = common::written(&pager, 64);
            assert_eq!(region.page_out(0, region.len()).unwrap(), 64);
            for p in 0..64 {
                mem.check(p, &page(p, 1), "the grandchild's own page");
            }
            assert_eq!(pager.stats().swap_ins, 64);
        })
    });
    println!("CHILD: the grandchild ended with {end:?}");
    std::process::exit(0);
}
