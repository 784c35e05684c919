//! A snapshot of a running process's private writable memory: what a swap layer would be
//! asked to store. The mappings come from `/proc/PID/maps` (anonymous, heap and stack; file
//! backed, shared and special ones left out), their bytes from `process_vm_readv`.

use std::fmt;
use std::io;

use indicatif::ProgressBar;

use crate::PAGE_SIZE;

/// One line of `/proc/PID/maps`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mapping {
    /// First address.
    pub start: u64,
    /// One past the last address.
    pub end: u64,
    /// The four permission characters, e.g. `rw-p`.
    pub perms: String,
    /// Inode of the file mapped, 0 for anonymous memory.
    pub inode: u64,
    /// The path column: a file, `[heap]`, `[stack]`, `[anon:name]`, `[vdso]`..., or empty.
    pub path: String,
}

impl Mapping {
    /// Bytes mapped.
    pub fn len(&self) -> u64 {
        self.end - self.start
    }

    /// Whether it maps no bytes.
    pub fn is_empty(&self) -> bool {
        self.end == self.start
    }

    /// Whether this is private writable memory of the process's own: readable, writable,
    /// private, no file behind it (inode 0), and anonymous, heap, stack or a named
    /// anonymous mapping (`[anon:...]`). `[vvar]`, `[vdso]`, `[vsyscall]`, shared memory and
    /// file mappings (even their private, written copies) are left out.
    pub fn is_private_anonymous(&self) -> bool {
        let p = self.perms.as_bytes();
        let rw_private = p.len() == 4 && p[0] == b'r' && p[1] == b'w' && p[3] == b'p';
        let anonymous = self.path.is_empty()
            || self.path == "[heap]"
            || self.path.starts_with("[stack")
            || self.path.starts_with("[anon:");
        rw_private && self.inode == 0 && anonymous
    }
}

/// Parses the text of `/proc/PID/maps`; `None` on a line that is not in its format.
pub fn parse_maps(text: &str) -> Option<Vec<Mapping>> {
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|line| {
            // address perms offset dev inode [path]; the path may hold spaces.
            let mut rest = line;
            let mut field = || {
                let t = rest.trim_start();
                let end = t.find(' ').unwrap_or(t.len());
                let (f, r) = t.split_at(end);
                rest = r;
                (!f.is_empty()).then_some(f)
            };
            let (start, end) = field()?.split_once('-')?;
            let perms = field()?.to_owned();
            let _offset = field()?;
            let _dev = field()?;
            let inode = field()?.parse().ok()?;
            let start = u64::from_str_radix(start, 16).ok()?;
            let end = u64::from_str_radix(end, 16).ok()?;
            (start <= end && perms.len() == 4).then(|| Mapping {
                start,
                end,
                perms,
                inode,
                path: rest.trim().to_owned(),
            })
        })
        .collect()
}

/// Why a process could not be snapshotted.
#[derive(Debug)]
pub enum SnapshotError {
    /// No such process (never was, or already gone).
    NoProcess(i32),
    /// Not allowed to read it (another user's process without root, or ptrace restricted).
    Permission(i32, io::Error),
    /// The process exited before any of its memory was read.
    Exited(i32),
    /// Another error reading `/proc/PID/maps` or the memory.
    Other(i32, String),
}

impl fmt::Display for SnapshotError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SnapshotError::NoProcess(pid) => {
                write!(f, "cannot snapshot pid {pid}: no such process")
            }
            SnapshotError::Permission(pid, e) => write!(
                f,
                "cannot snapshot pid {pid}: {e}; run as the process's user or as root, and \
                 check /proc/sys/kernel/yama/ptrace_scope"
            ),
            SnapshotError::Exited(pid) => write!(
                f,
                "cannot snapshot pid {pid}: the process exited before any of its memory was read"
            ),
            SnapshotError::Other(pid, e) => write!(f, "cannot snapshot pid {pid}: {e}"),
        }
    }
}

impl std::error::Error for SnapshotError {}

/// The private writable memory of a process, read as far as it could be.
#[derive(Debug, Default)]
pub struct Snapshot {
    /// Its command name (`/proc/PID/comm`), if it could be read.
    pub comm: String,
    /// Mappings kept by the filter, and all mappings listed.
    pub mappings: (usize, usize),
    /// The pages read, in address order: a whole number of pages.
    pub data: Vec<u8>,
    /// Pages of the kept mappings that could not be read (holes), skipped.
    pub holes: u64,
    /// The process exited while it was being read: `data` is what was read before.
    pub exited: bool,
}

impl Snapshot {
    /// Pages read.
    pub fn pages(&self) -> usize {
        self.data.len() / PAGE_SIZE
    }
}

/// Reads and parses `/proc/PID/maps`.
///
/// # Errors
///
/// [`SnapshotError::NoProcess`], [`SnapshotError::Permission`], or `Other` for a file that
/// is not in the format.
pub fn read_maps(pid: i32) -> Result<Vec<Mapping>, SnapshotError> {
    if pid <= 0 {
        return Err(SnapshotError::NoProcess(pid));
    }
    let path = format!("/proc/{pid}/maps");
    let text = std::fs::read_to_string(&path).map_err(|e| match e.kind() {
        io::ErrorKind::NotFound => SnapshotError::NoProcess(pid),
        io::ErrorKind::PermissionDenied => SnapshotError::Permission(pid, e),
        // A process that exits while its maps are read: the read fails with ESRCH.
        _ if e.raw_os_error() == Some(libc::ESRCH) => SnapshotError::NoProcess(pid),
        _ => SnapshotError::Other(pid, format!("{path}: {e}")),
    })?;
    parse_maps(&text).ok_or_else(|| SnapshotError::Other(pid, format!("{path}: unknown format")))
}

/// Bytes read per `process_vm_readv` call.
const CHUNK: usize = 1 << 20;

/// What one read of the other process's memory gave.
enum Read {
    /// All of it.
    Whole,
    /// Not all of it: a hole somewhere in the range.
    Part,
    /// The process is gone.
    Gone,
}

/// Reads `buf.len()` bytes at `addr` of process `pid`.
fn read_remote(pid: i32, addr: u64, buf: &mut [u8]) -> Result<Read, io::Error> {
    let local = libc::iovec {
        iov_base: buf.as_mut_ptr().cast(),
        iov_len: buf.len(),
    };
    let remote = libc::iovec {
        iov_base: addr as *mut libc::c_void,
        iov_len: buf.len(),
    };
    // SAFETY:
    // - `local` describes `buf`, writable and `buf.len()` bytes long, borrowed mutably for
    //   the whole call;
    // - `remote` is an address in the other process: the kernel checks it, never this one;
    // - one iovec each side, flags 0.
    let n = unsafe { libc::process_vm_readv(pid, &local, 1, &remote, 1, 0) };
    if n >= 0 {
        return Ok(if n as usize == buf.len() {
            Read::Whole
        } else {
            Read::Part
        });
    }
    let e = io::Error::last_os_error();
    match e.raw_os_error() {
        Some(libc::EFAULT | libc::EIO | libc::ENOMEM) => Ok(Read::Part),
        Some(libc::ESRCH) => Ok(Read::Gone),
        _ => Err(e),
    }
}

/// Reads the `mappings` of process `pid` (its name read from `/proc/PID/comm`), skipping
/// and counting pages that cannot be read. A process that exits midway leaves what was read
/// before, with `exited` set.
///
/// # Errors
///
/// [`SnapshotError::Permission`] where the memory may not be read, `Exited` where the
/// process exited before any page was read, `Other` on any other error.
pub fn read_mappings(
    pid: i32,
    mappings: &[Mapping],
    progress: Option<&ProgressBar>,
) -> Result<Snapshot, SnapshotError> {
    let kept: Vec<&Mapping> = mappings
        .iter()
        .filter(|m| m.is_private_anonymous())
        .collect();
    let total: u64 = kept.iter().map(|m| m.len()).sum();
    let mut snap = Snapshot {
        comm: std::fs::read_to_string(format!("/proc/{pid}/comm"))
            .map(|s| s.trim().to_owned())
            .unwrap_or_default(),
        mappings: (kept.len(), mappings.len()),
        data: Vec::with_capacity(total as usize),
        ..Snapshot::default()
    };
    if let Some(pb) = progress {
        pb.set_length(total);
    }
    let fail = |e: io::Error| match e.raw_os_error() {
        Some(libc::EPERM | libc::EACCES) => SnapshotError::Permission(pid, e),
        _ => SnapshotError::Other(pid, format!("process_vm_readv: {e}")),
    };
    'mappings: for m in kept {
        let mut addr = m.start;
        while addr < m.end {
            let len = (m.end - addr).min(CHUNK as u64) as usize;
            let at = snap.data.len();
            snap.data.resize(at + len, 0);
            match read_remote(pid, addr, &mut snap.data[at..]).map_err(fail)? {
                Read::Whole => {}
                Read::Gone => {
                    snap.data.truncate(at);
                    snap.exited = true;
                    break 'mappings;
                }
                Read::Part => {
                    // A hole in this chunk: read it page by page, keeping the pages read.
                    snap.data.truncate(at);
                    for page in (addr..addr + len as u64).step_by(PAGE_SIZE) {
                        let at = snap.data.len();
                        snap.data.resize(at + PAGE_SIZE, 0);
                        match read_remote(pid, page, &mut snap.data[at..]).map_err(fail)? {
                            Read::Whole => {}
                            Read::Part => {
                                snap.data.truncate(at);
                                snap.holes += 1;
                            }
                            Read::Gone => {
                                snap.data.truncate(at);
                                snap.exited = true;
                                break 'mappings;
                            }
                        }
                    }
                }
            }
            addr += len as u64;
            if let Some(pb) = progress {
                pb.inc(len as u64);
            }
        }
    }
    if let Some(pb) = progress {
        pb.finish_and_clear();
    }
    if snap.exited && snap.data.is_empty() {
        return Err(SnapshotError::Exited(pid));
    }
    Ok(snap)
}
