//! `--recompress`: the side-by-side table's row for lz4 with recompression of idle pages
//! (zram's `recomp_algorithm` and `recompress type=idle`, here the tier's
//! `Builder::recompress`). On one thread, as the other rows: every page stored with lz4
//! (timed: what a swap-out pays), every page marked idle, every [`HOT_EVERY`]th page loaded
//! (hot: no longer idle), every idle page recompressed with zstd (its CPU time counted),
//! the pool's memory read, then the hot pages loaded (timed) and the recompressed ones
//! loaded (timed), each checked: in order, then one by one at random (each load from another
//! unit than the last, where idle pages are recompressed in units).

use serde::Serialize;

use rand::SeedableRng;
use rand::seq::SliceRandom;

use crate::compare::{
    GOAL_SPEED, PATTERN_IN_ORDER, RECOMPRESS_GOAL_COLD_LOADS, RECOMPRESS_GOAL_MEMORY,
    RECOMPRESS_UNIT_GOAL_MEMORY, Row,
};
use crate::measure::{Calls, mib_s};
use acomp_pages::input::Input;
use acomp_zswap::PAGE_SIZE;

/// One page in this many is hot: loaded after the idle mark, so never recompressed.
pub const HOT_EVERY: usize = 10;

/// The figures only the recompression row has (in its JSON object beside the usual
/// fields).
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Figures {
    /// Loads of hot pages (loaded after the idle mark, kept in lz4), MiB/s.
    pub load_hot_mib_s: f64,
    /// Loads of recompressed pages (zstd), in offset order, MiB/s.
    pub load_cold_mib_s: f64,
    /// Loads of recompressed pages one by one in a random order, MiB/s: a page of a unit
    /// decodes its unit up to the page.
    pub load_cold_random_mib_s: f64,
    /// Pages of a recompression unit (`Builder::recompress_unit_pages`; 1: page by page).
    pub unit_pages: usize,
    /// Pages recompressed into units (`Stats::recompressed_unit_pages`).
    pub recompressed_unit_pages: u64,
    /// Units held after the pass (`Stats::stored_units`).
    pub stored_units: u64,
    /// Hot pages.
    pub hot_pages: u64,
    /// Pages recompressed (`Stats::recompressed_pages`).
    pub recompressed_pages: u64,
    /// Idle pages left in lz4 (`Stats::recompress_skipped_pages`).
    pub recompress_skipped_pages: u64,
    /// Bytes of the pool's objects recompression gave back.
    pub recompress_saved_bytes: u64,
    /// The pool's memory before recompression (all lz4), bytes.
    pub memory_before_recompress_bytes: u64,
    /// Recompression's CPU time per page tried, µs.
    pub recompress_cpu_us_per_page: f64,
    /// The zstd level of the recompression.
    pub recompress_level: i32,
    /// Seconds training the dictionary took (once, before the stores); `null` without one.
    pub dictionary_train_s: Option<f64>,
}

/// What `--recompress` recompresses with: a zstd level, with or without a dictionary
/// trained on the pages (every 5th page of the first half, 64 KiB, as `--dict`'s), page by
/// page or in units of neighbouring pages.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Spec {
    /// The zstd level.
    pub level: i32,
    /// With a trained dictionary.
    pub dict: bool,
    /// Pages of a unit (`Builder::recompress_unit_pages`): 1, page by page.
    pub unit: usize,
}

/// Parses `--recompress`'s value: a level, then optionally `+dict` and `+unitN` in that
/// order (`9`, `19+dict`, `9+dict+unit64`, `3+unit16`).
///
/// # Errors
///
/// Where the level is not one zstd has, a suffix is neither `+dict` nor `+unitN`, or the
/// unit is not 1 to 64 pages.
pub fn parse_spec(s: &str) -> Result<Spec, String> {
    let mut parts = s.split('+');
    let level = parse_level(parts.next().unwrap_or_default())?;
    let mut spec = Spec {
        level,
        dict: false,
        unit: 1,
    };
    for part in parts {
        match part.strip_prefix("unit") {
            _ if part == "dict" && !spec.dict && spec.unit == 1 => spec.dict = true,
            Some(n) if spec.unit == 1 => {
                spec.unit = n
                    .parse()
                    .ok()
                    .filter(|n| (1..=acomp_zswap::MAX_FOLIO_PAGES).contains(n))
                    .ok_or_else(|| format!("{part:?}: a unit is unit1 to unit64 pages"))?;
            }
            _ => {
                return Err(format!(
                    "{part:?}: the suffixes are +dict, then +unitN (1 to 64 pages)"
                ));
            }
        }
    }
    Ok(spec)
}

fn parse_level(s: &str) -> Result<i32, String> {
    let level: i32 = s
        .parse()
        .map_err(|_| format!("{s:?} is not a zstd level"))?;
    let range = acomp::zstd::MIN_LEVEL..=acomp::zstd::MAX_LEVEL;
    if level == 0 || !range.contains(&level) {
        return Err(format!(
            "zstd level {level} is out of range ({}..={}, not 0)",
            range.start(),
            range.end()
        ));
    }
    Ok(level)
}

/// The row, on `input`'s pages, with zstd at `level` as the recompression transform.
///
/// # Errors
///
/// Where acomp refuses a transform or the tier its configuration.
pub fn row(input: &Input, spec: Spec) -> Result<Row, Box<dyn std::error::Error>> {
    let n = input.len();
    let Spec { level, dict, unit } = spec;
    let trained = if dict {
        Some(crate::dict::train(input, 5, 64 << 10)?)
    } else {
        None
    };
    let tier = acomp_zswap::Zswap::builder(acomp::Acomp::new("lz4")?)
        .max_pool_bytes(u64::MAX)
        .recompress(crate::dict::transform(
            level,
            trained.as_ref().map(|t| &t.dict),
        )?)
        .recompress_unit_pages(unit)
        .build()?;
    let mut store = Calls::default();
    for i in 0..n {
        let res = store.time(|| tier.store(i as u64, input.page(i)));
        if let Err(e) = res {
            eprintln!("zswap: recompression pass: store of page {i}: {e}");
        }
    }
    let before = tier.stats().pool_total_size;
    tier.mark_idle();
    let mut page: Box<acomp_zswap::Page> = Box::new([0; PAGE_SIZE]);
    let hot: Vec<usize> = (0..n).step_by(HOT_EVERY).collect();
    for &i in &hot {
        let _ = tier.load(i as u64, &mut page);
    }
    tier.recompress_idle(usize::MAX);
    let s = tier.stats();
    let cold: Vec<usize> = (0..n).filter(|&i| tier.is_recompressed(i as u64)).collect();
    // Each pass: its speed and how many of its pages came back as stored.
    let mut timed = |pages: &[usize]| {
        let mut loads = Calls::default();
        let mut ok = 0;
        for &i in pages {
            page[0] = !input.page(i)[0];
            let res = loads.time(|| tier.load(i as u64, &mut page));
            if res.is_ok() && *page == *input.page(i) {
                ok += 1;
            }
        }
        (mib_s((pages.len() * PAGE_SIZE) as u64, loads.time), ok)
    };
    let (load_hot, hot_ok) = timed(&hot);
    let (load_cold, cold_ok) = timed(&cold);
    let mut shuffled = cold.clone();
    shuffled.shuffle(&mut rand::rngs::StdRng::seed_from_u64(40));
    let (load_cold_random, random_ok) = timed(&shuffled);
    // The pages neither hot nor recompressed are checked too, untimed.
    let rest: Vec<usize> = (0..n)
        .filter(|&i| i % HOT_EVERY != 0 && !tier.is_recompressed(i as u64))
        .collect();
    let (_, rest_ok) = timed(&rest);
    // Every page once; a page that failed at random but not in order counts as failed.
    let verified = hot_ok + rest_ok + cold_ok - (shuffled.len() - random_ok).min(cold_ok);
    let tried = s.recompressed_pages + s.recompress_skipped_pages;
    let original = (n * PAGE_SIZE) as u64;
    let memory = s.pool_total_size;
    Ok(Row {
        name: format!(
            "acomp lz4, idle recompressed with zstd level {level}{}{}",
            if dict { " +dict" } else { "" },
            if unit > 1 {
                format!(" in {unit}-page units")
            } else {
                String::new()
            }
        ),
        kind: "acomp".into(),
        pages: n as u64,
        original_bytes: original,
        memory_bytes: memory,
        compressed_bytes: s.stored_bytes,
        same_filled_pages: s.same_filled_pages,
        ratio: original as f64 / memory.max(1) as f64,
        threads: 1,
        request_bytes: PAGE_SIZE as u64,
        store_mib_s: mib_s(original, store.time),
        // The table's load column: the hot pages (the goal's figure).
        load_mib_s: load_hot,
        store_p50_us: None,
        store_p99_us: None,
        load_p50_us: None,
        load_p99_us: None,
        verified_pages: verified as u64,
        memory_vs_lzo_rle: None,
        store_vs_lzo_rle: None,
        load_vs_lzo_rle: None,
        unit_bytes: None,
        block_bytes: None,
        load_pattern: PATTERN_IN_ORDER.into(),
        load_folio_mib_s: None,
        load_fault_around_mib_s: None,
        load_single_page_mib_s: None,
        recompress: Some(Figures {
            load_hot_mib_s: load_hot,
            load_cold_mib_s: load_cold,
            load_cold_random_mib_s: load_cold_random,
            unit_pages: unit,
            recompressed_unit_pages: s.recompressed_unit_pages,
            stored_units: s.stored_units,
            hot_pages: hot.len() as u64,
            recompressed_pages: s.recompressed_pages,
            recompress_skipped_pages: s.recompress_skipped_pages,
            recompress_saved_bytes: s.recompress_saved_bytes,
            memory_before_recompress_bytes: before,
            recompress_cpu_us_per_page: s.recompress_cpu_ns as f64 / 1000.0 / tried.max(1) as f64,
            recompress_level: level,
            dictionary_train_s: trained.as_ref().map(|t| t.time.as_secs_f64()),
        }),
    })
}

/// The row's own lines under the table: hot and cold loads, the recompression's work, and
/// where it stands against the goal (memory at most [`RECOMPRESS_GOAL_MEMORY`] of zram lzo-rle's,
/// store and hot loads at least as fast), where the run has a zram lzo-rle row.
pub fn print(rows: &[Row]) {
    let base = rows.iter().find(|r| r.name == "zram lzo-rle");
    for r in rows {
        let Some(f) = &r.recompress else { continue };
        println!();
        println!("{}:", r.name);
        println!(
            "  memory {} bytes after recompression ({} before, all lz4); {} of {} pages \
             recompressed, {} left in lz4, {} hot",
            r.memory_bytes,
            f.memory_before_recompress_bytes,
            f.recompressed_pages,
            r.pages,
            f.recompress_skipped_pages,
            f.hot_pages
        );
        if f.unit_pages > 1 {
            println!(
                "  units of {} pages: {} pages in {} units",
                f.unit_pages, f.recompressed_unit_pages, f.stored_units
            );
        }
        println!(
            "  store {:.1} MiB/s (lz4); loads: hot {:.1} MiB/s (lz4), recompressed {:.1} MiB/s \
             in order, {:.1} MiB/s at random (zstd); recompression {:.2} us CPU per page",
            r.store_mib_s,
            f.load_hot_mib_s,
            f.load_cold_mib_s,
            f.load_cold_random_mib_s,
            f.recompress_cpu_us_per_page
        );
        if let Some(b) = base {
            let m = r.memory_bytes as f64 / b.memory_bytes.max(1) as f64;
            let s = r.store_mib_s / b.store_mib_s;
            let h = f.load_hot_mib_s / b.load_mib_s;
            let c = f.load_cold_mib_s / b.load_mib_s;
            let cr = f.load_cold_random_mib_s / b.load_mib_s;
            let goal = if f.unit_pages > 1 {
                RECOMPRESS_UNIT_GOAL_MEMORY
            } else {
                RECOMPRESS_GOAL_MEMORY
            };
            let mark = |ok: bool| if ok { "ok" } else { "MISSED" };
            let cold_ok = cr >= RECOMPRESS_GOAL_COLD_LOADS;
            let cold_mark = if f.unit_pages > 1 {
                format!(" ({} >= {RECOMPRESS_GOAL_COLD_LOADS:.1}x)", mark(cold_ok))
            } else {
                String::new()
            };
            let met =
                m <= goal && s >= GOAL_SPEED && h >= GOAL_SPEED && (f.unit_pages == 1 || cold_ok);
            println!(
                "  against zram lzo-rle: memory {m:.2}x ({} <= {goal:.2}x), store {s:.2}x \
                 ({} >= 1x), hot loads {h:.2}x ({} >= 1x), recompressed loads {c:.2}x in \
                 order, {cr:.2}x at random{cold_mark}: {}",
                mark(m <= goal),
                mark(s >= GOAL_SPEED),
                mark(h >= GOAL_SPEED),
                if met { "goal met" } else { "goal not met" }
            );
        }
    }
}

/// The row again with its recompressed loads as its load figure, for the plot: a point in
/// order and, for units (whose single-page loads at random decode the unit up to the
/// page), a point at random.
pub fn cold_points(r: &Row) -> Vec<Row> {
    let Some(f) = r.recompress.as_ref() else {
        return Vec::new();
    };
    let point = |what: &str, speed: f64| {
        let mut c = r.clone();
        c.name = format!("{} ({what})", r.name);
        c.load_mib_s = speed;
        c.recompress = None;
        c
    };
    let mut points = vec![point("recompressed loads", f.load_cold_mib_s)];
    if f.unit_pages > 1 {
        points.push(point(
            "recompressed loads at random",
            f.load_cold_random_mib_s,
        ));
    }
    points
}
