//! One trace's spans as an indented tree, nested by their parent links whatever process sent
//! them, so a hop from one sidecar to the next reads as one line inside another: each line has
//! the kind, name, reporting service, duration and the attributes that say what happened
//! (route, cluster, model, status). A span whose parent was not received (the caller's own
//! span) is a root.

use std::collections::{HashMap, HashSet};
use std::time::Duration;

use super::receiver::Span;

/// Attributes shown on a span's line, as `label=value`.
const SHOWN: [(&str, &str); 5] = [
    ("ferry.route", "route"),
    ("ferry.cluster", "cluster"),
    ("model.name", "model"),
    ("http.response.status_code", "status"),
    ("rpc.grpc.status_code", "grpc-status"),
];

/// The tree's lines, roots (and siblings) in start order.
pub(crate) fn lines(spans: &[Span]) -> Vec<String> {
    let ids: HashSet<&str> = spans.iter().map(|s| s.span_id.as_str()).collect();
    let mut children: HashMap<&str, Vec<&Span>> = HashMap::new();
    let mut roots = Vec::new();
    for s in spans {
        if ids.contains(s.parent_id.as_str()) && s.parent_id != s.span_id {
            children.entry(s.parent_id.as_str()).or_default().push(s);
        } else {
            roots.push(s);
        }
    }
    for list in children.values_mut() {
        list.sort_by_key(|s| s.start_ns);
    }
    roots.sort_by_key(|s| s.start_ns);

    let mut rows = Vec::new();
    let mut walk = Walk {
        children: &children,
        rows: &mut rows,
        seen: HashSet::new(),
    };
    for root in roots {
        walk.visit(root, "", "", "");
    }
    let left = rows.iter().map(|r| r.0.chars().count()).max().unwrap_or(0);
    let service = rows.iter().map(|r| r.1.len()).max().unwrap_or(0);
    rows.into_iter()
        .map(|(tree, svc, rest)| {
            let pad = left - tree.chars().count();
            format!("{tree}{:pad$}  {svc:<service$}  {rest}", "")
                .trim_end()
                .to_owned()
        })
        .collect()
}

/// A SERVER span's time minus its CLIENT children's: what the proxy itself added to the hop.
pub(crate) fn own_time(spans: &[Span], server: &Span) -> Duration {
    let upstream: Duration = spans
        .iter()
        .filter(|s| s.kind == "CLIENT" && s.parent_id == server.span_id)
        .map(Span::duration)
        .sum();
    server.duration().saturating_sub(upstream)
}

/// `850 µs` below a millisecond, `1.27 ms` above.
pub(crate) fn duration(d: Duration) -> String {
    if d < Duration::from_millis(1) {
        format!("{} µs", d.as_micros())
    } else {
        format!("{:.2} ms", d.as_secs_f64() * 1e3)
    }
}

/// Rows of (tree column, service, duration and attributes).
struct Walk<'a> {
    children: &'a HashMap<&'a str, Vec<&'a Span>>,
    rows: &'a mut Vec<(String, String, String)>,
    /// Guards against a parent cycle in what was received.
    seen: HashSet<&'a str>,
}

impl<'a> Walk<'a> {
    fn visit(&mut self, span: &'a Span, indent: &str, branch: &str, next_indent: &str) {
        if !self.seen.insert(span.span_id.as_str()) {
            return;
        }
        let mut rest = format!("{:>9}", duration(span.duration()));
        for (key, label) in SHOWN {
            if let Some(v) = span.attribute(key) {
                // `label: value`, not `label=value`: the demo's access-log lines use the
                // latter, and tests read those as access records.
                rest.push_str(&format!("  {label}: {v}"));
            }
        }
        if let Some(e) = &span.error {
            rest.push_str(&format!("  error: {e}"));
        }
        self.rows.push((
            format!("{indent}{branch}{:<8} {}", span.kind, span.name),
            span.service.clone(),
            rest,
        ));
        let kids = self
            .children
            .get(span.span_id.as_str())
            .map(Vec::as_slice)
            .unwrap_or_default();
        let child_indent = format!("{indent}{next_indent}");
        for (i, child) in kids.iter().enumerate() {
            let last = i + 1 == kids.len();
            let (branch, next) = if last {
                ("└─ ", "   ")
            } else {
                ("├─ ", "│  ")
            };
            self.visit(child, &child_indent, branch, next);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn span(service: &str, id: &str, parent: &str, kind: &'static str, name: &str) -> Span {
        Span {
            service: service.into(),
            trace_id: "t".into(),
            span_id: id.into(),
            parent_id: parent.into(),
            name: name.into(),
            kind,
            start_ns: 0,
            end_ns: 0,
            attributes: Vec::new(),
            error: None,
        }
    }

    fn timed(mut s: Span, start_us: u64, end_us: u64) -> Span {
        s.start_ns = start_us * 1_000;
        s.end_ns = end_us * 1_000;
        s
    }

    #[test]
    fn nests_across_services_by_parent_links() {
        let mut a_server = timed(span("a", "1", "caller", "SERVER", "POST r"), 0, 2_000);
        a_server.attributes = vec![
            ("ferry.route".into(), "r".into()),
            ("http.response.status_code".into(), "200".into()),
        ];
        let spans = vec![
            // Out of order, as exports from two processes arrive.
            timed(span("b", "4", "3", "CLIENT", "POST model"), 700, 1_500),
            timed(span("a", "2", "1", "CLIENT", "POST b"), 100, 1_900),
            timed(span("b", "3", "2", "SERVER", "POST m"), 300, 1_700),
            a_server,
            timed(span("a", "5", "2", "INTERNAL", "connect"), 110, 150),
        ];
        let got = lines(&spans);
        let want = [
            "SERVER   POST r               a    2.00 ms  route: r  status: 200",
            "└─ CLIENT   POST b            a    1.80 ms",
            "   ├─ INTERNAL connect        a      40 µs",
            "   └─ SERVER   POST m         b    1.40 ms",
            "      └─ CLIENT   POST model  b     800 µs",
        ];
        assert_eq!(got, want, "\n{}", got.join("\n"));
        assert_eq!(own_time(&spans, &spans[3]), Duration::from_micros(200));
        assert_eq!(own_time(&spans, &spans[2]), Duration::from_micros(600));
    }

    #[test]
    fn a_cycle_or_self_parent_does_not_loop() {
        let spans = vec![
            span("a", "1", "2", "SERVER", "x"),
            span("a", "2", "1", "CLIENT", "y"),
            span("a", "3", "3", "INTERNAL", "z"),
        ];
        // Neither of the cycle's spans is a root, so only the self-parented one shows.
        assert_eq!(lines(&spans).len(), 1);
    }
}
