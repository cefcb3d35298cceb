//! `prompt_prefix` affinity against a real OpenAI-compatible server: ferry in front of two
//! LiteLLM proxies whose mock model answers with the instance's name, so which replica served a
//! chat is read from the answer LiteLLM itself produced, JSON or SSE.

use std::collections::{HashMap, HashSet};
use std::net::SocketAddr;

use anyhow::Context as _;
use ferry_integration::client::{body_full, request};
use ferry_integration::litellm::{AUTHORIZATION, LiteLlm, MODEL};
use ferry_integration::{HttpClient, Reply};
use http::Method;
use serde_json::{Value, json};

use crate::support::{LISTENER, cluster, config, start};

const INSTANCES: [&str; 2] = ["instance-a", "instance-b"];
/// Bytes of prompt text in the key: the shared system prompt is longer, so user turns that
/// differ after it do not change the key.
const PREFIX: usize = 1024;

/// A 2 KiB system prompt per application.
fn system_prompt(app: &str) -> String {
    let line = format!("You are the assistant of {app}; answer briefly and cite sources. ");
    line.repeat(2048 / line.len() + 1)
}

fn chat(system: &str, user: &str, stream: bool) -> String {
    json!({
        "model": MODEL,
        "messages": [
            { "role": "system", "content": system },
            { "role": "user", "content": user },
        ],
        "stream": stream,
    })
    .to_string()
}

async fn post(client: &HttpClient, ferry: SocketAddr, body: String) -> anyhow::Result<Reply> {
    let headers = [
        ("content-type", "application/json"),
        ("authorization", AUTHORIZATION),
    ];
    let req = request(
        Method::POST,
        ferry,
        "/v1/chat/completions",
        &headers,
        body_full(body),
    )?;
    let reply = client.call(req).await?;
    anyhow::ensure!(
        reply.status == 200,
        "status {}: {}",
        reply.status,
        reply.text()
    );
    Ok(reply)
}

/// Sends one non-streamed chat and returns the instance LiteLLM answered as.
async fn served_by(
    client: &HttpClient,
    ferry: SocketAddr,
    system: &str,
    user: &str,
) -> anyhow::Result<String> {
    let reply = post(client, ferry, chat(system, user, false)).await?;
    let answer: Value = reply.json()?;
    let content = answer
        .pointer("/choices/0/message/content")
        .and_then(Value::as_str)
        .with_context(|| format!("no choices[0].message.content in {answer}"))?;
    anyhow::ensure!(
        INSTANCES.contains(&content),
        "unexpected answer {content:?}"
    );
    Ok(content.to_owned())
}

/// The text of an SSE chat stream's `delta.content`s, and whether it ended with `[DONE]`.
fn streamed_text(body: &str) -> anyhow::Result<(String, bool)> {
    let mut text = String::new();
    let mut done = false;
    for event in body.split("\n\n").filter(|e| !e.trim().is_empty()) {
        anyhow::ensure!(!done, "an event after [DONE]: {event:?}");
        let data = event
            .strip_prefix("data: ")
            .with_context(|| format!("not a data event: {event:?}"))?;
        if data == "[DONE]" {
            done = true;
            continue;
        }
        let chunk: Value = serde_json::from_str(data).with_context(|| format!("event {data}"))?;
        anyhow::ensure!(chunk["object"] == "chat.completion.chunk", "event {data}");
        if let Some(part) = chunk
            .pointer("/choices/0/delta/content")
            .and_then(Value::as_str)
        {
            text.push_str(part);
        }
    }
    Ok((text, done))
}

#[tokio::test]
async fn chats_sharing_a_system_prompt_stick_to_one_litellm_proxy() -> anyhow::Result<()> {
    let proxies = LiteLlm::start_many(&INSTANCES).await?;
    let addrs: Vec<_> = proxies.iter().map(LiteLlm::addr).collect();
    let lb = json!({
        "policy": "hash",
        "key": [format!("prompt_prefix:{PREFIX}")],
        "bounded_load": 0,
        "fallback": "p2c-ewma",
    });
    let cfg = config(
        json!([{ "name": "chat", "to": "litellm", "timeout": "30s" }]),
        json!([cluster("litellm", &addrs, lb)]),
    );
    let ferry = start(&cfg).await?;
    let addr = ferry.listener(LISTENER)?;
    let client = HttpClient::http1();

    // One application's 50 chats, a different user turn each: one replica serves them all.
    let support = system_prompt("the support desk");
    let mut seen = HashSet::new();
    for q in 0..50 {
        let user = format!("ticket {q}: my order {q} has not arrived");
        seen.insert(served_by(&client, addr, &support, &user).await?);
    }
    assert_eq!(seen.len(), 1, "the support desk's chats reached {seen:?}");
    let support_home = seen.into_iter().next().unwrap_or_default();

    // Twenty more applications, five chats each: each sticks to its replica, and between them
    // they use both (all 20 on one of two replicas by chance: 2 in a million).
    let mut homes: HashMap<String, usize> = HashMap::new();
    for app in 0..20 {
        let system = system_prompt(&format!("application {app}"));
        let mut seen = HashSet::new();
        for q in 0..5 {
            let user = format!("question {q}: what is {q} squared?");
            seen.insert(served_by(&client, addr, &system, &user).await?);
        }
        assert_eq!(seen.len(), 1, "application {app}'s chats reached {seen:?}");
        for home in seen {
            *homes.entry(home).or_default() += 1;
        }
    }
    println!("20 system prompts per LiteLLM instance: {homes:?}");
    assert_eq!(homes.len(), 2, "20 system prompts all landed on {homes:?}");

    // A streamed chat with the support desk's prompt goes where its JSON chats went, and its
    // SSE arrives whole: chunks that spell the mock's answer, then `data: [DONE]`.
    let reply = post(
        &client,
        addr,
        chat(&support, "ticket 99: stream the answer", true),
    )
    .await?;
    assert!(
        reply
            .header("content-type")
            .is_some_and(|c| c.starts_with("text/event-stream")),
        "content-type {:?}",
        reply.header("content-type")
    );
    let body = reply.text();
    let (text, done) = streamed_text(&body)?;
    assert!(done, "the stream did not end with data: [DONE]:\n{body}");
    assert!(body.ends_with("data: [DONE]\n\n"), "stream tail:\n{body}");
    assert_eq!(text, support_home, "the streamed chat went elsewhere");
    Ok(())
}
