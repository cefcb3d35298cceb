use std::num::NonZeroUsize;
use std::sync::Arc;

use ferry_config::HashKeyPart;
use ferry_filters::connection::{Connection, PeerIdentity};
use http::Request;
use http_body_util::BodyExt;

use super::{key_of, read_prompt};
use crate::body;

fn req(headers: &[(&str, &str)]) -> Request<()> {
    let mut b = Request::post("/v1/chat/completions");
    for (k, v) in headers {
        b = b.header(*k, *v);
    }
    b.body(()).unwrap()
}

#[test]
fn parts_present_make_the_key_and_absent_ones_are_left_out() {
    let parts = [
        HashKeyPart::Header("x-session-id".into()),
        HashKeyPart::Cookie("sid".into()),
    ];
    assert_eq!(key_of(&parts, &req(&[]), None), None);
    let a = key_of(&parts, &req(&[("x-session-id", "s1")]), None);
    let b = key_of(
        &parts,
        &req(&[("x-session-id", "s1"), ("cookie", "a=1")]),
        None,
    );
    let c = key_of(&parts, &req(&[("x-session-id", "s2")]), None);
    assert!(a.is_some());
    assert_eq!(a, b, "an unrelated cookie changes nothing");
    assert_ne!(a, c);
    let d = key_of(&parts, &req(&[("cookie", "a=1; sid=xyz")]), None);
    let e = key_of(
        &parts,
        &req(&[("cookie", "sid=xyz"), ("cookie", "b=2")]),
        None,
    );
    assert!(d.is_some());
    assert_eq!(d, e);
}

#[test]
fn the_client_is_its_spiffe_id_over_mtls_else_its_ip() {
    let parts = [HashKeyPart::Client];
    let mut a = req(&[]);
    let conn = Connection::plaintext("in".into(), "10.0.0.1:5000".parse().unwrap());
    a.extensions_mut().insert(Arc::new(conn.clone()));
    let mut b = req(&[]);
    let other_port = Connection::plaintext("in".into(), "10.0.0.1:6000".parse().unwrap());
    b.extensions_mut().insert(Arc::new(other_port));
    assert_eq!(key_of(&parts, &a, None), key_of(&parts, &b, None));
    let mut c = req(&[]);
    let mut tls = conn;
    tls.identity = Some(PeerIdentity("spiffe://td/ns/a/sa/b".into()));
    c.extensions_mut().insert(Arc::new(tls));
    assert_ne!(key_of(&parts, &a, None), key_of(&parts, &c, None));
}

#[tokio::test]
async fn the_prompt_is_read_from_a_prefix_and_every_byte_replayed() {
    let system = "You are a helpful assistant. ".repeat(100);
    let json = format!(
        r#"{{"model":"m","messages":[{{"role":"system","content":"{system}"}},{{"role":"user","content":"hi"}}]}}"#
    );
    let (prompt, replay) = read_prompt(body::full(json.clone()), 64).await.unwrap();
    assert_eq!(prompt.unwrap(), system.as_bytes()[..64].to_vec());
    let back = replay.collect().await.unwrap().to_bytes();
    assert_eq!(back, json.as_bytes());
    let parts = [HashKeyPart::PromptPrefix(NonZeroUsize::new(64).unwrap())];
    let other = "You are a helpful assistant. ".repeat(3);
    assert_eq!(
        key_of(&parts, &req(&[]), Some(&system.as_bytes()[..64])),
        key_of(&parts, &req(&[]), Some(&system.as_bytes()[..64]))
    );
    assert_ne!(
        key_of(&parts, &req(&[]), Some(&system.as_bytes()[..64])),
        key_of(&parts, &req(&[]), Some(other.as_bytes()))
    );
    let (none, _) = read_prompt(body::full(r#"{"input":"x"}"#), 64)
        .await
        .unwrap();
    assert_eq!(none, None);
}
