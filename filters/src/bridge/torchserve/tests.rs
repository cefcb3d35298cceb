//! The payload encodings against NumPy's own bytes, TorchServe's errors, the hand-written
//! `PredictionsRequest` against a prost-derived decoder, and random tensors round-tripping
//! through every payload bit-exactly.

use std::collections::HashMap;

use http::StatusCode;
use proptest::prelude::*;
use prost::Message as _;

use super::mapping::{encode_numbers, oip_request_to_torchserve, torchserve_answer_to_oip};
use super::payload::{raw_shape, read_npy};
use super::{Payload, answer, wire};
use crate::bridge::OipCall;
use crate::bridge::{Signature, TensorSig};
use crate::translate::{DataType, Rpc, TranslateError, code};

/// What `np.save` writes for `np.array([7, -1], dtype=np.int64)` (NumPy 2.2).
const NPY_I64: &[u8] = b"\x93NUMPY\x01\x00v\x00{'descr': '<i8', 'fortran_order': False, 'shape': (2,), }                                                            \n\x07\x00\x00\x00\x00\x00\x00\x00\xff\xff\xff\xff\xff\xff\xff\xff";

fn sig(dt: DataType, shape: &[i64]) -> Signature {
    let t = |name: &str| TensorSig {
        name: name.to_owned(),
        datatype: dt,
        shape: shape.to_vec(),
    };
    Signature {
        inputs: vec![t("t")],
        outputs: vec![t("t")],
    }
}

#[test]
fn npy_written_as_numpy_writes_it() {
    let tokens = ["7".to_owned(), "-1".to_owned()];
    let got = encode_numbers(Payload::Npy, DataType::Int64, &[2], &tokens).unwrap();
    assert_eq!(got, NPY_I64);
    let header = encode_numbers(
        Payload::Npy,
        DataType::Fp32,
        &[2, 3],
        &vec!["0".to_owned(); 6],
    )
    .unwrap();
    let text = b"\x93NUMPY\x01\x00v\x00{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }";
    assert_eq!(&header[..text.len()], text);
    assert_eq!(header.len(), 128 + 24);
    assert_eq!(header[127], b'\n');
}

#[test]
fn npy_read_checks_dtype_and_size() {
    let a = read_npy(NPY_I64, DataType::Int64).unwrap();
    assert_eq!(a.shape, vec![2]);
    assert_eq!(a.data.len(), 16);
    assert_eq!(
        read_npy(NPY_I64, DataType::Fp64).unwrap_err(),
        ".npy dtype <i8 does not match FP64 (<f8)"
    );
    assert_eq!(
        read_npy(&NPY_I64[..NPY_I64.len() - 1], DataType::Int64).unwrap_err(),
        ".npy shape [2] of INT64 needs 16 bytes, the data has 15"
    );
    assert_eq!(
        read_npy(b"{\"a\": 1}", DataType::Int64).unwrap_err(),
        "not a .npy file (no \\x93NUMPY magic)"
    );
}

#[test]
fn raw_shape_infers_one_dimension() {
    assert_eq!(raw_shape(24, DataType::Fp32, &[-1, 3]).unwrap(), vec![2, 3]);
    assert_eq!(raw_shape(12, DataType::Fp32, &[3]).unwrap(), vec![3]);
    assert_eq!(
        raw_shape(20, DataType::Fp32, &[-1, 3]).unwrap_err(),
        "5 FP32 elements do not fit the signature's shape [-1, 3]"
    );
    assert_eq!(
        raw_shape(6, DataType::Fp32, &[-1]).unwrap_err(),
        "6 bytes is not a whole number of FP32 elements"
    );
}

#[test]
fn raw_reads_json_number_tokens_exactly() {
    let tokens: Vec<String> = [
        "NaN",
        "Infinity",
        "-Infinity",
        "-0.0",
        "1e-45",
        "3.4028235e38",
    ]
    .map(str::to_owned)
    .to_vec();
    let raw = encode_numbers(Payload::Raw, DataType::Fp32, &[6], &tokens).unwrap();
    let bits: Vec<u32> = raw
        .chunks(4)
        .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect();
    assert!(f32::from_bits(bits[0]).is_nan());
    assert_eq!(
        bits[1..],
        [
            f32::INFINITY.to_bits(),
            f32::NEG_INFINITY.to_bits(),
            (-0.0f32).to_bits(),
            1,
            f32::MAX.to_bits()
        ]
    );
    let ints = encode_numbers(
        Payload::Raw,
        DataType::Int8,
        &[2],
        &["-1".into(), "127".into()],
    );
    assert_eq!(ints.unwrap(), vec![0xff, 0x7f]);
}

#[test]
fn torchserve_errors_in_the_callers_terms() {
    let rest = |status: u16, body: &str| match answer::rest_error(
        StatusCode::from_u16(status).unwrap(),
        body.as_bytes(),
    ) {
        TranslateError::Upstream {
            code,
            http,
            message,
        } => (http.as_u16(), code, message),
        other => panic!("{other:?}"),
    };
    assert_eq!(
        rest(
            404,
            r#"{"code": 404, "type": "ModelNotFoundException", "message": "Model not found: nope"}"#
        ),
        (404, code::NOT_FOUND, "Model not found: nope".to_owned())
    );
    assert_eq!(
        rest(
            503,
            r#"{"code": 503, "type": "InternalServerException", "message": "Prediction failed"}"#
        ),
        (500, code::INTERNAL, "Prediction failed".to_owned())
    );
    assert_eq!(
        rest(
            503,
            r#"{"code": 503, "type": "ServiceUnavailableException", "message": "No worker is available"}"#
        ),
        (503, code::UNAVAILABLE, "No worker is available".to_owned())
    );
    assert_eq!(
        rest(400, "bad body"),
        (400, code::INVALID_ARGUMENT, "bad body".to_owned())
    );
    match answer::grpc_error(
        code::INTERNAL,
        "Model not found: nope\norg.pytorch.serve.archive.model.ModelNotFoundException",
    ) {
        TranslateError::Upstream {
            code: c,
            http,
            message,
        } => {
            assert_eq!((c, http.as_u16()), (code::NOT_FOUND, 404));
            assert_eq!(message, "Model not found: nope");
        }
        other => panic!("{other:?}"),
    }
    let failed = answer::grpc_error(code::UNAVAILABLE, "Prediction failed");
    assert_eq!(failed.grpc_code(), code::INTERNAL);
    assert_eq!(failed.http_status(), StatusCode::INTERNAL_SERVER_ERROR);
    let no_worker = answer::grpc_error(code::UNAVAILABLE, "No worker is available");
    assert_eq!(no_worker.grpc_code(), code::UNAVAILABLE);
}

#[test]
fn decoded_tensors_bounded_by_the_limit() {
    let tokens: Vec<String> = (0..8).map(|i| i.to_string()).collect();
    let body = oip_request("FP32", &[8], &tokens);
    let s = sig(DataType::Fp32, &[-1]);
    // 8 FP32 elements are 32 decoded bytes.
    assert!(oip_request_to_torchserve(&s, Payload::Raw, &body, 32).is_ok());
    match oip_request_to_torchserve(&s, Payload::Raw, &body, 31) {
        Err(e @ TranslateError::TooLarge { .. }) => {
            assert_eq!(e.http_status(), StatusCode::PAYLOAD_TOO_LARGE);
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn health_from_the_ping() {
    let call = OipCall {
        model: "m".into(),
        ..OipCall::default()
    };
    let s = sig(DataType::Fp32, &[-1]);
    let ping = |rpc, body: &[u8]| answer::health_answer(rpc, &call, &s, body);
    let (status, body) = ping(Rpc::ModelReady, b"{\n  \"status\": \"Healthy\"\n}").unwrap();
    assert_eq!(status, StatusCode::OK);
    assert_eq!(body, br#"{"name":"m","ready":true}"#);
    let (status, body) = ping(Rpc::ServerReady, br#"{"status": "Unhealthy"}"#).unwrap();
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(
        body,
        br#"{"error":"torchserve is not healthy: \"Unhealthy\""}"#
    );
    let err = ping(Rpc::ModelMetadata, b"").unwrap_err();
    assert_eq!(err.grpc_code(), code::UNAVAILABLE);
    let (status, body) = ping(Rpc::ModelMetadata, br#"{"status": "Healthy"}"#).unwrap();
    assert_eq!(status, StatusCode::OK);
    let v: serde_json::Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(v["platform"], "torchserve");
    assert_eq!(v["inputs"][0]["shape"], serde_json::json!([-1]));
}

/// The full message, for decoding what the bridge writes by hand.
#[derive(Clone, PartialEq, prost::Message)]
struct PredictionsRequest {
    #[prost(string, tag = "1")]
    model_name: String,
    #[prost(string, tag = "2")]
    model_version: String,
    #[prost(map = "string, bytes", tag = "3")]
    input: HashMap<String, Vec<u8>>,
}

#[test]
fn predictions_request_decodes_as_protobuf() {
    let big = vec![7u8; 300];
    let chunks = wire::predictions_request(
        "resnet",
        Some("2"),
        vec![("a".into(), b"[1,2]".to_vec()), ("b".into(), big.clone())],
    )
    .unwrap();
    let body: Vec<u8> = chunks.iter().flat_map(|c| c.to_vec()).collect();
    assert_eq!(body[0], 0);
    let len = u32::from_be_bytes([body[1], body[2], body[3], body[4]]) as usize;
    assert_eq!(len, body.len() - 5);
    let m = PredictionsRequest::decode(&body[5..]).unwrap();
    assert_eq!(m.model_name, "resnet");
    assert_eq!(m.model_version, "2");
    assert_eq!(m.input.get("a").map(Vec::as_slice), Some(&b"[1,2]"[..]));
    assert_eq!(m.input.get("b"), Some(&big));
}

/// The `data` tokens of the one output of an OIP answer.
fn data_tokens(answer: &[u8]) -> Vec<String> {
    let text = std::str::from_utf8(answer).unwrap();
    let start = text.find("\"data\":[").unwrap() + 8;
    let end = start + text[start..].find(']').unwrap();
    text[start..end].split(',').map(str::to_owned).collect()
}

fn oip_request(dt: &str, shape: &[usize], tokens: &[String]) -> Vec<u8> {
    format!(
        r#"{{"inputs":[{{"name":"t","datatype":"{dt}","shape":{shape:?},"data":[{}]}}]}}"#,
        tokens.join(",")
    )
    .into_bytes()
}

proptest! {
    /// OIP request → TorchServe body → (the body read back as the handler's answer) → OIP
    /// answer: every finite FP32 value keeps its bits, in every payload.
    #[test]
    fn fp32_round_trips_bit_exactly(values in prop::collection::vec(any::<f32>().prop_filter("finite", |v| v.is_finite()), 1..40)) {
        let tokens: Vec<String> = values.iter().map(|v| format!("{v:?}")).collect();
        let s = sig(DataType::Fp32, &[-1]);
        let body = oip_request("FP32", &[values.len()], &tokens);
        for payload in [Payload::Json, Payload::Raw, Payload::Npy] {
            let (_, sent) = oip_request_to_torchserve(&s, payload, &body, 1 << 20).unwrap();
            // Input and output are both `t`: the JSON body `{"t": [...]}` is a valid answer.
            let answer = torchserve_answer_to_oip(&s, payload, &sent, 1 << 20).unwrap();
            let back: Vec<u32> = data_tokens(&answer)
                .iter()
                .map(|t| t.parse::<f32>().unwrap().to_bits())
                .collect();
            let want: Vec<u32> = values.iter().map(|v| v.to_bits()).collect();
            prop_assert_eq!(back, want, "{:?}", payload);
        }
    }

    /// INT64 (and its extremes) through every payload, with a 2-D shape.
    #[test]
    fn int64_round_trips(rows in 1usize..6, seed in prop::collection::vec(any::<i64>(), 18)) {
        let values: Vec<i64> = seed.iter().copied().take(rows * 3).collect();
        let tokens: Vec<String> = values.iter().map(i64::to_string).collect();
        let s = sig(DataType::Int64, &[-1, 3]);
        let body = oip_request("INT64", &[rows, 3], &tokens);
        for payload in [Payload::Json, Payload::Raw, Payload::Npy] {
            let (_, sent) = oip_request_to_torchserve(&s, payload, &body, 1 << 20).unwrap();
            let answer = torchserve_answer_to_oip(&s, payload, &sent, 1 << 20).unwrap();
            let text = String::from_utf8(answer.clone()).unwrap();
            prop_assert!(text.contains(&format!("\"shape\":[{rows},3]")), "{}", text);
            let back: Vec<i64> = data_tokens(&answer).iter().map(|t| t.parse().unwrap()).collect();
            prop_assert_eq!(&back, &values, "{:?}", payload);
        }
    }
}

/// An OIP request with one binary input `t` of `dt` (`section` its bytes) → the REST body of
/// a TorchServe route with `payload`.
fn binary_to_torchserve(
    dt: DataType,
    n: usize,
    section: &[u8],
    payload: Payload,
) -> Result<Vec<u8>, String> {
    let doc = serde_json::json!({"inputs": [{"name": "t", "datatype": dt.as_str(), "shape": [n],
        "parameters": {"binary_data_size": section.len()}}]});
    let s = sig(dt, &[-1]);
    let mut call = OipCall::default();
    let json = doc.to_string();
    let inputs =
        crate::bridge::oip_request::read_request(&s, json.as_bytes(), section, &mut call, 1 << 20)
            .map_err(|e| e.to_string())?;
    super::request::rest_body(payload, &inputs).map(|(_, body)| body)
}

#[test]
fn binary_inputs_reach_raw_and_npy_as_they_are() {
    let x: Vec<u8> = [1.5f32, f32::MIN_POSITIVE, -0.0]
        .iter()
        .flat_map(|v| v.to_le_bytes())
        .collect();
    assert_eq!(
        binary_to_torchserve(DataType::Fp32, 3, &x, Payload::Raw).unwrap(),
        x
    );
    let npy = binary_to_torchserve(DataType::Fp32, 3, &x, Payload::Npy).unwrap();
    assert_eq!(&npy[npy.len() - 12..], &x[..]);
    assert_eq!(
        binary_to_torchserve(DataType::Fp32, 3, &x, Payload::Json).unwrap(),
        b"{\"t\":[1.5,1.1754944e-38,-0.0]}"
    );
    // FP16 goes to npy as `<f2`; BF16 to raw as its 2-byte bit patterns, never to npy.
    let h: Vec<u8> = [half::f16::from_f32(0.1), half::f16::NEG_INFINITY]
        .iter()
        .flat_map(|v| v.to_bits().to_le_bytes())
        .collect();
    let npy = binary_to_torchserve(DataType::Fp16, 2, &h, Payload::Npy).unwrap();
    assert!(npy.windows(4).any(|w| w == b"<f2'"));
    assert_eq!(&npy[npy.len() - 4..], &h[..]);
    assert_eq!(
        binary_to_torchserve(DataType::Bf16, 2, &h, Payload::Raw).unwrap(),
        h
    );
    let err = binary_to_torchserve(DataType::Bf16, 2, &h, Payload::Npy).unwrap_err();
    assert!(err.contains("NumPy has no bfloat16 dtype"), "{err}");
}

#[test]
fn handler_answers_go_back_binary_when_asked() {
    let odd = half::bf16::from_f32(1e30);
    let h: Vec<u8> = [half::bf16::from_f32(-2.5), odd]
        .iter()
        .flat_map(|v| v.to_bits().to_le_bytes())
        .collect();
    let s = sig(DataType::Bf16, &[-1]);
    let mut call = OipCall {
        model: "m".into(),
        ..OipCall::default()
    };
    let json = |b: &[u8]| serde_json::from_slice::<serde_json::Value>(b).unwrap();
    let a = answer::infer_answer(&s, &call, Payload::Raw, &h, 1 << 20).unwrap();
    let data = json(&a.json)["outputs"][0]["data"].clone();
    assert_eq!(data[0], -2.5);
    // The shortest text that reads back as the same value.
    let back = data[1].as_f64().unwrap() as f32;
    assert_eq!(half::bf16::from_f32(back), odd);
    assert_eq!(back, odd.to_f32());
    call.binary.all = true;
    let a = answer::infer_answer(&s, &call, Payload::Raw, &h, 1 << 20).unwrap();
    assert_eq!(
        json(&a.json)["outputs"][0]["parameters"]["binary_data_size"],
        4
    );
    assert_eq!(a.sections, vec![h.clone()]);
    // A JSON handler answer, asked binary, is encoded in the raw form.
    let text = format!("[-2.5, {}]", data[1]);
    let a = answer::infer_answer(&s, &call, Payload::Json, text.as_bytes(), 1 << 20).unwrap();
    assert_eq!(a.sections, vec![h]);
}
