//! Generic REST → gRPC transcoding end to end: the real ferry binary in front of a real grpcio
//! server (`peers/transcode/library_server.py`, grpcio and grpcio-tools pinned in
//! `peers/install.sh`), with the descriptor set built by the real `grpc_tools.protoc`.
//! A missing peer fails the test; nothing is skipped.

mod library;

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use anyhow::Context as _;
use bytes::BytesMut;
use ferry_integration::client::{body_full, request};
use ferry_integration::{Admin, Ferry, HttpClient, Reply, eventually};
use http::{Method, StatusCode};
use http_body_util::BodyExt as _;
use serde_json::{Value, json};

use self::library::{Library, grpc_get_book, library_proto, protoc};

const PATIENCE: Duration = Duration::from_secs(30);

/// A ferry whose one route transcodes with `descriptor`, in front of `library`.
async fn ferry(library: &Library, descriptor: &Path, extra: &str) -> anyhow::Result<Ferry> {
    let yaml = format!(
        "apiVersion: ferry/v1\nadmin: {{ address: 127.0.0.1:0 }}\nlisteners:\n  - name: main\n    address: 127.0.0.1:0\n    routes:\n      - name: library\n        translate: {{ from: rest, to: grpc, protocol: descriptor, descriptor_set: {}{extra} }}\n        to: library\nclusters:\n  - name: library\n    endpoints: [{}]\n    protocol: h2\n",
        descriptor.display(),
        library.addr
    );
    Ferry::start(&yaml).await
}

async fn call(ferry: &Ferry, method: Method, path: &str, body: &str) -> anyhow::Result<Reply> {
    let addr = ferry.only_listener()?;
    let headers: &[(&str, &str)] = if body.is_empty() {
        &[]
    } else {
        &[("content-type", "application/json")]
    };
    HttpClient::http1()
        .call(request(
            method,
            addr,
            path,
            headers,
            body_full(body.to_owned()),
        )?)
        .await
}

async fn json_ok(ferry: &Ferry, method: Method, path: &str, body: &str) -> anyhow::Result<Value> {
    let reply = call(ferry, method.clone(), path, body).await?;
    anyhow::ensure!(
        reply.status == StatusCode::OK,
        "{method} {path}: {} {}",
        reply.status,
        reply.text()
    );
    reply.json()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn verbs_path_variables_query_parameters_and_json_mapping() -> anyhow::Result<()> {
    let library = Library::start().await?;
    let ferry = ferry(&library, &library.descriptor, "").await?;

    // GET, a multi-segment path variable; int64 as a string, enum by name, Timestamp, uint64.
    let book = json_ok(&ferry, Method::GET, "/v1/shelves/s1/books/b%202", "").await?;
    assert_eq!(
        book,
        json!({"title": "name=shelves/s1/books/b 2", "genre": "FICTION",
               "published": "2024-05-06T07:08:09Z", "pages": "18446744073709551615"})
    );
    // The additional binding, with an int64 path variable.
    let book = json_ok(&ferry, Method::GET, "/v1/books/9007199254740993", "").await?;
    assert_eq!(book["id"], "9007199254740993");
    // Query parameters: repeated, nested, enum, int64.
    let list = json_ok(
        &ferry,
        Method::GET,
        "/v1/shelves/top/books?tags=a&tags=b&filter.author=Le+Guin&genre=SCIENCE&page_size=7&count=-5",
        "",
    )
    .await?;
    assert_eq!(
        list,
        json!({"books": [
            {"id": "-5", "title": "top:a", "genre": "SCIENCE", "tags": ["Le Guin"]},
            {"id": "-5", "title": "top:b", "genre": "SCIENCE", "tags": ["Le Guin"]}],
            "nextPageToken": "7"})
    );
    // POST with body: "book"; json_name (`shelf`) and the original name both accepted.
    let created = json_ok(
        &ferry,
        Method::POST,
        "/v1/shelves/s9/books",
        r#"{"id": "12", "title": "Dune", "genre": "SCIENCE", "published": "1965-08-01T00:00:00Z", "readTime": "90s", "rating": 5}"#,
    )
    .await?;
    assert_eq!(
        created,
        json!({"id": "12", "title": "Dune", "genre": "SCIENCE", "published": "1965-08-01T00:00:00Z",
               "readTime": "90s", "rating": 5, "shelf": "s9"})
    );
    // PUT with body: "*" (the path wins for `id`), PATCH, DELETE.
    let put = json_ok(
        &ferry,
        Method::PUT,
        "/v1/books/3",
        r#"{"id": "99", "title": "T", "extra": {"k": [1, "x"]}}"#,
    )
    .await?;
    assert_eq!(
        put,
        json!({"id": "3", "title": "T", "extra": {"k": [1.0, "x"]}})
    );
    let patched = json_ok(&ferry, Method::PATCH, "/v1/books/4", r#"{"title": "U"}"#).await?;
    assert_eq!(patched, json!({"id": "4", "title": "patched U"}));
    assert_eq!(
        json_ok(&ferry, Method::DELETE, "/v1/books/5", "").await?,
        json!({})
    );
    // A verb, and response_body picking one field.
    let archived = json_ok(&ferry, Method::POST, "/v1/books/6:archive", "{}").await?;
    assert_eq!(archived, json!("archived 6"));

    // Unknown field: 400 naming it; the upstream is not called.
    let r = call(
        &ferry,
        Method::PATCH,
        "/v1/books/4",
        r#"{"title": "U", "colour": "red"}"#,
    )
    .await?;
    assert_eq!(r.status, StatusCode::BAD_REQUEST, "{}", r.text());
    assert!(r.text().contains("colour"), "{}", r.text());
    let r = call(&ferry, Method::GET, "/v1/books/4?colour=red", "").await?;
    assert_eq!(r.status, StatusCode::BAD_REQUEST, "{}", r.text());
    // Error mapping.
    let r = call(&ferry, Method::GET, "/v1/shelves/s/books/missing", "").await?;
    assert_eq!(r.status, StatusCode::NOT_FOUND);
    assert_eq!(
        r.json::<Value>()?,
        json!({"error": "no book shelves/s/books/missing", "code": 5})
    );
    let r = call(&ferry, Method::DELETE, "/v1/books/409", "").await?;
    assert_eq!(r.status, StatusCode::CONFLICT);
    assert_eq!(
        r.json::<Value>()?,
        json!({"error": "book 409 is back", "code": 6})
    );
    let r = call(&ferry, Method::POST, "/v1/books:import", "{}").await?;
    assert_eq!(r.status, StatusCode::NOT_IMPLEMENTED);
    // No binding: passed through untouched (the gRPC server answers it, not ferry).
    let r = call(&ferry, Method::GET, "/v1/nothing/here", "").await?;
    assert!(
        !r.text().contains("\"code\""),
        "not a transcoder answer: {}",
        r.text()
    );

    // A plain gRPC caller on the same route passes through untouched.
    let via_grpc = grpc_get_book(ferry.only_listener()?, "shelves/g/books/1").await?;
    assert_eq!(
        via_grpc,
        json!({"title": "name=shelves/g/books/1", "genre": "FICTION",
               "published": "2024-05-06T07:08:09Z", "pages": "18446744073709551615"})
    );
    let missing = grpc_get_book(ferry.only_listener()?, "missing").await?;
    assert_eq!(
        missing,
        json!({"code": "NOT_FOUND", "message": "no book missing"})
    );

    // /config_dump shows the descriptor, its sha256 and the bindings count.
    let dump = Admin::new(ferry.admin()).config_dump().await?;
    let d = &dump["descriptors"][0];
    assert_eq!(d["route"], "library");
    assert_eq!(d["bindings"], 12);
    assert_eq!(
        d["descriptor_set"],
        library.descriptor.display().to_string()
    );
    assert_eq!(d["sha256"].as_str().map(str::len), Some(64), "{dump}");
    Ok(())
}

/// Reads the stream until `n` complete events (separated by `sep`) arrived.
async fn read_events(
    body: &mut hyper::body::Incoming,
    buf: &mut BytesMut,
    sep: &str,
    n: usize,
) -> anyhow::Result<Vec<String>> {
    loop {
        let text = String::from_utf8_lossy(buf).into_owned();
        let events: Vec<String> = text
            .split(sep)
            .filter(|e| !e.is_empty())
            .map(str::to_owned)
            .collect();
        if text.ends_with(sep) && events.len() >= n {
            buf.clear();
            return Ok(events);
        }
        let frame = tokio::time::timeout(PATIENCE, body.frame())
            .await
            .context("no stream data")?
            .context("stream ended early")??;
        if let Ok(data) = frame.into_data() {
            buf.extend_from_slice(&data);
        }
    }
}

/// Opens the watch stream, checks the first message arrives while the server is still holding
/// the second (it waits for our release call), then reads the rest.
async fn watch(
    ferry: &Ferry,
    shelf: &str,
    sep: &str,
) -> anyhow::Result<(String, Vec<String>, Vec<String>)> {
    let addr = ferry.only_listener()?;
    let resp = HttpClient::http1()
        .get_stream(addr, &format!("/v1/shelves/{shelf}/books:watch"))
        .await?;
    anyhow::ensure!(resp.status() == StatusCode::OK, "status {}", resp.status());
    let content_type = resp.headers()["content-type"].to_str()?.to_owned();
    let mut body = resp.into_body();
    let mut buf = BytesMut::new();
    let first = read_events(&mut body, &mut buf, sep, 1).await?;
    // Only now may the server send the second message.
    let released = json_ok(
        ferry,
        Method::GET,
        &format!("/v1/shelves/{shelf}/books?page_size=-1"),
        "",
    )
    .await?;
    anyhow::ensure!(released["nextPageToken"] == "released");
    let mut rest = Vec::new();
    while let Some(frame) = tokio::time::timeout(PATIENCE, body.frame())
        .await
        .context("stream stalled")?
    {
        if let Ok(data) = frame?.into_data() {
            buf.extend_from_slice(&data);
        }
    }
    let text = String::from_utf8_lossy(&buf).into_owned();
    rest.extend(text.split(sep).filter(|e| !e.is_empty()).map(str::to_owned));
    Ok((content_type, first, rest))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_streams_as_ndjson_and_sse_message_by_message() -> anyhow::Result<()> {
    let library = Library::start().await?;
    let ndjson = ferry(&library, &library.descriptor, ", streaming: ndjson").await?;
    let (ct, first, rest) = watch(&ndjson, "ok", "\n").await?;
    assert_eq!(ct, "application/x-ndjson");
    assert_eq!(first, [r#"{"id":"1","title":"first"}"#]);
    assert_eq!(rest, [r#"{"id":"2","title":"second"}"#]);
    // An error after the first message ends the stream with a JSON error object.
    let (_, first, rest) = watch(&ndjson, "fail", "\n").await?;
    assert_eq!(first, [r#"{"id":"1","title":"first"}"#]);
    assert_eq!(
        rest,
        [
            r#"{"id":"2","title":"second"}"#,
            r#"{"error":"shelf closed","code":14}"#
        ]
    );

    let sse = ferry(
        &library,
        &library.descriptor,
        ", streaming: sse, unknown_fields: ignore",
    )
    .await?;
    let (ct, first, rest) = watch(&sse, "sse", "\n\n").await?;
    assert_eq!(ct, "text/event-stream");
    assert_eq!(first, [r#"data: {"id":"1","title":"first"}"#]);
    assert_eq!(rest, [r#"data: {"id":"2","title":"second"}"#]);
    // unknown_fields: ignore drops unknown JSON fields and query parameters.
    let patched = json_ok(
        &sse,
        Method::PATCH,
        "/v1/books/4?colour=red",
        r#"{"title": "U", "colour": "red"}"#,
    )
    .await?;
    assert_eq!(patched, json!({"id": "4", "title": "patched U"}));
    Ok(())
}

/// Writes `bytes` to `path` the way deploy tools do: a temp file renamed into place.
async fn replace(path: &Path, bytes: &[u8]) -> anyhow::Result<()> {
    let tmp = path.with_extension("tmp");
    tokio::fs::write(&tmp, bytes).await?;
    tokio::fs::rename(&tmp, path).await?;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn descriptor_hot_reload_and_bad_descriptor_rejected() -> anyhow::Result<()> {
    let library = Library::start().await?;
    // The descriptor lives in its own directory, not the config's: that one is watched too.
    let dir = tempfile::Builder::new().prefix("ferry-desc-").tempdir()?;
    let pb = dir.path().join("library.pb");
    tokio::fs::copy(&library.descriptor, &pb).await?;
    let ferry = ferry(&library, &pb, "").await?;
    let admin = Admin::new(ferry.admin());
    let addr = ferry.only_listener()?;
    let before = admin.config_dump().await?["descriptors"][0]["sha256"].clone();

    // Existing calls keep succeeding throughout the reloads.
    let stop = Arc::new(AtomicBool::new(false));
    let (ok, failed) = (Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0)));
    let looper = {
        let (stop, ok, failed) = (stop.clone(), ok.clone(), failed.clone());
        tokio::spawn(async move {
            let client = HttpClient::http1();
            while !stop.load(Ordering::Relaxed) {
                match client.get(addr, "/v1/books/7").await {
                    Ok(r) if r.status == StatusCode::OK && r.body.starts_with(b"{\"id\":\"7\"") => {
                        ok.fetch_add(1, Ordering::Relaxed)
                    }
                    _ => failed.fetch_add(1, Ordering::Relaxed),
                };
            }
        })
    };

    // Before the new binding the path is not transcoded (it passes through to the gRPC port).
    let r = call(&ferry, Method::GET, "/v2/books/7", "").await?;
    assert!(!r.body.starts_with(b"{\"id\""), "{}", r.text());
    // A new binding for GetBook, compiled by protoc, swapped in.
    let v2 = library_proto().await?.replace(
        r#"additional_bindings { get: "/v1/books/{book_id}" }"#,
        r#"additional_bindings { get: "/v1/books/{book_id}" }
      additional_bindings { get: "/v2/books/{book_id}" }"#,
    );
    let staged = dir.path().join("staged.pb");
    protoc(&v2, &staged).await?;
    replace(&pb, &tokio::fs::read(&staged).await?).await?;
    tokio::fs::remove_file(&staged).await?;
    eventually(PATIENCE, || async {
        let r = call(&ferry, Method::GET, "/v2/books/7", "").await?;
        anyhow::ensure!(r.status == StatusCode::OK, "{} {}", r.status, r.text());
        anyhow::ensure!(r.json::<Value>()?["id"] == "7");
        Ok(())
    })
    .await?;
    let dump = admin.config_dump().await?;
    assert_eq!(dump["descriptors"][0]["bindings"], 13, "{dump}");
    assert_ne!(dump["descriptors"][0]["sha256"], before, "{dump}");

    // A broken descriptor: rejected, counted, the previous table keeps serving.
    let failures = |m: ferry_integration::Metrics| m.sum("ferry_config_reload_failures_total", &[]);
    let base = failures(admin.metrics().await?);
    replace(&pb, b"\x0a\x05not a descriptor").await?;
    eventually(PATIENCE, || async {
        let n = failures(admin.metrics().await?);
        anyhow::ensure!(n > base, "reload failure not counted ({n})");
        Ok(())
    })
    .await?;
    assert!(ferry.logs().contains("descriptor_set"), "{}", ferry.logs());
    assert_eq!(
        json_ok(&ferry, Method::GET, "/v2/books/8", "").await?["id"],
        "8"
    );

    stop.store(true, Ordering::Relaxed);
    looper.await?;
    assert!(ok.load(Ordering::Relaxed) > 0);
    assert_eq!(
        failed.load(Ordering::Relaxed),
        0,
        "calls failed during the reloads"
    );
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn validate_reports_descriptor_faults_at_the_field() -> anyhow::Result<()> {
    let dir = tempfile::Builder::new()
        .prefix("ferry-validate-")
        .tempdir()?;
    let config = dir.path().join("routes.yaml");
    let yaml = "apiVersion: ferry/v1\nlisteners:\n  - name: main\n    address: 127.0.0.1:0\n    routes:\n      - name: library\n        translate: { from: rest, to: grpc, protocol: descriptor, descriptor_set: library.pb }\n        to: library\nclusters:\n  - name: library\n    endpoints: [127.0.0.1:1]\n    protocol: h2\n";
    tokio::fs::write(&config, yaml).await?;
    let (code, out) = ferry_integration::ferry::validate(std::slice::from_ref(&config)).await?;
    assert_eq!(code, 64, "{out}");
    let at = format!(
        "{}:7:82: listeners[0].routes[0].translate.descriptor_set: cannot read descriptor set {}",
        config.display(),
        dir.path().join("library.pb").display()
    );
    assert!(out.contains(&at), "{out}");
    tokio::fs::write(dir.path().join("library.pb"), b"garbage").await?;
    let (code, out) = ferry_integration::ferry::validate(std::slice::from_ref(&config)).await?;
    assert_eq!(code, 64, "{out}");
    assert!(out.contains("not a valid FileDescriptorSet"), "{out}");
    protoc(&library_proto().await?, &dir.path().join("library.pb")).await?;
    let (code, out) = ferry_integration::ferry::validate(&[config]).await?;
    assert_eq!(code, 0, "{out}");
    Ok(())
}
