//! The zswap example's store, load and invalidate over real, random and zero pages; the
//! snapshot of a process, zram's files and the side-by-side rows.

use std::path::PathBuf;

use acomp::Acomp;
use rand::rngs::StdRng;
use rand::seq::{IndexedRandom, SliceRandom};
use rand::{Rng, SeedableRng};

use acomp_zswap::FolioKind;
use zswap_main::input::Input;
use zswap_main::pool::{AllocError, PAGE_SIZE};
use zswap_main::zswap::{Entry, LoadError, LoadKind, Page, Reject, StoreKind, Zswap};
use zswap_main::{
    cache, compare, dict, lz4dict, patterns, plot, snapshot, units, workload, zram, zswap,
};

fn zswap() -> Zswap {
    Zswap::new(Acomp::new("zstd").unwrap(), None)
}

/// `../shared/testdata/cases`, or `None` where the folder is absent (a plain clone): the
/// tests then run on pages the repository makes (see [`test_pages`]). Under `CI=true` its
/// absence fails, naming it, so that a green CI has run on the shared data.
fn cases() -> Option<PathBuf> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/testdata/cases");
    let dir = std::env::var_os("ZSWAP_TEST_CASES").map_or(dir, PathBuf::from);
    if dir.is_dir() {
        return Some(dir);
    }
    assert!(
        std::env::var("CI").as_deref() != Ok("true"),
        "{} is absent: under CI=true the zswap tests must run over the shared test data",
        dir.display()
    );
    eprintln!(
        "SKIPPED: {} is absent; the zswap tests run on pages of the test binary instead",
        dir.display()
    );
    None
}

/// At most this many pages of the test binary stand in for the shared cases.
const OWN_PAGES: usize = 1500;

/// Pages of every file under `cases` (the last of each zero-padded), or where it is absent
/// of the test binary itself (machine code, tables and strings: pages that compress to many
/// sizes, so that objects straddle backing pages as the cases' do); then random and zero
/// bytes.
fn test_pages() -> Vec<Box<Page>> {
    let mut pages = Vec::new();
    if let Some(dir) = cases() {
        let mut files: Vec<_> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        files.sort();
        for path in files {
            let input = Input::read(&path).unwrap();
            pages.extend((0..input.len()).map(|i| Box::new(*input.page(i))));
        }
    } else {
        let exe = std::env::current_exe().unwrap();
        let input = Input::read(&exe).unwrap();
        pages.extend((0..input.len().min(OWN_PAGES)).map(|i| Box::new(*input.page(i))));
    }
    let mut rng = StdRng::seed_from_u64(7);
    for _ in 0..64 {
        let mut page = Box::new([0u8; PAGE_SIZE]);
        rng.fill(&mut page[..]);
        pages.push(page);
    }
    // Pages that compress to every size: random bytes, then zeros.
    for random in (0..PAGE_SIZE).step_by(61) {
        let mut page = Box::new([0u8; PAGE_SIZE]);
        rng.fill(&mut page[..random]);
        pages.push(page);
    }
    pages.push(Box::new([0; PAGE_SIZE]));
    pages.push(Box::new([0xAB; PAGE_SIZE]));
    pages
}

fn load(z: &Zswap, offset: u64) -> Result<(LoadKind, Box<Page>), LoadError> {
    let mut page = Box::new([0x5Au8; PAGE_SIZE]);
    z.load(offset, &mut page).map(|kind| (kind, page))
}

#[test]
fn every_page_comes_back() {
    let pages = test_pages();
    let z = zswap();
    let mut kinds = [0usize; 3];
    for (i, page) in pages.iter().enumerate() {
        match z.store(i as u64, page).unwrap() {
            StoreKind::Compressed => kinds[0] += 1,
            StoreKind::Incompressible => kinds[1] += 1,
            StoreKind::SameFilled => kinds[2] += 1,
        }
    }
    assert!(
        kinds.iter().all(|&k| k > 0),
        "every kind of store: {kinds:?}"
    );
    let before = z.acomp().stats();
    let (mut one, mut two) = (0, 0);
    for (i, page) in pages.iter().enumerate().rev() {
        let straddles = z.straddles(i as u64);
        let (kind, back) = load(&z, i as u64).unwrap();
        assert_eq!(back, *page, "page {i}");
        match kind {
            LoadKind::OneFragment => one += 1,
            LoadKind::Straddling => two += 1,
            _ => {}
        }
        assert_eq!(kind == LoadKind::Straddling, straddles, "page {i}");
    }
    assert!(two > 0, "some objects straddle backing pages");
    let after = z.acomp().stats();
    assert_eq!(after.one_shot - before.one_shot, one);
    assert_eq!(
        (after.stream + after.linearised) - (before.stream + before.linearised),
        two,
        "every straddling load takes the multi-fragment path (zstd's stream, lz4's linearised)"
    );

    let c = z.counters();
    assert_eq!(c.stored_pages, pages.len() as u64);
    assert_eq!(c.same_filled_pages, kinds[2] as u64);
    assert_eq!(c.stored_incompressible_pages, kinds[1] as u64);
    assert_eq!(c.reject_compress_poor, kinds[1] as u64);
    assert_eq!((c.reject_compress_fail, c.decompress_fail), (0, 0));
    for i in 0..pages.len() {
        assert!(z.invalidate(i as u64));
    }
    let c = z.counters();
    assert_eq!(
        (c.stored_pages, c.stored_bytes, c.pool.objects, c.pool.pages),
        (0, 0, 0, 0)
    );
}

#[test]
fn same_filled_pages_keep_only_their_value() {
    let z = zswap();
    for (i, v) in [0u8, 1, 0xAB, 0xFF].into_iter().enumerate() {
        assert_eq!(
            z.store(i as u64, &[v; PAGE_SIZE]),
            Ok(StoreKind::SameFilled)
        );
        assert_eq!(z.entry(i as u64), Some(Entry::SameFilled(v)));
        assert_eq!(
            load(&z, i as u64).unwrap(),
            (LoadKind::Filled, Box::new([v; PAGE_SIZE]))
        );
    }
    assert_eq!(z.counters().pool.pages, 0);
    // One differing byte, anywhere, makes a page not same-filled.
    for at in [0, 7, 8, PAGE_SIZE - 1] {
        let mut page = [3u8; PAGE_SIZE];
        page[at] = 4;
        assert_eq!(zswap::same_filled(&page), None, "byte {at}");
    }
}

#[test]
fn incompressible_pages_are_copied() {
    let z = zswap();
    let mut page = Box::new([0u8; PAGE_SIZE]);
    StdRng::seed_from_u64(1).fill(&mut page[..]);
    assert_eq!(z.store(9, &page), Ok(StoreKind::Incompressible));
    assert!(matches!(z.entry(9), Some(Entry::Incompressible)));
    assert_eq!(load(&z, 9).unwrap(), (LoadKind::Copied, page));
    let c = z.counters();
    assert_eq!(
        (c.reject_compress_poor, c.stored_bytes),
        (1, PAGE_SIZE as u64)
    );
}

#[test]
fn store_replaces_and_invalidate_frees() {
    let z = zswap();
    let text = b"a swapped-out page of text ".repeat(200);
    let mut a = [0u8; PAGE_SIZE];
    a.copy_from_slice(&text[..PAGE_SIZE]);
    let mut b = a;
    b[100] = b'!';
    assert_eq!(z.store(5, &a), Ok(StoreKind::Compressed));
    assert_eq!(z.store(5, &b), Ok(StoreKind::Compressed));
    assert_eq!(*load(&z, 5).unwrap().1, b);
    assert_eq!(z.counters().stored_pages, 1);
    assert_eq!(z.counters().pool.objects, 1);
    assert!(z.invalidate(5));
    assert!(!z.invalidate(5));
    assert!(matches!(load(&z, 5), Err(LoadError::NotFound)));
    assert_eq!(z.counters().pool.objects, 0);
}

#[test]
fn pool_limit_rejects_the_page() {
    let z = Zswap::new(Acomp::new("zstd").unwrap(), Some(1));
    let mut page = Box::new([0u8; PAGE_SIZE]);
    StdRng::seed_from_u64(2).fill(&mut page[..]);
    assert_eq!(z.store(0, &page), Ok(StoreKind::Incompressible));
    page[0] ^= 1;
    assert_eq!(z.store(1, &page), Err(Reject::Alloc(AllocError::LimitHit)));
    assert_eq!(z.counters().reject_alloc_fail, 1);
    assert!(matches!(load(&z, 1), Err(LoadError::NotFound)));
}

#[test]
fn input_pads_the_last_page() {
    let input = Input::from_bytes("odd".into(), vec![7; PAGE_SIZE + 10]);
    assert_eq!(
        (input.len(), input.padding, input.file_len()),
        (2, PAGE_SIZE - 10, PAGE_SIZE + 10)
    );
    assert!(input.page(1)[..10].iter().all(|&b| b == 7));
    assert!(input.page(1)[10..].iter().all(|&b| b == 0));
    let empty = Input::from_bytes("empty".into(), vec![]);
    assert!(empty.is_empty());
    assert_eq!(empty.len(), 0);
    let missing = Input::read("/nonexistent/zswap-input".as_ref()).unwrap_err();
    assert!(
        missing.to_string().contains("/nonexistent/zswap-input"),
        "{missing}"
    );
    assert!(Input::read(env!("CARGO_MANIFEST_DIR").as_ref()).is_err());
}

#[test]
fn workload_verifies_every_page_on_threads() {
    let mut bytes: Vec<u8> = test_pages()
        .iter()
        .flat_map(|p| p.iter().copied())
        .collect();
    bytes.truncate(bytes.len() - 100);
    let input = Input::from_bytes("test pages".into(), bytes);
    let z = zswap();
    let opts = workload::Options {
        threads: 3,
        seed: 5,
        level: 3,
        progress: None,
    };
    let report = workload::run(&z, &input, &opts);
    assert!(report.ok(), "{:?}", report.failures);
    assert_eq!(report.verified, 2 * input.len() as u64);
    assert_eq!(report.pool_pages_at_end, 0);
    assert_eq!(report.load_paths.1, report.load_straddling.len());
    assert_eq!(report.load_paths.0, report.load_one.len());
    assert!(!report.load_straddling.is_empty());
}

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
    // And it stores and loads like any input.
    let input = Input::from_bytes(format!("pid {pid}").into(), snap.data);
    let row = compare::acomp_row("acomp", &zswap(), &input);
    assert_eq!(row.verified_pages, input.len() as u64);
    assert!(row.ratio > 2.0, "{row:?}");
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

#[test]
fn mm_stat_and_algorithms_parse() {
    // Linux 6.x: nine fields.
    let m = zram::parse_mm_stat(
        "  96403456 62914560 101097472        0 101097472     1234      0     56     56\n",
    )
    .unwrap();
    assert_eq!(
        m,
        zram::MmStat {
            orig_data_size: 96403456,
            compr_data_size: 62914560,
            mem_used_total: 101097472,
            same_pages: 1234,
            huge_pages: 56,
        }
    );
    // Older kernels: seven fields, no huge_pages.
    let m = zram::parse_mm_stat("4096 57 12288 0 12288 0 0").unwrap();
    assert_eq!((m.mem_used_total, m.huge_pages), (12288, 0));
    assert_eq!(zram::parse_mm_stat("1 2 3 4 5"), None);
    assert_eq!(zram::parse_mm_stat("1 2 3 x 5 6"), None);
    assert_eq!(
        zram::parse_algorithms("lzo [lzo-rle] lz4 zstd\n"),
        ["lzo", "lzo-rle", "lz4", "zstd"]
    );
}

#[test]
fn zram_unavailable_says_why() {
    let why = zram::unavailable("/sys".as_ref(), 1000).unwrap();
    assert_eq!(why, "needs root to create a device (running as uid 1000)");
    let dir = std::env::temp_dir().join(format!("acomp-no-zram-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let why = zram::unavailable(&dir, 0).unwrap();
    assert!(
        why.ends_with("class/zram-control is absent (no zram module: `modprobe zram` first)"),
        "{why}"
    );
    std::fs::remove_dir(&dir).unwrap();
    // This machine, as root: available exactly where the control files are.
    let here = std::path::Path::new("/sys/class/zram-control/hot_add").exists();
    assert_eq!(zram::unavailable("/sys".as_ref(), 0).is_none(), here);
}

#[test]
fn rows_against_lzo_rle_and_json() {
    let input = Input::from_bytes("text".into(), b"a page of text, ".repeat(64 * 256));
    let mut rows = vec![compare::acomp_row("acomp zstd level 3", &zswap(), &input)];
    let acomp = rows[0].clone();
    assert_eq!((acomp.pages, acomp.original_bytes), (64, 64 * 4096));
    assert_eq!(acomp.verified_pages, 64);
    assert_eq!(acomp.same_filled_pages, 0);
    assert_eq!(acomp.memory_bytes % 4096, 0);
    assert!(acomp.memory_bytes < acomp.original_bytes / 4, "{acomp:?}");
    assert!(acomp.store_p50_us.is_some() && acomp.load_p99_us.is_some());
    let run = zram::Run {
        algorithm: "lzo-rle".into(),
        mm_stat: zram::MmStat {
            orig_data_size: 64 * 4096,
            compr_data_size: 4000,
            mem_used_total: 2 * acomp.memory_bytes,
            same_pages: 0,
            huge_pages: 0,
        },
        store: std::time::Duration::from_secs(1),
        load: std::time::Duration::from_secs(1),
        verified: 64,
    };
    rows.push(compare::zram_row(&run, input.len()));
    assert_eq!(rows[1].name, "zram lzo-rle");
    assert_eq!(rows[1].store_mib_s, 0.25);
    assert_eq!(rows[1].store_p50_us, None);
    compare::against_lzo_rle(&mut rows);
    assert_eq!(rows[0].memory_vs_lzo_rle, Some(0.5));
    assert_eq!(rows[1].memory_vs_lzo_rle, Some(1.0));
    assert_eq!(rows[0].store_vs_lzo_rle, Some(rows[0].store_mib_s / 0.25));
    let line = compare::goal(&rows[0]).unwrap();
    assert!(
        line.starts_with("acomp zstd level 3: memory 0.50x of zram lzo-rle's (ok <= 0.60x)"),
        "{line}"
    );

    let json = serde_json::to_value(compare::Summary {
        source: "text".into(),
        page_size_bytes: 4096,
        zram_unavailable: None,
        configurations: &rows,
        paging: &[],
        paging_unavailable: &[],
    })
    .unwrap();
    let first = &json["configurations"][0];
    for field in [
        "name",
        "kind",
        "pages",
        "original_bytes",
        "memory_bytes",
        "compressed_bytes",
        "same_filled_pages",
        "ratio",
        "threads",
        "request_bytes",
        "store_mib_s",
        "load_mib_s",
        "store_p50_us",
        "store_p99_us",
        "load_p50_us",
        "load_p99_us",
        "verified_pages",
        "memory_vs_lzo_rle",
        "store_vs_lzo_rle",
        "load_vs_lzo_rle",
        "unit_bytes",
        "block_bytes",
        "load_pattern",
        "load_folio_mib_s",
        "load_fault_around_mib_s",
        "load_single_page_mib_s",
    ] {
        assert!(first.get(field).is_some(), "{field}");
    }
    assert_eq!(first.as_object().unwrap().len(), 26);
    assert_eq!(first["load_pattern"], compare::PATTERN_IN_ORDER);
    assert_eq!(first["unit_bytes"], serde_json::Value::Null);
    assert_eq!(
        json["configurations"][1]["load_pattern"],
        compare::PATTERN_ZRAM
    );
    assert_eq!(first["memory_bytes"], acomp.memory_bytes);
    assert_eq!(
        json["configurations"][1]["store_p50_us"],
        serde_json::Value::Null
    );
    assert_eq!(json["configurations"][1]["request_bytes"], 1 << 20);

    // Without a zram lzo-rle row there is nothing to judge against.
    let mut alone = vec![acomp];
    compare::against_lzo_rle(&mut alone);
    assert_eq!(alone[0].memory_vs_lzo_rle, None);
    assert_eq!(compare::goal(&alone[0]), None);
}

/// Pages as a unit store meets them, `pages` of them: text-like pages that repeat across a
/// unit, a zero page now and then, an incompressible page; a unit of 16 zero pages (all
/// same-filled) at 16..32 and one of 16 random pages (incompressible) at 32..48 where there
/// is room.
fn unit_input(pages: usize) -> Input {
    let mut rng = StdRng::seed_from_u64(11);
    let mut data = Vec::with_capacity(pages * PAGE_SIZE);
    for i in 0..pages {
        let mut page = [0u8; PAGE_SIZE];
        match i {
            16..32 => {}
            32..48 => rng.fill(&mut page[..]),
            _ if i % 5 == 2 => {}
            _ if i % 7 == 3 => rng.fill(&mut page[..]),
            _ => {
                let line = format!("object {} of kind {} at {:#x}; ", i % 3, i % 11, i * 64);
                for (b, c) in page.iter_mut().zip(line.bytes().cycle()) {
                    *b = c;
                }
                page[rng.random_range(0..PAGE_SIZE)] = rng.random();
            }
        }
        data.extend_from_slice(&page);
    }
    Input::from_bytes("units".into(), data)
}

fn unit_store() -> acomp_zswap::Zswap {
    let params = acomp::ZstdParams::default().block_size_max(4096);
    units::tier(Acomp::with_zstd(params).unwrap())
}

/// Pages `first..first + n` of `input`, as pages.
fn input_pages(input: &Input, first: usize, n: usize) -> &[Page] {
    input.pages(first, n).as_chunks::<PAGE_SIZE>().0
}

#[test]
fn units_of_every_size_come_back_page_by_page_and_whole() {
    // Not whole units: the last unit of every size is cut short.
    let input = unit_input(16 * 6 + 7);
    let n = input.len();
    for unit_pages in [1, 2, 4, 8, 16, 32, 64] {
        let store = unit_store();
        let units = n.div_ceil(unit_pages);
        let unit_len = |u: usize| unit_pages.min(n - u * unit_pages);
        let mut kinds = Vec::new();
        for u in 0..units {
            let first = u * unit_pages;
            kinds.push(
                store
                    .store_folio(first as u64, input_pages(&input, first, unit_len(u)))
                    .unwrap(),
            );
        }
        assert!(kinds.contains(&FolioKind::Frame), "{unit_pages}");
        if unit_pages <= 16 {
            assert!(kinds.contains(&FolioKind::SameFilled), "{unit_pages}");
            assert!(kinds.contains(&FolioKind::Pages), "{unit_pages}");
        }
        let c = store.stats();
        assert_eq!(c.stored_pages, n as u64);
        assert_eq!(c.held_folio_pages, 0);
        let mut order: Vec<usize> = (0..n).collect();
        order.shuffle(&mut StdRng::seed_from_u64(unit_pages as u64));
        for i in order {
            let mut page = Box::new([0x5A; PAGE_SIZE]);
            store.load(i as u64, &mut page).unwrap();
            assert_eq!(*page, *input.page(i), "{unit_pages}-page units, page {i}");
        }
        let mut buf = vec![[0x5A; PAGE_SIZE]; unit_pages];
        for u in 0..units {
            let first = u * unit_pages;
            store
                .load_folio(first as u64, &mut buf[..unit_len(u)])
                .unwrap();
            assert!(
                buf[..unit_len(u)] == *input_pages(&input, first, unit_len(u)),
                "{unit_pages}-page units, unit {u}"
            );
        }
        let mut page = Box::new([0; PAGE_SIZE]);
        assert!(matches!(
            store.load(n as u64, &mut page),
            Err(LoadError::NotFound)
        ));
        for i in 0..n {
            assert!(store.invalidate(i as u64));
        }
        assert!(!store.invalidate(0));
        let c = store.stats();
        assert_eq!(
            (
                c.stored_pages,
                c.stored_folios,
                c.stored_bytes,
                c.pool_total_size
            ),
            (0, 0, 0, 0)
        );
    }
}

#[test]
fn frames_larger_than_a_page_are_kept_in_page_sized_objects() {
    let input = unit_input(16);
    let store = unit_store();
    assert_eq!(
        store.store_folio(0, input_pages(&input, 0, 16)).unwrap(),
        FolioKind::Frame
    );
    let c = store.stats();
    assert!(c.stored_bytes > PAGE_SIZE as u64, "{c:?}");
    // A backing page for each whole page of the frame, and the tail's class's zspage (of up
    // to 8 pages, most of it free for other tails).
    let whole = c.stored_bytes / PAGE_SIZE as u64;
    let pages = c.pool_total_size / PAGE_SIZE as u64;
    assert!((whole + 1..=whole + 8).contains(&pages), "{c:?}");
    for k in [0, 7, 15] {
        let mut page = Box::new([0; PAGE_SIZE]);
        store.load(k, &mut page).unwrap();
        assert_eq!(*page, *input.page(k as usize));
    }
}

#[test]
fn invalidating_a_page_keeps_its_unit_until_all_are_gone() {
    let input = unit_input(48);
    let store = unit_store();
    for u in 0..3 {
        store
            .store_folio(u * 16, input_pages(&input, u as usize * 16, 16))
            .unwrap();
    }
    // Unit 0 is a frame: held, counted, until its last page goes.
    let full = store.stats();
    let frame_bytes = full.stored_bytes - 16 * PAGE_SIZE as u64;
    for k in 0..15 {
        assert!(store.invalidate(k));
        let c = store.stats();
        assert_eq!(c.held_folio_pages, k + 1);
        assert_eq!(c.held_folio_bytes, frame_bytes);
        assert_eq!(c.pool_total_size, full.pool_total_size);
        assert_eq!(c.stored_pages, 48 - k - 1);
        let mut page = Box::new([0; PAGE_SIZE]);
        assert!(matches!(store.load(k, &mut page), Err(LoadError::NotFound)));
        store.load(15, &mut page).unwrap();
        assert_eq!(*page, *input.page(15));
    }
    assert!(store.invalidate(15));
    let c = store.stats();
    assert_eq!(
        (c.held_folio_pages, c.held_folio_bytes, c.stored_folios),
        (0, 0, 0)
    );
    // Unit 2 is random: page by page, each freed at once.
    assert_eq!(c.stored_incompressible_pages, 16);
    let pages = c.pool_total_size;
    assert!(store.invalidate(32));
    let c = store.stats();
    assert_eq!(
        (
            c.stored_incompressible_pages,
            c.pool_total_size,
            c.held_folio_pages
        ),
        (15, pages - PAGE_SIZE as u64, 0)
    );
    // Unit 1 is zeros: no memory at all.
    assert_eq!(c.same_filled_pages, 16);
    for i in 16..48 {
        store.invalidate(i);
    }
    let c = store.stats();
    assert_eq!((c.stored_pages, c.pool_total_size), (0, 0));
}

#[test]
fn unit_runs_verify_every_page_and_leave_nothing() {
    let input = unit_input(16 * 4 + 5);
    let configs = units::configs(&[16, 4], &[3], &[4096], true);
    let runs = units::run_all(&configs, &input, 1).unwrap();
    assert_eq!(
        runs.iter().map(|r| r.unit_pages).collect::<Vec<_>>(),
        [1, 4, 16, 1, 4, 16]
    );
    for r in &runs {
        assert_eq!(r.verified_pages, input.len(), "{}", r.tag());
        assert_eq!(r.pool_pages_at_end, 0, "{}", r.tag());
        assert_eq!(r.stored.stored_pages, input.len() as u64);
        assert_eq!(r.pool_pages_at_end, 0, "{}", r.tag());
        let row = r.row();
        assert_eq!(row.verified_pages, row.pages);
        assert_eq!(row.unit_bytes, Some((r.unit_pages * PAGE_SIZE) as u64));
        assert_eq!(row.load_pattern, compare::PATTERN_FOLIO);
        assert!(row.load_single_page_mib_s.is_some() && row.load_fault_around_mib_s.is_some());
        // Pattern 2 decodes each frame unit once, and serves its other pages from the cache.
        assert!(r.cache_misses <= r.stored.stored_folios + 64, "{}", r.tag());
    }
    assert_eq!(runs[0].row().name, "acomp zstd level 3, 4K units");
    assert_eq!(runs[2].row().name, "acomp zstd level 3, 64K units");
    assert_eq!(runs[5].row().name, "acomp lz4, 64K units");
    assert!(units::configs(&[], &[3], &[4096], true).is_empty());
    // A row per level, block size and unit size; 4K units once per level.
    let grid = units::configs(&[16], &[-1, 1], &[4096, 131072], false);
    assert_eq!(grid.len(), 6);
    assert_eq!(grid[1].name(), "acomp zstd level -1, 64K units", "{grid:?}");
    assert_eq!(
        grid[2].name(),
        "acomp zstd level -1, 64K units, 128K blocks"
    );
    assert_eq!(units::parse_unit("64K"), Ok(16));
    assert_eq!(units::parse_unit("4k"), Ok(1));
    for bad in ["0K", "12K", "512K", "64", "K", "64M"] {
        assert!(units::parse_unit(bad).is_err(), "{bad}");
    }
    assert_eq!(units::parse_block("4K"), Ok(4096));
    assert!(units::parse_block("256K").is_err());
}

/// The bytes page `i` holds after `version` rewrites: distinct for every page and version.
fn versioned_page(i: usize, version: u32) -> Box<Page> {
    let mut page: Box<Page> = Box::new([0; PAGE_SIZE]);
    let line = format!("page {i} version {version}; ");
    for (b, c) in page.iter_mut().zip(line.bytes().cycle()) {
        *b = c;
    }
    page
}

/// One check of the cache's invalidation, run on zstd (range reads) and lz4 (none) units:
/// threads own disjoint pages of the same units (page `i` belongs to thread `i % threads`)
/// and each stores its pages again on their own, invalidates them, and now and then loads
/// them through its own cache of decoded units, whose entries the other threads' writes
/// to the same units keep in use; every load is checked against the version the thread
/// last stored. Then, on one thread, whole units are stored again and loaded through a
/// cache holding their old content.
fn cache_never_serves_stale_bytes(tfm: Acomp) {
    const UNIT: usize = 16;
    const UNITS: usize = 6;
    const THREADS: usize = 4;
    let n = UNIT * UNITS;
    let store = units::tier(tfm);
    let unit_bytes = |version: u32, u: usize| -> Vec<Page> {
        (u * UNIT..(u + 1) * UNIT)
            .map(|i| *versioned_page(i, version))
            .collect()
    };
    for u in 0..UNITS {
        assert_eq!(
            store
                .store_folio((u * UNIT) as u64, &unit_bytes(0, u))
                .unwrap(),
            FolioKind::Frame
        );
    }
    std::thread::scope(|s| {
        for t in 0..THREADS {
            let store = &store;
            s.spawn(move || {
                let mine: Vec<usize> = (t..n).step_by(THREADS).collect();
                // `Some(v)`: page stored with version v; `None`: invalidated.
                let mut now: Vec<Option<u32>> = vec![Some(0); n];
                let mut cache = cache::UnitCache::new(2, UNIT * PAGE_SIZE);
                let mut rng = StdRng::seed_from_u64(t as u64);
                let mut page: Box<Page> = Box::new([0; PAGE_SIZE]);
                let check = |i: usize, now: &[Option<u32>], cache: &mut cache::UnitCache| {
                    let mut page: Box<Page> = Box::new([0xA5; PAGE_SIZE]);
                    let res = units::load_page_cached(store, i as u64, &mut page, cache);
                    match now[i] {
                        Some(v) => {
                            assert!(res.is_ok(), "thread {t}, page {i}: {res:?}");
                            assert!(
                                *page == *versioned_page(i, v),
                                "thread {t}: page {i} is stale (want version {v})"
                            );
                        }
                        None => assert!(
                            matches!(res, Err(LoadError::NotFound)),
                            "thread {t}, page {i}"
                        ),
                    }
                };
                for round in 1..=300u32 {
                    // Fill the cache with this thread's units first, so that what follows
                    // meets cached copies.
                    for &i in mine.iter().filter(|&&i| now[i].is_some()).take(3) {
                        check(i, &now, &mut cache);
                    }
                    let &i = mine.choose(&mut rng).unwrap();
                    match rng.random_range(0..3) {
                        0 => {
                            store.store(i as u64, &versioned_page(i, round)).unwrap();
                            now[i] = Some(round);
                        }
                        1 => {
                            assert_eq!(store.invalidate(i as u64), now[i].is_some());
                            now[i] = None;
                        }
                        _ => {
                            if now[i].is_none() {
                                store.store(i as u64, &versioned_page(i, round)).unwrap();
                                now[i] = Some(round);
                            }
                        }
                    }
                    check(i, &now, &mut cache);
                    // And through the uncached path and the whole unit's load, the same.
                    if let Some(v) = now[i] {
                        store.load(i as u64, &mut page).unwrap();
                        assert!(*page == *versioned_page(i, v), "uncached page {i}");
                    }
                }
                for &i in &mine {
                    check(i, &now, &mut cache);
                    store.invalidate(i as u64);
                }
            });
        }
    });
    assert_eq!(
        (store.stats().stored_pages, store.stats().pool_total_size),
        (0, 0)
    );

    // Whole units stored again: a cache holding the old generation must not serve it.
    let mut cache = cache::UnitCache::new(2, UNIT * PAGE_SIZE);
    let mut page: Box<Page> = Box::new([0; PAGE_SIZE]);
    for version in 1..=3u32 {
        for u in 0..2 {
            store
                .store_folio((u * UNIT) as u64, &unit_bytes(version, u))
                .unwrap();
        }
        for i in 0..2 * UNIT {
            units::load_page_cached(&store, i as u64, &mut page, &mut cache).unwrap();
            assert!(
                *page == *versioned_page(i, version),
                "page {i}, unit stored again"
            );
        }
    }
    assert!(cache.hits > 0 && cache.misses >= 6, "{cache:?}");
    // A unit whose every page was stored again on its own: its frame goes, its pages stay.
    for i in 0..UNIT {
        store.store(i as u64, &versioned_page(i, 9)).unwrap();
    }
    assert_eq!(store.stats().stored_folios, 1);
    let mut unit = vec![[0u8; PAGE_SIZE]; UNIT];
    store.load_folio(0, &mut unit).unwrap();
    for (i, got) in unit.iter().enumerate() {
        assert!(*got == *versioned_page(i, 9));
        units::load_page_cached(&store, i as u64, &mut page, &mut cache).unwrap();
        assert!(*page == *versioned_page(i, 9));
    }
    for i in 0..2 * UNIT {
        assert!(store.invalidate(i as u64));
    }
    assert_eq!(
        (store.stats().stored_pages, store.stats().pool_total_size),
        (0, 0)
    );
}

#[test]
fn unit_cache_never_serves_stale_bytes_zstd() {
    cache_never_serves_stale_bytes(
        Acomp::with_zstd(
            acomp::ZstdParams::default()
                .level(-1)
                .block_size_max(128 << 10),
        )
        .unwrap(),
    );
}

#[test]
fn unit_cache_never_serves_stale_bytes_lz4() {
    cache_never_serves_stale_bytes(Acomp::new("lz4").unwrap());
}

/// Pages shaped like a heap's: records of a header, a pointer into one range and a word.
fn heap_like(pages: u64) -> Vec<u8> {
    let mut rng = StdRng::seed_from_u64(14);
    let words = ["__init__", "return", "kwargs", "append", "module", "object"];
    let mut data = Vec::new();
    for _ in 0..pages {
        let mut page = Vec::with_capacity(PAGE_SIZE + 64);
        while page.len() < PAGE_SIZE {
            page.extend_from_slice(&[0x31 + rng.random_range(0..3u8), 0, 0, 0, 0x51, 0, 0, 0]);
            let ptr = 0x7f3a_5c00_0000u64 + rng.random_range(0..4096u64) * 16;
            page.extend_from_slice(&ptr.to_le_bytes());
            page.extend_from_slice(words[rng.random_range(0..words.len())].as_bytes());
            page.resize(page.len().next_multiple_of(8), 0);
        }
        data.extend_from_slice(&page[..PAGE_SIZE]);
    }
    data
}

#[test]
fn dict_trains_on_the_first_half_and_stores_the_second_with_and_without_it() {
    let input = Input::from_bytes("heap-like".into(), heap_like(400));
    let t = dict::train(&input, 4, 16 << 10).unwrap();
    assert_eq!((t.held_out_from, t.sample_pages), (200, 50));
    assert!(dict::describe(&t, 4).contains("from 50 pages (0.2 MiB: every 4th page"));
    let held = dict::held_out(&input, &t);
    assert_eq!(held.len(), 200);
    assert_eq!(held.page(0), input.page(200));
    let rows = dict::held_out_rows(&held, &t).unwrap();
    let names: Vec<&str> = rows.iter().map(|r| r.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "held-out L1",
            "held-out L1 +dict",
            "held-out L3",
            "held-out L3 +dict",
            "held-out L8",
            "held-out L8 +dict"
        ]
    );
    for r in &rows {
        assert_eq!(r.verified_pages, 200, "{}", r.name);
    }
    for pair in rows.chunks_exact(2) {
        assert!(
            pair[1].compressed_bytes < pair[0].compressed_bytes,
            "{}",
            pair[1].name
        );
    }
}

#[test]
fn dict_from_too_few_pages_is_an_error() {
    let input = Input::from_bytes("tiny".into(), heap_like(6));
    let err = dict::train(&input, 1, 64 << 10).unwrap_err();
    assert!(matches!(err, acomp::Error::Dictionary { .. }), "{err}");
}

#[test]
fn lz4_dictionary_trial_counts_liblz4_blocks_and_round_trips() {
    let input = Input::from_bytes("heap-like".into(), heap_like(400));
    let t = dict::train(&input, 4, 16 << 10).unwrap();
    let held = dict::held_out(&input, &t);
    let trial = lz4dict::trial(&held, t.dict.as_bytes());
    assert_eq!(trial.pages, 200);
    assert_eq!(trial.dict_bytes, t.dict.as_bytes().len());
    // Without the dictionary: the blocks acomp's lz4 writes (liblz4, acceleration 1).
    let lz4 = Acomp::new("lz4").unwrap();
    let mut block = vec![0u8; PAGE_SIZE];
    let plain: usize = (0..held.len())
        .map(|i| {
            lz4.compress_to_buffer(&held.page(i)[..], &mut block)
                .unwrap()
        })
        .sum();
    assert_eq!(trial.bytes[0], plain);
    assert!(trial.bytes[1] < plain, "{trial:?}");
}

/// The default input: files picked among those under the folders, each padded to whole
/// pages, at most `file_max` of each, up to the budget; an error where no file is there.
#[test]
fn sample_files_pads_each_file_and_keeps_to_the_budget() {
    let dir = std::env::temp_dir().join(format!("acomp-zswap-sample-{}", std::process::id()));
    std::fs::create_dir_all(dir.join("sub")).unwrap();
    std::fs::write(dir.join("a"), vec![b'a'; 5000]).unwrap();
    std::fs::write(dir.join("sub/b"), vec![b'b'; 10]).unwrap();
    std::fs::write(dir.join("empty"), b"").unwrap();
    let d = dir.to_str().unwrap();

    let all = Input::sample_files(&[d], 1 << 20, 1 << 20, 1).unwrap();
    assert_eq!(all.len(), 3, "2 pages of a, 1 of b");
    assert_eq!(all.padding, (8192 - 5000) + (4096 - 10));
    assert_eq!(all.path.to_str().unwrap(), format!("2 files under {d}"));
    assert_eq!(&all.page(0)[..], &[b'a'; 4096][..]);
    assert_eq!(&all.page(1)[..904], &[b'a'; 904][..]);
    assert!(all.page(1)[904..].iter().all(|&b| b == 0));
    assert_eq!(&all.page(2)[..10], b"bbbbbbbbbb");

    // At most 100 bytes of each file: a page each.
    let capped = Input::sample_files(&[d], 1 << 20, 100, 1).unwrap();
    assert_eq!((capped.len(), capped.padding), (2, 2 * 4096 - 100 - 10));
    // A budget of one page: one file, the first picked.
    let one = Input::sample_files(&[d], 4096, 1 << 20, 1).unwrap();
    assert_eq!(one.len(), 1);

    let none = Input::sample_files(&[dir.join("missing").to_str().unwrap()], 4096, 4096, 1);
    assert!(none.is_err());
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn frontier_and_plot_of_rows() {
    let input = Input::from_bytes("text".into(), b"a page of text, ".repeat(16 * 256));
    let base = compare::acomp_row("acomp zstd level 3", &zswap(), &input);
    let row = |name: &str, kind: &str, memory: u64, store: f64, load: f64| compare::Row {
        name: name.into(),
        kind: kind.into(),
        memory_bytes: memory,
        store_mib_s: store,
        load_mib_s: load,
        load_folio_mib_s: (kind == "acomp").then_some(load),
        load_single_page_mib_s: (kind == "acomp").then_some(load / 10.0),
        unit_bytes: (kind == "acomp").then_some(65536),
        ..base.clone()
    };
    let rows = vec![
        row("zram lzo-rle", "zram", 100 << 20, 400.0, 900.0),
        row("zram lz4", "zram", 110 << 20, 390.0, 1300.0),
        // Beats lzo-rle on all three; lz4 stays on the frontier by its load.
        row(
            "acomp zstd level -1, 256K units, 128K blocks",
            "acomp",
            58 << 20,
            450.0,
            1000.0,
        ),
        // Beaten by the row above on all three.
        row(
            "acomp zstd level 1, 256K units, 128K blocks",
            "acomp",
            60 << 20,
            300.0,
            600.0,
        ),
        // Least memory: on the frontier whatever its speed.
        row(
            "acomp zstd level 3, 256K units, 128K blocks",
            "acomp",
            50 << 20,
            100.0,
            200.0,
        ),
    ];
    assert_eq!(plot::frontier(&rows), [4, 2, 1]);
    assert_eq!(plot::short(&rows[2].name), "zstd -1 256K/128K");
    assert_eq!(plot::short("acomp lz4, 64K units"), "lz4 64K");
    assert!(patterns::dominates(&rows[2], &rows[0], patterns::folio));
    assert!(!patterns::dominates(
        &rows[2],
        &rows[0],
        patterns::single_page
    ));
    let path = std::env::temp_dir().join(format!("zswap-plot-{}.svg", std::process::id()));
    plot::draw(&rows, "test", &path).unwrap();
    let svg = std::fs::read_to_string(&path).unwrap();
    std::fs::remove_file(&path).unwrap();
    assert!(svg.starts_with("<svg") && svg.contains("zram lzo-rle") && svg.contains("frontier"));
    assert!(plot::draw(&[], "test", &path).is_err());
}

#[test]
fn recompress_spec_parses_levels_and_dict() {
    use zswap_main::recomp::{Spec, parse_spec};
    assert_eq!(
        parse_spec("9+dict"),
        Ok(Spec {
            level: 9,
            dict: true
        })
    );
    assert_eq!(
        parse_spec("-3"),
        Ok(Spec {
            level: -3,
            dict: false
        })
    );
    assert!(parse_spec("0").is_err());
    assert!(parse_spec("23").is_err());
    assert!(parse_spec("9+lz4").is_err());
    assert!(parse_spec("nine").is_err());
}

/// The `--recompress` row: every page back, one in ten hot, the rest recompressed (text
/// pages: zstd's frames are classes smaller than lz4's), bytes saved, and its JSON object carries the figures beside the usual fields.
#[test]
fn recompress_row_on_text_pages() {
    use zswap_main::recomp::{HOT_EVERY, Spec, row};
    let phrase = b"idle pages go to zstd, hot ones stay in lz4; ";
    let text: Vec<u8> = (0..64 * 4096)
        .map(|i: usize| phrase[i % phrase.len()] ^ (i / 4096) as u8)
        .collect();
    let input = Input::from_bytes("text".into(), text);
    let r = row(
        &input,
        Spec {
            level: 3,
            dict: false,
        },
    )
    .unwrap();
    assert_eq!((r.pages, r.verified_pages), (64, 64));
    let f = r.recompress.as_ref().unwrap();
    assert_eq!(f.hot_pages, 64_u64.div_ceil(HOT_EVERY as u64));
    assert_eq!(
        f.recompressed_pages + f.recompress_skipped_pages,
        64 - f.hot_pages
    );
    assert!(f.recompressed_pages > 0);
    // (Memory itself may not fall in a pool of a few backing pages: the hot pages keep the
    // lz4 classes' zspages, and the zstd classes take new ones.)
    assert!(f.recompress_saved_bytes > 0);
    let json = serde_json::to_value(&r).unwrap();
    for key in [
        "memory_bytes",
        "store_mib_s",
        "load_hot_mib_s",
        "load_cold_mib_s",
    ] {
        assert!(json[key].is_number(), "{key} in {json}");
    }
    assert!(json["name"].as_str().unwrap().contains("recompress"));
}
