//! The side-by-side table: every configuration on the same pages, one thread each way, the
//! memory it holds them in and how fast it stores and loads them; the same as JSON.

use serde::Serialize;

use crate::measure::{Calls, Latency, mib_s, us};
use crate::zram;
use acomp_pages::input::Input;
use acomp_zswap::PAGE_SIZE;
use acomp_zswap::{Page, STORE_BATCH, Zswap};

/// The project's yardstick, for every acomp row and the units' table alike (the `goal:`
/// lines, the plot's shaded region): memory at most this fraction of zram with lzo-rle's...
pub const GOAL_MEMORY: f64 = 0.60;
/// ...and store and load (for units: whole folios) at least as fast per thread.
pub const GOAL_SPEED: f64 = 1.0;
/// The goal of lz4 with idle pages recompressed with zstd (`--recompress`, issue 31): memory
/// at most this fraction of zram lzo-rle's, store and loads of hot pages at least
/// [`GOAL_SPEED`]. Looser than [`GOAL_MEMORY`]: its hot pages stay in lz4, for lz4's speed.
pub const RECOMPRESS_GOAL_MEMORY: f64 = 0.65;
/// The goal of idle pages recompressed in units (`--recompress LEVEL+unitN`, issue 40):
/// memory at most this fraction of zram lzo-rle's...
pub const RECOMPRESS_UNIT_GOAL_MEMORY: f64 = 0.50;
/// ...and recompressed pages loaded one by one at random at least this fraction of zram
/// lzo-rle's loads.
pub const RECOMPRESS_GOAL_COLD_LOADS: f64 = 0.5;

/// One configuration's figures. Field names carry their units.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Row {
    /// `acomp zstd level 3`, `zram lzo-rle`...
    pub name: String,
    /// `acomp`, `zram`, or `calls` ([`KIND_CALLS`]: acomp's calls alone, no tier).
    pub kind: String,
    /// Pages stored (the same for every row).
    pub pages: u64,
    /// Their bytes: `pages` × 4096.
    pub original_bytes: u64,
    /// Memory holding them: acomp's pool (backing pages × 4096), zram's `mem_used_total`.
    pub memory_bytes: u64,
    /// The compressed objects alone: acomp's frames and pages kept as they are, zram's
    /// `compr_data_size`.
    pub compressed_bytes: u64,
    /// Pages kept as their fill value (no memory): acomp's `same_filled_pages`, zram's
    /// `same_pages`.
    pub same_filled_pages: u64,
    /// `original_bytes / memory_bytes`.
    pub ratio: f64,
    /// Threads storing and loading: 1.
    pub threads: u32,
    /// Bytes per load request: 4096 (acomp, a page per call; its stores go in batches of
    /// `STORE_BATCH` pages), 1048576 (zram, 1 MiB direct I/O).
    pub request_bytes: u64,
    /// `original_bytes` in MiB over the seconds spent in the store calls.
    pub store_mib_s: f64,
    /// Likewise for the load calls (the check of the bytes loaded is not timed).
    pub load_mib_s: f64,
    /// Latency of one page's store (a batch's time over its pages) and load; `null` where
    /// requests are not pages (zram).
    pub store_p50_us: Option<f64>,
    /// See `store_p50_us`.
    pub store_p99_us: Option<f64>,
    /// See `store_p50_us`.
    pub load_p50_us: Option<f64>,
    /// See `store_p50_us`.
    pub load_p99_us: Option<f64>,
    /// Pages loaded back equal to the pages stored.
    pub verified_pages: u64,
    /// `memory_bytes` over zram lzo-rle's (goal: at most 0.60); `null` without that row.
    pub memory_vs_lzo_rle: Option<f64>,
    /// `store_mib_s` over zram lzo-rle's (goal: at least 1); `null` without that row.
    pub store_vs_lzo_rle: Option<f64>,
    /// `load_mib_s` over zram lzo-rle's (goal: at least 1); `null` without that row.
    pub load_vs_lzo_rle: Option<f64>,
    /// Bytes of a unit (`--unit` rows: pages compressed as one frame); `null` for rows of
    /// single pages and for zram.
    pub unit_bytes: Option<u64>,
    /// The largest block in a unit's frame (zstd's `block_size_max`; lz4: the unit);
    /// `null` where `unit_bytes` is.
    pub block_bytes: Option<u64>,
    /// What `load_mib_s` measures: [`PATTERN_FOLIO`], [`PATTERN_IN_ORDER`] or
    /// [`PATTERN_ZRAM`].
    pub load_pattern: String,
    /// Pattern 1: whole units in random unit order, a call per unit (`--unit` rows).
    pub load_folio_mib_s: Option<f64>,
    /// Pattern 2: units in random order, their pages in address order, a call per page
    /// through a per-thread cache of decoded units (`--unit` rows).
    pub load_fault_around_mib_s: Option<f64>,
    /// Pattern 3: single pages in random order, a call per page (`--unit` rows).
    pub load_single_page_mib_s: Option<f64>,
    /// The `--recompress` row's own figures (hot and recompressed loads, the
    /// recompression's work), in its object beside the fields above; absent elsewhere.
    #[serde(flatten, skip_serializing_if = "Option::is_none")]
    pub recompress: Option<crate::recomp::Figures>,
}

/// `load_pattern` of `--unit` rows: whole units in random order (pattern 1).
pub const PATTERN_FOLIO: &str = "whole units, random order";
/// `load_pattern` of acomp's page rows: a page per call, in the order stored.
pub const PATTERN_IN_ORDER: &str = "pages in order";
/// `load_pattern` of zram's rows: 1 MiB direct reads in address order.
pub const PATTERN_ZRAM: &str = "1 MiB direct reads in order";

/// Quantile `q` of `h` in µs; `None` where no call was timed.
fn us_of(h: &Latency, q: f64) -> Option<f64> {
    (!h.is_empty()).then(|| us(h, q))
}

/// acomp's row: every page stored on one thread into `zswap` (fresh), in order, in batches
/// of [`STORE_BATCH`] pages ([`Zswap::store_batch`], as a swap layer stores a large folio's
/// pages: zswap's batched store), then loaded a page per call in the same order and checked,
/// as zram is written and read; each call timed (a store's latency per page: the batch's
/// time over its pages), the throughput from the sum of the calls' times. Every page is
/// invalidated afterwards.
pub fn acomp_row(name: &str, zswap: &Zswap, input: &Input) -> Row {
    let n = input.len();
    let (mut store, mut load) = (Calls::default(), Calls::default());
    for first in (0..n).step_by(STORE_BATCH) {
        let batch: Vec<(u64, &Page)> = (first..n.min(first + STORE_BATCH))
            .map(|i| (i as u64, input.page(i)))
            .collect();
        let res = store.time_batch(batch.len(), || zswap.store_batch(&batch));
        for (i, r) in (first..).zip(res) {
            if let Err(e) = r {
                eprintln!("zswap: one-thread pass: store of page {i}: {e}");
            }
        }
    }
    let stats = zswap.stats();
    let mut page: Box<Page> = Box::new([0; PAGE_SIZE]);
    let mut verified = 0;
    for i in 0..n {
        page[0] = !input.page(i)[0];
        let res = load.time(|| zswap.load(i as u64, &mut page));
        if res.is_ok() && *page == *input.page(i) {
            verified += 1;
        }
    }
    for i in 0..n {
        zswap.invalidate(i as u64);
    }
    Row {
        compressed_bytes: stats.stored_bytes,
        same_filled_pages: stats.same_filled_pages,
        ..timed_row(
            name,
            "acomp",
            n,
            stats.pool_total_size,
            (&store, &load),
            verified,
        )
    }
}

/// A row of `n` pages held in `memory` bytes, its speeds and latencies from the timed
/// `(store, load)` calls, `verified` pages loaded back as stored.
fn timed_row(
    name: &str,
    kind: &str,
    n: usize,
    memory: u64,
    (store, load): (&Calls, &Calls),
    verified: u64,
) -> Row {
    let original = (n * PAGE_SIZE) as u64;
    // No call timed (a `calls` row whose pages were all kept as they are or filled): no
    // speed, printed `-` (`null` in the JSON), rather than the pages over no time.
    let speed = |c: &Calls| us_of(&c.lat, 0.5).map_or(f64::NAN, |_| mib_s(original, c.time));
    Row {
        name: name.to_owned(),
        kind: kind.into(),
        memory_bytes: memory,
        ratio: original as f64 / memory.max(1) as f64,
        store_mib_s: speed(store),
        load_mib_s: speed(load),
        store_p50_us: us_of(&store.lat, 0.5),
        store_p99_us: us_of(&store.lat, 0.99),
        load_p50_us: us_of(&load.lat, 0.5),
        load_p99_us: us_of(&load.lat, 0.99),
        verified_pages: verified,
        ..blank_row(n)
    }
}

/// The floor under an acomp row: acomp's own calls on the same pages with no tier around
/// them, one thread, as [`acomp_row`] times the tier's. Same-filled pages are skipped, as
/// the tier keeps them without compressing; the rest are compressed in batches of
/// [`STORE_BATCH`] ([`acomp::Acomp::compress_batch`], into one scratch page each, nothing
/// copied out), then each frame decompressed by a call of its own into one page, in order,
/// and checked. `memory_bytes` is the frames' bytes (no pool): kind [`KIND_CALLS`], no goal
/// line.
pub fn calls_row(name: &str, tfm: &acomp::Acomp, input: &Input) -> Row {
    calls(name, tfm, input, false)
}

/// [`calls_row`] with each frame (or page kept as it is) also copied, inside the timed
/// store, to the next place of one buffer as large as the pages, written once before (so
/// resident, and out of the caches by the time it is reached): the floor under the store of
/// a tier that compresses into a scratch page and then copies the frame into its pool, as
/// zswap's `zswap_compress` does (`zs_obj_write`). Its loads decompress the copies, in
/// order. The buffer is as many bytes again as the input's pages; on an input within the
/// last-level cache it stays cached, and the row understates what a copy costs.
pub fn copies_row(name: &str, tfm: &acomp::Acomp, input: &Input) -> Row {
    calls(name, tfm, input, true)
}

fn calls(name: &str, tfm: &acomp::Acomp, input: &Input, copy: bool) -> Row {
    use std::io::{IoSlice, IoSliceMut};
    let n = input.len();
    let (mut store, mut load) = (Calls::default(), Calls::default());
    let mut scratch = vec![[0u8; PAGE_SIZE]; STORE_BATCH];
    // Written, not zeroed: a zeroed `vec!` is mapped on first touch, inside the timing.
    let mut copies = vec![0x5a_u8; if copy { n * PAGE_SIZE } else { 0 }];
    let (mut at, mut places) = (0, Vec::with_capacity(if copy { n } else { 0 }));
    let mut frames: Vec<Option<Vec<u8>>> = Vec::with_capacity(n);
    let mut same_filled = 0;
    for first in (0..n).step_by(STORE_BATCH) {
        let pages: Vec<&Page> = (first..n.min(first + STORE_BATCH))
            .map(|i| input.page(i))
            .collect();
        let (filled, lens) = store.time_batch(pages.len(), || {
            let filled: Vec<bool> = pages
                .iter()
                .map(|p| acomp_zswap::same_filled_word(p).is_some())
                .collect();
            let srcs: Vec<[IoSlice<'_>; 1]> = pages
                .iter()
                .zip(&filled)
                .filter(|(_, f)| !**f)
                .map(|(p, _)| [IoSlice::new(&p[..])])
                .collect();
            let mut dsts: Vec<[IoSliceMut<'_>; 1]> = scratch
                .iter_mut()
                .take(srcs.len())
                .map(|d| [IoSliceMut::new(&mut d[..])])
                .collect();
            let mut reqs: Vec<acomp::Request<'_, '_>> = srcs
                .iter()
                .zip(dsts.iter_mut())
                .map(|(s, d)| acomp::Request::new(s, d))
                .collect();
            tfm.compress_batch(&mut reqs);
            let lens: Vec<Option<usize>> = reqs
                .iter()
                .map(|r| r.outcome().and_then(|o| o.as_ref().ok().copied()))
                .collect();
            if copy {
                drop(reqs);
                drop(dsts);
                let kept = pages.iter().zip(&filled).filter(|(_, f)| !**f);
                for ((p, _), (d, len)) in kept.zip(scratch.iter().zip(&lens)) {
                    let frame: &[u8] = match len {
                        Some(len) if *len < PAGE_SIZE => &d[..*len],
                        _ => &p[..],
                    };
                    copies[at..at + frame.len()].copy_from_slice(frame);
                    places.push(at);
                    at += frame.len();
                }
            }
            (filled, lens)
        });
        let mut lens = lens.into_iter();
        let mut used = scratch.iter();
        for (p, filled) in pages.iter().zip(filled) {
            if filled {
                same_filled += 1;
                frames.push(None);
                continue;
            }
            let d = used.next().expect("a scratch page per request");
            let frame = match lens.next().flatten() {
                Some(len) if len < PAGE_SIZE => d[..len].to_vec(),
                _ => p.to_vec(),
            };
            frames.push(Some(frame));
        }
    }
    let mut page: Box<Page> = Box::new([0; PAGE_SIZE]);
    let mut verified = 0;
    // With the copies, each kept frame is read back from its copy.
    let mut places = places.into_iter();
    for (i, f) in frames.iter().enumerate() {
        let ok = match f {
            None => true,
            Some(f) => {
                let f = match places.next() {
                    Some(at) => &copies[at..at + f.len()],
                    None => &f[..],
                };
                if f.len() == PAGE_SIZE {
                    f == input.page(i)
                } else {
                    page[0] = !input.page(i)[0];
                    let res = load.time(|| {
                        tfm.decompress(&[IoSlice::new(f)], &mut [IoSliceMut::new(&mut page[..])])
                    });
                    res == Ok(PAGE_SIZE) && *page == *input.page(i)
                }
            }
        };
        verified += u64::from(ok);
    }
    let compressed: u64 = frames.iter().flatten().map(|f| f.len() as u64).sum();
    Row {
        compressed_bytes: compressed,
        same_filled_pages: same_filled as u64,
        ..timed_row(name, KIND_CALLS, n, compressed, (&store, &load), verified)
    }
}

/// A row of `pages` pages, one thread, with nothing measured yet.
fn blank_row(pages: usize) -> Row {
    Row {
        name: String::new(),
        kind: String::new(),
        pages: pages as u64,
        original_bytes: (pages * PAGE_SIZE) as u64,
        memory_bytes: 0,
        compressed_bytes: 0,
        same_filled_pages: 0,
        ratio: 0.0,
        threads: 1,
        request_bytes: PAGE_SIZE as u64,
        store_mib_s: 0.0,
        load_mib_s: 0.0,
        store_p50_us: None,
        store_p99_us: None,
        load_p50_us: None,
        load_p99_us: None,
        verified_pages: 0,
        memory_vs_lzo_rle: None,
        store_vs_lzo_rle: None,
        load_vs_lzo_rle: None,
        unit_bytes: None,
        block_bytes: None,
        load_pattern: PATTERN_IN_ORDER.into(),
        load_folio_mib_s: None,
        load_fault_around_mib_s: None,
        load_single_page_mib_s: None,
        recompress: None,
    }
}

/// How the names of [`copies_row`]'s rows end, as the main job names them.
pub const COPIES_SUFFIX: &str = ", calls and copies";

/// `kind` of [`calls_row`]'s rows.
pub const KIND_CALLS: &str = "calls";

/// A zram run's row.
pub fn zram_row(run: &zram::Run, pages: usize) -> Row {
    let original = (pages * PAGE_SIZE) as u64;
    let m = &run.mm_stat;
    Row {
        name: format!("zram {}", run.algorithm),
        kind: "zram".into(),
        memory_bytes: m.mem_used_total,
        compressed_bytes: m.compr_data_size,
        same_filled_pages: m.same_pages,
        ratio: original as f64 / m.mem_used_total.max(1) as f64,
        request_bytes: zram::IO_SIZE as u64,
        store_mib_s: mib_s(original, run.store),
        load_mib_s: mib_s(original, run.load),
        verified_pages: run.verified,
        load_pattern: PATTERN_ZRAM.into(),
        ..blank_row(pages)
    }
}

/// Fills in every row's standing against zram with lzo-rle, where that row exists.
pub fn against_lzo_rle(rows: &mut [Row]) {
    let Some(base) = rows.iter().find(|r| r.name == "zram lzo-rle").cloned() else {
        return;
    };
    for r in rows {
        r.memory_vs_lzo_rle = Some(r.memory_bytes as f64 / base.memory_bytes.max(1) as f64);
        r.store_vs_lzo_rle = Some(r.store_mib_s / base.store_mib_s);
        r.load_vs_lzo_rle = Some(r.load_mib_s / base.load_mib_s);
    }
}

/// Where an acomp row stands against the goal, in one line; `None` without a zram lzo-rle
/// row in the run, where nothing measures it.
pub fn goal(r: &Row) -> Option<String> {
    match (r.memory_vs_lzo_rle, r.store_vs_lzo_rle, r.load_vs_lzo_rle) {
        (Some(m), Some(s), Some(l)) => Some({
            let mark = |ok: bool| if ok { "ok" } else { "MISSED" };
            let all = m <= GOAL_MEMORY && s >= GOAL_SPEED && l >= GOAL_SPEED;
            format!(
                "{}: memory {m:.2}x of zram lzo-rle's ({} <= {GOAL_MEMORY:.2}x), store {s:.2}x \
                 ({} >= 1x), load {l:.2}x ({} >= 1x): {}",
                r.name,
                mark(m <= GOAL_MEMORY),
                mark(s >= GOAL_SPEED),
                mark(l >= GOAL_SPEED),
                if all { "goal met" } else { "goal not met" }
            )
        }),
        _ => None,
    }
}

fn opt(v: Option<f64>) -> String {
    v.map_or("-".into(), |v| format!("{v:.2}"))
}

/// A speed's cell: `-` where none was measured (NaN).
fn speed(v: f64) -> String {
    if v.is_finite() {
        format!("{v:.1}")
    } else {
        "-".into()
    }
}

/// Prints the table, and under it the goal line of every acomp row, where the run has a
/// zram lzo-rle row to judge it against.
pub fn print(rows: &[Row]) {
    let Some(first) = rows.first() else { return };
    println!();
    println!(
        "side by side: the same {} pages ({:.1} MiB), one thread each way",
        first.pages,
        first.original_bytes as f64 / (1024.0 * 1024.0)
    );
    let w = rows.iter().map(|r| r.name.len()).max().unwrap_or(0).max(30);
    println!(
        "  {:<w$} {:>14} {:>7} {:>9} {:>9} {:>8} {:>8} {:>8} {:>8}",
        "configuration",
        "memory (bytes)",
        "ratio",
        "store",
        "load",
        "store",
        "store",
        "load",
        "load"
    );
    println!(
        "  {:<w$} {:>14} {:>7} {:>9} {:>9} {:>8} {:>8} {:>8} {:>8}",
        "", "", "", "MiB/s", "MiB/s", "p50 us", "p99 us", "p50 us", "p99 us"
    );
    for r in rows {
        println!(
            "  {:<w$} {:>14} {:>6.2}x {:>9} {:>9} {:>8} {:>8} {:>8} {:>8}",
            r.name,
            r.memory_bytes,
            r.ratio,
            speed(r.store_mib_s),
            speed(r.load_mib_s),
            opt(r.store_p50_us),
            opt(r.store_p99_us),
            opt(r.load_p50_us),
            opt(r.load_p99_us)
        );
    }
    println!(
        "  memory: acomp's pool pages, zram's mem_used_total; MiB/s: the pages' bytes over the"
    );
    println!(
        "  time in the store or load calls alone (acomp: stores in batches of {STORE_BATCH} pages,"
    );
    println!(
        "  loads a call per page; zram: 1 MiB O_DIRECT writes and reads, as dd); latencies per"
    );
    println!(
        "  page, acomp only (a store's: its batch's time over its pages); `calls alone`: acomp's"
    );
    println!(
        "  own calls on the same pages with no tier (the floor under its row; memory: the frames)"
    );
    if rows.iter().any(|r| r.name.ends_with(COPIES_SUFFIX)) {
        println!(
            "  `calls and copies`: the same calls, each frame also copied, timed, into one buffer"
        );
        println!(
            "  the pages' size written before (the floor under a tier that copies into a pool)"
        );
    }
    for r in rows {
        if r.verified_pages != r.pages {
            println!(
                "  {}: ONLY {} OF {} PAGES CAME BACK AS STORED",
                r.name, r.verified_pages, r.pages
            );
        }
    }
    // (The `--recompress` row has a goal of its own: `recomp::print`.)
    let plain = |r: &&Row| r.kind == "acomp" && r.recompress.is_none();
    for line in rows.iter().filter(plain).filter_map(goal) {
        println!("  goal: {line}");
    }
}

/// The JSON written by `--json`: the source of the pages and one object per configuration.
/// `Default` is empty tables (the tests build one table at a time).
#[derive(Debug, Default, Serialize)]
pub struct Summary<'a> {
    /// Where the pages came from (a file, or `pid N (comm)`).
    pub source: String,
    /// Bytes per page: 4096.
    pub page_size_bytes: u64,
    /// Why zram has no rows, where it has none and was asked for.
    pub zram_unavailable: Option<String>,
    /// The rows of the table.
    pub configurations: &'a [Row],
    /// `--pager`'s rows (pages paged out and touched back); absent without `--pager`.
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    pub paging: &'a [crate::paging::Row],
    /// Why a side of `--pager` has no rows, a line each; absent where none is missing.
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    pub paging_unavailable: &'a [String],
    /// `--under-budget`'s rows (`kind` `budget`); absent without it.
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    pub budget: &'a [crate::budget::Row],
    /// Why a side of `--under-budget` has no row, a line each; absent where none is missing.
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    pub budget_unavailable: &'a [String],
    /// `--record-store`'s rows (`kind` `record_store`); absent without it.
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    pub record_store: &'a [crate::recordstore::Row],
    /// Why a side of `--record-store` has no row, a line each; absent where none is missing.
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    pub record_store_unavailable: &'a [String],
}
