//! Charts of the results as SVG and PNG (plotters): CPU per request by proxy, added latency
//! percentiles by proxy and rate, memory by proxy, throughput per core, and REST → gRPC
//! translation CPU (ferry ÷ Envoy) by tensor size.

use std::path::Path;
use std::sync::OnceLock;

use plotters::coord::Shift;
use plotters::prelude::*;

use crate::error::{BenchError, Result};
use crate::report::translate::target_ratio;
use crate::report::{Aggregate, find};
use crate::scenarios::TRANSLATE_SIZES;
use crate::targets::Kind;

/// Where the PNG text font comes from (Debian's fonts-dejavu-core; the SVGs need no font).
const FONT_PATH: &str = "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf";
const PALETTE: [RGBColor; 5] = [
    RGBColor(0x1f, 0x77, 0xb4),
    RGBColor(0xff, 0x7f, 0x0e),
    RGBColor(0x2c, 0xa0, 0x2c),
    RGBColor(0xd6, 0x27, 0x28),
    RGBColor(0x94, 0x67, 0xbd),
];

/// A grouped bar chart: one group per category, one bar per series.
struct Bars {
    file: &'static str,
    title: String,
    y_label: &'static str,
    categories: Vec<String>,
    series: Vec<(String, Vec<f64>)>,
}

/// Draws every chart the aggregates allow into `dir`; returns the file stems written.
pub fn draw_all(dir: &Path, aggs: &[Aggregate]) -> Result<Vec<&'static str>> {
    register_font()?;
    let proxies: Vec<Kind> = Kind::ALL
        .into_iter()
        .filter(|k| *k != Kind::Direct && aggs.iter().any(|a| a.target == *k))
        .collect();
    let mut written = Vec::new();
    for chart in [
        cpu(aggs, &proxies),
        latency(aggs, &proxies),
        memory(aggs, &proxies),
        throughput(aggs),
        translate(aggs),
    ] {
        if chart
            .series
            .iter()
            .any(|(_, v)| v.iter().any(|x| x.is_finite()))
        {
            draw(dir, &chart)?;
            written.push(chart.file);
        }
    }
    Ok(written)
}

fn value(aggs: &[Aggregate], scenario: &str, metric: &str, k: Kind) -> f64 {
    find(aggs, scenario, metric, k).map_or(f64::NAN, |a| a.median)
}

fn names(kinds: &[Kind]) -> Vec<String> {
    kinds.iter().map(|k| k.name().to_owned()).collect()
}

fn cpu(aggs: &[Aggregate], proxies: &[Kind]) -> Bars {
    let series = [
        ("HTTP/1.1", "h1_saturation"),
        ("h2c", "h2_saturation"),
        ("gRPC unary", "grpc_unary"),
    ]
    .into_iter()
    .map(|(label, scenario)| {
        let v = proxies
            .iter()
            .map(|k| value(aggs, scenario, "cpu_s_per_10k", *k))
            .collect();
        (label.to_owned(), v)
    })
    .collect();
    Bars {
        file: "cpu_per_request",
        title: "Proxy CPU per 10,000 requests at saturation (lower is better)".into(),
        y_label: "CPU-seconds / 10k requests",
        categories: names(proxies),
        series,
    }
}

fn latency(aggs: &[Aggregate], proxies: &[Kind]) -> Bars {
    let mut categories = Vec::new();
    let mut cells: Vec<(Kind, &str)> = Vec::new();
    for (rate, scenario) in [("1k/s", "latency_1k"), ("5k/s", "latency_5k")] {
        for k in proxies {
            categories.push(format!("{} @{rate}", k.name()));
            cells.push((*k, scenario));
        }
    }
    let series = [
        ("p50", "added_p50_ms"),
        ("p90", "added_p90_ms"),
        ("p99", "added_p99_ms"),
        ("p99.9", "added_p999_ms"),
    ]
    .into_iter()
    .map(|(label, metric)| {
        let v = cells
            .iter()
            .map(|(k, scenario)| value(aggs, scenario, metric, *k))
            .collect();
        (label.to_owned(), v)
    })
    .collect();
    Bars {
        file: "added_latency",
        title: "Latency added over direct, fixed rate, corrected (lower is better)".into(),
        y_label: "added latency (ms)",
        categories,
        series,
    }
}

fn memory(aggs: &[Aggregate], proxies: &[Kind]) -> Bars {
    let series = [
        ("idle", "memory", "rss_idle_mib"),
        ("loaded", "memory", "rss_loaded_mib"),
        ("10k routes, idle", "routes_10000", "rss_idle_mib"),
    ]
    .into_iter()
    .map(|(label, scenario, metric)| {
        let v = proxies
            .iter()
            .map(|k| value(aggs, scenario, metric, *k))
            .collect();
        (label.to_owned(), v)
    })
    .collect();
    Bars {
        file: "memory",
        title: "Resident memory, VmRSS (lower is better)".into(),
        y_label: "MiB",
        categories: names(proxies),
        series,
    }
}

fn throughput(aggs: &[Aggregate]) -> Bars {
    let kinds: Vec<Kind> = Kind::ALL
        .into_iter()
        .filter(|k| aggs.iter().any(|a| a.target == *k))
        .collect();
    let series = [
        ("HTTP/1.1", "h1_saturation"),
        ("h2c", "h2_saturation"),
        ("gRPC unary", "grpc_unary"),
    ]
    .into_iter()
    .map(|(label, scenario)| {
        let v = kinds
            .iter()
            .map(|k| value(aggs, scenario, "rps", *k) / 1000.0)
            .collect();
        (label.to_owned(), v)
    })
    .collect();
    Bars {
        file: "throughput",
        title: "Requests per second, proxy on one core (higher is better)".into(),
        y_label: "thousand req/s",
        categories: names(&kinds),
        series,
    }
}

/// REST → gRPC translation: ferry's CPU per request as a fraction of Envoy's, per tensor size,
/// beside the target fraction (per-request CPU differs by four orders of magnitude between the
/// sizes, so the ratio is what shares a scale; the absolute figures are in results.md).
fn translate(aggs: &[Aggregate]) -> Bars {
    let ratio = TRANSLATE_SIZES
        .iter()
        .map(|&n| {
            let scenario = format!("translate_{n}");
            value(aggs, &scenario, "cpu_ms_per_req", Kind::Ferry)
                / value(aggs, &scenario, "cpu_ms_per_req", Kind::Envoy)
        })
        .collect();
    let target = TRANSLATE_SIZES.iter().map(|&n| target_ratio(n)).collect();
    Bars {
        file: "translate",
        title: "REST→gRPC translation: ferry CPU per request ÷ Envoy's (lower is better)".into(),
        y_label: "ferry CPU ÷ Envoy CPU",
        categories: TRANSLATE_SIZES
            .iter()
            .map(|n| format!("{n} FP32 elements"))
            .collect(),
        series: vec![
            ("ferry ÷ Envoy".to_owned(), ratio),
            ("target (at most)".to_owned(), target),
        ],
    }
}

pub(crate) fn register_font() -> Result<()> {
    static FONT: OnceLock<std::result::Result<(), String>> = OnceLock::new();
    FONT.get_or_init(|| {
        let bytes = std::fs::read(FONT_PATH).map_err(|e| format!("reading {FONT_PATH}: {e}"))?;
        // plotters wants the font for the life of the process; it is loaded once.
        let bytes: &'static [u8] = Box::leak(bytes.into_boxed_slice());
        register_font_bytes(bytes)
    })
    .clone()
    .map_err(BenchError::Report)
}

fn register_font_bytes(bytes: &'static [u8]) -> std::result::Result<(), String> {
    plotters::style::register_font("sans-serif", FontStyle::Normal, bytes)
        .map_err(|_| format!("{FONT_PATH} is not a usable font"))
}

fn draw(dir: &Path, chart: &Bars) -> Result<()> {
    let width = (260 + 70 * chart.categories.len() as u32).max(720);
    let size = (width, 480);
    let svg = dir.join(format!("{}.svg", chart.file));
    let png = dir.join(format!("{}.png", chart.file));
    paint(SVGBackend::new(&svg, size).into_drawing_area(), chart)
        .map_err(|e| BenchError::Report(format!("{}: {e}", svg.display())))?;
    paint(BitMapBackend::new(&png, size).into_drawing_area(), chart)
        .map_err(|e| BenchError::Report(format!("{}: {e}", png.display())))?;
    Ok(())
}

fn paint<DB: DrawingBackend>(
    root: DrawingArea<DB, Shift>,
    chart: &Bars,
) -> std::result::Result<(), String> {
    let err = |e: DrawingAreaErrorKind<DB::ErrorType>| e.to_string();
    root.fill(&WHITE).map_err(err)?;
    let n = chart.categories.len().max(1);
    let top = chart
        .series
        .iter()
        .flat_map(|(_, v)| v.iter().copied())
        .filter(|v| v.is_finite())
        .fold(0.0f64, f64::max);
    let bottom = chart
        .series
        .iter()
        .flat_map(|(_, v)| v.iter().copied())
        .filter(|v| v.is_finite())
        .fold(0.0f64, f64::min);
    let y_max = if top > 0.0 { top * 1.15 } else { 1.0 };
    let mut ctx = ChartBuilder::on(&root)
        .caption(&chart.title, ("sans-serif", 20))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(70)
        .build_cartesian_2d(-0.5f64..(n as f64 - 0.5), (bottom * 1.15)..y_max)
        .map_err(err)?;
    let categories = chart.categories.clone();
    ctx.configure_mesh()
        .disable_x_mesh()
        .x_labels(n)
        .x_label_formatter(&move |x| {
            let i = x.round();
            if (x - i).abs() < 0.01 && i >= 0.0 {
                categories.get(i as usize).cloned().unwrap_or_default()
            } else {
                String::new()
            }
        })
        .y_desc(chart.y_label)
        .label_style(("sans-serif", 13))
        .draw()
        .map_err(err)?;
    let group = 0.8;
    let width = group / chart.series.len().max(1) as f64;
    for (si, (label, values)) in chart.series.iter().enumerate() {
        let color = PALETTE[si % PALETTE.len()];
        let bars = values
            .iter()
            .enumerate()
            .filter(|(_, v)| v.is_finite())
            .map(move |(ci, v)| {
                let x0 = ci as f64 - group / 2.0 + si as f64 * width;
                Rectangle::new([(x0, 0.0), (x0 + width * 0.92, *v)], color.filled())
            });
        ctx.draw_series(bars)
            .map_err(err)?
            .label(label.as_str())
            .legend(move |(x, y)| Rectangle::new([(x, y - 5), (x + 12, y + 5)], color.filled()));
    }
    ctx.configure_series_labels()
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .label_font(("sans-serif", 13))
        .position(SeriesLabelPosition::UpperRight)
        .draw()
        .map_err(err)?;
    root.present().map_err(err)?;
    Ok(())
}
