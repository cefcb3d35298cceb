use std::convert::Infallible;

use http::{Request, Response, StatusCode};
use http_body_util::{BodyExt, Full};
use tower::{Layer, ServiceExt};

use super::*;

#[derive(Debug, thiserror::Error)]
#[error("wrapping: {0}")]
struct Wrapper(#[source] BoxError);

async fn body_text(resp: Response<TranslateBody>) -> String {
    let bytes = resp.into_body().collect().await.unwrap().to_bytes();
    String::from_utf8(bytes.to_vec()).unwrap()
}

#[tokio::test]
async fn renders_the_first_classified_error_in_the_chain() {
    let e: BoxError = Box::new(Wrapper(Box::new(BodyTooLarge { limit: 9 })));
    let resp = render_error(e.as_ref(), &[classify_filters], false);
    assert_eq!(resp.status(), StatusCode::PAYLOAD_TOO_LARGE);
    assert_eq!(resp.headers()[CONTENT_TYPE], "application/json");
    assert_eq!(
        body_text(resp).await,
        r#"{"error":"request body exceeds the limit of 9 bytes"}"#
    );
}

#[tokio::test]
async fn grpc_callers_get_trailers_only_answers() {
    let e = TranslateError::BadRequest("bad 100%\n".into());
    let resp = render(&e, true);
    assert_eq!(resp.status(), StatusCode::OK);
    assert_eq!(resp.headers()["grpc-status"], "3");
    assert_eq!(resp.headers()["grpc-message"], "bad 100%25%0A");
    assert!(body_text(resp).await.is_empty());
}

#[test]
fn rendered_answers_carry_their_reason_for_the_access_log() {
    let e: BoxError = Box::new(BodyTooLarge { limit: 9 });
    for grpc in [false, true] {
        let resp = render_error(e.as_ref(), &[classify_filters], grpc);
        assert_eq!(
            resp.extensions().get::<Rendered>(),
            Some(&Rendered("body_too_large")),
            "grpc: {grpc}"
        );
    }
}

#[tokio::test]
async fn unknown_errors_are_internal() {
    let e: BoxError = "something odd".into();
    let resp = render_error(e.as_ref(), &[classify_filters], false);
    assert_eq!(resp.status(), StatusCode::INTERNAL_SERVER_ERROR);
    let resp = render_error(e.as_ref(), &[classify_filters], true);
    assert_eq!(resp.headers()["grpc-status"], "13");
}

#[tokio::test]
async fn transcoding_errors_keep_their_code_member() {
    let resp = render(&TranscodeError::TooLarge(4), false);
    assert_eq!(resp.status(), StatusCode::PAYLOAD_TOO_LARGE);
    assert_eq!(
        body_text(resp).await,
        r#"{"error":"request body over the limit of 4 bytes","code":8}"#
    );
}

#[tokio::test]
async fn the_layer_answers_by_the_request_protocol() {
    let failing = tower::service_fn(|_: Request<Full<Bytes>>| async {
        Err::<Response<TranslateBody>, BoxError>(Box::new(TranslateError::NoEndpoint("x".into())))
    });
    let svc = RenderErrorsLayer::new().layer(failing);
    let rest = svc
        .clone()
        .oneshot(Request::new(Full::default()))
        .await
        .unwrap();
    assert_eq!(rest.status(), StatusCode::NOT_FOUND);
    let grpc = Request::builder()
        .header(CONTENT_TYPE, "application/grpc")
        .body(Full::default())
        .unwrap();
    let grpc = svc.oneshot(grpc).await.unwrap();
    assert_eq!(grpc.headers()["grpc-status"], "12");
    let ok = tower::service_fn(|_: Request<Full<Bytes>>| async {
        Ok::<_, Infallible>(Response::new(full(Bytes::from_static(b"fine"))))
    });
    let resp = RenderErrorsLayer::new()
        .layer(ok)
        .oneshot(Request::new(Full::default()))
        .await
        .unwrap();
    assert_eq!(body_text(resp).await, "fine");
}
