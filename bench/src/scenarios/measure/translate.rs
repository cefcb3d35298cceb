//! The `translate` scenario: OIP REST infer requests with one FP32 tensor, translated to the
//! gRPC ModelInfer call by the proxy (ferry's `translate` route, Envoy's grpc_json_transcoder),
//! answered by the bench upstream with a small fixed response. Each tensor size runs on its own
//! start of the proxy, so the peak RSS belongs to that size alone.

use bytes::Bytes;
use http::{HeaderName, HeaderValue, Method};
use http_body_util::BodyExt;

use super::{Ctx, Shape};
use crate::error::{BenchError, Result};
use crate::loadgen::{Conn, Proto, RequestSpec};
use crate::scenarios::{BINARY_SCENARIO, fp32_activations};
use crate::targets::{Kind, Setup};

/// The REST path both proxies translate (model name "bench").
pub(crate) const INFER_PATH: &str = "/v2/models/bench/infer";
/// FP32 elements of the binary-tensor case: 1 MiB, the size of `upload_1mib`'s body.
const BINARY_ELEMENTS: usize = 1 << 18;

impl Ctx<'_> {
    /// Measures REST→gRPC translation of a tensor of `elements` FP32 values.
    pub(in crate::scenarios) async fn translate(&mut self, elements: usize) -> Result<()> {
        let spec = RequestSpec {
            method: Method::POST,
            path: INFER_PATH.to_owned(),
            body: request_body(self.kind(), elements),
            grpc: false,
            headers: Vec::new(),
        };
        // Small requests need more in flight to keep one proxy core busy.
        let connections = if elements <= 1_024 { 8 } else { 2 };
        self.translate_run(&format!("translate_{elements}"), spec, connections)
            .await
    }

    /// Measures REST→gRPC translation of a 1 MiB FP32 tensor sent as a binary section (the
    /// binary tensor data extension): ferry only, Envoy's transcoder has no such thing. Run
    /// beside `upload_1mib` (a plain 1 MiB POST) with the same four connections, so the two
    /// throughputs compare.
    pub(in crate::scenarios) async fn translate_binary(&mut self) -> Result<()> {
        let (body, json_len) = binary_request_body(BINARY_ELEMENTS);
        let spec = RequestSpec {
            method: Method::POST,
            path: INFER_PATH.to_owned(),
            body,
            grpc: false,
            headers: vec![(
                HeaderName::from_static("inference-header-content-length"),
                HeaderValue::from(json_len),
            )],
        };
        self.translate_run(BINARY_SCENARIO, spec, 4).await
    }

    /// Starts the target on its translate config, checks one request, then runs closed-loop
    /// load with `spec` and records CPU per request, peak RSS and the request size.
    async fn translate_run(
        &mut self,
        scenario: &str,
        spec: RequestSpec,
        connections: usize,
    ) -> Result<()> {
        let workdir = self.plan.workdir.join(format!(
            "{}-rep{}-{scenario}",
            self.kind().name(),
            self.rep + 1
        ));
        let running = self
            .target
            .start_with(self.plan.upstream, &workdir, Setup::Translate)
            .await?;
        let result = async {
            probe(running.h1, &spec).await?;
            let mut plan = self.load_plan(&running, Proto::Http1, connections, 1, spec);
            plan.duration = self.plan.sizing.translate;
            let outer_loaded = std::mem::take(&mut self.loaded_rss_kib);
            let loaded = self.load(&running, scenario, &plan, Shape::Closed).await;
            let peak_loaded = std::mem::replace(&mut self.loaded_rss_kib, outer_loaded);
            let (stats, cpu) = loaded?;
            if stats.ok > 0 {
                self.record(
                    scenario,
                    "cpu_ms_per_req",
                    "CPU-ms",
                    cpu / stats.ok as f64 * 1_000.0,
                );
            }
            if let Some(m) = running.memory()? {
                // VmHWM can trail the sampled RSS (lazily synced counters): take the larger.
                let peak = m.hwm_kib.max(peak_loaded);
                self.record(scenario, "rss_peak_mib", "MiB", peak as f64 / 1024.0);
            }
            let mib = plan.request.body.len() as f64 / (1024.0 * 1024.0);
            self.record(scenario, "request_mib", "MiB", mib);
            self.record(scenario, "mib_per_s", "MiB/s", stats.rps() * mib);
            Ok(())
        }
        .await;
        running.stop().await;
        result
    }
}

/// One request before the load: it must come back 200 with the upstream's output tensor in
/// JSON, so a proxy that passes the request through untranslated (or mangles the response)
/// fails the scenario instead of being timed.
async fn probe(addr: std::net::SocketAddr, spec: &RequestSpec) -> Result<()> {
    let mut conn = Conn::connect(addr, Proto::Http1).await?;
    let body = conn.send_streaming(&addr.to_string(), spec).await?;
    let bytes = body
        .collect()
        .await
        .map_err(|e| BenchError::Http(format!("reading the translated response: {e}")))?
        .to_bytes();
    let text = String::from_utf8_lossy(&bytes);
    if text.contains("\"output0\"") && text.contains("0.5") {
        Ok(())
    } else {
        Err(BenchError::Http(format!(
            "translated response lacks the upstream's output: {text:.200}"
        )))
    }
}

/// An OIP REST infer request whose one FP32 tensor of `elements` travels as a binary section
/// after the JSON header, and the header's length (for `Inference-Header-Content-Length`).
pub(crate) fn binary_request_body(elements: usize) -> (Bytes, usize) {
    let bytes = elements * 4;
    let json = format!(
        r#"{{"inputs":[{{"name":"input0","shape":[1,{elements}],"datatype":"FP32","parameters":{{"binary_data_size":{bytes}}}}}]}}"#
    );
    let mut body = Vec::with_capacity(json.len() + bytes);
    body.extend_from_slice(json.as_bytes());
    // Any bit pattern is some f32; a ramp keeps the bytes from being all alike.
    body.extend((0..bytes).map(|i| (i % 251) as u8));
    (Bytes::from(body), json.len())
}

/// The JSON request each proxy expects for the same tensor: OIP REST for ferry, the proto3
/// JSON of ModelInferRequest (model name from the path) for Envoy's transcoder.
pub(crate) fn request_body(kind: Kind, elements: usize) -> Bytes {
    let values = fp32_activations(elements);
    let body = if kind == Kind::Envoy {
        format!(
            r#"{{"inputs":[{{"name":"input0","datatype":"FP32","shape":[1,{elements}],"contents":{{"fp32_contents":[{values}]}}}}]}}"#
        )
    } else {
        format!(
            r#"{{"inputs":[{{"name":"input0","shape":[1,{elements}],"datatype":"FP32","data":[{values}]}}]}}"#
        )
    };
    Bytes::from(body)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn binary_body_is_the_json_header_then_exactly_the_declared_bytes() {
        let (body, json_len) = binary_request_body(1 << 18);
        assert_eq!(body.len(), json_len + (1 << 20));
        let header: serde_json::Value = serde_json::from_slice(&body[..json_len]).unwrap();
        let input = &header["inputs"][0];
        assert_eq!(input["datatype"], "FP32");
        assert_eq!(input["shape"][1], 1 << 18);
        assert_eq!(input["parameters"]["binary_data_size"], 1 << 20);
    }

    #[test]
    fn both_bodies_carry_the_same_tensor() {
        let oip: serde_json::Value =
            serde_json::from_slice(&request_body(Kind::Ferry, 1000)).unwrap();
        let proto: serde_json::Value =
            serde_json::from_slice(&request_body(Kind::Envoy, 1000)).unwrap();
        let data = oip["inputs"][0]["data"].as_array().unwrap();
        let contents = proto["inputs"][0]["contents"]["fp32_contents"]
            .as_array()
            .unwrap();
        assert_eq!(data.len(), 1000);
        assert_eq!(data, contents);
        assert_eq!(oip["inputs"][0]["shape"], proto["inputs"][0]["shape"]);
        assert!(
            data.iter()
                .all(|v| v.as_f64().is_some_and(|f| f.abs() <= 1.0))
        );
        // Not a constant: real tensors do not compress to one repeated token.
        assert_ne!(data[0], data[1]);
    }
}
