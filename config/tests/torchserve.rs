//! `translate` to TorchServe: the accepted forms (one caller wire or both, each payload) and
//! golden error strings for what cannot be bridged.

use ferry_config::{
    OipCallers, TorchserveApi, TorchserveBridge, TorchservePayload, TranslateDirection, parse,
};

fn with_translate(translate: &str) -> String {
    format!(
        "apiVersion: ferry/v1\nlisteners:\n  - name: main\n    address: 127.0.0.1:18080\n    routes:\n      - name: r\n        to: up\n        translate:\n{translate}clusters:\n  - name: up\n    endpoints: [127.0.0.1:18081]\n"
    )
}

fn errors(text: &str) -> Vec<String> {
    match parse("routes.yaml", text) {
        Ok(_) => panic!("expected errors, the config parsed:\n{text}"),
        Err(e) => e.to_string().lines().map(str::to_owned).collect(),
    }
}

const SIG: &str = "          signature:\n            inputs: [{ name: INPUT0, datatype: FP32, shape: [-1, 3] }]\n            outputs: [{ name: OUTPUT0, datatype: FP32, shape: [-1, 3] }]\n";

fn direction(translate: &str) -> TranslateDirection {
    let text = with_translate(translate);
    let config = parse("routes.yaml", &text).unwrap_or_else(|e| panic!("{e}\n{text}"));
    config.listeners[0].routes[0]
        .translate
        .as_ref()
        .map(|t| t.direction)
        .unwrap_or_else(|| panic!("no translate"))
}

#[test]
fn callers_apis_and_payloads() {
    let cases = [
        (
            "          from: oip-v2-rest\n          to: torchserve-rest\n",
            OipCallers::Rest,
            TorchserveApi::Rest,
            TorchservePayload::Json,
        ),
        (
            "          from: oip-v2-grpc\n          to: torchserve-grpc\n          payload: npy\n",
            OipCallers::Grpc,
            TorchserveApi::Grpc,
            TorchservePayload::Npy,
        ),
        (
            "          from: [oip-v2-rest, oip-v2-grpc]\n          to: torchserve-rest\n          payload: raw\n",
            OipCallers::Both,
            TorchserveApi::Rest,
            TorchservePayload::Raw,
        ),
    ];
    for (translate, callers, api, payload) in cases {
        assert_eq!(
            direction(&format!("{translate}{SIG}")),
            TranslateDirection::OipToTorchserve(TorchserveBridge {
                callers,
                api,
                payload
            }),
            "{translate}"
        );
    }
}

#[test]
fn unbridgeable_pairs_and_misplaced_payload() {
    assert_eq!(
        errors(&with_translate(&format!(
            "          from: [oip-v2-rest, kserve-v1]\n          to: torchserve-grpc\n{SIG}"
        ))),
        vec![
            "routes.yaml:9:31: listeners[0].routes[0].translate.from[1]: kserve-v1 → torchserve-grpc is not bridged (expected oip-v2-rest, oip-v2-grpc or a list of both)"
        ]
    );
    assert_eq!(
        errors(&with_translate(
            "          from: oip-v2-rest\n          to: oip-v2-grpc\n          payload: json\n"
        )),
        vec![
            "routes.yaml:11:20: listeners[0].routes[0].translate.payload: only applies to to: torchserve-rest or torchserve-grpc (expected it omitted)"
        ]
    );
}

#[test]
fn signature_missing_or_unfit_for_the_payload() {
    assert_eq!(
        errors(&with_translate(
            "          from: oip-v2-grpc\n          to: torchserve-rest\n"
        )),
        vec![
            "routes.yaml:8:9: listeners[0].routes[0].translate: missing signature: torchserve requests and answers carry no datatypes or shapes (expected signature: {inputs: [...], outputs: [...]})"
        ]
    );
    assert_eq!(
        errors(&with_translate(
            "          from: oip-v2-rest\n          to: torchserve-rest\n          payload: raw\n          signature:\n            inputs: [{ name: s, datatype: BYTES, shape: [-1] }]\n            outputs: [{ name: a, datatype: FP32, shape: [-1, -1] }, { name: b, datatype: FP32, shape: [1] }]\n"
        )),
        vec![
            "routes.yaml:13:43: listeners[0].routes[0].translate.signature.inputs[0].datatype: BYTES has no raw form (expected a fixed-width datatype, or payload: json)",
            "routes.yaml:14:22: listeners[0].routes[0].translate.signature.outputs: 2 outputs, but a raw answer is one array (expected one output, or payload: json)",
            "routes.yaml:14:57: listeners[0].routes[0].translate.signature.outputs[0].shape: a raw answer carries no shape, so only one dimension can be inferred (expected at most one -1, or payload: npy)",
        ]
    );
    // FP16 and BF16 fit raw (2-byte bit patterns) and FP16 fits npy (`<f2`); NumPy has no BF16.
    let halves = |payload: &str| {
        format!(
            "          from: oip-v2-rest\n          to: torchserve-rest\n          payload: {payload}\n          signature:\n            inputs: [{{ name: h, datatype: FP16, shape: [-1] }}]\n            outputs: [{{ name: b, datatype: BF16, shape: [-1] }}]\n"
        )
    };
    let raw = with_translate(&halves("raw"));
    parse("routes.yaml", &raw).unwrap_or_else(|e| panic!("{e}\n{raw}"));
    assert_eq!(
        errors(&with_translate(&halves("npy"))),
        vec![
            "routes.yaml:14:44: listeners[0].routes[0].translate.signature.outputs[0].datatype: BF16 has no npy form: NumPy has no bfloat16 dtype (expected payload: raw, which carries its 2-byte bit patterns, or json)",
        ]
    );
}
