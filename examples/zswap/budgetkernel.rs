//! `--under-budget --vs-zram`: the kernel's side. For each budget and exponent, a new zram
//! lz4 device swapped on at the top priority (`crate::swap`'s device: removed afterwards,
//! on error and on Ctrl-C) and a memory cgroup made for the run ([`crate::cgroup`], limited
//! to the budget's percent of the records' bytes, removed afterwards). This program's own
//! executable is run again as the child (`--budget-child`, hidden: no `fork` of a
//! multi-threaded program). The child computes its stream and allocates the records'
//! hashes, moves itself into the cgroup, reads the records from a file the parent wrote
//! ([`Kernel::new`]) into an ordinary anonymous mapping (`MADV_NOHUGEPAGE`; the cgroup's
//! limit pages out the surplus to zram as it goes), runs the warm-up and the timed stream
//! ([`crate::budget::Records`]) and reports on one JSON line of its standard output
//! ([`child`]): its faults from `getrusage`, and as memory the cgroup's usage plus zram's
//! `mem_used_total` (zram's pool is not charged to the cgroup).

use std::fs::File;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

use serde::{Deserialize, Serialize};

use crate::budget::{self, Measured, Records, Spec};
use crate::cgroup::{self, Cgroup, Hierarchy};
use crate::swap::{Anon, SwapDevice};
use crate::zram;
use acomp_zswap::PAGE_SIZE;

/// The hidden flag that makes the program the kernel side's child.
pub const CHILD_FLAG: &str = "--budget-child";

/// Why the kernel's side cannot be measured here, in one line; `None` where it can.
/// `sysfs` is `/sys` but for tests, `euid` the effective user, `memory` the memory
/// controller found ([`cgroup::this_system`]).
pub fn unavailable(sysfs: &Path, euid: u32, memory: &Result<Hierarchy, String>) -> Option<String> {
    if let Some(why) = crate::swap::unavailable(sysfs, euid) {
        return Some(why);
    }
    memory.as_ref().err().cloned()
}

/// What the parent tells its child, as JSON on the command line.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChildSpec {
    /// The file of the records, written by the parent.
    pub records_path: PathBuf,
    /// Records in it.
    pub records: usize,
    /// The Zipf exponent.
    pub zipf: f64,
    /// The stream's seed.
    pub seed: u64,
    /// The cgroup's `cgroup.procs`.
    pub procs: PathBuf,
    /// The cgroup's usage file.
    pub usage: PathBuf,
    /// The cgroup's limit, in bytes, as the kernel holds it.
    pub limit_bytes: u64,
    /// The zram device's `mm_stat`.
    pub mm_stat: PathBuf,
}

/// The kernel's side, ready to run: the memory controller, and the records in a file.
#[derive(Debug)]
pub struct Kernel {
    hierarchy: Hierarchy,
    file: PathBuf,
    records: usize,
}

impl Kernel {
    /// Checks that the side can run, and writes `records` (a whole number of pages) to a
    /// temporary file, removed when the `Kernel` is dropped.
    ///
    /// # Errors
    ///
    /// A line saying why not: see [`unavailable`]; the file not written.
    pub fn new(records: &[u8]) -> Result<Kernel, String> {
        let memory = cgroup::this_system();
        // SAFETY: geteuid has no preconditions and cannot fail.
        let euid = unsafe { libc::geteuid() };
        if let Some(why) = unavailable(Path::new("/sys"), euid, &memory) {
            return Err(why);
        }
        let file =
            std::env::temp_dir().join(format!("acomp-budget-{}.records", std::process::id()));
        let kernel = Kernel {
            hierarchy: memory?,
            file,
            records: records.len() / PAGE_SIZE,
        };
        std::fs::write(&kernel.file, records)
            .map_err(|e| format!("writing {}: {e}", kernel.file.display()))?;
        Ok(kernel)
    }

    /// One budget and exponent: a new device and cgroup, the child run in it, both removed
    /// afterwards.
    ///
    /// # Errors
    ///
    /// A line saying what failed: the device, the cgroup, the child (its own message on
    /// standard error before).
    pub fn run(&self, spec: &Spec) -> Result<Measured, String> {
        let n = self.records as u64;
        let dev = SwapDevice::create(Path::new("/sys"), budget::ALGORITHM, n)?;
        let name = format!("acomp-budget-{}", std::process::id());
        let cg = Cgroup::create(
            &self.hierarchy,
            &name,
            budget::limit_bytes(n, spec.budget_percent),
        )?;
        let child = ChildSpec {
            records_path: self.file.clone(),
            records: self.records,
            zipf: spec.zipf,
            seed: spec.seed,
            procs: cg.procs(),
            usage: cg.usage_path(),
            limit_bytes: cg.limit().unwrap_or(0),
            mm_stat: PathBuf::from(format!("/sys/block/zram{}/mm_stat", dev.id())),
        };
        let result = spawn(&child);
        // The child is gone: the cgroup is empty, and swapoff has none of its pages.
        drop(cg);
        drop(dev);
        result
    }
}

impl Drop for Kernel {
    fn drop(&mut self) {
        if let Err(e) = std::fs::remove_file(&self.file) {
            eprintln!("budget: removing {}: {e}", self.file.display());
        }
    }
}

/// Runs this program's executable as the child of `spec`, and reads its report.
fn spawn(spec: &ChildSpec) -> Result<Measured, String> {
    let json = serde_json::to_string(spec).map_err(|e| e.to_string())?;
    spawn_child(CHILD_FLAG, &json)
}

/// Runs this program's executable with `flag` and `json` (a child's spec), and reads its
/// report: the last line of its standard output, as JSON. Its standard error is ours.
///
/// # Errors
///
/// A line saying what failed: the executable not found or not run, the child killed (the
/// cgroup's OOM killer?) or failed, its report unread.
pub fn spawn_child<T: serde::de::DeserializeOwned>(flag: &str, json: &str) -> Result<T, String> {
    let exe = std::env::current_exe()
        .map_err(|e| format!("cannot find this program's executable: {e}"))?;
    let out = Command::new(&exe)
        .arg(flag)
        .arg(json)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .output()
        .map_err(|e| format!("running {}: {e}", exe.display()))?;
    if !out.status.success() {
        use std::os::unix::process::ExitStatusExt;
        return Err(match out.status.signal() {
            Some(libc::SIGKILL) => {
                "the child was killed (SIGKILL: the cgroup's OOM killer?)".to_owned()
            }
            Some(sig) => format!("the child ended by signal {sig}"),
            None => format!("the child failed ({})", out.status),
        });
    }
    let text = String::from_utf8_lossy(&out.stdout);
    let line = text.lines().last().unwrap_or_default();
    serde_json::from_str(line).map_err(|e| format!("the child's report {line:?}: {e}"))
}

/// The calling process's minor and major faults (`getrusage(RUSAGE_SELF)`).
fn faults() -> (u64, u64) {
    // SAFETY: `rusage` is plain old data; zeroed is a valid value.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: RUSAGE_SELF and a pointer to a live `rusage`: getrusage only writes it.
    let rc = unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) };
    assert_eq!(rc, 0, "getrusage(RUSAGE_SELF) cannot fail");
    (ru.ru_minflt as u64, ru.ru_majflt as u64)
}

/// A file's number (a cgroup's usage).
///
/// # Errors
///
/// A line saying why not: the file unread, its text not a number.
pub fn read_u64(path: &Path) -> Result<u64, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    text.trim()
        .parse()
        .map_err(|_| format!("{}: {text:?} is not a number", path.display()))
}

/// The child's work (see the module's docs), from its spec's JSON: what it measured.
///
/// # Errors
///
/// A line saying what failed: the spec, the cgroup refusing the child, the records' file,
/// the mapping, the usage or `mm_stat` unread.
pub fn child(spec_json: &str) -> Result<Measured, String> {
    let spec: ChildSpec =
        serde_json::from_str(spec_json).map_err(|e| format!("the child's spec: {e}"))?;
    let n = spec.records;
    // Everything the side keeps besides the records is allocated and written before the
    // child joins the cgroup, so that the cgroup charges the records (and the page tables
    // and swap cache that come with them) only, as the pager's memory counts its records.
    let stream = budget::stream(n, spec.zipf, spec.seed);
    let anon = Anon::new(n * PAGE_SIZE)?;
    // SAFETY: `anon` is `n` pages, readable and writable, alive until after the last use
    // of `recs`, used by this thread alone (the reads below write it before `recs`'s
    // accesses start, through a slice that ends before them).
    let mut recs = unsafe { Records::new(anon.ptr(), n) };
    let mut file = File::open(&spec.records_path)
        .map_err(|e| format!("{}: {e}", spec.records_path.display()))?;
    cgroup::join(&spec.procs)?;
    const CHUNK_PAGES: usize = 256;
    for first in (0..n).step_by(CHUNK_PAGES) {
        let pages = CHUNK_PAGES.min(n - first);
        // SAFETY: `pages` pages of the mapping from page `first`, inside it; no other
        // reference to them lives meanwhile (`recs` holds a pointer only, unused here).
        let chunk = unsafe {
            std::slice::from_raw_parts_mut(anon.ptr().add(first * PAGE_SIZE), pages * PAGE_SIZE)
        };
        file.read_exact(chunk)
            .map_err(|e| format!("reading {}: {e}", spec.records_path.display()))?;
        for i in first..first + pages {
            recs.keep(i);
        }
    }
    drop(file);
    let mut wrong = recs.run(&stream.warm_up, 0);
    let (min0, maj0) = faults();
    let start = Instant::now();
    wrong += recs.run(&stream.timed, stream.warm_up.len() as u64);
    let time = start.elapsed();
    let (min1, maj1) = faults();
    let usage = read_u64(&spec.usage)?;
    let text = std::fs::read_to_string(&spec.mm_stat)
        .map_err(|e| format!("{}: {e}", spec.mm_stat.display()))?;
    let mm = zram::parse_mm_stat(&text).ok_or_else(|| format!("mm_stat: unknown {text:?}"))?;
    drop(anon);
    Ok(Measured {
        ops_per_s: stream.timed.len() as f64 / time.as_secs_f64().max(1e-9),
        memory_bytes: usage + mm.mem_used_total,
        resident_bytes: usage,
        store_bytes: mm.mem_used_total,
        limit_bytes: spec.limit_bytes,
        swap_ins: maj1 - maj0,
        swap_readahead: 0,
        faults: (min1 - min0) + (maj1 - maj0),
        wrong_records: wrong,
    })
}
