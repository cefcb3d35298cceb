//! TF Serving gRPC bridged end to end, with real peers installed (pinned) by the test set-up
//! (`peers/install.sh`: grpcio; `peers/translate/install.sh`: MLServer, tritonclient, KServe):
//! - a TF Serving gRPC caller (grpcio stubs from `peers/tfserving/tfserving.proto`'s field
//!   numbers) of MLServer's echo model through `tfserving-grpc → oip-v2-rest` and
//!   `→ oip-v2-grpc`, compared with what MLServer answers a v2 caller directly;
//! - tritonclient (HTTP and gRPC) callers of a TF Serving gRPC model — the grpcio peer
//!   `peers/tfserving/tf_server.py` computing y = 2x + 1 from the TensorProto it decodes —
//!   through `oip-v2-rest → tfserving-grpc` and `oip-v2-grpc → tfserving-grpc`;
//! - a KServe V1 `:predict` caller (python requests, rows and columns) of MLServer's gRPC port
//!   through `kserve-v1 → oip-v2-grpc`.
//!
//! A missing peer fails the test; nothing is skipped.

mod v1_grpc;

use std::path::PathBuf;
use std::time::Duration;

use bytes::Bytes;
use ferry_integration::client::{body_full, request};
use ferry_integration::{Ferry, HttpClient, workspace};
use http::Method;
use serde_json::{Value, json};
use tokio::sync::OnceCell;

use ferry_integration::model_servers::{ModelServer, TfServer, listening};

static PEERS: OnceCell<PathBuf> = OnceCell::const_new();

/// Installs the peers once per test process and returns their dir.
async fn peers() -> anyhow::Result<PathBuf> {
    PEERS
        .get_or_try_init(|| async {
            let dir = workspace::peers_dir();
            let crate_dir = workspace::crate_dir().join("peers");
            let grpcio = crate_dir.join("install.sh");
            ferry_integration::peers::run_installer(&grpcio, &dir, "grpcio").await?;
            let translate = translate_scripts_dir().join("install.sh");
            ferry_integration::peers::run_installer(&translate, &dir, "the bridging peers").await?;
            Ok(dir)
        })
        .await
        .cloned()
}

/// `peers/bridge` (the V1 caller, KServe's V1 models).
fn scripts_dir() -> PathBuf {
    workspace::crate_dir().join("peers").join("bridge")
}

/// `peers/translate` (MLServer's echo model).
fn translate_scripts_dir() -> PathBuf {
    workspace::crate_dir().join("peers").join("translate")
}

/// `peers/tfserving` (the TF Serving gRPC peer and callers).
fn tf_scripts_dir() -> PathBuf {
    workspace::crate_dir().join("peers").join("tfserving")
}

/// Runs `script` with a venv's python and returns the JSON it prints.
async fn run_script(venv: &str, script: PathBuf, args: &[String]) -> anyhow::Result<Value> {
    let python = peers().await?.join(venv).join("bin").join("python");
    ferry_integration::peers::run_json(&python, &script, args).await
}

fn f32_bits(v: &Value) -> Vec<Value> {
    v.as_array()
        .map(|a| {
            a.iter()
                .map(|x| json!((x.as_f64().unwrap_or(f64::NAN) as f32).to_bits()))
                .collect()
        })
        .unwrap_or_default()
}

/// A TF Serving gRPC caller → ferry → MLServer (REST and gRPC) gets what MLServer answers a
/// v2 caller; metadata, the signature's refusals and the upstream's errors are mapped.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tfserving_callers_reach_mlserver() -> anyhow::Result<()> {
    let server = ModelServer::mlserver(&peers().await?).await?;
    listening(server.grpc, Duration::from_secs(30)).await?;
    let yaml = format!(
        "apiVersion: ferry/v1
admin: {{ address: 127.0.0.1:0 }}
listeners:
  - name: rest
    address: 127.0.0.1:0
    routes:
      # Routed by the model in the PredictRequest's ModelSpec: the signature's refusals below
      # prove that echo's calls took this route and not the fallback.
      - name: tf-to-rest
        match: {{ model: {{ name: echo }} }}
        translate:
          from: tfserving-grpc
          to: oip-v2-rest
          signature:
            inputs: [{{ name: x, datatype: FP32, shape: [-1, 2] }}, {{ name: name, datatype: BYTES, shape: [-1] }}]
            outputs: [{{ name: x, datatype: FP32, shape: [-1, 2] }}, {{ name: name, datatype: BYTES, shape: [-1] }}]
        to: mlserver-rest
      - name: tf-fallback
        translate: {{ from: tfserving-grpc, to: oip-v2-rest }}
        to: mlserver-rest
  - name: grpc
    address: 127.0.0.1:0
    routes:
      - name: tf-to-grpc
        translate: {{ from: tfserving-grpc, to: oip-v2-grpc }}
        to: mlserver-grpc
clusters:
  - name: mlserver-rest
    endpoints: [{}]
  - name: mlserver-grpc
    endpoints: [{}]
    protocol: h2
",
        server.rest, server.grpc
    );
    let ferry = Ferry::start(&yaml).await?;

    // What MLServer answers a v2 caller directly.
    let x = [1.5_f32, -2.25, 0.1, 3.402_823_5e38];
    let body = json!({"inputs": [
        {"name": "x", "datatype": "FP32", "shape": [2, 2], "data": x},
        {"name": "name", "datatype": "BYTES", "shape": [2], "data": ["a", "bé"]},
    ]});
    let req = request(
        Method::POST,
        server.rest,
        "/v2/models/echo/infer",
        &[("content-type", "application/json")],
        body_full(Bytes::from(body.to_string())),
    )?;
    let direct = HttpClient::http1().call(req).await?;
    assert_eq!(direct.status, 200, "{}", direct.text());
    let direct: Value = direct.json()?;
    let out = |n: &str| {
        direct["outputs"]
            .as_array()
            .and_then(|o| o.iter().find(|t| t["name"] == n))
            .cloned()
            .unwrap_or_default()
    };
    let want_x = json!({"dtype": "DT_FLOAT", "shape": out("x")["shape"], "form": "tensor_content", "values": f32_bits(&out("x")["data"])});
    let want_name =
        json!({"dtype": "DT_STRING", "shape": out("name")["shape"], "values": out("name")["data"]});
    assert_eq!(want_name["values"], json!(["a", "bé"]), "{direct}");

    for listener in ["rest", "grpc"] {
        let addr = ferry.listener(listener)?.to_string();
        let got = run_script("py", tf_scripts_dir().join("tf_caller.py"), &[addr]).await?;
        let packed = &got["packed"];
        assert_eq!(packed["outputs"]["x"], want_x, "{listener}: {got}");
        assert_eq!(packed["outputs"]["name"], want_name, "{listener}: {got}");
        assert_eq!(
            packed["model_spec"],
            json!({"name": "echo", "signature_name": "serving_default", "version": null}),
            "{listener}: {got}"
        );
        // float_val in, output_filter applied (MLServer itself answers every output).
        let values = &got["values"]["outputs"];
        assert_eq!(values, &json!({"x": want_x}), "{listener}: {got}");
        let code = |case: &str, code: &str, text: &str| {
            let e = &got[case];
            assert_eq!(e["code"], code, "{listener} {case}: {e}");
            let msg = e["message"].as_str().unwrap_or_default();
            assert!(
                msg.contains(text),
                "{listener} {case}: {msg:?} lacks {text:?}"
            );
        };
        code("unknown_model", "NOT_FOUND", "nope");
        code("unknown_model_metadata", "NOT_FOUND", "nope");
        let meta = &got["metadata"];
        assert_eq!(
            meta["type_url"], "type.googleapis.com/tensorflow.serving.SignatureDefMap",
            "{listener}: {got}"
        );
        assert_eq!(meta["name"], "echo");
        if listener == "rest" {
            // The signature answers metadata and refuses what does not fit it, before MLServer.
            let tensors = json!({"x": {"dtype": "DT_FLOAT", "shape": [-1, 2]}, "name": {"dtype": "DT_STRING", "shape": [-1]}});
            assert_eq!(meta["inputs"], tensors, "{got}");
            assert_eq!(meta["outputs"], tensors, "{got}");
            code(
                "wrong_dtype",
                "INVALID_ARGUMENT",
                "input \"x\" is FP64, the signature says FP32",
            );
            code("raise", "INVALID_ARGUMENT", "missing input \"x\"");
            code("fp16", "INVALID_ARGUMENT", "missing input \"name\"");
        } else {
            // No signature: every dtype passes through, FP16 as raw bytes both ways.
            assert_eq!(
                got["fp16"]["outputs"]["h"],
                json!({"dtype": "DT_HALF", "shape": [3], "form": "tensor_content", "values": [0x3C00, 0xC000, 0x7BFF]}),
                "{got}"
            );
            assert_eq!(
                got["wrong_dtype"]["outputs"]["x"]["values"],
                json!([1.0, 2.0, 3.0, 4.0]),
                "{got}"
            );
            // The model's own failure: MLServer's INTERNAL with its message.
            code("raise", "INTERNAL", "echo model raised on purpose");
        }
    }
    Ok(())
}

/// tritonclient (HTTP and gRPC) → ferry → a TF Serving gRPC model: y = 2x + 1 and the
/// upper-cased label come back typed; metadata from the model's signature_def; errors mapped.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn oip_callers_reach_a_tfserving_grpc_model() -> anyhow::Result<()> {
    let tf = TfServer::start(&peers().await?).await?;
    let yaml = format!(
        "apiVersion: ferry/v1
admin: {{ address: 127.0.0.1:0 }}
listeners:
  - name: main
    address: 127.0.0.1:0
    routes:
      - name: oip-grpc
        match: {{ path: {{ prefix: /inference.GRPCInferenceService/ }} }}
        translate: {{ from: oip-v2-grpc, to: tfserving-grpc }}
        to: tf
      - name: oip-rest
        translate: {{ from: oip-v2-rest, to: tfserving-grpc }}
        to: tf
clusters:
  - name: tf
    endpoints: [{}]
    protocol: h2
",
        tf.addr
    );
    let ferry = Ferry::start(&yaml).await?;
    let addr = ferry.only_listener()?.to_string();
    let got = run_script("triton", tf_scripts_dir().join("oip_caller.py"), &[addr]).await?;
    for (proto, not_found, invalid) in [
        ("http", "404", "400"),
        (
            "grpc",
            "StatusCode.NOT_FOUND",
            "StatusCode.INVALID_ARGUMENT",
        ),
    ] {
        let g = &got[proto];
        let y: Vec<Value> = g["x_bits"]
            .as_array()
            .cloned()
            .unwrap_or_default()
            .iter()
            .map(|b| {
                let x = f32::from_bits(b.as_u64().unwrap_or_default() as u32);
                json!((((2.0 * f64::from(x)) + 1.0) as f32).to_bits())
            })
            .collect();
        let infer = &g["infer"]["ok"];
        assert_eq!(
            infer["tensors"]["y"],
            json!({"dtype": "float32", "shape": [2, 2], "values": y}),
            "{proto}: {got}"
        );
        assert_eq!(
            infer["tensors"]["label"],
            json!({"dtype": "object", "shape": [2], "values": ["A", "Bé"]}),
            "{proto}: {got}"
        );
        assert_eq!(infer["id"], "req-7", "{proto}: {got}");
        let one = &g["infer_one"]["ok"]["tensors"];
        assert_eq!(one.as_object().map(|o| o.len()), Some(1), "{proto}: {got}");
        assert_eq!(one["y"]["values"], json!(y));
        assert_eq!(
            g["metadata"]["ok"],
            json!({"name": "affine", "platform": "tensorflow_serving",
                "inputs": [{"name": "name", "datatype": "BYTES", "shape": [-1]}, {"name": "x", "datatype": "FP32", "shape": [-1, 2]}],
                "outputs": [{"name": "label", "datatype": "BYTES", "shape": [-1]}, {"name": "y", "datatype": "FP32", "shape": [-1, 2]}]}),
            "{proto}: {got}"
        );
        assert_eq!(g["ready"]["ok"], true, "{proto}: {got}");
        let error = |case: &str, status: &str, text: &str| {
            let e = &g[case];
            assert_eq!(e["status"], status, "{proto} {case}: {e}");
            let msg = e["message"].as_str().unwrap_or_default();
            assert!(msg.contains(text), "{proto} {case}: {msg:?} lacks {text:?}");
        };
        error(
            "unknown_model",
            not_found,
            "Servable not found for request: Latest(nope)",
        );
        error(
            "wrong_dtype",
            invalid,
            "Expects arg[0] to be float but DT_INT32 is provided",
        );
    }
    Ok(())
}
