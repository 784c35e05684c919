//! `--record-store --vs-zram`: the record store's kernel side, on `--under-budget`'s
//! machinery (`crate::budgetkernel`): a new zram lz4 device swapped on at the top priority
//! and a memory cgroup ([`crate::cgroup`]) limited to the resident limit, both removed
//! afterwards, and this program's executable run again as the child ([`CHILD_FLAG`],
//! hidden). The child reads the records' source pages from a file the parent wrote,
//! computes its streams and allocates the records' locks, then moves itself into the cgroup,
//! fills an ordinary anonymous mapping (`MADV_NOHUGEPAGE`; the limit pages out the surplus
//! to zram as it goes) and runs the store ([`crate::recordstore::run`]); it reports on one
//! JSON line ([`child`]), its memory the cgroup's usage plus zram's `mem_used_total`.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::budgetkernel;
use crate::cgroup::{self, Cgroup};
use crate::recordstore::{self, Measured, Scratch, Store};
use crate::swap::{Anon, SwapDevice};
use crate::zram;
use acomp_zswap::PAGE_SIZE;

/// The hidden flag that makes the program the record store's kernel child.
pub const CHILD_FLAG: &str = "--record-child";

/// What the parent tells its child, as JSON on the command line.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChildSpec {
    /// The file of the source pages, written by the parent.
    pub source_path: PathBuf,
    /// Records.
    pub records: usize,
    /// Reader threads.
    pub readers: usize,
    /// The streams' seed.
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

/// Removes the source file when dropped.
struct SourceFile(PathBuf);

impl Drop for SourceFile {
    fn drop(&mut self) {
        if let Err(e) = std::fs::remove_file(&self.0) {
            eprintln!("record store: removing {}: {e}", self.0.display());
        }
    }
}

/// The kernel's side: `source` (whole pages) written to a temporary file, a device and a
/// cgroup of `resident_limit` made, the child run in them, all removed afterwards.
///
/// # Errors
///
/// A line saying why not: see `budgetkernel::unavailable`; the file, the device, the
/// cgroup, the child (its own message on standard error before).
pub fn run(
    source: &[u8],
    records: usize,
    readers: usize,
    seed: u64,
    resident_limit: u64,
) -> Result<Measured, String> {
    let memory = cgroup::this_system();
    // SAFETY: geteuid has no preconditions and cannot fail.
    let euid = unsafe { libc::geteuid() };
    if let Some(why) = budgetkernel::unavailable(Path::new("/sys"), euid, &memory) {
        return Err(why);
    }
    let hierarchy = memory?;
    let file = SourceFile(
        std::env::temp_dir().join(format!("acomp-records-{}.pages", std::process::id())),
    );
    std::fs::write(&file.0, source).map_err(|e| format!("writing {}: {e}", file.0.display()))?;
    let dev = SwapDevice::create(Path::new("/sys"), recordstore::ALGORITHM, records as u64)?;
    let name = format!("acomp-records-{}", std::process::id());
    let cg = Cgroup::create(&hierarchy, &name, resident_limit)?;
    let spec = ChildSpec {
        source_path: file.0.clone(),
        records,
        readers,
        seed,
        procs: cg.procs(),
        usage: cg.usage_path(),
        limit_bytes: cg.limit().unwrap_or(0),
        mm_stat: PathBuf::from(format!("/sys/block/zram{}/mm_stat", dev.id())),
    };
    let json = serde_json::to_string(&spec).map_err(|e| e.to_string())?;
    let result = budgetkernel::spawn_child(CHILD_FLAG, &json);
    // The child is gone: the cgroup is empty, and swapoff has none of its pages.
    drop(cg);
    drop(dev);
    result
}

/// The child's work (see the module's docs), from its spec's JSON: what it measured.
///
/// # Errors
///
/// A line saying what failed: the spec, the source file, the mapping, the cgroup refusing
/// the child, the usage or `mm_stat` unread.
pub fn child(spec_json: &str) -> Result<Measured, String> {
    let spec: ChildSpec =
        serde_json::from_str(spec_json).map_err(|e| format!("the child's spec: {e}"))?;
    let n = spec.records;
    // Everything the side keeps besides the records is allocated and written before the
    // child joins the cgroup, so that the cgroup charges the records (and the page tables
    // that come with them) only, as the pager's memory counts its records.
    let source = std::fs::read(&spec.source_path)
        .map_err(|e| format!("{}: {e}", spec.source_path.display()))?;
    let source = &source[..source.len() / PAGE_SIZE * PAGE_SIZE];
    if source.is_empty() {
        return Err(format!("{}: no whole page", spec.source_path.display()));
    }
    let streams = recordstore::streams(n, spec.readers, spec.seed);
    let anon = Anon::new(n * PAGE_SIZE)?;
    // SAFETY: `anon` is `n` pages, readable and writable, alive until after the last use
    // of `store`, which alone uses it.
    let mut store = unsafe { Store::new(anon.ptr(), n) };
    let mut scratch = Scratch::new(spec.readers);
    cgroup::join(&spec.procs)?;
    store.fill(source, &mut scratch.page);
    let mut m = recordstore::run(
        &store,
        source,
        &streams,
        scratch,
        &recordstore::process_faults,
    );
    let usage = budgetkernel::read_u64(&spec.usage)?;
    let text = std::fs::read_to_string(&spec.mm_stat)
        .map_err(|e| format!("{}: {e}", spec.mm_stat.display()))?;
    let mm = zram::parse_mm_stat(&text).ok_or_else(|| format!("mm_stat: unknown {text:?}"))?;
    drop(store);
    drop(anon);
    m.resident_bytes = usage;
    m.store_bytes = mm.mem_used_total;
    m.memory_bytes = usage + mm.mem_used_total;
    m.limit_bytes = spec.limit_bytes;
    Ok(m)
}
