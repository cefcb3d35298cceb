//! Open Inference Protocol REST bodies that must not become a gRPC `ModelInfer` upstream,
//! against one ferry translating REST → gRPC: numbers out of range for their tensor type
//! (issue 18 item 4), deep nesting, integers too large, forged binary-extension sizes, huge
//! shapes, negative dimensions, unknown datatypes and invalid UTF-8. Each is a 400 naming the
//! fault, the connection stays usable, and the upstream sees nothing; two valid requests (JSON
//! and binary) show the route does reach the upstream, with the values the caller wrote.

mod validate;

use serde_json::json;

use crate::harness::{PATIENCE, Suite};
use crate::raw_h1::H1;

/// The rpc every infer request becomes.
const MODEL_INFER: &str = "/inference.GRPCInferenceService/ModelInfer";
/// 1.5 and 2.5 as little-endian FP32, as the upstream must receive them.
const FP32_1_5_2_5: [u8; 8] = [0, 0, 0xc0, 0x3f, 0, 0, 0x20, 0x40];

pub(super) struct Case {
    /// Also the model name, so the upstream's log can be searched for it.
    pub(super) name: &'static str,
    pub(super) body: Vec<u8>,
    /// `Inference-Header-Content-Length`, for the binary extension.
    pub(super) header_length: Option<String>,
    pub(super) status: u16,
    /// Text the answer must contain (the tensor, the element, the fault).
    mentions: &'static [&'static str],
}

/// An infer body with one input `INPUT0`, its fields written verbatim.
fn infer(datatype: &str, shape: &str, data: &str) -> Vec<u8> {
    format!(r#"{{"inputs":[{{"name":"INPUT0","datatype":"{datatype}","shape":{shape},"data":{data}}}]}}"#)
        .into_bytes()
}

fn bad(name: &'static str, body: Vec<u8>, mentions: &'static [&'static str]) -> Case {
    Case {
        name,
        body,
        header_length: None,
        status: 400,
        mentions,
    }
}

/// A binary-extension body: the JSON header declares `declared` bytes for INPUT0 (two FP32),
/// `Inference-Header-Content-Length` says `header_length`, and `tail` follows the JSON.
fn binary(
    name: &'static str,
    declared: usize,
    header_length: Option<&str>,
    tail: &[u8],
    status: u16,
    mentions: &'static [&'static str],
) -> Case {
    let json = json!({"inputs": [{
        "name": "INPUT0", "datatype": "FP32", "shape": [2],
        "parameters": { "binary_data_size": declared },
    }]})
    .to_string();
    let length = header_length.map_or_else(|| json.len().to_string(), str::to_owned);
    let mut body = json.into_bytes();
    body.extend_from_slice(tail);
    Case {
        name,
        body,
        header_length: Some(length),
        status,
        mentions,
    }
}

fn cases() -> Vec<Case> {
    let fp32_digits = format!("[1{}]", "0".repeat(99_999));
    let fp32_fraction = format!("[1.0, 0.{}1]", "0".repeat(99_998));
    let fp64_big = format!("[0.{}1e100000]", "0".repeat(1000));
    let nested = format!("{}1{}", "[".repeat(100_000), "]".repeat(100_000));
    // A field the parser skips must be as bounded as one it decodes.
    let nested_field = format!(
        r#"{{"extra":{},"inputs":[]}}"#,
        format_args!("{}0{}", "[".repeat(10_000), "]".repeat(10_000))
    );
    let mut bad_utf8 = br#"{"inputs":[{"name":"IN"#.to_vec();
    bad_utf8.extend_from_slice(b"\xff\xfe");
    bad_utf8.extend_from_slice(br#"","datatype":"FP32","shape":[1],"data":[1.0]}]}"#);
    vec![
        // Issue 18 item 4: the model would get ±inf or 0, values the caller did not write.
        bad(
            "fp32-100k-digits",
            infer("FP32", "[1]", &fp32_digits),
            &["INPUT0", "element 0", "out of range for FP32"],
        ),
        bad(
            "fp32-100k-digit-fraction",
            infer("FP32", "[2]", &fp32_fraction),
            &["INPUT0", "element 1", "out of range for FP32"],
        ),
        bad(
            "fp64-1e100000",
            infer("FP64", "[1]", &fp64_big),
            &["INPUT0", "element 0", "out of range for FP64"],
        ),
        bad(
            "fp64-1e-100000",
            infer("FP64", "[2]", "[1.0, 1e-100000]"),
            &["INPUT0", "element 1", "out of range for FP64"],
        ),
        bad(
            "int64-too-large",
            infer("INT64", "[1]", "[99999999999999999999999]"),
            &[
                "INPUT0",
                "element 0",
                "99999999999999999999999 is out of range for INT64",
            ],
        ),
        // Hostile shapes of JSON itself.
        bad(
            "nesting-100k-in-data",
            infer("FP32", "[1]", &nested),
            &["INPUT0", "recursion limit"],
        ),
        bad(
            "nesting-10k-in-unknown-field",
            nested_field.into_bytes(),
            &["recursion limit"],
        ),
        bad("invalid-utf8", bad_utf8, &["UTF-8"]),
        // Shapes and datatypes.
        bad(
            "huge-shape",
            infer("FP32", "[1000000000000, 1000000000000]", "[1.0]"),
            &["INPUT0"],
        ),
        bad(
            "negative-dim",
            infer("FP32", "[-3]", "[1.0, 2.0, 3.0]"),
            &["INPUT0"],
        ),
        bad(
            "unknown-datatype",
            infer("FP128", "[1]", "[1.0]"),
            &["FP128"],
        ),
        // Forged binary-extension sizes.
        binary(
            "header-length-beyond-body",
            8,
            Some("100000"),
            &FP32_1_5_2_5,
            400,
            &["Inference-Header-Content-Length"],
        ),
        binary(
            "header-length-not-a-number",
            8,
            Some("abc"),
            &FP32_1_5_2_5,
            400,
            &["Inference-Header-Content-Length"],
        ),
        binary(
            "header-length-cuts-json",
            8,
            Some("10"),
            &FP32_1_5_2_5,
            400,
            &[],
        ),
        binary(
            "binary-size-beyond-body",
            1_000_000,
            None,
            &FP32_1_5_2_5,
            400,
            &["INPUT0"],
        ),
        // Valid: these reach the upstream, with the caller's values.
        Case {
            name: "valid-json",
            body: infer("FP32", "[2]", "[1.5, 2.5]"),
            header_length: None,
            status: 200,
            mentions: &[],
        },
        binary("valid-binary", 8, None, &FP32_1_5_2_5, 200, &[]),
    ]
}

#[tokio::test]
async fn oip_bad_input() -> anyhow::Result<()> {
    let routes = json!([
        {
            "name": "checked",
            "match": { "authority": validate::AUTHORITY },
            "validate_tensors": validate::settings(),
            "to": "up",
        },
        {
            "name": "oip",
            "match": { "path": { "prefix": "/v2/" } },
            "translate": { "from": "rest", "to": "grpc", "protocol": "oip-v2" },
            "to": "up",
        },
        { "name": "all", "to": "up" },
    ]);
    let mut suite = Suite::start(routes).await?;
    for c in cases() {
        let outcome = run(&mut suite, &c).await;
        suite.record(c.name, outcome).await?;
    }
    for c in cases() {
        let outcome = validate::run(&mut suite, &c).await;
        suite
            .record(&format!("{} (validate_tensors)", c.name), outcome)
            .await?;
    }
    suite.finish().await
}

async fn run(suite: &mut Suite, c: &Case) -> anyhow::Result<()> {
    let path = format!("/v2/models/{}/infer", c.name);
    let text = exchange(suite, c, "x.test", &path, c.status).await?;
    let missing: Vec<_> = c.mentions.iter().filter(|m| !text.contains(**m)).collect();
    suite.check(
        c.name,
        missing.is_empty(),
        format_args!("answer {text:?} does not mention {missing:?}"),
    );
    let reached: Vec<_> = suite
        .recorder
        .under(MODEL_INFER)
        .into_iter()
        .filter(|r| contains(&r.body, c.name.as_bytes()))
        .collect();
    if c.status == 200 {
        let values = reached.len() == 1 && contains(&reached[0].body, &FP32_1_5_2_5);
        suite.check(
            c.name,
            values,
            format_args!(
                "{} ModelInfer upstream, want 1 carrying 1.5 and 2.5",
                reached.len()
            ),
        );
    } else {
        suite.check(
            c.name,
            reached.is_empty(),
            format_args!("{} ModelInfer reached the upstream", reached.len()),
        );
    }
    Ok(())
}

/// POSTs `c`'s body to `path` with `Host: host` on a new connection, checks the status is
/// `status` and that the connection then serves a normal request (a refused body was read
/// whole); returns the answer's text (cut at 300 characters).
async fn exchange(
    suite: &mut Suite,
    c: &Case,
    host: &str,
    path: &str,
    status: u16,
) -> anyhow::Result<String> {
    let mut head = format!(
        "POST {path} HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n",
        c.body.len()
    );
    if let Some(n) = &c.header_length {
        head.push_str(&format!("Inference-Header-Content-Length: {n}\r\n"));
    }
    head.push_str("\r\n");
    let mut raw = head.into_bytes();
    raw.extend_from_slice(&c.body);
    let mut conn = H1::connect(suite.addr()?).await?;
    conn.send(&raw, PATIENCE).await;
    let answer = conn.answer(PATIENCE).await?;
    let got = answer.as_ref().map_or(0, |a| a.status);
    let text: String = answer
        .map(|a| a.text())
        .unwrap_or_default()
        .chars()
        .take(300)
        .collect();
    suite.check(
        c.name,
        got == status,
        format_args!("{host}: status {got}, want {status} ({text})"),
    );
    let next = conn.next_status(c.name, PATIENCE).await?;
    suite.check(
        c.name,
        next == 200,
        format_args!("{host}: next request on the connection: {next}"),
    );
    Ok(text)
}

fn contains(hay: &[u8], needle: &[u8]) -> bool {
    hay.windows(needle.len()).any(|w| w == needle)
}
