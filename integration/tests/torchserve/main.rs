//! Open Inference Protocol callers of TorchServe through ferry, end to end with real peers
//! installed (pinned) by the test set-up: TorchServe 0.12 (`peers/torchserve/install.sh`)
//! serving a numpy handler that answers in the payload encoding it was sent, and tritonclient
//! 2.73 (`peers/translate/install.sh`) over HTTP (JSON, and the binary tensor extension both
//! ways, tritonclient's default) and gRPC. Every caller reaches every
//! model through a `torchserve-rest` listener and a `torchserve-grpc` listener; tensors are
//! compared bit for bit, and the mapped errors checked. A second TorchServe, started with the
//! kserve envelope, serves the same handler on KServe V1 (`POST /v1/models/{m}:predict`), and
//! the same callers reach it through a `kserve-v1` bridge ([`v1`]). A missing peer fails the
//! test.
//!
//! TorchServe takes seconds to start and load its workers, so one test starts it once and
//! runs the whole matrix against it.

mod v1;

use std::net::SocketAddr;
use std::path::PathBuf;

use ferry_integration::{Ferry, workspace};
use serde_json::{Value, json};

use ferry_integration::model_servers::{TorchServe, TorchServeApi};

/// Installs TorchServe and tritonclient (once per machine; the scripts keep stamps).
async fn peers() -> anyhow::Result<PathBuf> {
    let dir = workspace::peers_dir();
    let peers = workspace::crate_dir().join("peers");
    ferry_integration::peers::run_installer(
        &peers.join("torchserve").join("install.sh"),
        &dir,
        "TorchServe",
    )
    .await?;
    ferry_integration::peers::run_installer(
        &peers.join("translate").join("install.sh"),
        &dir,
        "tritonclient",
    )
    .await?;
    Ok(dir)
}

/// The models the handler serves, one worker each.
const MODELS: [&str; 5] = [
    "double_json",
    "double_raw",
    "double_npy",
    "pair_json",
    "sum_npy",
];

const DOUBLE: &str = "inputs: [{ name: INPUT0, datatype: FP32, shape: [-1, 3] }]
            outputs: [{ name: OUTPUT0, datatype: FP32, shape: [-1, 3] }]";
const PAIR: &str = "inputs: [{ name: x, datatype: FP32, shape: [-1, 3] }, { name: n, datatype: INT64, shape: [-1] }]
            outputs: [{ name: y, datatype: FP32, shape: [-1, 3] }, { name: count, datatype: INT64, shape: [-1] }]";

const SUM: &str = "inputs: [{ name: x, datatype: FP32, shape: [-1, 3] }, { name: n, datatype: INT64, shape: [-1] }]
            outputs: [{ name: total, datatype: FP32, shape: [-1] }]";

/// One listener's routes: every model bridged to `to` (a TorchServe API) on `cluster`, for
/// both OIP wires; the last route catches other model names (TorchServe answers them).
fn routes(to: &str, cluster: &str) -> String {
    let mut out = String::new();
    let models = [
        ("double_json", "json", DOUBLE),
        ("double_raw", "raw", DOUBLE),
        ("double_npy", "npy", DOUBLE),
        ("pair_json", "json", PAIR),
        ("sum_npy", "npy", SUM),
    ];
    for (model, payload, sig) in models {
        out.push_str(&format!(
            "      - name: {model}
        match: {{ model: {{ name: {model} }} }}
        translate:
          from: [oip-v2-rest, oip-v2-grpc]
          to: {to}
          payload: {payload}
          signature:
            {sig}
        to: {cluster}
"
        ));
    }
    out.push_str(&format!(
        "      - name: other-models
        translate:
          from: [oip-v2-rest, oip-v2-grpc]
          to: {to}
          signature:
            {DOUBLE}
        to: {cluster}
"
    ));
    out
}

/// The gRPC cluster keeps the default `protocol: auto`, which sends gRPC over HTTP/2.
fn config(ts: &TorchServe) -> String {
    format!(
        "apiVersion: ferry/v1
admin: {{ address: 127.0.0.1:0 }}
listeners:
  - name: via-rest
    address: 127.0.0.1:0
    routes:
{}  - name: via-grpc
    address: 127.0.0.1:0
    routes:
{}clusters:
  - name: ts-rest
    endpoints: [{}]
  - name: ts-grpc
    endpoints: [{}]
",
        routes("torchserve-rest", "ts-rest"),
        routes("torchserve-grpc", "ts-grpc"),
        ts.rest,
        ts.grpc,
    )
}

/// Runs the tritonclient caller (`http` or `grpc`) against `target`: every case, or `only`
/// these (comma-separated).
async fn caller(
    peers: &std::path::Path,
    wire: &str,
    target: SocketAddr,
    only: Option<&str>,
) -> anyhow::Result<Value> {
    let python = peers.join("triton").join("bin").join("python");
    let script = workspace::crate_dir()
        .join("peers")
        .join("torchserve")
        .join("oip_caller.py");
    let mut args = vec![wire.to_owned(), target.to_string()];
    args.extend(only.map(str::to_owned));
    ferry_integration::peers::run_json(&python, &script, &args).await
}

fn f32_bits(v: &[f32]) -> Value {
    json!(v.iter().map(|f| f.to_bits()).collect::<Vec<_>>())
}

/// The status a caller reports for an error: tritonclient HTTP gives the HTTP status, gRPC the
/// `StatusCode.NAME`.
fn status(got: &Value, case: &str) -> String {
    got[case]["status"].as_str().unwrap_or_default().to_owned()
}

/// tritonclient HTTP (JSON and binary) and gRPC → ferry → TorchServe REST and gRPC: every
/// payload encoding,
/// several inputs and outputs, requested outputs, metadata, readiness and the mapped errors.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tritonclient_reaches_torchserve_models() -> anyhow::Result<()> {
    let peers = peers().await?;
    let ts = TorchServe::start(&peers, &MODELS, TorchServeApi::Own).await?;
    let ferry = Ferry::start(&config(&ts)).await?;
    let x: Vec<f32> = vec![1.5, -2.0, 3.25, 0.1, 1e-8, -1e30];
    let doubled: Vec<f32> = x.iter().map(|v| 2.0 * v).collect();
    let plus_one: Vec<f32> = x.iter().map(|v| v + 1.0).collect();
    let n: [i64; 2] = [7, -(1 << 40)];
    let mut proved = Vec::new();
    for listener in ["via-rest", "via-grpc"] {
        let target = ferry.listener(listener)?;
        for wire in ["http", "http-binary", "grpc"] {
            let got = caller(&peers, wire, target, None).await?;
            let at = format!("tritonclient {wire} → ferry {listener}");
            assert_eq!(got["x_bits"], f32_bits(&x), "{at}: {got}");
            assert_eq!(got["live"], json!(true), "{at}: {got}");
            assert_eq!(got["ready"], json!(true), "{at}: {got}");
            assert_eq!(
                got["metadata"],
                json!({
                    "name": "pair_json",
                    "platform": "torchserve",
                    "inputs": [{"name": "x", "datatype": "FP32", "shape": [-1, 3]},
                               {"name": "n", "datatype": "INT64", "shape": [-1]}],
                    "outputs": [{"name": "y", "datatype": "FP32", "shape": [-1, 3]},
                                {"name": "count", "datatype": "INT64", "shape": [-1]}],
                }),
                "{at}: {got}"
            );
            for payload in ["json", "raw", "npy"] {
                let case = &got[format!("double_{payload}")];
                assert_eq!(case["id"], "req-7", "{at} {payload}: {got}");
                if wire == "http-binary" {
                    assert_eq!(case["binary"], json!(["OUTPUT0"]), "{at} {payload}: {got}");
                }
                assert_eq!(
                    case["OUTPUT0"],
                    json!({"dtype": "float32", "shape": [2, 3], "values": f32_bits(&doubled)}),
                    "{at} {payload}: {got}"
                );
            }
            assert_eq!(
                got["pair"]["y"],
                json!({"dtype": "float32", "shape": [2, 3], "values": f32_bits(&plus_one)}),
                "{at}: {got}"
            );
            let counts: Vec<i64> = n.iter().map(|v| v * 10).collect();
            assert_eq!(
                got["pair"]["count"],
                json!({"dtype": "int64", "shape": [2], "values": counts}),
                "{at}: {got}"
            );
            assert!(got["pair_one_output"].get("y").is_none(), "{at}: {got}");
            assert_eq!(
                got["pair_one_output"]["count"]["values"],
                json!(counts),
                "{at}: {got}"
            );
            // Two npy inputs: multipart parts on REST, two map entries on gRPC.
            let total: Vec<f32> = x
                .chunks(3)
                .zip(n)
                .map(|(row, n)| row.iter().fold(0.0f32, |a, v| a + v) + n as f32)
                .collect();
            assert_eq!(
                got["sum"]["total"],
                json!({"dtype": "float32", "shape": [2], "values": f32_bits(&total)}),
                "{at}: {got}"
            );
            let (bad, missing, failed) = match wire {
                "grpc" => (
                    "StatusCode.INVALID_ARGUMENT",
                    "StatusCode.NOT_FOUND",
                    "StatusCode.INTERNAL",
                ),
                _ => ("400", "404", "500"),
            };
            assert_eq!(status(&got, "handler_fails"), failed, "{at}: {got}");
            assert_eq!(status(&got, "wrong_dtype"), bad, "{at}: {got}");
            let message = got["wrong_dtype"]["message"].as_str().unwrap_or_default();
            assert!(message.contains("datatype \"FP64\""), "{at}: {got}");
            assert_eq!(status(&got, "missing_input"), bad, "{at}: {got}");
            assert!(
                got["missing_input"]["message"]
                    .as_str()
                    .unwrap_or_default()
                    .contains("missing input \"n\""),
                "{at}: {got}"
            );
            assert_eq!(status(&got, "unknown_model"), missing, "{at}: {got}");
            assert!(
                got["unknown_model"]["message"]
                    .as_str()
                    .unwrap_or_default()
                    .contains("Model not found"),
                "{at}: {got}"
            );
            proved.push(at);
        }
    }
    println!("proved: {}", proved.join("; "));
    Ok(())
}
