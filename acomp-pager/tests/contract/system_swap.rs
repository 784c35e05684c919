//! A region is anonymous memory, which the kernel's own swap may take too
//! (`madvise(MADV_PAGEOUT)`, or reclaim under memory pressure): a page the kernel swapped
//! out reads back the bytes last written to it after the pager's page-out, by
//! `Region::page_out` or by the reclaimer under a resident limit, never zeros.
//!
//! The kernel's swap is a zram device of the test's own (`hot_add`, swapped on at the top
//! priority, turned off and removed when the test ends, also on a panic), one test at a
//! time. Without root or zram the tests print `SKIPPED` and pass, and fail under `CI=true`.

use std::ffi::CString;
use std::fs::OpenOptions;
use std::os::unix::fs::FileExt;
use std::time::{Duration, Instant};

use acomp_pager::{PAGE_SIZE, Pager, Stats};
use parking_lot::Mutex;

use crate::common::{self, Mem, describe, page};

/// The swap device is the machine's: one test at a time owns it.
static SWAP_DEVICE: Mutex<()> = Mutex::new(());

const DISKSIZE: u64 = 64 << 20;
/// `SWAP_FLAG_PREFER | 32767` of `<linux/swap.h>`: the top priority, before any other area.
const SWAP_FLAGS: libc::c_int = 0x8000 | 32767;

/// A zram device of our own, swapped on; turned off, reset and removed when dropped.
struct ZramSwap {
    id: u32,
    on: bool,
}

impl ZramSwap {
    /// A new device: lz4 where offered, [`DISKSIZE`], a swap header as `mkswap` writes it
    /// (`union swap_header`, version 1), `swapon` at the top priority.
    fn create() -> Result<ZramSwap, String> {
        // SAFETY: geteuid has no preconditions.
        if unsafe { libc::geteuid() } != 0 {
            return Err("not root".into());
        }
        let hot_add = "/sys/class/zram-control/hot_add";
        let id = std::fs::read_to_string(hot_add).map_err(|e| format!("{hot_add}: {e}"))?;
        let mut dev = ZramSwap {
            id: id
                .trim()
                .parse()
                .map_err(|_| format!("{hot_add} gave {id:?}"))?,
            on: false,
        };
        let attr = |name: &str| format!("/sys/block/zram{}/{name}", dev.id);
        let write = |name: &str, value: &str| {
            std::fs::write(attr(name), value).map_err(|e| format!("{}: {e}", attr(name)))
        };
        let offered = std::fs::read_to_string(attr("comp_algorithm")).unwrap_or_default();
        if offered
            .split_whitespace()
            .any(|a| a.trim_matches(['[', ']']) == "lz4")
        {
            write("comp_algorithm", "lz4")?;
        }
        write("disksize", &DISKSIZE.to_string())?;
        let path = format!("/dev/zram{}", dev.id);
        let mut header = vec![0u8; PAGE_SIZE];
        header[1024..1028].copy_from_slice(&1u32.to_ne_bytes());
        let last_page = (DISKSIZE / PAGE_SIZE as u64 - 1) as u32;
        header[1028..1032].copy_from_slice(&last_page.to_ne_bytes());
        header[PAGE_SIZE - 10..].copy_from_slice(b"SWAPSPACE2");
        OpenOptions::new()
            .write(true)
            .open(&path)
            .and_then(|f| f.write_all_at(&header, 0).and_then(|()| f.sync_all()))
            .map_err(|e| format!("writing the swap header to {path}: {e}"))?;
        let c_path = CString::new(path.clone()).unwrap();
        // SAFETY: `c_path` is a NUL-terminated string that outlives the call.
        if unsafe { libc::swapon(c_path.as_ptr(), SWAP_FLAGS) } != 0 {
            return Err(format!(
                "swapon {path}: {}",
                std::io::Error::last_os_error()
            ));
        }
        dev.on = true;
        Ok(dev)
    }
}

impl Drop for ZramSwap {
    fn drop(&mut self) {
        let path = format!("/dev/zram{}", self.id);
        let c_path = CString::new(path.clone()).unwrap();
        // SAFETY: `c_path` is a NUL-terminated string that outlives the call.
        if self.on && unsafe { libc::swapoff(c_path.as_ptr()) } != 0 {
            eprintln!("swapoff {path}: {}", std::io::Error::last_os_error());
        }
        for (file, value) in [
            (format!("/sys/block/zram{}/reset", self.id), "1".to_owned()),
            (
                "/sys/class/zram-control/hot_remove".into(),
                self.id.to_string(),
            ),
        ] {
            if let Err(e) = std::fs::write(&file, value) {
                eprintln!("{file}: {e}");
            }
        }
    }
}

/// The swap device, or `None` (the test returns) where there is none: `SKIPPED` printed,
/// or a failure under `CI=true`.
fn swap_device() -> Option<ZramSwap> {
    match ZramSwap::create() {
        Ok(dev) => Some(dev),
        Err(e) if std::env::var("CI").is_ok_and(|v| v == "true") => {
            panic!("CI=true and no zram swap device could be set up: {e}")
        }
        Err(e) => {
            eprintln!("SKIPPED: no zram swap device: {e}");
            None
        }
    }
}

/// A pager built from `b`, with the machine's swap device held and a zram device of the
/// test's own swapped on; `None` (the test returns) where either cannot be had. Kept whole
/// while the test runs (not taken apart: its fields would drop at once), dropped in field
/// order: the device off and removed before the pager goes, the lock last.
struct Swapping {
    _dev: ZramSwap,
    pager: Pager,
    _one: parking_lot::MutexGuard<'static, ()>,
}

fn swapping(b: acomp_pager::Builder) -> Option<Swapping> {
    let one = SWAP_DEVICE.lock();
    let pager = common::build(b)?;
    Some(Swapping {
        _dev: swap_device()?,
        pager,
        _one: one,
    })
}

/// How many of `mem`'s pages `[first, first + n)` the kernel swapped out (`/proc/self/pagemap`:
/// 8 bytes a page, bit 62 swapped, bit 63 present).
fn swapped(mem: &Mem, first: usize, n: usize) -> usize {
    let pagemap = std::fs::File::open("/proc/self/pagemap").unwrap();
    let mut buf = vec![0u8; n * 8];
    pagemap
        .read_exact_at(&mut buf, (mem.addr(first) / PAGE_SIZE * 8) as u64)
        .unwrap();
    buf.chunks_exact(8)
        .map(|e| u64::from_ne_bytes(e.try_into().unwrap()))
        .filter(|e| e & (1 << 62) != 0 && e & (1 << 63) == 0)
        .count()
}

/// The pages of `mem` that do not read `page(p, 1)`: how many, and the first's description.
fn wrong_pages(mem: &Mem) -> (usize, Option<String>) {
    let mut wrong = (0, None);
    for p in 0..mem.pages {
        let (got, want) = (mem.read(p), page(p, 1));
        if *got != want {
            wrong.0 += 1;
            wrong
                .1
                .get_or_insert_with(|| format!("page {p}: {}", describe(&got, &want)));
        }
    }
    wrong
}

/// Writes pages `[0, n)` of `mem` (`page(p, 1)`), has the kernel swap them out and asserts
/// that it took at least three quarters.
fn swapped_by_the_kernel(mem: &Mem, n: usize) {
    for p in 0..n {
        mem.write(p, &page(p, 1));
    }
    mem.advise(0, n, libc::MADV_PAGEOUT).unwrap();
    let swapped = swapped(mem, 0, n);
    println!("{swapped} of {n} pages swapped out by the kernel");
    assert!(
        swapped >= n * 3 / 4,
        "the kernel swapped out {swapped} of {n} pages"
    );
}

/// Asserts that every page of `mem` (of `pages`) reads as written after `what`, each
/// resident or paged out, and none paged out as zeros.
fn assert_kept(mem: &Mem, s: &Stats, pages: usize, what: &str) {
    assert_eq!(
        wrong_pages(mem),
        (0, None),
        "pages the kernel swapped, after {what}"
    );
    assert_eq!(
        (s.resident_pages + s.paged_out_pages, s.zero_swap_outs),
        (pages as u64, 0),
        "after {what}, pages resident or paged out; pages of zeros paged out: {s:?}"
    );
}

#[test]
fn pages_the_kernel_swapped_survive_a_page_out() {
    let _w = common::watchdog("kernel swap, then page_out", 300);
    let Some(swap) = swapping(Pager::builder(common::tier())) else {
        return;
    };
    let pager = &swap.pager;
    const PAGES: usize = 512;
    let region = pager.region(PAGES * PAGE_SIZE).unwrap();
    let mem = Mem::of(&region);
    swapped_by_the_kernel(&mem, PAGES);
    let moved = region.page_out(0, region.len()).unwrap();
    let s = pager.stats();
    println!("page_out moved {moved}: {s:?}");
    assert_kept(&mem, &s, PAGES, "page_out");
    // Every page is in memory now, as written: all of them leave.
    assert_eq!(region.page_out(0, region.len()).unwrap(), PAGES);
    assert_eq!(wrong_pages(&mem), (0, None), "paged out a second time");
    drop(region);
}

#[test]
fn pages_the_kernel_swapped_survive_the_reclaimer() {
    let _w = common::watchdog("kernel swap, then the reclaimer", 300);
    const PAGES: usize = 1024;
    const LIMIT: usize = 768;
    let b = Pager::builder(common::tier()).resident_limit((LIMIT * PAGE_SIZE) as u64);
    let Some(swap) = swapping(b) else {
        return;
    };
    let pager = &swap.pager;
    let region = pager.region(PAGES * PAGE_SIZE).unwrap();
    let mem = Mem::of(&region);
    // The first half, under the limit, swapped by the kernel; the second half written
    // after it takes the regions past the limit: the reclaimer pages out the coldest
    // pages, the first half's.
    swapped_by_the_kernel(&mem, PAGES / 2);
    for p in PAGES / 2..PAGES {
        mem.write(p, &page(p, 1));
    }
    // Until the reclaimer is done: under the limit, and nothing moving for 50 ms.
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut s = pager.stats();
    loop {
        assert!(Instant::now() < deadline, "the reclaimer: {s:?}");
        std::thread::sleep(Duration::from_millis(50));
        let now = pager.stats();
        if now == s && now.resident_pages <= LIMIT as u64 {
            break;
        }
        s = now;
    }
    println!("the reclaimer done: {s:?}");
    assert!(s.reclaimed > 0, "the reclaimer paged nothing out: {s:?}");
    assert_kept(&mem, &s, PAGES, "the reclaimer");
    drop(region);
}

/// The kernel's swap taking pages while a page-out moves them: a thread swaps out runs of
/// 256 pages at random (`MADV_PAGEOUT`) for as long as `page_out` runs over the region,
/// round after round, and every page reads as written after each. A page the kernel swapped
/// is moved out as its swap entry, and Linux 6.18 can move one and leave it out of the
/// count it returns; a page-out that took the count was then freeing it as a page the
/// program had dropped (zeros, 2 of 8 rounds of 50,000 pages in a new user's trial).
#[test]
fn pages_the_kernel_swaps_during_a_page_out_survive_it() {
    let _w = common::watchdog("kernel swap during page_out", 300);
    let Some(swap) = swapping(Pager::builder(common::tier())) else {
        return;
    };
    let pager = &swap.pager;
    const PAGES: usize = 12_288;
    const RUN: usize = 256;
    let region = pager.region(PAGES * PAGE_SIZE).unwrap();
    let mem = Mem::of(&region);
    let mut swapped_during = 0;
    for round in 0..12u64 {
        for p in 0..PAGES {
            mem.write(p, &page(p, 1));
        }
        let stop = std::sync::atomic::AtomicBool::new(false);
        let moved = std::thread::scope(|s| {
            let swapper = s.spawn(|| {
                let mut x = round.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
                let mut calls = 0usize;
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    let first = x as usize % (PAGES - RUN);
                    // Refused where the pages are held: the page-out's own business.
                    let _ = mem.advise(first, RUN, libc::MADV_PAGEOUT);
                    calls += 1;
                }
                calls
            });
            let moved = region.page_out(0, region.len()).unwrap();
            stop.store(true, std::sync::atomic::Ordering::Relaxed);
            swapped_during += swapper.join().unwrap();
            moved
        });
        let s = pager.stats();
        assert_eq!(
            wrong_pages(&mem),
            (0, None),
            "round {round}: page_out moved {moved} while the kernel swapped: {s:?}"
        );
        assert_eq!(s.zero_swap_outs, 0, "round {round}: {s:?}");
    }
    println!("{swapped_during} MADV_PAGEOUT calls during the page-outs");
    assert!(swapped_during > 0);
    drop(region);
}
