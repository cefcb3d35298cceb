//! Trace-context formats with `propagation: [w3c, b3, b3multi]`: a caller speaking any one of
//! them, or several at once, joins its trace, and the upstream is handed every format with the
//! CLIENT span as parent. Malformed headers count as absent: the request succeeds and starts a
//! new trace (or falls through to the next valid format).

use std::collections::BTreeMap;
use std::sync::Arc;

use ferry_integration::{Echo, EchoReport, Ferry, HttpClient, Phoenix};
use http::StatusCode;
use serde_json::json;

use crate::support::{
    PATIENCE, caller, describe, echoed, get, in_trace, one, otlp_grpc, random_hex, sidecar,
    upstream_traceparent,
};

/// The SERVER span of every request here (method and route name).
const HOP: &str = "GET models";
/// Its CLIENT span (method and cluster name).
const ATTEMPT: &str = "GET model";

async fn traced_sidecar(phoenix: &Phoenix, project: &str, echo: &Echo) -> anyhow::Result<Ferry> {
    let tracing = json!({
        "otlp": otlp_grpc(phoenix),
        "propagation": ["w3c", "b3", "b3multi"],
    });
    crate::support::start(&sidecar(tracing, echo.addr()), project).await
}

/// One caller: its headers, the trace and parent ferry must continue (`None`: a new trace).
struct Case {
    what: &'static str,
    headers: Vec<(&'static str, String)>,
    joins: Option<(String, String)>,
}

async fn send(client: &HttpClient, ferry: &Ferry, case: &Case) -> anyhow::Result<EchoReport> {
    let headers: Vec<(&str, &str)> = case.headers.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let reply = get(client, ferry.listener("main")?, "/infer", &headers).await?;
    assert_eq!(
        reply.status,
        StatusCode::OK,
        "{}: {}",
        case.what,
        reply.text()
    );
    echoed(&reply)
}

/// Every configured format reached the upstream, all naming `trace` with `parent`, sampled.
fn assert_all_formats(what: &str, seen: &BTreeMap<String, String>, trace: &str, parent: &str) {
    assert_eq!(
        seen.get("traceparent"),
        Some(&format!("00-{trace}-{parent}-01")),
        "{what}: {seen:?}"
    );
    assert_eq!(
        seen.get("b3"),
        Some(&format!("{trace}-{parent}-1")),
        "{what}: {seen:?}"
    );
    assert_eq!(seen.get("x-b3-traceid").map(String::as_str), Some(trace));
    assert_eq!(seen.get("x-b3-spanid").map(String::as_str), Some(parent));
    assert_eq!(seen.get("x-b3-sampled").map(String::as_str), Some("1"));
    assert!(!seen.contains_key("x-b3-parentspanid"), "{what}: {seen:?}");
}

pub async fn every_format_joins_its_trace(phoenix: Arc<Phoenix>) -> anyhow::Result<()> {
    let project = Phoenix::unique_project("propagation");
    let echo = Echo::start("model").await?;
    let ferry = traced_sidecar(&phoenix, &project, &echo).await?;
    let client = HttpClient::http1();

    // A caller that said "not sampled" in B3: nothing recorded, its header passed on as is.
    let (quiet_trace, quiet_span) = caller();
    let quiet_b3 = format!("{quiet_trace}-{quiet_span}-0");
    let quiet = Case {
        what: "b3 not sampled",
        headers: vec![("b3", quiet_b3.clone())],
        joins: None,
    };
    let seen = send(&client, &ferry, &quiet).await?;
    assert_eq!(
        seen.headers.get("b3"),
        Some(&quiet_b3),
        "{:?}",
        seen.headers
    );
    assert!(
        !seen.headers.contains_key("traceparent"),
        "{:?}",
        seen.headers
    );

    let mut cases = Vec::new();
    let (t, s) = caller();
    cases.push(Case {
        what: "w3c only",
        headers: vec![("traceparent", format!("00-{t}-{s}-01"))],
        joins: Some((t, s)),
    });
    let (t, s) = caller();
    cases.push(Case {
        what: "b3 single only",
        headers: vec![("b3", format!("{t}-{s}-1"))],
        joins: Some((t, s)),
    });
    let (t, s) = caller();
    cases.push(Case {
        what: "b3 single, no sampling flag (ferry's ratio decides)",
        headers: vec![("b3", format!("{t}-{s}"))],
        joins: Some((t, s)),
    });
    let (short, s) = (random_hex(8), random_hex(8));
    cases.push(Case {
        what: "b3 single, 64-bit trace id",
        headers: vec![("b3", format!("{short}-{s}-1-{}", random_hex(8)))],
        joins: Some((format!("0000000000000000{short}"), s)),
    });
    let (t, s) = caller();
    cases.push(Case {
        what: "b3 multi only",
        headers: vec![
            ("x-b3-traceid", t.clone()),
            ("x-b3-spanid", s.clone()),
            ("x-b3-parentspanid", random_hex(8)),
            ("x-b3-sampled", "1".to_owned()),
        ],
        joins: Some((t, s)),
    });
    let (t, s) = caller();
    cases.push(Case {
        what: "w3c, b3 and b3 multi at once",
        headers: vec![
            ("traceparent", format!("00-{t}-{s}-01")),
            ("b3", format!("{t}-{s}-1")),
            ("x-b3-traceid", t.clone()),
            ("x-b3-spanid", s.clone()),
            ("x-b3-sampled", "1".to_owned()),
        ],
        joins: Some((t, s)),
    });
    let (t, s) = caller();
    let (other_t, other_s) = caller();
    cases.push(Case {
        what: "w3c and b3 disagreeing (the first listed format wins)",
        headers: vec![
            ("b3", format!("{other_t}-{other_s}-1")),
            ("traceparent", format!("00-{t}-{s}-01")),
        ],
        joins: Some((t, s)),
    });

    let mut sent = Vec::new();
    for case in &cases {
        sent.push(send(&client, &ferry, case).await?);
    }
    let expected: Vec<String> = cases
        .iter()
        .filter_map(|c| c.joins.as_ref().map(|(t, _)| t.clone()))
        .collect();
    let spans = phoenix
        .wait_for_spans(&project, PATIENCE, |spans| {
            expected.iter().all(|t| {
                let trace = in_trace(spans, t);
                [HOP, ATTEMPT]
                    .iter()
                    .all(|n| trace.iter().any(|s| s.name == *n))
            })
        })
        .await?;

    for (case, seen) in cases.iter().zip(&sent) {
        let Some((trace_id, parent)) = &case.joins else {
            continue;
        };
        let trace = in_trace(&spans, trace_id);
        let hop = one(&trace, HOP);
        let attempt = one(&trace, ATTEMPT);
        assert_eq!(
            hop.parent_id.as_deref(),
            Some(parent.as_str()),
            "{}: {}",
            case.what,
            describe(&trace)
        );
        assert_eq!(attempt.parent_id.as_deref(), Some(hop.span_id.as_str()));
        assert_all_formats(case.what, &seen.headers, trace_id, &attempt.span_id);
    }
    // The unsampled caller's trace is not there, though everything sent after it is.
    assert!(
        in_trace(&spans, &quiet_trace).is_empty(),
        "an unsampled caller was recorded: {}",
        describe(&in_trace(&spans, &quiet_trace))
    );
    // Nothing else: two spans per joined caller (one connect span on the first connection).
    let joined = expected.len();
    let hops = spans.iter().filter(|s| s.name == HOP).count();
    assert_eq!(
        hops,
        joined,
        "{}",
        describe(&spans.iter().collect::<Vec<_>>())
    );
    Ok(())
}

pub async fn malformed_context_starts_a_new_trace(phoenix: Arc<Phoenix>) -> anyhow::Result<()> {
    let project = Phoenix::unique_project("malformed-context");
    let echo = Echo::start("model").await?;
    let ferry = traced_sidecar(&phoenix, &project, &echo).await?;
    let client = HttpClient::http1();
    let (t, s) = caller();
    let upper = t.to_uppercase();
    let malformed: Vec<(&'static str, Vec<(&'static str, String)>)> = vec![
        (
            "all-zero trace id",
            vec![("traceparent", format!("00-{}-{s}-01", "0".repeat(32)))],
        ),
        (
            "all-zero span id",
            vec![("traceparent", format!("00-{t}-{}-01", "0".repeat(16)))],
        ),
        (
            "version ff",
            vec![("traceparent", format!("ff-{t}-{s}-01"))],
        ),
        (
            "upper-case hex",
            vec![("traceparent", format!("00-{upper}-{s}-01"))],
        ),
        (
            "version 00 with a fifth field",
            vec![("traceparent", format!("00-{t}-{s}-01-extra"))],
        ),
        (
            "garbage traceparent",
            vec![("traceparent", "garbage".into())],
        ),
        ("b3 bad flag", vec![("b3", format!("{t}-{s}-2"))]),
        (
            "b3 short trace id",
            vec![("b3", format!("{}-{s}-1", &t[1..]))],
        ),
        ("b3 flag alone", vec![("b3", "1".into())]),
        (
            "b3 multi without a span id",
            vec![("x-b3-traceid", t.clone()), ("x-b3-sampled", "1".into())],
        ),
        (
            "b3 multi non-hex",
            vec![
                ("x-b3-traceid", format!("{}zz", &t[2..])),
                ("x-b3-spanid", s.clone()),
            ],
        ),
    ];
    let mut new_traces = Vec::new();
    for (what, headers) in &malformed {
        let case = Case {
            what,
            headers: headers.clone(),
            joins: None,
        };
        let seen = send(&client, &ferry, &case).await?;
        let (trace, _, flags) = upstream_traceparent(&seen)?;
        assert_ne!(trace, t, "{what}: the malformed context was continued");
        assert_eq!(flags, "01", "{what}: ratio 1 samples the new trace");
        new_traces.push((*what, trace));
    }
    // A malformed format is skipped and the next valid one is used.
    let (b3_t, b3_s) = caller();
    let fallthrough = Case {
        what: "malformed w3c, valid b3",
        headers: vec![
            ("traceparent", format!("00-{b3_t}-{b3_s}-0x")),
            ("b3", format!("{b3_t}-{b3_s}-1")),
        ],
        joins: Some((b3_t.clone(), b3_s.clone())),
    };
    let seen = send(&client, &ferry, &fallthrough).await?;
    assert_eq!(upstream_traceparent(&seen)?.0, b3_t);

    let spans = phoenix
        .wait_for_spans(&project, PATIENCE, |spans| {
            new_traces
                .iter()
                .map(|(_, t)| t)
                .chain([&b3_t])
                .all(|t| in_trace(spans, t).iter().any(|s| s.name == HOP))
        })
        .await?;
    for (what, trace_id) in &new_traces {
        let trace = in_trace(&spans, trace_id);
        let hop = one(&trace, HOP);
        assert!(
            hop.is_root(),
            "{what}: a new trace starts at ferry: {hop:#?}"
        );
    }
    let trace = in_trace(&spans, &b3_t);
    assert_eq!(one(&trace, HOP).parent_id.as_deref(), Some(b3_s.as_str()));
    Ok(())
}
