//! The REST → gRPC translation hot path: OIP REST infer bodies (JSON and binary extension) to
//! the framed `ModelInferRequest`, as the proxy does per request. Throughput is reported in
//! bytes of REST body per second, so the JSON cases read as JSON decoding speed.

use std::hint::black_box;

use bytes::Bytes;
use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use ferry_filters::translate::mapping::{rest_infer_answer, rest_request_to_grpc};
use ferry_filters::translate::pb;
use ferry_filters::translate::{Endpoint, Rpc};
use prost::Message as _;

const LIMIT: u64 = 1 << 30;

fn endpoint() -> Endpoint {
    Endpoint {
        rpc: Rpc::ModelInfer,
        model: "m".into(),
        version: String::new(),
    }
}

/// Deterministic, realistic floats (a few significant digits, mixed signs and magnitudes).
fn floats(n: usize) -> Vec<f32> {
    let mut x = 0x2545_f491_u32;
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            (x % 2_000_000) as f32 / 1000.0 - 1000.0
        })
        .collect()
}

fn fp32_json(n: usize) -> Bytes {
    let values = floats(n);
    let data = serde_json::to_string(&values).unwrap_or_default();
    Bytes::from(format!(
        r#"{{"inputs":[{{"name":"x","shape":[1,{n}],"datatype":"FP32","data":{data}}}]}}"#
    ))
}

/// `n` FP32 values in [-1, 1) as their shortest text (mostly 8-11 characters, up to nine
/// significant digits), as the whole-process translate scenario sends them: the digits of real
/// activations, and the mantissas past 2^24 that the exact-conversion fast paths must handle.
fn fp32_activations_json(n: usize) -> Bytes {
    let data = ferry_bench::scenarios::fp32_activations(n);
    Bytes::from(format!(
        r#"{{"inputs":[{{"name":"x","shape":[1,{n}],"datatype":"FP32","data":[{data}]}}]}}"#
    ))
}

fn fp32_binary(n: usize) -> (Bytes, String) {
    let header = format!(
        r#"{{"inputs":[{{"name":"x","shape":[1,{n}],"datatype":"FP32","parameters":{{"binary_data_size":{}}}}}]}}"#,
        n * 4
    );
    let mut body = header.clone().into_bytes();
    for v in floats(n) {
        body.extend_from_slice(&v.to_le_bytes());
    }
    (Bytes::from(body), header.len().to_string())
}

fn bytes_json(n: usize) -> Bytes {
    let strings: Vec<String> = (0..n).map(|i| format!("token-{i}-\u{e9}t\u{e9}")).collect();
    let data = serde_json::to_string(&strings).unwrap_or_default();
    Bytes::from(format!(
        r#"{{"inputs":[{{"name":"s","shape":[{n}],"datatype":"BYTES","data":{data}}}]}}"#
    ))
}

fn rest_to_grpc(c: &mut Criterion) {
    let ep = endpoint();
    let mut g = c.benchmark_group("translate/rest_to_grpc");

    let body = fp32_json(1_000_000);
    g.throughput(Throughput::Bytes(body.len() as u64));
    g.sample_size(10);
    g.bench_function("fp32_1m_json", |b| {
        b.iter(|| rest_request_to_grpc(&ep, black_box(body.clone()), None, LIMIT))
    });

    let body = fp32_activations_json(1_000_000);
    g.throughput(Throughput::Bytes(body.len() as u64));
    g.bench_function("fp32_1m_json_activations", |b| {
        b.iter(|| rest_request_to_grpc(&ep, black_box(body.clone()), None, LIMIT))
    });

    let (body, header_len) = fp32_binary(1_000_000);
    g.throughput(Throughput::Bytes(body.len() as u64));
    g.bench_function("fp32_1m_binary", |b| {
        b.iter(|| rest_request_to_grpc(&ep, black_box(body.clone()), Some(&header_len), LIMIT))
    });

    g.sample_size(50);
    let body = fp32_json(64);
    g.throughput(Throughput::Bytes(body.len() as u64));
    g.bench_function("fp32_64_json", |b| {
        b.iter(|| rest_request_to_grpc(&ep, black_box(body.clone()), None, LIMIT))
    });

    let body = bytes_json(10_000);
    g.throughput(Throughput::Bytes(body.len() as u64));
    g.bench_function("bytes", |b| {
        b.iter(|| rest_request_to_grpc(&ep, black_box(body.clone()), None, LIMIT))
    });

    // The naive alternative the style guide asks to compare with: a serde_json::Value tree.
    let body = fp32_json(1_000_000);
    g.throughput(Throughput::Bytes(body.len() as u64));
    g.sample_size(10);
    g.bench_function("fp32_1m_json_value_tree_baseline", |b| {
        b.iter(|| {
            let v: serde_json::Value = serde_json::from_slice(black_box(&body)).unwrap_or_default();
            let n = v["inputs"][0]["data"]
                .as_array()
                .map(|a| {
                    a.iter()
                        .filter_map(|x| x.as_f64())
                        .map(|x| x as f32)
                        .collect::<Vec<f32>>()
                })
                .unwrap_or_default();
            black_box(n)
        })
    });
    g.finish();
}

/// The gRPC upstream's answer for a REST caller that asked for JSON: 1,000,000 FP32 as typed
/// contents. Time to first byte is what the proxy must do before it can send the headers and
/// the first chunk: the whole answer before streaming, one 64 KiB chunk now.
fn rest_answer(c: &mut Criterion) {
    let mut g = c.benchmark_group("translate/rest_answer");
    g.sample_size(10);
    let answer = pb::ModelInferResponse {
        model_name: "m".into(),
        id: "1".into(),
        outputs: vec![pb::model_infer_response::InferOutputTensor {
            name: "y".into(),
            datatype: "FP32".into(),
            shape: vec![1, 1_000_000],
            contents: Some(pb::InferTensorContents {
                fp32_contents: floats(1_000_000),
                ..Default::default()
            }),
            ..Default::default()
        }],
        ..Default::default()
    };
    let message = Bytes::from(answer.encode_to_vec());
    g.bench_function("fp32_1m_whole_before_first_byte", |b| {
        b.iter(|| rest_infer_answer(black_box(message.clone()), true))
    });
    g.bench_function("fp32_1m_streamed_before_first_byte", |b| {
        b.iter(|| rest_infer_answer(black_box(message.clone()), false))
    });
    g.finish();
}

criterion_group!(benches, rest_to_grpc, rest_answer);
criterion_main!(benches);
