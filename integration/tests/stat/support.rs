//! What the stat tests share: the scene (real upstreams behind ferry), its known traffic, and
//! running `ferry stat`.

use std::time::Duration;

use bytes::Bytes;
use ferry_integration::client::{body_full, grpc_channel, request};
use ferry_integration::pb::echo::EchoRequest;
use ferry_integration::pb::echo::echo_client::EchoClient;
use ferry_integration::upstream::echo::STATUS_HEADER;
use ferry_integration::upstream::grpc::STATUS_KEY;
use ferry_integration::{Echo, Ferry, GrpcUpstream, HttpClient, to_yaml, workspace};
use http::Method;
use serde_json::{Value, json};

/// The sampler runs once a second; the machine is shared, so allow far more.
pub const PATIENCE: Duration = Duration::from_secs(20);

/// The data listener.
pub const MAIN: &str = "main";

/// Two model routes on HTTP upstreams and a gRPC route, each behind its own cluster.
pub struct Scene {
    pub ferry: Ferry,
    _llm: Echo,
    _emb: Echo,
    _grpc: GrpcUpstream,
}

/// Answers sent by [`Scene::known_traffic`], per route: (requests, failures).
pub const CHAT: (u64, u64) = (17, 3);
pub const EMBED: (u64, u64) = (5, 0);
pub const GRPC: (u64, u64) = (7, 2);

// === impl Scene ===

impl Scene {
    /// Starts the upstreams and ferry (no access-log sink).
    pub async fn start() -> anyhow::Result<Scene> {
        let llm = Echo::start("llm").await?;
        let emb = Echo::start("emb").await?;
        let grpc = GrpcUpstream::start("g").await?;
        let config = json!({
            "apiVersion": "ferry/v1",
            "admin": { "address": "127.0.0.1:0" },
            "listeners": [{ "name": MAIN, "address": "127.0.0.1:0", "routes": [
                { "name": "chat", "match": { "model": { "name": "llama" } }, "to": "llm" },
                { "name": "embed", "match": { "model": { "name": "bge" } }, "to": "emb" },
                { "name": "grpc", "match": { "path": { "prefix": "/ferry.test.v1.Echo/" } },
                  "to": "grpc" },
            ]}],
            "clusters": [
                { "name": "llm", "endpoints": [llm.addr().to_string()] },
                { "name": "emb", "endpoints": [emb.addr().to_string()] },
                { "name": "grpc", "endpoints": [grpc.addr().to_string()], "protocol": "h2" },
            ],
        });
        let ferry = Ferry::start(&to_yaml(&config)).await?;
        Ok(Scene {
            ferry,
            _llm: llm,
            _emb: emb,
            _grpc: grpc,
        })
    }

    /// `chat`: 12 × 200, 2 × 404 (a client error: still a success), 3 × 503; `embed`: 5 ×
    /// 200; `grpc`: 4 × OK, 1 × NOT_FOUND (success), 2 × UNAVAILABLE (failures).
    pub async fn known_traffic(&self) -> anyhow::Result<()> {
        let addr = self.ferry.listener(MAIN)?;
        let http = HttpClient::http1();
        let statuses = [("200", 12), ("404", 2), ("503", 3)];
        for (status, n) in statuses {
            for i in 0..n {
                let id = format!("chat-{status}-{i}");
                self.get(&http, "/v2/models/llama/ready", status, &id)
                    .await?;
            }
        }
        for i in 0..5 {
            let id = format!("embed-{i}");
            self.get(&http, "/v2/models/bge/ready", "200", &id).await?;
        }
        let mut client = EchoClient::new(grpc_channel(addr).await?);
        for code in [0, 0, 0, 0, 5, 14, 14] {
            let mut req = tonic::Request::new(EchoRequest {
                message: "hi".into(),
                payload: Vec::new(),
                repeat: 0,
            });
            if code != 0 {
                req.metadata_mut()
                    .insert(STATUS_KEY, code.to_string().parse()?);
            }
            let answer = client.unary(req).await;
            anyhow::ensure!(
                answer.as_ref().map_or_else(|s| s.code() as i32, |_| 0) == code,
                "gRPC answer {answer:?}, expected code {code}"
            );
        }
        Ok(())
    }

    async fn get(
        &self,
        http: &HttpClient,
        path: &str,
        status: &str,
        id: &str,
    ) -> anyhow::Result<()> {
        let addr = self.ferry.listener(MAIN)?;
        let reply = http
            .call(request(
                Method::GET,
                addr,
                path,
                &[(STATUS_HEADER, status), ("x-request-id", id)],
                body_full(Bytes::new()),
            )?)
            .await?;
        anyhow::ensure!(reply.status.as_str() == status, "{path}: {}", reply.status);
        Ok(())
    }
}

/// Runs `ferry stat --admin ADDR ARGS…`: (exit code, stdout, stderr).
pub async fn ferry_stat(ferry: &Ferry, args: &[&str]) -> anyhow::Result<(i32, String, String)> {
    let bin = workspace::ferry_bin().await?;
    let out = tokio::process::Command::new(bin)
        .arg("stat")
        .args(["--admin", &ferry.admin().to_string()])
        .args(args)
        .kill_on_drop(true)
        .output()
        .await?;
    Ok((
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    ))
}

/// `ferry stat -o json ARGS…`, parsed.
pub async fn stat_json(ferry: &Ferry, args: &[&str]) -> anyhow::Result<Value> {
    let mut all = vec!["-o", "json"];
    all.extend_from_slice(args);
    let (code, out, err) = ferry_stat(ferry, &all).await?;
    anyhow::ensure!(code == 0, "ferry stat exited {code}: {err}");
    Ok(serde_json::from_str(&out)?)
}

/// The row whose `field` is `value`.
pub fn row<'a>(stats: &'a Value, field: &str, value: &str) -> anyhow::Result<&'a Value> {
    stats["rows"]
        .as_array()
        .and_then(|rows| rows.iter().find(|r| r[field] == value))
        .ok_or_else(|| anyhow::anyhow!("no row with {field} = {value:?} in {stats:#}"))
}
