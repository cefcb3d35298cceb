//! OIP v2 REST → TorchServe bridging, the per-request mapping, at 64 and 65,536 FP32 elements
//! for each payload: an OIP infer request to the TorchServe body (`json`: nested arrays, `raw`:
//! little-endian floats, `npy`: a `.npy` file), and the handler's answer in the same encoding
//! back to OIP `outputs`. Throughput is bytes of OIP JSON per second (the request's input, the
//! answer's output). The pass-through baseline is a copy of the same body (what an untranslated
//! proxy does with it at most).

use std::hint::black_box;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use ferry_filters::bridge::torchserve::Payload;
use ferry_filters::bridge::torchserve::mapping::{
    oip_request_to_torchserve, torchserve_answer_to_oip,
};
use ferry_filters::bridge::{Signature, TensorSig};
use ferry_filters::translate::DataType;

const LIMIT: u64 = 1 << 30;

/// Input and output share the name `t`, so the request body is also a valid answer.
fn signature(n: usize) -> Signature {
    let t = TensorSig {
        name: "t".into(),
        datatype: DataType::Fp32,
        shape: vec![-1, i64::try_from(n).unwrap_or(i64::MAX)],
    };
    Signature {
        inputs: vec![t.clone()],
        outputs: vec![t],
    }
}

fn oip_request(n: usize) -> Vec<u8> {
    let data = ferry_bench::scenarios::fp32_activations(n);
    format!(r#"{{"inputs":[{{"name":"t","shape":[1,{n}],"datatype":"FP32","data":[{data}]}}]}}"#)
        .into_bytes()
}

fn bridge(c: &mut Criterion) {
    for n in [64usize, 65_536] {
        let sig = signature(n);
        let request = oip_request(n);
        let mut g = c.benchmark_group(format!("bridge/oip_to_torchserve/fp32_{n}"));
        g.throughput(Throughput::Bytes(request.len() as u64));
        g.bench_function("pass_through_copy", |b| {
            b.iter(|| black_box(black_box(&request).clone()));
        });
        for (name, payload) in [
            ("json", Payload::Json),
            ("raw", Payload::Raw),
            ("npy", Payload::Npy),
        ] {
            g.throughput(Throughput::Bytes(request.len() as u64));
            g.bench_function(format!("request_{name}"), |b| {
                b.iter(|| {
                    black_box(oip_request_to_torchserve(
                        &sig,
                        payload,
                        black_box(&request),
                        LIMIT,
                    ))
                });
            });
            let Ok((_, answer)) = oip_request_to_torchserve(&sig, payload, &request, LIMIT) else {
                panic!("the {name} request did not map");
            };
            let Ok(oip) = torchserve_answer_to_oip(&sig, payload, &answer, LIMIT) else {
                panic!("the {name} answer did not map");
            };
            g.throughput(Throughput::Bytes(oip.len() as u64));
            g.bench_function(format!("answer_{name}"), |b| {
                b.iter(|| {
                    black_box(torchserve_answer_to_oip(
                        &sig,
                        payload,
                        black_box(&answer),
                        LIMIT,
                    ))
                });
            });
        }
        g.finish();
    }
}

criterion_group!(benches, bridge);
criterion_main!(benches);
