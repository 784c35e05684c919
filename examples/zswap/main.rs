//! A user-space zswap on `acomp`: real pages (by default, a sample of the system's files)
//! are stored compressed in a zsmalloc-style pool, loaded back in random order and checked
//! byte for byte, half invalidated and stored again, by several threads sharing one
//! transform. It prints
//! zswap's counters, latencies beside raw zstd-safe's on the same pages, and acomp's
//! request paths.
//!
//! ```text
//! cargo run --release --example zswap                     # 64 MiB of the system's files
//! cargo run --release --example zswap -- --input vm.img   # or of any file
//! cargo run --release --example zswap -- --pid PID --vs-zram --json out.json
//! cargo run --release --example zswap -- --pid PID --dict   # with a trained dictionary
//! cargo run --release --example zswap -- --pid PID --pager --vs-zram --under-budget 40,70
//! cargo run --release --example zswap -- --pid PID --vs-zram --record-store
//! ```
//!
//! `--pid` stores a running process's private memory instead, `--vs-zram` runs the kernel's
//! zram on the same pages, and a side-by-side table (`--json`: the same as JSON) closes the
//! output.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use clap::Parser;
use indicatif::{ProgressBar, ProgressStyle};

use acomp_pages::input::{self, Input};
use acomp_pages::snapshot;
use zswap_main::{
    budget, budgetkernel, budgetplot, compare, dict, lz4dict, pager, paging, pagingplot, patterns,
    plot, recomp, recordkernel, recordstore, report, swap, tiered, units, workload, zram, zswap,
};

/// Inputs larger than this get a progress bar.
const PROGRESS_MIN_BYTES: usize = 64 << 20;

/// Stores a file's pages in a user-space zswap built on acomp, loads them back and checks
/// them, and prints zswap's counters and the latencies against raw zstd.
#[derive(Debug, Parser)]
#[command(name = "zswap")]
struct Args {
    /// File whose pages to store (a core dump, a VM memory image...). Default: 64 MiB of
    /// the system's files (`/usr/lib`, `/usr/bin`, `/usr/share`: files picked at random by
    /// `--seed`, at most 256 KiB of each), as a page cache holds them.
    #[arg(long, value_name = "PATH", conflicts_with = "pid")]
    input: Option<PathBuf>,
    /// Store the private writable memory (heap, stack, anonymous mappings) of this running
    /// process instead of a file.
    #[arg(long, value_name = "PID")]
    pid: Option<i32>,
    /// Also run the kernel's zram on the same pages, on a new device (needs root), with
    /// each of lzo-rle, lzo, lz4 and zstd it offers.
    #[arg(long)]
    vs_zram: bool,
    /// Write the side-by-side summary as JSON to this file.
    #[arg(long, value_name = "PATH")]
    json: Option<PathBuf>,
    /// Threads in every phase. Default: the number of CPUs.
    #[arg(long, value_parser = clap::value_parser!(u16).range(1..))]
    threads: Option<u16>,
    /// zstd compression level, for acomp and the raw baseline alike.
    #[arg(long, default_value_t = 3, allow_negative_numbers = true)]
    level: i32,
    /// Also measure acomp with these other algorithms (`--alg lz4`: raw LZ4 blocks, as zram
    /// and zswap store them, acceleration 1): a row each in the side-by-side table, beside
    /// zram's row of the same algorithm with `--vs-zram`. The main workload stays zstd.
    #[arg(long, value_name = "NAME", value_delimiter = ',')]
    alg: Vec<String>,
    /// Also measure acomp with early rejection (`ZstdParams::early_rejection`): a row of
    /// its own in the side-by-side table, with the pages it refused.
    #[arg(long)]
    early_rejection: bool,
    /// Also add, under each `calls alone` row, a `calls and copies` row: the same calls with
    /// each frame copied, in the timed store, into one buffer as large as the pages, as a
    /// tier copies it into its pool (the floor under a tier's store; BENCHMARKS.md). Each
    /// such row holds that buffer (the input's size again) while it runs.
    #[arg(long)]
    copy_floor: bool,
    /// Seed of the load order and of the pages churned.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Also store the pages in units of this many bytes of contiguous pages, each unit one
    /// frame (a list: `4K,16K,64K`; 4K units are always measured beside larger ones): a row
    /// per size, zstd level (`--unit-level`) and block size (`--unit-block`), and an lz4 row
    /// per size with `--alg lz4`, each loaded whole, page by page through a per-thread cache
    /// and page by page at random; a patterns table, and a table of units.
    #[arg(long, value_name = "SIZE", value_delimiter = ',', value_parser = units::parse_unit)]
    unit: Vec<usize>,
    /// The largest zstd block in a unit's frame (`ZstdParams::block_size_max`): a single
    /// page's load decodes the unit's blocks up to the page's end. A list (`4K,128K`) gives
    /// a row per block size and unit size.
    #[arg(long, value_name = "SIZE", default_value = "4K", value_delimiter = ',', value_parser = units::parse_block)]
    unit_block: Vec<u32>,
    /// The zstd levels of the `--unit` rows (a list, `-1,1`): a row per level, block size
    /// and unit size. Default: `--level`. With `--alg lz4`, lz4 unit rows too.
    #[arg(
        long,
        value_name = "LEVELS",
        value_delimiter = ',',
        allow_negative_numbers = true
    )]
    unit_level: Vec<i32>,
    /// Draw memory against store speed and memory against load speed (whole folios, and
    /// single pages), a point per configuration of the side-by-side table, to this SVG.
    #[arg(long, value_name = "PATH.svg")]
    plot: Option<PathBuf>,
    /// Train a zstd dictionary on a sample of the first half of the pages, add a row with
    /// it to the side-by-side table, and store the second half (pages not sampled) with
    /// and without it at levels 1, 3 and 8. With `--alg lz4`, also measure what the same
    /// dictionary does for lz4 (liblz4 called directly: acomp serves no lz4 dictionary).
    #[arg(long)]
    dict: bool,
    /// Largest dictionary, in bytes.
    #[arg(long, value_name = "BYTES", default_value_t = 64 << 10, requires = "dict")]
    dict_size: usize,
    /// Sample every Nth page of the first half for training.
    #[arg(long, value_name = "N", default_value_t = 5, value_parser = clap::value_parser!(u16).range(1..), requires = "dict")]
    dict_every: u16,
    /// Also store the pages in the tier under this memory budget (bytes; `K`, `M`, `G`):
    /// the coldest written back to `--swap-file` if given (else stores at the budget are
    /// refused), every page then loaded and checked, with the writeback counters and the
    /// load latencies by source (memory, device).
    #[arg(long, value_name = "BYTES", value_parser = tiered::parse_bytes)]
    budget: Option<u64>,
    /// The tier's swap device for `--budget`: a file of page slots, created (truncated) here.
    /// Alone, it runs the tier under a quarter of the pool the pages take without a budget.
    #[arg(long, value_name = "PATH")]
    swap_file: Option<PathBuf>,
    /// Also write the pages stored (after the snapshot, in order) to this file, raw: the
    /// input of `benches/lz4_pages.rs` (`ACOMP_PAGES`).
    #[arg(long, value_name = "PATH")]
    save_pages: Option<PathBuf>,
    /// Add a row for lz4 with idle pages recompressed with zstd (zram's `recomp_algorithm`
    /// and `recompress type=idle`): every page stored with lz4, one in ten loaded again
    /// (hot), the rest recompressed; the pool's memory after, the store speed, and loads of
    /// hot and of recompressed pages apart. The value is the zstd level, `+dict` for a
    /// dictionary trained on the pages (`19+dict`), `+unitN` to recompress idle pages in
    /// units of N neighbouring pages (`9+dict+unit64`); a list gives a row each
    /// (`9+dict,9+dict+unit8`). Default 9+dict: page by page, as zram recompresses (units
    /// reach less memory but load a page at random far slower: BENCHMARKS.md).
    #[arg(long, value_name = "LEVEL[+dict][+unitN]", num_args = 0..=1, value_delimiter = ',', default_missing_value = "9+dict", value_parser = recomp::parse_spec)]
    recompress: Vec<recomp::Spec>,
    /// Also place the pages in a region of acomp-pager (an lz4 tier; and lz4 with idle
    /// pages recompressed by zstd), page them out and touch them back in a random and a
    /// Zipf order, timing each paged-out page's first access; with `--vs-zram`, the same in
    /// an ordinary mapping swapped to the kernel's zram (a new device per algorithm, lz4
    /// and lzo-rle, swapped on at top priority, `MADV_PAGEOUT`). A table of its own,
    /// `paging` in `--json`.
    #[arg(long)]
    pager: bool,
    /// With `--pager`: the input's first 65,536 pages as records, read, hashed and checked
    /// (one access in ten also writing) in a Zipf stream, under each of these memory
    /// budgets (percent of the records' bytes, a list: `40,50,70`), on the pager's side
    /// and with `--vs-zram` the kernel's (a memory cgroup with that limit swapping to zram
    /// lz4; the pager then gets the memory the kernel used). A table of its own, `budget`
    /// in `--json`, `PATH-budget.svg` with `--plot`.
    #[arg(long, value_name = "PERCENTS", value_delimiter = ',', requires = "pager",
          value_parser = clap::value_parser!(u8).range(1..=100))]
    under_budget: Vec<u8>,
    /// `--under-budget`'s Zipf exponents (a list: `0.99,0.8`), each run under each budget.
    #[arg(long, value_name = "S", value_delimiter = ',', default_value = "0.99",
          value_parser = parse_zipf)]
    zipf: Vec<f64>,
    /// The kernel side's child of `--under-budget` (run by the program itself).
    #[arg(long = "budget-child", value_name = "SPEC", hide = true)]
    budget_child: Option<String>,
    /// A record store of `--record-bytes` (the input's pages cycled to fill it, each record
    /// a page stamped with its id and version), read by `--readers` threads (90% of reads to
    /// a tenth of the records, each read checking its record's hash) and written by one
    /// (10,000 whole records a second at most, the same draws), under `--resident-limit`:
    /// plain memory (no limit), with `--vs-zram` the kernel's (a memory cgroup of that
    /// limit swapping to zram lz4), and acomp-pager's `resident_limit` with its defaults
    /// and with `signal_faults`. A table of its own, `record_store` in `--json`.
    #[arg(long)]
    record_store: bool,
    /// `--record-store`'s size.
    #[arg(long, value_name = "BYTES", default_value = "600M", value_parser = tiered::parse_bytes,
          requires = "record_store")]
    record_bytes: u64,
    /// `--record-store`'s resident limit (the kernel's cgroup limit, the pager's
    /// `resident_limit`).
    #[arg(long, value_name = "BYTES", default_value = "150M", value_parser = tiered::parse_bytes,
          requires = "record_store")]
    resident_limit: u64,
    /// `--record-store`'s reader threads.
    #[arg(long, default_value_t = recordstore::READERS as u16, requires = "record_store",
          value_parser = clap::value_parser!(u16).range(1..))]
    readers: u16,
    /// The kernel side's child of `--record-store` (run by the program itself).
    #[arg(long = "record-child", value_name = "SPEC", hide = true)]
    record_child: Option<String>,
}

/// A Zipf exponent: a finite number, at least 0.
fn parse_zipf(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(v) if v.is_finite() && v >= 0.0 => Ok(v),
        _ => Err(format!(
            "{s:?} is not a Zipf exponent (a number, at least 0)"
        )),
    }
}

fn main() -> ExitCode {
    // End quietly when the reader of the output goes away (`| head`), as Unix tools do,
    // rather than panic in `println!`.
    // SAFETY: restores SIGPIPE's default disposition, before any other thread exists.
    unsafe { libc::signal(libc::SIGPIPE, libc::SIG_DFL) };
    let args = Args::parse();
    if let Some(spec) = &args.budget_child {
        return child_report(budgetkernel::child(spec), "the budget's kernel child");
    }
    if let Some(spec) = &args.record_child {
        return child_report(recordkernel::child(spec), "the record store's kernel child");
    }
    match run(&args) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("zswap: {e}");
            ExitCode::FAILURE
        }
    }
}

/// A kernel child's end: what it measured as one JSON line for its parent, or its error.
fn child_report<T: serde::Serialize>(measured: Result<T, String>, what: &str) -> ExitCode {
    match measured {
        Ok(m) => {
            println!("{}", serde_json::to_string(&m).expect("plain fields"));
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("zswap: {what}: {e}");
            ExitCode::FAILURE
        }
    }
}

fn progress_bar(template: &str) -> ProgressBar {
    let pb = ProgressBar::new(0);
    pb.set_style(
        ProgressStyle::with_template(template)
            .expect("a valid template")
            .progress_chars("=> "),
    );
    pb.enable_steady_tick(Duration::from_millis(200));
    pb
}

/// The pages of a running process, with a line saying what was read.
fn snapshot(pid: i32) -> Result<Input, snapshot::SnapshotError> {
    let maps = snapshot::read_maps(pid)?;
    let total: u64 = maps
        .iter()
        .filter(|m| m.is_private_anonymous())
        .map(|m| m.len())
        .sum();
    let progress = (total > PROGRESS_MIN_BYTES as u64)
        .then(|| progress_bar("{msg:>20} [{bar:40}] {bytes}/{total_bytes} ({eta})"));
    if let Some(pb) = &progress {
        pb.set_message("snapshot");
    }
    let snap = snapshot::read_mappings(pid, &maps, progress.as_ref())?;
    println!(
        "snapshot of pid {pid} ({}): {} of {} mappings (private, writable, anonymous), \
         {} pages read, {} unreadable pages skipped",
        snap.comm,
        snap.mappings.0,
        snap.mappings.1,
        snap.pages(),
        snap.holes
    );
    if snap.exited {
        println!(
            "  the process exited during the snapshot: the {} pages read before are stored",
            snap.pages()
        );
    }
    let name = format!("pid {pid} ({})", snap.comm);
    Ok(Input::from_bytes(name.into(), snap.data))
}

/// The default input: a sample of the system's files; this program's executable where
/// there are none (not Linux, or a bare container).
fn system_files(seed: u64) -> Result<Input, Box<dyn std::error::Error>> {
    let dirs = input::SYSTEM_DIRS;
    match Input::sample_files(&dirs, input::SYSTEM_BYTES, input::SYSTEM_FILE_BYTES, seed) {
        Ok(input) => Ok(input),
        Err(e) => {
            println!("zswap: {e}: storing this program's executable instead");
            let exe = std::env::current_exe()
                .map_err(|e| format!("cannot find this program's executable: {e}"))?;
            Ok(Input::read(&exe)?)
        }
    }
}

fn run(args: &Args) -> Result<ExitCode, Box<dyn std::error::Error>> {
    // An unknown `--alg` fails now, not after the whole run.
    for alg in &args.alg {
        acomp::Acomp::new(alg)?;
    }
    if args.vs_zram {
        zram::handle_ctrl_c()?;
    }
    let input = if let Some(pid) = args.pid {
        snapshot(pid)?
    } else if let Some(path) = &args.input {
        Input::read(path)?
    } else {
        system_files(args.seed)?
    };
    if input.is_empty() {
        println!("zswap: {} is empty: nothing to store", input.path.display());
        return Ok(ExitCode::SUCCESS);
    }
    if let Some(path) = &args.save_pages {
        std::fs::write(path, input.pages(0, input.len()))
            .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
        println!("zswap: {} pages written to {}", input.len(), path.display());
    }
    let params = acomp::ZstdParams::default().level(args.level);
    let threads = match args.threads {
        Some(t) => usize::from(t),
        None => std::thread::available_parallelism().map_or(1, |n| n.get()),
    };
    let progress = (input.file_len() > PROGRESS_MIN_BYTES)
        .then(|| progress_bar("{msg:>20} [{bar:40}] {pos}/{len} pages ({eta})"));
    let zswap = zswap::tier(acomp::Acomp::with_zstd(params.clone())?, None);
    let opts = workload::Options {
        threads,
        seed: args.seed,
        level: args.level,
        progress,
    };
    let report = workload::run(&zswap, &input, &opts);
    report::summary(&input, args.level, &report);
    report::print(&input, &report);
    let mut tier_failed = false;
    if args.budget.is_some() || args.swap_file.is_some() {
        let make = || acomp::Acomp::with_zstd(params.clone());
        let run = tiered::run(
            &make,
            &input,
            args.budget,
            args.swap_file.as_deref(),
            threads,
            args.seed,
        )?;
        tiered::print(&run, &format!("zstd level {}", args.level));
        tier_failed = !run.failed.is_empty();
    }

    // The side-by-side table: acomp on one thread, then zram, on the same pages.
    let fresh = zswap::tier(acomp::Acomp::with_zstd(params.clone())?, None);
    let name = format!("acomp zstd level {}", args.level);
    let mut rows = vec![compare::acomp_row(&name, &fresh, &input)];
    rows.push(compare::calls_row(
        &format!("{name}, calls alone"),
        fresh.acomp(),
        &input,
    ));
    if args.copy_floor {
        let row = compare::copies_row(
            &format!("{name}{}", compare::COPIES_SUFFIX),
            fresh.acomp(),
            &input,
        );
        rows.push(row);
    }
    for alg in &args.alg {
        let other = zswap::tier(acomp::Acomp::new(alg)?, None);
        rows.push(compare::acomp_row(&format!("acomp {alg}"), &other, &input));
        rows.push(compare::calls_row(
            &format!("acomp {alg}, calls alone"),
            other.acomp(),
            &input,
        ));
        if args.copy_floor {
            let name = format!("acomp {alg}{}", compare::COPIES_SUFFIX);
            rows.push(compare::copies_row(&name, other.acomp(), &input));
        }
    }
    if args.early_rejection {
        let probed = zswap::tier(
            acomp::Acomp::with_zstd(params.clone().early_rejection(true))?,
            None,
        );
        rows.push(compare::acomp_row(
            &format!("{name}, early rejection"),
            &probed,
            &input,
        ));
        let refused = probed.acomp().stats().rejected;
        println!(
            "early rejection: {refused} of {} pages refused without compressing",
            input.len()
        );
    }
    let unit_levels = if args.unit_level.is_empty() {
        vec![args.level]
    } else {
        args.unit_level.clone()
    };
    let unit_configs = units::configs(
        &args.unit,
        &unit_levels,
        &args.unit_block,
        args.alg.iter().any(|a| a == "lz4"),
    );
    let unit_runs = units::run_all(&unit_configs, &input, args.seed)?;
    rows.extend(unit_runs.iter().map(units::UnitRun::row));
    for &spec in &args.recompress {
        rows.push(recomp::row(&input, spec)?);
    }
    let mut held_out_rows = Vec::new();
    let mut lz4_trial = None;
    if args.dict {
        let every = usize::from(args.dict_every);
        let trained = dict::train(&input, every, args.dict_size)?;
        println!();
        println!("{}", dict::describe(&trained, every));
        let with = zswap::tier(dict::transform(args.level, Some(&trained.dict))?, None);
        let name = format!("acomp L{} +dict", args.level);
        rows.push(compare::acomp_row(&name, &with, &input));
        let stats = with.acomp().stats().to_string();
        println!(
            "  acomp with the dictionary, after the table's pass: {}",
            stats.lines().last().unwrap_or_default()
        );
        let held = dict::held_out(&input, &trained);
        held_out_rows = dict::held_out_rows(&held, &trained)?;
        if args.alg.iter().any(|a| a == "lz4") {
            lz4_trial = Some(lz4dict::trial(&held, trained.dict.as_bytes()));
        }
    }
    let mut zram_unavailable = None;
    if args.vs_zram {
        // SAFETY: geteuid has no preconditions and cannot fail.
        let euid = unsafe { libc::geteuid() };
        let why = match zram::unavailable(Path::new("/sys"), euid) {
            Some(why) => Some(why),
            None => match zram::run(&input) {
                Ok(runs) => {
                    rows.extend(runs.iter().map(|r| compare::zram_row(r, input.len())));
                    None
                }
                Err(e) => Some(e),
            },
        };
        if let Some(why) = &why {
            println!();
            println!("zram: not measured: {why}");
        }
        zram_unavailable = why;
    }
    let (paging_rows, paging_skipped) = if args.pager {
        paging_run(&input, args.seed, args.vs_zram)
    } else {
        Default::default()
    };
    let (budget_points, budget_skipped) = if args.under_budget.is_empty() {
        Default::default()
    } else {
        let opts = budget::Options {
            percents: args.under_budget.clone(),
            zipf: args.zipf.clone(),
            seed: args.seed,
            kernel: args.vs_zram,
        };
        budget::run(&input, &opts)
    };
    let record_opts = recordstore::Options {
        bytes: args.record_bytes,
        resident_limit: args.resident_limit,
        readers: usize::from(args.readers),
        seed: args.seed,
        kernel: args.vs_zram,
    };
    let (record_points, record_skipped) = if args.record_store {
        recordstore::run_all(input.pages(0, input.len()), &record_opts)
    } else {
        Default::default()
    };
    compare::against_lzo_rle(&mut rows);
    compare::print(&rows);
    recomp::print(&rows);
    patterns::print(&rows);
    units::print(&unit_runs);
    if !held_out_rows.is_empty() {
        compare::print(&held_out_rows);
        dict::print_gain(&held_out_rows);
    }
    if let Some(t) = &lz4_trial {
        lz4dict::print(t);
    }
    paging::print(&paging_rows);
    for line in &paging_skipped {
        println!("{line}");
    }
    let records = budget::records(&input).len() / acomp_zswap::PAGE_SIZE;
    budget::print(&budget_points, records as u64);
    for line in &budget_skipped {
        println!("{line}");
    }
    recordstore::print(&record_points, &record_opts);
    for line in &record_skipped {
        println!("{line}");
    }
    if let Some(path) = &args.plot {
        let title = format!(
            "{}: {} pages, one thread each way; red: zram, black: acomp",
            input.path.display(),
            input.len()
        );
        // The recompression rows again: their hot loads, and their recompressed loads (in
        // order, and for units at random too).
        // (Not the `calls alone` rows: no pool holds their frames.)
        let plotted: Vec<compare::Row> = rows
            .iter()
            .filter(|r| r.kind != compare::KIND_CALLS)
            .cloned()
            .chain(rows.iter().flat_map(recomp::cold_points))
            .collect();
        plot::draw(&plotted, &title, path)?;
        println!("plot: {}", path.display());
        if !paging_rows.is_empty() {
            let paging_path = pagingplot::path(path);
            let title = format!(
                "{}: {} pages paged out and touched back; red: zram swap, black: pager",
                input.path.display(),
                input.len()
            );
            pagingplot::draw(&paging_rows, &title, &paging_path)?;
            println!("plot: {}", paging_path.display());
        }
        if !budget_points.is_empty() {
            let budget_path = budgetplot::path(path);
            let title = format!(
                "{}: {records} records under a budget, {} timed accesses; red: kernel, black: pager (open: signal_faults, grey without direct reclaim), blue: idle recompression",
                input.path.display(),
                records * budget::TIMED_PER_RECORD
            );
            budgetplot::draw(&budget_points, &title, &budget_path)?;
            println!("plot: {}", budget_path.display());
        }
    }
    let budget_rows: Vec<budget::Row> = budget_points.iter().map(budget::Point::row).collect();
    let record_rows: Vec<recordstore::Row> =
        record_points.iter().map(recordstore::Point::row).collect();
    if let Some(path) = &args.json {
        let summary = compare::Summary {
            source: input.path.display().to_string(),
            page_size_bytes: acomp_zswap::PAGE_SIZE as u64,
            zram_unavailable,
            configurations: &rows,
            paging: &paging_rows,
            paging_unavailable: &paging_skipped,
            budget: &budget_rows,
            budget_unavailable: &budget_skipped,
            record_store: &record_rows,
            record_store_unavailable: &record_skipped,
        };
        let text = serde_json::to_string_pretty(&summary)?;
        std::fs::write(path, text + "\n")
            .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    }
    let table_failed = rows
        .iter()
        .chain(&held_out_rows)
        .any(|r| r.verified_pages != r.pages)
        || paging_rows.iter().any(|r| r.verified_pages != r.pages)
        || budget_rows.iter().any(|r| r.wrong_records != 0)
        || record_rows.iter().any(|r| r.wrong_records != 0);
    Ok(if report.ok() && !table_failed && !tier_failed {
        ExitCode::SUCCESS
    } else {
        eprintln!(
            "zswap: some pages failed to come back as stored, or records read wrong (see above)"
        );
        ExitCode::FAILURE
    })
}

/// `--pager`'s rows: the pager's, then with `--vs-zram` the kernel's zram swap's; a line for
/// each side that was not measured, saying why.
fn paging_run(input: &Input, seed: u64, vs_zram: bool) -> (Vec<paging::Row>, Vec<String>) {
    let (mut rows, mut skipped) = (Vec::new(), Vec::new());
    match pager::run(input, seed) {
        Ok(r) => rows.extend(r),
        Err(why) => skipped.push(paging::skip_line("pager", &why)),
    }
    if vs_zram {
        // SAFETY: geteuid has no preconditions and cannot fail.
        let euid = unsafe { libc::geteuid() };
        match swap::unavailable(Path::new("/sys"), euid) {
            Some(why) => skipped.push(paging::skip_line("zram-swap", &why)),
            None => {
                let (r, s) = swap::run(input, seed);
                rows.extend(r);
                skipped.extend(s);
            }
        }
    }
    (rows, skipped)
}
