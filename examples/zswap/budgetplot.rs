//! `--under-budget --plot PATH.svg`: the budget's points drawn to a file of their own beside
//! the plot, [`path`] (`frontier.svg` → `frontier-budget.svg`): ops/s against memory (MiB),
//! a point per side per budget and exponent (the pager's black, open with its faults on the
//! faulting thread; the kernel's red, as in
//! `crate::pagingplot`), the two points of a budget and exponent joined by a grey line and
//! labelled `40% s=0.99`.

use std::path::{Path, PathBuf};

use plotters::prelude::*;

use crate::budget::{
    Point, SIDE_KERNEL, SIDE_PAGER_RECOMPRESS, SIDE_PAGER_SIGNAL, SIDE_PAGER_SIGNAL_NO_DIRECT,
};

const MIB: f64 = 1024.0 * 1024.0;

/// The budget plot's file for the plot at `plot`: `-budget` before the extension.
pub fn path(plot: &Path) -> PathBuf {
    let stem = plot.file_stem().unwrap_or_default().to_string_lossy();
    let name = match plot.extension() {
        Some(ext) => format!("{stem}-budget.{}", ext.to_string_lossy()),
        None => format!("{stem}-budget"),
    };
    plot.with_file_name(name)
}

/// `40% s=0.99`: a budget and exponent's label.
pub fn label(p: &Point) -> String {
    format!("{}% s={}", p.spec.budget_percent, p.spec.zipf)
}

/// Draws `points` to `path` (SVG).
///
/// # Errors
///
/// Where the file cannot be written, or there is nothing to draw.
pub fn draw(points: &[Point], title: &str, path: &Path) -> Result<(), String> {
    if points.is_empty() {
        return Err("no budget points to plot".into());
    }
    let err = |e: &dyn std::fmt::Display| format!("plot {}: {e}", path.display());
    let at = |p: &Point| (p.measured.memory_bytes as f64 / MIB, p.measured.ops_per_s);
    let x_max = points.iter().map(|p| at(p).0).fold(0.0, f64::max).max(1.0) * 1.15;
    let y_max = points.iter().map(|p| at(p).1).fold(0.0, f64::max).max(1.0) * 1.15;
    let root = SVGBackend::new(path, (900, 600)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| err(&e))?;
    let (top, body) = root.split_vertically(40);
    top.titled(title, ("sans-serif", 16)).map_err(|e| err(&e))?;
    let mut chart = ChartBuilder::on(&body)
        .margin(12)
        .x_label_area_size(36)
        .y_label_area_size(70)
        .build_cartesian_2d(0.0..x_max, 0.0..y_max)
        .map_err(|e| err(&e))?;
    chart
        .configure_mesh()
        .x_desc("memory at the end of the timed stream (MiB)")
        .y_desc("ops/s")
        .max_light_lines(0)
        .draw()
        .map_err(|e| err(&e))?;
    for (i, p) in points.iter().enumerate() {
        // A line from each kernel point to the pager's of the same budget and exponent.
        let pair = points[i + 1..]
            .iter()
            .find(|q| q.spec == p.spec && q.side != p.side);
        if let Some(q) = pair {
            chart
                .draw_series(LineSeries::new([at(p), at(q)], RGBColor(150, 150, 150)))
                .map_err(|e| err(&e))?;
        }
    }
    for p in points {
        // The kernel red, the pager black (faults on the faulting thread: an open circle,
        // grey without direct reclaim), with idle recompression blue.
        let style = match p.side {
            SIDE_KERNEL => RED.filled(),
            SIDE_PAGER_SIGNAL => BLACK.stroke_width(2),
            SIDE_PAGER_SIGNAL_NO_DIRECT => BLACK.mix(0.4).stroke_width(2),
            SIDE_PAGER_RECOMPRESS => BLUE.filled(),
            _ => BLACK.filled(),
        };
        let text = format!("{} {}", p.side, label(p));
        chart
            .draw_series(std::iter::once(
                EmptyElement::at(at(p))
                    + Circle::new((0, 0), 4, style)
                    + Text::new(text, (6, -12), ("sans-serif", 11).into_font()),
            ))
            .map_err(|e| err(&e))?;
    }
    root.present().map_err(|e| err(&e))?;
    Ok(())
}
