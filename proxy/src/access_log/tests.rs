use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant, UNIX_EPOCH};

use ferry_config::{AccessLogFormat, FieldLocation};
use ferry_filters::trace_context::TraceId;
use serde_json::{Value, json};

use super::format::date_of;
use super::*;

fn record() -> AccessRecord {
    AccessRecord {
        // 2026-12-05T07:30:00.123Z
        start: UNIX_EPOCH + Duration::from_millis(1_796_455_800_123),
        listener: "inbound".into(),
        route: Some("infer".into()),
        model: Some("resnet \"50\"\n".into()),
        model_version: None,
        cluster: Some("local".into()),
        endpoint: Some("127.0.0.1:8080".parse().unwrap()),
        protocol: http::Version::HTTP_2,
        method: http::Method::POST,
        request: RequestText::new(
            "/inference.GRPCInferenceService/ModelInfer",
            Some("models.local"),
            Some("r-1"),
        ),
        grpc: true,
        status: Some(200),
        grpc_status: Some(0),
        translate: None,
        bytes_in: 12,
        bytes_out: 34,
        duration: Duration::from_micros(1500),
        total: Duration::from_micros(2250),
        upstream_duration: Some(Duration::from_micros(1200)),
        ferry_duration: Duration::from_micros(300),
        attempts: 1,
        failure: None,
        peer_identity: None,
        ratelimit: None,
        tokens: None,
        trace_id: Some(TraceId(
            *b"\x4b\xf9\x2f\x35\x77\xb3\x4d\xa6\xa3\xce\x92\x9d\x0e\x0e\x47\x36",
        )),
        span_id: None,
    }
}

fn json(r: &AccessRecord) -> Value {
    let mut out = Vec::new();
    json_line(&mut out, r);
    assert_eq!(out.last(), Some(&b'\n'));
    assert_eq!(out.iter().filter(|b| **b == b'\n').count(), 1, "one line");
    serde_json::from_slice(&out).unwrap()
}

#[test]
fn json_lines_carry_every_known_fact_and_omit_the_rest() {
    assert_eq!(
        json(&record()),
        json!({
            "ts": "2026-12-05T07:30:00.123Z",
            "listener": "inbound", "route": "infer", "cluster": "local",
            "endpoint": "127.0.0.1:8080", "protocol": "HTTP/2", "method": "POST",
            "authority": "models.local", "path": "/inference.GRPCInferenceService/ModelInfer",
            "grpc_service": "inference.GRPCInferenceService", "grpc_method": "ModelInfer",
            "status": 200, "grpc_status": 0, "model": "resnet \"50\"\n",
            "bytes_in": 12, "bytes_out": 34, "duration_ms": 2.25, "upstream_ms": 1.2,
            "ferry_ms": 0.3, "ttfb_ms": 1.5, "attempts": 1, "request_id": "r-1",
            "trace_id": "4bf92f3577b34da6a3ce929d0e0e4736",
        })
    );
}

#[test]
fn rate_limit_state_is_one_object_in_json_and_one_field_in_text() {
    let mut r = record();
    r.ratelimit = Some(RateLimitState {
        limit: 4,
        remaining: 0,
        reset_s: 1,
    });
    assert_eq!(
        json(&r)["ratelimit"],
        json!({ "limit": 4, "remaining": 0, "reset_s": 1 })
    );
    let mut out = Vec::new();
    text_line(&mut out, &r);
    assert!(
        out.ends_with(b" - 4/0/1\n"),
        "{}",
        String::from_utf8_lossy(&out)
    );
}

#[test]
fn json_escapes_control_characters() {
    let mut r = record();
    r.model = Some("a\u{1}b\\c\u{7f}é".into());
    assert_eq!(json(&r)["model"], "a\u{1}b\\c\u{7f}é");
}

#[test]
fn text_lines_have_a_fixed_field_count_and_dashes_for_absent_facts() {
    let mut out = Vec::new();
    text_line(&mut out, &record());
    let line = String::from_utf8(out).unwrap();
    assert_eq!(
        line,
        "2026-12-05T07:30:00.123Z inbound infer \"POST /inference.GRPCInferenceService/ModelInfer HTTP/2\" \
         200 0 12 34 2.250 1.200 0.300 1.500 1 - local 127.0.0.1:8080 models.local \
         resnet\\x20\\x2250\\x22\\x0a - inference.GRPCInferenceService/ModelInfer - r-1 \
         4bf92f3577b34da6a3ce929d0e0e4736 - - -\n"
    );
    // 26 documented fields; the quoted request counts as one and holds three words.
    assert_eq!(line.split_whitespace().count(), 26 + 2);
}

#[test]
fn request_texts_share_one_buffer_and_keep_absent_parts_absent() {
    let t = RequestText::new("/p", None, Some("id"));
    assert_eq!(
        (t.path(), t.authority(), t.request_id()),
        ("/p", None, Some("id"))
    );
    let t = RequestText::new("/p", Some("h:1"), None);
    assert_eq!(
        (t.path(), t.authority(), t.request_id()),
        ("/p", Some("h:1"), None)
    );
    let mut r = record();
    r.request = RequestText::new("/pkg.Svc/Method/extra", None, None);
    assert_eq!(r.grpc_parts(), None, "not a gRPC method path");
    r.grpc = false;
    r.request = RequestText::new("/pkg.Svc/Method", None, None);
    assert_eq!(r.grpc_parts(), None, "not a gRPC call");
}

#[test]
fn ipv6_endpoints_and_long_durations_are_written_whole() {
    let mut r = record();
    r.endpoint = Some("[::1]:8080".parse().unwrap());
    r.total = Duration::from_secs(3661) + Duration::from_micros(7);
    let line = json(&r);
    assert_eq!(line["endpoint"], "[::1]:8080");
    assert_eq!(line["duration_ms"], 3_661_000.007);
}

#[test]
fn consecutive_lines_in_other_seconds_get_their_own_time() {
    let mut r = record();
    let ts = |r: &AccessRecord| json(r)["ts"].as_str().unwrap().to_owned();
    assert_eq!(ts(&r), "2026-12-05T07:30:00.123Z");
    r.start += Duration::from_millis(900);
    assert_eq!(ts(&r), "2026-12-05T07:30:01.023Z");
    r.start -= Duration::from_secs(86_400);
    assert_eq!(ts(&r), "2026-12-04T07:30:01.023Z");
}

#[test]
fn dates_are_proleptic_gregorian() {
    assert_eq!(date_of(0), (1970, 1, 1));
    assert_eq!(date_of(59), (1970, 3, 1));
    assert_eq!(date_of(11_016), (2000, 2, 29));
    assert_eq!(date_of(20_792), (2026, 12, 5));
    assert_eq!(date_of(-1), (1969, 12, 31));
}

#[test]
fn errors_are_those_with_a_failing_status_or_ferrys_answer() {
    let mut r = record();
    assert!(!r.is_error());
    r.grpc_status = Some(14);
    assert!(r.is_error());
    let mut r = record();
    r.status = Some(404);
    assert!(r.is_error());
    let mut r = record();
    r.failure = Some("timeout");
    assert!(r.is_error());
    let mut r = record();
    r.status = None;
    assert!(r.is_error(), "no answer at all");
    assert!(json(&r).get("status").is_none());
}

fn sink(path: &Path, sample: f64, slower_than: Option<Duration>) -> ferry_config::AccessLog {
    ferry_config::AccessLog {
        path: path.to_path_buf(),
        path_at: FieldLocation {
            file: "routes.yaml".into(),
            line: 3,
            col: 11,
            path: "access_log[0].path".into(),
        },
        format: AccessLogFormat::Json,
        sample,
        slower_than,
    }
}

fn lines(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// Polls until `f` holds (the writer runs on its own tick).
fn eventually(what: &str, mut f: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while !f() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::park_timeout(Duration::from_millis(10));
    }
}

#[test]
fn sample_zero_keeps_only_errors_and_slow_answers() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("a.log");
    let metrics = Metrics::new();
    let logs = AccessLogs::default();
    let log = logs
        .for_config(&[sink(&path, 0.0, Some(Duration::from_secs(1)))], &metrics)
        .unwrap()
        .unwrap();
    let mut slow = record();
    slow.request = RequestText::new("/", None, Some("slow"));
    slow.total = Duration::from_secs(2);
    let mut failed = record();
    failed.request = RequestText::new("/", None, Some("failed"));
    failed.status = Some(503);
    for r in [record(), slow, record(), failed] {
        log.submit(&r);
    }
    eventually("two lines", || lines(&path).len() == 2);
    let ids: Vec<Value> = lines(&path)
        .iter()
        .map(|l| l["request_id"].clone())
        .collect();
    assert_eq!(ids, vec![json!("slow"), json!("failed")]);
}

#[test]
fn a_rotated_file_is_reopened_and_a_reload_reuses_the_writer() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("a.log");
    let metrics = Metrics::new();
    let logs = AccessLogs::default();
    let first = logs
        .for_config(&[sink(&path, 1.0, None)], &metrics)
        .unwrap()
        .unwrap();
    first.submit(&record());
    eventually("the first line", || lines(&path).len() == 1);
    std::fs::rename(&path, dir.path().join("a.log.1")).unwrap();
    // A reload keeps the same writer (and so the same batch and file handle).
    let second = logs
        .for_config(&[sink(&path, 1.0, None)], &metrics)
        .unwrap()
        .unwrap();
    assert!(Arc::ptr_eq(&first.sinks[0].writer, &second.sinks[0].writer));
    drop(first);
    // Within a second of the rename the writer notices the path names no file and reopens.
    eventually("a line in the new file", || {
        second.submit(&record());
        std::thread::park_timeout(Duration::from_millis(100));
        !lines(&path).is_empty()
    });
    assert!(!lines(&dir.path().join("a.log.1")).is_empty());
}

#[test]
fn a_failing_file_counts_its_lines_as_dropped() {
    let metrics = Metrics::new();
    let logs = AccessLogs::default();
    let full = Path::new("/dev/full");
    let log = logs
        .for_config(&[sink(full, 1.0, None)], &metrics)
        .unwrap()
        .unwrap();
    log.submit(&record());
    let dropped = metrics
        .access_log_dropped
        .get_or_create(&crate::metrics::AccessLogDropLabels {
            path: crate::metrics::Name("/dev/full".into()),
            reason: "write_failed",
        })
        .clone();
    eventually("a dropped line", || dropped.get() == 1);
}

#[test]
fn unwritable_sinks_are_config_errors_at_their_path() {
    let dir = tempfile::tempdir().unwrap();
    let mut config = ferry_config::parse("routes.yaml", "apiVersion: ferry/v1\n").unwrap();
    config.access_log = vec![
        sink(&dir.path().join("ok.log"), 1.0, None),
        sink(&dir.path().join("missing/a.log"), 1.0, None),
    ];
    let errors = check(&config).unwrap_err().to_string();
    let missing = dir.path().join("missing");
    assert!(
        errors.starts_with(&format!(
            "routes.yaml:3:11: access_log[0].path: directory {} cannot be used: No such file",
            missing.display()
        )),
        "{errors}"
    );
    assert_eq!(errors.lines().count(), 1, "{errors}");
    assert!(
        !dir.path().join("ok.log").exists(),
        "the check leaves no file"
    );
}

#[test]
fn a_stuck_sink_drops_lines_and_never_blocks_the_request() {
    let dir = tempfile::tempdir().unwrap();
    // A FIFO nobody reads: the writer blocks opening it, as on a hung disk.
    let fifo = dir.path().join("stuck");
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap();
    assert!(made.success());
    let metrics = Metrics::new();
    let logs = AccessLogs::default();
    let log = logs
        .for_config(&[sink(&fifo, 1.0, None)], &metrics)
        .unwrap()
        .unwrap();
    let started = Instant::now();
    // ~14 MB of lines, well past the batch's bound (4 MiB).
    for _ in 0..30_000 {
        log.submit(&record());
    }
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "submitting waited"
    );
    let full = metrics
        .access_log_dropped
        .get_or_create(&crate::metrics::AccessLogDropLabels {
            path: crate::metrics::Name(fifo.display().to_string().into()),
            reason: "queue_full",
        })
        .get();
    assert!(full > 0, "nothing dropped");
    // A reader unblocks the writer, which writes what it kept and ends with the sink.
    let reader = std::thread::spawn(move || std::fs::read(&fifo).unwrap().len());
    drop(log);
    drop(logs);
    let read = reader.join().unwrap();
    assert!(read > 1 << 20, "only {read} bytes written");
}
