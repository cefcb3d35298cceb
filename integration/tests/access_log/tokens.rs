//! LLM token counts in the record: on a route with a token budget, ferry reads the answer's
//! `usage` anyway, and the line carries it as `input_tokens` and `output_tokens`.

use bytes::Bytes;
use ferry_integration::HttpClient;
use ferry_integration::client::{body_full, request};
use ferry_integration::upstream::openai::OpenAi;
use http::Method;
use serde_json::json;

use crate::support::{LISTENER, by_id, cluster, config, start, wait_lines};

#[tokio::test]
async fn token_budget_routes_log_the_answers_usage() -> anyhow::Result<()> {
    let model = OpenAi::start().await?;
    let dir = tempfile::tempdir()?;
    let path = dir.path().join("tokens.json");
    let ferry = start(&config(
        json!([{ "path": path.to_str().unwrap() }]),
        json!([
            { "name": "budgeted", "match": { "path": { "prefix": "/v1/chat" } }, "to": "model",
              "rate_limit": [{ "tokens": 100000, "per": "1m" }] },
            { "name": "free", "to": "model" },
        ]),
        json!([cluster("model", model.addr(), false)]),
    ))
    .await?;
    let addr = ferry.listener(LISTENER)?;
    let client = HttpClient::http1();
    let chat = |id: &'static str, path: &'static str, stream: bool| {
        let body = json!({ "model": "m", "messages": [{ "role": "user", "content": "hi" }], "stream": stream });
        request(
            Method::POST,
            addr,
            path,
            &[("x-request-id", id), ("content-type", "application/json")],
            body_full(Bytes::from(body.to_string())),
        )
    };
    for (id, path, stream) in [
        ("json", "/v1/chat/completions", false),
        ("sse", "/v1/chat/completions", true),
        ("free", "/v1/other", false),
    ] {
        let reply = client.call(chat(id, path, stream)?).await?;
        assert_eq!(reply.status, 200, "{id}: {}", reply.text());
    }
    let lines = wait_lines(&path, 3).await?;
    let tokens = |id: &str| {
        by_id(&lines, id).map(|l| {
            (
                l.get("input_tokens").cloned(),
                l.get("output_tokens").cloned(),
            )
        })
    };
    // The stand-in reports 10 prompt and 20 completion tokens; a streamed answer in its last
    // chunk (ferry asks for it with `stream_options.include_usage`).
    assert_eq!(tokens("json")?, (Some(json!(10)), Some(json!(20))));
    assert_eq!(tokens("sse")?, (Some(json!(10)), Some(json!(20))));
    // No budget on the route: `usage` is not read, the fields are absent (not invented).
    assert_eq!(tokens("free")?, (None, None));
    Ok(())
}
