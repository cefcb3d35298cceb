//! OIP v2 REST ⇄ KServe V1 bridging, the per-request mapping: an OIP infer request to V1
//! `instances`, and a V1 `predictions` answer back to OIP `outputs`, at 64 and 65,536 FP32
//! elements. Throughput is bytes of input JSON per second: the "MB/s of JSON per core" of the
//! bridge. The pass-through baseline is a copy of the same body (what an untranslated proxy
//! does with it at most).

use std::hint::black_box;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use ferry_filters::bridge::mapping::{oip_request_to_v1, v1_answer_to_oip};
use ferry_filters::bridge::{OipCall, Signature, TensorSig};
use ferry_filters::translate::DataType;

const LIMIT: u64 = 1 << 30;

fn signature(n: usize) -> Signature {
    let t = |name: &str| TensorSig {
        name: name.into(),
        datatype: DataType::Fp32,
        shape: vec![-1, i64::try_from(n).unwrap_or(i64::MAX)],
    };
    Signature {
        inputs: vec![t("x")],
        outputs: vec![t("y")],
    }
}

fn oip_request(n: usize) -> Vec<u8> {
    let data = ferry_bench::scenarios::fp32_activations(n);
    format!(r#"{{"inputs":[{{"name":"x","shape":[1,{n}],"datatype":"FP32","data":[{data}]}}]}}"#)
        .into_bytes()
}

fn v1_answer(n: usize) -> Vec<u8> {
    let data = ferry_bench::scenarios::fp32_activations(n);
    format!(r#"{{"predictions":[{{"y":[{data}]}}]}}"#).into_bytes()
}

fn bridge(c: &mut Criterion) {
    for n in [64usize, 65_536] {
        let sig = signature(n);
        let request = oip_request(n);
        let answer = v1_answer(n);
        let mut g = c.benchmark_group(format!("bridge/oip_to_v1/fp32_{n}"));
        g.throughput(Throughput::Bytes(request.len() as u64));
        g.bench_function("pass_through_copy", |b| {
            b.iter(|| black_box(black_box(&request).clone()));
        });
        g.bench_function("request", |b| {
            b.iter(|| {
                let mut call = OipCall::default();
                black_box(oip_request_to_v1(
                    &sig,
                    black_box(&request),
                    &mut call,
                    LIMIT,
                ))
            });
        });
        g.throughput(Throughput::Bytes(answer.len() as u64));
        let call = OipCall {
            model: "m".into(),
            ..OipCall::default()
        };
        g.bench_function("answer", |b| {
            b.iter(|| black_box(v1_answer_to_oip(&sig, &call, black_box(&answer), LIMIT)));
        });
        g.finish();
    }
}

criterion_group!(benches, bridge);
criterion_main!(benches);
