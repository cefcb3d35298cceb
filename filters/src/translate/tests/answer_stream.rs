//! Streamed REST answers: produced in several bounded chunks, byte for byte the answer built
//! whole, and only when no output needs a binary section.

use http_body::Body as _;

use super::*;
use crate::translate::answer_stream::{AnswerStream, CHUNK, output_datatypes};
use crate::translate::raw;
use crate::translate::rest_to_grpc::{InferAnswer, OutputPlan, infer_answer, infer_response};

fn output(
    name: &str,
    dt: &str,
    n: usize,
    contents: Option<pb::InferTensorContents>,
) -> pb::model_infer_response::InferOutputTensor {
    pb::model_infer_response::InferOutputTensor {
        name: name.into(),
        datatype: dt.into(),
        shape: vec![1, n as i64],
        parameters: Default::default(),
        contents,
    }
}

/// Two outputs of `dt` with `n` elements each, as typed contents or raw (`raw_output_contents`).
fn answer(dt: DataType, n: usize, as_raw: bool) -> pb::ModelInferResponse {
    let mut c = pb::InferTensorContents::default();
    for i in 0..n {
        match dt {
            DataType::Fp32 => c.fp32_contents.push(i as f32 * -0.37 + 1e-3),
            DataType::Int64 => c.int64_contents.push((i as i64 - 500) * 1_000_003),
            DataType::Bool => c.bool_contents.push(i % 3 == 0),
            DataType::Bytes => c.bytes_contents.push(format!("tok-{i}-\u{e9}\"").into()),
            other => panic!("{other:?} not in this test"),
        }
    }
    let mut m = pb::ModelInferResponse {
        model_name: "m".into(),
        model_version: "2".into(),
        id: "req-1".into(),
        ..Default::default()
    };
    for name in ["a", "b"] {
        m.outputs
            .push(output(name, dt.as_str(), n, (!as_raw).then(|| c.clone())));
        if as_raw {
            m.raw_output_contents.push(raw::encode(dt, &c));
        }
    }
    m
}

/// Drains a body, returning its data frames.
async fn frames<B: http_body::Body<Data = Bytes> + Unpin>(mut b: B) -> Vec<Bytes>
where
    B::Error: std::fmt::Debug,
{
    let mut out = Vec::new();
    while let Some(f) = std::future::poll_fn(|cx| std::pin::Pin::new(&mut b).poll_frame(cx)).await {
        if let Ok(d) = f.unwrap().into_data() {
            out.push(d);
        }
    }
    out
}

#[tokio::test]
async fn streamed_json_is_several_bounded_chunks_identical_to_the_whole_answer() {
    for dt in [
        DataType::Fp32,
        DataType::Int64,
        DataType::Bool,
        DataType::Bytes,
    ] {
        for as_raw in [false, true] {
            let m = answer(dt, 5_000, as_raw);
            let whole = infer_response(m.clone(), &OutputPlan::all(false)).unwrap();
            assert!(whole.sections.is_empty());
            let dts = output_datatypes(&m).unwrap();
            let stream = AnswerStream::new(m, dts).unwrap().with_chunk(4096);
            let crate::translate::answer_stream::StartedAnswer::Streaming(body) =
                stream.start().unwrap()
            else {
                panic!("{dt:?} raw={as_raw}: a long answer must stream");
            };
            let chunks = frames(body).await;
            assert!(
                chunks.len() > 3,
                "{dt:?} raw={as_raw}: {} chunks",
                chunks.len()
            );
            // Bounded: the chunk size plus at most one element or tensor head past it.
            assert!(
                chunks.iter().all(|c| c.len() < 4096 + 256),
                "{dt:?} raw={as_raw}"
            );
            let joined: Vec<u8> = chunks.concat();
            assert_eq!(
                String::from_utf8_lossy(&joined),
                String::from_utf8_lossy(&whole.json),
                "{dt:?} raw={as_raw}"
            );
            serde_json::from_slice::<serde_json::Value>(&joined).unwrap();
        }
    }
}

#[test]
fn binary_outputs_and_non_utf8_bytes_are_answered_whole() {
    // Binary asked: sections, whole (the JSON header's length is a response header).
    for dt in [
        DataType::Fp32,
        DataType::Int64,
        DataType::Bool,
        DataType::Bytes,
    ] {
        let m = answer(dt, 20_000, true);
        let want = infer_response(m.clone(), &OutputPlan::all(true)).unwrap();
        let InferAnswer::Whole(got) = infer_answer(m, &OutputPlan::all(true)).unwrap() else {
            panic!("{dt:?}: binary answers are whole");
        };
        assert_eq!(got.json, want.json);
        assert_eq!(got.sections, want.sections);
        assert_eq!(got.sections.len(), 2);
    }
    // JSON asked, but one BYTES output is not UTF-8: the pre-pass sends it as a section, so the
    // headers are right, exactly as the whole answer did.
    let mut m = answer(DataType::Bytes, 20_000, false);
    if let Some(c) = m.outputs[1].contents.as_mut() {
        c.bytes_contents[19_999] = Bytes::from_static(b"\xff\xfe");
    }
    let want = infer_response(m.clone(), &OutputPlan::all(false)).unwrap();
    let InferAnswer::Whole(got) = infer_answer(m, &OutputPlan::all(false)).unwrap() else {
        panic!("a non-UTF-8 BYTES output makes the answer whole");
    };
    assert_eq!(got.sections.len(), 1);
    assert_eq!((got.json, got.sections), (want.json, want.sections));
}

#[test]
fn a_short_json_answer_is_whole() {
    let m = answer(DataType::Fp32, 100, false);
    let want = infer_response(m.clone(), &OutputPlan::all(false)).unwrap();
    let InferAnswer::Whole(got) = infer_answer(m, &OutputPlan::all(false)).unwrap() else {
        panic!("fits one chunk");
    };
    assert!(got.json.len() < CHUNK);
    assert_eq!(got.json, want.json);
}

#[tokio::test]
async fn a_long_answer_streams_through_the_translator_without_a_length() {
    let n = 60_000;
    let data: Vec<f32> = (0..n).map(|i| i as f32 * 0.25 - 7.5).collect();
    // Datatype before data, as clients write it (the typed decoding path).
    let json = format!(
        r#"{{"inputs":[{{"name":"x","datatype":"FP32","shape":[1,{n}],"data":{}}}]}}"#,
        serde_json::to_string(&data).unwrap()
    );
    let req = Request::post("/v2/models/m/infer")
        .body(body(json))
        .unwrap();
    let (resp, seen) = rest_via_echo(req).await;
    assert!(seen.is_some(), "{:?}", read(resp).await);
    assert_eq!(resp.status(), StatusCode::OK);
    assert_eq!(resp.headers()["content-type"], "application/json");
    // Chunked: the length is not known before the last number is formatted.
    assert!(resp.headers().get("content-length").is_none());
    assert!(resp.body().size_hint().exact().is_none());
    let chunks = frames(resp.into_body()).await;
    assert!(chunks.len() > 5, "{} chunks", chunks.len());
    assert!(chunks.iter().all(|c| c.len() < CHUNK + 256));
    let v: serde_json::Value = serde_json::from_slice(&chunks.concat()).unwrap();
    let got: Vec<f32> = v["outputs"][0]["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_f64().unwrap() as f32)
        .collect();
    assert_eq!(got, data);
}
