//! REST ⇄ gRPC translation end to end, with real third-party peers installed (pinned) by
//! `peers/translate/install.sh`: tritonclient as the client, MLServer and KServe's ModelServer
//! (each running a small echo model shipped in that directory) as servers.
//!
//! Each case runs the same tritonclient script twice — once straight at the server in its
//! native protocol, once through ferry in the other protocol — and the results must be equal.
//! A missing peer fails the test; nothing is skipped.

mod servers;

use std::net::SocketAddr;
use std::path::PathBuf;

use anyhow::{Context as _, bail};
use ferry_integration::workspace;
use ferry_integration::{Admin, Ferry};
use serde_json::Value;
use tokio::process::Command;
use tokio::sync::OnceCell;

use self::servers::{ModelServer, ServerKind};

static PEERS: OnceCell<PathBuf> = OnceCell::const_new();

/// Installs the peers once per test process and returns the peers dir.
async fn peers() -> anyhow::Result<PathBuf> {
    PEERS
        .get_or_try_init(|| async {
            let script = scripts_dir().join("install.sh");
            let dir = workspace::peers_dir();
            ferry_integration::peers::run_installer(&script, &dir, "the translation peers").await?;
            Ok(dir)
        })
        .await
        .cloned()
}

fn scripts_dir() -> PathBuf {
    workspace::crate_dir().join("peers").join("translate")
}

/// Runs `triton_cases.py` against `addr` and returns its JSON result.
async fn triton_cases(protocol: &str, addr: SocketAddr, extra: &[&str]) -> anyhow::Result<Value> {
    let python = peers().await?.join("triton").join("bin").join("python");
    let out = Command::new(&python)
        .arg(scripts_dir().join("triton_cases.py"))
        .args(["--protocol", protocol, "--url", &addr.to_string()])
        .args(extra)
        .kill_on_drop(true)
        .output()
        .await
        .context("running tritonclient")?;
    if !out.status.success() {
        bail!(
            "triton_cases.py {protocol} {addr} {extra:?} failed ({}):\n{}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
    }
    serde_json::from_slice(&out.stdout).with_context(|| {
        format!(
            "triton_cases.py printed no JSON: {}",
            String::from_utf8_lossy(&out.stdout)
        )
    })
}

/// Drops error messages (they legitimately differ between protocols) so results compare.
fn without_messages(v: &Value) -> Value {
    let mut v = v.clone();
    if let Some(cases) = v.as_object_mut() {
        for result in cases.values_mut() {
            if let Some(obj) = result.as_object_mut() {
                obj.remove("message");
            }
        }
    }
    v
}

/// Asserts `via` equals `direct` case by case (except `skip`), and that the cases that must
/// fail fail the right way.
fn assert_same(direct: &Value, via: &Value, skip: &[&str]) {
    let (d, v) = (without_messages(direct), without_messages(via));
    let cases = d.as_object().map(|o| o.keys().cloned().collect::<Vec<_>>());
    for case in cases.unwrap_or_default() {
        if skip.contains(&case.as_str()) {
            continue;
        }
        assert_eq!(
            d[&case], v[&case],
            "case {case}: direct {} vs through ferry {}",
            direct[&case], via[&case]
        );
    }
    assert_eq!(via["infer_unknown_model"]["error"], "NOT_FOUND", "{via}");
    assert_eq!(via["unknown_model_metadata"]["error"], "NOT_FOUND", "{via}");
    assert_eq!(via["infer_model_raises"]["error"], "INTERNAL", "{via}");
    assert_eq!(via["model_ready"]["ready"], true, "{via}");
    assert_eq!(via["server_ready"]["ready"], true, "{via}");
    assert_eq!(via["model_metadata"]["name"], "echo", "{via}");
    assert_eq!(
        via["infer_fp32"]["fp32"]["data"],
        serde_json::json!([1.5, -2.25, 3.0, 4.0, 5.5, -6.0]),
        "{via}"
    );
    assert_eq!(
        via["infer_mixed"]["c"]["data"],
        serde_json::json!(["ab", "xyz", ""])
    );
    // Long enough that a REST caller's answer is streamed in chunks (no Content-Length).
    let large = &via["infer_fp32_large"]["fp32_large"];
    assert_eq!(
        large["shape"],
        serde_json::json!([1, 50_000]),
        "{}",
        via["infer_fp32_large"]
    );
    assert_eq!(large["data"].as_array().map(Vec::len), Some(50_000));
    assert_eq!(
        large["data"][49_999],
        serde_json::json!(49_999.0_f32 * -0.37_f32)
    );
}

async fn ferry_one_liner(upstream: SocketAddr, direction: &str) -> anyhow::Result<Ferry> {
    let upstream = upstream.to_string();
    Ferry::start_args(&[
        "--listen",
        "127.0.0.1:0",
        "--admin",
        "127.0.0.1:0",
        "--upstream",
        &upstream,
        "--translate",
        direction,
    ])
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mlserver_rest_callers_reach_its_grpc_port() -> anyhow::Result<()> {
    let server = ModelServer::start(ServerKind::MlServer, &peers().await?).await?;
    let ferry = ferry_one_liner(server.grpc, "rest-to-grpc").await?;
    let direct = triton_cases("grpc", server.grpc, &[]).await?;
    let json = triton_cases("http", ferry.only_listener()?, &[]).await?;
    assert_same(&direct, &json, &[]);
    let binary = triton_cases("http", ferry.only_listener()?, &["--binary"]).await?;
    assert_same(&direct, &binary, &[]);
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mlserver_grpc_callers_reach_its_rest_port() -> anyhow::Result<()> {
    let server = ModelServer::start(ServerKind::MlServer, &peers().await?).await?;
    let ferry = ferry_one_liner(server.rest, "grpc-to-rest").await?;
    // MLServer has no binary extension: the direct REST call is JSON.
    let direct = triton_cases("http", server.rest, &[]).await?;
    let via = triton_cases("grpc", ferry.only_listener()?, &[]).await?;
    // FP16 has no JSON form and MLServer no binary sections: ferry refuses it up front.
    assert_same(&direct, &via, &["infer_fp16"]);
    assert_eq!(via["infer_fp16"]["error"], "INVALID_ARGUMENT", "{via}");
    let msg = via["infer_fp16"]["message"].as_str().unwrap_or_default();
    assert!(msg.contains("binary tensor extension"), "{msg}");
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kserve_rest_callers_reach_its_grpc_port() -> anyhow::Result<()> {
    let server = ModelServer::start(ServerKind::Kserve, &peers().await?).await?;
    let ferry = ferry_one_liner(server.grpc, "rest-to-grpc").await?;
    let direct = triton_cases("grpc", server.grpc, &[]).await?;
    // tritonclient HTTP sends no Content-Type; ferry does not need one.
    let json = triton_cases("http", ferry.only_listener()?, &[]).await?;
    assert_same(&direct, &json, &[]);
    let binary = triton_cases("http", ferry.only_listener()?, &["--binary"]).await?;
    assert_same(&direct, &binary, &[]);
    assert_eq!(
        binary["infer_fp16"]["fp16"]["data"],
        serde_json::json!([0.5, -1.0, 65504.0])
    );
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kserve_grpc_callers_reach_its_rest_port_with_binary_sections() -> anyhow::Result<()> {
    let server = ModelServer::start(ServerKind::Kserve, &peers().await?).await?;
    let yaml = format!(
        "apiVersion: ferry/v1\nadmin: {{ address: 127.0.0.1:0 }}\nlisteners:\n  - name: main\n    address: 127.0.0.1:0\n    routes:\n      - name: oip\n        translate: {{ from: grpc, to: rest, upstream_binary: true }}\n        to: kserve\nclusters:\n  - name: kserve\n    endpoints: [{}]\n",
        server.rest
    );
    let ferry = Ferry::start(&yaml).await?;
    let direct = triton_cases("http", server.rest, &["--binary"]).await?;
    let via = triton_cases("grpc", ferry.only_listener()?, &[]).await?;
    assert_same(&direct, &via, &[]);

    // The active translation is part of the effective config.
    let dump = Admin::new(ferry.admin()).config_dump().await?;
    let translate = &dump["config"]["listeners"][0]["routes"][0]["translate"];
    assert_eq!(
        translate,
        &serde_json::json!({"from": "grpc", "to": "rest", "protocol": "oip-v2",
            "max_decoded_bytes": 67108864, "upstream_binary": true}),
        "{dump}"
    );

    // And the same server through the JSON path (no binary extension assumed).
    let plain = ferry_one_liner(server.rest, "grpc-to-rest").await?;
    let json_direct = triton_cases("http", server.rest, &["--json-content-type"]).await?;
    let json_via = triton_cases("grpc", plain.only_listener()?, &[]).await?;
    assert_same(&json_direct, &json_via, &["infer_fp16"]);
    assert_eq!(json_via["infer_fp16"]["error"], "INVALID_ARGUMENT");
    Ok(())
}
