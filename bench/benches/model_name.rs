//! `model_name/*`: finding the model a request names in the first gRPC frame of a
//! `ModelInferRequest` and in the prefix of an OpenAI-style JSON body, against the naive
//! alternative of parsing the whole JSON document.

use criterion::{Criterion, criterion_group, criterion_main};
use ferry_filters::model_name::{from_grpc_frame, from_json_prefix, from_oip_path};
use std::hint::black_box;

/// A gRPC frame: model_name = "resnet50", model_version = "2", then 64 KiB of tensor bytes.
fn grpc_frame() -> Vec<u8> {
    let mut msg = Vec::new();
    msg.extend_from_slice(b"\x0a\x08resnet50\x12\x012");
    // Field 7 (raw_input_contents), length-delimited, 64 KiB.
    let payload = vec![0u8; 65_536];
    msg.push((7 << 3) | 2);
    let mut len = payload.len();
    while len >= 0x80 {
        msg.push((len as u8 & 0x7f) | 0x80);
        len >>= 7;
    }
    msg.push(len as u8);
    msg.extend_from_slice(&payload);
    let mut frame = vec![0u8];
    frame.extend_from_slice(&(msg.len() as u32).to_be_bytes());
    frame.extend_from_slice(&msg);
    frame
}

/// A chat request whose `model` follows a nested `messages` array with a decoy key.
fn json_body() -> Vec<u8> {
    let mut body = String::from(
        r#"{"messages":[{"role":"user","content":"say \"model\" twice","model":"decoy"}"#,
    );
    for i in 0..50 {
        body.push_str(&format!(r#",{{"role":"assistant","content":"turn {i}"}}"#));
    }
    body.push_str(r#"],"model":"llama-3-8b","stream":true,"max_tokens":256}"#);
    body.into_bytes()
}

fn bench(c: &mut Criterion) {
    let frame = grpc_frame();
    let json = json_body();
    let mut group = c.benchmark_group("model_name");
    group.bench_function("grpc_frame", |b| {
        b.iter(|| black_box(from_grpc_frame(black_box(&frame))))
    });
    group.bench_function("json_prefix", |b| {
        b.iter(|| black_box(from_json_prefix(black_box(&json))))
    });
    group.bench_function("json_full_parse_naive", |b| {
        b.iter(|| {
            let v: serde_json::Value = serde_json::from_slice(black_box(&json)).unwrap_or_default();
            black_box(v.get("model").and_then(|m| m.as_str()).map(str::to_owned))
        })
    });
    group.bench_function("oip_path", |b| {
        b.iter(|| {
            black_box(from_oip_path(black_box(
                "/v2/models/resnet50/versions/2/infer",
            )))
        })
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
