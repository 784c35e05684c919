//! The main job's parts: its tier refusing at the budget, the workload over real, random and
//! zero pages, zram's files, the side-by-side rows, units, their decoded-unit cache,
//! dictionaries, recompression and the plot.

use acomp::Acomp;
use rand::rngs::StdRng;
use rand::seq::IndexedRandom;
use rand::{Rng, SeedableRng};

use acomp_pages::cases;
use acomp_pages::input::Input;
use acomp_zswap::{FolioKind, LoadError, PAGE_SIZE, Page, StoreError, StoreKind, Zswap};
use zswap_main::{cache, compare, dict, lz4dict, patterns, plot, units, workload, zram, zswap};

fn zswap() -> Zswap {
    zswap::tier(Acomp::new("zstd").unwrap(), None)
}

/// The main job's tier with a budget and no device: at the budget the tier's own refusal
/// and counter, as the report prints them.
#[test]
fn pool_limit_refuses_the_page() {
    let z = zswap::tier(Acomp::new("zstd").unwrap(), Some(1));
    let mut page = Box::new([0u8; PAGE_SIZE]);
    StdRng::seed_from_u64(2).fill(&mut page[..]);
    assert_eq!(z.store(0, &page).unwrap(), StoreKind::Incompressible);
    page[0] ^= 1;
    assert!(matches!(z.store(1, &page), Err(StoreError::PoolFull)));
    let c = zswap::counters(&z);
    assert_eq!(
        (
            c.stats.reject_reclaim_fail,
            c.stats.pool_limit_hit,
            c.pool.pages
        ),
        (1, 1, 1)
    );
    let mut out = [0; PAGE_SIZE];
    assert!(matches!(z.load(1, &mut out), Err(LoadError::NotFound)));
}

#[test]
fn workload_verifies_every_page_on_threads() {
    let mut bytes: Vec<u8> = cases::pages()
        .iter()
        .flat_map(|p| p.iter().copied())
        .collect();
    bytes.truncate(bytes.len() - 100);
    let input = Input::from_bytes("test pages".into(), bytes);
    // A new pool's zspages lie on neighbouring pages, so its straddling objects come to
    // acomp in one fragment; with the tier's test hook (`split`), in two.
    for split in [false, true] {
        let z = zswap();
        z.pool_split_reads(split);
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
        assert_eq!(!report.load_straddling.is_empty(), split);
    }
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

/// The `calls alone` row compresses exactly the frames the tier stores (the same bytes, the
/// same same-filled pages skipped), and decompresses each back to its page.
#[test]
fn calls_row_holds_the_tiers_frames_without_the_tier() {
    let mut data = heap_like_with_filled(70, &[3, 40]).pages(0, 70).to_vec();
    // Page 9 does not shrink (bytes of a xorshift): kept as it is, and its copy compared.
    let mut x = 0x9e37_79b9_7f4a_7c15_u64;
    for b in &mut data[9 * PAGE_SIZE..][..PAGE_SIZE] {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        *b = x as u8;
    }
    let input = Input::from_bytes("heap-like".into(), data);
    for alg in ["lz4", "zstd"] {
        let tier = zswap::tier(Acomp::new(alg).unwrap(), None);
        let with = compare::acomp_row(alg, &tier, &input);
        let alone = compare::calls_row(alg, tier.acomp(), &input);
        assert_eq!(alone.kind, compare::KIND_CALLS);
        assert_eq!((alone.pages, alone.verified_pages), (70, 70));
        assert_eq!(alone.same_filled_pages, 2);
        assert_eq!(alone.compressed_bytes, with.compressed_bytes, "{alg}");
        assert_eq!(alone.memory_bytes, alone.compressed_bytes);
        assert!(alone.store_p50_us.is_some() && alone.load_p50_us.is_some());
        let copied = compare::copies_row(alg, tier.acomp(), &input);
        assert_eq!(copied.kind, compare::KIND_CALLS);
        assert_eq!((copied.pages, copied.verified_pages), (70, 70));
        assert_eq!(copied.same_filled_pages, 2);
        assert_eq!(copied.compressed_bytes, with.compressed_bytes, "{alg}");
    }
}

/// Pages that do not shrink are kept as they are: a `calls` row then decompresses nothing,
/// and has no load speed (`-`, `null`) rather than the pages' bytes over no time.
#[test]
fn a_calls_row_with_nothing_to_decompress_has_no_load_speed() {
    let mut data = vec![0u8; 2 * PAGE_SIZE];
    let mut x = 0x2545_f491_4f6c_dd1d_u64;
    for b in &mut data {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        *b = x as u8;
    }
    let input = Input::from_bytes("noise".into(), data);
    let tfm = Acomp::new("lz4").unwrap();
    for row in [
        compare::calls_row("alone", &tfm, &input),
        compare::copies_row("copies", &tfm, &input),
    ] {
        assert_eq!((row.pages, row.verified_pages), (2, 2), "{}", row.name);
        assert!(
            row.load_mib_s.is_nan() && row.load_p50_us.is_none(),
            "{row:?}"
        );
        assert!(
            row.store_mib_s.is_finite() && row.store_p50_us.is_some(),
            "{row:?}"
        );
    }
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
        configurations: &rows,
        ..Default::default()
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

#[test]
fn unit_runs_verify_every_page_and_leave_nothing() {
    let input = Input::from_bytes(
        "units".into(),
        cases::units(16 * 4 + 5).as_flattened().to_vec(),
    );
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
    let store = zswap::tier(tfm, None);
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
    store.load_pages(0, &mut unit).unwrap();
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

/// A folio decoded into the cache is cached under the folio the decode says it was, not the
/// one looked up before it: where a store replaced the folio in between, the old one's key
/// must not serve the new one's bytes.
#[test]
fn unit_cache_keys_what_was_decoded() {
    let store = zswap::tier(Acomp::new("lz4").unwrap(), None);
    let unit =
        |version: u32| -> Vec<Page> { (0..4).map(|i| *versioned_page(i, version)).collect() };
    store.store_folio(0, &unit(1)).unwrap();
    let old = store.folio(0).unwrap();
    store.store_folio(0, &unit(2)).unwrap();
    let mut cache = cache::UnitCache::new(2, 4 * PAGE_SIZE);
    let (got, data) = cache
        .fill(|buf| store.decode_folio(0, buf.as_chunks_mut::<PAGE_SIZE>().0))
        .unwrap();
    assert_ne!(got, old);
    assert_eq!(data[..PAGE_SIZE], versioned_page(0, 2)[..]);
    assert!(cache.get(old).is_none());
    assert!(cache.get(got).is_some());
    assert_eq!((cache.hits, cache.misses), (1, 1));
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

/// `heap_like(pages)` with the pages `filled` same-filled (zeros, then 0x77 bytes...).
fn heap_like_with_filled(pages: u64, filled: &[usize]) -> Input {
    let mut data = heap_like(pages);
    for (k, &i) in filled.iter().enumerate() {
        data[i * PAGE_SIZE..][..PAGE_SIZE].fill(0x77 * k as u8);
    }
    Input::from_bytes("heap-like".into(), data)
}

#[test]
fn dict_trains_on_the_first_half_and_stores_the_second_with_and_without_it() {
    // Two of the 50 pages sampled are same-filled: zswap keeps them as their value, no sample.
    let input = heap_like_with_filled(400, &[0, 4]);
    let t = dict::train(&input, 4, 16 << 10).unwrap();
    assert_eq!((t.held_out_from, t.sample_pages), (200, 48));
    assert!(dict::describe(&t, 4).contains("from 48 pages (0.2 MiB: every 4th page"));
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
    // Two held-out pages are same-filled: zswap keeps them as their value, out of the trial.
    let input = heap_like_with_filled(400, &[201, 203]);
    let t = dict::train(&input, 4, 16 << 10).unwrap();
    let held = dict::held_out(&input, &t);
    let trial = lz4dict::trial(&held, t.dict.as_bytes());
    assert_eq!(trial.pages, 198);
    assert_eq!(trial.dict_bytes, t.dict.as_bytes().len());
    // Without the dictionary: the blocks acomp's lz4 writes (liblz4, acceleration 1).
    let lz4 = Acomp::new("lz4").unwrap();
    let mut block = vec![0u8; PAGE_SIZE];
    let plain: usize = (0..held.len())
        .filter(|&i| ![1, 3].contains(&i))
        .map(|i| {
            lz4.compress_to_buffer(&held.page(i)[..], &mut block)
                .unwrap()
        })
        .sum();
    assert_eq!(trial.bytes[0], plain);
    assert!(trial.bytes[1] < plain, "{trial:?}");
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
            dict: true,
            unit: 1
        })
    );
    assert_eq!(
        parse_spec("-3"),
        Ok(Spec {
            level: -3,
            dict: false,
            unit: 1
        })
    );
    // zstd's whole range (acomp::zstd::MIN_LEVEL..=MAX_LEVEL), 0 left out.
    assert_eq!(parse_spec("22").map(|s| s.level), Ok(22));
    assert_eq!(parse_spec("-131072").map(|s| s.level), Ok(-131072));
    assert_eq!(
        parse_spec("-131073"),
        Err("zstd level -131073 is out of range (-131072..=22, not 0)".into())
    );
    assert!(parse_spec("0").is_err());
    assert!(parse_spec("23").is_err());
    assert!(parse_spec("9+lz4").is_err());
    assert_eq!(
        parse_spec("9+dict+unit64"),
        Ok(Spec {
            level: 9,
            dict: true,
            unit: 64
        })
    );
    assert_eq!(
        parse_spec("3+unit16").map(|s| (s.dict, s.unit)),
        Ok((false, 16))
    );
    assert_eq!(
        parse_spec("3+unit65"),
        Err("\"unit65\": a unit is unit1 to unit64 pages".into())
    );
    assert!(parse_spec("3+unit0").is_err());
    assert!(parse_spec("3+unit16+dict").is_err());
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
            unit: 1,
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

/// The `--recompress` row with units: every page back (in order and at random), the idle
/// pages in units of 8, and the unit figures in its JSON object.
#[test]
fn recompress_row_with_units_on_text_pages() {
    use zswap_main::recomp::{Spec, row};
    let phrase = b"idle pages go to zstd in units, hot ones stay in lz4; ";
    let text: Vec<u8> = (0..64 * 4096)
        .map(|i: usize| phrase[i % phrase.len()] ^ (i / 4096) as u8)
        .collect();
    let input = Input::from_bytes("text".into(), text);
    let spec = Spec {
        level: 3,
        dict: false,
        unit: 8,
    };
    let r = row(&input, spec).unwrap();
    assert_eq!((r.pages, r.verified_pages), (64, 64));
    let f = r.recompress.as_ref().unwrap();
    assert_eq!(f.unit_pages, 8);
    assert!(f.recompressed_unit_pages > 0 && f.stored_units > 0, "{f:?}");
    assert!(r.name.ends_with("in 8-page units"), "{}", r.name);
    let json = serde_json::to_value(&r).unwrap();
    for key in [
        "load_cold_random_mib_s",
        "recompressed_unit_pages",
        "stored_units",
    ] {
        assert!(json[key].is_number(), "{key} in {json}");
    }
    assert_eq!(zswap_main::recomp::cold_points(&r).len(), 2);
}
