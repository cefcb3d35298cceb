//! What `ferry demo` prints: per request, what ferry matched and chose (from its access
//! record) next to what the client saw.

use std::fmt::Write as _;
use std::time::Duration;

use ferry_proxy::access_log::AccessRecord;

use crate::client::{self, Exchange, Protocol};

/// Pairs each exchange with the access record of the same request: the first unused record
/// with the same method and path (requests are sent one after another, so order agrees).
pub fn pair(exchanges: &[Exchange], mut records: Vec<AccessRecord>) -> Vec<Option<AccessRecord>> {
    exchanges
        .iter()
        .map(|e| {
            let i = records
                .iter()
                .position(|r| r.method == e.method && r.path() == e.path)?;
            Some(records.remove(i))
        })
        .collect()
}

/// The block printed for one request.
pub fn exchange(index: usize, exchange: &Exchange, record: Option<&AccessRecord>) -> String {
    let mut out = String::new();
    let protocol = match exchange.protocol {
        Protocol::Rest => "REST",
        Protocol::Grpc => "gRPC",
    };
    let _ = writeln!(
        out,
        "[{index}] {protocol} {} {}  ({})",
        exchange.method, exchange.path, exchange.label
    );
    match record {
        Some(r) => {
            let _ = writeln!(out, "    {}", matched(r));
            let _ = writeln!(
                out,
                "    status={}  latency: client total {} | in ferry {} = upstream {} + ferry's own {}",
                client::status_text(exchange),
                ms(exchange.latency),
                ms(r.duration),
                r.upstream_duration.map_or_else(|| "-".to_owned(), ms),
                ms(r.duration
                    .saturating_sub(r.upstream_duration.unwrap_or_default())),
            );
        }
        None => {
            let _ = writeln!(out, "    (ferry wrote no access record for this request)");
            let _ = writeln!(
                out,
                "    status={}  latency: client total {}",
                client::status_text(exchange),
                ms(exchange.latency)
            );
        }
    }
    let _ = writeln!(out, "    -> {}", exchange.summary);
    out
}

/// One line for an access record (used live in `--serve` mode).
pub fn record_line(r: &AccessRecord) -> String {
    format!(
        "{} {} {}  status={}  in ferry {} (upstream {})",
        r.method,
        r.path(),
        matched(r),
        r.status
            .map_or_else(|| "- (caller gone)".to_owned(), |s| s.to_string()),
        ms(r.duration),
        r.upstream_duration.map_or_else(|| "-".to_owned(), ms),
    )
}

/// `route=… model=… cluster=… endpoint=…`; `-` where ferry had nothing.
fn matched(r: &AccessRecord) -> String {
    let model = match (&r.model, &r.model_version) {
        (Some(m), Some(v)) => format!("{m} version={v}"),
        (Some(m), None) => m.clone(),
        (None, _) => "-".to_owned(),
    };
    format!(
        "listener={} route={} model={} cluster={} endpoint={}",
        r.listener,
        r.route.as_deref().unwrap_or("-"),
        model,
        r.cluster.as_deref().unwrap_or("-"),
        r.endpoint.map_or_else(|| "-".to_owned(), |e| e.to_string()),
    )
}

fn ms(d: Duration) -> String {
    format!("{:.2}ms", d.as_secs_f64() * 1000.0)
}
