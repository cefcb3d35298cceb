//! Property: any tensor of any datatype and shape, sent as REST JSON (flat or nested) or as a
//! binary section, asked back as JSON or binary, survives REST → gRPC → REST unchanged.

use proptest::prelude::*;
use serde_json::{Value, json};

use super::*;
use crate::translate::json_in::{Budget, parse_infer};
use crate::translate::tensor::{Sections, check};
use crate::translate::tensor_data::TensorData;

/// One element's raw bytes and JSON value, from 64 random bits.
fn element(dt: DataType, v: u64) -> (Vec<u8>, Value) {
    match dt {
        DataType::Bool => (vec![(v & 1) as u8], json!(v & 1 == 1)),
        DataType::Uint8 => (vec![v as u8], json!(v as u8)),
        DataType::Uint16 => ((v as u16).to_le_bytes().to_vec(), json!(v as u16)),
        DataType::Uint32 => ((v as u32).to_le_bytes().to_vec(), json!(v as u32)),
        DataType::Uint64 => (v.to_le_bytes().to_vec(), json!(v)),
        DataType::Int8 => (vec![v as u8], json!(v as u8 as i8)),
        DataType::Int16 => ((v as i16).to_le_bytes().to_vec(), json!(v as i16)),
        DataType::Int32 => ((v as i32).to_le_bytes().to_vec(), json!(v as i32)),
        DataType::Int64 => ((v as i64).to_le_bytes().to_vec(), json!(v as i64)),
        DataType::Fp16 | DataType::Bf16 => ((v as u16).to_le_bytes().to_vec(), Value::Null),
        DataType::Fp32 => {
            let f = f32::from_bits(v as u32);
            let f = if f.is_finite() {
                f
            } else {
                (v % 1000) as f32 / 8.0
            };
            (f.to_le_bytes().to_vec(), json!(f))
        }
        DataType::Fp64 => {
            let f = f64::from_bits(v);
            let f = if f.is_finite() {
                f
            } else {
                (v % 1000) as f64 / 8.0
            };
            (f.to_le_bytes().to_vec(), json!(f))
        }
        DataType::Bytes => {
            let s: String = (0..v % 6)
                .map(|i| char::from(b'a' + ((v >> (i * 5)) % 26) as u8))
                .collect();
            let mut raw = (s.len() as u32).to_le_bytes().to_vec();
            raw.extend_from_slice(s.as_bytes());
            (raw, json!(s))
        }
    }
}

fn nest(flat: &[Value], shape: &[i64]) -> Value {
    match shape.split_first() {
        None => flat.first().cloned().unwrap_or(Value::Null),
        Some((_, [])) => Value::Array(flat.to_vec()),
        Some((&d, rest)) => {
            let per = flat.len() / (d.max(1) as usize);
            Value::Array(
                (0..d as usize)
                    .map(|i| nest(&flat[i * per..(i + 1) * per], rest))
                    .collect(),
            )
        }
    }
}

fn case() -> impl Strategy<Value = (DataType, Vec<i64>, Vec<u64>, bool, bool, bool)> {
    (
        proptest::sample::select(ALL_DATATYPES.to_vec()),
        proptest::collection::vec(1i64..4, 1..4),
        any::<bool>(),
        any::<bool>(),
        any::<bool>(),
    )
        .prop_flat_map(|(dt, shape, bin_in, bin_out, nested)| {
            let n = shape.iter().product::<i64>() as usize;
            (
                Just(dt),
                Just(shape),
                proptest::collection::vec(any::<u64>(), n),
                Just(bin_in),
                Just(bin_out),
                Just(nested),
            )
        })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, ..ProptestConfig::default() })]

    #[test]
    fn rest_grpc_rest_round_trip((dt, shape, values, bin_in, bin_out, nested) in case()) {
        let (raw, flat): (Vec<Vec<u8>>, Vec<Value>) = values.iter().map(|&v| element(dt, v)).unzip();
        let raw: Vec<u8> = raw.concat();
        let bin_in = bin_in || !dt.has_typed_form();
        let mut input = json!({"name": "t", "datatype": dt.as_str(), "shape": shape});
        if bin_in {
            input["parameters"] = json!({"binary_data_size": raw.len()});
        } else {
            input["data"] = if nested { nest(&flat, &shape) } else { Value::Array(flat.clone()) };
        }
        let doc = json!({"inputs": [input], "outputs": [{"name": "t", "parameters": {"binary_data": bin_out}}]}).to_string();
        let req = if bin_in { binary_request(&doc, &[&raw]) } else { infer_request(&doc) };
        let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
        let (status, headers, b, _) = rt.block_on(async {
            let (resp, seen) = rest_via_echo(req).await;
            assert!(seen.is_some());
            read(resp).await
        });
        prop_assert_eq!(status, StatusCode::OK, "{}", String::from_utf8_lossy(&b));
        let header_len = headers
            .get("inference-header-content-length")
            .map(|v| v.to_str().unwrap().parse::<usize>().unwrap())
            .unwrap_or(b.len());
        let expect_binary = bin_out || !dt.has_typed_form();
        prop_assert_eq!(header_len < b.len() || raw.is_empty(), expect_binary || header_len < b.len());
        let budget = Budget::new(u64::MAX);
        let parsed = parse_infer(&b[..header_len], &budget).unwrap();
        let mut sections = Sections::new(b.slice(header_len..));
        let mut names = Default::default();
        let out = check("output", 0, parsed.outputs.into_iter().next().unwrap(), &mut names, &mut sections, &budget).unwrap();
        sections.finish().unwrap();
        prop_assert_eq!(out.dt, dt);
        prop_assert_eq!(&out.shape, &shape);
        let got = match out.data {
            TensorData::Raw(r) | TensorData::Fp32Le(r) => r.to_vec(),
            TensorData::Typed(c) => crate::translate::raw::encode(dt, &c).to_vec(),
            TensorData::Pending(_) => panic!("a whole answer has no pending sections"),
        };
        prop_assert_eq!(got, raw);
    }
}
