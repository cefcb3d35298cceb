//! Binary sections streamed behind the message head: the same bytes as the whole-body
//! encoding for any chunking, the request leaves after the JSON header, and a body that does
//! not match its declared length ends the stream with an error.

use std::pin::Pin;
use std::task::{Context, Poll};

use http_body::{Body as _, Frame};
use proptest::prelude::*;
use serde_json::{Value, json};
use tokio::sync::mpsc;

use super::*;
use crate::translate::endpoint::Endpoint;

/// A body fed through a channel: a chunk per message, the end when the sender is dropped.
struct ChannelBody(mpsc::Receiver<Bytes>);

impl http_body::Body for ChannelBody {
    type Data = Bytes;
    type Error = BoxError;
    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        self.0.poll_recv(cx).map(|c| c.map(|c| Ok(Frame::data(c))))
    }
}

/// The whole body as `chunks`, with Content-Length (which opens the streaming path) or not.
fn request(
    json: &str,
    body: &[u8],
    cuts: &[usize],
    content_length: bool,
) -> Request<TranslateBody> {
    let mut chunks = VecDeque::new();
    let mut at = 0;
    for &cut in cuts.iter().chain([&body.len()]) {
        let cut = cut.clamp(at, body.len());
        chunks.push_back(Bytes::copy_from_slice(&body[at..cut]));
        at = cut;
    }
    let mut req = Request::post("/v2/models/echo/infer")
        .header("inference-header-content-length", json.len())
        .body(boxed(ChunksBody::new(chunks, None)))
        .unwrap();
    if content_length {
        req.headers_mut()
            .insert("content-length", HeaderValue::from(body.len()));
    }
    req
}

/// The translated gRPC body, or the REST answer refusing the request.
async fn translate(req: Request<TranslateBody>) -> Result<Bytes, (StatusCode, Value)> {
    let t = Translator::new(settings(Direction::RestToGrpc));
    match t.request(req).await {
        Ok((up, _)) => Ok(up.into_body().collect().await.unwrap().to_bytes()),
        Err(answer) => {
            let (status, _, b, _) = read(answer).await;
            Err((status, serde_json::from_slice(&b).unwrap()))
        }
    }
}

/// Today's whole-body encoding of the same request.
fn whole(json: &str, body: &[u8]) -> Bytes {
    let ep = Endpoint::from_rest(&http::Method::POST, "/v2/models/echo/infer").unwrap();
    let len = json.len().to_string();
    let (chunks, _) = crate::translate::rest_to_grpc::request(
        &ep,
        Bytes::copy_from_slice(body),
        Some(&len),
        1 << 20,
    )
    .unwrap();
    chunks.into_iter().flatten().collect::<Vec<u8>>().into()
}

/// An input of `dt` elements: a binary section of `n` elements, or JSON `data`.
fn input(i: usize, dt: &str, size: usize, n: usize, binary: bool, seed: u8) -> (Value, Vec<u8>) {
    let name = format!("x{i}");
    if binary {
        let section = (0..n * size)
            .map(|b| seed.wrapping_add(b as u8))
            .collect::<Vec<u8>>();
        let t = json!({"name": name, "datatype": dt, "shape": [n],
                       "parameters": {"binary_data_size": section.len()}});
        (t, section)
    } else {
        let data: Vec<Value> = (0..n)
            .map(|k| json!((k as u32 + u32::from(seed)) % 100))
            .collect();
        (
            json!({"name": name, "datatype": dt, "shape": [n], "data": data}),
            Vec::new(),
        )
    }
}

fn body_of(inputs: &[(Value, Vec<u8>)]) -> (String, Vec<u8>) {
    let doc = json!({
        "id": "r1",
        "parameters": {"binary_data_output": true},
        "inputs": inputs.iter().map(|(t, _)| t.clone()).collect::<Vec<_>>(),
        "outputs": [{"name": "x0"}],
    })
    .to_string();
    let mut body = doc.clone().into_bytes();
    for (_, s) in inputs {
        body.extend_from_slice(s);
    }
    (doc, body)
}

const TYPES: [(&str, usize); 5] = [
    ("FP32", 4),
    ("INT8", 1),
    ("UINT64", 8),
    ("FP16", 2),
    ("INT32", 4),
];

fn inputs_strategy() -> impl Strategy<Value = Vec<(usize, usize, bool, u8)>> {
    proptest::collection::vec(
        (0..TYPES.len(), 0usize..40, any::<bool>(), any::<u8>()),
        1..6,
    )
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, ..ProptestConfig::default() })]

    #[test]
    fn streamed_bytes_equal_the_whole_body_encoding(
        spec in inputs_strategy(),
        cuts in proptest::collection::vec(0usize..4096, 0..12),
    ) {
        // FP16 has no JSON form: always a section.
        let inputs: Vec<(Value, Vec<u8>)> = spec
            .iter()
            .enumerate()
            .map(|(i, &(t, n, bin, seed))| {
                let (dt, size) = TYPES[t];
                input(i, dt, size, n, bin || dt == "FP16", seed)
            })
            .collect();
        let (json, body) = body_of(&inputs);
        let mut cuts = cuts;
        cuts.sort_unstable();
        let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
        let streamed = rt.block_on(translate(request(&json, &body, &cuts, true))).unwrap();
        prop_assert_eq!(streamed, whole(&json, &body));
    }
}

#[tokio::test]
async fn several_sections_including_empty_ones_match_the_collect_path() {
    let inputs = [
        input(0, "FP32", 4, 3, true, 1),
        input(1, "INT32", 4, 0, true, 2),
        input(2, "INT32", 4, 2, false, 3),
        input(3, "INT8", 1, 5, true, 4),
        input(4, "FP32", 4, 0, true, 5),
    ];
    let (json, body) = body_of(&inputs);
    let want = whole(&json, &body);
    for cuts in [
        vec![],
        vec![1, json.len(), json.len() + 5],
        (0..body.len()).collect(),
    ] {
        assert_eq!(
            translate(request(&json, &body, &cuts, true)).await.unwrap(),
            want
        );
        assert_eq!(
            translate(request(&json, &body, &cuts, false))
                .await
                .unwrap(),
            want
        );
    }
    let seen = pb::ModelInferRequest::decode(grpc_frame::unframe(&want).unwrap()).unwrap();
    assert_eq!(seen.raw_input_contents.len(), 5);
    assert_eq!(
        &seen.raw_input_contents[0][..],
        &body[json.len()..json.len() + 12]
    );
    assert_eq!(
        &seen.raw_input_contents[2][..],
        &[3, 0, 0, 0, 4, 0, 0, 0],
        "the JSON input goes raw too"
    );
}

#[tokio::test]
async fn the_request_leaves_after_the_json_header() {
    let inputs = [input(0, "FP32", 4, 1024, true, 7)];
    let (json, body) = body_of(&inputs);
    let (tx, rx) = mpsc::channel(4);
    let req = Request::post("/v2/models/echo/infer")
        .header("inference-header-content-length", json.len())
        .header("content-length", body.len())
        .body(ChannelBody(rx).boxed_unsync())
        .unwrap();
    // The header and a little of the section: the rest has not been sent yet.
    tx.send(Bytes::copy_from_slice(&body[..json.len() + 100]))
        .await
        .unwrap();
    let t = Translator::new(settings(Direction::RestToGrpc));
    let Ok((up, _)) = t.request(req).await else {
        panic!("the request must translate");
    };
    let mut up = up.into_body();
    assert_eq!(
        up.size_hint().exact(),
        Some(whole(&json, &body).len() as u64)
    );
    let mut got = Vec::new();
    // The head and the bytes already received come out before the rest is sent.
    while got.len() < whole(&json, &body).len() - (body.len() - json.len() - 100) {
        got.extend_from_slice(&up.frame().await.unwrap().unwrap().into_data().unwrap());
    }
    tx.send(Bytes::copy_from_slice(&body[json.len() + 100..]))
        .await
        .unwrap();
    drop(tx);
    while let Some(f) = up.frame().await {
        got.extend_from_slice(&f.unwrap().into_data().unwrap());
    }
    assert_eq!(got, whole(&json, &body));
}

/// Streams a body that differs from its declared length; returns what came out before the
/// error, and the error.
async fn mismatched(declared: usize, sent: &[u8], json_len: usize) -> (usize, String) {
    let mut req = Request::post("/v2/models/echo/infer")
        .header("inference-header-content-length", json_len)
        .body(body(Bytes::copy_from_slice(sent)))
        .unwrap();
    req.headers_mut()
        .insert("content-length", HeaderValue::from(declared));
    let t = Translator::new(settings(Direction::RestToGrpc));
    let Ok((up, _)) = t.request(req).await else {
        panic!("the header is fine: the request must translate");
    };
    let mut up = up.into_body();
    let mut out = 0;
    loop {
        match up.frame().await {
            Some(Ok(f)) => out += f.into_data().unwrap().len(),
            Some(Err(e)) => return (out, e.to_string()),
            None => panic!("a mismatched body must end with an error"),
        }
    }
}

#[tokio::test]
async fn a_short_or_long_body_ends_the_stream_with_an_error() {
    let inputs = [
        input(0, "FP32", 4, 8, true, 1),
        input(1, "INT8", 1, 4, true, 2),
    ];
    let (json, body) = body_of(&inputs);
    let full = whole(&json, &body).len();

    let (out, e) = mismatched(body.len(), &body[..body.len() - 5], json.len()).await;
    assert_eq!(e, "request body ended 5 bytes short of its binary sections");
    assert!(out < full, "no complete message: {out} of {full}");

    // Content-Length says less than arrives: the sizes still add up to it, then bytes follow.
    let mut long = body.clone();
    long.extend_from_slice(b"xyz");
    let (out, e) = mismatched(body.len(), &long, json.len()).await;
    assert_eq!(e, "request body runs past its binary sections");
    assert!(out < full, "the last chunk is held back: {out} of {full}");
}

#[tokio::test]
async fn section_sizes_are_checked_against_content_length_before_anything_is_sent() {
    let (json, body) = body_of(&[input(0, "FP32", 4, 4, true, 1)]);
    // A forged size: refused from the header alone, nothing allocated for it.
    let forged = json.replace(
        "\"binary_data_size\":16",
        "\"binary_data_size\":1099511627776",
    );
    let mut forged_body = forged.clone().into_bytes();
    forged_body.extend_from_slice(&body[json.len()..]);
    let (status, e) = translate(request(&forged, &forged_body, &[], true))
        .await
        .unwrap_err();
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(
        e["error"],
        "input \"x0\": binary_data_size 1099511627776 exceeds the 16 bytes left in the body"
    );
    // Sizes that leave bytes over.
    let mut extra = body.clone();
    extra.extend_from_slice(&[0; 4]);
    let (status, e) = translate(request(&json, &extra, &[], true))
        .await
        .unwrap_err();
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(
        e["error"],
        "binary sections add up to 16 bytes but the body has 20 after the JSON header"
    );
    // Element count × datatype size against the shape.
    let wrong = json.replace("\"shape\":[4]", "\"shape\":[5]");
    let mut wrong_body = wrong.clone().into_bytes();
    wrong_body.extend_from_slice(&body[json.len()..]);
    let (status, e) = translate(request(&wrong, &wrong_body, &[], true))
        .await
        .unwrap_err();
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(
        e["error"],
        "input \"x0\": shape [5] needs 5 elements but data has 4"
    );
    let odd = json.replace("\"binary_data_size\":16", "\"binary_data_size\":15");
    let mut odd_body = odd.clone().into_bytes();
    odd_body.extend_from_slice(&body[json.len()..body.len() - 1]);
    let (_, e) = translate(request(&odd, &odd_body, &[], true))
        .await
        .unwrap_err();
    assert_eq!(
        e["error"],
        "input \"x0\": 15 bytes is not a whole number of FP32 elements (4 bytes each)"
    );
    // An Inference-Header-Content-Length past the body takes the collect path's answer.
    let mut req = request(&json, &body, &[], true);
    req.headers_mut().insert(
        "inference-header-content-length",
        HeaderValue::from(1u64 << 40),
    );
    let (status, _) = translate(req).await.unwrap_err();
    assert_eq!(status, StatusCode::BAD_REQUEST);
}

#[tokio::test]
async fn bytes_sections_take_the_collect_path_and_keep_their_checks() {
    let mut section = Vec::new();
    for s in ["ab", "", "xyz"] {
        section.extend_from_slice(&(s.len() as u32).to_le_bytes());
        section.extend_from_slice(s.as_bytes());
    }
    let t = json!({"name": "s", "datatype": "BYTES", "shape": [3],
                   "parameters": {"binary_data_size": section.len()}});
    let (json, body) = body_of(&[(t, section), input(1, "FP32", 4, 2, true, 9)]);
    let want = whole(&json, &body);
    let cuts = [3, json.len() + 2, json.len() + 9];
    assert_eq!(
        translate(request(&json, &body, &cuts, true)).await.unwrap(),
        want
    );
    // A truncated element is still caught.
    let bad = json.replace("\"shape\":[3]", "\"shape\":[4]");
    let mut bad_body = bad.clone().into_bytes();
    bad_body.extend_from_slice(&body[json.len()..]);
    let (status, e) = translate(request(&bad, &bad_body, &cuts, true))
        .await
        .unwrap_err();
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(
        e["error"],
        "input \"s\": shape [4] needs 4 elements but data has 3"
    );
}
