//! The three load patterns of `--unit` rows side by side against zram with lzo-rle, the
//! goal of folio-sized units (memory at most 0.60x lzo-rle's, store and whole-folio load at
//! least as fast), and whether each zram algorithm is dominated on single-page loads.
//!
//! - Pattern 1, whole folios: every unit loaded whole, units in random order (large-folio
//!   swap-in).
//! - Pattern 2, fault-around: units in random order, each unit's pages one call each in
//!   address order, through the loading thread's cache of decoded units (`cache.rs`).
//! - Pattern 3, single pages: every page one call, in random order (a page fault each).
//!
//! zram is read as in the side-by-side table in every pattern: 1 MiB direct reads.

use crate::compare::{GOAL_MEMORY, GOAL_SPEED, Row};

fn lzo_rle(rows: &[Row]) -> Option<&Row> {
    rows.iter().find(|r| r.name == "zram lzo-rle")
}

/// Whether `a` is at least as good as `b` on memory, store and load (`load` picks the load
/// figure of a row), and better on one.
pub fn dominates(a: &Row, b: &Row, load: impl Fn(&Row) -> Option<f64>) -> bool {
    let (Some(la), Some(lb)) = (load(a), load(b)) else {
        return false;
    };
    let no_worse = a.memory_bytes <= b.memory_bytes && a.store_mib_s >= b.store_mib_s && la >= lb;
    let better = a.memory_bytes < b.memory_bytes || a.store_mib_s > b.store_mib_s || la > lb;
    no_worse && better
}

/// A row's single-page load figure: pattern 3 for `--unit` rows, the 1 MiB reads for
/// zram; `None` for acomp's page rows (loaded in order, not at random).
pub fn single_page(r: &Row) -> Option<f64> {
    match r.kind.as_str() {
        "zram" => Some(r.load_mib_s),
        _ => r.load_single_page_mib_s,
    }
}

/// A row's whole-folio load figure: pattern 1, or zram's 1 MiB reads.
pub fn folio(r: &Row) -> Option<f64> {
    match r.kind.as_str() {
        "zram" => Some(r.load_mib_s),
        _ => r.load_folio_mib_s,
    }
}

/// The goal line of one `--unit` row, against zram lzo-rle.
pub fn goal(r: &Row, base: &Row) -> String {
    let m = r.memory_bytes as f64 / base.memory_bytes.max(1) as f64;
    let s = r.store_mib_s / base.store_mib_s;
    let ratio = |v: Option<f64>| v.map_or(f64::NAN, |v| v / base.load_mib_s);
    let (l1, l2, l3) = (
        ratio(r.load_folio_mib_s),
        ratio(r.load_fault_around_mib_s),
        ratio(r.load_single_page_mib_s),
    );
    let mark = |ok: bool| if ok { "ok" } else { "MISSED" };
    let met = m <= GOAL_MEMORY && s >= GOAL_SPEED && l1 >= GOAL_SPEED;
    format!(
        "{}: memory {m:.3}x ({} <= {GOAL_MEMORY:.2}x), store {s:.2}x ({} >= 1x), whole folios \
         {l1:.2}x ({} >= 1x): {}; fault-around {l2:.2}x, single pages {l3:.2}x",
        r.name,
        mark(m <= GOAL_MEMORY),
        mark(s >= GOAL_SPEED),
        mark(l1 >= GOAL_SPEED),
        if met { "GOAL MET" } else { "goal not met" }
    )
}

/// Prints the patterns table of the `--unit` rows (MiB/s, and each over zram lzo-rle's
/// load), the goal line of each, and which acomp rows dominate each zram row on
/// single-page loads.
pub fn print(rows: &[Row]) {
    let units: Vec<&Row> = rows.iter().filter(|r| r.unit_bytes.is_some()).collect();
    if units.is_empty() {
        return;
    }
    let base = lzo_rle(rows);
    let w = units
        .iter()
        .map(|r| r.name.len())
        .max()
        .unwrap_or(0)
        .max(30);
    println!();
    println!(
        "load patterns (one thread; MiB/s of the pages' bytes over the time in the load calls): \
         1 whole units in random order, 2 units in random order with their pages in address \
         order through a {}-unit cache per thread, 3 single pages in random order",
        crate::units::CACHE_ENTRIES
    );
    println!(
        "  {:<w$} {:>7} {:>8} {:>9} {:>9} {:>9} {:>6} {:>6} {:>6} {:>6}",
        "configuration",
        "memory",
        "store",
        "1 folios",
        "2 around",
        "3 single",
        "store",
        "1",
        "2",
        "3"
    );
    println!(
        "  {:<w$} {:>7} {:>8} {:>9} {:>9} {:>9} {:>6} {:>6} {:>6} {:>6}",
        "", "vs lzo", "MiB/s", "MiB/s", "MiB/s", "MiB/s", "vs lzo", "vs lzo", "vs lzo", "vs lzo"
    );
    let vs = |v: f64, b: Option<f64>| b.map_or("-".into(), |b| format!("{:.2}", v / b));
    for r in &units {
        let f = |v: Option<f64>| v.unwrap_or(f64::NAN);
        println!(
            "  {:<w$} {:>7} {:>8.1} {:>9.1} {:>9.1} {:>9.1} {:>6} {:>6} {:>6} {:>6}",
            r.name,
            vs(r.memory_bytes as f64, base.map(|b| b.memory_bytes as f64)),
            r.store_mib_s,
            f(r.load_folio_mib_s),
            f(r.load_fault_around_mib_s),
            f(r.load_single_page_mib_s),
            vs(r.store_mib_s, base.map(|b| b.store_mib_s)),
            vs(f(r.load_folio_mib_s), base.map(|b| b.load_mib_s)),
            vs(f(r.load_fault_around_mib_s), base.map(|b| b.load_mib_s)),
            vs(f(r.load_single_page_mib_s), base.map(|b| b.load_mib_s)),
        );
    }
    // No verdict without a zram lzo-rle row in the run to measure it against.
    let Some(base) = base else { return };
    for r in &units {
        println!("  units goal: {}", goal(r, base));
    }
    for z in rows.iter().filter(|r| r.kind == "zram") {
        for (pattern, load) in [
            ("whole folios (pattern 1)", folio as fn(&Row) -> Option<f64>),
            ("single pages (pattern 3)", single_page),
        ] {
            println!("  {} on {pattern}: {}", z.name, dominated(z, &units, load));
        }
    }
}

/// Which acomp unit rows dominate zram row `z` with `load` as the load figure, or the
/// nearest miss: the row whose worst ratio against `z` is best.
fn dominated(z: &Row, units: &[&Row], load: fn(&Row) -> Option<f64>) -> String {
    let by: Vec<&str> = units
        .iter()
        .filter(|a| dominates(a, z, load))
        .map(|a| a.name.as_str())
        .collect();
    if !by.is_empty() {
        return format!("dominated by {}", by.join("; "));
    }
    let zl = load(z).unwrap_or(f64::NAN);
    let worst = |a: &Row| {
        let l = load(a).unwrap_or(0.0) / zl;
        let s = a.store_mib_s / z.store_mib_s;
        let m = z.memory_bytes as f64 / a.memory_bytes.max(1) as f64;
        l.min(s).min(m)
    };
    let Some(near) = units.iter().max_by(|a, b| worst(a).total_cmp(&worst(b))) else {
        return "no acomp unit row".into();
    };
    format!(
        "dominated by no acomp unit row; nearest {} (memory {:.2}x, store {:.2}x, load {:.2}x \
         of its)",
        near.name,
        near.memory_bytes as f64 / z.memory_bytes.max(1) as f64,
        near.store_mib_s / z.store_mib_s,
        load(near).unwrap_or(0.0) / zl
    )
}
