//! Bridging between serving protocols end to end, with real peers installed (pinned) by
//! `peers/translate/install.sh`: tritonclient (HTTP, JSON) as an Open Inference Protocol caller
//! of KServe V1 models served by KServe's ModelServer, and a python-requests KServe V1 caller
//! of MLServer's v2 echo model, compared with the answer MLServer gives a v2 caller directly.
//! A missing peer fails the test; nothing is skipped.

use std::net::SocketAddr;
use std::path::PathBuf;

use ferry_integration::{Ferry, workspace};
use serde_json::{Value, json};
use tokio::sync::OnceCell;

use ferry_integration::model_servers::ModelServer;

static PEERS: OnceCell<PathBuf> = OnceCell::const_new();

/// Installs the peers once per test process (the translation suite's set) and returns the dir.
async fn peers() -> anyhow::Result<PathBuf> {
    PEERS
        .get_or_try_init(|| async {
            let script = translate_scripts_dir().join("install.sh");
            let dir = workspace::peers_dir();
            ferry_integration::peers::run_installer(&script, &dir, "the bridging peers").await?;
            Ok(dir)
        })
        .await
        .cloned()
}

fn scripts_dir() -> PathBuf {
    workspace::crate_dir().join("peers").join("bridge")
}

fn translate_scripts_dir() -> PathBuf {
    workspace::crate_dir().join("peers").join("translate")
}

/// Runs a caller script with a venv's python and returns the JSON it prints.
async fn run_script(venv: &str, script: &str, args: &[String]) -> anyhow::Result<Value> {
    let python = peers().await?.join(venv).join("bin").join("python");
    ferry_integration::peers::run_json(&python, &scripts_dir().join(script), args).await
}

const SCORER: &str = "inputs: [{ name: x, datatype: FP32, shape: [-1, 3] }, { name: tag, datatype: BYTES, shape: [-1] }]
            outputs: [{ name: doubled, datatype: FP32, shape: [-1, 3] }, { name: positives, datatype: INT64, shape: [-1] }, { name: label, datatype: BYTES, shape: [-1] }]";

fn oip_to_v1_config(kserve: SocketAddr) -> String {
    format!(
        "apiVersion: ferry/v1
admin: {{ address: 127.0.0.1:0 }}
listeners:
  - name: main
    address: 127.0.0.1:0
    routes:
      - name: matrix
        match: {{ model: {{ name: matrix }} }}
        translate:
          from: [oip-v2-rest, oip-v2-grpc]
          to: kserve-v1
          signature:
            inputs: [{{ name: m, datatype: INT64, shape: [2, 3] }}]
            outputs: [{{ name: mt, datatype: INT64, shape: [3, 2] }}]
        to: kserve
      - name: halves
        match: {{ model: {{ name: halves }} }}
        translate:
          from: [oip-v2-rest, oip-v2-grpc]
          to: kserve-v1
          signature:
            inputs: [{{ name: h, datatype: FP16, shape: [-1, 4] }}]
            outputs: [{{ name: h2, datatype: FP16, shape: [-1, 4] }}]
        to: kserve
      - name: bhalves
        match: {{ model: {{ name: bhalves }} }}
        translate:
          from: [oip-v2-rest, oip-v2-grpc]
          to: kserve-v1
          signature:
            inputs: [{{ name: b, datatype: BF16, shape: [-1, 4] }}]
            outputs: [{{ name: b2, datatype: BF16, shape: [-1, 4] }}]
        to: kserve
      - name: scorer
        translate:
          from: [oip-v2-rest, oip-v2-grpc]
          to: kserve-v1
          signature:
            {SCORER}
        to: kserve
clusters:
  - name: kserve
    endpoints: [{kserve}]
"
    )
}

/// tritonclient HTTP (JSON, and the binary tensor extension both ways) and gRPC → ferry →
/// KServe V1, one route serving both wires: rows with several outputs and BYTES, FP16, columns,
/// metadata, readiness and the mapped errors.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tritonclient_reaches_kserve_v1_models() -> anyhow::Result<()> {
    let server = ModelServer::kserve_v1(&peers().await?).await?;
    let ferry = Ferry::start(&oip_to_v1_config(server.rest)).await?;
    let addr = ferry.only_listener()?.to_string();
    for wire in ["http", "http-binary", "grpc"] {
        let got = run_script("triton", "oip_caller.py", &[addr.clone(), wire.into()]).await?;
        check_kserve_v1_answers(wire, &got);
    }
    Ok(())
}

/// What tritonclient over `wire` got from the bridged V1 models.
fn check_kserve_v1_answers(wire: &str, got: &Value) {
    let x: Vec<f32> = vec![1.5, -2.0, 3.25, 0.1, 0.2, -0.3, 1e-8, -1e30, -0.0];
    let bits = |v: &[f32]| v.iter().map(|f| json!(f.to_bits())).collect::<Vec<_>>();
    assert_eq!(got["x_bits"], json!(bits(&x)), "{wire}: {got}");
    let doubled: Vec<f32> = x.iter().map(|v| 2.0 * v).collect();
    let scorer = &got["scorer"];
    assert_eq!(scorer["id"], "req-1", "{wire}: {got}");
    assert_eq!(
        scorer["doubled"],
        json!({"dtype": "float32", "shape": [3, 3], "values": bits(&doubled)}),
        "{wire}: {got}"
    );
    assert_eq!(
        scorer["positives"],
        json!({"dtype": "int64", "shape": [3], "values": [2, 2, 1]}),
        "{wire}: {got}"
    );
    assert_eq!(
        scorer["label"],
        json!({"dtype": "object", "shape": [3], "values": ["ALPHA", "BETA", "GAMMA É"]}),
        "{wire}: {got}"
    );
    // Only the requested output comes back (V1 has no filter: ferry applies it).
    let one = got["scorer_one_output"].as_object().map(|o| o.len());
    let binary = wire == "http-binary";
    assert_eq!(one, Some(if binary { 3 } else { 2 }), "{wire}: {got}");
    if binary {
        // Every output came back as a binary section, as tritonclient asked by default.
        assert_eq!(
            scorer["binary"],
            json!(["doubled", "label", "positives"]),
            "{wire}: {got}"
        );
        assert_eq!(got["halves"]["binary"], json!(["h2"]), "{wire}: {got}");
    }
    // FP16 crosses as V1 numbers both ways, bit-exactly; BF16 too where tritonclient can
    // send it (binary only).
    assert_eq!(
        got["halves"]["h2"],
        json!({"dtype": "float16", "shape": [2, 4], "values": got["halves_expected"]}),
        "{wire}: {got}"
    );
    if wire != "http" {
        assert_eq!(
            got["bhalves"]["b2"],
            json!({"dtype": "bfloat16", "shape": [2, 4], "values": got["bhalves_expected"]}),
            "{wire}: {got}"
        );
    }
    assert_eq!(
        got["matrix"]["mt"],
        json!({"dtype": "int64", "shape": [3, 2], "values": [1, 4, 2, 5, 3, -(1_i64 << 62)]}),
        "{wire}: {got}"
    );
    assert_eq!(got["ready"], true, "{wire}: {got}");
    // HTTP: tritonclient reads the 404 as not ready; gRPC: the 404 is NOT_FOUND, as the OIP
    // translator maps any REST 404, and tritonclient raises it.
    match wire {
        "grpc" => assert_eq!(
            got["unknown_model_ready"]["status"], "StatusCode.NOT_FOUND",
            "{wire}: {got}"
        ),
        _ => assert_eq!(got["unknown_model_ready"], false, "{wire}: {got}"),
    }
    assert_eq!(got["metadata"]["name"], "scorer", "{wire}: {got}");
    assert_eq!(got["metadata"]["platform"], "kserve-v1", "{wire}: {got}");
    assert_eq!(
        got["metadata"]["outputs"][1],
        json!({"name": "positives", "datatype": "INT64", "shape": [-1]}),
        "{wire}: {got}"
    );
    let (bad, unknown) = match wire {
        "grpc" => ("StatusCode.INVALID_ARGUMENT", "StatusCode.NOT_FOUND"),
        _ => ("400", "404"),
    };
    let error = |case: &str, status: &str, text: &str| {
        let e = &got[case];
        assert_eq!(e["status"], status, "{wire} {case}: {e}");
        let msg = e["message"].as_str().unwrap_or_default();
        assert!(msg.contains(text), "{wire} {case}: {msg:?} lacks {text:?}");
    };
    error(
        "wrong_dtype",
        bad,
        "datatype \"FP64\" does not match the model's FP32",
    );
    error("missing_input", bad, "missing input \"tag\"");
    error("unknown_model", unknown, "nope");
}

/// python requests (V1 `:predict`, row and columnar) → ferry → MLServer gets what MLServer
/// answers a v2 caller directly; bad inputs get the mapped errors.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn v1_callers_reach_mlserver() -> anyhow::Result<()> {
    let server = ModelServer::mlserver(&peers().await?).await?;
    let yaml = format!(
        "apiVersion: ferry/v1
listeners:
  - name: main
    address: 127.0.0.1:0
    routes:
      - name: v1
        translate:
          from: kserve-v1
          to: oip-v2-rest
          signature:
            inputs: [{{ name: x, datatype: FP32, shape: [-1, 2] }}, {{ name: flag, datatype: BOOL, shape: [-1] }}, {{ name: name, datatype: BYTES, shape: [-1] }}]
        to: mlserver
clusters:
  - name: mlserver
    endpoints: [{}]
",
        server.rest
    );
    let ferry = Ferry::start(&yaml).await?;
    let args = [ferry.only_listener()?.to_string(), server.rest.to_string()];
    let got = run_script("kserve", "v1_caller.py", &args).await?;

    let direct = &got["direct"];
    assert_eq!(direct["status"], 200, "{got}");
    let outputs = direct["body"]["outputs"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert_eq!(outputs.len(), 3, "{direct}");
    // The direct answer, cut into rows and columns as a V1 caller sees it.
    let mut rows = vec![serde_json::Map::new(); 3];
    let mut columns = serde_json::Map::new();
    for o in &outputs {
        let name = o["name"].as_str().unwrap_or_default().to_owned();
        let data = o["data"].as_array().cloned().unwrap_or_default();
        let per_row = data.len() / 3;
        let mut column = Vec::new();
        for (i, row) in rows.iter_mut().enumerate() {
            let part = &data[i * per_row..(i + 1) * per_row];
            let value = if o["shape"].as_array().map(Vec::len) == Some(1) {
                part[0].clone()
            } else {
                Value::Array(part.to_vec())
            };
            row.insert(name.clone(), value.clone());
            column.push(value);
        }
        columns.insert(name, Value::Array(column));
    }
    assert_eq!(
        got["row"],
        json!({"status": 200, "body": {"predictions": rows}}),
        "{got}"
    );
    assert_eq!(
        got["columnar"],
        json!({"status": 200, "body": {"outputs": columns}}),
        "{got}"
    );
    assert_eq!(got["row"]["body"]["predictions"][1]["name"], "bé");
    assert_eq!(
        got["status"],
        json!({"status": 200, "body": {"name": "echo", "ready": true}})
    );
    let error = |case: &str, status: u16, text: &str| {
        let e = &got[case];
        assert_eq!(e["status"], status, "{case}: {e}");
        let msg = e["body"]["error"].as_str().unwrap_or_default();
        assert!(msg.contains(text), "{case}: {msg:?} lacks {text:?}");
    };
    error("ragged", 400, "ragged");
    error("wrong_dtype", 400, "\"1\" is not a FP32 value");
    error("missing_input", 400, "\"name\"");
    error("unknown_model", 404, "nope");
    error("unknown_model_status", 404, "");
    Ok(())
}
