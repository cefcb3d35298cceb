//! Which OIP operation a request is: REST paths and gRPC method names, both ways.

use http::Method;

/// The six core rpcs of `inference.GRPCInferenceService` and their REST endpoints.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rpc {
    /// `GET /v2/health/live`.
    ServerLive,
    /// `GET /v2/health/ready`.
    ServerReady,
    /// `GET /v2`.
    ServerMetadata,
    /// `GET /v2/models/{m}[/versions/{v}]/ready`.
    ModelReady,
    /// `GET /v2/models/{m}[/versions/{v}]`.
    ModelMetadata,
    /// `POST /v2/models/{m}[/versions/{v}]/infer`.
    ModelInfer,
}

/// An operation with the model it addresses (empty for server-level rpcs).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Endpoint {
    /// The operation.
    pub rpc: Rpc,
    /// Model name; empty for server-level rpcs.
    pub model: String,
    /// Model version; empty = the server's choice.
    pub version: String,
}

// === impl Rpc ===

impl Rpc {
    /// The gRPC method name.
    pub fn method_name(self) -> &'static str {
        match self {
            Rpc::ServerLive => "ServerLive",
            Rpc::ServerReady => "ServerReady",
            Rpc::ServerMetadata => "ServerMetadata",
            Rpc::ModelReady => "ModelReady",
            Rpc::ModelMetadata => "ModelMetadata",
            Rpc::ModelInfer => "ModelInfer",
        }
    }

    /// Parses a gRPC method name.
    pub fn from_method_name(name: &str) -> Option<Self> {
        [
            Rpc::ServerLive,
            Rpc::ServerReady,
            Rpc::ServerMetadata,
            Rpc::ModelReady,
            Rpc::ModelMetadata,
            Rpc::ModelInfer,
        ]
        .into_iter()
        .find(|r| r.method_name() == name)
    }
}

// === impl Endpoint ===

impl Endpoint {
    /// Maps a REST request line to its operation; `None` if it is not an OIP endpoint.
    pub fn from_rest(method: &Method, path: &str) -> Option<Self> {
        let server = |rpc| Endpoint {
            rpc,
            model: String::new(),
            version: String::new(),
        };
        let get = method == Method::GET || method == Method::HEAD;
        match path.trim_end_matches('/') {
            "/v2" if get => return Some(server(Rpc::ServerMetadata)),
            "/v2/health/live" if get => return Some(server(Rpc::ServerLive)),
            "/v2/health/ready" if get => return Some(server(Rpc::ServerReady)),
            _ => {}
        }
        let rest = path.strip_prefix("/v2/models/")?;
        let segs: Vec<&str> = rest.split('/').collect();
        let (model, version, tail) = match segs.as_slice() {
            [m, "versions", v, tail @ ..] if !v.is_empty() => (*m, *v, tail),
            [m, tail @ ..] => (*m, "", tail),
            [] => return None,
        };
        if model.is_empty() {
            return None;
        }
        let rpc = match tail {
            [] | [""] if get => Rpc::ModelMetadata,
            ["ready"] if get => Rpc::ModelReady,
            ["infer"] if method == Method::POST => Rpc::ModelInfer,
            _ => return None,
        };
        Some(Endpoint {
            rpc,
            model: model.to_owned(),
            version: version.to_owned(),
        })
    }

    /// The REST path of this operation.
    pub fn rest_path(&self) -> String {
        let model = || {
            let mut p = format!("/v2/models/{}", self.model);
            if !self.version.is_empty() {
                p.push_str("/versions/");
                p.push_str(&self.version);
            }
            p
        };
        match self.rpc {
            Rpc::ServerLive => "/v2/health/live".into(),
            Rpc::ServerReady => "/v2/health/ready".into(),
            Rpc::ServerMetadata => "/v2".into(),
            Rpc::ModelMetadata => model(),
            Rpc::ModelReady => model() + "/ready",
            Rpc::ModelInfer => model() + "/infer",
        }
    }

    /// The REST method of this operation.
    pub fn rest_method(&self) -> Method {
        match self.rpc {
            Rpc::ModelInfer => Method::POST,
            _ => Method::GET,
        }
    }
}
