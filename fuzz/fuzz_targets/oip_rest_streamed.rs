//! Fuzzes the streamed binary-extension path (`section_stream`): a REST infer request with
//! `Content-Length` and `Inference-Header-Content-Length`, whose body arrives in chunks of any
//! size and whose declared lengths may be wrong or forged (up to 2^40), driven through the
//! public `Translator` and drained. It must never panic, never allocate beyond the limit
//! (run with `-malloc_limit_mb`), and always end.

#![no_main]

use std::collections::VecDeque;

use bytes::Bytes;
use ferry_filters::translate::{
    ChunksBody, Direction, MaxDecodedBytes, TranslateSettings, Translator, UpstreamBinary,
};
use http_body_util::BodyExt;
use libfuzzer_sys::fuzz_target;

/// The body and decode limit: small, so forged lengths above it are exercised.
const LIMIT: u64 = 1 << 20;

fuzz_target!(|data: &[u8]| {
    // Four control bytes: header length (u16), Content-Length skew, chunk size; then the body.
    let Some((control, body)) = data.split_first_chunk::<4>() else {
        return;
    };
    let header_len = u16::from_le_bytes([control[0], control[1]]);
    let skew = control[2] as i8;
    let chunk = usize::from(control[3]).max(1);
    let actual = body.len() as u64;
    let declared = match skew {
        i8::MIN => 1 << 40,
        s => actual.saturating_add_signed(i64::from(s)),
    };
    let chunks: VecDeque<Bytes> = body.chunks(chunk).map(Bytes::copy_from_slice).collect();
    let Ok(req) = http::Request::post("/v2/models/m/infer")
        .header("content-length", declared.to_string())
        .header("inference-header-content-length", header_len.to_string())
        .body(ChunksBody::new(chunks, None))
    else {
        return;
    };
    let translator = Translator::new(TranslateSettings {
        direction: Direction::RestToGrpc,
        max_decoded_bytes: MaxDecodedBytes(LIMIT),
        upstream_binary: UpstreamBinary::Off,
    });
    futures_executor::block_on(async {
        let Ok((translated, _pending)) = translator.request(req).await else {
            return;
        };
        // Drained as the upstream connection would: the stream ends, cleanly or with an
        // error. (Which path a request took is not visible from here, so the clean-end-on-
        // mismatch property is left to the proptests in `filters/src/translate/tests/section_stream.rs`.)
        let mut body = translated.into_body();
        while let Some(frame) = body.frame().await {
            if frame.is_err() {
                break;
            }
        }
    });
});
