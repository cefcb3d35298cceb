//! The matrix itself: the callers, the servers, which pairs a ferry route can join (and how),
//! and the one ferry config with a listener per (caller protocol × server) pair.

use std::net::SocketAddr;

use super::profiles::Profile;

/// Who calls.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Caller {
    TritonHttp,
    TritonGrpc,
    V1Rows,
    V1Columns,
    TfGrpc,
}

/// Which server answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Server {
    MlRest,
    MlGrpc,
    KserveV1,
    TsRest,
    TsGrpc,
    TsV1,
    TfGrpc,
}

/// How a caller reaches a server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reach {
    /// The same protocol: a plain route, compared with the direct call.
    Passthrough,
    /// `translate` without a signature (OIP REST ⇄ gRPC).
    Translate,
    /// `translate` with the profile's signature (`outputs` too when the bridge takes them).
    Bridge { outputs: bool },
    /// ferry has no bridge between the two protocols (`ferry validate` says so).
    NotBridged,
    /// The server does not serve this form of its protocol.
    ServerLacks(&'static str),
}

pub const CALLERS: [Caller; 5] = [
    Caller::TritonHttp,
    Caller::TritonGrpc,
    Caller::V1Rows,
    Caller::V1Columns,
    Caller::TfGrpc,
];

pub const SERVERS: [Server; 7] = [
    Server::MlRest,
    Server::MlGrpc,
    Server::KserveV1,
    Server::TsRest,
    Server::TsGrpc,
    Server::TsV1,
    Server::TfGrpc,
];

// === impl Caller ===

impl Caller {
    pub fn protocol(self) -> &'static str {
        match self {
            Caller::TritonHttp => "oip-v2-rest",
            Caller::TritonGrpc => "oip-v2-grpc",
            Caller::V1Rows | Caller::V1Columns => "kserve-v1",
            Caller::TfGrpc => "tfserving-grpc",
        }
    }

    pub fn label(self) -> &'static str {
        match self {
            Caller::TritonHttp => "tritonclient HTTP (JSON)",
            Caller::TritonGrpc => "tritonclient gRPC",
            Caller::V1Rows => "requests V1 :predict rows",
            Caller::V1Columns => "requests V1 :predict columns",
            Caller::TfGrpc => "grpcio TF Serving stub",
        }
    }

    /// How this caller reaches `server`.
    pub fn reach(self, server: Server) -> Reach {
        let (from, to) = (self.protocol(), server.protocol());
        if self == Caller::V1Columns && server == Server::TsV1 {
            return Reach::ServerLacks("TorchServe's kserve envelope reads only `instances` rows");
        }
        match (from, to) {
            _ if from == to => Reach::Passthrough,
            ("oip-v2-rest" | "oip-v2-grpc", "oip-v2-rest" | "oip-v2-grpc") => Reach::Translate,
            ("oip-v2-rest" | "oip-v2-grpc", _) => Reach::Bridge { outputs: true },
            ("kserve-v1", "oip-v2-rest" | "oip-v2-grpc") => Reach::Bridge { outputs: false },
            ("tfserving-grpc", "oip-v2-rest" | "oip-v2-grpc") => Reach::Bridge { outputs: true },
            _ => Reach::NotBridged,
        }
    }
}

// === impl Server ===

impl Server {
    pub fn protocol(self) -> &'static str {
        match self {
            Server::MlRest => "oip-v2-rest",
            Server::MlGrpc => "oip-v2-grpc",
            Server::KserveV1 | Server::TsV1 => "kserve-v1",
            Server::TsRest => "torchserve-rest",
            Server::TsGrpc => "torchserve-grpc",
            Server::TfGrpc => "tfserving-grpc",
        }
    }

    /// Short name: cluster names, listener names, table columns.
    pub fn name(self) -> &'static str {
        match self {
            Server::MlRest => "mlserver-rest",
            Server::MlGrpc => "mlserver-grpc",
            Server::KserveV1 => "kserve-v1",
            Server::TsRest => "torchserve-rest",
            Server::TsGrpc => "torchserve-grpc",
            Server::TsV1 => "torchserve-v1",
            Server::TfGrpc => "tfserving-grpc",
        }
    }

    pub fn profile(self) -> Profile {
        match self {
            Server::MlRest | Server::MlGrpc => Profile::echo(),
            Server::KserveV1 => Profile::scorer(),
            Server::TsRest | Server::TsGrpc | Server::TsV1 => Profile::pair(),
            Server::TfGrpc => Profile::affine(),
        }
    }

    /// gRPC upstreams get HTTP/2 without negotiation (the peers speak h2c only).
    fn cluster_protocol(self) -> &'static str {
        match self {
            Server::MlGrpc | Server::TfGrpc | Server::TsGrpc => "h2",
            _ => "auto",
        }
    }
}

/// The server endpoint a direct call of `caller` goes to, when one speaks its protocol: the
/// reference a cell's answers are compared with.
pub fn direct(caller: Caller, server: Server) -> Option<Server> {
    match (caller, server) {
        (Caller::TritonHttp, Server::MlRest | Server::MlGrpc) => Some(Server::MlRest),
        (Caller::TritonGrpc, Server::MlRest | Server::MlGrpc) => Some(Server::MlGrpc),
        // Same protocol: the direct call is the reference. A server lacking the form: the
        // direct call shows it refusing it.
        _ if matches!(
            caller.reach(server),
            Reach::Passthrough | Reach::ServerLacks(_)
        ) =>
        {
            Some(server)
        }
        _ => None,
    }
}

/// The listener of a (caller protocol, server) pair.
pub fn listener(caller: Caller, server: Server) -> String {
    format!("{}-to-{}", caller.protocol(), server.name())
}

/// One route for `from` → `server`, as `reach` says.
pub fn route(caller: Caller, server: Server) -> Option<String> {
    let from = caller.protocol();
    let translate = match caller.reach(server) {
        Reach::Passthrough => String::new(),
        Reach::Translate => format!(
            "\n        translate: {{ from: {from}, to: {} }}",
            server.protocol()
        ),
        Reach::Bridge { outputs } => {
            let payload = match server {
                Server::TsRest | Server::TsGrpc => ", payload: json",
                _ => "",
            };
            format!(
                "\n        translate: {{ from: {from}, to: {}{payload}, signature: {} }}",
                server.protocol(),
                server.profile().signature(outputs)
            )
        }
        Reach::NotBridged | Reach::ServerLacks(_) => return None,
    };
    // KServe's ModelServer (uvicorn) closes a kept-alive connection after a model raised,
    // without saying so; the next request on it is reset before any answer. Inference on these
    // stateless models is safe to resend.
    let retry = match server {
        Server::KserveV1 => "\n        retry: { attempts: 2, on: [connect-failure, reset] }",
        _ => "",
    };
    Some(format!(
        "      - name: {}{translate}{retry}\n        to: {}\n",
        listener(caller, server),
        server.name()
    ))
}

/// The ferry config: a listener per (caller protocol × server) pair that a route can join,
/// and a cluster per server.
pub fn config(endpoint: impl Fn(Server) -> SocketAddr) -> String {
    let mut yaml = "apiVersion: ferry/v1\nadmin: { address: 127.0.0.1:0 }\nlisteners:\n".to_owned();
    let mut seen = Vec::new();
    for caller in CALLERS {
        for server in SERVERS {
            let name = listener(caller, server);
            let Some(route) = route(caller, server) else {
                continue;
            };
            if seen.contains(&name) {
                continue;
            }
            yaml.push_str(&format!(
                "  - name: {name}\n    address: 127.0.0.1:0\n    routes:\n{route}"
            ));
            seen.push(name);
        }
    }
    // The matrix sends failing requests on purpose: no endpoint may be ejected for them.
    yaml.push_str("clusters:\n");
    for server in SERVERS {
        yaml.push_str(&format!(
            "  - name: {}\n    endpoints: [{}]\n    protocol: {}\n    outlier: {{ enabled: false }}\n",
            server.name(),
            endpoint(server),
            server.cluster_protocol()
        ));
    }
    yaml
}
