//! `--pager --vs-zram`: the kernel's own swap on the same pages. For each of lz4 and
//! lzo-rle, a new zram device (`/sys/class/zram-control/hot_add`; a device this program did
//! not create is never touched) gets the algorithm and a disksize, a swap header (what
//! `mkswap` writes, [`swap_header`]) and `swapon(2)` at the top priority; the input's pages
//! are copied into an ordinary private anonymous mapping, paged out with
//! `madvise(MADV_PAGEOUT)` and touched back ([`crate::paging`]), once per order. Afterwards,
//! on error and on Ctrl-C, the device is turned off (`swapoff(2)`), reset and removed.

use std::ffi::CString;
use std::fs::OpenOptions;
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering::SeqCst};
use std::time::Instant;

use crate::paging::{self, KIND_ZRAM_SWAP, Mapping, Order, Pass, Row};
use crate::zram;
use acomp_pages::input::Input;
use acomp_zswap::PAGE_SIZE;

/// The algorithms measured, in this order, where the kernel offers them: the pager's own
/// (lz4), and zram's default (lzo-rle).
pub const ALGORITHMS: [&str; 2] = ["lz4", "lzo-rle"];

/// `SWAP_FLAG_PREFER` of `<linux/swap.h>`: the priority in the low bits is used.
pub const SWAP_FLAG_PREFER: libc::c_int = 0x8000;
/// `SWAP_FLAG_PRIO_MASK` of `<linux/swap.h>`.
pub const SWAP_FLAG_PRIO_MASK: libc::c_int = 0x7fff;
/// The priority the device is swapped on at: the highest there is, so pages paged out go
/// to it before any other swap area.
pub const PRIORITY: libc::c_int = 32767;

/// `swapon(2)`'s flags for `priority`.
pub fn swap_flags(priority: libc::c_int) -> libc::c_int {
    SWAP_FLAG_PREFER | (priority & SWAP_FLAG_PRIO_MASK)
}

/// The signature at the end of a swap header's page (`SWAPSPACE2`, version 1).
pub const SWAP_MAGIC: &[u8; 10] = b"SWAPSPACE2";

/// The first page of a swap area of `device_pages` pages, as `mkswap` writes it
/// (`union swap_header` of `<linux/swap.h>`): 1024 boot bytes of zeros, then `version` 1,
/// `last_page` (`device_pages - 1`), `nr_badpages` 0, a zero UUID, the volume `label` (at
/// most 16 bytes, cut there), and `SWAPSPACE2` in the page's last 10 bytes.
///
/// # Panics
///
/// If `device_pages` is below 2 or above `u32::MAX + 1`.
pub fn swap_header(device_pages: u64, label: &str) -> Vec<u8> {
    assert!(
        device_pages >= 2,
        "a swap area needs a page besides its header"
    );
    let last_page = u32::try_from(device_pages - 1).expect("at most 2^32 pages");
    let mut page = vec![0u8; PAGE_SIZE];
    page[1024..1028].copy_from_slice(&1u32.to_ne_bytes());
    page[1028..1032].copy_from_slice(&last_page.to_ne_bytes());
    // nr_badpages (1032..1036) and the UUID (1036..1052) stay zero.
    let label = &label.as_bytes()[..label.len().min(16)];
    page[1052..1052 + label.len()].copy_from_slice(label);
    page[PAGE_SIZE - SWAP_MAGIC.len()..].copy_from_slice(SWAP_MAGIC);
    page
}

/// The swap areas of a `/proc/swaps` text other than `ours`: each one's file name and
/// priority. An area at our priority shares the pages paged out with ours, in turn.
pub fn other_swap_areas(proc_swaps: &str, ours: &str) -> Vec<(String, i32)> {
    proc_swaps
        .lines()
        .skip(1)
        .filter_map(|line| {
            let f: Vec<&str> = line.split_whitespace().collect();
            let priority = f.last()?.parse().ok()?;
            (f.len() >= 5 && f[0] != ours).then(|| (f[0].to_owned(), priority))
        })
        .collect()
}

/// The device's size for `pages` pages: theirs and the header's, rounded up to 1 MiB.
pub fn disksize(pages: u64) -> u64 {
    ((pages + 1) * PAGE_SIZE as u64).div_ceil(1 << 20) << 20
}

/// Why the kernel's rows cannot be measured here, in one line; `None` where they can.
/// `sysfs` is `/sys` but for tests, `euid` the effective user.
pub fn unavailable(sysfs: &Path, euid: u32) -> Option<String> {
    zram::unavailable(sysfs, euid).map(|why| format!("zram as swap {why}"))
}

/// Set by Ctrl-C while a device is ours: the run stops at its next step and cleans up.
static INTERRUPTED: AtomicBool = AtomicBool::new(false);
/// Our device, plus one; 0 where none is.
static ACTIVE: AtomicU32 = AtomicU32::new(0);
/// Whether our device is swapped on.
static SWAPPED_ON: AtomicBool = AtomicBool::new(false);

/// For the program's Ctrl-C handler ([`zram::handle_ctrl_c`]): `false` where no swap device
/// of ours exists (the handler goes on as before). With one, the first Ctrl-C asks the run
/// to stop and clean up (`true`); a second cleans up from here and ends the program.
pub fn on_ctrl_c() -> bool {
    let active = ACTIVE.load(SeqCst);
    if active == 0 {
        return false;
    }
    if INTERRUPTED.swap(true, SeqCst) {
        remove(active - 1, SWAPPED_ON.load(SeqCst));
        crate::cgroup::remove_on_exit();
        std::process::exit(130);
    }
    eprintln!(
        "zram swap: interrupted; turning off and removing /dev/zram{}",
        active - 1
    );
    true
}

/// Whether Ctrl-C asked the run to stop (the run then cleans up and ends the program).
pub(crate) fn interrupted_now() -> bool {
    INTERRUPTED.load(SeqCst)
}

fn interrupted() -> Result<(), String> {
    if INTERRUPTED.load(SeqCst) {
        Err("interrupted".into())
    } else {
        Ok(())
    }
}

fn dev_path(id: u32) -> String {
    format!("/dev/zram{id}")
}

/// swapoff (where on), then reset and hot_remove of device `id`, each error printed.
fn remove(id: u32, swapped_on: bool) {
    if swapped_on {
        swapoff(id);
    }
    zram::remove_device(id);
}

fn swapoff(id: u32) {
    let path = CString::new(dev_path(id)).expect("no NUL in a device path");
    // SAFETY: `path` is a NUL-terminated string that outlives the call.
    if unsafe { libc::swapoff(path.as_ptr()) } != 0 {
        let e = std::io::Error::last_os_error();
        eprintln!("zram swap: swapoff {}: {e}", dev_path(id));
    }
}

/// A zram device of our own used as swap: turned off, then reset and removed (the device's
/// own drop) when dropped.
#[derive(Debug)]
pub(crate) struct SwapDevice {
    dev: zram::Device,
}

impl SwapDevice {
    /// A new device with `algorithm`, room for `pages` pages, swapped on.
    pub(crate) fn create(sysfs: &Path, algorithm: &str, pages: u64) -> Result<SwapDevice, String> {
        let dev = SwapDevice {
            dev: zram::Device::create(sysfs)?,
        };
        let id = dev.dev.id();
        ACTIVE.store(id + 1, SeqCst);
        let offered = zram::parse_algorithms(&dev.read("comp_algorithm")?);
        if !offered.iter().any(|o| o == algorithm) {
            return Err(format!(
                "this kernel's zram offers {} but not {algorithm}",
                offered.join(", ")
            ));
        }
        dev.write("comp_algorithm", algorithm)?;
        let size = disksize(pages);
        dev.write("disksize", &size.to_string())?;
        let path = dev_path(id);
        let file = OpenOptions::new()
            .write(true)
            .open(&path)
            .map_err(|e| format!("{path}: {e}"))?;
        let header = swap_header(size / PAGE_SIZE as u64, "acomp-zswap");
        file.write_all_at(&header, 0)
            .and_then(|()| file.sync_all())
            .map_err(|e| format!("writing the swap header to {path}: {e}"))?;
        drop(file);
        let c_path = CString::new(path.clone()).expect("no NUL in a device path");
        // SAFETY: `c_path` is a NUL-terminated string that outlives the call.
        if unsafe { libc::swapon(c_path.as_ptr(), swap_flags(PRIORITY)) } != 0 {
            let e = std::io::Error::last_os_error();
            return Err(format!("swapon {path} (priority {PRIORITY}): {e}"));
        }
        SWAPPED_ON.store(true, SeqCst);
        if let Ok(text) = std::fs::read_to_string("/proc/swaps") {
            for (name, priority) in other_swap_areas(&text, &path) {
                println!(
                    "  zram-swap {algorithm}: {name} is swapped on too, at priority {priority}{}",
                    if priority == PRIORITY {
                        ": ours, at the same, shares the pages paged out with it"
                    } else {
                        ", below ours"
                    }
                );
            }
        }
        Ok(dev)
    }

    /// The device's number: `/dev/zramN`.
    pub(crate) fn id(&self) -> u32 {
        self.dev.id()
    }

    fn read(&self, name: &str) -> Result<String, String> {
        self.dev.read(name)
    }

    fn write(&self, name: &str, value: &str) -> Result<(), String> {
        self.dev.write(name, value)
    }

    fn mm_stat(&self) -> Result<zram::MmStat, String> {
        let text = self.read("mm_stat")?;
        zram::parse_mm_stat(&text).ok_or_else(|| format!("mm_stat: unknown format {text:?}"))
    }
}

impl Drop for SwapDevice {
    fn drop(&mut self) {
        if SWAPPED_ON.swap(false, SeqCst) {
            swapoff(self.dev.id());
        }
        ACTIVE.store(0, SeqCst);
        // Then `dev`'s own drop resets and removes it.
    }
}

/// A private anonymous mapping in 4 KiB pages (no transparent huge pages, as the pager's
/// regions), unmapped when dropped. Public for the tests, which map their pages with it.
#[derive(Debug)]
pub struct Anon {
    ptr: *mut u8,
    len: usize,
}

impl Anon {
    /// A mapping of `len` bytes.
    ///
    /// # Errors
    ///
    /// `mmap`'s or `madvise`'s, as a line.
    pub fn new(len: usize) -> Result<Anon, String> {
        // SAFETY: a new private anonymous mapping: no address asked for, no file; the
        // result is checked against MAP_FAILED.
        let ptr = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if ptr == libc::MAP_FAILED {
            return Err(format!(
                "mmap of {len} bytes: {}",
                std::io::Error::last_os_error()
            ));
        }
        let anon = Anon {
            ptr: ptr.cast(),
            len,
        };
        // SAFETY: the range is the mapping just made, ours.
        if unsafe { libc::madvise(ptr, len, libc::MADV_NOHUGEPAGE) } != 0 {
            return Err(format!(
                "madvise(MADV_NOHUGEPAGE): {}",
                std::io::Error::last_os_error()
            ));
        }
        Ok(anon)
    }

    /// The first byte.
    pub fn ptr(&self) -> *mut u8 {
        self.ptr
    }

    /// `madvise(MADV_PAGEOUT)` over the whole mapping.
    fn page_out(&self) -> Result<(), String> {
        // SAFETY: the range is this mapping, ours; MADV_PAGEOUT only moves its pages.
        if unsafe { libc::madvise(self.ptr.cast(), self.len, libc::MADV_PAGEOUT) } != 0 {
            return Err(format!(
                "madvise(MADV_PAGEOUT): {}",
                std::io::Error::last_os_error()
            ));
        }
        Ok(())
    }
}

impl Drop for Anon {
    fn drop(&mut self) {
        // SAFETY: the mapping made in `new`, unmapped once; no `Mapping` of it outlives
        // the run that owns this.
        unsafe { libc::munmap(self.ptr.cast(), self.len) };
    }
}

/// One page-out of `map` and the touches of `order`.
fn pass(
    dev: &SwapDevice,
    anon: &Anon,
    map: &Mapping,
    input: &Input,
    order: Order,
    seed: u64,
) -> Result<Pass, String> {
    let pages = input.len() as u64;
    let before = map.resident().map_err(|e| format!("mincore: {e}"))?;
    if paging::count(&before) != pages {
        println!(
            "  zram-swap: {} of {pages} pages resident before page-out",
            paging::count(&before)
        );
    }
    let start = Instant::now();
    anon.page_out()?;
    let page_out = start.elapsed();
    let mm = dev.mm_stat()?;
    let out = map.paged_out()?;
    let paged_out = paging::count(&out);
    let resident_bytes = (pages - paged_out) * PAGE_SIZE as u64;
    // Pages of zeros never reach the device: the swap layer keeps them as a bit in its
    // zeromap (Linux 6.12 on). The rest are in orig_data_size, with the swap header.
    let on_device = (mm.orig_data_size / PAGE_SIZE as u64).saturating_sub(1);
    let zero = (0..input.len())
        .filter(|&i| out[i] && input.page(i).iter().all(|&b| b == 0))
        .count() as u64;
    if on_device != paged_out - zero {
        println!(
            "  zram-swap {}: the device holds {on_device} pages besides its header, where \
             {} of ours that are not all zeros left memory (other processes' pages, another \
             swap area at our priority, or pages left in the swap cache)",
            order.name(),
            paged_out - zero
        );
    }
    interrupted()?;
    let faults = map.touch(&order.touches(input.len(), seed), &out, &|| {
        INTERRUPTED.load(SeqCst)
    });
    interrupted()?;
    Ok(Pass {
        paged_out_pages: paged_out,
        resident_bytes,
        store_bytes: mm.mem_used_total,
        page_out,
        faults,
        verified_pages: map.verify(input),
    })
}

/// The rows of one algorithm: a new device, swapped on, and a mapping of the input's pages
/// paged out and touched back in each order; the device removed afterwards.
fn run_one(input: &Input, algorithm: &str, seed: u64) -> Result<Vec<Row>, String> {
    let dev = SwapDevice::create(Path::new("/sys"), algorithm, input.len() as u64)?;
    let anon = Anon::new(input.len() * PAGE_SIZE)?;
    // SAFETY: `anon` is a private mapping of `input.len()` pages, readable and writable,
    // alive until after the last use of `map` below, and used by this thread alone.
    let map = unsafe { Mapping::new(anon.ptr, input.len()) };
    let mut rows = Vec::new();
    for order in Order::ALL {
        interrupted()?;
        // Written afresh, as the pager's region is: each page-out compresses every page.
        map.fill(input);
        let p = pass(&dev, &anon, &map, input, order, seed)?;
        rows.push(Row::new(
            KIND_ZRAM_SWAP,
            algorithm,
            order,
            input.len() as u64,
            &p,
        ));
    }
    // Unmapped first: swapoff then has nothing of ours to bring back.
    drop(anon);
    drop(dev);
    Ok(rows)
}

/// The kernel's rows for every algorithm of [`ALGORITHMS`], one device at a time, and a line
/// per algorithm that could not be measured, saying why. Ends the program (130) after
/// cleaning up where Ctrl-C was pressed.
pub fn run(input: &Input, seed: u64) -> (Vec<Row>, Vec<String>) {
    let mut rows = Vec::new();
    let mut skipped = Vec::new();
    for alg in ALGORITHMS {
        match run_one(input, alg, seed) {
            Ok(r) => rows.extend(r),
            Err(e) => skipped.push(paging::skip_line(&format!("zram-swap {alg}"), &e)),
        }
        if INTERRUPTED.load(SeqCst) {
            std::process::exit(130);
        }
    }
    (rows, skipped)
}
