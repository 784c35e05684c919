//! `--under-budget`'s parts: the memory controller's choice, the stream, the write rule,
//! the records' checks, the pager's sizing, the JSON rows and the plot, without root; and
//! one small run of the pager's side where userfaultfd is allowed (else skipped, saying
//! why).

mod common;

use std::path::{Path, PathBuf};

use acomp_zswap::PAGE_SIZE;
use zswap_main::budget::{self, Measured, Point, Records, Spec};
use zswap_main::cgroup::{self, Hierarchy, Version};
use zswap_main::swap::Anon;
use zswap_main::{budgetkernel, budgetplot, compare, paging};

/// This machine's kind of mountinfo: cgroup v1 hierarchies, `memory` among them, and an
/// empty cgroup v2 hierarchy beside them.
const HYBRID: &str = "\
31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755
32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu
35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory
40 31 0:37 / /sys/fs/cgroup/systemd rw,relatime - cgroup cgroup rw,name=systemd
41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw
";

/// A systemd system on cgroup v2 alone (with optional fields before the separator).
const UNIFIED: &str = "\
22 1 259:2 / / rw,relatime shared:1 - ext4 /dev/nvme0n1p2 rw
35 24 0:30 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:9 - cgroup2 cgroup2 rw,nsdelegate
";

fn files(map: &'static [(&'static str, &'static str)]) -> impl Fn(&Path) -> Option<String> {
    move |p: &Path| {
        map.iter()
            .find(|(path, _)| Path::new(path) == p)
            .map(|(_, text)| (*text).to_owned())
    }
}

#[test]
fn the_memory_controller_is_v1s_where_mounted_else_a_delegating_v2() {
    let none = files(&[]);
    assert_eq!(
        cgroup::hierarchy(HYBRID, &none),
        Ok(Hierarchy {
            version: Version::V1,
            root: PathBuf::from("/sys/fs/cgroup/memory"),
        })
    );
    let delegating = files(&[(
        "/sys/fs/cgroup/cgroup.subtree_control",
        "cpu io memory pids\n",
    )]);
    let v2 = cgroup::hierarchy(UNIFIED, &delegating).unwrap();
    assert_eq!(
        v2,
        Hierarchy {
            version: Version::V2,
            root: PathBuf::from("/sys/fs/cgroup"),
        }
    );
    assert_eq!(
        v2.cgroup_dir("acomp-budget-7"),
        PathBuf::from("/sys/fs/cgroup/acomp-budget-7")
    );
    assert_eq!(Version::V1.limit_file(), "memory.limit_in_bytes");
    assert_eq!(Version::V1.usage_file(), "memory.usage_in_bytes");
    assert_eq!(Version::V2.limit_file(), "memory.max");
    assert_eq!(Version::V2.usage_file(), "memory.current");

    // v2 whose root keeps `memory` to itself (`memorys` is not `memory`).
    let keeping = files(&[("/sys/fs/cgroup/cgroup.subtree_control", "cpu memorys\n")]);
    assert_eq!(
        cgroup::hierarchy(UNIFIED, &keeping),
        Err(
            "no cgroup v1 memory hierarchy, and /sys/fs/cgroup/cgroup.subtree_control has \
             no `memory` (cgroup v2's memory controller not enabled for child cgroups)"
                .into()
        )
    );
    // The hybrid's v2 hierarchy is not taken without v1's memory either.
    let without_memory = HYBRID.replace("rw,memory", "rw,blkio");
    assert_eq!(
        cgroup::hierarchy(&without_memory, &none).unwrap_err(),
        "no cgroup v1 memory hierarchy, and /sys/fs/cgroup/unified/cgroup.subtree_control has \
         no `memory` (cgroup v2's memory controller not enabled for child cgroups)"
    );
    assert_eq!(
        cgroup::hierarchy("22 1 259:2 / / rw - ext4 /dev/vda rw\n", &none).unwrap_err(),
        "no memory cgroup controller mounted (neither cgroup v1's `memory` nor cgroup v2)"
    );
}

#[test]
fn the_kernel_side_says_why_it_cannot_run() {
    let dir = std::env::temp_dir().join(format!("zswap-budget-sysfs-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("class/zram-control")).unwrap();
    std::fs::write(dir.join("class/zram-control/hot_add"), "").unwrap();
    let v1 = cgroup::hierarchy(HYBRID, &files(&[]));
    assert_eq!(
        budgetkernel::unavailable(&dir, 1000, &v1).as_deref(),
        Some("zram as swap needs root to create a device (running as uid 1000)")
    );
    assert_eq!(budgetkernel::unavailable(&dir, 0, &v1), None);
    assert_eq!(
        budgetkernel::unavailable(&dir, 0, &Err("no memory cgroup".into())).as_deref(),
        Some("no memory cgroup")
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn the_stream_is_the_seeds_zipf_order_warm_up_then_timed() {
    let s = budget::stream(1000, 0.99, 5);
    assert_eq!(s.warm_up.len(), 1000);
    assert_eq!(s.timed.len(), 4000);
    let all = paging::zipf_order(1000, 5000, 0.99, 5);
    assert_eq!(s.warm_up, all[..1000]);
    assert_eq!(s.timed, all[1000..]);
    assert_eq!(s, budget::stream(1000, 0.99, 5));
    assert_ne!(s, budget::stream(1000, 0.99, 6));
    assert_ne!(s, budget::stream(1000, 0.8, 5));
    // Values from the Python implementation behind tests/paging.rs's: the first draws for
    // 10 records and seed 1 are those of the Zipf order.
    assert_eq!(
        budget::stream(10, 0.99, 1).warm_up,
        [0, 1, 9, 9, 0, 5, 8, 6, 1, 6]
    );
    assert_eq!(
        budget::stream(10, 0.99, 1).timed[..10],
        [1, 1, 6, 9, 8, 0, 9, 0, 0, 4]
    );
}

#[test]
fn one_access_in_ten_writes() {
    let writing: Vec<u64> = (0..50).filter(|&n| budget::writes(n)).collect();
    assert_eq!(writing, [9, 19, 29, 39, 49]);
    assert_eq!((0..1000).filter(|&n| budget::writes(n)).count(), 100);
}

/// An anonymous mapping of `pages` pages (the main job's, as its kernel side maps them).
fn anon(pages: usize) -> Anon {
    Anon::new(pages * PAGE_SIZE).unwrap()
}

#[test]
fn an_access_checks_the_record_and_every_tenth_writes_its_counter() {
    assert_eq!(
        budget::hash(&[]),
        0x2D06_8005_38D3_94C2,
        "xxh3's empty input"
    );
    let anon = anon(4);
    // SAFETY: `anon` is 4 pages, readable and writable, alive until the end of the test,
    // used by this thread and `recs` alone (the test reads them only between accesses).
    let mut recs = unsafe { Records::new(anon.ptr(), 4) };
    assert_eq!(recs.len(), 4);
    let data = common::pages(4);
    for (i, page) in data.chunks_exact(PAGE_SIZE).enumerate() {
        recs.set(i, page);
    }
    let record = |i: usize| {
        // SAFETY: page `i` of the mapping, not written while this copy is made.
        unsafe { std::slice::from_raw_parts(anon.ptr().add(i * PAGE_SIZE), PAGE_SIZE) }.to_vec()
    };
    // Accesses 0 to 8 read only.
    assert_eq!(recs.run(&[2, 2, 1, 0, 3, 2, 2, 1, 0], 0), 0);
    assert_eq!(record(2), data[2 * PAGE_SIZE..3 * PAGE_SIZE]);
    // Access 9 writes 9 at the counter's offset, and the record still checks.
    assert!(recs.access(2, 9));
    let mut want = data[2 * PAGE_SIZE..3 * PAGE_SIZE].to_vec();
    let at = budget::COUNTER_OFFSET;
    want[at..at + 8].copy_from_slice(&9u64.to_ne_bytes());
    assert_eq!(record(2), want);
    assert!(recs.access(2, 10));
    // A record changed behind the side's back reads wrong, once per access.
    // SAFETY: a byte of record 3, no access running.
    unsafe { *anon.ptr().add(3 * PAGE_SIZE + 100) ^= 1 };
    assert_eq!(recs.run(&[3, 0, 3], 11), 2);
    // A record kept as it is now checks again.
    recs.keep(3);
    assert!(recs.access(3, 14));
}

#[test]
fn the_kernels_limit_is_the_budgets_percent_of_the_records_in_pages() {
    // The kernel's limit: 40% of 65536 pages is 26214.4, down to 26214 pages.
    assert_eq!(budget::limit_bytes(65_536, 40), 26_214 * 4096);
    assert_eq!(budget::limit_bytes(65_536, 100), 65_536 * 4096);
}

fn point(side: &'static str, percent: u8, zipf: f64, ops: f64, memory: u64) -> Point {
    Point {
        side,
        spec: Spec {
            budget_percent: percent,
            zipf,
            seed: 1,
        },
        measured: Measured {
            ops_per_s: ops,
            memory_bytes: memory,
            resident_bytes: memory - 1000,
            store_bytes: 1000,
            limit_bytes: memory,
            swap_ins: 12,
            swap_readahead: 0,
            faults: 34,
            wrong_records: 0,
        },
    }
}

#[test]
fn the_json_rows_have_the_issues_fields() {
    let points = [
        point(budget::SIDE_KERNEL, 40, 0.99, 1000.0, 4 << 20),
        point(budget::SIDE_PAGER, 40, 0.99, 1500.0, 3 << 20),
    ];
    let rows: Vec<budget::Row> = points.iter().map(Point::row).collect();
    let summary = compare::Summary {
        source: "pages".into(),
        page_size_bytes: 4096,
        budget: &rows,
        budget_unavailable: &["budget kernel: not measured: why".to_owned()],
        ..Default::default()
    };
    let v: serde_json::Value = serde_json::to_value(&summary).unwrap();
    assert_eq!(
        v["budget"][1],
        serde_json::json!({
            "kind": "budget",
            "side": "pager",
            "budget_percent": 40,
            "zipf": 0.99,
            "ops_per_s": 1500.0,
            "memory_bytes": 3145728,
            "swap_ins": 12,
            "faults": 34,
            "wrong_records": 0
        })
    );
    assert_eq!(v["budget"][0]["side"], "kernel");
    assert_eq!(
        v["budget_unavailable"][0],
        "budget kernel: not measured: why"
    );
    // The pager's ratios to the kernel's of the same budget and exponent only.
    assert_eq!(budget::ratios(&points, &points[1]), Some((1.5, 0.75)));
    assert_eq!(budget::ratios(&points, &points[0]), None);
    assert_eq!(budget::ratios(&points[1..], &points[1]), None);
}

#[test]
fn the_budget_plot_sits_beside_the_plot() {
    assert_eq!(
        budgetplot::path(Path::new("/tmp/x/budget.svg")),
        PathBuf::from("/tmp/x/budget-budget.svg")
    );
    assert_eq!(
        budgetplot::path(Path::new("plot")),
        PathBuf::from("plot-budget")
    );
    let points = [
        point(budget::SIDE_KERNEL, 40, 0.99, 1000.0, 4 << 20),
        point(budget::SIDE_PAGER, 40, 0.99, 1500.0, 3 << 20),
    ];
    assert_eq!(budgetplot::label(&points[0]), "40% s=0.99");
    let file = std::env::temp_dir().join(format!("zswap-budget-{}.svg", std::process::id()));
    budgetplot::draw(&points, "test", &file).unwrap();
    let svg = std::fs::read_to_string(&file).unwrap();
    std::fs::remove_file(&file).unwrap();
    assert!(svg.contains("kernel 40% s=0.99") && svg.contains("pager 40% s=0.99"));
    assert_eq!(
        budgetplot::draw(&[], "test", &file).unwrap_err(),
        "no budget points to plot"
    );
}

#[test]
fn the_child_refuses_a_bad_spec() {
    let e = budgetkernel::child("{}").unwrap_err();
    assert!(e.starts_with("the child's spec: missing field"), "{e}");
}

#[test]
fn the_pager_side_reads_every_record_right_under_half_their_bytes() {
    if common::pager_refused().is_some() {
        return;
    }
    let n = 512;
    let data = common::pages(n);
    let memory = budget::limit_bytes(n as u64, 50);
    let spec = Spec {
        budget_percent: 50,
        zipf: 0.99,
        seed: 3,
    };
    for side in &budget::PAGER_SIDES {
        let m = budget::pager_side(&data, &spec, memory, side).unwrap();
        assert_eq!(m.wrong_records, 0);
        assert!(m.swap_ins > 0, "{m:?}");
        // Each swap-in is a fault's own page or one fault-around brought beside it.
        assert!(m.swap_readahead <= m.swap_ins, "{m:?}");
        assert!(m.faults >= m.swap_ins - m.swap_readahead, "{m:?}");
        assert_eq!(m.limit_bytes, memory * side.memory_percent / 100, "{m:?}");
        assert_eq!(m.memory_bytes, m.resident_bytes + m.store_bytes);
        assert!(m.ops_per_s > 0.0);
    }
}
