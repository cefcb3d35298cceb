//! `ferry demo --serve`: the commands to try by hand, with the real ports, and a live line per
//! request until Ctrl-C (or SIGTERM).

use std::net::SocketAddr;

use ferry_proxy::access_log::AccessRecord;
use tokio::sync::mpsc;

use crate::report;

/// A registered Ctrl-C (and, on Unix, SIGTERM) listener. Registering early matters: a signal
/// that arrives before registration would kill the process instead of stopping it cleanly.
pub struct Interrupt {
    #[cfg(unix)]
    interrupt: tokio::signal::unix::Signal,
    #[cfg(unix)]
    terminate: tokio::signal::unix::Signal,
}

// === impl Interrupt ===

impl Interrupt {
    /// Registers the signal handlers now.
    pub fn listen() -> std::io::Result<Self> {
        #[cfg(unix)]
        {
            use tokio::signal::unix::{SignalKind, signal};
            Ok(Interrupt {
                interrupt: signal(SignalKind::interrupt())?,
                terminate: signal(SignalKind::terminate())?,
            })
        }
        #[cfg(not(unix))]
        {
            Ok(Interrupt {})
        }
    }

    /// Resolves at the next Ctrl-C or SIGTERM.
    pub async fn recv(&mut self) {
        #[cfg(unix)]
        {
            tokio::select! {
                _ = self.interrupt.recv() => {}
                _ = self.terminate.recv() => {}
            }
        }
        #[cfg(not(unix))]
        {
            let _ = tokio::signal::ctrl_c().await;
        }
    }
}

impl std::fmt::Debug for Interrupt {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Interrupt")
    }
}

/// Prints ready-to-paste commands against the running demo.
pub fn print(inbound: SocketAddr, admin: SocketAddr) {
    // The .proto lives at the repository root, next to this crate.
    let manifest_dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let proto_dir = manifest_dir.parent().unwrap_or(manifest_dir).join("proto");
    let proto_dir = proto_dir.display();
    let infer = r#"{"inputs":[{"name":"INPUT0","shape":[3],"datatype":"FP32","data":[1,2,3]},{"name":"INPUT1","shape":[3],"datatype":"FP32","data":[3,2,1]}]}"#;
    let grpc_infer = r#"{"model_name":"add_sub","inputs":[{"name":"INPUT0","datatype":"FP32","shape":[3],"contents":{"fp32_contents":[1,2,3]}},{"name":"INPUT1","datatype":"FP32","shape":[3],"contents":{"fp32_contents":[3,2,1]}}]}"#;
    println!("ferry and the model server keep running. Try (Ctrl-C stops everything):");
    println!();
    println!("  curl -s http://{inbound}/v2/health/live");
    println!("  curl -s http://{inbound}/v2/models/add_sub");
    println!(
        "  curl -s http://{inbound}/v2/models/add_sub/infer -H 'content-type: application/json' -d '{infer}'"
    );
    println!(
        "  curl -s http://{inbound}/v2/models/echo/infer -d '{{\"inputs\":[{{\"name\":\"x\",\"shape\":[2],\"datatype\":\"BYTES\",\"data\":[\"hi\",\"there\"]}}]}}'"
    );
    println!(
        "  grpcurl -plaintext -import-path {proto_dir} -proto inference.proto -d '{grpc_infer}' {inbound} inference.GRPCInferenceService/ModelInfer"
    );
    println!(
        "  grpcurl -plaintext -import-path {proto_dir} -proto inference.proto -d '{{\"name\":\"add_sub\"}}' {inbound} inference.GRPCInferenceService/ModelMetadata"
    );
    println!("  curl -s http://{admin}/metrics");
    println!("  curl -s http://{admin}/config_dump");
    println!();
}

/// Prints one line per request ferry serves until interrupted.
pub async fn log_until_interrupted(
    records: &mut mpsc::Receiver<AccessRecord>,
    interrupt: &mut Interrupt,
) {
    loop {
        tokio::select! {
            () = interrupt.recv() => break,
            record = records.recv() => match record {
                Some(record) => println!("{}", report::record_line(&record)),
                // ferry dropped its sender: nothing more will arrive, but keep serving.
                None => {
                    interrupt.recv().await;
                    break;
                }
            },
        }
    }
    println!("stopping");
}
