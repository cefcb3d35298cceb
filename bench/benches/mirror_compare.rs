//! Comparing a mirrored candidate's OIP answer with the primary's, as the mirror does per
//! compared request (off the request path, in the mirror's task): REST JSON and gRPC raw
//! answers of classification logits (1,000 classes) and a larger tensor (262,144 elements).
//! Throughput is in elements compared per second.

use std::hint::black_box;

use bytes::Bytes;
use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use ferry_filters::mirror_compare::{Answer, CompareMode, CompareSettings, Tolerance, compare};
use ferry_filters::translate::pb;
use http::{HeaderMap, HeaderValue, StatusCode};
use prost::Message as _;

const SETTINGS: CompareSettings = CompareSettings {
    mode: CompareMode::Oip,
    tolerance: Tolerance {
        abs: 1e-4,
        rel: 1e-3,
    },
    max_body: 1 << 30,
};

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

fn json(values: &[f32]) -> Answer {
    let body = serde_json::json!({
        "model_name": "m",
        "outputs": [{ "name": "logits", "datatype": "FP32", "shape": [1, values.len()], "data": values }],
    });
    Answer {
        status: StatusCode::OK,
        body: Bytes::from(body.to_string()),
        ..Answer::default()
    }
}

fn grpc(values: &[f32]) -> Answer {
    let msg = pb::ModelInferResponse {
        model_name: "m".into(),
        outputs: vec![pb::model_infer_response::InferOutputTensor {
            name: "logits".into(),
            datatype: "FP32".into(),
            shape: vec![1, values.len() as i64],
            ..Default::default()
        }],
        raw_output_contents: vec![Bytes::from(
            values
                .iter()
                .flat_map(|v| v.to_le_bytes())
                .collect::<Vec<u8>>(),
        )],
        ..Default::default()
    }
    .encode_to_vec();
    let mut body = vec![0];
    body.extend_from_slice(&(msg.len() as u32).to_be_bytes());
    body.extend_from_slice(&msg);
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

fn bench(c: &mut Criterion) {
    let mut g = c.benchmark_group("mirror_compare");
    for n in [1000usize, 262_144] {
        let primary = floats(n);
        // Every element moved within tolerance: the whole tensor is walked.
        let candidate: Vec<f32> = primary.iter().map(|v| v * (1.0 + 1e-5)).collect();
        g.throughput(Throughput::Elements(n as u64));
        let (p, q) = (json(&primary), json(&candidate));
        g.bench_function(format!("oip/rest_json_{n}"), |b| {
            b.iter(|| black_box(compare(&SETTINGS, &p, &q)))
        });
        let (p, q) = (grpc(&primary), grpc(&candidate));
        g.bench_function(format!("oip/grpc_raw_{n}"), |b| {
            b.iter(|| black_box(compare(&SETTINGS, &p, &q)))
        });
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
