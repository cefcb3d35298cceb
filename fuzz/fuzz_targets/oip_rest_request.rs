//! Fuzzes the OIP REST infer parser and the binary-extension splitter: any body, any
//! `Inference-Header-Content-Length`, must give a translated request or a 400/413-class error,
//! never a panic, and never allocate beyond the limit.

#![no_main]

use bytes::Bytes;
use ferry_filters::translate::mapping::rest_request_to_grpc;
use ferry_filters::translate::{Endpoint, Rpc};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    // First two bytes choose the header length (or none), the rest is the body.
    let (header, body) = match data.split_first_chunk::<2>() {
        Some((h, rest)) => (u16::from_le_bytes(*h), rest),
        None => return,
    };
    let header_len = (header != u16::MAX).then(|| header.to_string());
    let ep = Endpoint {
        rpc: Rpc::ModelInfer,
        model: "m".into(),
        version: String::new(),
    };
    let _ = rest_request_to_grpc(
        &ep,
        Bytes::copy_from_slice(body),
        header_len.as_deref(),
        1 << 20,
    );
});
