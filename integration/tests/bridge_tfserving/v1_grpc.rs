//! KServe V1 callers of an OIP v2 gRPC upstream (`kserve-v1 → oip-v2-grpc`): the V1 bridge
//! above the OIP REST → gRPC translation, against MLServer's gRPC port.

use std::time::Duration;

use ferry_integration::Ferry;
use serde_json::{Value, json};

use ferry_integration::model_servers::{ModelServer, listening};

use super::{peers, run_script, scripts_dir};

/// Every non-integer JSON number as the bits of the f32 it denotes.
fn as_f32(v: &Value) -> Value {
    match v {
        Value::Number(n) if n.is_f64() => json!((n.as_f64().unwrap_or(f64::NAN) as f32).to_bits()),
        Value::Array(a) => Value::Array(a.iter().map(as_f32).collect()),
        Value::Object(o) => Value::Object(o.iter().map(|(k, v)| (k.clone(), as_f32(v))).collect()),
        other => other.clone(),
    }
}

/// python requests (V1 `:predict`, rows and columns) → ferry → MLServer's gRPC port gets
/// what MLServer answers a v2 caller directly.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn v1_callers_reach_mlserver_grpc() -> anyhow::Result<()> {
    let server = ModelServer::mlserver(&peers().await?).await?;
    listening(server.grpc, Duration::from_secs(30)).await?;
    let yaml = format!(
        "apiVersion: ferry/v1
admin: {{ address: 127.0.0.1:0 }}
listeners:
  - name: main
    address: 127.0.0.1:0
    routes:
      - name: v1
        translate:
          from: kserve-v1
          to: oip-v2-grpc
          signature:
            inputs: [{{ name: x, datatype: FP32, shape: [-1, 2] }}, {{ name: flag, datatype: BOOL, shape: [-1] }}, {{ name: name, datatype: BYTES, shape: [-1] }}]
        to: mlserver
clusters:
  - name: mlserver
    endpoints: [{}]
    protocol: h2
",
        server.grpc
    );
    let ferry = Ferry::start(&yaml).await?;
    let args = [ferry.only_listener()?.to_string(), server.rest.to_string()];
    let got = run_script("kserve", scripts_dir().join("v1_caller.py"), &args).await?;

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
    // MLServer's REST prints FP32 values widened to f64 (0.10000000149011612), the gRPC answer
    // carries the f32 itself (0.1): the same bits.
    assert_eq!(
        as_f32(&got["row"]),
        as_f32(&json!({"status": 200, "body": {"predictions": rows}})),
        "{got}"
    );
    assert_eq!(
        as_f32(&got["columnar"]),
        as_f32(&json!({"status": 200, "body": {"outputs": columns}})),
        "{got}"
    );
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
    Ok(())
}
