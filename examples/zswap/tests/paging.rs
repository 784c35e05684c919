//! `--pager`'s parts that need neither root nor zram: the touch orders, the rows and their
//! JSON, the swap header, the skip messages, and the measurement itself on
//! an ordinary mapping.

use std::path::PathBuf;
use std::time::Duration;

use acomp_pages::input::Input;
use acomp_zswap::PAGE_SIZE;
use zswap_main::compare;
use zswap_main::paging::{self, Mapping, Order, Pass, Row, SplitMix64};
use zswap_main::swap::{self, Anon};

#[test]
fn splitmix64_gives_the_reference_sequence() {
    // SplitMix64's published first output for seed 0.
    assert_eq!(SplitMix64::new(0).next_u64(), 0xE220_A839_7B1D_CDAF);
}

#[test]
fn the_random_order_is_a_fixed_permutation() {
    // Values from an independent implementation (Python) of the same generator and shuffle.
    assert_eq!(paging::random_order(10, 1), [9, 0, 1, 4, 8, 2, 3, 7, 6, 5]);
    assert_eq!(paging::random_order(0, 1), Vec::<u32>::new());
    let mut big = paging::random_order(100_000, 42);
    assert_eq!(big, paging::random_order(100_000, 42));
    assert_ne!(big, paging::random_order(100_000, 43));
    big.sort_unstable();
    assert!(big.iter().enumerate().all(|(i, &p)| p as usize == i));
}

#[test]
fn the_zipf_order_is_fixed_by_its_seed() {
    // Values from an independent implementation (Python) of the same draws.
    assert_eq!(
        paging::zipf_order(10, 20, 0.99, 1),
        [0, 1, 9, 9, 0, 5, 8, 6, 1, 6, 1, 1, 6, 9, 8, 0, 9, 0, 0, 4]
    );
    assert_eq!(
        Order::Zipf.touches(10, 1),
        paging::zipf_order(10, 10, 0.99, 1)
    );
    assert_eq!(Order::Random.touches(10, 1), paging::random_order(10, 1));
    assert_eq!(
        paging::zipf_order(50_000, 50_000, 0.99, 9),
        paging::zipf_order(50_000, 50_000, 0.99, 9)
    );
    assert_ne!(
        paging::zipf_order(50_000, 50_000, 0.99, 9),
        paging::zipf_order(50_000, 50_000, 0.99, 10)
    );
    assert_eq!(paging::zipf_order(0, 5, 0.99, 1), Vec::<u32>::new());
}

#[test]
fn the_zipf_orders_hottest_pages_are_the_first_ranks() {
    let z = paging::zipf_order(1000, 1000, 0.99, 7);
    let mut hits = vec![0u32; 1000];
    for &p in &z {
        hits[p as usize] += 1;
    }
    let ranks = paging::random_order(1000, 7);
    // Counted by the Python implementation too: ranks 1, 2, 3 are drawn 118, 60 and 46
    // times, and 339 distinct pages are touched.
    assert_eq!(&ranks[..3], [919, 277, 39]);
    assert_eq!(
        [hits[919], hits[277], hits[39]],
        [118, 60, 46],
        "the first ranks, pages {:?}",
        &ranks[..3]
    );
    assert_eq!(hits.iter().filter(|&&h| h > 0).count(), 339);
}

fn pass() -> Pass {
    Pass {
        paged_out_pages: 1000,
        resident_bytes: 8192,
        store_bytes: 1 << 20,
        page_out: Duration::from_millis(250),
        faults: vec![2000; 999].into_iter().chain([2_000_000]).collect(),
        verified_pages: 1002,
    }
}

#[test]
fn a_row_carries_the_pass_in_its_units() {
    let r = Row::new(paging::KIND_PAGER, "lz4", Order::Zipf, 1002, &pass());
    assert_eq!(r.name, "pager lz4, zipf order");
    assert_eq!(r.resident_after_page_out, 2);
    assert_eq!(r.memory_bytes, 8192 + (1 << 20));
    // 1000 pages of 4 KiB (3.90625 MiB) in 0.25 s.
    assert_eq!(r.page_out_mib_s, 15.625);
    assert_eq!(r.page_out_s, 0.25);
    assert_eq!(r.faults, 1000);
    // hdrhistogram with 3 significant digits: 2000 ns (under 2048) is exact; the one slow fault is
    // beyond the 99th percentile of 1000.
    assert_eq!(r.fault_p50_us, Some(2.0));
    assert_eq!(r.fault_p99_us, Some(2.0));
    let none = Row::new(
        paging::KIND_ZRAM_SWAP,
        "lzo-rle",
        Order::Random,
        3,
        &Pass::default(),
    );
    assert_eq!(none.fault_p50_us, None);
    assert_eq!(none.resident_after_page_out, 3);
    assert_eq!(none.name, "zram-swap lzo-rle, random order");
}

#[test]
fn the_json_rows_have_the_issues_fields() {
    let rows = [
        Row::new(paging::KIND_PAGER, "lz4", Order::Random, 1002, &pass()),
        Row::new(
            paging::KIND_ZRAM_SWAP,
            "lzo-rle",
            Order::Zipf,
            1002,
            &Pass::default(),
        ),
    ];
    let skipped = ["zram-swap lz4: not measured: why".to_owned()];
    let summary = compare::Summary {
        source: "pages".into(),
        page_size_bytes: 4096,
        paging: &rows,
        paging_unavailable: &skipped,
        ..Default::default()
    };
    let v: serde_json::Value = serde_json::to_value(&summary).unwrap();
    let pager = &v["paging"][0];
    let expected = serde_json::json!({
        "name": "pager lz4, random order",
        "kind": "pager",
        "algorithm": "lz4",
        "order": "random",
        "pages": 1002,
        "paged_out_pages": 1000,
        "resident_after_page_out": 2,
        "memory_bytes": 1056768,
        "resident_bytes": 8192,
        "store_bytes": 1048576,
        "page_out_mib_s": 15.625,
        "page_out_s": 0.25,
        "faults": 1000,
        "fault_p50_us": 2.0,
        "fault_p99_us": 2.0,
        "touch_pages_s": 250125.06253126563,
        "verified_pages": 1002
    });
    assert_eq!(*pager, expected);
    let kernel = &v["paging"][1];
    assert_eq!(kernel["kind"], "zram-swap");
    assert_eq!(kernel["algorithm"], "lzo-rle");
    assert_eq!(kernel["fault_p50_us"], serde_json::Value::Null);
    assert_eq!(
        v["paging_unavailable"][0],
        "zram-swap lz4: not measured: why"
    );

    // Without --pager neither key is written.
    let plain = compare::Summary {
        source: "pages".into(),
        page_size_bytes: 4096,
        ..Default::default()
    };
    let v: serde_json::Value = serde_json::to_value(&plain).unwrap();
    assert_eq!(
        v.as_object().unwrap().keys().collect::<Vec<_>>(),
        [
            "configurations",
            "page_size_bytes",
            "source",
            "zram_unavailable"
        ]
    );
}

#[test]
fn the_swap_header_is_mkswaps() {
    let h = swap::swap_header(257, "acomp-zswap");
    assert_eq!(h.len(), 4096);
    assert!(h[..1024].iter().all(|&b| b == 0));
    assert_eq!(h[1024..1028], 1u32.to_ne_bytes());
    assert_eq!(h[1028..1032], 256u32.to_ne_bytes());
    assert!(h[1032..1052].iter().all(|&b| b == 0));
    assert_eq!(&h[1052..1063], b"acomp-zswap");
    assert!(h[1063..4086].iter().all(|&b| b == 0));
    assert_eq!(&h[4086..], b"SWAPSPACE2");
    // A label is cut at 16 bytes.
    let long = swap::swap_header(2, "0123456789abcdefXYZ");
    assert_eq!(&long[1052..1068], b"0123456789abcdef");
    assert_eq!(long[1068], 0);
}

#[test]
fn swap_flags_and_disksize() {
    assert_eq!(swap::swap_flags(swap::PRIORITY), 0xFFFF);
    assert_eq!(swap::swap_flags(5), 0x8005);
    // 255 pages and the header: exactly 1 MiB; one more page: 2 MiB.
    assert_eq!(swap::disksize(255), 1 << 20);
    assert_eq!(swap::disksize(256), 2 << 20);
    assert_eq!(swap::disksize(0), 1 << 20);
}

#[test]
fn skip_messages_say_why() {
    let dir = std::env::temp_dir().join(format!("zswap-paging-sysfs-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    assert_eq!(
        swap::unavailable(&dir, 1000).as_deref(),
        Some("zram as swap needs root to create a device (running as uid 1000)")
    );
    assert_eq!(
        swap::unavailable(&dir, 0),
        Some(format!(
            "zram as swap {}/class/zram-control is absent (no zram module: `modprobe zram` first)",
            dir.display()
        ))
    );
    std::fs::create_dir_all(dir.join("class/zram-control")).unwrap();
    std::fs::write(dir.join("class/zram-control/hot_add"), "").unwrap();
    assert_eq!(swap::unavailable(&dir, 0), None);
    assert_eq!(
        paging::skip_line("zram-swap", "why"),
        "zram-swap: not measured: why"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

/// An anonymous mapping of `pages` pages (the main job's, as its kernel side maps them).
fn anon(pages: usize) -> Anon {
    Anon::new(pages * PAGE_SIZE).unwrap()
}

fn input(pages: usize) -> Input {
    let data: Vec<u8> = (0..pages * PAGE_SIZE)
        .map(|i| (i / PAGE_SIZE * 7 + i % 251) as u8)
        .collect();
    Input::from_bytes(PathBuf::from("test pages"), data)
}

#[test]
fn a_mapping_is_filled_touched_and_verified() {
    let n = 64;
    let anon = anon(n);
    // SAFETY: `anon` is n pages, readable and writable, alive until the end of the test,
    // used by this thread alone.
    let map = unsafe { Mapping::new(anon.ptr(), n) };
    assert_eq!(map.len(), n * PAGE_SIZE);
    assert_eq!(paging::count(&map.resident().unwrap()), 0);
    let input = input(n);
    map.fill(&input);
    assert_eq!(paging::count(&map.resident().unwrap()), n as u64);
    assert_eq!(map.verify(&input), n as u64);

    // Drop the first half (anonymous memory reads back as zeros): those pages fail the
    // check, and only they are timed as first accesses, once each.
    // SAFETY: the first half of the mapping, ours.
    assert_eq!(
        unsafe { libc::madvise(anon.ptr().cast(), n / 2 * PAGE_SIZE, libc::MADV_DONTNEED) },
        0
    );
    let out: Vec<bool> = map.resident().unwrap().iter().map(|r| !r).collect();
    assert_eq!(paging::count(&out), n as u64 / 2);
    assert!(out[..n / 2].iter().all(|&o| o));
    let order: Vec<u32> = paging::random_order(n, 3)
        .into_iter()
        .chain(paging::random_order(n, 4))
        .collect();
    let faults = map.touch(&order, &out, &|| false);
    assert_eq!(faults.len(), n / 2);
    assert_eq!(map.verify(&input), n as u64 / 2);

    // A stop asked for before the first touch times nothing.
    assert!(map.touch(&order, &out, &|| true).is_empty());
}

#[test]
fn the_paging_plot_sits_beside_the_plot() {
    use zswap_main::pagingplot;
    assert_eq!(
        pagingplot::path(std::path::Path::new("/tmp/x/frontier.svg")),
        PathBuf::from("/tmp/x/frontier-paging.svg")
    );
    assert_eq!(
        pagingplot::path(std::path::Path::new("plot")),
        PathBuf::from("plot-paging")
    );
    let rows = [
        Row::new(paging::KIND_PAGER, "lz4", Order::Random, 1002, &pass()),
        Row::new(
            paging::KIND_ZRAM_SWAP,
            "lzo-rle",
            Order::Zipf,
            1002,
            &pass(),
        ),
    ];
    assert_eq!(pagingplot::short(&rows[0]), "lz4 random");
    assert_eq!(pagingplot::short(&rows[1]), "zram lzo-rle zipf");
    let file = std::env::temp_dir().join(format!("zswap-paging-{}.svg", std::process::id()));
    pagingplot::draw(&rows, "test", &file).unwrap();
    let svg = std::fs::read_to_string(&file).unwrap();
    std::fs::remove_file(&file).unwrap();
    assert!(svg.contains("lz4 random") && svg.contains("zram lzo-rle zipf"));
    assert_eq!(
        pagingplot::draw(&[], "test", &file).unwrap_err(),
        "no paging rows to plot"
    );
}

#[test]
fn other_swap_areas_are_named_with_their_priority() {
    let text = "Filename\t\t\t\tType\t\tSize\t\tUsed\t\tPriority\n\
                /dev/zram3                              partition\t1048572\t\t0\t\t32767\n\
                /swapfile                               file\t\t2097148\t\t512\t\t-2\n\
                /dev/zram2                              partition\t1048572\t\t0\t\t32767\n";
    assert_eq!(
        swap::other_swap_areas(text, "/dev/zram2"),
        [
            ("/dev/zram3".to_owned(), 32767),
            ("/swapfile".to_owned(), -2)
        ]
    );
    assert_eq!(
        swap::other_swap_areas("Filename\tType\tSize\tUsed\tPriority\n", "/dev/zram2"),
        []
    );
}

#[test]
fn the_goal_line_sets_the_pager_against_zram_swap_of_its_algorithm_and_order() {
    let pager = |p50: u64, p99: u64, ms: u64| Pass {
        paged_out_pages: 1000,
        resident_bytes: 0,
        store_bytes: 1 << 20,
        page_out: Duration::from_millis(ms),
        faults: vec![p50; 98].into_iter().chain([p99; 2]).collect(),
        verified_pages: 1000,
    };
    let rows = [
        Row::new(
            paging::KIND_PAGER,
            "lz4",
            Order::Random,
            1000,
            &pager(1000, 1500, 100),
        ),
        Row::new(
            paging::KIND_ZRAM_SWAP,
            "lz4",
            Order::Random,
            1000,
            &pager(1000, 1000, 100),
        ),
        Row::new(
            paging::KIND_PAGER,
            "lz4",
            Order::Zipf,
            1000,
            &pager(1100, 1600, 200),
        ),
        Row::new(
            paging::KIND_ZRAM_SWAP,
            "lz4",
            Order::Zipf,
            1000,
            &pager(1000, 1000, 100),
        ),
        Row::new(
            paging::KIND_ZRAM_SWAP,
            "lzo-rle",
            Order::Zipf,
            1000,
            &pager(1, 1, 1),
        ),
    ];
    assert_eq!(
        paging::goals(&rows),
        [
            "pager lz4, random order against zram-swap's: fault p50 1.00x (ok <= 1.0x), p99 \
             1.50x (ok <= 1.5x), page-out 1.00x (ok >= 1x), memory 1.000x (ok <= 1x), 1000 \
             of 1000 pages verified: goal met",
            "pager lz4, zipf order against zram-swap's: fault p50 1.10x (MISSED <= 1.0x), p99 \
             1.60x (MISSED <= 1.5x), page-out 0.50x (MISSED >= 1x), memory 1.000x (ok <= 1x), \
             1000 of 1000 pages verified: goal not met",
        ]
    );
    // Without the kernel's rows, no goal line.
    assert!(paging::goals(&rows[..1]).is_empty());
}
