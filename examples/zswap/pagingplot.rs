//! `--pager --plot PATH.svg`: the paging rows drawn to a file of their own beside the plot,
//! [`path`] (`frontier.svg` → `frontier-paging.svg`). Two panels, a point per row (the
//! pager's black, the kernel's zram swap red; a filled circle for the random order, a
//! square for the Zipf order): memory (MiB) against page-out speed (MiB/s), and memory
//! against the fault latency, the p50 as the point with a bar up to the p99.

use std::path::{Path, PathBuf};

use plotters::coord::types::RangedCoordf64;
use plotters::prelude::*;

use crate::paging::{KIND_PAGER_SIGNAL, KIND_ZRAM_SWAP, Row};

const MIB: f64 = 1024.0 * 1024.0;

/// The paging plot's file for the plot at `plot`: `-paging` before the extension.
pub fn path(plot: &Path) -> PathBuf {
    let stem = plot.file_stem().unwrap_or_default().to_string_lossy();
    let name = match plot.extension() {
        Some(ext) => format!("{stem}-paging.{}", ext.to_string_lossy()),
        None => format!("{stem}-paging"),
    };
    plot.with_file_name(name)
}

/// `lz4 random`, `signal lz4 sequential`, `zram lzo-rle zipf`: a row's label.
pub fn short(r: &Row) -> String {
    let side = match r.kind.as_str() {
        KIND_ZRAM_SWAP => "zram ",
        KIND_PAGER_SIGNAL => "signal ",
        _ => "",
    };
    format!("{side}{} {}", r.algorithm, r.order)
}

/// Draws `rows` to `path` (SVG).
///
/// # Errors
///
/// Where the file cannot be written, or there is nothing to draw.
pub fn draw(rows: &[Row], title: &str, path: &Path) -> Result<(), String> {
    if rows.is_empty() {
        return Err("no paging rows to plot".into());
    }
    let err = |e: &dyn std::fmt::Display| format!("plot {}: {e}", path.display());
    let root = SVGBackend::new(path, (1100, 520)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| err(&e))?;
    let (top, body) = root.split_vertically(40);
    top.titled(title, ("sans-serif", 18)).map_err(|e| err(&e))?;
    let panels = body.split_evenly((1, 2));
    let x_max = rows
        .iter()
        .map(|r| r.memory_bytes as f64 / MIB)
        .fold(0.0, f64::max)
        .max(1.0)
        * 1.15;
    let colour = |r: &Row| if r.kind == KIND_ZRAM_SWAP { RED } else { BLACK };
    // Panel 1: page-out speed.
    let y_max = rows.iter().map(|r| r.page_out_mib_s).fold(0.0, f64::max);
    let mut chart =
        panel(&panels[0], "page-out (MiB/s)", "MiB/s", x_max, y_max).map_err(|e| err(&e))?;
    for r in rows {
        let at = (r.memory_bytes as f64 / MIB, r.page_out_mib_s);
        marker(&mut chart, r, at, colour(r)).map_err(|e| err(&e))?;
    }
    // Panel 2: fault latency, p50 to p99.
    let y_max = rows
        .iter()
        .filter_map(|r| r.fault_p99_us)
        .fold(0.0, f64::max);
    let caption = "fault latency (us): p50, bar to p99";
    let mut chart = panel(&panels[1], caption, "us", x_max, y_max).map_err(|e| err(&e))?;
    for r in rows {
        let (Some(p50), Some(p99)) = (r.fault_p50_us, r.fault_p99_us) else {
            continue;
        };
        let x = r.memory_bytes as f64 / MIB;
        chart
            .draw_series(LineSeries::new([(x, p50), (x, p99)], colour(r).mix(0.5)))
            .map_err(|e| err(&e))?;
        marker(&mut chart, r, (x, p50), colour(r)).map_err(|e| err(&e))?;
    }
    root.present().map_err(|e| err(&e))?;
    Ok(())
}

/// A panel of `area`: memory after page-out (MiB, up to `x_max`) across, `y_desc` up to
/// 1.15 times `y_max` (at least 1.15), with its caption and mesh drawn.
fn panel<'a, 'b>(
    area: &'a DrawingArea<SVGBackend<'b>, plotters::coord::Shift>,
    caption: &str,
    y_desc: &str,
    x_max: f64,
    y_max: f64,
) -> Result<Chart<'a, 'b>, String> {
    let mut chart = ChartBuilder::on(area)
        .margin(12)
        .caption(caption, ("sans-serif", 15))
        .x_label_area_size(36)
        .y_label_area_size(50)
        .build_cartesian_2d(0.0..x_max, 0.0..y_max.max(1.0) * 1.15)
        .map_err(|e| e.to_string())?;
    chart
        .configure_mesh()
        .x_desc("memory after page-out (MiB)")
        .y_desc(y_desc)
        .max_light_lines(0)
        .draw()
        .map_err(|e| e.to_string())?;
    Ok(chart)
}

type Chart<'a, 'b> = ChartContext<'a, SVGBackend<'b>, Cartesian2d<RangedCoordf64, RangedCoordf64>>;

/// A row's point at `at`: a circle (random order) or a square (Zipf), with its label.
fn marker(
    chart: &mut Chart<'_, '_>,
    r: &Row,
    at: (f64, f64),
    colour: RGBColor,
) -> Result<(), DrawingAreaErrorKind<std::io::Error>> {
    let label = || Text::new(short(r), (6, -12), ("sans-serif", 11).into_font());
    if r.order == "random" {
        chart.draw_series(std::iter::once(
            EmptyElement::at(at) + Circle::new((0, 0), 4, colour.filled()) + label(),
        ))?;
    } else {
        chart.draw_series(std::iter::once(
            EmptyElement::at(at) + Rectangle::new([(-4, -4), (4, 4)], colour.filled()) + label(),
        ))?;
    }
    Ok(())
}
