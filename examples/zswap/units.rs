//! Larger compression units (`--unit`): a unit of contiguous pages (a large folio) stored as
//! one folio in the tier (`acomp_zswap::Zswap::store_folio`), as zswap keeps a large folio's
//! entry and zram's multi-page compression its objects. The store, its entries and its
//! counters are the tier's; this module measures it.
//!
//! - Store: a unit whose pages are all same-filled is kept as their fill values (no memory).
//!   Any other is compressed as one frame (zstd, blocks of at most `--unit-block` bytes,
//!   `ZstdParams::block_size_max`) or one raw block (lz4), its same-filled pages included.
//!   Where the frame is not smaller than the unit, each page is kept on its own instead, as
//!   today's zswap keeps it: its fill value, or the page as it is. A unit of one page is a
//!   page stored alone.
//! - Load of one page (a page fault): a range read of the page out of the frame (zstd; lz4,
//!   without range reads, decodes the unit into a scratch buffer and copies the page out).
//!   Through a loading thread's [`UnitCache`] (fault-around, [`load_page_cached`]), the unit
//!   is decoded whole once and its pages copied out.
//! - Load of a unit (a folio swap-in): one decompression of the frame into the unit.
//! - A page written after its unit was stored is stored again alone, as zswap stores a split
//!   folio's page: the frame no longer serves it.
//! - Invalidate of a page: a page kept on its own is freed at once; a frame stays until every
//!   page of its unit has left it. Those pages, left but still held, are counted with the
//!   frames' bytes that hold them (`held_folio_pages`, `held_folio_bytes`).

use std::time::Duration;

use acomp::{Acomp, Lz4Params, ZstdParams};
use acomp_zswap::{LoadError, Stats, Zswap};
use rand::SeedableRng;
use rand::rngs::StdRng;
use rand::seq::SliceRandom;

use crate::cache::UnitCache;
use crate::compare::Row;
use crate::measure::{Calls, mib_s, thread_cpu, us};
use acomp_pages::input::Input;
use acomp_zswap::PAGE_SIZE;
use acomp_zswap::Page;

/// Most pages in a unit: 256 KiB, the tier's largest folio.
pub const MAX_UNIT_PAGES: usize = acomp_zswap::MAX_FOLIO_PAGES;

/// The largest block of a unit's frame, `1K` to `128K`, in bytes.
///
/// # Errors
///
/// A message naming what was given, for any other.
pub fn parse_block(s: &str) -> Result<u32, String> {
    let bad = || format!("block size {s:?}: expected 1K to 128K");
    let kib: u32 = s
        .trim()
        .strip_suffix(['K', 'k'])
        .ok_or_else(bad)?
        .parse()
        .map_err(|_| bad())?;
    if !(1..=128).contains(&kib) {
        return Err(bad());
    }
    Ok(kib * 1024)
}

/// Pages in a unit of `s` bytes: `4K`, `16K`, `64K`... (4 KiB times a power of two, at most
/// 256 KiB).
///
/// # Errors
///
/// A message naming what was given, for any other.
pub fn parse_unit(s: &str) -> Result<usize, String> {
    let bad = || format!("unit {s:?}: expected 4K, 8K, 16K, 32K, 64K, 128K or 256K");
    let kib: usize = s
        .trim()
        .strip_suffix(['K', 'k'])
        .ok_or_else(bad)?
        .parse()
        .map_err(|_| bad())?;
    let pages = kib / 4;
    if !kib.is_multiple_of(4) || !pages.is_power_of_two() || pages > MAX_UNIT_PAGES {
        return Err(bad());
    }
    Ok(pages)
}

/// Loads the page at `offset` through `cache` (the loading thread's): a page a folio's
/// frame serves is copied out of the decoded folio, which is decoded whole into the cache
/// where it is not there (a fault-around swap-in: the folio's other pages follow). Pages
/// stored alone load as they are. The cache is keyed by the folio's id, which no other
/// folio ever has: a page that left its folio is no longer served by that id.
///
/// # Errors
///
/// As [`Zswap::load`].
pub fn load_page_cached(
    tier: &Zswap,
    offset: u64,
    out: &mut Page,
    cache: &mut UnitCache,
) -> Result<(), LoadError> {
    let Some(folio) = tier.folio(offset) else {
        return tier.load(offset, out).map(|_| ());
    };
    let at = (offset - folio.first) as usize * PAGE_SIZE..;
    if let Some(data) = cache.get(folio) {
        out.copy_from_slice(&data[at][..PAGE_SIZE]);
        return Ok(());
    }
    let (got, data) = cache.fill(|buf| {
        let (pages, _) = buf.as_chunks_mut::<PAGE_SIZE>();
        tier.decode_folio(offset, pages)
    })?;
    if got != folio {
        // Stored again between the two calls: what serves the page now.
        return tier.load(offset, out).map(|_| ());
    }
    out.copy_from_slice(&data[at][..PAGE_SIZE]);
    Ok(())
}

/// Objects that are frames: folios' and pages compressed alone.
pub fn frames(s: &Stats) -> u64 {
    let alone = s.stored_pages - s.folio_pages;
    s.stored_folios + alone - s.same_filled_pages - s.stored_incompressible_pages
}

/// What a unit is compressed with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Codec {
    /// zstd at `level`, its blocks at most `block` bytes (`ZstdParams::block_size_max`).
    Zstd {
        /// The compression level.
        level: i32,
        /// The largest block, bytes.
        block: u32,
    },
    /// lz4 raw blocks, acceleration 1: a unit is one block (no range reads).
    Lz4,
}

/// One configuration of the units table: a codec and a unit size.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UnitConfig {
    /// What compresses the units.
    pub codec: Codec,
    /// Pages per unit.
    pub unit_pages: usize,
}

impl UnitConfig {
    /// The transform serving these units.
    ///
    /// # Errors
    ///
    /// Where acomp refuses the parameters.
    pub fn transform(&self) -> Result<Acomp, acomp::Error> {
        match self.codec {
            Codec::Zstd { level, block } => {
                Acomp::with_zstd(ZstdParams::default().level(level).block_size_max(block))
            }
            Codec::Lz4 => Acomp::with_lz4(
                Lz4Params::default().request_max((self.unit_pages * PAGE_SIZE).max(128 << 10)),
            ),
        }
    }

    /// `4K`, `64K`...
    pub fn label(&self) -> String {
        format!("{}K", self.unit_pages * PAGE_SIZE / 1024)
    }

    /// `zstd -1/128K`, `lz4`: the codec in a few characters.
    pub fn codec_label(&self) -> String {
        match self.codec {
            Codec::Zstd { level, block } => format!("zstd {level}/{}K", block / 1024),
            Codec::Lz4 => "lz4".into(),
        }
    }

    /// The side-by-side table's name: `acomp zstd level 3, 64K units` (page-sized blocks),
    /// `acomp zstd level -1, 64K units, 128K blocks`, `acomp lz4, 64K units`.
    pub fn name(&self) -> String {
        match self.codec {
            Codec::Zstd { level, block: 4096 } => {
                format!("acomp zstd level {level}, {} units", self.label())
            }
            Codec::Zstd { level, block } => format!(
                "acomp zstd level {level}, {} units, {}K blocks",
                self.label(),
                block / 1024
            ),
            Codec::Lz4 => format!("acomp lz4, {} units", self.label()),
        }
    }

    /// The largest block in bytes: zstd's limit, or the unit for lz4.
    pub fn block_bytes(&self) -> u64 {
        match self.codec {
            Codec::Zstd { block, .. } => u64::from(block),
            Codec::Lz4 => (self.unit_pages * PAGE_SIZE) as u64,
        }
    }
}

/// Every configuration asked for: each unit size (4 KiB units beside any larger) with each
/// zstd level and block size, and with lz4 where asked; nothing where no unit is asked for.
/// Sorted by codec, then unit size; duplicates once.
pub fn configs(unit_pages: &[usize], levels: &[i32], blocks: &[u32], lz4: bool) -> Vec<UnitConfig> {
    if unit_pages.is_empty() {
        return Vec::new();
    }
    let mut sizes = unit_pages.to_vec();
    sizes.push(1);
    sizes.sort_unstable();
    sizes.dedup();
    let mut codecs: Vec<Codec> = levels
        .iter()
        .flat_map(|&level| {
            blocks
                .iter()
                .map(move |&block| Codec::Zstd { level, block })
        })
        .collect();
    if lz4 {
        codecs.push(Codec::Lz4);
    }
    let mut out = Vec::new();
    for codec in codecs {
        for &unit_pages in &sizes {
            // A 4 KiB unit is the same frame whatever the block limit (4 KiB and up).
            let codec = match codec {
                Codec::Zstd { level, block } if unit_pages == 1 => Codec::Zstd {
                    level,
                    block: block.min(4096),
                },
                c => c,
            };
            let c = UnitConfig { codec, unit_pages };
            if !out.contains(&c) {
                out.push(c);
            }
        }
    }
    out
}

/// One pass of timed calls (the stores, or the loads of one pattern): the time in the
/// calls, their latencies (per call), and the thread CPU time of the whole pass.
#[derive(Debug, Clone, Default)]
pub struct Pass {
    /// The load calls.
    pub calls: Calls,
    /// Thread CPU time of the pass (the check of the bytes included).
    pub cpu: Duration,
}

/// One configuration measured on one thread: every unit stored in order, then loaded in
/// each of the three patterns, then half the pages invalidated, then all.
#[derive(Debug, Clone)]
pub struct UnitRun {
    /// What was measured.
    pub config: UnitConfig,
    /// Pages per unit.
    pub unit_pages: usize,
    /// Pages stored, and units.
    pub pages: usize,
    /// See `pages`.
    pub units: usize,
    /// Counters with every unit stored.
    pub stored: Stats,
    /// The store calls (a unit each) and the thread CPU time of their pass.
    pub store: Pass,
    /// Pattern 3: single pages in random order (a page fault each), range reads.
    pub single: Pass,
    /// Pattern 1: whole units in random unit order (large-folio swap-in), a call per unit.
    pub folio: Pass,
    /// Pattern 2: units in random order, the pages of each in address order, a call per
    /// page through a per-thread cache of decoded units (fault-around).
    pub around: Pass,
    /// Pattern 2's cache: loads served from it, and units decoded into it.
    pub cache_hits: u64,
    /// See `cache_hits`.
    pub cache_misses: u64,
    /// Counters with a random half of the pages invalidated.
    pub half: Stats,
    /// Backing pages once every page is invalidated (0 unless leaked).
    pub pool_pages_at_end: u64,
    /// Pages that came back right in all three patterns.
    pub verified_pages: usize,
}

/// Measures every configuration, in order.
///
/// # Errors
///
/// Where acomp refuses the parameters.
pub fn run_all(
    configs: &[UnitConfig],
    input: &Input,
    seed: u64,
) -> Result<Vec<UnitRun>, acomp::Error> {
    configs.iter().map(|c| measure(*c, input, seed)).collect()
}

/// Entries of pattern 2's cache: the unit being faulted in and the one before.
pub const CACHE_ENTRIES: usize = 2;

/// Measures one configuration on `input`'s pages, on this thread.
///
/// # Errors
///
/// Where acomp refuses the parameters.
pub fn measure(config: UnitConfig, input: &Input, seed: u64) -> Result<UnitRun, acomp::Error> {
    let unit_pages = config.unit_pages;
    // No budget: the units table measures memory, not writeback.
    let store = crate::zswap::tier(config.transform()?, None);
    let n = input.len();
    let units = n.div_ceil(unit_pages);
    let unit_len = |u: usize| unit_pages.min(n - u * unit_pages);
    let mut stores = Pass::default();
    let cpu = thread_cpu();
    for u in 0..units {
        let (pages, _) = input
            .pages(u * unit_pages, unit_len(u))
            .as_chunks::<PAGE_SIZE>();
        let res = stores
            .calls
            .time(|| store.store_folio((u * unit_pages) as u64, pages));
        if let Err(e) = res {
            eprintln!("zswap: {}: store of unit {u}: {e}", config.name());
        }
    }
    stores.cpu = thread_cpu() - cpu;
    let stored = store.stats();
    let mut rng = StdRng::seed_from_u64(seed);

    // Pattern 3: single pages, random order.
    let mut ok = vec![true; n];
    let mut order: Vec<usize> = (0..n).collect();
    order.shuffle(&mut rng);
    let mut page: Box<Page> = Box::new([0; PAGE_SIZE]);
    let mut single = Pass::default();
    let cpu = thread_cpu();
    for &i in &order {
        page[0] = !input.page(i)[0];
        let res = single.calls.time(|| store.load(i as u64, &mut page));
        ok[i] &= res.is_ok() && *page == *input.page(i);
    }
    single.cpu = thread_cpu() - cpu;

    // Pattern 1: whole units, random order.
    let mut unit_order: Vec<usize> = (0..units).collect();
    unit_order.shuffle(&mut rng);
    let mut buf: Vec<Page> = vec![[0; PAGE_SIZE]; unit_pages];
    let mut folio = Pass::default();
    let cpu = thread_cpu();
    for &u in &unit_order {
        let want = input.pages(u * unit_pages, unit_len(u));
        buf[0][0] = !want[0];
        let res = folio
            .calls
            .time(|| store.load_pages((u * unit_pages) as u64, &mut buf[..unit_len(u)]));
        let right = res.is_ok() && buf[..unit_len(u)].as_flattened() == want;
        for o in &mut ok[u * unit_pages..u * unit_pages + unit_len(u)] {
            *o &= right;
        }
    }
    folio.cpu = thread_cpu() - cpu;

    // Pattern 2: units in random order, pages in address order, through the cache.
    unit_order.shuffle(&mut rng);
    let mut cache = UnitCache::new(CACHE_ENTRIES, unit_pages * PAGE_SIZE);
    let mut around = Pass::default();
    let cpu = thread_cpu();
    for &u in &unit_order {
        let first = u * unit_pages;
        for (i, o) in (first..).zip(&mut ok[first..first + unit_len(u)]) {
            page[0] = !input.page(i)[0];
            let res = around
                .calls
                .time(|| load_page_cached(&store, i as u64, &mut page, &mut cache));
            *o &= res.is_ok() && *page == *input.page(i);
        }
    }
    around.cpu = thread_cpu() - cpu;

    order.shuffle(&mut StdRng::seed_from_u64(seed ^ 0x5eed));
    let (first, rest) = order.split_at(n / 2);
    first.iter().for_each(|&i| {
        store.invalidate(i as u64);
    });
    let half = store.stats();

    // Pages of folios written after the folio was stored: every 16th page still stored
    // kept again on its own with other bytes, then every page still stored loaded through
    // the same cache (which holds the units last decoded) and checked against what it now
    // holds. (After `half`: the counters are of the units as stored.)
    let mut gone = vec![false; n];
    first.iter().for_each(|&i| gone[i] = true);
    let rewritten = |i: usize| i % 16 == 7 && !gone[i];
    let other = |i: usize| -> Box<Page> {
        let mut p: Box<Page> = Box::new(*input.page(i));
        p.iter_mut().for_each(|b| *b = !*b);
        p
    };
    for i in (0..n).filter(|&i| rewritten(i)) {
        if let Err(e) = store.store(i as u64, &other(i)) {
            eprintln!(
                "zswap: {}: store of page {i} on its own: {e}",
                config.name()
            );
            ok[i] = false;
        }
    }
    for &u in &unit_order {
        for i in (u * unit_pages..u * unit_pages + unit_len(u)).filter(|&i| !gone[i]) {
            let res = load_page_cached(&store, i as u64, &mut page, &mut cache);
            let want = if rewritten(i) {
                other(i)
            } else {
                Box::new(*input.page(i))
            };
            ok[i] &= res.is_ok() && *page == *want;
        }
    }
    rest.iter().for_each(|&i| {
        store.invalidate(i as u64);
    });
    Ok(UnitRun {
        config,
        unit_pages,
        pages: n,
        units,
        stored,
        store: stores,
        single,
        folio,
        around,
        cache_hits: cache.hits,
        cache_misses: cache.misses,
        half,
        pool_pages_at_end: store.stats().pool_total_size / PAGE_SIZE as u64,
        verified_pages: ok.iter().filter(|&&o| o).count(),
    })
}

impl UnitRun {
    /// `4K`, `64K`...
    pub fn label(&self) -> String {
        self.config.label()
    }

    /// `zstd -1/128K 64K`: codec and unit, for the units table.
    pub fn tag(&self) -> String {
        format!("{} {}", self.config.codec_label(), self.label())
    }

    fn per_page_us(&self, t: Duration) -> f64 {
        t.as_secs_f64() * 1e6 / self.pages.max(1) as f64
    }

    /// Store CPU per page in µs.
    pub fn store_cpu_us(&self) -> f64 {
        self.per_page_us(self.store.cpu)
    }

    /// CPU time per page of the whole-unit load pass in µs: less noisy than the time in
    /// the calls on a shared machine (the check of the bytes, the same for every size,
    /// included).
    pub fn unit_load_us(&self) -> f64 {
        self.per_page_us(self.folio.cpu)
    }

    /// MiB/s of pattern 1 (whole units), 2 (fault-around) and 3 (single pages).
    pub fn load_mib_s(&self) -> [f64; 3] {
        let original = (self.pages * PAGE_SIZE) as u64;
        [
            mib_s(original, self.folio.calls.time),
            mib_s(original, self.around.calls.time),
            mib_s(original, self.single.calls.time),
        ]
    }

    /// The side-by-side table's row: store MiB/s and latencies per call (a unit); load
    /// MiB/s of whole units in random order (pattern 1), with patterns 2 and 3 beside it;
    /// load latencies of single pages (pattern 3).
    pub fn row(&self) -> Row {
        let original = (self.pages * PAGE_SIZE) as u64;
        let memory = self.stored.pool_total_size;
        let [folio, around, single] = self.load_mib_s();
        Row {
            name: self.config.name(),
            kind: "acomp".into(),
            pages: self.pages as u64,
            original_bytes: original,
            memory_bytes: memory,
            compressed_bytes: self.stored.stored_bytes,
            same_filled_pages: self.stored.same_filled_pages,
            ratio: original as f64 / memory.max(1) as f64,
            threads: 1,
            request_bytes: (self.unit_pages * PAGE_SIZE) as u64,
            store_mib_s: mib_s(original, self.store.calls.time),
            load_mib_s: folio,
            store_p50_us: Some(us(&self.store.calls.lat, 0.5)),
            store_p99_us: Some(us(&self.store.calls.lat, 0.99)),
            load_p50_us: Some(us(&self.single.calls.lat, 0.5)),
            load_p99_us: Some(us(&self.single.calls.lat, 0.99)),
            verified_pages: self.verified_pages as u64,
            memory_vs_lzo_rle: None,
            store_vs_lzo_rle: None,
            load_vs_lzo_rle: None,
            unit_bytes: Some((self.unit_pages * PAGE_SIZE) as u64),
            block_bytes: Some(self.config.block_bytes()),
            load_pattern: crate::compare::PATTERN_FOLIO.into(),
            load_folio_mib_s: Some(folio),
            load_fault_around_mib_s: Some(around),
            load_single_page_mib_s: Some(single),
            recompress: None,
        }
    }
}

/// The targets for 64 KiB units against 4 KiB units.
pub const TARGET_MEMORY: f64 = 0.82;
/// See [`TARGET_MEMORY`]: store CPU per page.
pub const TARGET_STORE_CPU: f64 = 0.6;
/// See [`TARGET_MEMORY`]: whole-unit load time per page.
pub const TARGET_UNIT_LOAD: f64 = 0.5;
/// See [`TARGET_MEMORY`]: single-page load p50.
pub const TARGET_PAGE_LOAD_P50: f64 = 2.0;

/// Prints the units table, each size against 4 KiB units, and where 64 KiB units stand
/// against the targets.
pub fn print(runs: &[UnitRun]) {
    let Some(first) = runs.first() else { return };
    // Each run beside the 4 KiB units of its codec (at 4 KiB, zstd's block limit is moot).
    let base_of = |r: &UnitRun| {
        runs.iter().find(|b| {
            b.unit_pages == 1
                && match (b.config.codec, r.config.codec) {
                    (Codec::Zstd { level: a, .. }, Codec::Zstd { level: c, .. }) => a == c,
                    (a, c) => a == c,
                }
        })
    };
    println!();
    println!(
        "units: the same {} pages, one thread; stored a unit per call in order, loaded a page \
         per call in random order (range reads), then a unit per call in random order; each \
         against 4K units of its codec",
        first.pages
    );
    println!(
        "  units stored: {}",
        runs.iter()
            .map(|r| format!("{} {}", r.tag(), r.units))
            .collect::<Vec<_>>()
            .join(", ")
    );
    println!(
        "  {:<16} {:>14} {:>6} {:>9} {:>6} {:>9} {:>6} {:>8} {:>8} {:>6} {:>8} {:>12}",
        "unit",
        "memory (bytes)",
        "vs 4K",
        "store",
        "vs 4K",
        "unit load",
        "vs 4K",
        "page",
        "page",
        "vs 4K",
        "held",
        "held frame"
    );
    println!(
        "  {:<16} {:>14} {:>6} {:>9} {:>6} {:>9} {:>6} {:>8} {:>8} {:>6} {:>8} {:>12}",
        "", "", "", "CPU us/p", "", "CPU us/p", "", "p50 us", "p99 us", "p50", "pages", "bytes"
    );
    let ratio = |a: f64, b: Option<f64>| b.map_or("-".into(), |b| format!("{:.2}", a / b));
    for r in runs {
        let base = base_of(r);
        println!(
            "  {:<16} {:>14} {:>6} {:>9.2} {:>6} {:>9.2} {:>6} {:>8.2} {:>8.2} {:>6} {:>8} {:>12}",
            r.tag(),
            r.stored.pool_total_size,
            ratio(
                r.stored.pool_total_size as f64,
                base.map(|b| b.stored.pool_total_size as f64)
            ),
            r.store_cpu_us(),
            ratio(r.store_cpu_us(), base.map(UnitRun::store_cpu_us)),
            r.unit_load_us(),
            ratio(r.unit_load_us(), base.map(UnitRun::unit_load_us)),
            us(&r.single.calls.lat, 0.5),
            us(&r.single.calls.lat, 0.99),
            ratio(
                us(&r.single.calls.lat, 0.5),
                base.map(|b| us(&b.single.calls.lat, 0.5))
            ),
            r.half.held_folio_pages,
            r.half.held_folio_bytes
        );
    }
    println!(
        "  frames: {}; pages kept on their own: {}; held: pages invalidated (a random half) \
         whose unit's frame stays for its other pages, and those frames' bytes",
        runs.iter()
            .map(|r| format!("{} {}", r.tag(), frames(&r.stored)))
            .collect::<Vec<_>>()
            .join(", "),
        runs.iter()
            .map(|r| format!(
                "{} {} raw + {} same-filled",
                r.tag(),
                r.stored.stored_incompressible_pages,
                r.stored.same_filled_pages
            ))
            .collect::<Vec<_>>()
            .join(", ")
    );
    println!(
        "  memory with that half invalidated: {}",
        runs.iter()
            .map(|r| format!(
                "{} {} bytes ({:.0}% of full)",
                r.tag(),
                r.half.pool_total_size,
                100.0 * r.half.pool_total_size as f64 / r.stored.pool_total_size.max(1) as f64
            ))
            .collect::<Vec<_>>()
            .join(", ")
    );
    println!(
        "  pattern 2's cache ({CACHE_ENTRIES} units per thread): {}",
        runs.iter()
            .map(|r| format!(
                "{} {} hits, {} decodes",
                r.tag(),
                r.cache_hits,
                r.cache_misses
            ))
            .collect::<Vec<_>>()
            .join(", ")
    );
    for r in runs {
        if r.pool_pages_at_end != 0 {
            println!(
                "  {} units: {} BACKING PAGES LEFT AFTER EVERY PAGE WAS INVALIDATED",
                r.tag(),
                r.pool_pages_at_end
            );
        }
    }
    for r in runs.iter().filter(|r| r.unit_pages > 1) {
        let Some(base) = base_of(r) else { continue };
        let m = r.stored.pool_total_size as f64 / base.stored.pool_total_size.max(1) as f64;
        let s = r.store_cpu_us() / base.store_cpu_us();
        let l = r.unit_load_us() / base.unit_load_us();
        let p = us(&r.single.calls.lat, 0.5) / us(&base.single.calls.lat, 0.5);
        let mark = |ok: bool| if ok { "ok" } else { "MISSED" };
        let targets = if r.unit_pages == 16 {
            "targets"
        } else {
            "64K targets"
        };
        println!(
            "  {} units vs 4K ({targets}): memory {m:.2}x ({} <= {TARGET_MEMORY}), store CPU/page \
             {s:.2}x ({} <= {TARGET_STORE_CPU}), unit load CPU/page {l:.2}x ({} <= \
             {TARGET_UNIT_LOAD}), page load p50 {p:.2}x ({} <= {TARGET_PAGE_LOAD_P50}), p99 {:.2} us",
            r.tag(),
            mark(m <= TARGET_MEMORY),
            mark(s <= TARGET_STORE_CPU),
            mark(l <= TARGET_UNIT_LOAD),
            mark(p <= TARGET_PAGE_LOAD_P50),
            us(&r.single.calls.lat, 0.99)
        );
    }
}
