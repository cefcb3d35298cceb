//! The binary tensor extension across the kserve-v1 bridge: binary inputs become V1 JSON
//! values typed by the signature, V1 answers become binary sections when asked, and random
//! tensors go binary → V1 → binary bit-exactly.

use proptest::prelude::*;
use serde_json::{Value, json};

use super::super::Signature;
use super::super::oip_to_v1::{OipCall, answer_parts, request_binary};
use super::super::v1_to_oip::{V1Format, answer_binary};
use crate::translate::{DataType, TranslateError};

use crate::bridge::tests::{LIMIT, json, sig};

/// A binary input's JSON: shape, datatype and its section's size.
fn bin_input(name: &str, dt: DataType, shape: &[usize], section: &[u8]) -> Value {
    json!({"name": name, "datatype": dt.as_str(), "shape": shape,
           "parameters": {"binary_data_size": section.len()}})
}

fn framed(strings: &[&[u8]]) -> Vec<u8> {
    let mut out = Vec::new();
    for s in strings {
        out.extend_from_slice(&u32::try_from(s.len()).unwrap().to_le_bytes());
        out.extend_from_slice(s);
    }
    out
}

fn le<T: Copy, const N: usize>(vals: &[T], bytes: impl Fn(T) -> [u8; N]) -> Vec<u8> {
    vals.iter().flat_map(|&v| bytes(v)).collect()
}

/// The bridged V1 body of a request whose JSON header is `doc` and sections `tail`.
fn to_v1(s: &Signature, doc: &Value, tail: &[u8]) -> Result<Value, TranslateError> {
    let mut call = OipCall::default();
    request_binary(s, doc.to_string().as_bytes(), tail, &mut call, LIMIT).map(|b| json(&b))
}

#[test]
fn binary_inputs_become_v1_values_typed_by_the_signature() {
    let s = sig(
        &[
            ("x", DataType::Fp32, &[-1, 2]),
            ("n", DataType::Int64, &[-1]),
            ("ok", DataType::Bool, &[-1]),
            ("h", DataType::Fp16, &[-1]),
            ("tag", DataType::Bytes, &[-1]),
        ],
        &[("y", DataType::Fp32, &[-1])],
    );
    let x = le(&[1.5f32, -0.0, 0.1, 3e38], f32::to_le_bytes);
    let n = le(&[i64::MIN, 7], i64::to_le_bytes);
    let h = le(
        &[half::f16::from_f32(0.1), half::f16::from_f32(-65504.0)],
        |v| v.to_bits().to_le_bytes(),
    );
    let tag = framed(&[b"ab", "é".as_bytes()]);
    // The caller's order (tag first, and `ok` as JSON) sets the sections' order.
    let doc = json!({"inputs": [
        bin_input("tag", DataType::Bytes, &[2], &tag),
        bin_input("x", DataType::Fp32, &[2, 2], &x),
        {"name": "ok", "datatype": "BOOL", "shape": [2], "data": [true, false]},
        bin_input("n", DataType::Int64, &[2], &n),
        bin_input("h", DataType::Fp16, &[2], &h),
    ]});
    let tail = [tag, x, n, h].concat();
    assert_eq!(
        to_v1(&s, &doc, &tail).unwrap(),
        json!({"instances": [
            {"x": [1.5, -0.0], "n": i64::MIN, "ok": true, "h": 0.099975586, "tag": "ab"},
            {"x": [0.1, 3e38], "n": 7, "ok": false, "h": -65504.0, "tag": "é"},
        ]})
    );
}

#[test]
fn malformed_sections_are_the_callers_fault() {
    let s = sig(
        &[("x", DataType::Fp32, &[-1])],
        &[("y", DataType::Fp32, &[-1])],
    );
    let four = 1.0f32.to_le_bytes().to_vec();
    let doc = |size: usize, shape: usize| {
        json!({"inputs": [{"name": "x", "datatype": "FP32", "shape": [shape],
                           "parameters": {"binary_data_size": size}}]})
    };
    let bad = |doc: Value, tail: &[u8]| match to_v1(&s, &doc, tail) {
        Err(TranslateError::BadRequest(m)) => m,
        other => panic!("expected a bad request, got {other:?}"),
    };
    assert!(bad(doc(8, 2), &four).contains("binary_data_size 8 exceeds the 4 bytes left"));
    assert!(bad(doc(4, 1), &[four.clone(), four.clone()].concat()).contains("add up to 4 bytes"));
    assert!(bad(doc(3, 1), &four[..3]).contains("not a whole number of FP32 elements"));
    assert!(bad(doc(4, 2), &four).contains("needs 2 elements, data has 1"));
    let both = json!({"inputs": [{"name": "x", "datatype": "FP32", "shape": [1], "data": [1],
                                  "parameters": {"binary_data_size": 4}}]});
    assert!(bad(both, &four).contains("both data and binary_data_size"));
    let strings = sig(&[("s", DataType::Bytes, &[-1])], &[]);
    let cut = json!({"inputs": [bin_input("s", DataType::Bytes, &[1], &[5, 0, 0, 0, b'a'])]});
    let mut call = OipCall::default();
    let r = request_binary(
        &strings,
        cut.to_string().as_bytes(),
        &[5, 0, 0, 0, b'a'],
        &mut call,
        LIMIT,
    );
    assert!(matches!(r, Err(TranslateError::BadRequest(m)) if m.contains("runs past the end")));
    // Sections count against the limit as they are, before any decoding.
    let mut call = OipCall::default();
    let big = vec![0u8; 64];
    let doc = doc(64, 16);
    let r = request_binary(&s, doc.to_string().as_bytes(), &big, &mut call, 32);
    assert!(matches!(r, Err(TranslateError::TooLarge { .. })), "{r:?}");
}

#[test]
fn v1_answers_go_back_binary_when_asked() {
    let s = sig(
        &[("x", DataType::Fp32, &[-1])],
        &[
            ("y", DataType::Fp16, &[-1]),
            ("n", DataType::Int64, &[-1]),
            ("s", DataType::Bytes, &[-1]),
            ("raw_bytes", DataType::Bytes, &[-1]),
        ],
    );
    let doc = json!({"inputs": [{"name": "x", "datatype": "FP32", "shape": [1], "data": [1]}],
        "parameters": {"binary_data_output": true},
        "outputs": [{"name": "y"}, {"name": "n", "parameters": {"binary_data": false}},
                    {"name": "s", "parameters": {"binary_data": false}}, {"name": "raw_bytes"}]});
    let mut call = OipCall::default();
    request_binary(&s, doc.to_string().as_bytes(), &[], &mut call, LIMIT).unwrap();
    let v1 = br#"{"predictions": [{"y": 0.5, "n": -3, "s": "hi", "raw_bytes": {"b64": "/wA="}}, {"y": 65504, "n": 4, "s": "yo", "raw_bytes": {"b64": ""}}]}"#;
    let a = answer_parts(&s, &call, v1, LIMIT).unwrap();
    assert_eq!(
        json(&a.json)["outputs"],
        json!([
            {"name": "y", "datatype": "FP16", "shape": [2], "parameters": {"binary_data_size": 4}},
            {"name": "n", "datatype": "INT64", "shape": [2], "data": [-3, 4]},
            {"name": "s", "datatype": "BYTES", "shape": [2], "data": ["hi", "yo"]},
            {"name": "raw_bytes", "datatype": "BYTES", "shape": [2], "parameters": {"binary_data_size": 10}},
        ])
    );
    let halves = le(&[half::f16::from_f32(0.5), half::f16::MAX], |v| {
        v.to_bits().to_le_bytes()
    });
    assert_eq!(a.sections, vec![halves, framed(&[&[0xff, 0], b""])]);
    // Asked as JSON, a BYTES output that is not UTF-8 still comes back: as a section.
    let doc = json!({"inputs": [{"name": "x", "datatype": "FP32", "shape": [1], "data": [1]}],
        "outputs": [{"name": "raw_bytes", "parameters": {"binary_data": false}}]});
    let mut call = OipCall::default();
    request_binary(&s, doc.to_string().as_bytes(), &[], &mut call, LIMIT).unwrap();
    let a = answer_parts(&s, &call, v1, LIMIT).unwrap();
    assert_eq!(
        json(&a.json)["outputs"][0]["parameters"]["binary_data_size"],
        10
    );
    assert_eq!(a.sections, vec![framed(&[&[0xff, 0], b""])]);
}

#[test]
fn binary_sections_in_a_v2_answer_reach_v1_callers_as_numbers() {
    let h = le(&[half::bf16::from_f32(-2.5)], |v| v.to_bits().to_le_bytes());
    let head = json!({"outputs": [
        {"name": "b", "datatype": "BF16", "shape": [1], "parameters": {"binary_data_size": 2}},
        {"name": "j", "datatype": "INT32", "shape": [1], "data": [9]},
    ]});
    let out = answer_binary(head.to_string().as_bytes(), &h, V1Format::Columnar, LIMIT).unwrap();
    assert_eq!(json(&out), json!({"outputs": {"b": [-2.5], "j": [9]}}));
    let short = answer_binary(head.to_string().as_bytes(), &[], V1Format::Columnar, LIMIT);
    assert!(
        matches!(short, Err(TranslateError::BadUpstream(_))),
        "{short:?}"
    );
}

/// A random tensor's datatype and raw bytes (whole elements; FP32/FP16/BF16 any bit pattern
/// but NaN, whose payload JSON cannot carry; BYTES any bytes under a `*_bytes` name, which
/// V1 carries as `{"b64"}`).
fn raw_tensor() -> impl Strategy<Value = (DataType, usize, Vec<u8>)> {
    let n = 1..16usize;
    let finite32 = any::<u32>().prop_filter("not NaN", |b| !f32::from_bits(*b).is_nan());
    let half16 = any::<u16>().prop_filter("not NaN", |b| !half::f16::from_bits(*b).is_nan());
    let bf16 = any::<u16>().prop_filter("not NaN", |b| !half::bf16::from_bits(*b).is_nan());
    prop_oneof![
        prop::collection::vec(finite32, n.clone()).prop_map(|v| (
            DataType::Fp32,
            v.len(),
            le(&v, u32::to_le_bytes)
        )),
        prop::collection::vec(any::<i64>(), n.clone()).prop_map(|v| (
            DataType::Int64,
            v.len(),
            le(&v, i64::to_le_bytes)
        )),
        prop::collection::vec(any::<u16>(), n.clone()).prop_map(|v| (
            DataType::Uint16,
            v.len(),
            le(&v, u16::to_le_bytes)
        )),
        prop::collection::vec(any::<bool>(), n.clone()).prop_map(|v| (
            DataType::Bool,
            v.len(),
            v.into_iter().map(u8::from).collect()
        )),
        prop::collection::vec(half16, n.clone()).prop_map(|v| (
            DataType::Fp16,
            v.len(),
            le(&v, u16::to_le_bytes)
        )),
        prop::collection::vec(bf16, n.clone()).prop_map(|v| (
            DataType::Bf16,
            v.len(),
            le(&v, u16::to_le_bytes)
        )),
        prop::collection::vec(prop::collection::vec(any::<u8>(), 0..9), n).prop_map(|v| {
            let refs: Vec<&[u8]> = v.iter().map(Vec::as_slice).collect();
            (DataType::Bytes, v.len(), framed(&refs))
        }),
    ]
}

proptest! {
    /// binary → V1 → binary: a binary input bridged to V1 JSON, echoed by a V1 model, comes
    /// back as a binary output with the very same bytes.
    #[test]
    fn binary_to_v1_to_binary_is_bit_exact((dt, n, raw) in raw_tensor(), batched in any::<bool>()) {
        let name = if dt == DataType::Bytes { "t_bytes" } else { "t" };
        let shape: Vec<i64> = if batched { vec![-1] } else { vec![n as i64] };
        let s = sig(&[(name, dt, &shape)], &[(name, dt, &shape)]);
        let doc = json!({"inputs": [bin_input(name, dt, &[n], &raw)],
                         "outputs": [{"name": name, "parameters": {"binary_data": true}}]});
        let mut call = OipCall::default();
        let v1 = request_binary(&s, doc.to_string().as_bytes(), &raw, &mut call, LIMIT).unwrap();
        let echoed = String::from_utf8(v1).unwrap()
            .replacen("{\"instances\":", "{\"predictions\":", 1)
            .replacen("{\"inputs\":", "{\"outputs\":", 1);
        let a = answer_parts(&s, &call, echoed.as_bytes(), LIMIT).unwrap();
        prop_assert_eq!(&json(&a.json)["outputs"][0]["shape"], &json!([n]));
        prop_assert_eq!(a.sections.len(), 1);
        prop_assert_eq!(&a.sections[0][..], &raw[..], "{}", echoed);
    }
}

/// The whole bridge layer, as tritonclient's binary mode meets it: the header length read off
/// the request, a JSON V1 call upstream, a binary answer with its header length.
#[tokio::test]
async fn the_layer_speaks_the_extension_on_the_callers_side() {
    use bytes::Bytes;
    use http::{Request, Response};
    use http_body_util::{BodyExt, Full};
    use tower::{Layer, ServiceExt, service_fn};

    use super::super::{BridgeDirection, BridgeLayer, BridgeSettings};
    use crate::translate::{BoxError, MaxDecodedBytes, TranslateBody};

    let settings = BridgeSettings {
        direction: BridgeDirection::OipRestToKserveV1,
        signature: sig(
            &[("x", DataType::Fp32, &[-1])],
            &[("y", DataType::Fp32, &[-1])],
        ),
        max_decoded_bytes: MaxDecodedBytes(LIMIT),
    };
    let upstream = service_fn(|req: Request<TranslateBody>| async move {
        assert_eq!(req.uri().path(), "/v1/models/m:predict");
        assert_eq!(req.headers()["content-type"], "application/json");
        assert!(
            req.headers()
                .get("inference-header-content-length")
                .is_none()
        );
        let body = req.into_body().collect().await?.to_bytes();
        assert_eq!(&body[..], br#"{"instances":[1.5,-2.0]}"#);
        let answer = Full::new(Bytes::from_static(br#"{"predictions":[3,-4]}"#))
            .map_err(|never| -> BoxError { match never {} })
            .boxed_unsync();
        Ok::<_, BoxError>(Response::new(answer))
    });
    let head = json!({"inputs": [bin_input("x", DataType::Fp32, &[2], &[0; 8])],
                      "outputs": [{"name": "y", "parameters": {"binary_data": true}}]})
    .to_string();
    let mut body = head.clone().into_bytes();
    body.extend(le(&[1.5f32, -2.0], f32::to_le_bytes));
    // tritonclient sends no Content-Type (protocol pitfall 1).
    let req = Request::post("/v2/models/m/infer")
        .header("inference-header-content-length", head.len())
        .body(Full::new(Bytes::from(body)))
        .unwrap();
    let resp = BridgeLayer::new(settings)
        .layer(upstream)
        .oneshot(req)
        .await
        .unwrap();
    let header_len: usize = resp.headers()["inference-header-content-length"]
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    assert_eq!(resp.headers()["content-type"], "application/octet-stream");
    let body = resp.into_body().collect().await.unwrap().to_bytes();
    let (answer, section) = body.split_at(header_len);
    assert_eq!(
        json(answer)["outputs"][0],
        json!({"name": "y", "datatype": "FP32", "shape": [2], "parameters": {"binary_data_size": 8}})
    );
    assert_eq!(section, &le(&[3.0f32, -4.0], f32::to_le_bytes)[..]);
}
