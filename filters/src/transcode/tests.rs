//! Unit tests: templates (with a property test), the JSON mapping, and whole calls through
//! [`TranscodeLayer`](super::TranscodeLayer) against an in-memory gRPC upstream.

mod calls;
mod mapping;

use proptest::prelude::*;

use super::template::{Segment, Template, split_verb};
use super::{TranscodeSettings, Transcoder};

/// The committed test proto compiled by protox, imports included (as `protoc
/// --include_imports --descriptor_set_out` would).
pub(super) fn library_set() -> Vec<u8> {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../proto/testing");
    let mut compiler = protox::Compiler::new([dir]).unwrap();
    compiler.include_imports(true);
    compiler.open_files(["library.proto"]).unwrap();
    compiler.encode_file_descriptor_set()
}

pub(super) fn transcoder(settings: TranscodeSettings) -> Transcoder {
    Transcoder::from_descriptor_set(&library_set(), settings).unwrap()
}

fn matches(template: &str, path: &str) -> Option<Vec<(String, String)>> {
    let t = Template::parse(template).unwrap();
    let rest = path.strip_prefix('/').unwrap();
    let (rest, verb) = split_verb(rest);
    let segs: Vec<&str> = rest.split('/').collect();
    t.matches(&segs, verb)
        .map(|c| c.into_iter().map(|(p, v)| (p.join("."), v)).collect())
}

fn cap(pairs: &[(&str, &str)]) -> Option<Vec<(String, String)>> {
    Some(
        pairs
            .iter()
            .map(|(a, b)| ((*a).to_owned(), (*b).to_owned()))
            .collect(),
    )
}

#[test]
fn templates_parse_into_segments_variables_and_verb() {
    let t = Template::parse("/v1/{name=shelves/*/books/*}:get").unwrap();
    assert_eq!(t.verb.as_deref(), Some("get"));
    assert_eq!(t.segments.len(), 5);
    assert_eq!(t.segments[2], Segment::Single);
    assert_eq!(t.variables[0].field_path, ["name"]);
    let t = Template::parse("/v1/{a.b}/x/**").unwrap();
    assert_eq!(t.variables[0].field_path, ["a", "b"]);
    assert_eq!(t.segments.last(), Some(&Segment::Multi));
}

#[test]
fn bad_templates_are_refused_with_the_reason() {
    for (text, why) in [
        ("v1/x", "must start with '/'"),
        ("/v1/{name", "unclosed '{'"),
        ("/v1/**/x", "'**' must be the last segment"),
        ("/v1//x", "empty segment"),
        ("/v1/{a-b}", "bad field path in variable"),
        ("/v1/x{a}", "variable must be a whole segment"),
        ("/v1/x:", "empty verb after ':'"),
    ] {
        let e = Template::parse(text).unwrap_err();
        assert_eq!(e.why, why, "{text}");
    }
}

#[test]
fn templates_match_variables_wildcards_and_verbs() {
    assert_eq!(
        matches("/v1/{name=shelves/*/books/*}", "/v1/shelves/1/books/2"),
        cap(&[("name", "shelves/1/books/2")])
    );
    assert_eq!(
        matches("/v1/{name=shelves/*/books/*}", "/v1/shelves/1/books"),
        None
    );
    assert_eq!(
        matches("/v1/books/{id}", "/v1/books/7"),
        cap(&[("id", "7")])
    );
    assert_eq!(matches("/v1/books/{id}", "/v1/books/"), None);
    assert_eq!(
        matches("/v1/books/{id}:archive", "/v1/books/7:archive"),
        cap(&[("id", "7")])
    );
    assert_eq!(matches("/v1/books/{id}:archive", "/v1/books/7"), None);
    assert_eq!(matches("/v1/books/{id}", "/v1/books/7:archive"), None);
    assert_eq!(
        matches("/v1/files/{name=**}", "/v1/files/a/b/c"),
        cap(&[("name", "a/b/c")])
    );
    assert_eq!(matches("/v1/files/**", "/v1/files"), cap(&[]));
    // Single-segment variables decode everything, multi-segment ones keep an encoded '/'.
    assert_eq!(
        matches("/v1/books/{id}", "/v1/books/a%2Fb%20c"),
        cap(&[("id", "a/b c")])
    );
    assert_eq!(
        matches("/v1/files/{name=**}", "/v1/files/a%2Fb/c%20d"),
        cap(&[("name", "a%2Fb/c d")])
    );
}

proptest! {
    /// Any literal/variable template matches the path built from it, capturing exactly the
    /// values put in; a path with one segment too many does not match.
    #[test]
    fn template_matching_round_trips(
        parts in proptest::collection::vec(
            prop_oneof![
                "[a-z][a-z0-9]{0,6}".prop_map(|l| (l, None)),
                ("[a-z][a-z_]{0,5}", "[A-Za-z0-9._~-]{1,8}").prop_map(|(f, v)| (f, Some(v))),
            ],
            1..6,
        ),
        verb in proptest::option::of("[a-z]{1,6}"),
    ) {
        let mut template = String::new();
        let mut path = String::new();
        let mut expected = Vec::new();
        for (i, (name, value)) in parts.iter().enumerate() {
            match value {
                None => {
                    template.push_str(&format!("/{name}"));
                    path.push_str(&format!("/{name}"));
                }
                Some(v) => {
                    let field = format!("{name}{i}");
                    template.push_str(&format!("/{{{field}}}"));
                    path.push_str(&format!("/{v}"));
                    expected.push((field, v.clone()));
                }
            }
        }
        if let Some(verb) = &verb {
            template.push_str(&format!(":{verb}"));
            path.push_str(&format!(":{verb}"));
        }
        // A value containing ':' in the last segment would be read as a verb; none do here.
        prop_assert_eq!(matches(&template, &path), Some(expected));
        let longer = match &verb {
            Some(v) => path.replace(&format!(":{v}"), &format!("/extra:{v}")),
            None => format!("{path}/extra"),
        };
        prop_assert_eq!(matches(&template, &longer), None);
    }

    /// Parsing and matching arbitrary text never panics.
    #[test]
    fn templates_never_panic(template in "\\PC{0,40}", path in "\\PC{0,40}") {
        let _ = super::templates::parse_and_match(&template, &path);
    }
}

#[test]
fn paths_with_too_many_segments_are_not_transcoded() {
    let t = transcoder(TranscodeSettings::default());
    let ok = format!("/v1/files{}", "/a".repeat(250));
    assert!(t.index().find(&http::Method::GET, &ok).is_some());
    let long = format!("/v1/files{}", "/a".repeat(300));
    assert!(t.index().find(&http::Method::GET, &long).is_none());
}

#[test]
fn descriptor_rules_are_read_with_additional_bindings() {
    let t = transcoder(TranscodeSettings::default());
    // 11 methods with one rule each, plus GetBook's additional binding.
    assert_eq!(t.bindings(), 12);
    let only = TranscodeSettings {
        services: vec!["library.v1.Nope".into()],
        ..TranscodeSettings::default()
    };
    let err = Transcoder::from_descriptor_set(&library_set(), only).unwrap_err();
    assert_eq!(
        err.to_string(),
        "service \"library.v1.Nope\" is not in the descriptor set"
    );
    let err =
        Transcoder::from_descriptor_set(b"\x0a\x03abc", TranscodeSettings::default()).unwrap_err();
    assert!(
        err.to_string().starts_with("not a valid FileDescriptorSet"),
        "{err}"
    );
}
