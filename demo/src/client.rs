//! The requests `ferry demo` sends through ferry's inbound listener: REST over HTTP/1.1 and
//! gRPC over h2c, with plain hyper clients ([`transport`]). Each yields an [`Exchange`] the demo
//! pairs with ferry's access record for the same request.

use std::net::SocketAddr;
use std::time::Duration;

use bytes::Bytes;
use http::Method;
use serde_json::{Value, json};

use crate::grpc_frame;
use crate::inference::model_infer_request::InferInputTensor;
use crate::inference::{
    InferTensorContents, ModelInferRequest, ModelInferResponse, ModelMetadataRequest,
    ModelMetadataResponse, SERVICE_PATH,
};

pub mod transport;

pub use transport::{ClientError, GrpcClient, GrpcReply, RestClient, RestReply};

/// The model name the demo asks for to show an upstream 404.
pub const UNKNOWN_MODEL: &str = "no_such_model";

/// How a request travelled.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Protocol {
    /// HTTP/1.1 with JSON.
    Rest,
    /// gRPC over h2c.
    Grpc,
}

/// One request the demo made and what came back, as the client saw it.
#[derive(Debug, Clone)]
pub struct Exchange {
    /// What the request is for.
    pub label: &'static str,
    /// REST or gRPC.
    pub protocol: Protocol,
    /// Request method.
    pub method: Method,
    /// Request path.
    pub path: String,
    /// HTTP status received.
    pub http_status: u16,
    /// gRPC status received (gRPC only).
    pub grpc_status: Option<i32>,
    /// Time from sending until the whole response was read.
    pub latency: Duration,
    /// A one-line digest of the response body or status message.
    pub summary: String,
    /// The HTTP status the demo expects (200, or 404 for the unknown model).
    pub expected_http: u16,
    /// The gRPC status the demo expects (gRPC only).
    pub expected_grpc: Option<i32>,
}

// === impl Exchange ===

impl Exchange {
    /// Whether the answer is the one the demo expects from a healthy ferry and model server.
    pub fn as_expected(&self) -> bool {
        self.http_status == self.expected_http && self.grpc_status == self.expected_grpc
    }
}

/// Sends the demo's requests to `addr` in order and returns what happened to each.
pub async fn run_script(addr: SocketAddr) -> Result<Vec<Exchange>, ClientError> {
    let mut rest = RestClient::connect(addr).await?;
    let mut exchanges = Vec::new();
    let infer_body = json!({
        "id": "demo-1",
        "inputs": [
            { "name": "INPUT0", "shape": [4], "datatype": "FP32", "data": [1, 2, 3, 4] },
            { "name": "INPUT1", "shape": [4], "datatype": "FP32", "data": [10, 20, 30, 40] },
        ],
    });
    let rest_calls: [(&'static str, Method, String, Option<&Value>, u16); 4] = [
        (
            "server live",
            Method::GET,
            "/v2/health/live".into(),
            None,
            200,
        ),
        (
            "model metadata",
            Method::GET,
            "/v2/models/add_sub".into(),
            None,
            200,
        ),
        (
            "infer add_sub",
            Method::POST,
            "/v2/models/add_sub/infer".into(),
            Some(&infer_body),
            200,
        ),
        (
            "infer unknown model: the model server answers 404",
            Method::POST,
            format!("/v2/models/{UNKNOWN_MODEL}/infer"),
            Some(&infer_body),
            404,
        ),
    ];
    for (label, method, path, body, expected_http) in rest_calls {
        let body = body.map(|b| Bytes::from(b.to_string()));
        let reply = rest.send(method.clone(), &path, body).await?;
        exchanges.push(Exchange {
            label,
            protocol: Protocol::Rest,
            method,
            path,
            http_status: reply.status.as_u16(),
            grpc_status: None,
            latency: reply.latency,
            summary: summarise_json(&reply.body),
            expected_http,
            expected_grpc: None,
        });
    }

    let mut grpc = GrpcClient::connect(addr).await?;
    let reply: GrpcReply<ModelInferResponse> = grpc.call("ModelInfer", &add_sub_request()).await?;
    let summary = reply.message.as_ref().map(summarise_infer);
    exchanges.push(grpc_exchange(
        "ModelInfer add_sub",
        "ModelInfer",
        &reply,
        summary,
    ));

    let metadata_request = ModelMetadataRequest {
        name: "add_sub".into(),
        version: String::new(),
    };
    let reply: GrpcReply<ModelMetadataResponse> =
        grpc.call("ModelMetadata", &metadata_request).await?;
    let summary = reply.message.as_ref().map(|m| {
        let inputs: Vec<String> = m
            .inputs
            .iter()
            .map(|t| format!("{} {} {:?}", t.name, t.datatype, t.shape))
            .collect();
        format!(
            "{} platform={} inputs: {}",
            m.name,
            m.platform,
            inputs.join(", ")
        )
    });
    exchanges.push(grpc_exchange(
        "ModelMetadata add_sub",
        "ModelMetadata",
        &reply,
        summary,
    ));
    Ok(exchanges)
}

/// The gRPC twin of the REST infer request, with typed FP32 contents.
pub fn add_sub_request() -> ModelInferRequest {
    let input = |name: &str, values: Vec<f32>| InferInputTensor {
        name: name.into(),
        datatype: "FP32".into(),
        shape: vec![4],
        parameters: Default::default(),
        contents: Some(InferTensorContents {
            fp32_contents: values,
            ..Default::default()
        }),
    };
    ModelInferRequest {
        model_name: "add_sub".into(),
        id: "demo-grpc-1".into(),
        inputs: vec![
            input("INPUT0", vec![1.0, 2.0, 3.0, 4.0]),
            input("INPUT1", vec![10.0, 20.0, 30.0, 40.0]),
        ],
        ..Default::default()
    }
}

fn grpc_exchange<M>(
    label: &'static str,
    rpc: &str,
    reply: &GrpcReply<M>,
    summary: Option<String>,
) -> Exchange {
    let summary = summary.unwrap_or_else(|| reply.grpc_message.clone());
    Exchange {
        label,
        protocol: Protocol::Grpc,
        method: Method::POST,
        path: format!("{SERVICE_PATH}{rpc}"),
        http_status: reply.http_status.as_u16(),
        grpc_status: reply.grpc_status,
        latency: reply.latency,
        summary,
        expected_http: 200,
        expected_grpc: Some(0),
    }
}

fn summarise_infer(response: &ModelInferResponse) -> String {
    let outputs: Vec<String> = response
        .outputs
        .iter()
        .map(|o| {
            let values = o
                .contents
                .as_ref()
                .map(|c| c.fp32_contents.clone())
                .unwrap_or_default();
            format!("{}={values:?}", o.name)
        })
        .collect();
    outputs.join(" ")
}

/// Shortens a JSON (or other) body to one line for the report.
fn summarise_json(body: &[u8]) -> String {
    const MAX_CHARS: usize = 110;
    let text = match serde_json::from_slice::<Value>(body) {
        Ok(Value::Object(map)) if map.contains_key("model_name") => {
            let outputs = map.get("outputs").and_then(Value::as_array);
            outputs
                .into_iter()
                .flatten()
                .map(|o| format!("{}={}", o["name"].as_str().unwrap_or("?"), o["data"]))
                .collect::<Vec<_>>()
                .join(" ")
        }
        Ok(value) => value.to_string(),
        Err(_) => String::from_utf8_lossy(body).into_owned(),
    };
    let mut short: String = text.chars().take(MAX_CHARS).collect();
    if short.len() < text.len() {
        short.push('…');
    }
    short
}

/// The status names printed for an exchange, e.g. `200` or `200 grpc=OK`.
pub fn status_text(exchange: &Exchange) -> String {
    match exchange.grpc_status {
        Some(code) => format!(
            "{} grpc={}",
            exchange.http_status,
            grpc_frame::code_name(code)
        ),
        None if exchange.protocol == Protocol::Grpc => {
            format!("{} grpc=<none>", exchange.http_status)
        }
        None => exchange.http_status.to_string(),
    }
}
