//! Fuzzes generic descriptor transcoding: any method, path, query and body sent at the table
//! built from `proto/testing/library.proto` must either pass through, be transcoded to a gRPC
//! request, or be answered with a JSON error — never a panic. The same input also drives the
//! path-template parser and matcher, whose templates come from operators' descriptor sets.
//!
//! Input layout: byte 0 picks the method (low 3 bits) and the unknown-field policy (bit 3);
//! then the path, the query and the body, separated by the first two `\n`. The path and query
//! lines double as a template and a path for the template parser.

#![no_main]

use std::future::Future;
use std::pin::pin;
use std::sync::OnceLock;
use std::task::{Context, Poll, Waker};

use bytes::Bytes;
use ferry_filters::transcode::{TranscodeSettings, Transcoder, templates};
use http::{Method, Request, Uri};
use http_body_util::Full;
use libfuzzer_sys::fuzz_target;

/// Two tables, one per unknown-field policy; compiling the proto is far slower than one run.
fn tables() -> &'static [Transcoder; 2] {
    static TABLES: OnceLock<[Transcoder; 2]> = OnceLock::new();
    TABLES.get_or_init(|| {
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../proto/testing");
        let mut compiler = protox::Compiler::new([dir]).expect("proto dir");
        compiler.include_imports(true);
        compiler
            .open_files(["library.proto"])
            .expect("library.proto compiles");
        let set = compiler.encode_file_descriptor_set();
        let table = |reject_unknown_fields| {
            let settings = TranscodeSettings {
                reject_unknown_fields,
                max_body_bytes: 64 * 1024,
                ..TranscodeSettings::default()
            };
            Transcoder::from_descriptor_set(&set, settings).expect("library.proto loads")
        };
        [table(true), table(false)]
    })
}

const METHODS: [Method; 8] = [
    Method::GET,
    Method::POST,
    Method::PUT,
    Method::PATCH,
    Method::DELETE,
    Method::HEAD,
    Method::OPTIONS,
    Method::TRACE,
];

/// Runs a future whose body is already in memory: it never waits, so a few polls finish it.
fn run<F: Future>(fut: F) -> F::Output {
    let mut fut = pin!(fut);
    let mut cx = Context::from_waker(Waker::noop());
    for _ in 0..16 {
        if let Poll::Ready(out) = fut.as_mut().poll(&mut cx) {
            return out;
        }
    }
    panic!("transcoding an in-memory body did not finish");
}

fuzz_target!(|data: &[u8]| {
    let Some((&selector, rest)) = data.split_first() else {
        return;
    };
    let mut parts = rest.splitn(3, |&b| b == b'\n');
    let path = parts.next().unwrap_or_default();
    let query = parts.next().unwrap_or_default();
    let body = parts.next().unwrap_or_default();

    if let (Ok(template), Ok(path)) = (std::str::from_utf8(path), std::str::from_utf8(query)) {
        let _ = templates::parse_and_match(template, path);
    }

    // Only requests hyper would accept reach the transcoder: the URI must parse.
    let mut pq = path.to_vec();
    if !query.is_empty() {
        pq.push(b'?');
        pq.extend_from_slice(query);
    }
    let Ok(uri) = Uri::builder().path_and_query(pq).build() else {
        return;
    };
    let table = &tables()[usize::from(selector >> 3 & 1)];
    let mut req = Request::new(Full::new(Bytes::copy_from_slice(body)));
    *req.method_mut() = METHODS[usize::from(selector & 7)].clone();
    *req.uri_mut() = uri;
    if let Ok(fut) = table.request(req) {
        let _ = run(fut);
    }
});
