//! What the benches share: the variant a bench times (one way to serve a request),
//! settings from the environment, the medians criterion saved, and
//! the markdown tables BENCHMARKS.md quotes (medians, and ratios of one variant's to
//! another's). Each bench includes it with `mod harness;`.
#![allow(dead_code)] // each bench uses a part

use std::path::PathBuf;
use std::time::SystemTime;

/// One way to serve a 4 KiB request.
pub trait Variant {
    /// The variant's name in criterion's ids and in the tables.
    const NAME: &'static str;

    /// Compresses `page` into `dst` (at least `compress_bound(4096)` bytes); returns the
    /// frame's size.
    fn compress(&mut self, page: &[u8], dst: &mut [u8]) -> usize;

    /// Decompresses `frame` into `dst` (4096 bytes); returns the bytes written.
    fn decompress(&mut self, frame: &[u8], dst: &mut [u8]) -> usize;

    /// Whether the variant's frames differ from the others' (a content checksum, a
    /// dictionary): the check then holds only its round trip.
    const CHECKSUM: bool = false;

    /// Where the last request's output is: `dst`, unless the variant returns its own
    /// buffer.
    fn output<'a>(&'a self, dst: &'a [u8]) -> &'a [u8] {
        dst
    }
}

/// The environment variable `name` parsed, or `default` where it is unset.
///
/// # Panics
///
/// Where it is set but does not parse: a typo should stop the run, not be ignored.
pub fn env_or<T: std::str::FromStr>(name: &str, default: T) -> T {
    std::env::var(name).map_or(default, |v| {
        v.parse()
            .unwrap_or_else(|_| panic!("{name}={v}: not a number"))
    })
}

/// Where criterion saves its results: `CRITERION_HOME`, else `$CARGO_TARGET_DIR/criterion`,
/// else `target/criterion`.
pub fn criterion_home() -> PathBuf {
    std::env::var_os("CRITERION_HOME")
        .map(PathBuf::from)
        .or_else(|| {
            std::env::var_os("CARGO_TARGET_DIR").map(|d| PathBuf::from(d).join("criterion"))
        })
        .unwrap_or_else(|| PathBuf::from("target/criterion"))
}

/// The median time (ns) criterion saved for `group/function/input` in this run: `None` where
/// it has none, or only one older than `since` (a filtered run leaves older results).
pub fn criterion_median(
    group: &str,
    function: &str,
    input: &str,
    since: SystemTime,
) -> Option<f64> {
    let path = criterion_home()
        .join(group)
        .join(function)
        .join(input)
        .join("new/estimates.json");
    let fresh = std::fs::metadata(&path)
        .and_then(|m| m.modified())
        .is_ok_and(|t| t >= since);
    if !fresh {
        return None;
    }
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).ok()?).ok()?;
    json["median"]["point_estimate"].as_f64()
}

/// Prints a markdown table of medians (ns): a row per input, a column per variant; `-`
/// where `get` has none.
pub fn print_medians(
    title: &str,
    variants: &[&str],
    inputs: &[&str],
    get: impl Fn(&str, &str) -> Option<f64>,
) {
    println!("\n#### {title}\n");
    println!("| page | {} |", variants.join(" | "));
    println!("|---{}|", "|---:".repeat(variants.len()));
    for &input in inputs {
        let cells: Vec<String> = variants
            .iter()
            .map(|v| get(v, input).map_or("-".to_owned(), |ns| format!("{ns:.0}")))
            .collect();
        println!("| {input} | {} |", cells.join(" | "));
    }
}

/// Prints a markdown table of ratios: a row per input, a column per pair `(a, b)` giving
/// `a`'s median over `b`'s (below 1: `a` is faster).
pub fn print_ratios(
    title: &str,
    pairs: &[(&str, &str)],
    inputs: &[&str],
    get: impl Fn(&str, &str) -> Option<f64>,
) {
    println!("\n#### {title}\n");
    let header: Vec<String> = pairs.iter().map(|(a, b)| format!("{a} / {b}")).collect();
    println!("| page | {} |", header.join(" | "));
    println!("|---{}|", "|---:".repeat(header.len()));
    for &input in inputs {
        let cells: Vec<String> = pairs
            .iter()
            .map(|(a, b)| match (get(a, input), get(b, input)) {
                (Some(a), Some(b)) => format!("{:.3}", a / b),
                _ => "-".to_owned(),
            })
            .collect();
        println!("| {input} | {} |", cells.join(" | "));
    }
}
