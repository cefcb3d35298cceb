//! `ferry top`: a live terminal view (like `linkerd viz top`), refreshed every second from the
//! admin port: the rows of `/stats` sorted by load (requests per second), then the slowest and
//! the failed recent requests from `/recent`. `q`, Esc or Ctrl-C quits.
//!
//! The terminal side is synchronous (crossterm's event poll waits for a key or the next
//! refresh); the two GETs run on a current-thread runtime between polls.

use std::time::{Duration, Instant};

use clap::Args;
use ratatui::crossterm::event::{self, Event, KeyCode, KeyEventKind, KeyModifiers};
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Modifier, Style};
use ratatui::text::Line;
use ratatui::widgets::{Block, Borders, Paragraph, Row, Table};
use ratatui::{DefaultTerminal, Frame};
use serde_json::Value;

use crate::admin_client;
use crate::stat::{By, check_window, latency, percent};

/// Arguments of `ferry top`.
#[derive(Debug, Args)]
pub struct TopArgs {
    /// ferry's admin address.
    #[arg(long, default_value = "127.0.0.1:15000")]
    pub admin: String,
    /// What a row is.
    #[arg(long, value_enum, default_value_t = By::Route)]
    pub by: By,
    /// The window each refresh sums, from 1s to 5m.
    #[arg(long, default_value = "10s")]
    pub window: String,
}

/// What one refresh fetched.
#[derive(Debug, Default)]
struct View {
    rows: Vec<Value>,
    slowest: Vec<Value>,
    failed: Vec<Value>,
    /// The last fetch's error; the previous rows stay shown.
    error: Option<String>,
}

/// Seconds between refreshes.
const REFRESH: Duration = Duration::from_secs(1);

/// Runs `ferry top` until the user quits.
pub fn run(args: TopArgs) -> anyhow::Result<()> {
    check_window(&args.window)?;
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    // Once before taking the terminal: a wrong --admin or window is a plain error message.
    let mut view = View::default();
    view.refresh(&rt, &args)?;
    let mut terminal = ratatui::init();
    let result = show(&mut terminal, &rt, &args, view);
    ratatui::restore();
    result
}

fn show(
    terminal: &mut DefaultTerminal,
    rt: &tokio::runtime::Runtime,
    args: &TopArgs,
    mut view: View,
) -> anyhow::Result<()> {
    let mut next = Instant::now() + REFRESH;
    loop {
        terminal.draw(|f| draw(f, args, &view))?;
        loop {
            let wait = next.saturating_duration_since(Instant::now());
            if !event::poll(wait)? {
                break;
            }
            match event::read()? {
                Event::Key(k) if k.kind == KeyEventKind::Press => {
                    let ctrl_c =
                        k.code == KeyCode::Char('c') && k.modifiers.contains(KeyModifiers::CONTROL);
                    if matches!(k.code, KeyCode::Char('q') | KeyCode::Esc) || ctrl_c {
                        return Ok(());
                    }
                }
                Event::Resize(..) => terminal.draw(|f| draw(f, args, &view)).map(|_| ())?,
                _ => {}
            }
        }
        next = Instant::now() + REFRESH;
        if let Err(e) = view.refresh(rt, args) {
            view.error = Some(format!("{e:#}"));
        }
    }
}

// === impl View ===

impl View {
    fn refresh(&mut self, rt: &tokio::runtime::Runtime, args: &TopArgs) -> anyhow::Result<()> {
        let path = format!("/stats?window={}&by={}", args.window, args.by.as_str());
        let (stats, recent) = rt.block_on(async {
            let stats = admin_client::get_json(&args.admin, &path).await?;
            let recent = admin_client::get_json(&args.admin, "/recent").await?;
            anyhow::Ok((stats, recent))
        })?;
        let mut rows = stats["rows"].as_array().cloned().unwrap_or_default();
        // By load: requests per second, then in flight, then name (a stable order when idle).
        rows.sort_by(|a, b| {
            let key = |r: &Value| (r["rps"].as_f64().unwrap_or(0.0), r["in_flight"].as_u64());
            let (ka, kb) = (key(a), key(b));
            kb.0.total_cmp(&ka.0).then(kb.1.cmp(&ka.1))
        });
        self.rows = rows;
        self.slowest = recent["slowest"].as_array().cloned().unwrap_or_default();
        self.failed = recent["failed"].as_array().cloned().unwrap_or_default();
        self.error = None;
        Ok(())
    }
}

fn draw(f: &mut Frame<'_>, args: &TopArgs, view: &View) {
    let area = f.area();
    let rows_height = u16::try_from(view.rows.len() + 3)
        .unwrap_or(u16::MAX)
        .min(area.height / 2);
    let [title, rows, slowest, failed] = Layout::vertical([
        Constraint::Length(1),
        Constraint::Length(rows_height.max(3)),
        Constraint::Fill(1),
        Constraint::Fill(1),
    ])
    .areas(area);
    let status = match &view.error {
        Some(e) => format!("ferry top  {}  error: {e}", args.admin),
        None => format!(
            "ferry top  {}  by {}  window {}  (q quits)",
            args.admin,
            args.by.as_str(),
            args.window
        ),
    };
    f.render_widget(Paragraph::new(Line::from(status)), title);
    render_rows(f, rows, args.by, &view.rows);
    render_recent(f, slowest, "slowest (last 5 min)", &view.slowest);
    render_recent(f, failed, "failed (newest first)", &view.failed);
}

fn render_rows(f: &mut Frame<'_>, area: Rect, by: By, rows: &[Value]) {
    let mut header: Vec<&str> = by.key_columns().iter().map(|(h, _)| *h).collect();
    header.extend([
        "SUCCESS",
        "RPS",
        "P50",
        "P95",
        "P99",
        "IN_FLIGHT",
        "RETRIES",
        "LIMITED",
        "QUEUED",
    ]);
    let body = rows.iter().map(|r| {
        let mut cells: Vec<String> = by
            .key_columns()
            .iter()
            .map(|(_, field)| text(&r[*field]))
            .collect();
        cells.push(percent(&r["success_rate"]));
        cells.push(format!("{:.1}", r["rps"].as_f64().unwrap_or(0.0)));
        for q in ["p50_ms", "p95_ms", "p99_ms"] {
            cells.push(latency(&r[q]));
        }
        for n in ["in_flight", "retries", "limited", "queued"] {
            cells.push(text(&r[n]));
        }
        Row::new(cells)
    });
    let keys = by.key_columns().len();
    let widths: Vec<Constraint> = (0..keys)
        .map(|_| Constraint::Min(12))
        .chain((0..9).map(|_| Constraint::Length(10)))
        .collect();
    let table = Table::new(body, widths)
        .header(Row::new(header).style(Style::new().add_modifier(Modifier::BOLD)))
        .block(Block::new().borders(Borders::TOP).title("by load"));
    f.render_widget(table, area);
}

fn render_recent(f: &mut Frame<'_>, area: Rect, title: &str, records: &[Value]) {
    let header = [
        "TIME", "ROUTE", "MODEL", "STATUS", "TTFB", "TOTAL", "FAILURE", "ENDPOINT", "REQUEST",
    ];
    let body = records.iter().map(|r| {
        let time = r["ts"].as_str().and_then(|t| t.get(11..23)).unwrap_or("-");
        let status = match (r["status"].as_u64(), r["grpc_status"].as_u64()) {
            (Some(s), Some(g)) => format!("{s} grpc {g}"),
            (Some(s), None) => s.to_string(),
            (None, _) => "-".into(),
        };
        let request = format!("{} {}", text(&r["method"]), text(&r["path"]));
        Row::new(vec![
            time.to_owned(),
            text(&r["route"]),
            text(&r["model"]),
            status,
            latency(&r["ttfb_ms"]),
            latency(&r["duration_ms"]),
            text(&r["failure"]),
            text(&r["endpoint"]),
            request,
        ])
    });
    let widths = [
        Constraint::Length(12),
        Constraint::Length(14),
        Constraint::Length(14),
        Constraint::Length(12),
        Constraint::Length(8),
        Constraint::Length(8),
        Constraint::Length(14),
        Constraint::Length(21),
        Constraint::Fill(1),
    ];
    let table = Table::new(body, widths)
        .header(Row::new(header).style(Style::new().add_modifier(Modifier::BOLD)))
        .block(Block::new().borders(Borders::TOP).title(title.to_owned()));
    f.render_widget(table, area);
}

/// A JSON string or number as a cell; `-` when absent or empty.
fn text(v: &Value) -> String {
    match v {
        Value::String(s) if !s.is_empty() => s.clone(),
        Value::Number(n) => n.to_string(),
        _ => "-".into(),
    }
}
