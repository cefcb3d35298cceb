//! `soak.svg` / `soak.png`: the sampled series over time in three stacked panels (RSS; open
//! fds, downstream and upstream connections; threads and in-flight requests), the warm-up shaded, so a leak shows
//! as a slope and a ±10 % band is visible against each panel's scale. The benchmark's charts
//! are grouped bars per target; a time series needs lines, hence this file.

use std::path::Path;

use plotters::coord::Shift;
use plotters::prelude::*;

use super::sample::Sample;
use crate::error::{BenchError, Result};

const BLUE: RGBColor = RGBColor(0x1f, 0x77, 0xb4);
const ORANGE: RGBColor = RGBColor(0xff, 0x7f, 0x0e);
const GREEN: RGBColor = RGBColor(0x2c, 0xa0, 0x2c);

/// A named line of (minutes, value) points.
type Line = (&'static str, RGBColor, Vec<(f64, f64)>);

/// One panel: a y label and its lines.
struct Panel {
    y_label: &'static str,
    lines: Vec<Line>,
}

/// Draws the chart as `soak.svg` and `soak.png` into `dir`.
pub(crate) fn draw(dir: &Path, samples: &[Sample], warm_up_s: f64, title: &str) -> Result<()> {
    crate::charts::register_font()?;
    let at = |f: fn(&Sample) -> f64| -> Vec<(f64, f64)> {
        samples
            .iter()
            .map(|s| (s.t_s / 60.0, f(s)))
            .filter(|p| p.1.is_finite())
            .collect()
    };
    let panels = [
        Panel {
            y_label: "VmRSS (MiB)",
            lines: vec![("RSS", BLUE, at(|s| s.rss_kib as f64 / 1024.0))],
        },
        Panel {
            y_label: "count",
            lines: vec![
                ("open fds", BLUE, at(|s| s.fds as f64)),
                (
                    "active connections (downstream)",
                    ORANGE,
                    at(|s| s.active_connections),
                ),
                (
                    "upstream connections",
                    GREEN,
                    at(|s| s.split.upstream as f64),
                ),
            ],
        },
        Panel {
            y_label: "count",
            lines: vec![
                ("OS threads", BLUE, at(|s| s.threads as f64)),
                ("active requests", ORANGE, at(|s| s.active_requests)),
            ],
        },
    ];
    let end = samples.last().map_or(1.0, |s| s.t_s / 60.0).max(0.1);
    let size = (900, 760);
    let svg = dir.join("soak.svg");
    let png = dir.join("soak.png");
    let warm = warm_up_s / 60.0;
    paint(
        SVGBackend::new(&svg, size).into_drawing_area(),
        &panels,
        end,
        warm,
        title,
    )
    .map_err(|e| BenchError::Report(format!("{}: {e}", svg.display())))?;
    paint(
        BitMapBackend::new(&png, size).into_drawing_area(),
        &panels,
        end,
        warm,
        title,
    )
    .map_err(|e| BenchError::Report(format!("{}: {e}", png.display())))?;
    Ok(())
}

fn paint<DB: DrawingBackend>(
    root: DrawingArea<DB, Shift>,
    panels: &[Panel],
    end: f64,
    warm: f64,
    title: &str,
) -> std::result::Result<(), String> {
    let err = |e: DrawingAreaErrorKind<DB::ErrorType>| e.to_string();
    root.fill(&WHITE).map_err(err)?;
    let root = root.titled(title, ("sans-serif", 20)).map_err(err)?;
    for (area, panel) in root.split_evenly((panels.len(), 1)).iter().zip(panels) {
        let top = panel
            .lines
            .iter()
            .flat_map(|(_, _, pts)| pts.iter().map(|p| p.1))
            .fold(0.0f64, f64::max);
        // From zero, so a 10 % change looks like one; headroom for the legend.
        let y_max = if top > 0.0 { top * 1.3 } else { 1.0 };
        let mut ctx = ChartBuilder::on(area)
            .margin(8)
            .x_label_area_size(30)
            .y_label_area_size(60)
            .build_cartesian_2d(0.0..end, 0.0..y_max)
            .map_err(err)?;
        ctx.configure_mesh()
            .x_desc("minutes since the load started")
            .y_desc(panel.y_label)
            .label_style(("sans-serif", 12))
            .draw()
            .map_err(err)?;
        ctx.draw_series(std::iter::once(Rectangle::new(
            [(0.0, 0.0), (warm.min(end), y_max)],
            BLACK.mix(0.06).filled(),
        )))
        .map_err(err)?;
        for (name, color, pts) in &panel.lines {
            let color = *color;
            ctx.draw_series(std::iter::once(PathElement::new(
                pts.clone(),
                color.stroke_width(2),
            )))
            .map_err(err)?
            .label(*name)
            .legend(move |(x, y)| PathElement::new([(x, y), (x + 16, y)], color.stroke_width(2)));
        }
        ctx.configure_series_labels()
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK)
            .label_font(("sans-serif", 12))
            .position(SeriesLabelPosition::UpperRight)
            .draw()
            .map_err(err)?;
    }
    root.present().map_err(err)?;
    Ok(())
}
