//! Every tracing error as `ferry validate` prints it: golden strings with `file:line:col`.

/// Parses `text` as `routes.yaml` and returns every error line.
fn errors(text: &str) -> Vec<String> {
    match ferry_config::parse("routes.yaml", text) {
        Ok(_) => panic!("expected errors, the config parsed:\n{text}"),
        Err(e) => e.to_string().lines().map(str::to_owned).collect(),
    }
}

/// `tracing:` with `body` spliced in below it (indented 2 spaces, first line at line 3).
fn with_tracing(body: &str) -> String {
    format!("apiVersion: ferry/v1\ntracing:\n{body}")
}

#[test]
fn endpoints_must_be_http_urls_with_a_host() {
    assert_eq!(
        errors(&with_tracing("  otlp:\n    endpoint: 127.0.0.1:4317\n")),
        [
            r#"routes.yaml:4:15: tracing.otlp.endpoint: invalid endpoint "127.0.0.1:4317": not an absolute URL (expected http:// or https:// and a host, e.g. "http://127.0.0.1:4317")"#
        ]
    );
    assert_eq!(
        errors(&with_tracing("  otlp: { endpoint: \"grpc://c:4317\" }\n")),
        [
            r#"routes.yaml:3:21: tracing.otlp.endpoint: invalid endpoint "grpc://c:4317": unsupported scheme "grpc" (expected http:// or https:// and a host, e.g. "http://127.0.0.1:4317")"#
        ]
    );
    assert_eq!(
        errors(&with_tracing("  otlp: { endpoint: \"http://:4317\" }\n")),
        [
            r#"routes.yaml:3:21: tracing.otlp.endpoint: invalid endpoint "http://:4317": no host (expected http:// or https:// and a host, e.g. "http://127.0.0.1:4317")"#
        ]
    );
    assert_eq!(
        errors(&with_tracing(
            "  otlp: { endpoint: \"http://c:70000\", protocol: http }\n"
        )),
        [
            r#"routes.yaml:3:21: tracing.otlp.endpoint: invalid endpoint "http://c:70000": invalid port (expected http:// or https:// and a host, e.g. "http://127.0.0.1:4317" or "http://collector:4318/v1/traces")"#
        ]
    );
    assert_eq!(
        errors(&with_tracing(
            "  otlp: { endpoint: \"http://c:4318/v1/traces?k=v\", protocol: http }\n"
        )),
        [
            r#"routes.yaml:3:21: tracing.otlp.endpoint: invalid endpoint "http://c:4318/v1/traces?k=v": query strings and fragments are not supported (expected http:// or https:// and a host, e.g. "http://127.0.0.1:4317" or "http://collector:4318/v1/traces")"#
        ]
    );
}

#[test]
fn a_path_needs_protocol_http() {
    assert_eq!(
        errors(&with_tracing(
            "  otlp:\n    endpoint: http://c:4317/v1/traces\n    protocol: grpc\n"
        )),
        [
            r#"routes.yaml:4:15: tracing.otlp.endpoint: invalid endpoint "http://c:4317/v1/traces": a path is only allowed with protocol: http (gRPC names its own) (expected http:// or https:// and a host, e.g. "http://127.0.0.1:4317")"#
        ]
    );
}

#[test]
fn unknown_protocol_and_propagation_list_the_allowed_values() {
    assert_eq!(
        errors(&with_tracing("  otlp: { protocol: http/json }\n")),
        [
            r#"routes.yaml:3:21: tracing.otlp.protocol: unknown value "http/json" (expected grpc or http)"#
        ]
    );
    assert_eq!(
        errors(&with_tracing("  propagation: [w3c, jaeger]\n")),
        [
            r#"routes.yaml:3:22: tracing.propagation[1]: unknown value "jaeger" (expected one of: w3c, b3, b3multi)"#
        ]
    );
}

#[test]
fn propagation_is_not_empty_and_has_no_duplicates() {
    assert_eq!(
        errors(&with_tracing("  propagation: []\n")),
        [
            "routes.yaml:3:16: tracing.propagation: empty list (expected at least one of w3c, b3, b3multi; omit propagation for [w3c])"
        ]
    );
    assert_eq!(
        errors(&with_tracing("  propagation: [w3c, b3, w3c, b3]\n")),
        [
            r#"routes.yaml:3:26: tracing.propagation[2]: duplicate propagation "w3c" (expected each format at most once)"#,
            r#"routes.yaml:3:31: tracing.propagation[3]: duplicate propagation "b3" (expected each format at most once)"#,
        ]
    );
}

#[test]
fn ratio_is_a_finite_number_from_zero_to_one() {
    for ratio in ["1.5", "-0.1", ".nan", "inf", "10%", "true", "\"\""] {
        let shown = ratio.trim_matches('"');
        assert_eq!(
            errors(&with_tracing(&format!(
                "  sampling: {{ ratio: {ratio} }}\n"
            ))),
            [format!(
                r#"routes.yaml:3:22: tracing.sampling.ratio: invalid ratio {shown:?} (expected a number from 0 to 1, e.g. 0.01)"#
            )],
            "{ratio}"
        );
    }
}

#[test]
fn queue_is_bounded() {
    for q in ["0", "-1", "1048577"] {
        assert_eq!(
            errors(&with_tracing(&format!("  queue: {q}\n"))),
            [format!(
                "routes.yaml:3:10: tracing.queue: invalid queue {q} (expected an integer from 1 to 1048576)"
            )]
        );
    }
}

#[test]
fn durations_are_positive() {
    assert_eq!(
        errors(&with_tracing(
            "  otlp: { timeout: 0s }\n  sampling:\n    slower_than: 0ms\n"
        )),
        [
            r#"routes.yaml:3:20: tracing.otlp.timeout: invalid timeout 0s (expected a duration > 0, e.g. "5s")"#,
            r#"routes.yaml:5:18: tracing.sampling.slower_than: invalid slower_than 0s (expected a duration > 0, e.g. "1s")"#,
        ]
    );
    assert_eq!(
        errors(&with_tracing(
            "  otlp: { timeout: 5 sec }\n  sampling: { slower_than: 1d }\n"
        )),
        [
            r#"routes.yaml:3:20: tracing.otlp.timeout: invalid duration "5 sec" (expected e.g. "500ms", "2s", "5m")"#,
            r#"routes.yaml:4:28: tracing.sampling.slower_than: invalid duration "1d" (expected e.g. "500ms", "2s", "5m")"#,
        ]
    );
}

#[test]
fn header_names_and_values_are_checked_and_values_never_shown() {
    assert_eq!(
        errors(&with_tracing(
            "  otlp:\n    headers:\n      \"x api\": a\n      X-Key: \"s3cret\\u0001\"\n      ok: \"caf\u{e9}\"\n      x-key: b\n"
        )),
        [
            "routes.yaml:5:7: tracing.otlp.headers.x api: invalid header name \"x api\" (expected letters, digits and !#$%&'*+-.^_`|~)",
            "routes.yaml:6:14: tracing.otlp.headers.X-Key: invalid header value: byte 6 is a control or non-ASCII character (expected visible ASCII, spaces and tabs; the value is not shown)",
            "routes.yaml:7:11: tracing.otlp.headers.ok: invalid header value: byte 3 is a control or non-ASCII character (expected visible ASCII, spaces and tabs; the value is not shown)",
            r#"routes.yaml:8:7: tracing.otlp.headers.x-key: duplicate header "x-key" (expected each name once; names ignore case)"#,
        ]
    );
}

#[test]
fn service_name_is_not_empty() {
    assert_eq!(
        errors(&with_tracing("  service_name: \" \"\n")),
        [
            r#"routes.yaml:3:17: tracing.service_name: invalid service_name " " (expected a non-empty name without control characters, e.g. "ferry", or omit it to use OTEL_SERVICE_NAME)"#
        ]
    );
}

#[test]
fn unknown_fields_are_rejected_with_every_other_error() {
    assert_eq!(
        errors(&with_tracing(
            "  exporter: jaeger\n  otlp: { endpont: \"http://c\", insecure: true }\n  sampling: { rate: 0.5, slower_than: 0s }\n  queue: 0\n"
        )),
        [
            r#"routes.yaml:3:3: tracing.exporter: unknown field "exporter" (expected one of: otlp, service_name, propagation, sampling, queue)"#,
            r#"routes.yaml:4:11: tracing.otlp.endpont: unknown field "endpont" (expected one of: endpoint, protocol, headers, timeout)"#,
            r#"routes.yaml:4:32: tracing.otlp.insecure: unknown field "insecure" (expected one of: endpoint, protocol, headers, timeout)"#,
            r#"routes.yaml:5:15: tracing.sampling.rate: unknown field "rate" (expected one of: ratio, always_errors, slower_than)"#,
            r#"routes.yaml:5:39: tracing.sampling.slower_than: invalid slower_than 0s (expected a duration > 0, e.g. "1s")"#,
            "routes.yaml:6:10: tracing.queue: invalid queue 0 (expected an integer from 1 to 1048576)",
        ]
    );
}
