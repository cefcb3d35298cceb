//! An OpenAI-compatible model server stand-in: `POST /v1/chat/completions` answers with a fixed
//! `usage` (10 prompt + 20 completion tokens); with `"stream": true` it answers SSE chunks and,
//! when the request asked for it (`stream_options.include_usage`), a final usage chunk before
//! `data: [DONE]`, as OpenAI and vLLM do. It records whether each request asked for usage.

use std::sync::{Arc, Mutex};

use http::{Request, Response, StatusCode};
use http_body_util::BodyExt as _;
use hyper::body::Incoming;

use super::serve::{Protocols, RespBody, ServerHandle, serve};
use super::{full, json};

/// Tokens every answer reports.
pub const USAGE_TOTAL: u64 = 30;

/// A running stand-in.
#[derive(Debug)]
pub struct OpenAi {
    server: ServerHandle,
    asked_for_usage: Arc<Mutex<Vec<bool>>>,
}

impl OpenAi {
    /// Starts one on 127.0.0.1:0.
    pub async fn start() -> anyhow::Result<OpenAi> {
        let asked = Arc::new(Mutex::new(Vec::new()));
        let seen = asked.clone();
        let server = serve(Protocols::Auto, move |req| {
            let seen = seen.clone();
            async move { answer(req, &seen).await }
        })
        .await?;
        Ok(OpenAi {
            server,
            asked_for_usage: asked,
        })
    }

    /// The bound address.
    pub fn addr(&self) -> std::net::SocketAddr {
        self.server.addr()
    }

    /// Per streamed request so far: whether it asked for usage.
    pub fn asked_for_usage(&self) -> Vec<bool> {
        self.asked_for_usage
            .lock()
            .map(|v| v.clone())
            .unwrap_or_default()
    }
}

async fn answer(req: Request<Incoming>, seen: &Mutex<Vec<bool>>) -> Response<RespBody> {
    let Ok(body) = req.into_body().collect().await else {
        return json(
            StatusCode::BAD_REQUEST,
            &serde_json::json!({"error": "body"}),
        );
    };
    let doc: serde_json::Value = serde_json::from_slice(&body.to_bytes()).unwrap_or_default();
    let usage = serde_json::json!({
        "prompt_tokens": 10, "completion_tokens": 20, "total_tokens": USAGE_TOTAL
    });
    if doc["stream"] != serde_json::Value::Bool(true) {
        return json(
            StatusCode::OK,
            &serde_json::json!({
                "id": "c1", "object": "chat.completion",
                "choices": [{"index": 0, "message": {"role": "assistant", "content": "hi"}}],
                "usage": usage,
            }),
        );
    }
    let include = doc["stream_options"]["include_usage"] == serde_json::Value::Bool(true);
    if let Ok(mut v) = seen.lock() {
        v.push(include);
    }
    let mut out = String::new();
    for word in ["hel", "lo"] {
        let chunk = serde_json::json!({"id": "c1", "object": "chat.completion.chunk",
            "choices": [{"index": 0, "delta": {"content": word}}]});
        out.push_str(&format!("data: {chunk}\n\n"));
    }
    if include {
        let chunk = serde_json::json!({"id": "c1", "object": "chat.completion.chunk",
            "choices": [], "usage": usage});
        out.push_str(&format!("data: {chunk}\n\n"));
    }
    out.push_str("data: [DONE]\n\n");
    full(StatusCode::OK, "text/event-stream", out)
}
