//! The kernel's zram on the same pages: a fresh device from `hot_add` (an existing device is
//! never touched), for each algorithm it offers among lzo-rle, lzo, lz4 and zstd: the pages
//! written with 1 MiB direct writes, `mm_stat` read, everything read back and checked, both
//! directions timed on one thread; the device reset between algorithms, and reset and
//! removed at the end, on error and on Ctrl-C.

use std::alloc::{Layout, alloc_zeroed, dealloc};
use std::fs::{File, OpenOptions};
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering::SeqCst};
use std::time::{Duration, Instant};

use acomp_pages::input::Input;
use acomp_zswap::PAGE_SIZE;

/// The algorithms compared, in this order, where the kernel offers them.
pub const ALGORITHMS: [&str; 4] = ["lzo-rle", "lzo", "lz4", "zstd"];

/// Bytes per direct write and read, as `dd bs=1M oflag=direct`.
pub const IO_SIZE: usize = 1 << 20;

/// `/sys/block/zramN/mm_stat`, the fields in bytes or pages as the kernel documents them
/// (Documentation/admin-guide/blockdev/zram.rst).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct MmStat {
    /// Bytes of data written, uncompressed.
    pub orig_data_size: u64,
    /// Bytes of the compressed data.
    pub compr_data_size: u64,
    /// Bytes of memory the device holds, allocator overhead included.
    pub mem_used_total: u64,
    /// Pages stored as their fill value, with no memory.
    pub same_pages: u64,
    /// Pages stored uncompressed.
    pub huge_pages: u64,
}

/// Parses `mm_stat`: at least its first six fields; `huge_pages` (the eighth) where present.
pub fn parse_mm_stat(text: &str) -> Option<MmStat> {
    let f: Vec<u64> = text
        .split_whitespace()
        .map(str::parse)
        .collect::<Result<_, _>>()
        .ok()?;
    (f.len() >= 6).then(|| MmStat {
        orig_data_size: f[0],
        compr_data_size: f[1],
        mem_used_total: f[2],
        same_pages: f[5],
        huge_pages: f.get(7).copied().unwrap_or(0),
    })
}

/// The algorithms of a `comp_algorithm` file (`[lzo-rle] lzo lz4 zstd`, the current one in
/// brackets).
pub fn parse_algorithms(text: &str) -> Vec<String> {
    text.split_whitespace()
        .map(|a| a.trim_matches(['[', ']']).to_owned())
        .collect()
}

/// Why zram cannot be measured here, in one line; `None` where it can. `sysfs` is `/sys`
/// but for tests, `euid` the effective user.
pub fn unavailable(sysfs: &Path, euid: u32) -> Option<String> {
    let control = sysfs.join("class/zram-control");
    if euid != 0 {
        Some(format!(
            "needs root to create a device (running as uid {euid})"
        ))
    } else if !control.join("hot_add").exists() {
        Some(format!(
            "{} is absent (no zram module: `modprobe zram` first)",
            control.display()
        ))
    } else {
        None
    }
}

/// One algorithm's run.
#[derive(Debug, Clone)]
pub struct Run {
    /// The algorithm.
    pub algorithm: String,
    /// `mm_stat` with every page written.
    pub mm_stat: MmStat,
    /// Time in the write calls, and in the read calls.
    pub store: Duration,
    /// See `store`.
    pub load: Duration,
    /// Pages read back equal to those written.
    pub verified: u64,
}

/// Set by Ctrl-C: the loops stop at the next 1 MiB and the device is cleaned up.
static INTERRUPTED: AtomicBool = AtomicBool::new(false);
/// The device being used, plus one; 0 where none is.
static ACTIVE: AtomicU32 = AtomicU32::new(0);

/// Installs the Ctrl-C handler: with no device in use the program ends at once; with one,
/// the run stops at its next write or read and removes the device before the program ends.
///
/// # Errors
///
/// Where a handler cannot be installed.
pub fn handle_ctrl_c() -> Result<(), ctrlc::Error> {
    ctrlc::set_handler(|| {
        if crate::swap::on_ctrl_c() {
            return;
        }
        let active = ACTIVE.load(SeqCst);
        if active == 0 || INTERRUPTED.swap(true, SeqCst) {
            if active != 0 {
                // A second Ctrl-C: clean up from here and go.
                remove_device(active - 1);
            }
            crate::cgroup::remove_on_exit();
            std::process::exit(130);
        }
        eprintln!("zram: interrupted; removing /dev/zram{}", active - 1);
    })
}

/// A zram device of our own, reset and removed when dropped (`swap.rs` swaps on one too).
#[derive(Debug)]
pub(crate) struct Device {
    id: u32,
}

/// Resets and removes device `id` (`hot_remove`), each error printed.
pub(crate) fn remove_device(id: u32) {
    if let Err(e) = std::fs::write(format!("/sys/block/zram{id}/reset"), "1") {
        eprintln!("zram: resetting /dev/zram{id}: {e}");
    }
    if let Err(e) = std::fs::write("/sys/class/zram-control/hot_remove", id.to_string()) {
        eprintln!("zram: removing /dev/zram{id}: {e}");
    }
}

impl Device {
    /// A new device (`hot_add` under `sysfs`), not yet configured.
    pub(crate) fn create(sysfs: &Path) -> Result<Device, String> {
        let hot_add = sysfs.join("class/zram-control/hot_add");
        let text =
            std::fs::read_to_string(&hot_add).map_err(|e| format!("{}: {e}", hot_add.display()))?;
        let id: u32 = text
            .trim()
            .parse()
            .map_err(|_| format!("{}: gave {text:?}", hot_add.display()))?;
        ACTIVE.store(id + 1, SeqCst);
        Ok(Device { id })
    }

    /// The device's number: `/dev/zramN`.
    pub(crate) fn id(&self) -> u32 {
        self.id
    }

    fn attr(&self, name: &str) -> PathBuf {
        PathBuf::from(format!("/sys/block/zram{}/{name}", self.id))
    }

    /// The device's sysfs attribute `name`.
    pub(crate) fn read(&self, name: &str) -> Result<String, String> {
        std::fs::read_to_string(self.attr(name))
            .map_err(|e| format!("{}: {e}", self.attr(name).display()))
    }

    /// Writes `value` to the device's sysfs attribute `name`.
    pub(crate) fn write(&self, name: &str, value: &str) -> Result<(), String> {
        std::fs::write(self.attr(name), value)
            .map_err(|e| format!("writing {value:?} to {}: {e}", self.attr(name).display()))
    }
}

impl Drop for Device {
    fn drop(&mut self) {
        remove_device(self.id);
        ACTIVE.store(0, SeqCst);
    }
}

/// A page-aligned buffer, as `O_DIRECT` needs.
struct Aligned {
    ptr: *mut u8,
    layout: Layout,
}

impl Aligned {
    fn new(len: usize) -> Aligned {
        let layout = Layout::from_size_align(len, PAGE_SIZE).expect("a valid layout");
        // SAFETY: `layout` has a non-zero size (IO_SIZE).
        let ptr = unsafe { alloc_zeroed(layout) };
        assert!(!ptr.is_null(), "out of memory");
        Aligned { ptr, layout }
    }

    fn as_mut(&mut self) -> &mut [u8] {
        // SAFETY: `ptr` is a live, zeroed allocation of `layout.size()` bytes owned by
        // `self`, borrowed mutably here.
        unsafe { std::slice::from_raw_parts_mut(self.ptr, self.layout.size()) }
    }
}

impl Drop for Aligned {
    fn drop(&mut self) {
        // SAFETY: allocated in `new` with this layout, freed once.
        unsafe { dealloc(self.ptr, self.layout) }
    }
}

fn interrupted() -> Result<(), String> {
    if INTERRUPTED.load(SeqCst) {
        Err("interrupted".into())
    } else {
        Ok(())
    }
}

/// Writes every page of `input` to the device in 1 MiB direct writes, reads `mm_stat`,
/// reads every page back and checks it; times only the write and read calls.
fn run_one(dev: &Device, algorithm: &str, input: &Input) -> Result<Run, String> {
    let bytes = input.len() * PAGE_SIZE;
    dev.write("comp_algorithm", algorithm)?;
    dev.write("disksize", &bytes.to_string())?;
    let path = format!("/dev/zram{}", dev.id);
    let file: File = OpenOptions::new()
        .read(true)
        .write(true)
        .custom_flags(libc::O_DIRECT)
        .open(&path)
        .map_err(|e| format!("{path}: {e}"))?;
    let mut buf = Aligned::new(IO_SIZE);
    let pages_per_io = IO_SIZE / PAGE_SIZE;
    let mut store = Duration::ZERO;
    for first in (0..input.len()).step_by(pages_per_io) {
        interrupted()?;
        let n = pages_per_io.min(input.len() - first);
        let chunk = &mut buf.as_mut()[..n * PAGE_SIZE];
        for (i, page) in chunk.chunks_exact_mut(PAGE_SIZE).enumerate() {
            page.copy_from_slice(input.page(first + i));
        }
        let start = Instant::now();
        file.write_all_at(chunk, (first * PAGE_SIZE) as u64)
            .map_err(|e| format!("writing {path}: {e}"))?;
        store += start.elapsed();
    }
    let stat = dev.read("mm_stat")?;
    let mm_stat =
        parse_mm_stat(&stat).ok_or_else(|| format!("mm_stat: unknown format {stat:?}"))?;
    let mut load = Duration::ZERO;
    let mut verified = 0;
    for first in (0..input.len()).step_by(pages_per_io) {
        interrupted()?;
        let n = pages_per_io.min(input.len() - first);
        let chunk = &mut buf.as_mut()[..n * PAGE_SIZE];
        chunk.fill(0x5A);
        let start = Instant::now();
        file.read_exact_at(chunk, (first * PAGE_SIZE) as u64)
            .map_err(|e| format!("reading {path}: {e}"))?;
        load += start.elapsed();
        for (i, page) in chunk.chunks_exact(PAGE_SIZE).enumerate() {
            if page == input.page(first + i) {
                verified += 1;
            }
        }
    }
    drop(file);
    // Empty the device for the next algorithm (the comp_algorithm is settable only then).
    dev.write("reset", "1")?;
    Ok(Run {
        algorithm: algorithm.to_owned(),
        mm_stat,
        store,
        load,
        verified,
    })
}

/// Runs zram on a new device for every algorithm of [`ALGORITHMS`] the kernel offers, and
/// removes the device afterwards, also on error.
///
/// # Errors
///
/// A line saying what failed; the device is gone by then.
pub fn run(input: &Input) -> Result<Vec<Run>, String> {
    let dev = Device::create(Path::new("/sys"))?;
    let runs = (|| {
        let offered = parse_algorithms(&dev.read("comp_algorithm")?);
        ALGORITHMS
            .iter()
            .filter(|a| offered.iter().any(|o| o == *a))
            .map(|alg| run_one(&dev, alg, input).map_err(|e| format!("{alg}: {e}")))
            .collect()
    })();
    drop(dev);
    if INTERRUPTED.load(SeqCst) {
        std::process::exit(130);
    }
    runs
}
