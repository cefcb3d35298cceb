//! `translate` between serving protocols: the accepted forms and golden error strings.

use ferry_config::{OipCallers, TranslateDirection, parse};

fn with_route(route: &str) -> String {
    format!(
        "apiVersion: ferry/v1\nlisteners:\n  - name: main\n    address: 127.0.0.1:18080\n    routes:\n      - name: r\n{route}clusters:\n  - name: up\n    endpoints: [127.0.0.1:18081]\n"
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
    let route = &config.listeners[0].routes[0];
    route
        .translate
        .clone()
        .unwrap_or_else(|| panic!("no translate"))
}

const SIGNATURE: &str = "        translate:\n          from: oip-v2-rest\n          to: kserve-v1\n          signature:\n            inputs: [{ name: x, datatype: FP32, shape: [-1, 4] }]\n            outputs: [{ name: y, datatype: INT64, shape: [-1] }]\n";

#[test]
fn protocol_names_and_aliases() {
    let t = translate_of(&with_route(&format!("        to: up\n{SIGNATURE}")));
    assert_eq!(
        t.direction,
        TranslateDirection::OipToKserveV1(OipCallers::Rest)
    );
    let sig = t.signature.unwrap_or_else(|| panic!("no signature"));
    assert_eq!(sig.inputs[0].shape, vec![-1, 4]);
    assert_eq!(sig.outputs[0].datatype, "INT64");

    // OIP gRPC callers of a V1 model, alone or beside REST callers on one route.
    for (from, callers) in [
        ("oip-v2-grpc", OipCallers::Grpc),
        ("[oip-v2-rest, oip-v2-grpc]", OipCallers::Both),
    ] {
        let yaml = SIGNATURE.replace("from: oip-v2-rest", &format!("from: {from}"));
        let t = translate_of(&with_route(&format!("        to: up\n{yaml}")));
        assert_eq!(t.direction, TranslateDirection::OipToKserveV1(callers));
        assert!(t.signature.is_some());
    }

    let t = translate_of(&with_route(
        "        to: up\n        translate: { from: [kserve-v1], to: oip-v2-rest, signature: { inputs: [{ name: x, datatype: BYTES, shape: [-1] }] } }\n",
    ));
    assert_eq!(t.direction, TranslateDirection::KserveV1ToOipRest);

    // The old form and the protocol names mean the same.
    for (yaml, want) in [
        (
            "{ from: rest, to: grpc, protocol: oip-v2 }",
            TranslateDirection::RestToGrpc,
        ),
        ("{ from: rest, to: grpc }", TranslateDirection::RestToGrpc),
        (
            "{ from: oip-v2-rest, to: oip-v2-grpc }",
            TranslateDirection::RestToGrpc,
        ),
        ("{ from: grpc, to: rest }", TranslateDirection::GrpcToRest),
        (
            "{ from: oip-v2-grpc, to: oip-v2-rest }",
            TranslateDirection::GrpcToRest,
        ),
    ] {
        let t = translate_of(&with_route(&format!(
            "        to: up\n        translate: {yaml}\n"
        )));
        assert_eq!(t.direction, want, "{yaml}");
        assert_eq!(t.signature, None);
    }
}

#[test]
fn pairs_not_bridged_yet() {
    let want = |at: &str, from: &str, to: &str| {
        format!(
            "routes.yaml:{at}: listeners[0].routes[0].translate.{}: {from} → {to} is not bridged yet (expected one of: oip-v2-rest → oip-v2-grpc, oip-v2-grpc → oip-v2-rest, oip-v2-rest → kserve-v1, kserve-v1 → oip-v2-rest, kserve-v1 → oip-v2-grpc, tfserving-grpc → oip-v2-rest, tfserving-grpc → oip-v2-grpc, oip-v2-rest → tfserving-grpc, oip-v2-grpc → tfserving-grpc, oip-v2-rest or oip-v2-grpc → torchserve-rest or torchserve-grpc)",
            if from.starts_with("t") { "from" } else { "to" }
        )
    };
    assert_eq!(
        errors(&with_route(
            "        to: up\n        translate: { from: torchserve-rest, to: oip-v2-grpc }\n"
        )),
        vec![want("8:28", "torchserve-rest", "oip-v2-grpc")]
    );
    assert_eq!(
        errors(&with_route(
            "        to: up\n        translate: { from: torchserve-grpc, to: oip-v2-grpc }\n"
        )),
        vec![want("8:28", "torchserve-grpc", "oip-v2-grpc")]
    );
    assert_eq!(
        errors(&with_route(
            "        to: up\n        translate: { from: kserve-v1, to: tfserving-grpc }\n"
        )),
        vec![want("8:43", "kserve-v1", "tfserving-grpc")]
    );
    assert_eq!(
        errors(&with_route(
            "        to: up\n        translate: { from: [kserve-v1, tfserving-grpc], to: oip-v2-rest }\n"
        )),
        vec![
            "routes.yaml:8:28: listeners[0].routes[0].translate.from: a list of caller protocols is not bridged yet (expected one protocol name)"
        ]
    );
    assert_eq!(
        errors(&with_route(
            "        to: up\n        translate: { from: [oip-v2-rest, kserve-v1], to: kserve-v1 }\n"
        )),
        vec![
            "routes.yaml:8:42: listeners[0].routes[0].translate.from[1]: kserve-v1 → kserve-v1 is not bridged (expected oip-v2-rest, oip-v2-grpc or a list of both)"
        ]
    );
    assert_eq!(
        errors(&with_route(
            "        to: up\n        translate: { from: kserve-v1, to: oip-v2-rest, protocol: oip-v2 }\n"
        )),
        vec![
            "routes.yaml:8:66: listeners[0].routes[0].translate.protocol: applies only to from/to rest or grpc (expected it omitted with protocol names)"
        ]
    );
}

#[test]
fn signature_missing_or_unfit() {
    assert_eq!(
        errors(&with_route(
            "        to: up\n        translate: { from: oip-v2-rest, to: kserve-v1 }\n"
        )),
        vec![
            "routes.yaml:8:9: listeners[0].routes[0].translate: missing signature: kserve-v1 answers carry no datatypes or shapes (expected signature: {inputs: [...], outputs: [...]})"
        ]
    );
    assert_eq!(
        errors(&with_route(
            "        to: up\n        translate:\n          from: oip-v2-rest\n          to: kserve-v1\n          signature:\n            inputs: [{ name: x, datatype: FP16, shape: [0] }, { name: x, datatype: F32, shape: [1] }]\n"
        )),
        vec![
            "routes.yaml:12:13: listeners[0].routes[0].translate.signature: no outputs: kserve-v1 answers carry no datatypes or shapes (expected signature: {inputs: [...], outputs: [...]})",
            "routes.yaml:12:57: listeners[0].routes[0].translate.signature.inputs[0].shape[0]: invalid dimension 0 (expected a size >= 1, or -1 for any)",
            r#"routes.yaml:12:71: listeners[0].routes[0].translate.signature.inputs[1].name: empty or duplicate tensor name "x" (expected unique names)"#,
            r#"routes.yaml:12:84: listeners[0].routes[0].translate.signature.inputs[1].datatype: "F32" is not a datatype (expected one of: BOOL, UINT8, UINT16, UINT32, UINT64, INT8, INT16, INT32, INT64, FP16, BF16, FP32, FP64, BYTES)"#,
        ]
    );
    // V1 callers' tensors go to the v2 server as JSON `data`, which has no FP16 form.
    assert_eq!(
        errors(&with_route(
            "        to: up\n        translate: { from: kserve-v1, to: oip-v2-rest, signature: { inputs: [{ name: x, datatype: FP16, shape: [-1] }] } }\n"
        )),
        vec![
            r#"routes.yaml:8:99: listeners[0].routes[0].translate.signature.inputs[0].datatype: "FP16" has no v2 JSON form to carry kserve-v1 callers' tensors (expected one of: BOOL, UINT8, UINT16, UINT32, UINT64, INT8, INT16, INT32, INT64, FP32, FP64, BYTES)"#,
        ]
    );
    assert_eq!(
        errors(&with_route(
            "        to: up\n        translate: { from: kserve-v1, to: oip-v2-rest, signature: { inputs: [{ name: x, datatype: FP32, shape: [-1] }], outputs: [{ name: y, datatype: FP32, shape: [-1] }] } }\n"
        )),
        vec![
            "routes.yaml:8:130: listeners[0].routes[0].translate.signature.outputs: a v2 server's answer carries its own datatypes and shapes (expected only signature.inputs for kserve-v1 callers)"
        ]
    );
    assert_eq!(
        errors(&with_route(
            "        to: up\n        translate: { from: rest, to: grpc, signature: { inputs: [] } }\n"
        )),
        vec![
            "routes.yaml:8:55: listeners[0].routes[0].translate.signature: only applies to bridging with kserve-v1, tfserving-grpc or torchserve (expected it omitted)"
        ]
    );
}
