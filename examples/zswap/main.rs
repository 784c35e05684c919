//! A user-space zswap on `acomp`: pages cut from a real file are stored compressed in a
//! zsmalloc-style pool, loaded back in random order and checked byte for byte, half
//! invalidated and stored again, by several threads sharing one transform. It prints
//! zswap's counters, latencies beside raw zstd-safe's on the same pages, and acomp's
//! request paths.
//!
//! ```text
//! cargo run --release --example zswap                     # pages of its own executable
//! cargo run --release --example zswap -- --input vm.img   # or of any file
//! ```

mod input;
mod pool;
mod report;
mod workload;
mod zswap;

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::Parser;
use indicatif::{ProgressBar, ProgressStyle};

use crate::input::Input;
use crate::zswap::Zswap;

/// Inputs larger than this get a progress bar.
const PROGRESS_MIN_BYTES: usize = 64 << 20;

/// Stores a file's pages in a user-space zswap built on acomp, loads them back and checks
/// them, and prints zswap's counters and the latencies against raw zstd.
#[derive(Debug, Parser)]
#[command(name = "zswap")]
struct Args {
    /// File whose pages to store (a core dump, a VM memory image...). Default: this
    /// program's own executable.
    #[arg(long, value_name = "PATH")]
    input: Option<PathBuf>,
    /// Threads in every phase. Default: the number of CPUs.
    #[arg(long, value_parser = clap::value_parser!(u16).range(1..))]
    threads: Option<u16>,
    /// zstd compression level, for acomp and the raw baseline alike.
    #[arg(long, default_value_t = 3, allow_negative_numbers = true)]
    level: i32,
    /// Seed of the load order and of the pages churned.
    #[arg(long, default_value_t = 1)]
    seed: u64,
}

fn main() -> ExitCode {
    // End quietly when the reader of the output goes away (`| head`), as Unix tools do,
    // rather than panic in `println!`.
    // SAFETY: restores SIGPIPE's default disposition, before any other thread exists.
    unsafe { libc::signal(libc::SIGPIPE, libc::SIG_DFL) };
    let args = Args::parse();
    match run(&args) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("zswap: {e}");
            ExitCode::FAILURE
        }
    }
}

fn run(args: &Args) -> Result<ExitCode, Box<dyn std::error::Error>> {
    let path = match &args.input {
        Some(p) => p.clone(),
        None => std::env::current_exe()
            .map_err(|e| format!("cannot find this program's executable: {e}"))?,
    };
    let input = Input::read(&path)?;
    if input.is_empty() {
        println!("zswap: {} is empty: nothing to store", path.display());
        return Ok(ExitCode::SUCCESS);
    }
    let tfm = acomp::Acomp::with_zstd(acomp::ZstdParams::default().level(args.level))?;
    let threads = match args.threads {
        Some(t) => usize::from(t),
        None => std::thread::available_parallelism().map_or(1, |n| n.get()),
    };
    let progress = (input.file_len() > PROGRESS_MIN_BYTES).then(|| {
        let pb = ProgressBar::new(0);
        pb.set_style(
            ProgressStyle::with_template("{msg:>20} [{bar:40}] {pos}/{len} pages ({eta})")
                .expect("a valid template")
                .progress_chars("=> "),
        );
        pb.enable_steady_tick(Duration::from_millis(200));
        pb
    });
    let zswap = Zswap::new(tfm, None);
    let opts = workload::Options {
        threads,
        seed: args.seed,
        level: args.level,
        progress,
    };
    let report = workload::run(&zswap, &input, &opts);
    report::print(&input, args.level, &report);
    Ok(if report.ok() {
        ExitCode::SUCCESS
    } else {
        eprintln!(
            "zswap: {} pages failed to come back as stored",
            report.failed
        );
        ExitCode::FAILURE
    })
}
