//! The interoperability matrix: every caller against every server it can reach through one
//! ferry, with the real peers installed (pinned) by the test set-up (`peers/install.sh`,
//! `peers/translate/install.sh`, `peers/torchserve/install.sh`).
//!
//! Servers, started once and in parallel: MLServer 1.7.1 (REST and gRPC, echo model), KServe
//! 0.21's ModelServer (V1 `scorer`), TorchServe 0.12 on its own REST and gRPC APIs and, a
//! second instance with the kserve envelope, on KServe V1 (`pair_json`), and the TF Serving
//! gRPC peer written for the tests (`affine`). Callers: tritonclient 2.73 HTTP (JSON) and gRPC,
//! python requests on V1 `:predict` in row and columnar form, and a grpcio TF Serving stub
//! (scripts in `peers/matrix/`). ferry has a listener per (caller protocol × server) pair.
//!
//! Each reachable cell must give the model's answer (computed here from the inputs), the same
//! results as the direct call where a server speaks the caller's protocol, and the mapped
//! errors: wrong datatype, missing input and (rows) ragged rows → 400 / INVALID_ARGUMENT where
//! a signature types the bridge, an unknown model → 404 / NOT_FOUND everywhere. Pairs ferry does
//! not bridge are proved refused by `ferry validate`, a form a server lacks by its direct call's
//! error. The test prints the matrix it proved.

mod check;
mod grid;
mod profiles;

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::Path;

use anyhow::Context as _;
use ferry_integration::Ferry;
use ferry_integration::model_servers::{
    ModelServer, TfServer, TorchServe, TorchServeApi, bridging_peers, peers_scripts,
};
use ferry_integration::peers::run_json;
use serde_json::{Value, json};

use self::grid::{CALLERS, Caller, Reach, SERVERS, Server};

/// The servers, each started once.
struct Servers {
    ml: ModelServer,
    kserve: ModelServer,
    ts: TorchServe,
    ts_v1: TorchServe,
    tf: TfServer,
}

impl Servers {
    fn endpoint(&self, server: Server) -> SocketAddr {
        match server {
            Server::MlRest => self.ml.rest,
            Server::MlGrpc => self.ml.grpc,
            Server::KserveV1 => self.kserve.rest,
            Server::TsRest => self.ts.rest,
            Server::TsGrpc => self.ts.grpc,
            Server::TsV1 => self.ts_v1.rest,
            Server::TfGrpc => self.tf.addr,
        }
    }
}

/// The key of a caller's cell (or, with `direct`, its direct call) in the scripts' output.
fn key(caller: Caller, server: Server, direct: bool) -> String {
    let via = if direct { "direct" } else { "ferry" };
    format!("{caller:?}/{via}/{}", server.name())
}

/// How a caller runs: its script under `peers/matrix/`, its venv, and the wire argument.
type Script = (&'static str, &'static str, Option<&'static str>);

fn script(caller: Caller) -> Script {
    match caller {
        Caller::TritonHttp => ("oip_cells.py", "triton", Some("http")),
        Caller::TritonGrpc => ("oip_cells.py", "triton", Some("grpc")),
        Caller::V1Rows | Caller::V1Columns => ("v1_cells.py", "kserve", None),
        Caller::TfGrpc => ("tf_cells.py", "py", None),
    }
}

/// Runs one caller script over `jobs` and returns its results by cell key.
async fn run_caller(
    peers: &Path,
    (name, venv, wire): Script,
    jobs: Vec<Value>,
    scratch: &Path,
) -> anyhow::Result<Value> {
    let file = scratch.join(format!("{name}-{}.json", wire.unwrap_or("jobs")));
    std::fs::write(&file, serde_json::to_vec(&jobs)?)?;
    let mut args = vec![file.display().to_string()];
    args.extend(wire.map(str::to_owned));
    let python = peers.join(venv).join("bin").join("python");
    run_json(&python, &peers_scripts().join("matrix").join(name), &args).await
}

/// `ferry validate` refuses a route joining `caller` and `server` as not bridged.
async fn refused(caller: Caller, server: Server, dir: &Path) -> anyhow::Result<bool> {
    let yaml = format!(
        "apiVersion: ferry/v1\nlisteners:\n  - name: main\n    address: 127.0.0.1:0\n    routes:\n      - name: r\n        translate: {{ from: {}, to: {}, signature: {} }}\n        to: c\nclusters:\n  - name: c\n    endpoints: [127.0.0.1:9]\n",
        caller.protocol(),
        server.protocol(),
        server.profile().signature(true),
    );
    let file = dir.join(format!("{}-{}.yaml", caller.protocol(), server.name()));
    std::fs::write(&file, yaml)?;
    let (code, text) = ferry_integration::ferry::validate(&[file]).await?;
    Ok(code != 0 && text.contains("is not bridged"))
}

/// Every caller × every server through one ferry; prints the matrix it proved.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_caller_reaches_every_bridged_server() -> anyhow::Result<()> {
    let peers = bridging_peers().await?;
    let (ml, kserve, ts, ts_v1, tf) = tokio::try_join!(
        ModelServer::mlserver(&peers),
        ModelServer::kserve_v1(&peers),
        TorchServe::start(&peers, &["pair_json"], TorchServeApi::Own),
        TorchServe::start(&peers, &["pair_json"], TorchServeApi::KserveV1),
        TfServer::start(&peers),
    )?;
    let servers = Servers {
        ml,
        kserve,
        ts,
        ts_v1,
        tf,
    };
    let ferry = Ferry::start(&grid::config(|s| servers.endpoint(s))).await?;
    let scratch = tempfile::Builder::new().prefix("ferry-matrix-").tempdir()?;

    // The callers run side by side, each over all its cells.
    let runs = jobs(&ferry, &servers)?
        .into_iter()
        .map(|(script, jobs)| run_caller(&peers, script, jobs, scratch.path()));
    let mut results = serde_json::Map::new();
    for r in futures_util::future::try_join_all(runs).await? {
        let cells = r
            .as_object()
            .cloned()
            .context("a caller printed no object")?;
        results.extend(cells);
    }

    let (table, notes, failures) = judge(&results, scratch.path()).await?;
    println!("{}", render(&table, &notes));
    assert!(
        failures.is_empty(),
        "cells failed:\n{}",
        failures.join("\n")
    );
    Ok(())
}

/// One job list per caller script: its cells through ferry, and its direct calls.
fn jobs(ferry: &Ferry, servers: &Servers) -> anyhow::Result<BTreeMap<Script, Vec<Value>>> {
    let mut jobs: BTreeMap<_, Vec<Value>> = BTreeMap::new();
    for caller in CALLERS {
        for server in SERVERS {
            let mut job = |target: SocketAddr, direct: bool| {
                let mut job = json!({
                    "cell": key(caller, server, direct),
                    "target": target.to_string(),
                    "profile": server.profile().job(),
                });
                match caller {
                    Caller::V1Rows => job["form"] = json!("row"),
                    Caller::V1Columns => job["form"] = json!("columnar"),
                    _ => {}
                }
                jobs.entry(script(caller)).or_default().push(job);
            };
            if grid::route(caller, server).is_some() {
                job(ferry.listener(&grid::listener(caller, server))?, false);
            }
            if let Some(d) = grid::direct(caller, server) {
                job(servers.endpoint(d), true);
            }
        }
    }
    Ok(jobs)
}

/// The table (a row per caller), the notes on its n/a cells, and every failure.
type Judged = (
    Vec<(&'static str, Vec<&'static str>)>,
    Vec<String>,
    Vec<String>,
);

/// Checks every cell of the scripts' `results`.
async fn judge(results: &serde_json::Map<String, Value>, scratch: &Path) -> anyhow::Result<Judged> {
    let (mut table, mut notes, mut failures) = (Vec::new(), Vec::new(), Vec::new());
    for caller in CALLERS {
        let mut row = Vec::new();
        for server in SERVERS {
            let direct = grid::direct(caller, server).map(|d| &results[&key(caller, d, true)]);
            let problems = match caller.reach(server) {
                Reach::NotBridged if refused(caller, server, scratch).await? => Vec::new(),
                Reach::NotBridged => vec!["ferry validate did not refuse it".to_owned()],
                // Proved by the direct call: the server refuses that form itself.
                Reach::ServerLacks(why) => {
                    notes.push(format!(
                        "{} × {}: n/a, {why}",
                        caller.label(),
                        server.name()
                    ));
                    let answer = direct.map(|d| &d["ok"]);
                    match answer.map(check::code) {
                        Some(c) if c != "OK" => Vec::new(),
                        _ => vec![format!("the server answered it directly: {answer:?}")],
                    }
                }
                _ => {
                    let got = &results[&key(caller, server, false)];
                    check::cell(caller, server, got, direct)
                }
            };
            let reachable = matches!(
                caller.reach(server),
                Reach::Passthrough | Reach::Translate | Reach::Bridge { .. }
            );
            row.push(match (reachable, problems.is_empty()) {
                (_, false) => "FAIL",
                (true, true) => "ok",
                (false, true) => "n/a",
            });
            failures.extend(
                problems
                    .iter()
                    .map(|p| format!("{caller:?} × {server:?}: {p}")),
            );
        }
        table.push((caller.label(), row));
    }
    Ok((table, notes, failures))
}

/// The matrix as a Markdown table, callers down, servers across.
fn render(table: &[(&str, Vec<&str>)], notes: &[String]) -> String {
    let mut out = String::from("| caller \\ server |");
    for s in SERVERS {
        out.push_str(&format!(" {} |", s.name()));
    }
    out.push_str(&format!("\n| --- |{}\n", " --- |".repeat(SERVERS.len())));
    for (caller, row) in table {
        out.push_str(&format!("| {caller} | {} |\n", row.join(" | ")));
    }
    out.push_str("n/a: `ferry validate` refuses the pair as not bridged, except:\n");
    for n in notes {
        out.push_str(&format!("- {n}\n"));
    }
    out
}
