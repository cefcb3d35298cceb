use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use bytes::Bytes;
use http::{Request, Response};
use proptest::prelude::*;
use prost::Message;
use tower::{Layer, ServiceExt};

use super::pb::{ModelSpec, PredictRequest, TensorProto, dtype};
use super::tensor::{Form, RawTensor, from_proto, shape_proto, to_proto};
use super::{TfServingDirection, TfServingLayer, TfServingSettings};
use crate::bridge::{Signature, TensorSig};
use crate::translate::{
    ALL_DATATYPES, BoxError, ChunksBody, DataType, MaxDecodedBytes, TranslateBody, TranslateError,
    boxed,
};

/// One random element's raw bytes (BYTES with its u32 length).
fn element(dt: DataType, v: u64) -> Vec<u8> {
    match dt.size() {
        Some(n) => {
            let mut b = v.to_le_bytes()[..n].to_vec();
            if dt == DataType::Bool {
                b[0] &= 1;
            }
            b
        }
        None => {
            let s: Vec<u8> = (0..v % 7).map(|i| (v >> (i * 8)) as u8).collect();
            let mut raw = (s.len() as u32).to_le_bytes().to_vec();
            raw.extend_from_slice(&s);
            raw
        }
    }
}

fn raw_tensor(dt: DataType, shape: Vec<i64>, seeds: &[u64]) -> RawTensor {
    let n: i64 = shape.iter().product();
    let raw: Vec<u8> = seeds
        .iter()
        .cycle()
        .take(n as usize)
        .flat_map(|&v| element(dt, v))
        .collect();
    RawTensor {
        datatype: dt,
        shape,
        raw: Bytes::from(raw),
    }
}

proptest! {
    /// Any tensor of any datatype (FP16 and BF16 through `half_val`, BYTES through
    /// `string_val`, NaN payloads and negative zeros included) survives v2 raw → TensorProto
    /// (packed or typed) → wire → TensorProto → v2 raw bit for bit.
    #[test]
    fn v2_tensors_round_trip_through_tensor_proto(
        dt in proptest::sample::select(ALL_DATATYPES.to_vec()),
        shape in proptest::collection::vec(0i64..4, 0..4),
        seeds in proptest::collection::vec(any::<u64>(), 1..8),
        values in any::<bool>(),
    ) {
        let t = raw_tensor(dt, shape, &seeds);
        let form = if values { Form::Values } else { Form::Content };
        let proto = to_proto(&t, form).unwrap();
        if dt == DataType::Bytes || form == Form::Values {
            prop_assert!(proto.tensor_content.is_empty());
        } else {
            prop_assert_eq!(&proto.tensor_content, &t.raw);
        }
        let wire = Bytes::from(proto.encode_to_vec());
        let back = TensorProto::decode(wire).unwrap();
        let mut budget = u64::MAX;
        let got = from_proto(&back, &mut budget).unwrap();
        prop_assert_eq!(got, t);
    }
}

#[test]
fn one_typed_value_fills_the_shape_and_sizes_are_checked() {
    let proto = TensorProto {
        dtype: dtype::DT_INT16,
        tensor_shape: Some(shape_proto(&[2, 2])),
        int_val: vec![-2],
        ..TensorProto::default()
    };
    let mut budget = 1 << 20;
    let t = from_proto(&proto, &mut budget).unwrap();
    assert_eq!(
        &t.raw[..],
        &[0xfe, 0xff, 0xfe, 0xff, 0xfe, 0xff, 0xfe, 0xff]
    );
    assert_eq!(budget, (1 << 20) - 8);

    // A shape that the budget cannot hold is refused before anything is allocated.
    let huge = TensorProto {
        tensor_shape: Some(shape_proto(&[1 << 40, 1 << 20])),
        ..proto.clone()
    };
    let e = from_proto(&huge, &mut budget).unwrap_err();
    assert!(e.contains("max_decoded_bytes"), "{e}");

    let short = TensorProto {
        int_val: vec![1, 2, 3],
        ..proto.clone()
    };
    assert_eq!(
        from_proto(&short, &mut budget).unwrap_err(),
        "3 int_val elements for a shape of 4 (and no tensor_content)"
    );
    let content = TensorProto {
        tensor_content: Bytes::from_static(&[1, 2, 3]),
        ..proto
    };
    assert!(
        from_proto(&content, &mut budget)
            .unwrap_err()
            .contains("tensor_content has 3 bytes")
    );
    let unknown = TensorProto {
        dtype: 8, // DT_COMPLEX64
        ..TensorProto::default()
    };
    assert_eq!(
        from_proto(&unknown, &mut budget).unwrap_err(),
        "dtype 8 has no OIP datatype"
    );
}

fn framed(msg: &impl Message) -> Bytes {
    let m = msg.encode_to_vec();
    let mut out = vec![0];
    out.extend_from_slice(&(m.len() as u32).to_be_bytes());
    out.extend_from_slice(&m);
    Bytes::from(out)
}

/// A request that does not fit the signature is refused with INVALID_ARGUMENT before anything
/// reaches the service below.
#[tokio::test]
async fn unfit_predict_requests_never_reach_the_upstream() {
    let calls = Arc::new(AtomicUsize::new(0));
    let seen = calls.clone();
    let inner = tower::service_fn(move |_req: Request<TranslateBody>| {
        seen.fetch_add(1, Ordering::SeqCst);
        async { Err::<Response<TranslateBody>, BoxError>("must not be called".into()) }
    });
    let sig = Signature {
        inputs: vec![TensorSig {
            name: "x".into(),
            datatype: DataType::Fp32,
            shape: vec![-1, 2],
        }],
        outputs: vec![TensorSig {
            name: "y".into(),
            datatype: DataType::Fp32,
            shape: vec![-1, 2],
        }],
    };
    let layer = TfServingLayer::new(TfServingSettings {
        direction: TfServingDirection::CallerToOip,
        signature: Some(sig),
        max_decoded_bytes: MaxDecodedBytes(1 << 20),
    });
    let svc = layer.layer(inner);
    let x = |dt: i32, dims: &[i64], n: usize| TensorProto {
        dtype: dt,
        tensor_shape: Some(shape_proto(dims)),
        float_val: vec![1.0; n],
        double_val: vec![1.0; n],
        ..TensorProto::default()
    };
    let spec = Some(ModelSpec {
        name: "m".into(),
        ..ModelSpec::default()
    });
    let cases = [
        (
            vec![("x", x(dtype::DT_DOUBLE, &[1, 2], 2))],
            vec![],
            "input \"x\" is FP64, the signature says FP32",
        ),
        (
            vec![("x", x(dtype::DT_FLOAT, &[1, 3], 3))],
            vec![],
            "input \"x\" has shape [1, 3], the signature says [-1, 2]",
        ),
        (vec![], vec![], "missing input \"x\""),
        (
            vec![
                ("x", x(dtype::DT_FLOAT, &[1, 2], 2)),
                ("z", x(dtype::DT_FLOAT, &[1], 1)),
            ],
            vec![],
            "unknown input \"z\"",
        ),
        (
            vec![("x", x(dtype::DT_FLOAT, &[1, 2], 2))],
            vec!["nope".to_owned()],
            "unknown output \"nope\"",
        ),
    ];
    for (inputs, output_filter, want) in cases {
        let req = PredictRequest {
            model_spec: spec.clone(),
            inputs: inputs.into_iter().map(|(k, v)| (k.to_owned(), v)).collect(),
            output_filter,
        };
        let body = boxed(ChunksBody::new([framed(&req)].into(), None));
        let r = Request::post("http://m/tensorflow.serving.PredictionService/Predict")
            .body(body)
            .unwrap();
        let e = svc.clone().oneshot(r).await.unwrap_err();
        match e.downcast_ref::<TranslateError>() {
            Some(TranslateError::BadRequest(m)) => {
                assert!(m.contains(want), "{m:?} lacks {want:?}")
            }
            other => panic!("{other:?}"),
        }
    }
    assert_eq!(calls.load(Ordering::SeqCst), 0);
}
