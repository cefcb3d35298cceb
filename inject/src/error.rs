//! Errors of the injector crate.
//!
//! [`ObjectError`] is about one Kubernetes object and never stops the others from being
//! processed; [`InjectError`] is what stops a whole command.

use std::{io, net::SocketAddr, path::PathBuf};

/// A problem that prevents injecting one pod template. The message names the fault; the caller
/// adds which object it is about.
#[derive(Debug, thiserror::Error, Clone, PartialEq, Eq)]
pub enum ObjectError {
    /// The application already uses a port ferry needs.
    #[error(
        "port conflict: container {container:?} uses port {port}, which ferry reserves for its {role} listener"
    )]
    PortConflict {
        /// The offending container.
        container: String,
        /// The port it uses.
        port: u16,
        /// What ferry uses the port for.
        role: &'static str,
    },
    /// A `ferry.dev/*` annotation has a value ferry cannot use.
    #[error("annotation {key}: invalid value {value:?} (expected {expected})")]
    BadAnnotation {
        /// Full annotation key.
        key: String,
        /// The value found.
        value: String,
        /// What would have been accepted.
        expected: &'static str,
    },
    /// The object's shape is not what its kind requires.
    #[error("{path}: {problem}")]
    Malformed {
        /// JSON path of the field at fault.
        path: String,
        /// What is wrong with it.
        problem: String,
    },
    /// The object is of a kind that has no pod template ferry knows how to find, yet it asks for
    /// injection.
    #[error(
        "unsupported kind {kind:?} (supported: Pod, Deployment, StatefulSet, DaemonSet, ReplicaSet, ReplicationController, Job, CronJob, List)"
    )]
    UnsupportedKind {
        /// The `kind` found.
        kind: String,
    },
    /// A YAML document is not a Kubernetes object at all.
    #[error("not a Kubernetes object: {0}")]
    NotAnObject(String),
}

/// A failure of a whole `ferry inject` or `ferry injector` run.
#[derive(Debug, thiserror::Error)]
pub enum InjectError {
    /// An input file could not be read.
    #[error("reading {path}: {source}")]
    Read {
        /// File that failed.
        path: PathBuf,
        /// Cause.
        #[source]
        source: io::Error,
    },
    /// Writing output failed.
    #[error("writing output: {0}")]
    Write(#[source] io::Error),
    /// A YAML document could not be turned back into text.
    #[error("serializing YAML: {0}")]
    Serialize(String),
    /// A command-line value is unusable.
    #[error("invalid argument {flag}: {problem}")]
    Args {
        /// The flag at fault.
        flag: &'static str,
        /// What is wrong.
        problem: String,
    },
    /// The TLS certificate or key could not be loaded.
    #[error("TLS certificate {path}: {problem}")]
    Tls {
        /// File at fault.
        path: PathBuf,
        /// What is wrong.
        problem: String,
    },
    /// A listener could not be bound.
    #[error("binding {addr}: {source}")]
    Bind {
        /// Address requested.
        addr: SocketAddr,
        /// Cause.
        #[source]
        source: io::Error,
    },
    /// Waiting for the proxy's readiness gave up.
    #[error("ferry did not become ready at {url} within {waited_ms} ms (last: {last})")]
    NotReady {
        /// What was polled.
        url: String,
        /// How long we waited.
        waited_ms: u128,
        /// Last observed failure.
        last: String,
    },
}
