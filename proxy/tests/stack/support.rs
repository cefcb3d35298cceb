//! The whole request path in memory: a listener's stack served over `tokio::io::duplex`
//! (the same `serve_connection` a TCP listener uses) in front of an in-memory upstream that
//! stands in for every cluster endpoint. No sockets, no processes.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use ferry_filters::connection::{Connection, PeerIdentity};
use ferry_filters::trace_context::{Propagation, SpanSink, TailRules};
use ferry_proxy::body::{BoxError, ProxyBody, full};
use ferry_proxy::descriptors::Descriptors;
use ferry_proxy::limits::LimitStates;
use ferry_proxy::listener::serve_connection;
use ferry_proxy::metrics::Metrics;
use ferry_proxy::shared::Shared;
use ferry_proxy::stack::Context;
use ferry_proxy::state::RouteStates;
use ferry_proxy::table::Table;
use ferry_proxy::tls::{IdentityStore, TlsFiles};
use ferry_proxy::traces::RouteTracing;
use ferry_proxy::upstream::{MemoryUpstream, SendError, Transport};
use http::{HeaderMap, Request, Response, StatusCode};
use http_body_util::{BodyExt, Full};
use hyper_util::rt::{TokioExecutor, TokioIo};

/// What the in-memory upstream saw of one request.
#[derive(Debug, Clone)]
pub struct Seen {
    /// The endpoint the balancer chose.
    pub endpoint: SocketAddr,
    /// Method, path and query as sent.
    pub method: http::Method,
    pub uri: http::Uri,
    pub headers: HeaderMap,
    pub body: Bytes,
}

/// A collected answer.
#[derive(Debug)]
pub struct Answer {
    pub status: StatusCode,
    pub headers: HeaderMap,
    pub body: Bytes,
    pub trailers: Option<HeaderMap>,
}

impl Answer {
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.body)
            .unwrap_or_else(|e| panic!("not JSON ({e}): {:?}", self.body))
    }

    /// The gRPC status, from the trailers or (trailers-only answers) the headers.
    pub fn grpc_status(&self) -> Option<String> {
        self.trailers
            .as_ref()
            .and_then(|t| t.get("grpc-status"))
            .or_else(|| self.headers.get("grpc-status"))
            .map(|v| v.to_str().unwrap().to_owned())
    }
}

/// A proxy table served in memory.
pub struct Stack {
    shared: Arc<Shared>,
    transport: Transport,
    seen: Arc<Mutex<Vec<Seen>>>,
}

/// How the in-memory upstream answers: given the endpoint and the collected request.
pub type Answerer =
    Arc<dyn Fn(SocketAddr, &Seen) -> Result<Response<ProxyBody>, SendError> + Send + Sync>;

impl Stack {
    /// Serves `yaml` with `answer` behind every endpoint.
    pub fn new(yaml: &str, answer: Answerer) -> Stack {
        Stack::build(yaml, answer, None)
    }

    /// [`Stack::new`] with the config's `tracing` block recording into `sink` instead of an
    /// OTLP exporter.
    pub fn traced(yaml: &str, answer: Answerer, sink: Arc<dyn SpanSink>) -> Stack {
        Stack::build(yaml, answer, Some(sink))
    }

    fn build(yaml: &str, answer: Answerer, sink: Option<Arc<dyn SpanSink>>) -> Stack {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let upstream = memory_upstream(seen.clone(), answer);
        let transport = Transport::Memory(upstream);
        let config = parse(yaml);
        let descriptors = Descriptors::load(&config).unwrap();
        let metrics = Arc::new(Metrics::new());
        let states = RouteStates::default();
        let tls = TlsFiles::load(&config).unwrap();
        let identity = Arc::new(IdentityStore::default());
        identity.set(tls.identity.clone());
        let limits = Arc::new(LimitStates::default());
        let taps = Arc::new(ferry_proxy::tap::Taps::default());
        let tracing = sink.map(|sink| {
            let t = config
                .tracing
                .as_ref()
                .expect("a traced stack needs a tracing block");
            RouteTracing {
                sink,
                propagation: t
                    .propagation
                    .iter()
                    .map(|p| match p {
                        ferry_config::Propagation::W3c => Propagation::W3c,
                        ferry_config::Propagation::B3 => Propagation::B3,
                        ferry_config::Propagation::B3Multi => Propagation::B3Multi,
                    })
                    .collect(),
                ratio: t.sampling.ratio,
                tail: TailRules {
                    always_errors: t.sampling.always_errors,
                    slower_than: t.sampling.slower_than,
                },
            }
        });
        let cx = Context {
            metrics: &metrics,
            states: &states,
            transport: &transport,
            access_log: None,
            identity: &identity,
            tls: &tls,
            limits: &limits,
            tracing: tracing.as_ref(),
            taps: &taps,
        };
        let table = Table::build(config, descriptors, None, cx).unwrap();
        Stack {
            shared: Shared::new(
                table,
                metrics,
                states,
                Default::default(),
                identity,
                limits,
                Default::default(),
                taps,
            ),
            transport,
            seen,
        }
    }

    /// Swaps in `yaml` the way a reload does (unchanged clusters and routes carry over).
    pub fn reload(&self, yaml: &str) {
        let config = parse(yaml);
        let descriptors = Descriptors::load(&config).unwrap();
        let tls = TlsFiles::load(&config).unwrap();
        self.shared.identity.set(tls.identity.clone());
        let cx = Context {
            metrics: &self.shared.metrics,
            states: &self.shared.routes,
            transport: &self.transport,
            access_log: None,
            identity: &self.shared.identity,
            tls: &tls,
            limits: &self.shared.limits,
            tracing: None,
            taps: &self.shared.taps,
        };
        let old = self.shared.table.load_full();
        let table = Table::build(config, descriptors, Some(&old), cx).unwrap();
        self.shared.table.store(Arc::new(table));
    }

    pub fn shared(&self) -> &Arc<Shared> {
        &self.shared
    }

    /// Requests the upstream has seen so far, oldest first.
    pub fn seen(&self) -> Vec<Seen> {
        self.seen.lock().unwrap().clone()
    }

    /// The `/metrics` text.
    pub fn metrics(&self) -> String {
        self.shared.metrics.encode(false)
    }

    /// Sends one request on a fresh in-memory HTTP/1.1 connection to `listener`, with a
    /// `Host` header as every HTTP/1.1 client sends (ferry refuses a request without one).
    pub async fn h1(&self, listener: &str, mut req: Request<Full<Bytes>>) -> Answer {
        if !req.headers().contains_key(http::header::HOST) {
            req.headers_mut().insert(
                http::header::HOST,
                http::HeaderValue::from_static("stack.test"),
            );
        }
        let (client, server) = tokio::io::duplex(1 << 20);
        self.serve(listener, server);
        let (mut send, conn) = hyper::client::conn::http1::handshake(TokioIo::new(client))
            .await
            .unwrap();
        tokio::spawn(conn);
        collect(send.send_request(req).await.unwrap()).await
    }

    /// [`Stack::h1`] on a connection whose peer proved `identity` (as a mutual-TLS listener
    /// records it), with a made-up certificate hash.
    pub async fn h1_as(
        &self,
        listener: &str,
        identity: &str,
        mut req: Request<Full<Bytes>>,
    ) -> Answer {
        if !req.headers().contains_key(http::header::HOST) {
            req.headers_mut().insert(
                http::header::HOST,
                http::HeaderValue::from_static("stack.test"),
            );
        }
        let (client, server) = tokio::io::duplex(1 << 20);
        let mut conn = Connection::plaintext(listener.into(), "192.0.2.8:40000".parse().unwrap());
        conn.identity = Some(PeerIdentity(identity.into()));
        conn.peer_cert_sha256 = Some("ab".repeat(32).into());
        tokio::spawn(serve_connection(
            server,
            Arc::new(conn),
            self.shared.clone(),
            None,
        ));
        let (mut send, conn) = hyper::client::conn::http1::handshake(TokioIo::new(client))
            .await
            .unwrap();
        tokio::spawn(conn);
        collect(send.send_request(req).await.unwrap()).await
    }

    /// Sends one request on a fresh in-memory HTTP/2 connection to `listener`.
    pub async fn h2(&self, listener: &str, req: Request<Full<Bytes>>) -> Answer {
        let (client, server) = tokio::io::duplex(1 << 20);
        self.serve(listener, server);
        let (mut send, conn) =
            hyper::client::conn::http2::handshake(TokioExecutor::new(), TokioIo::new(client))
                .await
                .unwrap();
        tokio::spawn(conn);
        collect(send.send_request(req).await.unwrap()).await
    }

    /// A raw in-memory connection to `listener`, for bytes no well-behaved client writes.
    pub fn raw(&self, listener: &str) -> tokio::io::DuplexStream {
        let (client, server) = tokio::io::duplex(1 << 20);
        self.serve(listener, server);
        client
    }

    fn serve(&self, listener: &str, io: tokio::io::DuplexStream) {
        let peer: SocketAddr = "192.0.2.7:40000".parse().unwrap();
        let conn = Arc::new(Connection::plaintext(listener.into(), peer));
        tokio::spawn(serve_connection(io, conn, self.shared.clone(), None));
    }
}

fn parse(yaml: &str) -> ferry_config::Config {
    ferry_config::parse("stack-test.yaml", yaml).unwrap_or_else(|e| panic!("{e}"))
}

async fn collect<B>(resp: Response<B>) -> Answer
where
    B: http_body::Body<Data = Bytes>,
    B::Error: std::fmt::Debug,
{
    let (parts, body) = resp.into_parts();
    let collected = body.collect().await.unwrap();
    let trailers = collected.trailers().cloned();
    Answer {
        status: parts.status,
        headers: parts.headers,
        body: collected.to_bytes(),
        trailers,
    }
}

fn memory_upstream(seen: Arc<Mutex<Vec<Seen>>>, answer: Answerer) -> MemoryUpstream {
    MemoryUpstream::new(tower::service_fn(
        move |(endpoint, req): (SocketAddr, Request<ProxyBody>)| {
            let seen = seen.clone();
            let answer = answer.clone();
            async move {
                let (parts, body) = req.into_parts();
                let body = body
                    .collect()
                    .await
                    .map_err(|e: BoxError| SendError::request(endpoint, e))?
                    .to_bytes();
                let s = Seen {
                    endpoint,
                    method: parts.method,
                    uri: parts.uri,
                    headers: parts.headers,
                    body,
                };
                seen.lock().unwrap().push(s.clone());
                // A slow model server, on request.
                if let Some(ms) = s.headers.get("x-test-delay-ms") {
                    let ms: u64 = ms.to_str().unwrap().parse().unwrap();
                    tokio::time::sleep(std::time::Duration::from_millis(ms)).await;
                }
                answer(endpoint, &s)
            }
        },
    ))
}

/// An upstream answering 200 with `from <endpoint> <path>`.
pub fn echo() -> Answerer {
    Arc::new(|endpoint, seen| {
        Ok(Response::new(full(format!(
            "from {endpoint} {}",
            seen.uri.path()
        ))))
    })
}

/// A request with a body.
pub fn request(
    method: &str,
    uri: &str,
    headers: &[(&str, &str)],
    body: impl Into<Bytes>,
) -> Request<Full<Bytes>> {
    let mut b = Request::builder().method(method).uri(uri);
    for (k, v) in headers {
        b = b.header(*k, *v);
    }
    b.body(Full::new(body.into())).unwrap()
}
