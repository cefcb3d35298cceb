//! `translate` with `tfserving-grpc` on either side, and `kserve-v1` callers of an OIP gRPC
//! upstream: the accepted forms and golden error strings.

use ferry_config::{TranslateDirection, parse};

fn with_route(route: &str) -> String {
    format!(
        "apiVersion: ferry/v1\nlisteners:\n  - name: main\n    address: 127.0.0.1:18080\n    routes:\n      - name: r\n        to: up\n{route}clusters:\n  - name: up\n    endpoints: [127.0.0.1:18081]\n"
    )
}

fn errors(text: &str) -> Vec<String> {
    match parse("routes.yaml", text) {
        Ok(_) => panic!("expected errors, the config parsed:\n{text}"),
        Err(e) => e.to_string().lines().map(str::to_owned).collect(),
    }
}

fn translate_of(text: &str) -> ferry_config::Translate {
    let config = parse("routes.yaml", text).unwrap_or_else(|e| panic!("{e}\n{text}"));
    config.listeners[0].routes[0]
        .translate
        .clone()
        .unwrap_or_else(|| panic!("no translate"))
}

#[test]
fn pairs_with_tfserving_grpc_and_their_labels() {
    for (from, to, want) in [
        (
            "tfserving-grpc",
            "oip-v2-rest",
            TranslateDirection::TfservingGrpcToOipRest,
        ),
        (
            "tfserving-grpc",
            "oip-v2-grpc",
            TranslateDirection::TfservingGrpcToOipGrpc,
        ),
        (
            "oip-v2-rest",
            "tfserving-grpc",
            TranslateDirection::OipRestToTfservingGrpc,
        ),
        (
            "oip-v2-grpc",
            "tfserving-grpc",
            TranslateDirection::OipGrpcToTfservingGrpc,
        ),
    ] {
        let t = translate_of(&with_route(&format!(
            "        translate: {{ from: {from}, to: {to} }}\n"
        )));
        assert_eq!(t.direction, want);
        assert_eq!(t.direction.names(), (from, to));
        assert_eq!(t.direction.label(), format!("{from}->{to}"));
        // No signature needed: a TensorProto carries its dtype and shape.
        assert_eq!(t.signature, None);
    }
    // With a signature every OIP datatype fits, FP16 and BF16 included (`half_val`).
    let t = translate_of(&with_route(
        "        translate:\n          from: tfserving-grpc\n          to: oip-v2-rest\n          signature:\n            inputs: [{ name: x, datatype: FP16, shape: [-1, 2] }, { name: s, datatype: BYTES, shape: [-1] }]\n            outputs: [{ name: y, datatype: BF16, shape: [-1] }]\n",
    ));
    let sig = t.signature.unwrap_or_else(|| panic!("no signature"));
    assert_eq!(sig.inputs[0].datatype, "FP16");
    assert_eq!(sig.outputs[0].datatype, "BF16");
}

#[test]
fn kserve_v1_callers_of_an_oip_grpc_upstream() {
    let t = translate_of(&with_route(
        "        translate: { from: kserve-v1, to: oip-v2-grpc, signature: { inputs: [{ name: x, datatype: FP32, shape: [-1, 4] }] } }\n",
    ));
    assert_eq!(t.direction, TranslateDirection::KserveV1ToOipGrpc);
    assert_eq!(t.direction.label(), "kserve-v1->oip-v2-grpc");
    assert_eq!(
        errors(&with_route(
            "        translate: { from: kserve-v1, to: oip-v2-grpc }\n"
        )),
        vec![
            "routes.yaml:8:9: listeners[0].routes[0].translate: missing signature: kserve-v1 requests carry no datatypes (expected signature: {inputs: [...]})"
        ]
    );
}

#[test]
fn unfit_tfserving_signatures() {
    assert_eq!(
        errors(&with_route(
            "        translate: { from: tfserving-grpc, to: oip-v2-grpc, signature: { inputs: [], outputs: [{ name: y, datatype: FP8, shape: [-2] }] } }\n"
        )),
        vec![
            "routes.yaml:8:72: listeners[0].routes[0].translate.signature: no inputs: a signature lists the model's inputs (expected signature: {inputs: [...], outputs: [...]}, or no signature)",
            r#"routes.yaml:8:117: listeners[0].routes[0].translate.signature.outputs[0].datatype: "FP8" is not a datatype (expected one of: BOOL, UINT8, UINT16, UINT32, UINT64, INT8, INT16, INT32, INT64, FP16, BF16, FP32, FP64, BYTES)"#,
            "routes.yaml:8:130: listeners[0].routes[0].translate.signature.outputs[0].shape[0]: invalid dimension -2 (expected a size >= 1, or -1 for any)",
        ]
    );
    // `upstream_binary` applies where the OIP gRPC → REST translator runs below the bridge.
    let t = translate_of(&with_route(
        "        translate: { from: tfserving-grpc, to: oip-v2-rest, upstream_binary: false }\n",
    ));
    assert_eq!(t.upstream_binary, ferry_config::UpstreamBinary::Off);
    assert_eq!(
        errors(&with_route(
            "        translate: { from: oip-v2-rest, to: tfserving-grpc, upstream_binary: false }\n"
        )),
        vec![
            "routes.yaml:8:78: listeners[0].routes[0].translate.upstream_binary: only applies to from: grpc, to: rest (expected it omitted)"
        ]
    );
}

#[test]
fn the_effective_config_of_each_pair_is_itself_valid() {
    for yaml in [
        "        translate: { from: tfserving-grpc, to: oip-v2-rest, upstream_binary: false }\n",
        "        translate: { from: oip-v2-grpc, to: tfserving-grpc, signature: { inputs: [{ name: x, datatype: BF16, shape: [-1] }] } }\n",
        "        translate: { from: kserve-v1, to: oip-v2-grpc, signature: { inputs: [{ name: x, datatype: FP32, shape: [-1] }] } }\n",
    ] {
        let config = parse("routes.yaml", &with_route(yaml)).unwrap_or_else(|e| panic!("{e}"));
        let text = serde_json::to_string_pretty(&*config.effective_json).unwrap();
        let again = parse("effective.json", &text).unwrap_or_else(|e| panic!("{e}\n{text}"));
        assert_eq!(again.effective_json, config.effective_json);
        let t = &again.listeners[0].routes[0].translate;
        assert_eq!(
            t.as_ref().map(|t| t.direction),
            config.listeners[0].routes[0]
                .translate
                .as_ref()
                .map(|t| t.direction)
        );
    }
}
