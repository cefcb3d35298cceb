//! Reading endpoints' load reports from answers, for a cluster with `lb.load_report`: the
//! balanced-on metric goes into the endpoint ([`Endpoint::observe_load`]) for the next picks.
//! Clusters without it never come here, so their answers cost nothing more.
//!
//! The report is looked for in the answer's head (vLLM's `endpoint-load-metrics`, a gRPC
//! trailers-only answer) and, for a gRPC answer without one, in its trailers
//! (`endpoint-load-metrics-bin`, where gRPC servers send it). A malformed report is no report:
//! the endpoint keeps its previous one, fading with age.

use std::sync::Arc;

use ferry_filters::failure::is_grpc;
use ferry_filters::load_report::{self, OnTrailers};
use http::Response;
use http_body_util::BodyExt;

use crate::body::ProxyBody;
use crate::cluster::{Endpoint, LoadReporting};

/// Records the report in `resp`'s head, or arranges to read the one in its trailers.
pub(super) fn observe(
    resp: Response<ProxyBody>,
    endpoint: &Arc<Endpoint>,
    reporting: &LoadReporting,
) -> Response<ProxyBody> {
    if let Some(v) = load_report::metric(resp.headers(), &reporting.metric) {
        endpoint.observe_load(v);
        return resp;
    }
    if !is_grpc(resp.headers()) {
        return resp;
    }
    let endpoint = endpoint.clone();
    let metric = reporting.metric.clone();
    resp.map(move |body| {
        OnTrailers::new(body, move |trailers: &mut http::HeaderMap| {
            if let Some(v) = load_report::metric(trailers, &metric) {
                endpoint.observe_load(v);
            }
        })
        .boxed_unsync()
    })
}

#[cfg(test)]
mod tests {
    use std::net::SocketAddr;

    use ferry_filters::load_report::MetricName;
    use http_body_util::{BodyExt, StreamBody};

    use super::*;

    fn reporting() -> LoadReporting {
        LoadReporting {
            metric: Arc::new(MetricName::Named("kv_cache_usage_perc".into())),
            weight: 1.0,
        }
    }

    fn endpoint() -> Arc<Endpoint> {
        Arc::new(Endpoint::new(SocketAddr::from(([127, 0, 0, 1], 1))))
    }

    #[test]
    fn a_report_in_the_head_is_recorded() {
        let e = endpoint();
        let resp = Response::builder()
            .header(
                "endpoint-load-metrics",
                "TEXT named_metrics.kv_cache_usage_perc=0.8",
            )
            .body(crate::body::empty())
            .unwrap();
        let resp = observe(resp, &e, &reporting());
        assert_eq!(e.reported_load(), Some(0.8));
        assert!(resp.headers().contains_key("endpoint-load-metrics"));
    }

    #[tokio::test]
    async fn a_grpc_report_in_trailers_is_recorded_when_the_body_ends() {
        // OrcaLoadReport { named_metrics (field 8): {"kv_cache_usage_perc": 0.25} }, the
        // bytes written out by hand from the proto's field numbers, base64 without padding
        // (as gRPC sends binary metadata).
        const REPORT: &str = "Qh4KE2t2X2NhY2hlX3VzYWdlX3BlcmMRAAAAAAAA0D8";
        let mut trailers = http::HeaderMap::new();
        trailers.insert("grpc-status", http::HeaderValue::from_static("0"));
        trailers.insert(
            "endpoint-load-metrics-bin",
            http::HeaderValue::from_static(REPORT),
        );
        let frames: Vec<Result<http_body::Frame<bytes::Bytes>, crate::body::BoxError>> = vec![
            Ok(http_body::Frame::data(bytes::Bytes::from_static(b"msg"))),
            Ok(http_body::Frame::trailers(trailers)),
        ];
        let body = StreamBody::new(futures_util::stream::iter(frames)).boxed_unsync();
        let resp = Response::builder()
            .header("content-type", "application/grpc")
            .body(body)
            .unwrap();
        let e = endpoint();
        let resp = observe(resp, &e, &reporting());
        assert_eq!(e.reported_load(), None, "read only when the trailers pass");
        let collected = resp.into_body().collect().await.unwrap();
        assert!(collected.trailers().is_some());
        assert_eq!(e.reported_load(), Some(0.25));
    }
}
