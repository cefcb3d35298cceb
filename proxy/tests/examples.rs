//! Every file under `examples/` works from a clean clone, loaded the way `ferry run` and
//! `ferry validate` load it: the config file, the descriptor sets its `protocol: descriptor`
//! routes name, and the routing table built from both (all of `Proxy::start` short of binding
//! sockets, since the examples use fixed ports). A file this test does not know how to check
//! fails it, so a new kind of example cannot slip in untested.
//!
//! Descriptor sets in `examples/` are compiled from the repository's own `.proto` files with
//! protox and committed, so no example needs protoc; a test recompiles them and fails when the
//! committed bytes are stale. `UPDATE_EXAMPLES=1 cargo test -p ferry-proxy --test examples`
//! rewrites them.

#![allow(
    clippy::unwrap_used,
    reason = "test helpers fail the test by panicking, like the #[test] functions that call them"
)]

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use ferry_proxy::descriptors::Descriptors;
use ferry_proxy::metrics::Metrics;
use ferry_proxy::table::Table;

/// A descriptor set committed in `examples/` and the proto it is compiled from.
struct Generated {
    /// File name in `examples/`.
    file: &'static str,
    /// Import directory, relative to the workspace root.
    include: &'static str,
    /// The proto to compile, relative to `include`.
    proto: &'static str,
}

const GENERATED: &[Generated] = &[Generated {
    file: "library.pb",
    include: "proto/testing",
    proto: "library.proto",
}];

fn workspace() -> &'static Path {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/.."))
}

fn examples_dir() -> PathBuf {
    workspace().join("examples").canonicalize().unwrap()
}

/// What `protoc --include_imports --descriptor_set_out` writes, compiled by protox.
fn compile(g: &Generated) -> Vec<u8> {
    let mut compiler = protox::Compiler::new([workspace().join(g.include)])
        .unwrap_or_else(|e| panic!("{}: {e}", g.include));
    compiler.include_imports(true);
    compiler
        .open_files([g.proto])
        .unwrap_or_else(|e| panic!("{}/{}: {e}", g.include, g.proto));
    compiler.encode_file_descriptor_set()
}

/// With `UPDATE_EXAMPLES` set, rewrites every generated file, once per test process; the other
/// test waits here, so it never reads a file half-written.
fn update_if_asked() -> bool {
    static UPDATED: OnceLock<bool> = OnceLock::new();
    *UPDATED.get_or_init(|| {
        let update = std::env::var_os("UPDATE_EXAMPLES").is_some();
        if update {
            for g in GENERATED {
                std::fs::write(examples_dir().join(g.file), compile(g)).unwrap();
            }
        }
        update
    })
}

/// Every file under `dir`, recursively, sorted.
fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            out.extend(files_under(&path));
        } else {
            out.push(path);
        }
    }
    out.sort();
    out
}

/// Loads one example config as `Proxy::start` does and returns the descriptor sets it read
/// (canonical paths).
async fn load_as_the_proxy_does(path: &Path) -> Vec<PathBuf> {
    let shown = path.display();
    let mut config = ferry_config::load(path).unwrap_or_else(|e| panic!("{e}"));
    // Examples with an identity name certificate files a deployment mounts; load a copy of the
    // file beside throwaway ones written where its relative paths point.
    let _pki = if config.identity.is_some() {
        let dir = tempfile::tempdir().unwrap();
        let copy = dir.path().join(path.file_name().unwrap());
        std::fs::copy(path, &copy).unwrap();
        config = ferry_config::load(&copy).unwrap_or_else(|e| panic!("{e}"));
        write_pki(config.identity.as_ref().unwrap());
        Some(dir)
    } else {
        None
    };
    let descriptors = Descriptors::load_async(&config)
        .await
        .unwrap_or_else(|e| panic!("{shown}:\n{e}"));
    let mut read = Vec::new();
    for l in &config.listeners {
        for r in &l.routes {
            let Some(d) = r.translate.as_ref().and_then(|t| t.descriptor.as_ref()) else {
                continue;
            };
            assert!(
                descriptors.transcoder(&l.name, &r.name).is_some(),
                "{shown}: route {}/{} has no transcoder",
                l.name,
                r.name
            );
            read.push(d.descriptor_set.canonicalize().unwrap());
        }
    }
    let metrics = std::sync::Arc::new(Metrics::new());
    let states = ferry_proxy::state::RouteStates::default();
    let tls = ferry_proxy::tls::TlsFiles::load_async(&config)
        .await
        .unwrap_or_else(|e| panic!("{shown}:\n{e}"));
    let identity = std::sync::Arc::new(ferry_proxy::tls::IdentityStore::default());
    identity.set(tls.identity.clone());
    // An example's `tracing` block starts a real exporter (connecting lazily, nothing sent).
    let traces = ferry_proxy::traces::Traces::default();
    let tracing = traces
        .for_config(config.tracing.as_ref(), &metrics)
        .unwrap_or_else(|e| panic!("{shown}: {e}"));
    // An example's access-log sinks must be writable here too (they name /dev/stdout), and
    // their writers start as `ferry run` starts them.
    ferry_proxy::access_log::check(&config).unwrap_or_else(|e| panic!("{shown}:\n{e}"));
    let access_logs = ferry_proxy::access_log::AccessLogs::default();
    let access_log = access_logs
        .for_config(&config.access_log, &metrics)
        .unwrap_or_else(|e| panic!("{shown}: {e}"));
    let cx = ferry_proxy::stack::Context {
        metrics: &metrics,
        states: &states,
        transport: &ferry_proxy::upstream::Transport::Network,
        access_log: access_log.as_ref(),
        identity: &identity,
        tls: &tls,
        limits: &ferry_proxy::limits::LimitStates::default(),
        tracing: tracing.as_ref(),
        taps: &std::sync::Arc::default(),
    };
    let table =
        Table::build(config, descriptors, None, cx).unwrap_or_else(|e| panic!("{shown}: {e}"));
    // DNS clusters spawn their refresh task here. Dropped before this (current-thread) runtime
    // polls it, the task is aborted unrun: the test never looks up the examples' real names.
    drop(table);
    read
}

#[test]
fn committed_descriptor_sets_are_current() {
    update_if_asked();
    let mut stale = Vec::new();
    for g in GENERATED {
        let path = examples_dir().join(g.file);
        let fresh = compile(g);
        let committed = std::fs::read(&path).unwrap_or_default();
        if committed != fresh {
            stale.push(format!(
                "examples/{} is not {}/{} compiled by protox ({} bytes committed, {} fresh)",
                g.file,
                g.include,
                g.proto,
                committed.len(),
                fresh.len()
            ));
        }
    }
    assert!(
        stale.is_empty(),
        "{}\nregenerate: UPDATE_EXAMPLES=1 cargo test -p ferry-proxy --test examples",
        stale.join("\n")
    );
}

#[tokio::test]
async fn every_example_file_loads_as_the_proxy_loads_it() {
    update_if_asked();
    let dir = examples_dir();
    let files = files_under(&dir);
    let mut configs = 0;
    let mut named: BTreeSet<PathBuf> = BTreeSet::new();
    for path in &files {
        if path.extension().is_some_and(|e| e == "yaml" || e == "yml") {
            named.extend(load_as_the_proxy_does(path).await);
            configs += 1;
        }
    }
    assert!(configs >= 5, "only {configs} example configs in {dir:?}");

    let generated: BTreeSet<PathBuf> = GENERATED.iter().map(|g| dir.join(g.file)).collect();
    let mut uncovered = Vec::new();
    for path in &files {
        let is_config = path.extension().is_some_and(|e| e == "yaml" || e == "yml");
        if is_config {
            continue;
        }
        let shown = path.strip_prefix(&dir).unwrap_or(path).display();
        match (named.contains(path), generated.contains(path)) {
            (true, true) => {}
            (false, true) => uncovered.push(format!("{shown}: generated but no example names it")),
            (true, false) => uncovered.push(format!(
                "{shown}: named by an example but not in GENERATED, so nothing keeps it current"
            )),
            (false, false) => uncovered.push(format!(
                "{shown}: not a config and not a descriptor set an example names"
            )),
        }
    }
    for path in &named {
        if !path.starts_with(&dir) {
            uncovered.push(format!(
                "{}: an example names a descriptor set outside examples/",
                path.display()
            ));
        }
    }
    assert!(
        uncovered.is_empty(),
        "examples/ files this test does not check (teach it, or remove them):\n{}",
        uncovered.join("\n")
    );
}

/// A throwaway CA and workload certificate (SPIFFE URI SAN) at the identity's paths.
fn write_pki(identity: &ferry_config::Identity) {
    use rcgen::{BasicConstraints, CertificateParams, CertifiedIssuer, IsCa, KeyPair, SanType};
    let mut ca_params = CertificateParams::new(Vec::<String>::new()).unwrap();
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    let ca = CertifiedIssuer::self_signed(ca_params, KeyPair::generate().unwrap()).unwrap();
    let key = KeyPair::generate().unwrap();
    let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
    let uri = "spiffe://cluster.local/ns/models/sa/example".to_owned();
    params.subject_alt_names = vec![SanType::URI(uri.try_into().unwrap())];
    let cert = params.signed_by(&key, &ca).unwrap();
    let write = |path: &Path, text: String| {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    };
    write(&identity.cert, cert.pem());
    write(&identity.key, key.serialize_pem());
    for trust in &identity.trust {
        write(trust, ca.pem());
    }
}
