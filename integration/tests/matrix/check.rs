//! What one cell must show: the model's answer (and the direct call's, where a server speaks
//! the caller's protocol), readiness, and the mapped errors of bad inputs.

use serde_json::{Value, json};

use super::grid::{Caller, Reach, Server};

/// The status a caller saw, as a gRPC code name: tritonclient HTTP and requests report HTTP
/// statuses, tritonclient gRPC `StatusCode.NAME`, grpcio `NAME`.
pub fn code(result: &Value) -> String {
    let Some(status) = result["error"].as_str() else {
        return "OK".to_owned();
    };
    let status = status.strip_prefix("StatusCode.").unwrap_or(status);
    match status {
        "400" => "INVALID_ARGUMENT",
        "404" => "NOT_FOUND",
        "500" => "INTERNAL",
        "501" => "UNIMPLEMENTED",
        "503" => "UNAVAILABLE",
        "504" => "DEADLINE_EXCEEDED",
        other => other,
    }
    .to_owned()
}

fn message(result: &Value) -> &str {
    result["message"].as_str().unwrap_or_default()
}

/// Whether the caller names its own datatypes (OIP, TF Serving) or leaves them to the
/// signature (V1).
fn typed_caller(caller: Caller) -> bool {
    !matches!(caller, Caller::V1Rows | Caller::V1Columns)
}

/// Everything wrong with one cell's results (`got`), given the direct call's (`direct`).
pub fn cell(caller: Caller, server: Server, got: &Value, direct: Option<&Value>) -> Vec<String> {
    let profile = server.profile();
    let reach = caller.reach(server);
    let mut problems = Vec::new();
    let mut expect = |ok: bool, what: String| {
        if !ok {
            problems.push(what);
        }
    };
    let answer = &got["ok"];
    expect(
        answer["outputs"] == profile.expected(),
        format!("answer {answer}, the model computes {}", profile.expected()),
    );
    if matches!(caller, Caller::TritonHttp | Caller::TritonGrpc) {
        expect(
            answer["id"] == "matrix-7",
            format!("request id not echoed: {answer}"),
        );
    }
    match (direct, &reach) {
        (Some(d), Reach::Passthrough) => {
            expect(got == d, format!("through ferry {got}, direct {d}"));
        }
        (Some(d), _) => {
            expect(
                got["ok"] == d["ok"],
                format!("answer {answer}, direct {}", d["ok"]),
            );
            for case in ["wrong_dtype", "missing_input", "unknown_model"] {
                expect(
                    code(&got[case]) == code(&d[case]),
                    format!("{case}: {} through ferry, {} direct", got[case], d[case]),
                );
            }
        }
        (None, _) => {}
    }
    if let Reach::Bridge { .. } = reach {
        let dropped = profile.inputs.last().map(|t| t.name).unwrap_or_default();
        let wrong = if typed_caller(caller) { "FP64" } else { "FP32" };
        let mut cases = vec![
            ("wrong_dtype", wrong.to_owned()),
            ("missing_input", format!("\"{dropped}\"")),
        ];
        if caller == Caller::V1Rows {
            cases.push(("ragged", "ragged".to_owned()));
        }
        for (case, text) in cases {
            let r = &got[case];
            expect(
                code(r) == "INVALID_ARGUMENT" && message(r).contains(&text),
                format!("{case}: {r}, want INVALID_ARGUMENT naming {text}"),
            );
        }
    }
    let unknown = &got["unknown_model"];
    expect(
        code(unknown) == "NOT_FOUND" && message(unknown).contains("nope"),
        format!("unknown model: {unknown}, want NOT_FOUND naming it"),
    );
    let ready = &got["ready"];
    match (caller, server) {
        (Caller::TritonHttp | Caller::TritonGrpc, Server::TsV1) => expect(
            ts_v1_ready_gap(caller, ready),
            format!("readiness through the V1 bridge: {ready}"),
        ),
        (Caller::TritonHttp | Caller::TritonGrpc, _) => {
            expect(*ready == json!({"ready": true}), format!("ready: {ready}"));
        }
        _ => {}
    }
    if matches!(caller, Caller::V1Rows | Caller::V1Columns) && reach != Reach::Passthrough {
        let status = &got["status"];
        expect(
            *status == json!({"name": profile.model, "ready": true}),
            format!("V1 model status: {status}"),
        );
    }
    problems
}

/// A known gap (docs/interop.md): ferry's `kserve-v1` bridge answers OIP readiness from the
/// upstream's `GET /v1/models/{m}`, which TorchServe 0.12 does not serve (404
/// ResourceNotFoundException, even with the kserve envelope), so the model reads as unknown:
/// not ready over HTTP, NOT_FOUND over gRPC.
pub fn ts_v1_ready_gap(caller: Caller, ready: &Value) -> bool {
    match caller {
        Caller::TritonGrpc => {
            code(ready) == "NOT_FOUND" && message(ready).contains("ResourceNotFoundException")
        }
        _ => *ready == json!({"ready": false}),
    }
}
