//! Fuzzes the binary-tensor extension splitter with well-formed-looking requests: a JSON
//! header naming up to 4 inputs (any datatype and shape, each with a `binary_data_size`), the
//! sections after it, and an `Inference-Header-Content-Length` that is right or off by a few
//! bytes. What must hold:
//! - no panic, and a refusal is always the caller's fault (400/413 class), never an upstream
//!   or internal error;
//! - an accepted request carries, in `raw_input_contents`, exactly the bytes of the sections
//!   in order, each as long as its `binary_data_size` said: nothing lost, shifted or invented
//!   (checked when every stated length is true; a lying request may still parse as a different,
//!   consistent one).

#![no_main]

use bytes::{Bytes, BytesMut};
use ferry_filters::translate::mapping::rest_request_to_grpc;
use ferry_filters::translate::pb::ModelInferRequest;
use ferry_filters::translate::{Endpoint, Rpc, TranslateError};
use libfuzzer_sys::arbitrary::{Result, Unstructured};
use libfuzzer_sys::fuzz_target;
use prost::Message as _;

const DATATYPES: [&str; 14] = [
    "BOOL", "UINT8", "UINT16", "UINT32", "UINT64", "INT8", "INT16", "INT32", "INT64", "FP16",
    "FP32", "FP64", "BYTES", "BF16",
];
const LIMIT: u64 = 1 << 16;

fn run(u: &mut Unstructured<'_>) -> Result<()> {
    let mut inputs = Vec::new();
    let mut sections = Vec::new();
    // Whether every length the request states is true; only then is the split it must give
    // known (a lying one may still parse, as a different but consistent request).
    let mut honest = true;
    for i in 0..u.int_in_range(0..=4)? {
        let datatype = *u.choose(&DATATYPES)?;
        let mut shape = Vec::new();
        for _ in 0..u.int_in_range(0..=3)? {
            // Mostly small dims, sometimes negative or huge ones.
            shape.push(match u.int_in_range(0..=9)? {
                0 => -1,
                1 => i64::from(u.arbitrary::<u32>()?) << 16,
                _ => i64::from(u.int_in_range(0..=8)?),
            });
        }
        let len = usize::from(u.int_in_range(0u8..=64)?);
        let section: &[u8] = u.bytes(len)?;
        // The declared size is usually the section's own, sometimes off by a little.
        let declared = match u.int_in_range(0..=7)? {
            0 => section.len().saturating_sub(1),
            1 => section.len() + 1,
            _ => section.len(),
        };
        honest &= declared == section.len();
        inputs.push(format!(
            r#"{{"name":"in{i}","datatype":"{datatype}","shape":{shape:?},"parameters":{{"binary_data_size":{declared}}}}}"#
        ));
        sections.push(section.to_vec());
    }
    let header = format!(r#"{{"inputs":[{}]}}"#, inputs.join(","));
    let tail: Vec<u8> = sections.concat();
    let mut body = BytesMut::from(header.as_bytes());
    body.extend_from_slice(&tail);
    let header_len = match u.int_in_range(0..=7)? {
        0 => {
            honest = false;
            header.len().saturating_sub(1).to_string()
        }
        1 => {
            honest = false;
            (header.len() + 1).to_string()
        }
        2 => format!(" {} ", header.len()),
        _ => header.len().to_string(),
    };
    let ep = Endpoint {
        rpc: Rpc::ModelInfer,
        model: "m".into(),
        version: String::new(),
    };
    match rest_request_to_grpc(&ep, body.freeze(), Some(&header_len), LIMIT) {
        Err(TranslateError::BadRequest(_) | TranslateError::TooLarge { .. }) => {}
        Err(other) => panic!("a malformed request blamed on someone else: {other:?}"),
        Ok(_) if !honest => {}
        Ok(chunks) => {
            let framed: Vec<u8> = chunks.iter().flat_map(|c| c.iter().copied()).collect();
            let message = framed.get(5..).unwrap_or_default();
            let msg = ModelInferRequest::decode(Bytes::copy_from_slice(message))
                .unwrap_or_else(|e| panic!("ferry framed an undecodable request: {e}"));
            assert_eq!(msg.inputs.len(), sections.len());
            assert_eq!(
                msg.raw_input_contents.iter().map(|b| b.to_vec()).collect::<Vec<_>>(),
                sections,
                "sections lost, shifted or invented"
            );
        }
    }
    Ok(())
}

fuzz_target!(|data: &[u8]| {
    let _ = run(&mut Unstructured::new(data));
});
