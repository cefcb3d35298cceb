//! Runs `ferry-bench --smoke` (the CI mode): every scenario for about a second against the
//! real ferry binary and direct, on loopback. It must exit 0 and leave results and charts
//! with a measurement for every scenario.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

/// The ferry binary of this build profile, built (or brought up to date: a stale binary would
/// lack newer route features such as `translate`) on every run, since the bench crate cannot
/// depend on another package's binary and cargo does not build it for us.
#[allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test helper: a failure here should fail the test loudly"
)]
fn ferry_binary() -> PathBuf {
    let bench = PathBuf::from(env!("CARGO_BIN_EXE_ferry-bench"));
    let ferry = bench.with_file_name("ferry");
    let workspace = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    let status = ferry_bench::driver::nested_cargo()
        .args(["build", "-p", "ferry", "--bin", "ferry"])
        .current_dir(workspace)
        .status()
        .expect("running cargo build for ferry");
    assert!(status.success(), "building ferry failed: {status}");
    assert!(ferry.is_file(), "no ferry binary at {}", ferry.display());
    ferry
}

#[test]
fn smoke_mode_runs_every_scenario_against_ferry_and_direct() {
    let ferry = ferry_binary();
    let out = std::env::temp_dir().join(format!("ferry-bench-smoke-{}", std::process::id()));
    let started = Instant::now();
    let output = Command::new(env!("CARGO_BIN_EXE_ferry-bench"))
        .arg("--smoke")
        .arg("--out")
        .arg(&out)
        .arg("--ferry")
        .arg(&ferry)
        .output()
        .expect("running ferry-bench --smoke");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "smoke failed: {stderr}");
    assert!(
        started.elapsed() < Duration::from_secs(120),
        "smoke took {:?}",
        started.elapsed()
    );

    let json: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.join("results.json")).unwrap()).unwrap();
    assert!(json["failures"].as_array().unwrap().is_empty(), "{json}");
    let samples = json["samples"].as_array().unwrap();
    for scenario in [
        "cold_start",
        "memory",
        "h1_saturation",
        "h2_saturation",
        "latency_1k",
        "latency_5k",
        "grpc_unary",
        "upload_1mib",
        "sse_first_event",
        "routes_10",
        "routes_10000",
        "translate_64",
        "translate_65536",
        "translate_1000000",
        "mtls_h1",
        "mtls_h1_plain",
        "mtls_h2",
        "mtls_h2_plain",
        "mtls_handshakes",
        "mtls_memory",
        "limit_local",
        "limit_local_off",
        "limit_global",
        "limit_global_off",
        "tracing_none",
        "tracing_off",
        "tracing_1pct",
        "tracing_100pct",
    ] {
        let ferry_values: Vec<f64> = samples
            .iter()
            .filter(|s| s["scenario"] == scenario && s["target"] == "ferry")
            .filter_map(|s| s["value"].as_f64())
            .collect();
        assert!(!ferry_values.is_empty(), "no ferry sample for {scenario}");
        assert!(
            ferry_values.iter().all(|v| v.is_finite()),
            "{scenario}: {ferry_values:?}"
        );
    }
    // The traced runs really exported: the sink saw spans from the 100 % run, SERVER and
    // CLIENT alike (≈ 2 per request; a smoke-sized run only has to show it is not zero).
    let spans_per_request = samples
        .iter()
        .find(|s| {
            s["scenario"] == "tracing_100pct"
                && s["target"] == "ferry"
                && s["metric"] == "spans_per_request"
        })
        .and_then(|s| s["value"].as_f64())
        .unwrap();
    assert!(spans_per_request > 1.0, "{spans_per_request}");
    let direct_rps = samples
        .iter()
        .find(|s| {
            s["scenario"] == "h1_saturation" && s["target"] == "direct" && s["metric"] == "rps"
        })
        .and_then(|s| s["value"].as_f64())
        .unwrap();
    assert!(direct_rps > 0.0);
    // `translate` (ferry ÷ Envoy) needs Envoy, which smoke mode does not run.
    for chart in ["cpu_per_request", "added_latency", "memory", "throughput"] {
        for ext in ["svg", "png"] {
            let file = out.join(format!("{chart}.{ext}"));
            assert!(
                std::fs::metadata(&file)
                    .map(|m| m.len() > 0)
                    .unwrap_or(false),
                "{}",
                file.display()
            );
        }
    }
    let md = std::fs::read_to_string(out.join("results.md")).unwrap();
    assert!(
        md.contains("| HTTP/1.1 keep-alive req/s (1 core) |"),
        "{md}"
    );
    let _ = std::fs::remove_dir_all(&out);
}
