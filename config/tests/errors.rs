//! Golden error strings: every kind of config error, exactly as `ferry validate` prints it.

/// Parses `text` as `routes.yaml` and returns every error line.
fn errors(text: &str) -> Vec<String> {
    match ferry_config::parse("routes.yaml", text) {
        Ok(_) => panic!("expected errors, the config parsed:\n{text}"),
        Err(e) => e.to_string().lines().map(str::to_owned).collect(),
    }
}

fn one_error(text: &str) -> String {
    let mut all = errors(text);
    assert_eq!(all.len(), 1, "expected one error, got {all:#?}");
    all.remove(0)
}

/// A valid file with one listener and one cluster; `route` is spliced in as the only route
/// (indented 6 spaces, first line at line 7).
fn with_route(route: &str) -> String {
    format!(
        "apiVersion: ferry/v1\nlisteners:\n  - name: main\n    address: 127.0.0.1:18080\n    routes:\n      - name: r\n{route}clusters:\n  - name: up\n    endpoints: [127.0.0.1:18081]\n"
    )
}

#[test]
fn wrong_api_version() {
    assert_eq!(
        one_error("apiVersion: ferry/v2\n"),
        r#"routes.yaml:1:13: apiVersion: unsupported apiVersion "ferry/v2" (expected "ferry/v1")"#
    );
}

#[test]
fn missing_api_version_and_empty_file() {
    let want = r#"routes.yaml:1:1: apiVersion: missing apiVersion (expected "ferry/v1")"#;
    assert_eq!(one_error("listeners: []\n"), want);
    assert_eq!(one_error(""), want);
}

#[test]
fn bad_duration() {
    assert_eq!(
        one_error(&with_route("        to: up\n        timeout: 5 sec\n")),
        r#"routes.yaml:8:18: listeners[0].routes[0].timeout: invalid duration "5 sec" (expected e.g. "500ms", "2s", "5m")"#
    );
}

#[test]
fn unknown_cluster() {
    assert_eq!(
        one_error(&with_route("        to: down\n")),
        r#"routes.yaml:7:13: listeners[0].routes[0].to: unknown cluster "down" (expected one of: up)"#
    );
    assert_eq!(
        one_error(&with_route(
            "        to: [{ cluster: up }, { cluster: down, weight: 2 }]\n"
        )),
        r#"routes.yaml:7:42: listeners[0].routes[0].to[1].cluster: unknown cluster "down" (expected one of: up)"#
    );
}

#[test]
fn zero_weight() {
    assert_eq!(
        one_error(&with_route("        to: [{ cluster: up, weight: 0 }]\n")),
        "routes.yaml:7:37: listeners[0].routes[0].to[0].weight: invalid weight 0 (expected an integer > 0)"
    );
}

#[test]
fn empty_split() {
    assert_eq!(
        one_error(&with_route("        to: []\n")),
        "routes.yaml:7:13: listeners[0].routes[0].to: empty list (expected a cluster name or at least one {cluster, weight})"
    );
}

#[test]
fn both_or_neither_destination() {
    assert_eq!(
        one_error(&with_route(
            "        to: up\n        direct_response: { status: 204 }\n"
        )),
        "routes.yaml:6:9: listeners[0].routes[0]: both to and direct_response are set (expected exactly one)"
    );
    assert_eq!(
        one_error(&with_route("        timeout: 1s\n")),
        "routes.yaml:6:9: listeners[0].routes[0]: neither to nor direct_response is set (expected exactly one)"
    );
}

#[test]
fn status_out_of_range() {
    assert_eq!(
        one_error(&with_route("        direct_response: { status: 600 }\n")),
        "routes.yaml:7:36: listeners[0].routes[0].direct_response.status: invalid status 600 (expected 100 to 599)"
    );
    assert_eq!(
        one_error(&with_route("        direct_response: { status: 99 }\n")),
        "routes.yaml:7:36: listeners[0].routes[0].direct_response.status: invalid status 99 (expected 100 to 599)"
    );
}

#[test]
fn retry_attempts_and_budget() {
    assert_eq!(
        errors(&with_route(
            "        to: up\n        retry: { attempts: 0, budget: 120% }\n"
        )),
        [
            "routes.yaml:8:28: listeners[0].routes[0].retry.attempts: invalid attempts 0 (expected 1 to 10, counting the first try)",
            r#"routes.yaml:8:39: listeners[0].routes[0].retry.budget: invalid percentage "120%" (expected 0% to 100%, e.g. "20%")"#,
        ]
    );
    assert_eq!(
        one_error(&with_route(
            "        to: up\n        retry:\n          attempts: 11\n"
        )),
        "routes.yaml:9:21: listeners[0].routes[0].retry.attempts: invalid attempts 11 (expected 1 to 10, counting the first try)"
    );
}

#[test]
fn unknown_retry_condition() {
    assert_eq!(
        one_error(&with_route(
            "        to: up\n        retry: { on: [http-504] }\n"
        )),
        r#"routes.yaml:8:23: listeners[0].routes[0].retry.on[0]: unknown value "http-504" (expected one of: connect-failure, http-503, http-5xx, unavailable, resource-exhausted, reset)"#
    );
}

#[test]
fn bad_regexes() {
    assert_eq!(
        one_error(&with_route(
            "        to: up\n        match:\n          path: { regex: \"/v[0-9+\" }\n"
        )),
        r#"routes.yaml:9:26: listeners[0].routes[0].match.path.regex: invalid regex "/v[0-9+": unclosed character class (expected a Rust regex, e.g. "^/v[0-9]+/.*")"#
    );
    assert_eq!(
        one_error(&with_route(
            "        to: up\n        match:\n          headers: [{ name: x-a, regex: \"a)|(b\" }]\n"
        )),
        r#"routes.yaml:9:41: listeners[0].routes[0].match.headers[0].regex: invalid regex "a)|(b": unopened group (expected a Rust regex, e.g. "^/v[0-9]+/.*")"#
    );
}

#[test]
fn bad_header_names() {
    assert_eq!(
        one_error(&with_route(
            "        to: up\n        match:\n          headers: [{ name: \"x tenant\", exact: gold }]\n"
        )),
        r#"routes.yaml:9:29: listeners[0].routes[0].match.headers[0].name: invalid header name "x tenant" (expected letters, digits and !#$%&'*+-.^_`|~)"#
    );
    assert_eq!(
        errors(&with_route(
            "        to: up\n        request_headers:\n          set: { \"bad name\": v }\n          remove: [\"x(y)\"]\n"
        )),
        [
            r#"routes.yaml:9:30: listeners[0].routes[0].request_headers.set.bad name: invalid header name "bad name" (expected letters, digits and !#$%&'*+-.^_`|~)"#,
            r#"routes.yaml:10:20: listeners[0].routes[0].request_headers.remove[0]: invalid header name "x(y)" (expected letters, digits and !#$%&'*+-.^_`|~)"#,
        ]
    );
}

#[test]
fn header_match_needs_exactly_one_condition() {
    assert_eq!(
        one_error(&with_route(
            "        to: up\n        match:\n          headers: [{ name: x-a, exact: a, prefix: b }]\n"
        )),
        "routes.yaml:9:21: listeners[0].routes[0].match.headers[0]: exactly one of exact, prefix, regex, present: true must be set (expected e.g. {name: x-tenant, exact: gold})"
    );
}

#[test]
fn path_templates() {
    assert_eq!(
        one_error(&with_route(
            "        to: up\n        match:\n          path: { template: \"/v2/models/{model}x/infer\" }\n"
        )),
        r#"routes.yaml:9:29: listeners[0].routes[0].match.path.template: invalid path template "/v2/models/{model}x/infer": "{model}x" mixes text and a variable; "{name}" must be a whole segment (expected e.g. "/v2/models/{model}/infer" or a final "{rest=**}")"#
    );
    assert_eq!(
        one_error(&with_route(
            "        to: up\n        match:\n          path: { template: \"/files/{rest=**}/x\" }\n"
        )),
        r#"routes.yaml:9:29: listeners[0].routes[0].match.path.template: invalid path template "/files/{rest=**}/x": "{name=**}" is only allowed as the last segment (expected e.g. "/v2/models/{model}/infer" or a final "{rest=**}")"#
    );
}

#[test]
fn path_match_needs_exactly_one_kind_and_a_slash() {
    assert_eq!(
        one_error(&with_route(
            "        to: up\n        match:\n          path: { exact: /a, prefix: /b }\n"
        )),
        "routes.yaml:9:17: listeners[0].routes[0].match.path: exactly one of exact, prefix, regex, template must be set (expected e.g. {prefix: /v2/})"
    );
    assert_eq!(
        one_error(&with_route(
            "        to: up\n        match:\n          path: { prefix: v2/ }\n"
        )),
        r#"routes.yaml:9:27: listeners[0].routes[0].match.path.prefix: prefix path "v2/" does not start with "/" (expected e.g. "/v2/")"#
    );
}

#[test]
fn prefix_rewrite_from_must_be_absolute() {
    assert_eq!(
        one_error(&with_route(
            "        to: up\n        prefix_rewrite: { from: v1/, to: /openai/v1/ }\n"
        )),
        r#"routes.yaml:8:33: listeners[0].routes[0].prefix_rewrite.from: path prefix "v1/" does not start with "/" (expected e.g. "/v1/")"#
    );
}

#[test]
fn bad_socket_addresses() {
    assert_eq!(
        errors(
            "apiVersion: ferry/v1\nadmin: { address: localhost:15000 }\nclusters:\n  - name: up\n    endpoints: [127.0.0.1, 127.0.0.1:80]\n"
        ),
        [
            r#"routes.yaml:2:19: admin.address: invalid socket address "localhost:15000" (expected ip:port, e.g. "127.0.0.1:8080")"#,
            r#"routes.yaml:5:17: clusters[0].endpoints[0]: invalid socket address "127.0.0.1" (expected ip:port, e.g. "127.0.0.1:8080")"#,
        ]
    );
}

#[test]
fn bad_dns_names() {
    assert_eq!(
        one_error(
            "apiVersion: ferry/v1\nclusters:\n  - name: up\n    dns: { names: [\"vllm svc:8000\"], refresh: 5s }\n"
        ),
        r#"routes.yaml:4:20: clusters[0].dns.names[0]: invalid host:port "vllm svc:8000" (expected e.g. "svc.ns.svc.cluster.local:8000")"#
    );
}

#[test]
fn duplicates() {
    let text = "apiVersion: ferry/v1
admin: { address: 127.0.0.1:15000 }
listeners:
  - name: a
    address: 127.0.0.1:15000
    routes:
      - { name: r, to: up }
      - { name: r, to: up }
  - name: a
    address: 127.0.0.1:15001
  - name: b
    address: 127.0.0.1:15001
clusters:
  - { name: up, endpoints: [127.0.0.1:8080] }
  - { name: up, endpoints: [127.0.0.1:8081] }
";
    assert_eq!(
        errors(text),
        [
            "routes.yaml:5:14: listeners[0].address: duplicate address 127.0.0.1:15000 (expected unique addresses; also used by admin.address)",
            r#"routes.yaml:8:17: listeners[0].routes[1].name: duplicate route name "r" (expected unique names within a listener; first used by listeners[0].routes[0])"#,
            r#"routes.yaml:9:11: listeners[1].name: duplicate listener name "a" (expected unique names; first used by listeners[0])"#,
            "routes.yaml:12:14: listeners[2].address: duplicate address 127.0.0.1:15001 (expected unique addresses; also used by listeners[1].address)",
            r#"routes.yaml:15:13: clusters[1].name: duplicate cluster name "up" (expected unique names; first used by clusters[0])"#,
        ]
    );
}

#[test]
fn port_zero_addresses_never_collide() {
    let text = "apiVersion: ferry/v1
admin: { address: 127.0.0.1:0 }
listeners:
  - { name: a, address: 127.0.0.1:0 }
  - { name: b, address: 127.0.0.1:0 }
";
    assert!(ferry_config::parse("routes.yaml", text).is_ok());
}

#[test]
fn cluster_endpoint_source() {
    assert_eq!(
        errors(
            "apiVersion: ferry/v1\nclusters:\n  - name: a\n  - name: b\n    endpoints: [127.0.0.1:1]\n    original_authority: {}\n  - name: c\n    endpoints: []\n"
        ),
        [
            "routes.yaml:3:5: clusters[0]: exactly one of endpoints, dns, original_authority must be set (expected e.g. endpoints: [127.0.0.1:8080])",
            "routes.yaml:4:5: clusters[1]: exactly one of endpoints, dns, original_authority must be set (expected e.g. endpoints: [127.0.0.1:8080])",
            "routes.yaml:8:16: clusters[2].endpoints: empty list (expected at least one ip:port)",
        ]
    );
}

#[test]
fn outlier_settings() {
    assert_eq!(
        errors(
            "apiVersion: ferry/v1\nclusters:\n  - name: a\n    endpoints: [127.0.0.1:1]\n    outlier: { consecutive_failures: 0, ejection: 1m, max_ejection: 10s, max_ejection_percent: 101 }\n"
        ),
        [
            "routes.yaml:5:38: clusters[0].outlier.consecutive_failures: invalid consecutive_failures 0 (expected an integer >= 1)",
            "routes.yaml:5:69: clusters[0].outlier.max_ejection: max_ejection 10s is shorter than ejection 1m (expected max_ejection >= ejection)",
            "routes.yaml:5:96: clusters[0].outlier.max_ejection_percent: invalid max_ejection_percent 101 (expected 0 to 100)",
        ]
    );
}

#[test]
fn unknown_fields_name_the_field_and_list_the_expected_ones() {
    assert_eq!(
        one_error("apiVersion: ferry/v1\ntracng: {}\n"),
        r#"routes.yaml:2:1: tracng: unknown field "tracng" (expected one of: apiVersion, admin, runtime, identity, redis, tracing, access_log, listeners, clusters)"#
    );
    assert_eq!(
        one_error(&with_route("        to: up\n        tiemout: 1s\n")),
        r#"routes.yaml:8:9: listeners[0].routes[0].tiemout: unknown field "tiemout" (expected one of: name, match, to, direct_response, request_headers, response_headers, prefix_rewrite, timeout, retry, translate, validate_tensors, authorization, rate_limit, concurrency, access_log, load_report, fault, mirror)"#
    );
    assert_eq!(
        one_error(&with_route("        to: [{ cluster: up, wieght: 2 }]\n")),
        r#"routes.yaml:7:29: listeners[0].routes[0].to[0].wieght: unknown field "wieght" (expected cluster or weight)"#
    );
    // The misspelt key is dropped and validation goes on, so the matcher it left empty is
    // reported too.
    assert_eq!(
        errors(&with_route(
            "        to: up\n        match:\n          model: { name: { exakt: a } }\n"
        )),
        vec![
            r#"routes.yaml:9:26: listeners[0].routes[0].match.model.name: exactly one of exact, prefix, regex must be set (expected e.g. {prefix: "llama-"})"#,
            r#"routes.yaml:9:28: listeners[0].routes[0].match.model.name.exakt: unknown field "exakt" (expected one of: exact, prefix, regex)"#,
        ]
    );
}

#[test]
fn unknown_fields_are_reported_with_every_other_error() {
    let all = errors(&format!(
        "{}{}",
        with_route(
            "        to: nowhere
        colour: red
        timeout: 5 sec
"
        ),
        "    bogus: 1
"
    ));
    assert_eq!(
        all,
        vec![
            r#"routes.yaml:7:13: listeners[0].routes[0].to: unknown cluster "nowhere" (expected one of: up)"#,
            r#"routes.yaml:8:9: listeners[0].routes[0].colour: unknown field "colour" (expected one of: name, match, to, direct_response, request_headers, response_headers, prefix_rewrite, timeout, retry, translate, validate_tensors, authorization, rate_limit, concurrency, access_log, load_report, fault, mirror)"#,
            r#"routes.yaml:9:18: listeners[0].routes[0].timeout: invalid duration "5 sec" (expected e.g. "500ms", "2s", "5m")"#,
            r#"routes.yaml:13:5: clusters[0].bogus: unknown field "bogus" (expected one of: name, endpoints, dns, original_authority, protocol, lb, connect_timeout, idle_timeout, outlier, tls, slow_start)"#,
        ]
    );
}

#[test]
fn wrong_types_and_values() {
    assert_eq!(
        one_error(&with_route("        to: 5\n")),
        "routes.yaml:7:13: listeners[0].routes[0].to: invalid type: integer 5 (expected a cluster name or a list of {cluster, weight})"
    );
    assert_eq!(
        one_error("apiVersion: ferry/v1\nclusters:\n  - name: a\n    lb: random\n"),
        r#"routes.yaml:4:9: clusters[0].lb: unknown value "random" (expected one of: round-robin, p2c-ewma, hash)"#
    );
    assert_eq!(
        one_error(
            "apiVersion: ferry/v1\nlisteners:\n  - name: a\n    address: 127.0.0.1:1\n    limits: { model_sniff_bytes: -1 }\n"
        ),
        "routes.yaml:5:34: listeners[0].limits.model_sniff_bytes: invalid value: integer -1 (expected an integer from 0 to 4294967295)"
    );
    assert_eq!(
        one_error(
            "apiVersion: ferry/v1\nlisteners:\n  - name: a\n    address: 127.0.0.1:1\n    limits: { max_connections: -1 }\n"
        ),
        "routes.yaml:5:32: listeners[0].limits.max_connections: invalid value: integer -1 (expected an integer from 0 to 4294967295)"
    );
    assert_eq!(
        one_error(
            "apiVersion: ferry/v1\nlisteners:\n  - name: a\n    address: 127.0.0.1:1\n    limits: { stalled_write_timeout: 5 sec }\n"
        ),
        r#"routes.yaml:5:38: listeners[0].limits.stalled_write_timeout: invalid duration "5 sec" (expected e.g. "500ms", "2s", "5m")"#
    );
    assert_eq!(
        one_error("apiVersion: ferry/v1\nlisteners:\n  - address: 127.0.0.1:1\n"),
        r#"routes.yaml:3:5: listeners[0].name: missing field "name" (expected it to be set)"#
    );
}

#[test]
fn yaml_syntax_errors() {
    assert_eq!(
        one_error("apiVersion: ferry/v1\nlisteners: [ { name: a\n"),
        "routes.yaml:3:1: invalid YAML: while parsing a flow mapping, did not find expected ',' or '}'"
    );
    assert_eq!(
        one_error("apiVersion: ferry/v1\napiVersion: ferry/v1\n"),
        "routes.yaml:2:1: invalid YAML: duplicated key in mapping"
    );
    assert_eq!(
        one_error("apiVersion: ferry/v1\n---\napiVersion: ferry/v1\n"),
        "routes.yaml:3:1: a second YAML document (expected exactly one document per file)"
    );
}

#[test]
fn many_errors_are_reported_at_once_in_file_order() {
    let text = "apiVersion: ferry/v1
listeners:
  - name: inbound
    address: 0.0.0.0:99999
    routes:
      - name: a
        to: [{ cluster: triton, weight: 0 }]
        timeout: 10 seconds
      - name: b
        direct_response: { status: 1000 }
        retry: { attempts: 20 }
clusters:
  - name: triton
    endpoints: [127.0.0.1:8001]
    connect_timeout: fast
";
    assert_eq!(
        errors(text),
        [
            r#"routes.yaml:4:14: listeners[0].address: invalid socket address "0.0.0.0:99999" (expected ip:port, e.g. "127.0.0.1:8080")"#,
            "routes.yaml:7:41: listeners[0].routes[0].to[0].weight: invalid weight 0 (expected an integer > 0)",
            r#"routes.yaml:8:18: listeners[0].routes[0].timeout: invalid duration "10 seconds" (expected e.g. "500ms", "2s", "5m")"#,
            "routes.yaml:10:36: listeners[0].routes[1].direct_response.status: invalid status 1000 (expected 100 to 599)",
            "routes.yaml:11:28: listeners[0].routes[1].retry.attempts: invalid attempts 20 (expected 1 to 10, counting the first try)",
            r#"routes.yaml:15:22: clusters[0].connect_timeout: invalid duration "fast" (expected e.g. "500ms", "2s", "5m")"#,
        ]
    );
}

#[test]
fn unreadable_file_is_one_error_naming_it() {
    let dir = std::env::temp_dir().join(format!("ferry-config-missing-{}", std::process::id()));
    let path = dir.join("nope.yaml");
    let err = ferry_config::load(&path).unwrap_err();
    assert_eq!(err.len(), 1);
    let line = err.to_string();
    assert!(
        line.starts_with(&format!("{}: cannot read config file: ", path.display())),
        "{line}"
    );
}

#[test]
fn error_fields_match_display() {
    let err = ferry_config::parse("f.yaml", "apiVersion: nope\n").unwrap_err();
    let e = &err.errors[0];
    assert_eq!(
        (e.file.as_str(), e.line, e.col, e.path.as_str()),
        ("f.yaml", 1, 13, "apiVersion")
    );
    assert_eq!(
        e.to_string(),
        format!("f.yaml:1:13: apiVersion: {}", e.message)
    );
}

#[test]
fn bad_translate() {
    let got = errors(&with_route(
        "        to: up\n        translate: { from: rest, to: rest, max_decoded_bytes: 0, upstream_binary: true }\n",
    ));
    assert_eq!(
        got,
        vec![
            r#"routes.yaml:8:38: listeners[0].routes[0].translate.to: from and to are both rest (expected two different protocols, e.g. from: oip-v2-rest, to: kserve-v1)"#,
            r#"routes.yaml:8:63: listeners[0].routes[0].translate.max_decoded_bytes: invalid limit 0 (expected a number of bytes > 0, e.g. 67108864)"#,
            r#"routes.yaml:8:83: listeners[0].routes[0].translate.upstream_binary: only applies to from: grpc, to: rest (expected it omitted)"#,
        ]
    );
    let unknown = one_error(&with_route(
        "        to: up\n        translate: { from: rest, to: grpc, protocol: protobuf }\n",
    ));
    assert!(unknown.starts_with("routes.yaml:8:"), "{unknown}");
    assert!(unknown.contains("oip-v2"), "{unknown}");
    assert!(unknown.contains("descriptor"), "{unknown}");
}

#[test]
fn bad_descriptor_translate() {
    assert_eq!(
        one_error(&with_route(
            "        to: up\n        translate: { from: rest, to: grpc, protocol: descriptor }\n",
        )),
        r#"routes.yaml:8:54: listeners[0].routes[0].translate.protocol: protocol descriptor needs descriptor_set (expected e.g. descriptor_set: api.pb)"#
    );
    assert_eq!(
        errors(&with_route(
            "        to: up\n        translate: { from: rest, to: grpc, descriptor_set: a.pb, streaming: sse }\n",
        )),
        vec![
            r#"routes.yaml:8:60: listeners[0].routes[0].translate.descriptor_set: only applies to protocol: descriptor (expected it omitted with oip-v2)"#,
            r#"routes.yaml:8:77: listeners[0].routes[0].translate.streaming: only applies to protocol: descriptor (expected it omitted with oip-v2)"#,
        ]
    );
    assert_eq!(
        one_error(&with_route(
            "        to: up\n        translate: { from: grpc, to: rest, protocol: descriptor, descriptor_set: a.pb }\n",
        )),
        r#"routes.yaml:8:54: listeners[0].routes[0].translate.protocol: descriptor transcoding is REST → gRPC only (expected from: rest, to: grpc)"#
    );
    let bad_enum = one_error(&with_route(
        "        to: up\n        translate: { from: rest, to: grpc, protocol: descriptor, descriptor_set: a.pb, streaming: websocket }\n",
    ));
    assert!(
        bad_enum.starts_with("routes.yaml:8:") && bad_enum.contains("translate.streaming"),
        "{bad_enum}"
    );
    assert!(
        bad_enum.contains("ndjson") && bad_enum.contains("sse"),
        "{bad_enum}"
    );
    let bad_enum = one_error(&with_route(
        "        to: up\n        translate: { from: rest, to: grpc, protocol: descriptor, descriptor_set: a.pb, unknown_fields: drop }\n",
    ));
    assert!(bad_enum.contains("translate.unknown_fields"), "{bad_enum}");
    assert!(
        bad_enum.contains("reject") && bad_enum.contains("ignore"),
        "{bad_enum}"
    );
}

#[test]
fn descriptor_translate_resolves_the_file_and_shows_in_the_effective_config() {
    let text = with_route(
        "        to: up\n        translate: { from: rest, to: grpc, protocol: descriptor, descriptor_set: api/lib.pb, unknown_fields: ignore, streaming: sse, services: [lib.v1.Library] }\n",
    );
    let config = ferry_config::parse("/etc/ferry/routes.yaml", &text).unwrap();
    let t = config.listeners[0].routes[0].translate.clone().unwrap();
    let d = t.descriptor.unwrap();
    assert_eq!(
        d.descriptor_set,
        std::path::Path::new("/etc/ferry/api/lib.pb")
    );
    assert_eq!(
        d.at.error("unreadable").to_string(),
        "/etc/ferry/routes.yaml:8:82: listeners[0].routes[0].translate.descriptor_set: unreadable"
    );
    assert!(!d.reject_unknown_fields);
    assert_eq!(d.streaming, ferry_config::StreamingFormat::Sse);
    assert_eq!(d.services, ["lib.v1.Library"]);
    let route = &config.effective_json["listeners"][0]["routes"][0];
    assert_eq!(
        route["translate"],
        serde_json::json!({"from": "rest", "to": "grpc", "protocol": "descriptor",
            "max_decoded_bytes": 67108864, "descriptor_set": "/etc/ferry/api/lib.pb",
            "unknown_fields": "ignore", "streaming": "sse", "services": ["lib.v1.Library"]})
    );
}

#[test]
fn translate_shows_in_the_effective_config() {
    let text = with_route("        to: up\n        translate: { from: grpc, to: rest }\n");
    let config = ferry_config::parse("routes.yaml", &text).unwrap();
    let route = &config.effective_json["listeners"][0]["routes"][0];
    assert_eq!(
        route["translate"],
        serde_json::json!({"from": "grpc", "to": "rest", "protocol": "oip-v2",
            "max_decoded_bytes": 67108864, "upstream_binary": "auto"})
    );
    let t = config.listeners[0].routes[0].translate.clone().unwrap();
    assert_eq!(t.direction, ferry_config::TranslateDirection::GrpcToRest);
    assert_eq!(t.upstream_binary, ferry_config::UpstreamBinary::Auto);
    for (value, want, shown) in [
        (
            "true",
            ferry_config::UpstreamBinary::On,
            serde_json::json!(true),
        ),
        (
            "false",
            ferry_config::UpstreamBinary::Off,
            serde_json::json!(false),
        ),
        (
            "auto",
            ferry_config::UpstreamBinary::Auto,
            serde_json::json!("auto"),
        ),
    ] {
        let text = with_route(&format!(
            "        to: up\n        translate: {{ from: grpc, to: rest, upstream_binary: {value} }}\n"
        ));
        let config = ferry_config::parse("routes.yaml", &text).unwrap();
        let t = config.listeners[0].routes[0].translate.as_ref().unwrap();
        assert_eq!(t.upstream_binary, want, "{value}");
        let route = &config.effective_json["listeners"][0]["routes"][0];
        assert_eq!(route["translate"]["upstream_binary"], shown, "{value}");
    }
    let bad = one_error(&with_route(
        "        to: up\n        translate: { from: grpc, to: rest, upstream_binary: sometimes }\n",
    ));
    assert!(bad.starts_with("routes.yaml:8:"), "{bad}");
    assert!(bad.contains("upstream_binary"), "{bad}");
}

#[test]
fn bad_validate_tensors() {
    let got = errors(&with_route(concat!(
        "        to: up\n",
        "        validate_tensors:\n",
        "          metadata: static\n",
        "          refresh: 5s\n",
        "          models:\n",
        "            - name: m\n",
        "              inputs:\n",
        "                - { name: A, datatype: FLOAT, shape: [-2, 3] }\n",
        "                - { name: A, datatype: FP32, shape: [1] }\n",
        "            - { name: m, inputs: [] }\n",
    )));
    assert_eq!(
        got,
        vec![
            r#"routes.yaml:10:20: listeners[0].routes[0].validate_tensors.refresh: only applies to metadata: upstream (expected it omitted)"#,
            r#"routes.yaml:14:40: listeners[0].routes[0].validate_tensors.models[0].inputs[0].datatype: unknown datatype "FLOAT" (expected one of: BOOL, UINT8, UINT16, UINT32, UINT64, INT8, INT16, INT32, INT64, FP16, BF16, FP32, FP64, BYTES)"#,
            r#"routes.yaml:14:55: listeners[0].routes[0].validate_tensors.models[0].inputs[0].shape[0]: invalid dimension -2 (expected a size >= 0, or -1 for any)"#,
            r#"routes.yaml:15:27: listeners[0].routes[0].validate_tensors.models[0].inputs[1].name: duplicate input "A" (expected each input once)"#,
            r#"routes.yaml:16:23: listeners[0].routes[0].validate_tensors.models[1].name: duplicate model "m" (expected each model once)"#,
        ]
    );
    let got = errors(&with_route(
        "        to: up\n        validate_tensors: { metadata: static, refresh: 0s }\n",
    ));
    assert_eq!(
        got,
        vec![
            r#"routes.yaml:8:39: listeners[0].routes[0].validate_tensors.metadata: metadata: static needs a models list (expected models: [{name, inputs}])"#,
            r#"routes.yaml:8:56: listeners[0].routes[0].validate_tensors.refresh: only applies to metadata: upstream (expected it omitted)"#,
        ]
    );
    let got = errors(&with_route(
        "        to: up\n        validate_tensors: { refresh: 0s, models: [] }\n",
    ));
    assert_eq!(
        got,
        vec![
            r#"routes.yaml:8:38: listeners[0].routes[0].validate_tensors.refresh: invalid refresh 0s (expected a duration > 0, e.g. "30s")"#,
            r#"routes.yaml:8:50: listeners[0].routes[0].validate_tensors.models: only applies to metadata: static (expected it omitted)"#,
        ]
    );
}

#[test]
fn validate_tensors_shows_in_the_effective_config() {
    let text = with_route("        to: up\n        validate_tensors: {}\n");
    let config = ferry_config::parse("routes.yaml", &text).unwrap();
    let route = &config.effective_json["listeners"][0]["routes"][0];
    assert_eq!(
        route["validate_tensors"],
        serde_json::json!({"metadata": "upstream", "refresh": "30s"})
    );
}
