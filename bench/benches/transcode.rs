//! Generic REST → gRPC transcoding (`ferry_filters::transcode`) per request, through the
//! public `TranscodeLayer` with an in-memory gRPC upstream: JSON body → protobuf request, and
//! the protobuf answer → proto3 JSON. Throughput is in bytes of JSON (request or answer).

use std::hint::black_box;

use bytes::Bytes;
use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use ferry_filters::transcode::{TranscodeLayer, TranscodeSettings, Transcoder};
use ferry_filters::translate::{BoxError, TranslateBody};
use futures_util::FutureExt as _;
use http::{Request, Response};
use http_body_util::{BodyExt as _, Full};
use tower::{Layer as _, ServiceExt as _, service_fn};

/// `library.v1.Book`, the fields the bench fills.
#[derive(Clone, PartialEq, prost::Message)]
struct Book {
    #[prost(int64, tag = "1")]
    id: i64,
    #[prost(string, tag = "2")]
    title: String,
    #[prost(int32, tag = "3")]
    genre: i32,
    #[prost(string, repeated, tag = "9")]
    tags: Vec<String>,
}

/// `library.v1.ListBooksResponse`.
#[derive(Clone, PartialEq, prost::Message)]
struct ListBooksResponse {
    #[prost(message, repeated, tag = "1")]
    books: Vec<Book>,
    #[prost(string, tag = "2")]
    next_page_token: String,
}

fn transcoder() -> Transcoder {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../proto/testing");
    let mut compiler = protox::Compiler::new([dir]).unwrap_or_else(|e| panic!("{e}"));
    compiler.include_imports(true);
    compiler
        .open_files(["library.proto"])
        .unwrap_or_else(|e| panic!("{e}"));
    Transcoder::from_descriptor_set(
        &compiler.encode_file_descriptor_set(),
        TranscodeSettings::default(),
    )
    .unwrap_or_else(|e| panic!("{e}"))
}

fn framed(msg: &impl prost::Message) -> Bytes {
    let body = msg.encode_to_vec();
    let mut out = vec![0];
    out.extend_from_slice(&u32::try_from(body.len()).unwrap_or(0).to_be_bytes());
    out.extend_from_slice(&body);
    out.into()
}

fn grpc_answer(message: Bytes) -> Response<TranslateBody> {
    let mut trailers = http::HeaderMap::new();
    trailers.insert("grpc-status", http::HeaderValue::from_static("0"));
    let body = Full::new(message)
        .map_err(|never| match never {})
        .with_trailers(async move { Some(Ok(trailers)) })
        .boxed_unsync();
    Response::new(body)
}

fn books(n: usize) -> ListBooksResponse {
    ListBooksResponse {
        books: (0..n)
            .map(|i| Book {
                id: 1 << 40 | i as i64,
                title: format!("Book number {i}"),
                genre: 1 + (i % 2) as i32,
                tags: vec!["sf".into(), "classic".into()],
            })
            .collect(),
        next_page_token: "next".into(),
    }
}

/// One call through the layer; every future is ready at once (in-memory bodies, no I/O).
fn run<S>(svc: &mut S, req: Request<Full<Bytes>>) -> Option<Bytes>
where
    S: tower::Service<Request<Full<Bytes>>, Response = Response<TranslateBody>, Error = BoxError>,
{
    let ready = svc.ready().now_or_never()?.ok()?;
    let resp = ready.call(req).now_or_never()?.ok()?;
    let body = resp.into_body().collect().now_or_never()?.ok()?;
    Some(body.to_bytes())
}

fn bench(c: &mut Criterion) {
    let layer = TranscodeLayer::new(transcoder());
    let mut group = c.benchmark_group("transcode");

    // Unary create: a JSON book in, the same book back.
    let answer = framed(&Book {
        id: 12,
        title: "Dune".into(),
        genre: 1,
        tags: vec!["sf".into()],
    });
    let upstream = service_fn(move |req: Request<TranslateBody>| {
        let answer = answer.clone();
        async move {
            black_box(req.into_body().collect().await?.to_bytes());
            Ok::<_, BoxError>(grpc_answer(answer))
        }
    });
    let mut svc = layer.layer(upstream);
    let body = r#"{"id":"12","title":"Dune","genre":"FICTION","tags":["sf"],"published":"1965-08-01T00:00:00Z","readTime":"90s","rating":5}"#;
    group.throughput(Throughput::Bytes(body.len() as u64));
    group.bench_function("unary/create_book", |b| {
        b.iter(|| {
            let req = Request::post("/v1/shelves/s1/books")
                .body(Full::new(Bytes::from_static(body.as_bytes())))
                .unwrap_or_default();
            black_box(run(&mut svc, req));
        })
    });

    // A list answer of 1,000 books rendered as JSON.
    let list = books(1000);
    let answer = framed(&list);
    let upstream = service_fn(move |_req: Request<TranslateBody>| {
        let answer = answer.clone();
        async move { Ok::<_, BoxError>(grpc_answer(answer)) }
    });
    let mut svc = layer.layer(upstream);
    let list_req = || {
        Request::get("/v1/shelves/s1/books?page_size=1000&tags=a&tags=b")
            .body(Full::new(Bytes::new()))
            .unwrap_or_default()
    };
    let json = run(&mut svc, list_req()).unwrap_or_default();
    assert!(json.starts_with(b"{\"books\":["), "{json:?}");
    group.throughput(Throughput::Bytes(json.len() as u64));
    group.bench_function("unary/list_1000_books", |b| {
        b.iter(|| {
            black_box(run(&mut svc, list_req()));
        })
    });
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(20).measurement_time(std::time::Duration::from_secs(3));
    targets = bench
}
criterion_main!(benches);
