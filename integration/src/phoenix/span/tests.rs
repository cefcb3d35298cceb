use serde_json::json;

use super::*;

/// One page exactly as Phoenix 20.26.1 answered for spans sent by the Python OTel SDK.
const PAGE: &str = r#"{"data":[
 {"id":"U3Bhbjox","name":"child","context":{"trace_id":"04045882a7d5c5da63e4dfcaad1319de","span_id":"12a7fb9650d592a9"},
  "span_kind":"UNKNOWN","parent_id":"7a12ac5e1c9f3f4d","start_time":"2026-12-05T01:54:41.713053+00:00",
  "end_time":"2026-12-05T01:54:41.713086+00:00","status_code":"ERROR","status_message":"boom",
  "attributes":{"http.request.method":"POST"},
  "events":[{"name":"retry","timestamp":"2026-12-05T01:54:41.713066+00:00","attributes":{"attempt":2}}]},
 {"id":"U3Bhbjoy","name":"parent","context":{"trace_id":"04045882a7d5c5da63e4dfcaad1319de","span_id":"7a12ac5e1c9f3f4d"},
  "span_kind":"UNKNOWN","parent_id":null,"start_time":"2026-12-05T01:54:41.713007+00:00",
  "end_time":"2026-12-05T01:54:41.719350+00:00","status_code":"UNSET","status_message":"",
  "attributes":{"list":["a","b"],"flag":true,"http.response.status_code":200},"events":[]}
],"next_cursor":"U3Bhbjo1"}"#;

#[derive(Debug, Deserialize)]
struct Page {
    data: Vec<Span>,
}

#[test]
fn parses_a_real_page() {
    let page: Page = serde_json::from_str(PAGE).unwrap();
    let [child, parent] = &page.data[..] else {
        panic!("two spans expected")
    };
    assert_eq!(parent.name, "parent");
    assert!(parent.is_root());
    assert_eq!(child.parent_id.as_deref(), Some(parent.span_id.as_str()));
    assert_eq!(child.trace_id, parent.trace_id);
    assert_eq!(child.status_code, StatusCode::Error);
    assert_eq!(child.status_message, "boom");
    assert_eq!(parent.status_code, StatusCode::Unset);
    assert_eq!(child.attr_str("http.request.method"), Some("POST"));
    assert_eq!(parent.attr_i64("http.response.status_code"), Some(200));
    assert_eq!(parent.attr("flag"), Some(&json!(true)));
    assert_eq!(parent.duration_micros(), 719_350 - 713_007);
    assert_eq!(parent.start_unix_micros(), 1_796_435_681_713_007);
    let retry = child.event("retry").unwrap();
    assert_eq!(retry.attr("attempt"), Some(&json!(2)));
    assert_eq!(retry.unix_micros(), Some(1_796_435_681_713_066));
}

#[test]
fn a_bad_time_fails_the_parse() {
    let bad = PAGE.replace("2026-12-05T01:54:41.713053+00:00", "yesterday");
    let err = serde_json::from_str::<Page>(&bad).unwrap_err().to_string();
    assert!(err.contains("bad time \"yesterday\""), "{err}");
}

#[test]
fn attributes_flat_nested_and_mixed() {
    let span = |attributes: Value| Span {
        name: "s".into(),
        trace_id: String::new(),
        span_id: String::new(),
        parent_id: None,
        start_time: String::new(),
        end_time: String::new(),
        status_code: StatusCode::Unset,
        status_message: String::new(),
        attributes,
        events: vec![],
        start_micros: 0,
        end_micros: 0,
    };
    let flat = span(json!({ "http.request.method": "GET" }));
    let nested = span(json!({ "http": { "request": { "method": "GET" } } }));
    let mixed = span(json!({ "http": { "request.method": "GET" } }));
    for s in [&flat, &nested, &mixed] {
        assert_eq!(s.attr_str("http.request.method"), Some("GET"), "{s:?}");
        assert_eq!(s.attr("http.request.path"), None);
        assert_eq!(s.attr("http.request.method.x"), None);
    }
    // Both a value and a deeper key under the same prefix: each stays reachable.
    let both = span(json!({ "a.b": "x", "a": { "b": { "c": 1 } } }));
    assert_eq!(both.attr_str("a.b"), Some("x"));
    assert_eq!(both.attr_i64("a.b.c"), Some(1));
    let list = span(json!({ "llm": { "input_messages": [ { "message": { "role": "user" } } ] } }));
    assert_eq!(
        list.attr_str("llm.input_messages.0.message.role"),
        Some("user")
    );
    assert_eq!(list.attr("llm.input_messages.1.message.role"), None);
}

#[test]
fn rfc3339_times() {
    let cases = [
        ("1970-01-01T00:00:00Z", Some(0)),
        ("1970-01-01T00:00:00+00:00", Some(0)),
        (
            "2026-12-05T01:54:41.713007+00:00",
            Some(1_796_435_681_713_007),
        ),
        ("2024-02-29T12:00:00-05:30", Some(1_709_227_800_000_000)),
        ("2000-03-01 00:00:00.5+00:00", Some(951_868_800_500_000)),
        ("1969-12-31T23:59:59.999999+00:00", Some(-1)),
        // Nanoseconds truncate to microseconds.
        ("1970-01-01T00:00:00.000001999Z", Some(1)),
        ("2026-12-05T01:54:41", None),
        ("2026-12-05T01:54:41.+00:00", None),
        ("2026-13-05T01:54:41Z", None),
        ("2026-12-05T01:54:41+0000", None),
        ("2026-12-05", None),
        ("", None),
    ];
    for (text, want) in cases {
        assert_eq!(unix_micros(text), want, "{text}");
    }
}
