//! `--dict`: a dictionary trained on a sample of the pages, then every page stored with it;
//! and the pages that were not in the sample stored with and without it, at levels 1, 3
//! and 8, so that the gain is measured on pages the dictionary never saw.

use std::time::{Duration, Instant};

use acomp::{Acomp, Dictionary, ZstdParams};
use acomp_zswap::same_filled;

use crate::compare::{self, Row};
use crate::zswap;
use acomp_pages::input::Input;
use acomp_zswap::PAGE_SIZE;

/// The levels of the held-out comparison.
pub const LEVELS: [i32; 3] = [1, 3, 8];

/// A dictionary and how it was trained.
#[derive(Debug)]
pub struct Trained {
    pub dict: Dictionary,
    /// Pages in the sample, and their bytes.
    pub sample_pages: usize,
    /// Time `Dictionary::train` took.
    pub time: Duration,
    /// Pages from here on were not sampled: the second half.
    pub held_out_from: usize,
}

/// Trains a dictionary of at most `max_bytes` from every `every`-th page of the first half
/// of `input` (same-filled pages left out).
pub fn train(input: &Input, every: usize, max_bytes: usize) -> Result<Trained, acomp::Error> {
    let half = input.len() / 2;
    let samples: Vec<&[u8]> = (0..half)
        .step_by(every.max(1))
        .map(|i| input.page(i))
        // zswap keeps a same-filled page as its value: no sample.
        .filter(|p| same_filled(p).is_none())
        .map(|p| &p[..])
        .collect();
    let start = Instant::now();
    let dict = Dictionary::train(&samples, max_bytes)?;
    Ok(Trained {
        dict,
        sample_pages: samples.len(),
        time: start.elapsed(),
        held_out_from: half,
    })
}

/// One line on the dictionary and its training.
pub fn describe(t: &Trained, every: usize) -> String {
    format!(
        "dictionary: {} bytes, ID {:#010x}, trained in {:.2} s from {} pages ({:.1} MiB: {} \
         of the first half, same-filled pages left out)",
        t.dict.as_bytes().len(),
        t.dict.id(),
        t.time.as_secs_f64(),
        t.sample_pages,
        (t.sample_pages * PAGE_SIZE) as f64 / (1024.0 * 1024.0),
        every_nth(every)
    )
}

/// "every page", "every 2nd page", "every 5th page"...
fn every_nth(n: usize) -> String {
    let suffix = match (n % 10, n % 100) {
        (_, 11..=13) => "th",
        (1, _) => "st",
        (2, _) => "nd",
        (3, _) => "rd",
        _ => "th",
    };
    match n {
        0 | 1 => "every page".into(),
        _ => format!("every {n}{suffix} page"),
    }
}

/// A zstd transform at `level`, with the dictionary where given.
pub fn transform(level: i32, dict: Option<&Dictionary>) -> Result<Acomp, acomp::Error> {
    let mut params = ZstdParams::default().level(level);
    if let Some(d) = dict {
        params = params.dictionary(d.clone());
    }
    Acomp::with_zstd(params)
}

/// The second half of `input`: the pages no sample came from.
pub fn held_out(input: &Input, t: &Trained) -> Input {
    let data: Vec<u8> = (t.held_out_from..input.len())
        .flat_map(|i| input.page(i).iter().copied())
        .collect();
    Input::from_bytes(
        format!("{} (second half)", input.path.display()).into(),
        data,
    )
}

/// The held-out rows: at each of [`LEVELS`], without and with the dictionary, on the same
/// pages, one thread each way (as the side-by-side table's rows).
pub fn held_out_rows(held: &Input, t: &Trained) -> Result<Vec<Row>, acomp::Error> {
    let mut rows = Vec::new();
    for level in LEVELS {
        for dict in [None, Some(&t.dict)] {
            let name = format!(
                "held-out L{level}{}",
                if dict.is_some() { " +dict" } else { "" }
            );
            let zswap = zswap::tier(transform(level, dict)?, None);
            let mut row = compare::acomp_row(&name, &zswap, held);
            // Not a configuration of the side-by-side table: no goal line.
            row.kind = "acomp held-out".into();
            rows.push(row);
        }
    }
    Ok(rows)
}

/// Prints, level by level, what the dictionary saves on the held-out pages and how it
/// changes store and load speed.
pub fn print_gain(rows: &[Row]) {
    println!("  dictionary on the held-out pages (pool bytes; store and load per-page p50):");
    for pair in rows.chunks_exact(2) {
        let (without, with) = (&pair[0], &pair[1]);
        let ratio = |a: Option<f64>, b: Option<f64>| match (a, b) {
            (Some(a), Some(b)) if b > 0.0 => format!("{:.2}x", a / b),
            _ => "-".into(),
        };
        println!(
            "    {:<18} pool {:+.1}% ({} -> {} bytes), compressed {:+.1}%, store {} faster, \
             load {} faster",
            with.name.trim_end_matches(" +dict"),
            100.0 * (with.memory_bytes as f64 / without.memory_bytes.max(1) as f64 - 1.0),
            without.memory_bytes,
            with.memory_bytes,
            100.0 * (with.compressed_bytes as f64 / without.compressed_bytes.max(1) as f64 - 1.0),
            ratio(without.store_p50_us, with.store_p50_us),
            ratio(without.load_p50_us, with.load_p50_us),
        );
    }
}
