//! Raw route types: match, destination and per-route policies.

use schemars::JsonSchema;
use serde::Deserialize;

use super::scalars::{DurationText, HeaderNameText, PercentText, Text};
use super::shorthand::{HeaderValues, Methods, StringMatchSpec, To};

/// A route: a match and what to do with matching requests.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "Route")]
pub struct RawRoute {
    /// Unique within the listener; used as a metric label.
    pub name: Text,
    /// Conditions; omitted = match every request.
    #[serde(rename = "match")]
    pub matcher: Option<RouteMatchSpec>,
    /// Forward to a cluster (or a weighted split). Exactly one of `to` / `direct_response`.
    pub to: Option<To>,
    /// Answer directly without an upstream. Exactly one of `to` / `direct_response`.
    pub direct_response: Option<DirectResponseSpec>,
    /// Header edits applied to the request before it goes upstream.
    pub request_headers: Option<HeaderEditsSpec>,
    /// Header edits applied to the response before it goes downstream.
    pub response_headers: Option<HeaderEditsSpec>,
    /// Replace a path prefix before forwarding.
    pub prefix_rewrite: Option<PrefixRewriteSpec>,
    /// Time until the upstream's response headers arrive; `0s` = no limit. Default `15s`.
    pub timeout: Option<DurationText>,
    /// Retry policy; omitted = no retries.
    pub retry: Option<RetrySpec>,
    /// Protocol translation between REST and gRPC; omitted = forward as is.
    pub translate: Option<TranslateSpec>,
    /// Check OIP infer requests' input tensors against model metadata before forwarding;
    /// omitted = no check.
    pub validate_tensors: Option<super::ValidateTensorsSpec>,
    /// Who may call this route, by peer identity and model (on top of the listener's
    /// `authorization`); omitted = anyone the listener admits.
    pub authorization: Option<super::AuthorizationSpec>,
    /// Rate limits; every entry must admit a request (over one: 429 / RESOURCE_EXHAUSTED).
    /// Omitted = none.
    #[serde(default)]
    pub rate_limit: Vec<super::RateLimitSpec>,
    /// Cap on requests in flight to the upstream, per model; omitted = none.
    pub concurrency: Option<super::ConcurrencySpec>,
    /// `false`: this route's requests write no access-log line (e.g. health checks). Default
    /// `true` (every sink in the top-level `access_log` gets them).
    pub access_log: Option<bool>,
    /// Load reports on this route's answers: ferry's own (`report`) and the upstream's
    /// (`strip`); omitted = answers pass as the upstream sent them.
    pub load_report: Option<RouteLoadReportSpec>,
    /// Faults injected for drills (delays, aborts); omitted = none.
    pub fault: Option<super::FaultSpec>,
    /// Copies of a share of requests sent to candidate clusters, whose answers never reach
    /// the caller and may be compared with the primary's. Omitted = none.
    #[serde(default)]
    pub mirror: Vec<super::MirrorSpec>,
}

/// What a route does with load reports (`endpoint-load-metrics*`) on its answers.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "RouteLoadReport")]
pub struct RouteLoadReportSpec {
    /// Add ferry's own load to every answer (`named_metrics.ferry_inflight`,
    /// `named_metrics.ferry_queued`), for an outbound ferry to balance on. Default false.
    pub report: Option<bool>,
    /// Remove the upstream's load reports from answers (headers and trailers), for callers
    /// outside the mesh. With `report`, ferry's report is added after. Default false.
    pub strip: Option<bool>,
}

/// Protocol translation on a route: between serving protocols (`{from: oip-v2-rest, to:
/// kserve-v1, signature: ...}`, `{from: tfserving-grpc, to: oip-v2-grpc}`), `{from: rest, to: grpc, protocol: oip-v2}` or the reverse
/// (an alias of `{from: oip-v2-rest, to: oip-v2-grpc}`), or `{from: rest, to: grpc, protocol:
/// descriptor, descriptor_set: api.pb}` for any gRPC service with `google.api.http`
/// annotations.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "Translate")]
pub struct TranslateSpec {
    /// What the callers speak: a protocol name, or a list of them.
    pub from: super::bridge::WireList,
    /// What the upstream speaks.
    pub to: WireSpec,
    /// With `from`/`to` `rest` or `grpc`: the API mapping. Default `oip-v2` (Open Inference
    /// Protocol / KServe v2). Omitted with protocol names.
    pub protocol: Option<TranslateProtocolSpec>,
    /// The model's tensors, for bridging to or from a protocol that carries no datatypes or
    /// shapes: required with `to: kserve-v1` (inputs and outputs) and `from: kserve-v1`
    /// (inputs). Optional with `tfserving-grpc` on either side (any datatype): requests that
    /// do not fit it are refused, and metadata calls are answered from it.
    pub signature: Option<super::bridge::SignatureSpec>,
    /// Largest request or response body, and largest total of decoded tensor bytes, one
    /// translated message may have; over it: 413 / RESOURCE_EXHAUSTED. Default 67108864.
    pub max_decoded_bytes: Option<u64>,
    /// `to: torchserve-rest` / `torchserve-grpc` only: how each input tensor becomes the bytes
    /// the TorchServe handler receives (`json`, `raw` or `npy`; docs/interop.md has the exact
    /// bytes). Default `json`.
    pub payload: Option<super::torchserve::PayloadSpec>,
    /// `from: grpc` (or `tfserving-grpc`), `to: rest` (`oip-v2-rest`) only: whether raw
    /// tensors go to the REST upstream as binary-extension
    /// sections (`true`: Triton, KServe), as JSON `data` (`false`: MLServer 1.7 has no binary
    /// extension), or as its server metadata (`GET /v2` `extensions`) says (`auto`, probed
    /// once a minute). Default auto.
    pub upstream_binary: Option<UpstreamBinarySpec>,
    /// `protocol: descriptor` only (required there): a `FileDescriptorSet` file (`protoc
    /// --include_imports --descriptor_set_out`), relative to this config file's directory.
    /// Watched and reloaded like the config.
    pub descriptor_set: Option<Text>,
    /// `protocol: descriptor` only: unknown JSON fields and query parameters are refused with
    /// 400 naming the field (`reject`) or dropped (`ignore`). Default `reject`.
    pub unknown_fields: Option<UnknownFieldsSpec>,
    /// `protocol: descriptor` only: how server-streaming answers are written out. Default
    /// `ndjson`.
    pub streaming: Option<StreamingSpec>,
    /// `protocol: descriptor` only: full names of the services to expose (e.g.
    /// `library.v1.Library`); omitted = every service in the set.
    pub services: Option<Vec<Text>>,
}

/// What to do with unknown JSON fields and query parameters.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
#[schemars(rename = "UnknownFields")]
pub enum UnknownFieldsSpec {
    /// 400 naming the field.
    Reject,
    /// Dropped.
    Ignore,
}

/// How a server stream is written out to REST callers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
#[schemars(rename = "Streaming")]
pub enum StreamingSpec {
    /// Newline-delimited JSON (`application/x-ndjson`).
    Ndjson,
    /// Server-sent events (`text/event-stream`), `data: {...}` per message.
    Sse,
}

/// `true`, `false` or `auto`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(untagged)]
#[schemars(rename = "UpstreamBinary")]
pub enum UpstreamBinarySpec {
    /// Always (`true`) or never (`false`).
    Fixed(bool),
    /// Ask the upstream.
    Probe(ProbeSpec),
}

/// The word `auto`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum ProbeSpec {
    /// Probe the upstream's server metadata.
    Auto,
}

/// One side of a translation: a wire (`rest`, `grpc`, with `protocol`) or a serving protocol.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
#[schemars(rename = "Wire")]
pub enum WireSpec {
    /// HTTP/JSON (OIP REST, with the binary tensor extension).
    Rest,
    /// gRPC over HTTP/2.
    Grpc,
    /// Open Inference Protocol v2 over REST (`/v2/models/{m}/infer`).
    OipV2Rest,
    /// Open Inference Protocol v2 over gRPC (`inference.GRPCInferenceService`).
    OipV2Grpc,
    /// The TF Serving REST API that KServe V1 serves (`/v1/models/{m}:predict`).
    KserveV1,
    /// `tensorflow.serving.PredictionService` (not bridged yet).
    TfservingGrpc,
    /// TorchServe's own REST API (`POST /predictions/{m}[/{v}]`; OIP callers only).
    TorchserveRest,
    /// TorchServe's own gRPC API (`InferenceAPIsService/Predictions`; OIP callers only).
    TorchserveGrpc,
}

// === impl WireSpec ===

impl WireSpec {
    /// The name as written in the config.
    pub fn name(self) -> &'static str {
        match self {
            WireSpec::Rest => "rest",
            WireSpec::Grpc => "grpc",
            WireSpec::OipV2Rest => "oip-v2-rest",
            WireSpec::OipV2Grpc => "oip-v2-grpc",
            WireSpec::KserveV1 => "kserve-v1",
            WireSpec::TfservingGrpc => "tfserving-grpc",
            WireSpec::TorchserveRest => "torchserve-rest",
            WireSpec::TorchserveGrpc => "torchserve-grpc",
        }
    }
}

/// A translation mapping.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[schemars(rename = "TranslateProtocol")]
pub enum TranslateProtocolSpec {
    /// Open Inference Protocol v2: REST JSON ⇄ `inference.GRPCInferenceService`.
    #[serde(rename = "oip-v2")]
    OipV2,
    /// Any gRPC service from a descriptor set, by its `google.api.http` annotations (REST →
    /// gRPC only).
    #[serde(rename = "descriptor")]
    Descriptor,
}

/// Route conditions; all present conditions must hold.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "RouteMatch")]
pub struct RouteMatchSpec {
    /// The request authority (Host), case-insensitive.
    pub authority: Option<StringMatchSpec>,
    /// The request path (without query string).
    pub path: Option<PathMatchSpec>,
    /// Allowed HTTP methods; omitted = any.
    pub method: Option<Methods>,
    /// Header conditions; all must hold.
    #[serde(default)]
    pub headers: Vec<HeaderMatchSpec>,
    /// Model name / version conditions.
    pub model: Option<ModelMatchSpec>,
}

/// `{exact|prefix|regex|template: ...}`: exactly one.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "PathMatch")]
pub struct PathMatchSpec {
    /// Equal to this path.
    pub exact: Option<Text>,
    /// Starts with this prefix.
    pub prefix: Option<Text>,
    /// Matches this regex (anchored: the whole path must match).
    pub regex: Option<Text>,
    /// A path template: `{name}` matches one segment, a final `{name=**}` the rest.
    pub template: Option<Text>,
}

/// A condition on one request header: `name` plus exactly one of `exact`, `prefix`, `regex`,
/// `present: true`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "HeaderMatch")]
pub struct HeaderMatchSpec {
    /// Header name.
    pub name: HeaderNameText,
    /// Value equals this.
    pub exact: Option<Text>,
    /// Value starts with this.
    pub prefix: Option<Text>,
    /// Value matches this regex (anchored).
    pub regex: Option<Text>,
    /// `true`: the header must be present, any value.
    pub present: Option<bool>,
    /// Invert the result (e.g. `present: true, invert: true` = header absent). Default false.
    pub invert: Option<bool>,
}

/// Conditions on the addressed model.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "ModelMatch")]
pub struct ModelMatchSpec {
    /// Model name.
    pub name: StringMatchSpec,
    /// Model version; omitted = any version.
    pub version: Option<StringMatchSpec>,
}

/// A response ferry writes itself.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "DirectResponse")]
pub struct DirectResponseSpec {
    /// HTTP status, 100..=599.
    pub status: i64,
    /// Body text. Default empty.
    pub body: Option<String>,
    /// Content-Type. Default `text/plain; charset=utf-8`.
    pub content_type: Option<Text>,
}

/// Header edits.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "HeaderEdits")]
pub struct HeaderEditsSpec {
    /// Headers to set, replacing existing values.
    pub set: Option<HeaderValues>,
    /// Headers to append.
    pub add: Option<HeaderValues>,
    /// Names of headers to remove.
    #[serde(default)]
    pub remove: Vec<HeaderNameText>,
}

/// A path prefix rewrite.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "PrefixRewrite")]
pub struct PrefixRewriteSpec {
    /// Prefix to replace; starts with `/`.
    pub from: Text,
    /// Replacement; starts with `/`.
    pub to: Text,
}

/// When and how often to retry.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "Retry")]
pub struct RetrySpec {
    /// Total attempts including the first, 1..=10. Default 2.
    pub attempts: Option<i64>,
    /// Retry triggers. Default `[connect-failure, unavailable]`.
    pub on: Option<Vec<RetryOnSpec>>,
    /// Retries may add at most this share of recent requests. Default `20%`.
    pub budget: Option<PercentText>,
    /// Retries allowed per second regardless of `budget`. Default 10.
    pub min_retries_per_second: Option<u32>,
    /// Larger request bodies are never retried. Default 65536.
    pub max_body_bytes: Option<u32>,
    /// Per-attempt timeout; omitted or `0s` = only the route timeout.
    pub per_try_timeout: Option<DurationText>,
}

/// A retry trigger.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
#[schemars(rename = "RetryOn")]
pub enum RetryOnSpec {
    /// The connection to the endpoint failed (the request was never sent).
    ConnectFailure,
    /// HTTP 503.
    #[serde(rename = "http-503")]
    Http503,
    /// Any HTTP 5xx.
    #[serde(rename = "http-5xx")]
    Http5xx,
    /// gRPC UNAVAILABLE.
    Unavailable,
    /// gRPC RESOURCE_EXHAUSTED or HTTP 429.
    ResourceExhausted,
    /// The connection or stream failed before any answer, whatever the method (opt-in: the
    /// upstream may have processed the request).
    Reset,
}
