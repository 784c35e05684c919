//! A process's memory: `/proc/PID/maps` parsed and filtered, a child's heap read whole, holes
//! skipped and counted, a process that is gone.

use acomp_pages::PAGE_SIZE;
use acomp_pages::snapshot;

/// `/proc/PID/maps` of a real process, trimmed: every kind of line the filter must judge.
const MAPS: &str = "\
55d0c1a00000-55d0c1a2e000 r--p 00000000 fd:01 1316        /usr/bin/python3.11
55d0c1c2e000-55d0c1c30000 rw-p 0022e000 fd:01 1316        /usr/bin/python3.11
55d0c2e8a000-55d0c3159000 rw-p 00000000 00:00 0           [heap]
7f2b6c000000-7f2b6c021000 rw-p 00000000 00:00 0 
7f2b6c021000-7f2b70000000 ---p 00000000 00:00 0 
7f2b71400000-7f2b71600000 rw-p 00000000 00:00 0           [anon:arena]
7f2b71600000-7f2b71800000 rw-s 00000000 00:01 2049        /dev/zero (deleted)
7f2b71800000-7f2b71801000 rw-s 00000000 00:05 77          /SYSV00000000 (deleted)
7f2b71a00000-7f2b71a01000 rw-p 00000000 00:1a 99          /memfd:pool (deleted)
7f2b71b00000-7f2b71b02000 r--p 00000000 00:00 0 
7ffc3a1f0000-7ffc3a211000 rw-p 00000000 00:00 0           [stack]
7ffc3a2f6000-7ffc3a2fa000 r--p 00000000 00:00 0           [vvar]
7ffc3a2fa000-7ffc3a2fc000 r-xp 00000000 00:00 0           [vdso]
ffffffffff600000-ffffffffff601000 --xp 00000000 00:00 0   [vsyscall]
";

#[test]
fn maps_parse_and_filter() {
    let maps = snapshot::parse_maps(MAPS).unwrap();
    assert_eq!(maps.len(), 14);
    assert_eq!(
        maps[0],
        snapshot::Mapping {
            start: 0x55d0c1a00000,
            end: 0x55d0c1a2e000,
            perms: "r--p".into(),
            inode: 1316,
            path: "/usr/bin/python3.11".into(),
        }
    );
    assert_eq!(maps[3].path, "", "an anonymous line ends in a space");
    assert_eq!(
        maps[6].path, "/dev/zero (deleted)",
        "paths keep their spaces"
    );
    assert_eq!(maps[13].end, 0xffffffffff601000);
    let kept: Vec<&str> = maps
        .iter()
        .filter(|m| m.is_private_anonymous())
        .map(|m| m.path.as_str())
        .collect();
    assert_eq!(kept, ["[heap]", "", "[anon:arena]", "[stack]"]);
    let bytes: u64 = maps
        .iter()
        .filter(|m| m.is_private_anonymous())
        .map(|m| m.len())
        .sum();
    assert_eq!(bytes, 0x2cf000 + 0x21000 + 0x200000 + 0x21000);

    assert_eq!(snapshot::parse_maps(""), Some(vec![]));
    for bad in [
        "nonsense\n",
        "7f00-7e00 rw-p 00000000 00:00 0\n",
        "7f00-7f10 rw-p 00000000 00:00\n",
        "7f00-zz rw-p 00000000 00:00 0\n",
    ] {
        assert_eq!(snapshot::parse_maps(bad), None, "{bad:?}");
    }
}

/// A child process, killed and reaped when dropped.
struct Child(std::process::Child);

impl Drop for Child {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// `python3 -c code`, once it has printed its first line; `None` (saying the test is
/// skipped) where there is no python3.
fn python(code: &str) -> Option<Child> {
    use std::io::BufRead;
    use std::process::{Command, Stdio};
    let child = Command::new("python3")
        .args(["-c", code])
        .stdout(Stdio::piped())
        .spawn();
    let Ok(mut child) = child.map(Child) else {
        eprintln!("SKIPPED: no python3 to spawn a process to snapshot");
        return None;
    };
    let mut line = String::new();
    let stdout = child.0.stdout.take().unwrap();
    std::io::BufReader::new(stdout)
        .read_line(&mut line)
        .unwrap();
    assert_eq!(line, "ready\n");
    Some(child)
}

#[test]
fn snapshot_finds_a_pattern_in_a_childs_heap() {
    let code = "import time\n\
                data = b''.join(b'acomp %010d\\n' % i for i in range(200000))\n\
                print('ready', flush=True)\n\
                time.sleep(120)\n";
    let Some(child) = python(code) else { return };
    let pid = child.0.id() as i32;
    let maps = snapshot::read_maps(pid).unwrap();
    assert!(
        maps.iter()
            .any(|m| m.path == "[stack]" && m.is_private_anonymous())
    );
    assert!(maps.iter().any(|m| m.path.contains("python")));
    let snap = snapshot::read_mappings(pid, &maps, None).unwrap();
    assert!(!snap.exited);
    assert!(snap.comm.starts_with("python"), "{}", snap.comm);
    assert_eq!(snap.data.len() % PAGE_SIZE, 0);
    let kept: u64 = maps
        .iter()
        .filter(|m| m.is_private_anonymous())
        .map(|m| m.len())
        .sum();
    assert_eq!(snap.data.len() as u64 + snap.holes * PAGE_SIZE as u64, kept);
    // The 3.4 MB the child built, whole and in order: one anonymous mapping, read in full.
    let expected: Vec<u8> = (0..200000)
        .flat_map(|i| format!("acomp {i:010}\n").into_bytes())
        .collect();
    let at = snap
        .data
        .windows(17)
        .position(|w| w == &expected[..17])
        .expect("the child's pattern is in the snapshot");
    assert_eq!(&snap.data[at..at + expected.len()], &expected[..]);
}

#[test]
fn snapshot_of_no_process_or_one_that_exits() {
    // Above the largest pid_max (2^22): never a process.
    let err = snapshot::read_maps(1 << 30).unwrap_err();
    assert!(matches!(err, snapshot::SnapshotError::NoProcess(_)));
    assert_eq!(
        err.to_string(),
        "cannot snapshot pid 1073741824: no such process"
    );
    assert!(matches!(
        snapshot::read_maps(0),
        Err(snapshot::SnapshotError::NoProcess(0))
    ));

    // Its maps read, then gone before its memory is.
    let mut child = Child(
        std::process::Command::new("sleep")
            .arg("60")
            .spawn()
            .unwrap(),
    );
    let pid = child.0.id() as i32;
    let maps = snapshot::read_maps(pid).unwrap();
    let stack = maps.iter().find(|m| m.path == "[stack]").unwrap().clone();

    // Unreadable pages are skipped and counted: two below mmap_min_addr (never mapped),
    // then the real stack, read in full.
    let hole = snapshot::Mapping {
        start: 0x1000,
        end: 0x3000,
        perms: "rw-p".into(),
        inode: 0,
        path: String::new(),
    };
    let snap = snapshot::read_mappings(pid, &[hole, stack.clone()], None).unwrap();
    assert_eq!(snap.holes, 2);
    assert_eq!(snap.data.len() as u64, stack.len());
    assert_eq!((snap.mappings, snap.exited), ((2, 2), false));

    child.0.kill().unwrap();
    child.0.wait().unwrap();
    let err = snapshot::read_mappings(pid, &maps, None).unwrap_err();
    assert!(matches!(err, snapshot::SnapshotError::Exited(p) if p == pid));
    assert!(
        err.to_string()
            .contains("exited before any of its memory was read"),
        "{err}"
    );
}
