//! What the access-log tests share: configs with sinks, reading a sink's lines, and requests.

use std::net::SocketAddr;
use std::path::Path;
use std::time::Duration;

use anyhow::Context as _;
use ferry_integration::{Ferry, eventually, to_yaml};
use serde_json::{Value, json};

/// Writers drain every 25 ms; the machine is shared, so allow far more.
pub const PATIENCE: Duration = Duration::from_secs(20);

/// Name of the one data listener in [`config`].
pub const LISTENER: &str = "main";

/// A whole config: admin on a kernel port, `access_log`, and one listener named [`LISTENER`].
pub fn config(access_log: Value, routes: Value, clusters: Value) -> Value {
    json!({
        "apiVersion": "ferry/v1",
        "admin": { "address": "127.0.0.1:0" },
        "access_log": access_log,
        "listeners": [{ "name": LISTENER, "address": "127.0.0.1:0", "routes": routes }],
        "clusters": clusters,
    })
}

/// A static cluster (`protocol` as `h2` for gRPC upstreams, else omitted).
pub fn cluster(name: &str, addr: SocketAddr, h2: bool) -> Value {
    let mut c = json!({ "name": name, "endpoints": [addr.to_string()] });
    if h2 {
        c["protocol"] = "h2".into();
    }
    c
}

/// Starts ferry with `config` rendered as YAML.
pub async fn start(config: &Value) -> anyhow::Result<Ferry> {
    Ferry::start(&to_yaml(config)).await
}

/// Every line of a JSON sink so far, parsed (a partly written last line is left for later).
pub fn json_lines(path: &Path) -> anyhow::Result<Vec<Value>> {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let complete = text.rfind('\n').map_or("", |end| &text[..end]);
    complete
        .lines()
        .map(|l| serde_json::from_str(l).with_context(|| format!("not one JSON object: {l}")))
        .collect()
}

/// Waits until the sink at `path` holds `n` lines (and then returns them).
pub async fn wait_lines(path: &Path, n: usize) -> anyhow::Result<Vec<Value>> {
    eventually(PATIENCE, || async {
        let lines = json_lines(path)?;
        anyhow::ensure!(
            lines.len() >= n,
            "{} has {} of {n} lines",
            path.display(),
            lines.len()
        );
        Ok(lines)
    })
    .await
}

/// Waits until the text sink at `path` holds `n` complete lines (and then returns its text up
/// to the last newline). Each sink has its own writer, so one being complete says nothing of
/// another.
pub async fn wait_text_lines(path: &Path, n: usize) -> anyhow::Result<String> {
    eventually(PATIENCE, || async {
        let text = std::fs::read_to_string(path).unwrap_or_default();
        let complete = text.rfind('\n').map_or("", |end| &text[..=end]);
        let have = complete.lines().count();
        anyhow::ensure!(have >= n, "{} has {have} of {n} lines", path.display());
        Ok(complete.to_owned())
    })
    .await
}

/// The line whose `request_id` is `id`.
pub fn by_id<'a>(lines: &'a [Value], id: &str) -> anyhow::Result<&'a Value> {
    lines
        .iter()
        .find(|l| l["request_id"] == id)
        .with_context(|| format!("no line with request_id {id} in {lines:#?}"))
}

/// Lines have the fields every answered request has, with their documented types.
pub fn assert_common_fields(line: &Value) {
    let ts = line["ts"].as_str().expect("ts");
    assert!(
        ts.len() == 24 && ts.ends_with('Z') && ts.as_bytes()[10] == b'T',
        "ts {ts} is not RFC 3339 UTC with milliseconds"
    );
    for key in ["listener", "protocol", "method", "path", "request_id"] {
        assert!(line[key].is_string(), "{key} missing in {line}");
    }
    for key in [
        "status",
        "bytes_in",
        "bytes_out",
        "duration_ms",
        "ferry_ms",
        "ttfb_ms",
    ] {
        assert!(line[key].is_number(), "{key} missing in {line}");
    }
    let total = line["duration_ms"].as_f64().unwrap();
    let ttfb = line["ttfb_ms"].as_f64().unwrap();
    assert!(ttfb <= total, "ttfb {ttfb} after the last byte {total}");
    assert!(
        !line["path"].as_str().unwrap().contains('?'),
        "query string logged: {line}"
    );
}
