//! A ferry with something on every panel: two model routes (`chat` serves `llama`, all answers
//! 200; `embed` serves `bge`, half of them 503), a `batch` route whose cluster has a dead
//! endpoint (connect errors, retries, ejections), a rate limit and a concurrency limit on
//! `chat`, a permissive mutual-TLS listener (handshakes, a refused stranger, plaintext callers),
//! a workload certificate (its expiry), tracing to a collector that is not there (dropped
//! spans), and callers that open a connection and send nothing (closed by ferry). A
//! background loop keeps traffic flowing while Prometheus scrapes.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use bytes::Bytes;
use ferry_integration::client::{body_full, request};
use ferry_integration::{Ca, Echo, Ferry, HttpClient, TlsClient, Workload, to_yaml};
use http::Method;
use serde_json::{Value, json};
use tokio::io::AsyncReadExt as _;

/// The data listener.
pub const MAIN: &str = "main";
/// The permissive mutual-TLS listener.
pub const MESH: &str = "mesh";
/// Routes, and the models the model routes serve.
pub const ROUTES: [&str; 4] = ["chat", "embed", "batch", "secure"];
/// The models the model routes serve.
pub const MODELS: [&str; 2] = ["llama", "bge"];
/// How often the load loop sends one round of requests: light on a shared 2-core machine.
const PACE: Duration = Duration::from_millis(40);

/// ferry, its upstreams and certificates.
pub struct Scene {
    /// The running ferry.
    pub ferry: Ferry,
    ca: Ca,
    client_cert: (String, String),
    stranger: (String, String, String),
    _upstreams: Vec<Echo>,
    _certs: tempfile::TempDir,
}

/// The background load; stops when dropped.
pub struct Load {
    stop: Arc<AtomicBool>,
    task: tokio::task::JoinHandle<()>,
}

/// An address nothing listens on: bound by the kernel, then closed.
fn closed_port() -> anyhow::Result<SocketAddr> {
    Ok(std::net::TcpListener::bind("127.0.0.1:0")?.local_addr()?)
}

/// The config: see the module docs.
fn config(
    certs: &std::path::Path,
    up: &[SocketAddr; 3],
    dead: SocketAddr,
    otlp: SocketAddr,
) -> Value {
    let file = |name: &str| certs.join(name).display().to_string();
    json!({
        "apiVersion": "ferry/v1",
        "admin": { "address": "127.0.0.1:0" },
        "identity": { "cert": file("tls.crt"), "key": file("tls.key"), "trust": [file("ca.crt")] },
        "tracing": {
            "otlp": {
                "endpoint": format!("http://{otlp}"), "protocol": "grpc", "timeout": "200ms",
            },
            "sampling": { "ratio": 1.0 },
        },
        "listeners": [
            // A connection that never sends a request head is closed after a second: the
            // "connections closed" panel has something to show.
            { "name": MAIN, "address": "127.0.0.1:0",
              "limits": { "request_headers_timeout": "1s" }, "routes": [
                { "name": "chat", "match": { "model": { "name": "llama" } }, "to": "llm",
                  "rate_limit": [
                      { "name": "per-model", "requests": 100000, "per": "1s", "key": ["model"] },
                  ],
                  "concurrency": { "max": 8, "queue": 16, "queue_timeout": "2s" } },
                { "name": "embed", "match": { "model": { "name": "bge" } }, "to": "emb" },
                { "name": "batch", "match": { "path": { "prefix": "/batch" } }, "to": "flaky",
                  "retry": { "attempts": 3, "on": ["connect-failure"] } },
            ]},
            { "name": MESH, "address": "127.0.0.1:0",
              "tls": { "mode": "permissive", "peers": { "trust_domain": "cluster.local" } },
              "routes": [{ "name": "secure", "to": "emb" }] },
        ],
        "clusters": [
            { "name": "llm", "endpoints": [up[0].to_string()] },
            { "name": "emb", "endpoints": [up[1].to_string()] },
            { "name": "flaky", "endpoints": [up[2].to_string(), dead.to_string()],
              "outlier": { "consecutive_failures": 1 } },
        ],
    })
}

// === impl Scene ===

impl Scene {
    /// Starts the upstreams and ferry.
    pub async fn start() -> anyhow::Result<Scene> {
        let upstreams = vec![
            Echo::start("llm").await?,
            Echo::start("emb").await?,
            Echo::start("flaky").await?,
        ];
        let certs = tempfile::tempdir()?;
        let ca = Ca::new("ferry dashboard test CA")?;
        ca.write(&certs.path().join("ca.crt")).await?;
        let server = ca
            .issue(&Workload::spiffe("spiffe://cluster.local/ns/models/sa/ferry").loopback())
            .await?;
        server.write(certs.path(), "tls").await?;
        let client = ca
            .issue(&Workload::spiffe(
                "spiffe://cluster.local/ns/prep/sa/client",
            ))
            .await?;
        // A caller whose certificate no CA of ferry's signed: refused at the handshake.
        let other = Ca::new("stranger CA")?;
        let stranger = other
            .issue(&Workload::spiffe("spiffe://cluster.local/ns/x/sa/y"))
            .await?;
        let addrs = [
            upstreams[0].addr(),
            upstreams[1].addr(),
            upstreams[2].addr(),
        ];
        let yaml = to_yaml(&config(
            certs.path(),
            &addrs,
            closed_port()?,
            closed_port()?,
        ));
        let ferry = Ferry::start(&yaml).await?;
        Ok(Scene {
            ferry,
            client_cert: (client.cert_pem, client.key_pem),
            stranger: (ca.pem().to_owned(), stranger.cert_pem, stranger.key_pem),
            ca,
            _upstreams: upstreams,
            _certs: certs,
        })
    }

    /// Starts the load loop: each round sends `llama` a request, `bge` one (every other one
    /// answered 503 by the upstream), `/batch` one; every tenth round also calls the mTLS
    /// listener with a good certificate, with a stranger's, and in plaintext.
    pub fn load(&self) -> anyhow::Result<Load> {
        let main = self.ferry.listener(MAIN)?;
        let mesh = self.ferry.listener(MESH)?;
        let tls = TlsClient::new(self.ca.pem(), &self.client_cert.0, &self.client_cert.1)?;
        let (ca, cert, key) = &self.stranger;
        let stranger = TlsClient::new(ca, cert, key)?;
        let stop = Arc::new(AtomicBool::new(false));
        let stop2 = stop.clone();
        let task = tokio::spawn(async move {
            let http = HttpClient::http1();
            let mut pace = tokio::time::interval(PACE);
            let mut n = 0u64;
            while !stop2.load(Ordering::SeqCst) {
                pace.tick().await;
                n += 1;
                // Answers and errors alike are what the panels count; none is checked here.
                let _ = http.get(main, "/v2/models/llama/ready").await;
                let status = if n.is_multiple_of(2) { "503" } else { "200" };
                let _ = send(&http, main, "/v2/models/bge/ready", status).await;
                let _ = http.get(main, &format!("/batch/{n}")).await;
                if n.is_multiple_of(10) {
                    tokio::spawn(silent_connection(main));
                    let _ = tls.get(mesh, "/v2/models/bge/ready", &[]).await;
                    let _ = stranger.get(mesh, "/v2/models/bge/ready", &[]).await;
                    let _ = http.get(mesh, "/v2/models/bge/ready").await;
                }
            }
        });
        Ok(Load { stop, task })
    }
}

/// Opens a connection, sends nothing, and waits (bounded) for ferry to close it.
async fn silent_connection(addr: SocketAddr) {
    if let Ok(mut conn) = tokio::net::TcpStream::connect(addr).await {
        let mut buf = [0u8; 64];
        let _ = tokio::time::timeout(Duration::from_secs(5), conn.read(&mut buf)).await;
    }
}

/// `GET path` with the echo's status header.
async fn send(http: &HttpClient, addr: SocketAddr, path: &str, status: &str) -> anyhow::Result<()> {
    let headers = [(ferry_integration::upstream::echo::STATUS_HEADER, status)];
    let req = request(Method::GET, addr, path, &headers, body_full(Bytes::new()))?;
    http.call(req).await?;
    Ok(())
}

// === impl Load ===

impl Drop for Load {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        self.task.abort();
    }
}
