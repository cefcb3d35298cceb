//! ferry-demo: `ferry demo`, a built-in Open Inference Protocol model server behind an
//! in-process ferry, a few REST and gRPC requests through it, and a report of what ferry did
//! with each (route, model, endpoint, status, time in ferry vs upstream); then scenes of two
//! sidecars over mutual TLS, a rate limit, and a trace across two sidecars printed from an
//! in-process OTLP receiver. With `--serve` it
//! stays up and prints curl and grpcurl lines to try by hand until Ctrl-C. Everything runs as
//! tasks in this process, so stopping it leaves nothing behind.
//!
//! A crate of its own so the sidecar library (`ferry-proxy`) carries only the data plane: the
//! demo drives the proxy through its public API ([`Proxy::start`], the access-record sink)
//! like any embedder would. The model server is also the upstream of some end-to-end tests.

use std::net::SocketAddr;
use std::time::Duration;

use ferry_proxy::access_log::AccessRecord;
use ferry_proxy::app::{Proxy, StartError, StartOptions};
use tokio::net::TcpListener;
use tokio::sync::{mpsc, oneshot};
use tokio::time::Instant;

pub mod client;
pub mod grpc_frame;
pub mod inference;
mod limits;
mod mesh;
pub mod model_server;
mod report;
pub mod sidecar;
mod tracing;
mod try_it;

/// How long the demo waits for ferry's access records after the last response.
const RECORD_PATIENCE: Duration = Duration::from_secs(5);
/// Drain deadline when the demo stops ferry.
const DRAIN: Duration = Duration::from_secs(2);
/// Inbound address with `--serve` when none is given: the default sidecar port.
const SERVE_INBOUND: SocketAddr =
    SocketAddr::new(std::net::IpAddr::V4(std::net::Ipv4Addr::LOCALHOST), 15006);
const ANY_LOOPBACK: SocketAddr =
    SocketAddr::new(std::net::IpAddr::V4(std::net::Ipv4Addr::LOCALHOST), 0);

/// Why the demo could not run, or ran but ferry did not answer as expected.
#[derive(Debug, thiserror::Error)]
pub enum DemoError {
    /// The model server's address could not be bound.
    #[error("binding the demo model server on {addr}")]
    BindModelServer {
        /// The address asked for.
        addr: SocketAddr,
        /// Cause.
        #[source]
        source: std::io::Error,
    },
    /// The model server's bound address could not be read back.
    #[error("reading the demo model server's address")]
    ModelServerAddr(#[source] std::io::Error),
    /// The in-process ferry did not start.
    #[error("starting ferry")]
    Start(#[source] StartError),
    /// The demo config lost its inbound listener (a bug in [`sidecar::config`]).
    #[error("the default config has no inbound listener")]
    NoInbound,
    /// Ctrl-C / SIGTERM handlers could not be registered for `--serve`.
    #[error("listening for Ctrl-C")]
    Signals(#[source] std::io::Error),
    /// A scripted request failed below HTTP (connect, protocol, decoding).
    #[error("sending the demo requests through ferry")]
    Client(#[source] client::ClientError),
    /// The mutual-TLS scene's temporary certificates could not be made.
    #[error("writing the mutual-TLS demo's certificates")]
    Mesh(#[source] std::io::Error),
    /// The tracing scene's OTLP receiver could not be started.
    #[error("starting the tracing demo's OTLP receiver")]
    Tracing(#[source] std::io::Error),
    /// A scene's config did not parse (a bug in the demo).
    #[error("a demo scene's config: {0}")]
    SceneConfig(ferry_config::ConfigErrors),
    /// Some requests were answered, but not as expected; the labels of those requests.
    #[error("unexpected answers for: {}", .0.join(", "))]
    Unexpected(Vec<&'static str>),
}

/// `ferry demo` flags.
#[derive(Debug, Clone, clap::Args)]
pub struct DemoArgs {
    /// Keep running after the scripted requests, print curl/grpcurl lines to try, and log
    /// every request until Ctrl-C.
    #[arg(long)]
    pub serve: bool,
    /// ferry's inbound listener [default: 127.0.0.1:0, or 127.0.0.1:15006 with --serve].
    #[arg(long, value_name = "ADDR")]
    pub inbound: Option<SocketAddr>,
    /// ferry's admin endpoint.
    #[arg(long, value_name = "ADDR", default_value_t = ANY_LOOPBACK)]
    pub admin: SocketAddr,
    /// The built-in model server.
    #[arg(long, value_name = "ADDR", default_value_t = ANY_LOOPBACK)]
    pub model_server: SocketAddr,
}

/// Runs the demo; an error means it could not start or ferry did not answer as expected.
pub async fn run(args: DemoArgs) -> Result<(), DemoError> {
    let model_listener = TcpListener::bind(args.model_server)
        .await
        .map_err(|source| DemoError::BindModelServer {
            addr: args.model_server,
            source,
        })?;
    let model_addr = model_listener
        .local_addr()
        .map_err(DemoError::ModelServerAddr)?;
    let (stop_model, model_stopped) = oneshot::channel::<()>();
    let model_task = tokio::spawn(model_server::serve(model_listener, async {
        let _ = model_stopped.await;
    }));

    let default_inbound = if args.serve {
        SERVE_INBOUND
    } else {
        ANY_LOOPBACK
    };
    let config = sidecar::config(sidecar::Addresses {
        inbound: args.inbound.unwrap_or(default_inbound),
        admin: args.admin,
        model_server: model_addr,
    });
    let (records_tx, records) = mpsc::channel::<AccessRecord>(64);
    let options = StartOptions {
        access_log: Some(records_tx),
        ..Default::default()
    };
    let outcome = match Proxy::start(config, options).await {
        Ok(proxy) => {
            let outcome = drive(&proxy, model_addr, records, args.serve).await;
            proxy.shutdown(DRAIN).await;
            outcome
        }
        Err(error) => Err(DemoError::Start(error)),
    };
    let _ = stop_model.send(());
    let _ = model_task.await;
    outcome
}

/// Sends the scripted requests and reports; then, with `serve`, waits for Ctrl-C.
async fn drive(
    proxy: &Proxy,
    model_addr: SocketAddr,
    mut records: mpsc::Receiver<AccessRecord>,
    serve: bool,
) -> Result<(), DemoError> {
    let inbound = proxy
        .listener_addr(sidecar::INBOUND)
        .ok_or(DemoError::NoInbound)?;
    println!("ferry demo");
    println!("  model server (OIP REST + gRPC)  {model_addr}   models: add_sub, echo");
    println!(
        "  ferry inbound listener          {inbound}   route to cluster '{}' -> {model_addr}",
        sidecar::LOCAL_CLUSTER
    );
    println!("  ferry admin                     {}", proxy.admin_addr());
    println!();

    // With --serve, listen for Ctrl-C before anything is printed that invites pressing it.
    let mut interrupt = if serve {
        Some(try_it::Interrupt::listen().map_err(DemoError::Signals)?)
    } else {
        None
    };
    let exchanges = client::run_script(inbound)
        .await
        .map_err(DemoError::Client)?;
    let collected = collect_records(&mut records, exchanges.len()).await;
    let paired = report::pair(&exchanges, collected);
    for (i, (exchange, record)) in exchanges.iter().zip(&paired).enumerate() {
        println!("{}", report::exchange(i + 1, exchange, record.as_ref()));
    }
    let unexpected: Vec<&'static str> = exchanges
        .iter()
        .filter(|e| !e.as_expected())
        .map(|e| e.label)
        .collect();
    if !unexpected.is_empty() {
        return Err(DemoError::Unexpected(unexpected));
    }
    println!("all {} requests answered as expected", exchanges.len());
    mesh::run(model_addr).await?;
    limits::run(model_addr).await?;
    tracing::run(model_addr).await?;

    if let Some(interrupt) = interrupt.as_mut() {
        try_it::print(inbound, proxy.admin_addr());
        try_it::log_until_interrupted(&mut records, interrupt).await;
    }
    Ok(())
}

/// Receives up to `wanted` access records, giving up after [`RECORD_PATIENCE`].
async fn collect_records(
    records: &mut mpsc::Receiver<AccessRecord>,
    wanted: usize,
) -> Vec<AccessRecord> {
    let deadline = Instant::now() + RECORD_PATIENCE;
    let mut out = Vec::with_capacity(wanted);
    while out.len() < wanted {
        match tokio::time::timeout_at(deadline, records.recv()).await {
            Ok(Some(record)) => out.push(record),
            Ok(None) | Err(_) => break,
        }
    }
    out
}
