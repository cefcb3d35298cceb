use bytes::Bytes;
use http::{HeaderMap, HeaderValue, StatusCode};
use proptest::prelude::*;
use prost::Message;

use super::*;
use crate::translate::pb;
use crate::translate::pb::model_infer_response::InferOutputTensor;

const OIP: CompareSettings = CompareSettings {
    mode: CompareMode::Oip,
    tolerance: Tolerance {
        abs: 1e-4,
        rel: 1e-3,
    },
    max_body: 1 << 20,
};

fn json_answer(values: &[f32]) -> Answer {
    let body = serde_json::json!({
        "model_name": "m", "id": "1",
        "outputs": [
            { "name": "probs", "datatype": "FP32", "shape": [1, values.len()], "data": values },
            { "name": "label", "datatype": "BYTES", "shape": [1], "data": ["cat"] },
        ],
    });
    Answer {
        status: StatusCode::OK,
        body: Bytes::from(body.to_string()),
        ..Answer::default()
    }
}

fn binary_answer(values: &[f32]) -> Answer {
    let raw: Vec<u8> = values.iter().flat_map(|v| v.to_le_bytes()).collect();
    let header = serde_json::json!({
        "model_name": "m",
        "outputs": [{ "name": "probs", "datatype": "FP32", "shape": [1, values.len()],
                      "parameters": { "binary_data_size": raw.len() } }],
    })
    .to_string();
    let mut headers = HeaderMap::new();
    headers.insert(
        "inference-header-content-length",
        HeaderValue::from(header.len()),
    );
    Answer {
        status: StatusCode::OK,
        headers,
        body: Bytes::from([header.into_bytes(), raw].concat()),
        trailers: None,
    }
}

fn grpc_answer(values: &[f32], raw: bool) -> Answer {
    let mut msg = pb::ModelInferResponse {
        model_name: "m".into(),
        outputs: vec![InferOutputTensor {
            name: "probs".into(),
            datatype: "FP32".into(),
            shape: vec![1, values.len() as i64],
            ..Default::default()
        }],
        ..Default::default()
    };
    if raw {
        let bytes: Vec<u8> = values.iter().flat_map(|v| v.to_le_bytes()).collect();
        msg.raw_output_contents = vec![Bytes::from(bytes)];
    } else {
        msg.outputs[0].contents = Some(pb::InferTensorContents {
            fp32_contents: values.to_vec(),
            ..Default::default()
        });
    }
    let encoded = msg.encode_to_vec();
    let mut body = vec![0];
    body.extend_from_slice(&(encoded.len() as u32).to_be_bytes());
    body.extend_from_slice(&encoded);
    let mut headers = HeaderMap::new();
    headers.insert("content-type", HeaderValue::from_static("application/grpc"));
    let mut trailers = HeaderMap::new();
    trailers.insert("grpc-status", HeaderValue::from_static("0"));
    Answer {
        status: StatusCode::OK,
        headers,
        body: Bytes::from(body),
        trailers: Some(trailers),
    }
}

fn mismatch(c: Comparison) -> (Difference, usize) {
    match c.verdict {
        Verdict::Mismatch { first, count } => (first, count),
        other => panic!("expected a mismatch, got {other:?}"),
    }
}

const BASE: [f32; 3] = [0.1, 0.7, 0.2];
const OFF: [f32; 3] = [0.1, 0.71, 0.2];

#[test]
fn identical_answers_match_in_every_encoding() {
    for (p, c) in [
        (json_answer(&BASE), json_answer(&BASE)),
        (binary_answer(&BASE), binary_answer(&BASE)),
        (grpc_answer(&BASE, true), grpc_answer(&BASE, true)),
        (grpc_answer(&BASE, false), grpc_answer(&BASE, true)),
    ] {
        let c2 = compare(&OIP, &p, &c);
        assert_eq!(c2.verdict, Verdict::Match, "{p:?} {c:?}");
        assert_eq!(c2.max_abs_diff, Some(0.0));
        assert_eq!(c2.argmax_agrees, Some(true));
    }
    // A binary primary and a JSON candidate: the same `probs`, and an extra output.
    let (first, _) = mismatch(compare(&OIP, &binary_answer(&BASE), &json_answer(&BASE)));
    assert_eq!(
        (first.tensor.as_str(), first.primary.as_str()),
        ("label", "missing")
    );
}

#[test]
fn one_element_off_by_a_hundredth_is_named_in_every_encoding() {
    for (p, c) in [
        (json_answer(&BASE), json_answer(&OFF)),
        (binary_answer(&BASE), binary_answer(&OFF)),
        (grpc_answer(&BASE, true), grpc_answer(&OFF, true)),
        (grpc_answer(&BASE, false), grpc_answer(&OFF, false)),
    ] {
        let result = compare(&OIP, &p, &c);
        let (first, count) = mismatch(result.clone());
        assert_eq!(first.tensor, "probs");
        assert_eq!(first.index, Some(1));
        assert_eq!(count, 1);
        assert!(first.primary.starts_with("0.69999") || first.primary.starts_with("0.7"));
        assert!(first.candidate.starts_with("0.709999") || first.candidate.starts_with("0.71"));
        let d = result.max_abs_diff.unwrap();
        assert!((d - 0.01).abs() < 1e-6, "{d}");
        assert_eq!(result.argmax_agrees, Some(true));
    }
}

#[test]
fn differences_within_tolerance_match_and_argmax_is_reported() {
    let c = compare(
        &OIP,
        &json_answer(&[0.5, 0.5001]),
        &json_answer(&[0.5001, 0.5]),
    );
    assert_eq!(c.verdict, Verdict::Match);
    assert_eq!(c.argmax_agrees, Some(false));
}

#[test]
fn shapes_datatypes_and_names_must_agree() {
    let c = compare(&OIP, &json_answer(&BASE), &json_answer(&[0.1, 0.7]));
    let (first, _) = mismatch(c);
    assert_eq!(
        (
            first.tensor.as_str(),
            first.primary.as_str(),
            first.candidate.as_str()
        ),
        ("probs", "shape [1, 3]", "shape [1, 2]")
    );
    let other = Answer {
        body: Bytes::from_static(
            br#"{"outputs":[{"name":"scores","datatype":"FP64","shape":[1],"data":[1]}]}"#,
        ),
        ..Answer::default()
    };
    let (first, count) = mismatch(compare(&OIP, &json_answer(&BASE), &other));
    assert_eq!(
        (first.tensor.as_str(), first.candidate.as_str()),
        ("probs", "missing")
    );
    assert_eq!(count, 3);
    let fp64 = Answer {
        body: Bytes::from_static(
            br#"{"outputs":[{"name":"probs","datatype":"FP64","shape":[1,3],"data":[0.1,0.7,0.2]},{"name":"label","datatype":"BYTES","shape":[1],"data":["cat"]}]}"#,
        ),
        ..Answer::default()
    };
    let (first, _) = mismatch(compare(&OIP, &json_answer(&BASE), &fp64));
    assert_eq!(
        (first.primary.as_str(), first.candidate.as_str()),
        ("FP32", "FP64")
    );
}

#[test]
fn bytes_outputs_compare_exactly() {
    let mut dog = json_answer(&BASE);
    dog.body = Bytes::from(String::from_utf8_lossy(&dog.body).replace("cat", "dog"));
    let (first, _) = mismatch(compare(&OIP, &json_answer(&BASE), &dog));
    assert_eq!(
        (
            first.tensor.as_str(),
            first.index,
            first.primary.as_str(),
            first.candidate.as_str()
        ),
        ("label", Some(0), "cat", "dog")
    );
}

#[test]
fn statuses_decide_first() {
    let mut failed = json_answer(&BASE);
    failed.status = StatusCode::INTERNAL_SERVER_ERROR;
    let (first, _) = mismatch(compare(&OIP, &json_answer(&BASE), &failed));
    assert_eq!(
        (first.tensor.as_str(), first.candidate.as_str()),
        ("(status)", "500")
    );
    let both = compare(&OIP, &failed, &failed.clone());
    assert_eq!(both.verdict, Verdict::Match);
    let mut unavailable = grpc_answer(&BASE, true);
    unavailable.trailers = None;
    unavailable
        .headers
        .insert("grpc-status", HeaderValue::from_static("14"));
    let (first, _) = mismatch(compare(&OIP, &grpc_answer(&BASE, true), &unavailable));
    assert_eq!(
        (first.tensor.as_str(), first.candidate.as_str()),
        ("(grpc-status)", "14")
    );
}

#[test]
fn unreadable_answers_are_errors_not_mismatches() {
    let text = Answer {
        body: Bytes::from_static(b"Internal Server Error"),
        ..Answer::default()
    };
    assert!(matches!(
        compare(&OIP, &json_answer(&BASE), &text).verdict,
        Verdict::Error(e) if e.starts_with("candidate answer")
    ));
    let small = CompareSettings {
        max_body: 16,
        ..OIP
    };
    assert!(matches!(
        compare(&small, &json_answer(&BASE), &json_answer(&BASE)).verdict,
        Verdict::Error(_)
    ));
}

#[test]
fn fp16_raw_outputs_are_widened() {
    let bits = |v: f32| half::f16::from_f32(v).to_bits().to_le_bytes();
    let answer = |v: f32| {
        let mut a = grpc_answer(&[], true);
        let msg = pb::ModelInferResponse {
            outputs: vec![InferOutputTensor {
                name: "h".into(),
                datatype: "FP16".into(),
                shape: vec![1],
                ..Default::default()
            }],
            raw_output_contents: vec![Bytes::copy_from_slice(&bits(v))],
            ..Default::default()
        }
        .encode_to_vec();
        let mut body = vec![0];
        body.extend_from_slice(&(msg.len() as u32).to_be_bytes());
        body.extend_from_slice(&msg);
        a.body = Bytes::from(body);
        a
    };
    assert_eq!(
        compare(&OIP, &answer(1.5), &answer(1.5)).verdict,
        Verdict::Match
    );
    let (first, _) = mismatch(compare(&OIP, &answer(1.5), &answer(2.0)));
    assert_eq!(
        (first.primary.as_str(), first.candidate.as_str()),
        ("1.5", "2")
    );
}

#[test]
fn json_mode_is_structural() {
    let json = CompareSettings {
        mode: CompareMode::Json,
        ..OIP
    };
    let a = |s: &'static str| Answer {
        body: Bytes::from_static(s.as_bytes()),
        ..Answer::default()
    };
    let same = compare(
        &json,
        &a(r#"{"a":1,"b":[1,2]}"#),
        &a(r#"{"b":[1,2.0],"a":1}"#),
    );
    assert_eq!(same.verdict, Verdict::Match);
    let (first, count) = mismatch(compare(
        &json,
        &a(r#"{"a":1,"b":[1,2],"c":"x"}"#),
        &a(r#"{"a":1,"b":[1,3]}"#),
    ));
    assert_eq!(
        (
            first.tensor.as_str(),
            first.primary.as_str(),
            first.candidate.as_str()
        ),
        ("/b/1", "2", "3")
    );
    assert_eq!(count, 2);
    assert!(matches!(
        compare(&json, &a("{"), &a("{}")).verdict,
        Verdict::Error(_)
    ));
}

#[test]
fn mode_none_never_reads() {
    let none = CompareSettings {
        mode: CompareMode::None,
        ..OIP
    };
    let junk = Answer::default();
    assert_eq!(
        compare(&none, &junk, &json_answer(&BASE)).verdict,
        Verdict::Match
    );
}

proptest! {
    #[test]
    fn an_answer_matches_itself_and_one_perturbed_element_is_found(
        values in proptest::collection::vec(-1e3f32..1e3, 1..64),
        at in any::<prop::sample::Index>(),
        raw in any::<bool>(),
    ) {
        let same = compare(&OIP, &grpc_answer(&values, raw), &grpc_answer(&values, !raw));
        prop_assert_eq!(same.verdict, Verdict::Match);
        let i = at.index(values.len());
        let mut off = values.clone();
        let b = f64::from(values[i]);
        // Well beyond abs + rel * |b|.
        off[i] = (b + 2.0 * (1e-4 + 1e-3 * b.abs()) + 1e-2) as f32;
        let result = compare(&OIP, &grpc_answer(&values, raw), &grpc_answer(&off, raw));
        let (first, count) = mismatch(result.clone());
        prop_assert_eq!(first.index, Some(i));
        prop_assert_eq!(count, 1);
    }

    #[test]
    fn tolerance_accepts_exactly_its_bound(
        b in -1e6f64..1e6, abs in 0.0f64..1.0, rel in 0.0f64..0.1, frac in 0.0f64..0.99,
    ) {
        let t = Tolerance { abs, rel };
        let bound = abs + rel * b.abs();
        prop_assert!(t.agrees(b, b + frac * bound));
        prop_assert!(t.agrees(b, b - frac * bound));
        prop_assert!(!t.agrees(b, b + 1.01 * bound + 1e-9));
    }
}
