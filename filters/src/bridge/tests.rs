use http::{Method, StatusCode};
use proptest::prelude::*;
use serde_json::{Value, json};

use super::mapping::{oip_answer_to_v1, oip_request_to_v1, v1_answer_to_oip, v1_request_to_oip};
use super::service::{Model, Op, upstream_error};
use super::{BridgeDirection, OipCall, Signature, TensorSig, V1Format};
use crate::translate::{DataType, TranslateError};

/// Shared with the other bridge tests (`oip_request/tests.rs`).
pub(super) const LIMIT: u64 = 1 << 20;

pub(super) fn sig(
    inputs: &[(&str, DataType, &[i64])],
    outputs: &[(&str, DataType, &[i64])],
) -> Signature {
    let t = |ts: &[(&str, DataType, &[i64])]| {
        ts.iter()
            .map(|(n, d, s)| TensorSig {
                name: (*n).to_owned(),
                datatype: *d,
                shape: s.to_vec(),
            })
            .collect()
    };
    Signature {
        inputs: t(inputs),
        outputs: t(outputs),
    }
}

pub(super) fn json(bytes: &[u8]) -> Value {
    serde_json::from_slice(bytes)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(bytes)))
}

fn oip_to_v1(s: &Signature, body: Value) -> Result<Value, TranslateError> {
    let mut call = OipCall::default();
    oip_request_to_v1(s, body.to_string().as_bytes(), &mut call, LIMIT).map(|b| json(&b))
}

fn bad_request(r: Result<impl std::fmt::Debug, TranslateError>) -> String {
    match r {
        Err(TranslateError::BadRequest(m)) => m,
        other => panic!("expected a bad request, got {other:?}"),
    }
}

#[test]
fn rows_for_batched_inputs_columns_otherwise() {
    let s = sig(
        &[
            ("x", DataType::Fp32, &[-1, 2]),
            ("tag", DataType::Bytes, &[-1]),
        ],
        &[("y", DataType::Fp32, &[-1])],
    );
    let body = json!({"id": "7", "inputs": [
        {"name": "tag", "datatype": "BYTES", "shape": [2], "data": ["a", "b"]},
        {"name": "x", "datatype": "FP32", "shape": [2, 2], "data": [1, 2.5, 3e0, -4]},
    ]});
    assert_eq!(
        oip_to_v1(&s, body).unwrap(),
        json!({"instances": [{"x": [1, 2.5], "tag": "a"}, {"x": [3.0, -4], "tag": "b"}]})
    );
    let s = sig(
        &[("m", DataType::Int64, &[2, 2])],
        &[("t", DataType::Int64, &[2, 2])],
    );
    let body = json!({"inputs": [{"name": "m", "datatype": "INT64", "shape": [2, 2], "data": [[1, 2], [3, 4]]}]});
    assert_eq!(
        oip_to_v1(&s, body).unwrap(),
        json!({"inputs": [[1, 2], [3, 4]]})
    );
}

#[test]
fn answers_typed_by_the_signature() {
    let s = sig(
        &[("x", DataType::Fp32, &[-1])],
        &[
            ("y", DataType::Fp32, &[-1, 2]),
            ("n", DataType::Int64, &[-1]),
            ("s_bytes", DataType::Bytes, &[-1]),
        ],
    );
    let call = OipCall {
        model: "m".into(),
        version: Some("3".into()),
        id: Some("7".into()),
        requested: Some(vec!["s_bytes".into(), "y".into()]),
        ..OipCall::default()
    };
    let v1 = br#"{"predictions": [{"y": [1.5, 2], "n": 1, "s_bytes": {"b64": "aGk="}}, {"y": [3, 4], "n": 2, "s_bytes": {"b64": "eW8="}}]}"#;
    let got = json(&v1_answer_to_oip(&s, &call, v1, LIMIT).unwrap());
    assert_eq!(
        got,
        json!({"model_name": "m", "model_version": "3", "id": "7", "outputs": [
            {"name": "y", "datatype": "FP32", "shape": [2, 2], "data": [1.5, 2, 3, 4]},
            {"name": "s_bytes", "datatype": "BYTES", "shape": [2], "data": ["hi", "yo"]},
        ]})
    );
    // A float where the signature says INT64 is the upstream's fault: 502.
    let wrong = br#"{"predictions": [{"y": [1, 2], "n": 1.5, "s_bytes": "a"}]}"#;
    let call = OipCall::default();
    assert!(
        matches!(v1_answer_to_oip(&s, &call, wrong, LIMIT), Err(TranslateError::BadUpstream(m)) if m.contains("\"n\""))
    );
    // A lone output may come bare in columnar form.
    let s = sig(
        &[("x", DataType::Fp32, &[2])],
        &[("y", DataType::Bool, &[2])],
    );
    let got = json(&v1_answer_to_oip(&s, &call, br#"{"outputs": [true, false]}"#, LIMIT).unwrap());
    assert_eq!(got["outputs"][0]["data"], json!([true, false]));
}

#[test]
fn bad_inputs_are_refused_before_the_upstream() {
    let s = sig(
        &[("x", DataType::Fp32, &[-1, 2])],
        &[("y", DataType::Fp32, &[-1])],
    );
    let input = |dt: &str, shape: Value, data: Value| json!({"inputs": [{"name": "x", "datatype": dt, "shape": shape, "data": data}]});
    assert!(
        bad_request(oip_to_v1(&s, input("FP64", json!([1, 2]), json!([1, 2]))))
            .contains("datatype \"FP64\" does not match the model's FP32")
    );
    assert!(
        bad_request(oip_to_v1(
            &s,
            input("FP32", json!([1, 3]), json!([1, 2, 3]))
        ))
        .contains("does not fit")
    );
    assert!(
        bad_request(oip_to_v1(&s, input("FP32", json!([1, 2]), json!([1]))))
            .contains("needs 2 elements")
    );
    assert!(
        bad_request(oip_to_v1(
            &s,
            input("FP32", json!([2, 2]), json!([[1, 2], [3]]))
        ))
        .contains("ragged")
    );
    assert!(
        bad_request(oip_to_v1(&s, input("FP32", json!([1, 2]), json!(["a", 1]))))
            .contains("\"a\" is not a FP32 value")
    );
    assert!(bad_request(oip_to_v1(&s, json!({"inputs": []}))).contains("missing input \"x\""));
    let two = json!({"inputs": [
        {"name": "x", "datatype": "FP32", "shape": [1, 2], "data": [1, 2]},
        {"name": "z", "datatype": "FP32", "shape": [1], "data": [1]}]});
    assert!(bad_request(oip_to_v1(&s, two)).contains("unknown input \"z\""));

    let s = sig(
        &[("a", DataType::Int8, &[-1]), ("b", DataType::Bool, &[-1])],
        &[],
    );
    let v1 = |body: &str| v1_request_to_oip(&s, body.as_bytes(), LIMIT);
    assert!(
        bad_request(v1(
            r#"{"instances": [{"a": 1, "b": true}, {"a": 300, "b": false}]}"#
        ))
        .contains("300 is not a INT8 value")
    );
    assert!(
        bad_request(v1(r#"{"instances": [{"a": 1, "b": true}, {"a": 2}]}"#))
            .contains("in 1 of 2 instances")
    );
    assert!(
        bad_request(v1(
            r#"{"instances": [{"a": [1], "b": true}, {"a": 2, "b": true}]}"#
        ))
        .contains("ragged")
    );
    assert!(bad_request(v1(r#"{"inputs": {"b": [true]}}"#)).contains("missing input \"a\""));
    assert!(bad_request(v1(r#"{"instances": {"a": 1}}"#)).contains("must be a list"));
    assert!(
        bad_request(v1(r#"{"signature_name": "x"}"#))
            .contains("expected \"instances\" or \"inputs\"")
    );
}

#[test]
fn v1_callers_row_and_columnar() {
    let s = sig(&[("x", DataType::Fp32, &[-1, 2])], &[]);
    let (body, format) =
        v1_request_to_oip(&s, br#"{"instances": [[1, 2], [3, 4.25]]}"#, LIMIT).unwrap();
    assert_eq!(format, V1Format::Row);
    assert_eq!(
        json(&body),
        json!({"inputs": [{"name": "x", "datatype": "FP32", "shape": [2, 2], "data": [1, 2, 3, 4.25]}]})
    );
    let (_, format) = v1_request_to_oip(&s, br#"{"inputs": {"x": [[1, 2]]}}"#, LIMIT).unwrap();
    assert_eq!(format, V1Format::Columnar);
    let answer = br#"{"model_name": "m", "id": "1", "outputs": [
        {"name": "p", "datatype": "FP32", "shape": [2, 2], "data": [1, 2, 3, 4]},
        {"name": "q_bytes", "datatype": "BYTES", "shape": [2], "data": ["hi", "yo"]}]}"#;
    assert_eq!(
        json(&oip_answer_to_v1(answer, V1Format::Row, LIMIT).unwrap()),
        json!({"predictions": [{"p": [1, 2], "q_bytes": {"b64": "aGk="}}, {"p": [3, 4], "q_bytes": {"b64": "eW8="}}]})
    );
    assert_eq!(
        json(&oip_answer_to_v1(answer, V1Format::Columnar, LIMIT).unwrap()),
        json!({"outputs": {"p": [[1, 2], [3, 4]], "q_bytes": [{"b64": "aGk="}, {"b64": "eW8="}]}})
    );
}

#[test]
fn limits_bound_the_decoded_tensors() {
    let s = sig(&[("x", DataType::Fp64, &[-1])], &[]);
    let body = br#"{"instances": [1, 2, 3]}"#;
    assert!(v1_request_to_oip(&s, body, 24).is_ok());
    assert!(matches!(
        v1_request_to_oip(&s, body, 23),
        Err(TranslateError::TooLarge { .. })
    ));
}

#[test]
fn endpoints_and_upstream_errors() {
    let m = |name: &str, version: Option<&str>| Model {
        name: name.into(),
        version: version.map(Into::into),
    };
    let oip = BridgeDirection::OipRestToKserveV1;
    assert_eq!(
        Op::of(oip, &Method::POST, "/v2/models/a/versions/2/infer"),
        Some(Op::Infer(m("a", Some("2"))))
    );
    assert_eq!(
        Op::of(oip, &Method::GET, "/v2/models/a"),
        Some(Op::Metadata(m("a", None)))
    );
    assert_eq!(
        Op::of(oip, &Method::GET, "/v2/models/a/ready"),
        Some(Op::Ready(m("a", None)))
    );
    assert_eq!(Op::of(oip, &Method::GET, "/v2/health/ready"), None);
    let v1 = BridgeDirection::KserveV1ToOipRest;
    assert_eq!(
        Op::of(v1, &Method::POST, "/v1/models/a:predict"),
        Some(Op::Infer(m("a", None)))
    );
    assert_eq!(
        Op::of(v1, &Method::POST, "/v1/models/a/versions/3:predict"),
        Some(Op::Infer(m("a", Some("3"))))
    );
    assert_eq!(
        Op::of(v1, &Method::GET, "/v1/models/a"),
        Some(Op::Status(m("a", None)))
    );
    assert_eq!(Op::of(v1, &Method::POST, "/v1/models/a:classify"), None);

    let e = upstream_error(
        StatusCode::NOT_FOUND,
        br#"{"error": "Model with name nope does not exist."}"#,
    );
    assert_eq!(
        (e.http_status(), e.to_string()),
        (
            StatusCode::NOT_FOUND,
            "Model with name nope does not exist.".to_owned()
        )
    );
    let e = upstream_error(
        StatusCode::UNPROCESSABLE_ENTITY,
        br#"{"detail": [{"msg": "bad"}]}"#,
    );
    assert_eq!(e.http_status(), StatusCode::BAD_REQUEST);
    assert!(e.to_string().contains("bad"));
    let e = upstream_error(StatusCode::INTERNAL_SERVER_ERROR, b"Internal Server Error");
    assert_eq!(
        (e.http_status(), e.to_string()),
        (
            StatusCode::INTERNAL_SERVER_ERROR,
            "Internal Server Error".to_owned()
        )
    );
}

/// A random tensor: its OIP datatype and its elements as JSON.
fn tensor() -> impl Strategy<Value = (DataType, Vec<Value>)> {
    let n = 1..24usize;
    prop_oneof![
        prop::collection::vec(
            any::<u32>()
                .prop_map(f32::from_bits)
                .prop_filter("finite", |f| f.is_finite()),
            n.clone()
        )
        .prop_map(|v| (
            DataType::Fp32,
            v.into_iter().map(|f| json!(f64::from(f))).collect()
        )),
        prop::collection::vec(any::<i64>(), n.clone())
            .prop_map(|v| (DataType::Int64, v.into_iter().map(|i| json!(i)).collect())),
        prop::collection::vec(any::<bool>(), n.clone())
            .prop_map(|v| (DataType::Bool, v.into_iter().map(|b| json!(b)).collect())),
        prop::collection::vec(".{0,12}", n)
            .prop_map(|v| (DataType::Bytes, v.into_iter().map(|s| json!(s)).collect())),
    ]
}

/// Elements compare bit-exactly: FP32 by the bits of the value read back as `f32`.
fn same(dt: DataType, a: &[Value], b: &Value) -> bool {
    let Some(b) = b.as_array() else { return false };
    a.len() == b.len()
        && a.iter().zip(b).all(|(x, y)| match dt {
            DataType::Fp32 => {
                x.as_f64().map(|v| (v as f32).to_bits()) == y.as_f64().map(|v| (v as f32).to_bits())
            }
            _ => x == y,
        })
}

proptest! {
    /// v2 → V1 → v2: an OIP request bridged to V1, echoed by a V1 model (its `instances`
    /// answered as `predictions`, or `inputs` as `outputs`), comes back as the same tensor.
    #[test]
    fn v2_to_v1_to_v2_is_bit_exact((dt, data) in tensor(), rows in 1..4usize, named_bytes in any::<bool>(), batched in any::<bool>()) {
        let name = if named_bytes { "t_bytes" } else { "t" };
        let cols = data.len();
        let flat: Vec<Value> = (0..rows).flat_map(|_| data.clone()).collect();
        let shape: Vec<i64> = if batched { vec![-1, cols as i64] } else { vec![rows as i64, cols as i64] };
        let s = sig(&[(name, dt, &shape)], &[(name, dt, &shape)]);
        let body = json!({"inputs": [{"name": name, "datatype": dt.as_str(), "shape": [rows, cols], "data": flat}]});
        let mut call = OipCall::default();
        let v1 = oip_request_to_v1(&s, body.to_string().as_bytes(), &mut call, LIMIT).unwrap();
        let echoed = String::from_utf8(v1).unwrap()
            .replacen("{\"instances\":", "{\"predictions\":", 1)
            .replacen("{\"inputs\":", "{\"outputs\":", 1);
        let back = json(&v1_answer_to_oip(&s, &call, echoed.as_bytes(), LIMIT).unwrap());
        let out = &back["outputs"][0];
        prop_assert_eq!(&out["shape"], &json!([rows, cols]));
        prop_assert!(same(dt, &flat, &out["data"]), "{} vs {}", json!(flat), out["data"]);
    }

    /// V1 → v2 → V1: a V1 caller's rows bridged to an OIP server that echoes them come back
    /// as the same predictions.
    #[test]
    fn v1_to_v2_to_v1_is_bit_exact((dt, data) in tensor(), rows in 1..4usize) {
        let s = sig(&[("t", dt, &[-1, -1])], &[]);
        let instances: Vec<Value> = (0..rows).map(|_| Value::Array(data.clone())).collect();
        let body = json!({"instances": instances});
        let (v2, format) = v1_request_to_oip(&s, body.to_string().as_bytes(), LIMIT).unwrap();
        let echoed = String::from_utf8(v2).unwrap().replacen("{\"inputs\":", "{\"outputs\":", 1);
        let back = json(&oip_answer_to_v1(echoed.as_bytes(), format, LIMIT).unwrap());
        let predictions = back["predictions"].as_array().cloned().unwrap_or_default();
        prop_assert_eq!(predictions.len(), rows);
        for p in &predictions {
            prop_assert!(same(dt, &data, p), "{} vs {}", json!(data), p);
        }
    }
}
