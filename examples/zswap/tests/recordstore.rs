//! `--record-store`'s parts: the streams, the records' stamps and checks, the JSON rows and
//! the ratios, without root; one small run of plain memory's side, and of the pager's two
//! where userfaultfd is allowed (else skipped, saying why).

mod common;

use acomp_zswap::PAGE_SIZE;
use zswap_main::compare;
use zswap_main::recordstore::{self, Measured, Point, Store};
use zswap_main::swap::Anon;

#[test]
fn the_streams_send_nine_reads_in_ten_to_a_tenth_of_the_records() {
    let s = recordstore::streams(10_000, 2, 7);
    assert_eq!(
        s,
        recordstore::streams(10_000, 2, 7),
        "the same on every side"
    );
    assert_ne!(s, recordstore::streams(10_000, 2, 8));
    assert_eq!(s.readers.len(), 2);
    assert_eq!(s.warm_up, 5_000);
    assert_eq!(s.readers[0].len(), 5_000 + 20_000);
    let mut hot = std::collections::HashSet::new();
    let (mut hot_reads, mut reads) = (0, 0);
    for &d in s.readers.iter().flatten() {
        let (is_hot, i) = recordstore::split(d);
        assert!(i < 10_000);
        if is_hot {
            hot.insert(i);
            hot_reads += 1;
        }
        reads += 1;
    }
    let share = hot_reads as f64 / reads as f64;
    assert!((0.88..0.92).contains(&share), "{share}");
    assert!(hot.len() <= 1_000, "{} hot records", hot.len());
    // The hot tenth is spread over the store, not its first records.
    assert!(hot.iter().any(|&i| i >= 5_000));
    assert!(s.writes.iter().any(|&d| recordstore::split(d).0));
}

#[test]
fn a_record_is_its_source_page_stamped_with_its_id_and_version() {
    let source = common::pages(3);
    let mut out = vec![0; PAGE_SIZE];
    recordstore::content(&source, 4, 9, &mut out);
    // Page 4 % 3 of the source, cycled.
    assert_eq!(out[16..], source[PAGE_SIZE + 16..2 * PAGE_SIZE]);
    assert_eq!(out[..8], 4u64.to_le_bytes());
    assert_eq!(out[8..16], 9u64.to_le_bytes());
    let mut other = vec![0; PAGE_SIZE];
    recordstore::content(&source, 1, 9, &mut other);
    assert_ne!(out, other, "two records of one source page differ");
}

#[test]
fn a_read_tells_a_wrong_record() {
    let n = 16;
    let anon = Anon::new(n * PAGE_SIZE).unwrap();
    // SAFETY: `anon` is `n` pages, alive until after the last use of `store`.
    let mut store = unsafe { Store::new(anon.ptr(), n) };
    let source = common::pages(4);
    store.fill(&source, &mut vec![0; PAGE_SIZE]);
    assert!((0..n).all(|i| store.read(i)));
    let mut page = vec![0; PAGE_SIZE];
    recordstore::content(&source, 5, 1, &mut page);
    store.write(5, &page, recordstore::hash(&page));
    assert!(store.read(5));
    // SAFETY: a byte of record 6, inside the mapping; nothing else uses the store now.
    unsafe { *store.at(6).add(100) ^= 1 };
    assert!(!store.read(6), "a changed byte went unseen");
    assert_eq!(store.resident_bytes(), (n * PAGE_SIZE) as u64);
}

#[test]
fn plain_memory_reads_every_record_right() {
    let n = 2_048;
    let source = common::pages(100);
    let streams = recordstore::streams(n, 2, 1);
    let m = recordstore::plain_side(&source, n, &streams).unwrap();
    assert_eq!(m.wrong_records, 0);
    assert_eq!(m.reads, (n * recordstore::TIMED_PER_RECORD) as u64);
    assert!(m.reads_per_s > 0.0 && m.read_p50_us > 0.0, "{m:?}");
    assert!(m.read_p99_us >= m.read_p50_us, "{m:?}");
    assert_eq!(m.memory_bytes, (n * PAGE_SIZE) as u64);
    assert_eq!((m.limit_bytes, m.store_bytes), (0, 0));
}

#[test]
fn the_pager_sides_read_every_record_right_under_a_quarter_of_them() {
    if common::pager_refused().is_some() {
        return;
    }
    let n = 1_024;
    let source = common::pages(300);
    let streams = recordstore::streams(n, 2, 2);
    let limit = (n / 4 * PAGE_SIZE) as u64;
    for signal in [false, true] {
        let m = recordstore::pager_side(&source, n, &streams, limit, signal).unwrap();
        assert_eq!(m.wrong_records, 0, "signal {signal}: {m:?}");
        assert!(m.swap_ins > 0, "{m:?}");
        assert_eq!(m.limit_bytes, limit);
        assert_eq!(m.memory_bytes, m.resident_bytes + m.store_bytes);
        assert!(m.resident_bytes <= limit + limit / 8, "{m:?}");
    }
}

fn point(side: &'static str, reads_per_s: f64, write_p50_us: f64) -> Point {
    Point {
        side,
        measured: Measured {
            reads_per_s,
            write_p50_us,
            hot_probed: 200,
            hot_faulted: 5,
            memory_bytes: 300 << 20,
            ..Measured::default()
        },
    }
}

#[test]
fn rows_go_to_the_json_with_their_ratios_in_the_table() {
    let points = vec![
        point(recordstore::SIDE_PLAIN, 1e6, 0.5),
        point(recordstore::SIDE_KERNEL, 4e5, 0.75),
        point(recordstore::SIDE_PAGER_SIGNAL, 2e5, 0.6),
    ];
    let f = |m: &Measured| m.write_p50_us;
    let r = recordstore::ratio(&points, &points[2], recordstore::SIDE_PLAIN, f).unwrap();
    assert!((r - 1.2).abs() < 1e-9, "{r}");
    assert_eq!(
        recordstore::ratio(&points, &points[0], recordstore::SIDE_PLAIN, f),
        None
    );
    let g = |m: &Measured| m.reads_per_s;
    let r = recordstore::ratio(&points, &points[2], recordstore::SIDE_KERNEL, g).unwrap();
    assert!((r - 0.5).abs() < 1e-9, "{r}");
    let rows: Vec<recordstore::Row> = points.iter().map(Point::row).collect();
    let summary = compare::Summary {
        source: "pages".into(),
        page_size_bytes: 4096,
        record_store: &rows,
        record_store_unavailable: &["record store kernel: not measured: why".to_owned()],
        ..Default::default()
    };
    let v: serde_json::Value = serde_json::to_value(&summary).unwrap();
    let row = &v["record_store"][2];
    assert_eq!(row["kind"], "record_store");
    assert_eq!(row["side"], "pager-signal");
    assert_eq!(row["hot_reads_faulted"], 0.025);
    assert_eq!(row["wrong_records"], 0);
    assert_eq!(
        v["record_store_unavailable"][0],
        "record store kernel: not measured: why"
    );
    assert!(v.get("budget").is_none(), "an empty table is left out");
}

#[test]
fn the_child_refuses_a_bad_spec() {
    let e = zswap_main::recordkernel::child("{}").unwrap_err();
    assert!(e.starts_with("the child's spec: missing field"), "{e}");
}
