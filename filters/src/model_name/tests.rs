use super::*;

fn model(name: &str, version: Option<&str>) -> Option<ModelRef> {
    Some(ModelRef {
        name: name.into(),
        version: version.map(Into::into),
    })
}

#[test]
fn oip_paths() {
    assert_eq!(
        from_oip_path("/v2/models/resnet/infer"),
        model("resnet", None)
    );
    assert_eq!(
        from_oip_path("/v2/models/resnet/versions/2/infer"),
        model("resnet", Some("2"))
    );
    assert_eq!(from_oip_path("/v2/models/resnet"), model("resnet", None));
    assert_eq!(
        from_oip_path("/v2/models/resnet/versions/3"),
        model("resnet", Some("3"))
    );
    assert_eq!(from_oip_path("/v2/models/"), None);
    assert_eq!(from_oip_path("/v2/health/ready"), None);
    assert_eq!(from_oip_path("/v1/models/x"), None);
}

fn frame(msg: &[u8]) -> Vec<u8> {
    let mut out = vec![0u8];
    out.extend_from_slice(&(msg.len() as u32).to_be_bytes());
    out.extend_from_slice(msg);
    out
}

#[test]
fn grpc_first_message() {
    // model_name = "add_sub" (field 1), model_version = "1" (field 2), id = "x" (field 3)
    let msg = [
        &[0x0a, 7][..],
        b"add_sub",
        &[0x12, 1],
        b"1",
        &[0x1a, 1],
        b"x",
    ]
    .concat();
    assert_eq!(from_grpc_frame(&frame(&msg)), model("add_sub", Some("1")));
    // Truncated after the name: the name is still found.
    let f = frame(&msg);
    assert_eq!(from_grpc_frame(&f[..5 + 9]), model("add_sub", None));
    // Compressed frames are not inspected.
    let mut compressed = frame(&msg);
    compressed[0] = 1;
    assert_eq!(from_grpc_frame(&compressed), None);
    // Garbage never panics.
    assert_eq!(from_grpc_frame(&[0, 0, 0, 0, 3, 0xff, 0xff, 0xff]), None);
    assert_eq!(from_grpc_frame(&[]), None);
    assert!(is_oip_grpc_model_method(
        "/inference.GRPCInferenceService/ModelInfer"
    ));
    assert!(!is_oip_grpc_model_method(
        "/inference.GRPCInferenceService/ServerLive"
    ));
}

#[test]
fn json_model_field() {
    assert_eq!(
        from_json_prefix(br#"{"model": "llama-3", "messages": []}"#),
        model("llama-3", None)
    );
    // Nested "model" keys and string values do not count.
    assert_eq!(
        from_json_prefix(br#"{"messages":[{"model":"no"}],"x":"model","model":"yes"}"#),
        model("yes", None)
    );
    assert_eq!(
        from_json_prefix(br#"{"a":{"model":"no"},"model" : "ok\"q"}"#),
        model("ok\"q", None)
    );
    // Prefix ends before the value.
    assert_eq!(from_json_prefix(br#"{"messages":[1,2,3],"mod"#), None);
    // Non-string value.
    assert_eq!(from_json_prefix(br#"{"model": 3}"#), None);
    assert_eq!(from_json_prefix(b"]]]]"), None);
    // A non-string value followed by a string (found by the model_name fuzz target): the
    // string is not the model's value, and an empty name is no name.
    assert_eq!(from_json_prefix(br#"{"model":*ll""lms"#), None);
    assert_eq!(from_json_prefix(br#"{"model": 3 "x"}"#), None);
    assert_eq!(from_json_prefix(br#"{"model": ""}"#), None);
    assert_eq!(
        from_json_prefix(br#"{"n": 3, "model": "ok"}"#),
        model("ok", None)
    );
}

proptest::proptest! {
    #[test]
    fn never_panics(bytes in proptest::collection::vec(proptest::num::u8::ANY, 0..256)) {
        let _ = from_json_prefix(&bytes);
        let _ = from_grpc_frame(&bytes);
        let _ = from_oip_path(&String::from_utf8_lossy(&bytes));
    }
}

#[test]
fn v1_paths() {
    assert_eq!(
        from_v1_path("/v1/models/resnet:predict"),
        model("resnet", None)
    );
    assert_eq!(
        from_v1_path("/v1/models/resnet/versions/2:predict"),
        model("resnet", Some("2"))
    );
    assert_eq!(from_v1_path("/v1/models/resnet"), model("resnet", None));
    assert_eq!(from_v1_path("/v1/models/:predict"), None);
    assert_eq!(from_v1_path("/v2/models/resnet/infer"), None);
}
