use std::time::Duration;

use super::template::parse_template;
use super::values::*;
use crate::ir::TemplateSegment;

#[test]
fn durations_parse_in_every_unit() {
    let cases = [
        ("0s", Duration::ZERO),
        ("500ms", Duration::from_millis(500)),
        ("2s", Duration::from_secs(2)),
        ("1.5s", Duration::from_millis(1500)),
        ("5m", Duration::from_secs(300)),
        ("1h", Duration::from_secs(3600)),
        ("0.25ms", Duration::from_micros(250)),
        ("1.000000001s", Duration::new(1, 1)),
    ];
    for (text, want) in cases {
        assert_eq!(parse_duration(text), Ok(want), "{text}");
    }
}

#[test]
fn bad_durations_are_rejected() {
    for text in [
        "",
        "5",
        "5 sec",
        "s",
        "1.s",
        ".5s",
        "-1s",
        "1d",
        "1S",
        "1..5s",
        " 1s",
        "1s ",
        "99999999999999999999999h",
    ] {
        assert!(parse_duration(text).is_err(), "{text:?} should be rejected");
    }
    assert_eq!(
        parse_duration("5 sec"),
        Err(r#"invalid duration "5 sec" (expected e.g. "500ms", "2s", "5m")"#.to_owned())
    );
}

#[test]
fn format_duration_round_trips() {
    for d in [
        Duration::ZERO,
        Duration::from_millis(1500),
        Duration::from_secs(90),
        Duration::from_secs(7200),
        Duration::from_micros(250),
        Duration::new(3, 7),
    ] {
        let text = format_duration(d);
        assert_eq!(parse_duration(&text), Ok(d), "{text}");
    }
    assert_eq!(format_duration(Duration::from_secs(90)), "90s");
    assert_eq!(format_duration(Duration::from_secs(300)), "5m");
    assert_eq!(format_duration(Duration::from_millis(1500)), "1500ms");
}

#[test]
fn percentages() {
    assert_eq!(parse_percent("20%"), Ok(0.2));
    assert_eq!(parse_percent("0%"), Ok(0.0));
    assert_eq!(parse_percent("100%"), Ok(1.0));
    assert_eq!(parse_percent("12.5%"), Ok(0.125));
    for bad in ["20", "101%", "-1%", "%", ".5%", "1.%", "1.2.3%", "abc%"] {
        assert!(parse_percent(bad).is_err(), "{bad}");
    }
    assert_eq!(format_percent(0.2), "20%");
    assert_eq!(format_percent(0.125), "12.5%");
}

#[test]
fn host_ports() {
    let hp = parse_host_port("vllm.models.svc.cluster.local:8000").unwrap();
    assert_eq!(
        (hp.host.as_str(), hp.port),
        ("vllm.models.svc.cluster.local", 8000)
    );
    assert!(parse_host_port("[::1]:80").is_ok());
    for bad in [
        "host",
        "host:0",
        "host:x",
        ":80",
        "bad host:80",
        "-a.b:80",
        "a..b:80",
    ] {
        assert!(parse_host_port(bad).is_err(), "{bad}");
    }
}

#[test]
fn header_names_and_values() {
    assert_eq!(header_name("X-Tenant"), Ok("x-tenant".to_owned()));
    assert!(header_name("bad name").is_err());
    assert!(header_name("").is_err());
    assert!(header_name(":path").is_err());
    assert!(header_value("ok\tvalue").is_ok());
    assert!(header_value("bad\r\nvalue").is_err());
    assert_eq!(method("post"), Ok("POST".to_owned()));
    assert!(method("PO ST").is_err());
}

#[test]
fn regexes_are_anchored_and_cannot_escape_the_anchor() {
    let r = anchored_regex("/v[0-9]+/.*", false).unwrap();
    assert!(r.is_match("/v2/models"));
    assert!(!r.is_match("x/v2/models"));
    assert!(anchored_regex("a)|(b", false).is_err());
    let ci = anchored_regex("LLM\\..*", true).unwrap();
    assert!(ci.is_match("llm.models.svc"));
}

#[test]
fn path_templates() {
    let t = parse_template("/v2/models/{model}/versions/{version}/infer").unwrap();
    assert_eq!(
        t.segments,
        vec![
            TemplateSegment::Literal("v2".into()),
            TemplateSegment::Literal("models".into()),
            TemplateSegment::Var("model".into()),
            TemplateSegment::Literal("versions".into()),
            TemplateSegment::Var("version".into()),
            TemplateSegment::Literal("infer".into()),
        ]
    );
    let t = parse_template("/files/{rest=**}").unwrap();
    assert_eq!(
        t.segments.last(),
        Some(&TemplateSegment::Rest("rest".into()))
    );
    for bad in [
        "v2/models",
        "/a/{x}y",
        "/a/{rest=**}/b",
        "/a/{x}/{x}",
        "/a/{1x}",
        "/a/{x=*}",
        "/a/{}",
        "/a/{x",
    ] {
        assert!(parse_template(bad).is_err(), "{bad}");
    }
}
