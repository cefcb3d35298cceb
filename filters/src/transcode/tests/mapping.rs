//! Golden tests for the request mapping (body, path, query → message) and the proto3 JSON
//! answer (int64 as strings, enums by name, WKTs, json_name).

use http::Method;
use prost_reflect::{DynamicMessage, ReflectMessage, SerializeOptions};

use super::super::request;
use super::super::response::Shape;
use super::super::{TranscodeError, TranscodeSettings};
use super::transcoder;

/// Transcodes a request and renders the resulting gRPC message back as JSON for comparison.
fn req(method: Method, uri: &str, body: &str, deny: bool) -> Result<String, TranscodeError> {
    let t = transcoder(TranscodeSettings::default());
    let (path, query) = uri
        .split_once('?')
        .map_or((uri, None), |(p, q)| (p, Some(q)));
    let (binding, captures) = t.index().find(&method, path).expect("a binding");
    let bytes = request::build(binding, captures, query, body.as_bytes(), deny)?;
    let msg = DynamicMessage::decode(binding.method.input(), bytes.as_slice()).unwrap();
    let mut out = Vec::new();
    msg.serialize_with_options(
        &mut serde_json::Serializer::new(&mut out),
        &SerializeOptions::new(),
    )
    .unwrap();
    Ok(String::from_utf8(out).unwrap())
}

#[test]
fn path_variables_fill_fields_including_additional_bindings() {
    assert_eq!(
        req(Method::GET, "/v1/shelves/s1/books/b2", "", true).unwrap(),
        r#"{"name":"shelves/s1/books/b2"}"#
    );
    assert_eq!(
        req(Method::GET, "/v1/books/9007199254740993", "", true).unwrap(),
        r#"{"bookId":"9007199254740993"}"#
    );
    assert_eq!(
        req(Method::DELETE, "/v1/books/5", "", true).unwrap(),
        r#"{"id":"5"}"#
    );
}

#[test]
fn query_parameters_fill_nested_repeated_enum_and_wkt_fields() {
    let got = req(
        Method::GET,
        "/v1/shelves/s1/books?page_size=10&tags=a&tags=b%20c&genre=SCIENCE&filter.author=Le+Guin\
         &filter.inPrint=true&min_pages=300&since=2024-01-02T03:04:05Z&count=-9007199254740993",
        "",
        true,
    )
    .unwrap();
    assert_eq!(
        got,
        r#"{"shelf":"s1","pageSize":10,"tags":["a","b c"],"genre":"SCIENCE","filter":{"author":"Le Guin","inPrint":true},"minPages":"300","since":"2024-01-02T03:04:05Z","count":"-9007199254740993"}"#
    );
    // Path variables win over a query parameter for the same field.
    assert_eq!(
        req(Method::GET, "/v1/shelves/s1/books?shelf=other", "", true).unwrap(),
        r#"{"shelf":"s1"}"#
    );
}

#[test]
fn bad_and_unknown_query_parameters() {
    let e = req(Method::GET, "/v1/shelves/s1/books?page_size=x", "", true).unwrap_err();
    assert_eq!(e.to_string(), r#"field "page_size": invalid int32 "x""#);
    let e = req(Method::GET, "/v1/shelves/s1/books?genre=POETRY", "", true).unwrap_err();
    assert_eq!(e.to_string(), r#"field "genre": invalid Genre "POETRY""#);
    let e = req(Method::GET, "/v1/shelves/s1/books?colour=red", "", true).unwrap_err();
    assert_eq!(
        e.to_string(),
        r#"query parameter "colour": unknown field "colour""#
    );
    assert_eq!(
        req(Method::GET, "/v1/shelves/s1/books?colour=red", "", false).unwrap(),
        r#"{"shelf":"s1"}"#
    );
}

#[test]
fn body_field_takes_proto3_json_with_wkts_and_json_name() {
    let body = r#"{"id":"12","title":"Dune","genre":"FICTION","published":"1965-08-01T00:00:00Z",
        "readTime":"3600.5s","rating":5,"extra":{"a":[1,"x",null,true]},"shelf":"top",
        "tags":["sf"],"pages":"412","cover":"AAE="}"#;
    assert_eq!(
        req(Method::POST, "/v1/shelves/s1/books", body, true).unwrap(),
        r#"{"shelf":"s1","book":{"id":"12","title":"Dune","genre":"FICTION","published":"1965-08-01T00:00:00Z","readTime":"3600.500s","rating":5,"extra":{"a":[1.0,"x",null,true]},"shelf":"top","tags":["sf"],"pages":"412","cover":"AAE="}}"#
    );
    // Original proto names are accepted too; int64 as a JSON number as well.
    assert_eq!(
        req(
            Method::POST,
            "/v1/shelves/s1/books",
            r#"{"shelf_name":"x","id":7}"#,
            true
        )
        .unwrap(),
        r#"{"shelf":"s1","book":{"id":"7","shelf":"x"}}"#
    );
    // The body field cannot come from the query.
    let e = req(
        Method::POST,
        "/v1/shelves/s1/books?book.title=x",
        "{}",
        true,
    )
    .unwrap_err();
    assert!(e.to_string().contains("travels in the request body"), "{e}");
    // A body cannot break out of its field.
    let e = req(
        Method::POST,
        "/v1/shelves/s1/books",
        r#"{}, "shelf": "x""#,
        true,
    )
    .unwrap_err();
    assert!(e.to_string().starts_with("request body:"), "{e}");
}

#[test]
fn whole_body_with_query_for_unset_fields_and_unknown_field_option() {
    assert_eq!(
        req(
            Method::PUT,
            "/v1/books/3?title=fromquery&genre=SCIENCE",
            r#"{"title":"Body"}"#,
            true
        )
        .unwrap(),
        r#"{"id":"3","title":"Body","genre":"SCIENCE"}"#
    );
    let e = req(
        Method::PATCH,
        "/v1/books/3",
        r#"{"title":"t","colour":"red"}"#,
        true,
    )
    .unwrap_err();
    assert!(
        e.to_string().contains("colour"),
        "the error names the field: {e}"
    );
    assert_eq!(e.http_status(), http::StatusCode::BAD_REQUEST);
    assert_eq!(
        req(
            Method::PATCH,
            "/v1/books/3",
            r#"{"title":"t","colour":"red"}"#,
            false
        )
        .unwrap(),
        r#"{"id":"3","title":"t"}"#
    );
    let e = req(Method::PATCH, "/v1/books/3", r#"{"id": "x"}"#, true).unwrap_err();
    assert!(e.to_string().starts_with("request body:"), "{e}");
}

#[test]
fn answers_render_as_proto3_json_and_response_body_picks_a_field() {
    let t = transcoder(TranscodeSettings::default());
    let (binding, _) = t
        .index()
        .find(&Method::POST, "/v1/books/1:archive")
        .unwrap();
    let book = binding.method.output();
    let mut msg = DynamicMessage::new(book.clone());
    let json = r#"{"id":"-5","title":"Dune","genre":"SCIENCE","readTime":"1.5s","rating":0,"pages":"18446744073709551615"}"#;
    let mut de = serde_json::Deserializer::from_str(json);
    msg = DynamicMessage::deserialize(msg.descriptor(), &mut de).unwrap_or(msg);
    let bytes = prost::Message::encode_to_vec(&msg);
    let whole = Shape {
        output: book.clone(),
        field: None,
    };
    assert_eq!(
        String::from_utf8(whole.to_json(&bytes).unwrap()).unwrap(),
        json.replace("1.5s", "1.500s")
    );
    let title = Shape {
        output: book,
        field: binding.response_field.clone(),
    };
    assert_eq!(
        String::from_utf8(title.to_json(&bytes).unwrap()).unwrap(),
        r#""Dune""#
    );
    let e = whole.to_json(b"\xff\xff").unwrap_err();
    assert!(matches!(e, TranscodeError::BadUpstream(_)));
}
