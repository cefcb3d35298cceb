//! Black-box tests of `ferry demo`: the real binary, its stdout and exit code, real curl.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test helpers outside #[test] fns; a panic is the failure report"
)]

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use tokio::time::{Instant, sleep};

/// Patience for anything eventual (a debug build on 2 shared cores can be slow).
const PATIENCE: Duration = Duration::from_secs(60);
const POLL: Duration = Duration::from_millis(50);

fn ferry() -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_ferry"));
    command.env("FERRY_LOG", "warn");
    command
}

/// Waits for the child to exit, killing it if it outlives [`PATIENCE`].
async fn wait_exit(child: &mut Child) -> ExitStatus {
    let deadline = Instant::now() + PATIENCE;
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("ferry demo did not exit within {PATIENCE:?}");
        }
        sleep(POLL).await;
    }
}

/// Forwards the child's stdout lines to a channel from a reader thread.
fn stdout_lines(child: &mut Child) -> mpsc::Receiver<String> {
    let stdout = child.stdout.take().unwrap();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    rx
}

/// The value after `key=` in a report line (up to the next space).
fn field<'a>(line: &'a str, key: &str) -> Option<&'a str> {
    let start = line.find(&format!("{key}="))? + key.len() + 1;
    line[start..].split_whitespace().next()
}

#[tokio::test]
async fn demo_sends_requests_through_ferry_and_exits_zero() {
    let mut child = ferry()
        .arg("demo")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let lines = stdout_lines(&mut child);
    let status = wait_exit(&mut child).await;
    let output: Vec<String> = lines.iter().collect();
    let text = output.join("\n");
    assert!(status.success(), "exit {status}\n{text}");

    // Every REST request about add_sub was matched to a route and forwarded to an endpoint.
    let add_sub_lines: Vec<&String> = output
        .iter()
        .filter(|l| field(l, "model") == Some("add_sub"))
        .collect();
    assert!(add_sub_lines.len() >= 2, "{text}");
    for line in &add_sub_lines {
        assert!(
            field(line, "route").is_some_and(|r| r != "-"),
            "no route: {line}"
        );
        assert!(
            field(line, "endpoint").is_some_and(|e| e.starts_with("127.0.0.1:")),
            "{line}"
        );
    }
    assert!(
        output.iter().any(|l| field(l, "status") == Some("200")),
        "{text}"
    );
    assert!(output.iter().any(|l| l.contains("grpc=OK")), "{text}");
    assert!(
        text.contains("OUTPUT0=[11.0, 22.0, 33.0, 44.0]"),
        "gRPC result: {text}"
    );
    assert!(
        text.contains("OUTPUT0=[11.0,22.0,33.0,44.0]"),
        "REST result: {text}"
    );

    // The unknown model's 404 came from the model server, through ferry's route.
    let unknown = output
        .iter()
        .position(|l| l.contains("/v2/models/no_such_model/infer"))
        .unwrap_or_else(|| panic!("{text}"));
    let block = &output[unknown..(unknown + 4).min(output.len())];
    assert!(
        block.iter().any(|l| field(l, "status") == Some("404")),
        "{block:?}"
    );
    assert!(
        block
            .iter()
            .any(|l| field(l, "endpoint").is_some_and(|e| e != "-")),
        "404 not from upstream: {block:?}"
    );
    assert!(block.iter().any(|l| l.contains("not found")), "{block:?}");
    assert!(
        text.contains("all 6 requests answered as expected"),
        "{text}"
    );
}

#[tokio::test]
async fn serve_mode_answers_curl_and_stops_cleanly_on_sigint() {
    let mut child = ferry()
        .args(["demo", "--serve", "--inbound", "127.0.0.1:0"])
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let lines = stdout_lines(&mut child);
    let mut seen = Vec::new();

    // The printed curl line carries the real port.
    let deadline = Instant::now() + PATIENCE;
    let url = loop {
        while let Ok(line) = lines.try_recv() {
            seen.push(line);
        }
        let found = seen.iter().find_map(|l| {
            let rest = l.trim().strip_prefix("curl -s ")?;
            rest.ends_with("/v2/health/live").then(|| rest.to_owned())
        });
        if let Some(url) = found {
            break url;
        }
        if Instant::now() > deadline || child.try_wait().unwrap().is_some() {
            let _ = child.kill();
            panic!("no curl line printed:\n{}", seen.join("\n"));
        }
        sleep(POLL).await;
    };

    // Real curl through ferry to the model server, eventually.
    let deadline = Instant::now() + PATIENCE;
    let body = loop {
        let out = Command::new("curl")
            .args(["-sf", "--max-time", "5", &url])
            .output()
            .expect("curl must be installed (the base image ships it)");
        if out.status.success() {
            break String::from_utf8_lossy(&out.stdout).into_owned();
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!(
                "curl {url} kept failing: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        sleep(POLL).await;
    };
    assert_eq!(body, r#"{"live":true}"#);

    // Ctrl-C: everything stops and the exit is clean.
    let kill = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(kill.success());
    let status = wait_exit(&mut child).await;
    seen.extend(lines.iter());
    assert!(status.success(), "exit {status}\n{}", seen.join("\n"));
    assert!(seen.iter().any(|l| l == "stopping"), "{}", seen.join("\n"));
    // The request curl made was logged live.
    assert!(
        seen.iter()
            .any(|l| l.starts_with("GET /v2/health/live") && l.contains("status=200")),
        "{}",
        seen.join("\n")
    );
    let authority = url
        .trim_start_matches("http://")
        .split('/')
        .next()
        .unwrap()
        .to_owned();
    assert!(
        std::net::TcpStream::connect(&authority).is_err(),
        "{authority} still accepts after exit"
    );
}
