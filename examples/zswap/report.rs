//! What the example prints: a summary at a glance, then zswap's counters (as its debugfs
//! names them), latencies beside raw zstd-safe's, throughput and acomp's request paths.

use crate::measure::{Latency, us};
use crate::workload::{Phase, Raw, Report};
use acomp_pages::input::Input;
use acomp_zswap::PAGE_SIZE;

/// Quantile `q` of `h` in µs, or `-` where nothing was timed.
fn p(h: &Latency, q: f64) -> String {
    if h.is_empty() {
        "-".into()
    } else {
        format!("{:.2}", us(h, q))
    }
}

fn mib(bytes: f64) -> String {
    format!("{:.1} MiB", bytes / (1024.0 * 1024.0))
}

/// `a`'s p50 over `b`'s, and the smaller sample count, if both have values.
fn ratio(a: &Latency, b: &Latency) -> Option<(f64, u64)> {
    (!a.is_empty() && !b.is_empty()).then(|| {
        (
            a.value_at_quantile(0.5) as f64 / b.value_at_quantile(0.5) as f64,
            a.len().min(b.len()),
        )
    })
}

/// A p50 ratio with the requests behind it: no verdict, since no target is measured here.
fn shown(r: Option<(f64, u64)>) -> String {
    match r {
        Some((r, n)) => format!("{r:.3}x  ({n} requests)"),
        None => "-  (no such requests)".into(),
    }
}

/// The raw baselines to show: with the run's threads, and on one thread where that is
/// another run.
fn raws(r: &Report) -> Vec<&Raw> {
    if r.raw.threads == r.raw_single.threads {
        vec![&r.raw]
    } else {
        vec![&r.raw, &r.raw_single]
    }
}

fn row(name: &str, h: &Latency) {
    println!(
        "  {name:<40} {:>9} {:>9} {:>9}",
        p(h, 0.5),
        p(h, 0.99),
        h.len()
    );
}

fn phase(name: &str, ph: &Phase) {
    println!(
        "  {name:<40} {:>9}/s  ({} pages in {:.3} s)",
        mib(ph.throughput()),
        ph.pages,
        ph.wall.as_secs_f64()
    );
}

/// The summary at a glance: what was stored, the ratio, store and load speed, and whether
/// every page came back.
pub fn summary(input: &Input, level: i32, r: &Report) {
    let original = (r.pages * PAGE_SIZE) as f64;
    let s = &r.stored;
    println!(
        "zswap: {} pages ({}) of {}, {} threads, zstd level {level}",
        r.pages,
        mib(original),
        input.path.display(),
        r.threads
    );
    println!(
        "  stored    in a pool of {}: ratio {:.2}x ({} same-filled pages kept as their value, \
         {} incompressible kept as they are)",
        mib(s.pool.total_size() as f64),
        original / s.pool.total_size().max(1) as f64,
        s.stats.same_filled_pages,
        s.stats.stored_incompressible_pages
    );
    println!(
        "  speed     store {}/s, load {}/s (random order), {} threads, wall clock",
        mib(r.store_phase.throughput()),
        mib(r.load_phase.throughput()),
        r.threads
    );
    println!(
        "  verified  {} loads byte for byte (every page, before and after churn): {}",
        r.verified,
        match r.failed {
            0 => "every page came back as stored".to_owned(),
            n => format!("{n} FAILED"),
        }
    );
}

/// Prints the details below the summary.
pub fn print(input: &Input, r: &Report) {
    let original = (r.pages * PAGE_SIZE) as u64;
    println!();
    println!(
        "details: {} ({} bytes, {} pages of {PAGE_SIZE} bytes)",
        input.path.display(),
        input.file_len(),
        r.pages,
    );
    if input.padding > 0 {
        println!(
            "  not whole pages: {} zero bytes pad the last page of each file",
            input.padding
        );
    }

    println!();
    println!("counters (as zswap's debugfs names them)  stored    churned");
    let (s, c) = (&r.stored, &r.churned);
    let counter = |name: &str, a: u64, b: u64| println!("  {name:<34} {a:>12} {b:>10}");
    counter("stored_pages", s.stats.stored_pages, c.stats.stored_pages);
    counter(
        "same_filled_pages",
        s.stats.same_filled_pages,
        c.stats.same_filled_pages,
    );
    counter(
        "stored_incompressible_pages",
        s.stats.stored_incompressible_pages,
        c.stats.stored_incompressible_pages,
    );
    counter(
        "reject_compress_poor",
        s.stats.reject_compress_poor,
        c.stats.reject_compress_poor,
    );
    counter(
        "reject_compress_fail",
        s.stats.reject_compress_fail,
        c.stats.reject_compress_fail,
    );
    counter(
        "pool_limit_hit",
        s.stats.pool_limit_hit,
        c.stats.pool_limit_hit,
    );
    counter(
        "reject_reclaim_fail",
        s.stats.reject_reclaim_fail,
        c.stats.reject_reclaim_fail,
    );
    counter(
        "decompress_fail",
        s.stats.decompress_fail,
        c.stats.decompress_fail,
    );
    counter(
        "pool_total_size (bytes)",
        s.pool.total_size() as u64,
        c.pool.total_size() as u64,
    );
    counter("  backing pages", s.pool.pages as u64, c.pool.pages as u64);
    counter("  objects", s.pool.objects as u64, c.pool.objects as u64);
    counter(
        "  object bytes (frames, pages)",
        s.stats.stored_bytes,
        c.stats.stored_bytes,
    );
    counter("original bytes", original, original);
    let ratio_of = |pool: usize| original as f64 / pool.max(1) as f64;
    println!(
        "  {:<34} {:>11.2}x {:>9.2}x",
        "compression ratio (original/pool)",
        ratio_of(s.pool.total_size()),
        ratio_of(c.pool.total_size())
    );
    println!(
        "  {:<34} {:>11.2}x {:>9.2}x",
        "frame ratio (original/objects)",
        original as f64 / s.stats.stored_bytes.max(1) as f64,
        original as f64 / c.stats.stored_bytes.max(1) as f64
    );
    println!(
        "  {:<34} {:>11.1}% {:>9.1}%",
        "pool packing (object bytes/pool)",
        100.0 * s.stats.stored_bytes as f64 / s.pool.total_size().max(1) as f64,
        100.0 * c.stats.stored_bytes as f64 / c.pool.total_size().max(1) as f64
    );
    if s.stats.stored_bytes * 2 < s.pool.total_size() as u64 {
        println!(
            "  (few objects per size class: most zspages are part empty, as in zsmalloc; \
             a larger --input shows the ratio a full pool reaches)"
        );
    }

    println!();
    println!("latency (us), whole call                      p50       p99     count");
    row("store, compressed", &r.store_compressed);
    row(
        "store, incompressible (kept as is)",
        &r.store_incompressible,
    );
    row("store, all (incl. same-filled)", &r.store_all);
    row("load, one fragment (one-shot)", &r.load_one);
    row("load, straddling (stream)", &r.load_straddling);
    row("load, copied or filled", &r.load_other);
    for raw in raws(r) {
        let t = raw.threads;
        row(
            &format!("raw compress2, compressed pages, {t} thr"),
            &raw.compress,
        );
        row(
            &format!("raw compress2, incompressible, {t} thr"),
            &raw.compress_incompressible,
        );
        row(
            &format!("raw decompress, one-frag pages, {t} thr"),
            &raw.decompress_one,
        );
        row(
            &format!("raw decompress, straddling pages, {t} thr"),
            &raw.decompress_straddling,
        );
    }

    println!();
    println!("overhead of the embedding: p50 over raw zstd-safe p50 on the same pages");
    for raw in raws(r) {
        let t = raw.threads;
        println!(
            "  {:<40} {}",
            format!("store / raw compress ({t} thr)"),
            shown(ratio(&r.store_compressed, &raw.compress))
        );
        println!(
            "  {:<40} {}",
            format!("store incompr. / raw compress ({t} thr)"),
            ratio(&r.store_incompressible, &raw.compress_incompressible)
                .map_or("-".into(), |(x, _)| format!(
                    "{x:.3}x  (page copied into the pool)"
                ))
        );
        println!(
            "  {:<40} {}",
            format!("load one-frag / raw decompress ({t} thr)"),
            shown(ratio(&r.load_one, &raw.decompress_one))
        );
        println!(
            "  {:<40} {}",
            format!("load straddling / raw decompr. ({t} thr)"),
            ratio(&r.load_straddling, &raw.decompress_straddling)
                .map_or("-".into(), |(x, _)| format!("{x:.3}x  (stream path)"))
        );
    }

    println!();
    println!("throughput ({} threads)", r.threads);
    phase("store", &r.store_phase);
    phase("load and verify (random order)", &r.load_phase);
    phase("churn (invalidate + store half)", &r.churn_phase);
    phase("load and verify again", &r.verify_phase);

    println!();
    let a = &r.acomp;
    println!("acomp requests (Acomp::stats)");
    println!(
        "  compress {:>12}   decompress {:>12}",
        a.compress, a.decompress
    );
    println!(
        "  one-shot {:>12}   stream     {:>12}",
        a.one_shot, a.stream
    );
    if a.linearised > 0 {
        println!(
            "  linearised {:>10}   (lz4's multi-fragment path)",
            a.linearised
        );
    }
    println!(
        "  errors: no_space {}, corrupt {}, invalid {}, no_memory {}; busy {}, fallback {}",
        a.no_space, a.corrupt, a.invalid, a.no_memory, a.busy, a.fallback
    );
    println!(
        "  workspaces {} of {} slots, {}",
        a.workspaces,
        a.slots,
        mib(a.workspace_bytes as f64)
    );
    let (one_shot, stream) = r.load_paths;
    let (one, two) = (r.load_one.len(), r.load_straddling.len());
    println!(
        "  first load pass: one-shot {one_shot} for {one} one-fragment loads, \
         stream {stream} for {two} straddling loads: {}",
        if two == 0 {
            "no load came in two fragments here (an object straddling neighbouring pages \
             comes in one)"
        } else if stream == two && one_shot == one {
            "every straddling load took the stream path"
        } else {
            "PATHS DO NOT MATCH THE FRAGMENTS"
        }
    );

    println!();
    println!(
        "verified {} loads byte for byte ({} pages, two passes); {} failures; \
         pool after invalidating every page: {} backing pages",
        r.verified, r.pages, r.failed, r.pool_pages_at_end
    );
    for f in &r.failures {
        println!("  FAILED: {f}");
    }
}
