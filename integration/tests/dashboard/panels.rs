//! The dashboard JSON as Grafana reads it: every panel's queries, the template variables, and
//! the substitutions Grafana makes before a query reaches Prometheus; and the signal part of an
//! alert expression (the expression without its final threshold comparison).

use anyhow::Context as _;
use ferry_integration::workspace;
use serde_json::Value;

/// The window `$__rate_interval` stands for. Grafana makes it at least four scrape intervals;
/// the tests scrape every second, and 30 s keeps a rate over several scrapes of live traffic.
pub const RATE_INTERVAL: &str = "30s";

/// One query of one panel.
#[derive(Debug, Clone)]
pub struct PanelQuery {
    /// The panel's title.
    pub panel: String,
    /// The target's legend format, which names the series in the panel.
    pub legend: String,
    /// The PromQL as written, with Grafana variables.
    pub expr: String,
}

/// A `query` template variable: `label_values(selector, label)`.
#[derive(Debug, Clone)]
pub struct Variable {
    /// The variable's name (`$name` in queries).
    pub name: String,
    /// The series selector, with the variables it depends on.
    pub selector: String,
    /// The label whose values it offers.
    pub label: String,
}

/// `charts/ferry/dashboards/ferry.json`, parsed.
pub fn load() -> anyhow::Result<Value> {
    let path = workspace::root().join("charts/ferry/dashboards/ferry.json");
    let text =
        std::fs::read_to_string(&path).with_context(|| format!("reading {}", path.display()))?;
    serde_json::from_str(&text).with_context(|| format!("{} is not JSON", path.display()))
}

/// Every panel (rows' nested panels too).
pub fn panels(dashboard: &Value) -> Vec<&Value> {
    let mut out = Vec::new();
    for p in dashboard["panels"].as_array().into_iter().flatten() {
        out.push(p);
        out.extend(p["panels"].as_array().into_iter().flatten());
    }
    out
}

/// Every target of every panel that has targets.
pub fn queries(dashboard: &Value) -> Vec<PanelQuery> {
    let mut out = Vec::new();
    for p in panels(dashboard) {
        for t in p["targets"].as_array().into_iter().flatten() {
            out.push(PanelQuery {
                panel: p["title"].as_str().unwrap_or_default().to_owned(),
                legend: t["legendFormat"].as_str().unwrap_or_default().to_owned(),
                expr: t["expr"].as_str().unwrap_or_default().to_owned(),
            });
        }
    }
    out
}

/// The `query` variables, parsed from their `label_values(...)` definitions.
pub fn variables(dashboard: &Value) -> anyhow::Result<Vec<Variable>> {
    let mut out = Vec::new();
    for v in dashboard["templating"]["list"]
        .as_array()
        .into_iter()
        .flatten()
    {
        if v["type"] != "query" {
            continue;
        }
        let name = v["name"].as_str().unwrap_or_default().to_owned();
        let query = v["query"]["query"]
            .as_str()
            .with_context(|| format!("variable {name} has no query"))?;
        let inner = query
            .strip_prefix("label_values(")
            .and_then(|q| q.strip_suffix(')'))
            .with_context(|| format!("variable {name}: not label_values(...): {query}"))?;
        let (selector, label) = inner
            .rsplit_once(',')
            .with_context(|| format!("variable {name}: label_values without a label"))?;
        out.push(Variable {
            name,
            selector: selector.trim().to_owned(),
            label: label.trim().to_owned(),
        });
    }
    Ok(out)
}

/// `expr` with Grafana's substitutions: `$__rate_interval`, and each variable as `$name` or
/// `${name}` replaced by its value (for a multi-value variable, the regex Grafana builds,
/// e.g. `(chat|embed)`).
pub fn substitute(expr: &str, values: &[(&str, &str)]) -> String {
    let mut out = expr.replace("$__rate_interval", RATE_INTERVAL);
    for (name, value) in values {
        out = out.replace(&format!("${{{name}}}"), value);
        out = out.replace(&format!("${name}"), value);
    }
    out
}

/// The signal of an alert expression: everything before its last comparison operator outside
/// parentheses, brackets, braces and strings (the rules file writes each alert as "signal,
/// then one comparison with the threshold"). `None` when there is no such comparison.
pub fn signal(expr: &str) -> Option<&str> {
    let bytes = expr.as_bytes();
    let (mut depth, mut quote, mut cut) = (0i32, None::<u8>, None);
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        match (quote, b) {
            (Some(q), _) if b == q => quote = None,
            (Some(_), b'\\') => i += 1,
            (Some(_), _) => {}
            (None, b'"' | b'\'' | b'`') => quote = Some(b),
            (None, b'(' | b'[' | b'{') => depth += 1,
            (None, b')' | b']' | b'}') => depth -= 1,
            (None, b'>' | b'<') if depth == 0 => cut = Some(i),
            (None, b'=' | b'!') if depth == 0 && bytes.get(i + 1) == Some(&b'=') => {
                cut = Some(i);
                i += 1;
            }
            _ => {}
        }
        i += 1;
    }
    cut.map(|i| expr[..i].trim())
}

#[test]
fn signal_drops_the_last_top_level_comparison_only() {
    assert_eq!(signal("a - time() < 7 * 86400"), Some("a - time()"));
    assert_eq!(
        signal("sum(rate(x{code=~\"5..\", a!=\"b\"}[5m])) / y > 0.05"),
        Some("sum(rate(x{code=~\"5..\", a!=\"b\"}[5m])) / y")
    );
    assert_eq!(
        signal("q(0.99, r) > on (route) group_left () (t or on (route) 0 * (c > 1) + 2)"),
        Some("q(0.99, r)")
    );
    assert_eq!(signal("x == 1"), Some("x"));
    assert_eq!(signal("rate(x[5m])"), None);
}

#[test]
fn substitute_fills_every_variable_form() {
    let got = substitute(
        "rate(x{ns=~\"$namespace\", r=~\"${route}\"}[$__rate_interval])",
        &[("namespace", "ferry-test"), ("route", "(chat|embed)")],
    );
    assert_eq!(got, "rate(x{ns=~\"ferry-test\", r=~\"(chat|embed)\"}[30s])");
}

/// Every `ferry_…{…}` selector in `expr`: (metric name, the text between the braces).
fn selectors(expr: &str) -> Vec<(&str, &str)> {
    let mut out = Vec::new();
    let mut rest = expr;
    while let Some(start) = rest.find("ferry_") {
        let tail = &rest[start..];
        let name_len = tail
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .unwrap_or(tail.len());
        let (name, after) = tail.split_at(name_len);
        match after.strip_prefix('{').and_then(|a| a.split_once('}')) {
            Some((labels, _)) => out.push((name, labels)),
            None => out.push((name, "")),
        }
        rest = after;
    }
    out
}

#[test]
fn the_dashboard_is_current_and_every_query_follows_the_variables() {
    let dashboard = load().unwrap();
    assert!(dashboard["schemaVersion"].as_u64().unwrap() >= 39);
    let list = dashboard["templating"]["list"].as_array().unwrap();
    let datasource = list.iter().find(|v| v["name"] == "datasource").unwrap();
    assert_eq!(datasource["type"], "datasource");
    assert_eq!(datasource["query"], "prometheus");
    let names: Vec<String> = variables(&dashboard)
        .unwrap()
        .into_iter()
        .map(|v| v.name)
        .collect();
    assert_eq!(names, ["namespace", "pod", "route", "model"]);

    let mut ids = std::collections::BTreeSet::new();
    for p in panels(&dashboard) {
        assert!(ids.insert(p["id"].as_u64().unwrap()), "duplicate id: {p}");
        let grid = &p["gridPos"];
        assert!(grid["x"].as_u64().unwrap() + grid["w"].as_u64().unwrap() <= 24);
        if p["type"] == "row" {
            continue;
        }
        assert_eq!(p["datasource"]["uid"], "${datasource}", "{}", p["title"]);
        assert!(!p["description"].as_str().unwrap_or_default().is_empty());
        for t in p["targets"].as_array().unwrap() {
            assert_eq!(t["datasource"]["uid"], "${datasource}", "{}", p["title"]);
        }
    }

    // Labels ferry puts on each metric that a variable selects on.
    let has_route = [
        "ferry_requests_total",
        "ferry_request_duration_seconds",
        "ferry_proxy_overhead_seconds",
        "ferry_retries_total",
        "ferry_ratelimit_decisions_total",
        "ferry_concurrency",
    ];
    let has_model = [
        "ferry_requests_total",
        "ferry_proxy_overhead_seconds",
        "ferry_concurrency_in_flight",
        "ferry_concurrency_queue_depth",
    ];
    let queries = queries(&dashboard);
    assert!(queries.len() >= 20, "{} queries", queries.len());
    for q in &queries {
        let found = selectors(&q.expr);
        assert!(
            !found.is_empty(),
            "{}: no ferry metric in {}",
            q.panel,
            q.expr
        );
        for (name, labels) in found {
            let what = format!("{}: {name} in {}", q.panel, q.expr);
            assert!(
                labels.contains(r#"namespace=~"$namespace", pod=~"$pod""#),
                "{what}"
            );
            if has_route.iter().any(|m| name.starts_with(m)) {
                assert!(labels.contains(r#"route=~"$route""#), "{what}");
            }
            if has_model.iter().any(|m| name.starts_with(m))
                && name != "ferry_concurrency_queue_seconds_bucket"
            {
                assert!(labels.contains(r#"model=~"$model""#), "{what}");
            }
        }
    }
}
