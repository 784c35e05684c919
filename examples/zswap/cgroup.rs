//! `--under-budget`'s memory cgroup: which memory controller is mounted ([`hierarchy`], from
//! `/proc/self/mountinfo`: cgroup v1's `memory` hierarchy, else cgroup v2 where its root
//! delegates `memory` to its children), and a cgroup made for one run under that
//! hierarchy's root ([`Cgroup`]): its limit, its usage, the process moved into it, and its
//! removal when dropped. The names of its files are the kernel's
//! (Documentation/admin-guide/cgroup-v1/memory.rst, cgroup-v2.rst).

use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// The cgroup version of the memory controller.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Version {
    /// cgroup v1: a `cgroup` mount with the `memory` option.
    V1,
    /// cgroup v2: a `cgroup2` mount whose root has `memory` in `cgroup.subtree_control`.
    V2,
}

impl Version {
    /// The file of the limit, in bytes: `memory.limit_in_bytes` or `memory.max`.
    pub fn limit_file(self) -> &'static str {
        match self {
            Version::V1 => "memory.limit_in_bytes",
            Version::V2 => "memory.max",
        }
    }

    /// The file of the usage, in bytes: `memory.usage_in_bytes` or `memory.current`.
    pub fn usage_file(self) -> &'static str {
        match self {
            Version::V1 => "memory.usage_in_bytes",
            Version::V2 => "memory.current",
        }
    }
}

/// A mounted memory controller: its version and where its root cgroup is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hierarchy {
    /// v1 or v2.
    pub version: Version,
    /// The mount point: the hierarchy's root cgroup (`/sys/fs/cgroup/memory`).
    pub root: PathBuf,
}

impl Hierarchy {
    /// The directory of a cgroup `name` made for a run, under the hierarchy's root (not
    /// under the program's own cgroup: that one is its launcher's, and in v2 a cgroup with
    /// processes cannot pass controllers to children).
    pub fn cgroup_dir(&self, name: &str) -> PathBuf {
        self.root.join(name)
    }
}

/// The memory controller of a `/proc/self/mountinfo` text: cgroup v1's `memory` hierarchy
/// where one is mounted, else a cgroup v2 mount whose root's `cgroup.subtree_control`
/// (read by `read`, given the file's path) has `memory`.
///
/// # Errors
///
/// A line saying why there is none: no memory controller mounted, or a v2 root that does
/// not delegate `memory` to its children.
pub fn hierarchy(
    mountinfo: &str,
    read: &dyn Fn(&Path) -> Option<String>,
) -> Result<Hierarchy, String> {
    // A line: `ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTIONS [TAGS...] - FSTYPE SOURCE SUPER`.
    let mounts: Vec<(&str, &str, &str)> = mountinfo
        .lines()
        .filter_map(|line| {
            let (left, right) = line.split_once(" - ")?;
            let point = left.split_whitespace().nth(4)?;
            let mut r = right.split_whitespace();
            let fstype = r.next()?;
            let options = r.nth(1).unwrap_or("");
            Some((point, fstype, options))
        })
        .collect();
    if let Some((point, _, _)) = mounts
        .iter()
        .find(|(_, fs, opts)| *fs == "cgroup" && opts.split(',').any(|o| o == "memory"))
    {
        return Ok(Hierarchy {
            version: Version::V1,
            root: PathBuf::from(point),
        });
    }
    let mut v2_without = None;
    for (point, _, _) in mounts.iter().filter(|(_, fs, _)| *fs == "cgroup2") {
        let control = Path::new(point).join("cgroup.subtree_control");
        let delegated =
            read(&control).is_some_and(|text| text.split_whitespace().any(|c| c == "memory"));
        if delegated {
            return Ok(Hierarchy {
                version: Version::V2,
                root: PathBuf::from(point),
            });
        }
        v2_without.get_or_insert(control);
    }
    Err(match v2_without {
        Some(control) => format!(
            "no cgroup v1 memory hierarchy, and {} has no `memory` (cgroup v2's memory \
             controller not enabled for child cgroups)",
            control.display()
        ),
        None => "no memory cgroup controller mounted (neither cgroup v1's `memory` nor \
                 cgroup v2)"
            .into(),
    })
}

/// The memory controller of this system (`/proc/self/mountinfo`).
///
/// # Errors
///
/// See [`hierarchy`]; also where mountinfo cannot be read.
pub fn this_system() -> Result<Hierarchy, String> {
    let text = std::fs::read_to_string("/proc/self/mountinfo")
        .map_err(|e| format!("/proc/self/mountinfo: {e}"))?;
    hierarchy(&text, &|p| std::fs::read_to_string(p).ok())
}

/// The directory of the cgroup now made, for the Ctrl-C handler's second press
/// ([`remove_on_exit`]).
static ACTIVE: Mutex<Option<PathBuf>> = Mutex::new(None);

/// A cgroup made for a run, removed (`rmdir`, once its processes are gone) when dropped.
#[derive(Debug)]
pub struct Cgroup {
    dir: PathBuf,
    version: Version,
}

impl Cgroup {
    /// Makes cgroup `name` under `h`'s root with a memory limit of `limit_bytes`.
    ///
    /// # Errors
    ///
    /// A line saying what failed (the directory exists already, the limit refused); the
    /// directory is removed again by then where it was made.
    pub fn create(h: &Hierarchy, name: &str, limit_bytes: u64) -> Result<Cgroup, String> {
        let dir = h.cgroup_dir(name);
        std::fs::create_dir(&dir).map_err(|e| format!("mkdir {}: {e}", dir.display()))?;
        *ACTIVE.lock().unwrap_or_else(|e| e.into_inner()) = Some(dir.clone());
        let cg = Cgroup {
            dir,
            version: h.version,
        };
        cg.write(h.version.limit_file(), &limit_bytes.to_string())?;
        Ok(cg)
    }

    /// The cgroup's directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Its `cgroup.procs`: a process writes its pid there to move into it.
    pub fn procs(&self) -> PathBuf {
        self.dir.join("cgroup.procs")
    }

    /// Its usage file ([`Version::usage_file`]).
    pub fn usage_path(&self) -> PathBuf {
        self.dir.join(self.version.usage_file())
    }

    /// Its limit as the kernel holds it (v1 rounds it down to pages), in bytes; `None` for
    /// `max` or where it cannot be read.
    pub fn limit(&self) -> Option<u64> {
        std::fs::read_to_string(self.dir.join(self.version.limit_file()))
            .ok()?
            .trim()
            .parse()
            .ok()
    }

    fn write(&self, file: &str, value: &str) -> Result<(), String> {
        let path = self.dir.join(file);
        std::fs::write(&path, value)
            .map_err(|e| format!("writing {value:?} to {}: {e}", path.display()))
    }
}

/// Removes `dir`, retrying for a second while the kernel still counts an exited process
/// in it (`EBUSY`); the error printed where it stays.
fn remove(dir: &Path) {
    for attempt in 0..=20 {
        match std::fs::remove_dir(dir) {
            Ok(()) => return,
            Err(e) if e.raw_os_error() == Some(libc::EBUSY) && attempt < 20 => {
                std::thread::sleep(std::time::Duration::from_millis(50));
            }
            Err(e) => {
                eprintln!("cgroup: removing {}: {e}", dir.display());
                return;
            }
        }
    }
}

impl Drop for Cgroup {
    fn drop(&mut self) {
        remove(&self.dir);
        *ACTIVE.lock().unwrap_or_else(|e| e.into_inner()) = None;
    }
}

/// For a Ctrl-C handler about to end the program: removes the cgroup of the run, if one
/// exists (its child, in the same process group, got the same SIGINT).
pub fn remove_on_exit() {
    let dir = ACTIVE.lock().unwrap_or_else(|e| e.into_inner()).take();
    if let Some(dir) = dir {
        remove(&dir);
    }
}

/// Moves the calling process into the cgroup of `procs` (its `cgroup.procs`).
///
/// # Errors
///
/// A line saying why the kernel refused.
pub fn join(procs: &Path) -> Result<(), String> {
    std::fs::write(procs, std::process::id().to_string())
        .map_err(|e| format!("writing our pid to {}: {e}", procs.display()))
}
