//! `--plot PATH.svg`: the side-by-side table drawn. Three panels, memory (MiB) against
//! store speed, whole-folio load speed (pattern 1; zram's 1 MiB reads; acomp's page rows
//! their loads in order) and single-page load speed (pattern 3; zram's 1 MiB reads), a
//! point per configuration. The configurations no other beats on memory, store and
//! whole-folio load at once (the Pareto frontier) are joined by a line in each panel; the
//! goal region (memory at most 0.60x zram lzo-rle's, speed at least its) is shaded.

use plotters::prelude::*;

use crate::compare::GOAL_MEMORY;
use crate::compare::Row;
use crate::patterns;

const MIB: f64 = 1024.0 * 1024.0;

/// A row's point: memory in MiB and the three speeds (store, whole folios, single pages);
/// a speed is `None` where the row has no such figure.
fn point(r: &Row) -> (f64, [Option<f64>; 3]) {
    (
        r.memory_bytes as f64 / MIB,
        [
            Some(r.store_mib_s),
            patterns::folio(r).or(Some(r.load_mib_s)),
            patterns::single_page(r),
        ],
    )
}

/// Indices of the rows no other row dominates on memory, store and whole-folio load (the
/// frontier), by memory.
pub fn frontier(rows: &[Row]) -> Vec<usize> {
    let load = |r: &Row| patterns::folio(r).or(Some(r.load_mib_s));
    let mut on: Vec<usize> = (0..rows.len())
        .filter(|&i| {
            !rows
                .iter()
                .enumerate()
                .any(|(j, o)| j != i && patterns::dominates(o, &rows[i], load))
        })
        .collect();
    on.sort_by_key(|&i| rows[i].memory_bytes);
    on
}

/// `zstd -1 64K/128K`, `lz4 64K`, `zram lzo-rle`: a row's name, short.
pub fn short(name: &str) -> String {
    name.trim_start_matches("acomp ")
        .replace("zstd level ", "zstd ")
        .replace(" units, ", "/")
        .replace(" blocks", "")
        .replace(" units", "")
        .replace(", ", " ")
}

/// Draws the rows to `path` (SVG).
///
/// # Errors
///
/// Where the file cannot be written, or there is nothing to draw.
pub fn draw(rows: &[Row], title: &str, path: &std::path::Path) -> Result<(), String> {
    if rows.is_empty() {
        return Err("nothing to plot".into());
    }
    let err = |e: &dyn std::fmt::Display| format!("plot {}: {e}", path.display());
    let base = rows.iter().find(|r| r.name == "zram lzo-rle");
    let on = frontier(rows);
    let root = SVGBackend::new(path, (1500, 560)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| err(&e))?;
    let (top, body) = root.split_vertically(40);
    top.titled(title, ("sans-serif", 18)).map_err(|e| err(&e))?;
    let panels = body.split_evenly((1, 3));
    let names = [
        "store (MiB/s)",
        "load, whole folios (MiB/s)",
        "load, single pages in random order (MiB/s)",
    ];
    let x_max = rows.iter().map(|r| point(r).0).fold(0.0, f64::max).max(1.0) * 1.08;
    for (p, (area, name)) in panels.iter().zip(names).enumerate() {
        let pts: Vec<(f64, f64, &Row)> = rows
            .iter()
            .filter_map(|r| {
                let (x, ys) = point(r);
                ys[p].map(|y| (x, y, r))
            })
            .collect();
        let y_max = pts.iter().map(|t| t.1).fold(0.0, f64::max).max(1.0) * 1.12;
        let mut chart = ChartBuilder::on(area)
            .margin(12)
            .caption(name, ("sans-serif", 15))
            .x_label_area_size(36)
            .y_label_area_size(50)
            .build_cartesian_2d(0.0..x_max, 0.0..y_max)
            .map_err(|e| err(&e))?;
        chart
            .configure_mesh()
            .x_desc("memory (MiB)")
            .y_desc("MiB/s")
            .max_light_lines(0)
            .draw()
            .map_err(|e| err(&e))?;
        if let Some(b) = base {
            let (bx, by) = point(b);
            let gx = bx * GOAL_MEMORY;
            let gy = by[p].unwrap_or(b.load_mib_s);
            chart
                .draw_series(std::iter::once(Rectangle::new(
                    [(0.0, gy), (gx, y_max)],
                    RGBColor(40, 170, 60).mix(0.15).filled(),
                )))
                .map_err(|e| err(&e))?
                .label("goal: <= 0.60x lzo-rle's memory, >= its speed")
                .legend(|(x, y)| {
                    Rectangle::new(
                        [(x, y - 5), (x + 14, y + 5)],
                        RGBColor(40, 170, 60).mix(0.3).filled(),
                    )
                });
        }
        let line: Vec<(f64, f64)> = on
            .iter()
            .filter_map(|&i| {
                let (x, ys) = point(&rows[i]);
                ys[p].map(|y| (x, y))
            })
            .collect();
        chart
            .draw_series(LineSeries::new(line, BLUE.stroke_width(2)))
            .map_err(|e| err(&e))?
            .label("frontier (memory, store, whole-folio load)")
            .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 14, y)], BLUE.stroke_width(2)));
        chart
            .draw_series(pts.iter().map(|&(x, y, r)| {
                let colour = if r.kind == "zram" { RED } else { BLACK };
                EmptyElement::at((x, y))
                    + Circle::new((0, 0), 4, colour.filled())
                    + Text::new(short(&r.name), (6, -12), ("sans-serif", 11).into_font())
            }))
            .map_err(|e| err(&e))?;
        chart
            .configure_series_labels()
            // Clear of the points: single-page loads out of units sit low on the right.
            .position(if p == 2 {
                SeriesLabelPosition::MiddleLeft
            } else {
                SeriesLabelPosition::LowerRight
            })
            .background_style(WHITE.mix(0.8))
            .border_style(BLACK.mix(0.3))
            .label_font(("sans-serif", 11))
            .draw()
            .map_err(|e| err(&e))?;
    }
    root.present().map_err(|e| err(&e))?;
    Ok(())
}
