//! Fuzzes model-name extraction from what a caller sends: an OIP REST path, the first frame
//! of an OIP gRPC call, and an OpenAI-style JSON prefix. Must never panic; a name found is
//! never empty.

#![no_main]

use ferry_filters::model_name::{from_grpc_frame, from_json_prefix, from_oip_path};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(path) = std::str::from_utf8(data)
        && let Some(m) = from_oip_path(path)
    {
        assert!(!m.name.is_empty());
    }
    if let Some(m) = from_grpc_frame(data) {
        assert!(!m.name.is_empty(), "{m:?}");
    }
    if let Some(m) = from_json_prefix(data) {
        assert!(!m.name.is_empty(), "{m:?}");
    }
});
