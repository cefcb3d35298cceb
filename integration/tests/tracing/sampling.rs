//! Which traces ferry keeps. Parent-based: a caller's decision is followed (`01` kept even at
//! ratio 0, `00` passed on untouched); without one, the ratio decides and the upstream is told
//! the decision in a fresh `traceparent`. The tail rules keep an unsampled request that failed
//! (`always_errors`) or was slow (`slower_than`), and nothing else.
//!
//! Absence is proved by order: ferry exports in the order hops finish, so once a kept trace
//! sent last is in Phoenix, anything recorded before it would be there too.

use std::collections::BTreeSet;
use std::sync::Arc;

use ferry_integration::phoenix::StatusCode as SpanStatus;
use ferry_integration::upstream::echo::{DELAY_HEADER, STATUS_HEADER};
use ferry_integration::{Echo, HttpClient, Phoenix};
use http::StatusCode;
use serde_json::json;

use crate::support::{
    caller, describe, echoed, get, in_trace, one, otlp_grpc, sidecar, upstream_traceparent,
    wait_for_trace,
};

const HOP: &str = "GET models";
const ATTEMPT: &str = "GET model";

/// Trace ids that have a SERVER span in `spans`.
fn hop_traces(spans: &[ferry_integration::phoenix::Span]) -> BTreeSet<String> {
    spans
        .iter()
        .filter(|s| s.name == HOP)
        .map(|s| s.trace_id.clone())
        .collect()
}

pub async fn ratio_zero_records_nothing(phoenix: Arc<Phoenix>) -> anyhow::Result<()> {
    let project = Phoenix::unique_project("ratio-zero");
    let echo = Echo::start("model").await?;
    let tracing = json!({ "otlp": otlp_grpc(&phoenix), "sampling": { "ratio": 0 } });
    let ferry = crate::support::start(&sidecar(tracing, echo.addr()), &project).await?;
    let addr = ferry.listener("main")?;
    let client = HttpClient::http1();

    // No caller context: a fresh, unsampled context goes upstream, a new trace each time.
    let mut fresh = BTreeSet::new();
    for _ in 0..30 {
        let reply = get(&client, addr, "/x", &[]).await?;
        assert_eq!(reply.status, StatusCode::OK);
        let (trace, _, flags) = upstream_traceparent(&echoed(&reply)?)?;
        assert_eq!(flags, "00", "ratio 0 decides 'not sampled'");
        fresh.insert(trace);
    }
    assert_eq!(fresh.len(), 30, "every request starts its own trace");
    // A caller's "not sampled" passes through untouched.
    let (quiet, quiet_span) = caller();
    let quiet_parent = format!("00-{quiet}-{quiet_span}-00");
    let reply = get(&client, addr, "/x", &[("traceparent", &quiet_parent)]).await?;
    let seen = echoed(&reply)?;
    assert_eq!(seen.headers.get("traceparent"), Some(&quiet_parent));
    // A caller's "sampled" is followed even at ratio 0: the marker sent last.
    let (marker, marker_span) = caller();
    let reply = get(
        &client,
        addr,
        "/x",
        &[("traceparent", &format!("00-{marker}-{marker_span}-01"))],
    )
    .await?;
    let (_, parent, flags) = upstream_traceparent(&echoed(&reply)?)?;
    assert_eq!(flags, "01");

    let spans = wait_for_trace(&phoenix, &project, &marker, &[HOP, ATTEMPT]).await?;
    let trace = in_trace(&spans, &marker);
    assert_eq!(
        one(&trace, HOP).parent_id.as_deref(),
        Some(marker_span.as_str())
    );
    assert_eq!(one(&trace, ATTEMPT).span_id, parent);
    assert_eq!(
        spans.len(),
        trace.len(),
        "only the sampled caller's trace: {}",
        describe(&spans.iter().collect::<Vec<_>>())
    );
    Ok(())
}

pub async fn errors_slow_requests_and_sampled_callers_are_kept(
    phoenix: Arc<Phoenix>,
) -> anyhow::Result<()> {
    let project = Phoenix::unique_project("tail-rules");
    let echo = Echo::start("model").await?;
    let tracing = json!({
        "otlp": otlp_grpc(&phoenix),
        "sampling": { "ratio": 0, "always_errors": true, "slower_than": "500ms" },
    });
    let ferry = crate::support::start(&sidecar(tracing, echo.addr()), &project).await?;
    let addr = ferry.listener("main")?;
    let client = HttpClient::http1();
    let send = |headers: Vec<(&'static str, String)>| {
        let client = client.clone();
        async move {
            let h: Vec<(&str, &str)> = headers.iter().map(|(k, v)| (*k, v.as_str())).collect();
            let reply = get(&client, addr, "/x", &h).await?;
            let (trace, _, flags) = upstream_traceparent(&echoed(&reply)?)?;
            anyhow::Ok((reply.status, trace, flags))
        }
    };

    let mut dropped = BTreeSet::new();
    for _ in 0..10 {
        let (status, trace, _) = send(vec![]).await?;
        assert_eq!(status, StatusCode::OK);
        dropped.insert(trace);
    }
    let (status, client_error, _) = send(vec![(STATUS_HEADER, "404".into())]).await?;
    assert_eq!(status, StatusCode::NOT_FOUND);
    dropped.insert(client_error);

    let (status, failed, flags) = send(vec![(STATUS_HEADER, "503".into())]).await?;
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE);
    // The upstream was told "not sampled": keeping it was decided after the answer.
    assert_eq!(flags, "00");
    let (status, slow, flags) = send(vec![(DELAY_HEADER, "1000".into())]).await?;
    assert_eq!((status, flags.as_str()), (StatusCode::OK, "00"));
    let (sampled, sampled_span) = caller();
    let (status, _, flags) = send(vec![(
        "traceparent",
        format!("00-{sampled}-{sampled_span}-01"),
    )])
    .await?;
    assert_eq!((status, flags.as_str()), (StatusCode::OK, "01"));

    let spans = phoenix
        .wait_for_spans(&project, crate::support::PATIENCE, |spans| {
            let kept = hop_traces(spans);
            [&failed, &slow, &sampled].iter().all(|t| kept.contains(*t))
        })
        .await?;
    let kept = hop_traces(&spans);
    let expected: BTreeSet<String> = [failed.clone(), slow.clone(), sampled.clone()].into();
    assert_eq!(
        kept,
        expected,
        "kept: the 503, the slow one, the sampled caller; not the {} fast 2xx/4xx ({dropped:?})",
        dropped.len()
    );

    let trace = in_trace(&spans, &failed);
    let hop = one(&trace, HOP);
    assert_eq!(hop.status_code, SpanStatus::Error, "{hop:#?}");
    assert_eq!(hop.attr_i64("http.response.status_code"), Some(503));
    assert!(hop.is_root(), "{hop:#?}");
    let attempt = one(&trace, ATTEMPT);
    assert_eq!(attempt.attr_i64("http.response.status_code"), Some(503));

    let trace = in_trace(&spans, &slow);
    let hop = one(&trace, HOP);
    assert!(hop.duration_micros() >= 1_000_000, "{hop:#?}");
    assert_ne!(hop.status_code, SpanStatus::Error, "{hop:#?}");
    one(&trace, ATTEMPT);

    let trace = in_trace(&spans, &sampled);
    assert_eq!(
        one(&trace, HOP).parent_id.as_deref(),
        Some(sampled_span.as_str())
    );
    Ok(())
}
