//! Raw types → IR, collecting every semantic error with its position.
//!
//! Each check records its problem in [`Ctx`] and carries on with a stand-in value, so one run
//! reports everything wrong with the file; the IR is only returned when nothing was.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::num::NonZeroU32;
use std::time::Duration;

use crate::defaults;
use crate::error::ConfigError;
use crate::ir::{Admin, Cluster, Listener, ListenerLimits, Runtime};
use crate::parse::LoadOptions;
use crate::raw::{DurationText, RawConfig, RawListener, SocketAddrText};
use crate::yaml::PosIndex;

mod access_log;
mod cluster;
mod fault;
mod hash_lb;
mod limits;
mod matchers;
mod mirror;
mod redis;
mod route;
mod spiffe;
mod template;
mod tensors;
mod tls;
mod torchserve;
mod tracing;
mod transcode;
mod translate;
mod translate_tfserving;
mod values;

pub(crate) use limits::key_part_text;
pub(crate) use redis::redact_password;
pub(crate) use values::format_percent;
pub use values::{format_duration, parse_duration};

/// Where errors go while validating one file.
pub(crate) struct Ctx<'a> {
    file: &'a str,
    index: &'a PosIndex,
    errors: Vec<ConfigError>,
}

impl<'a> Ctx<'a> {
    pub(crate) fn new(file: &'a str, index: &'a PosIndex) -> Self {
        Self {
            file,
            index,
            errors: Vec::new(),
        }
    }

    /// Records a problem with the value at `path`.
    pub(crate) fn error(&mut self, path: &str, message: impl Into<String>) {
        let pos = self.index.value(path);
        self.errors.push(ConfigError {
            file: self.file.to_owned(),
            line: pos.line,
            col: pos.col,
            path: path.to_owned(),
            message: message.into(),
        });
    }

    /// Records a problem with the mapping key at `path` (a bad key rather than its value).
    pub(crate) fn error_at_key(&mut self, path: &str, message: impl Into<String>) {
        let pos = self.index.key(path);
        self.errors.push(ConfigError {
            file: self.file.to_owned(),
            line: pos.line,
            col: pos.col,
            path: path.to_owned(),
            message: message.into(),
        });
    }

    /// Where the value at `path` is, for errors found after validation.
    pub(crate) fn locate(&self, path: &str) -> crate::ir::FieldLocation {
        let pos = self.index.value(path);
        crate::ir::FieldLocation {
            file: self.file.to_owned(),
            line: pos.line,
            col: pos.col,
            path: path.to_owned(),
        }
    }

    /// The directory relative paths in the file are resolved against.
    pub(crate) fn base_dir(&self) -> &std::path::Path {
        std::path::Path::new(self.file)
            .parent()
            .unwrap_or(std::path::Path::new(""))
    }

    /// Records `Err` results and turns them into `None`.
    pub(crate) fn check<T>(&mut self, path: &str, result: Result<T, String>) -> Option<T> {
        result.map_err(|m| self.error(path, m)).ok()
    }

    /// Parses an optional duration, falling back to `default` when absent (or invalid, after
    /// recording the error).
    pub(crate) fn duration_or(
        &mut self,
        path: &str,
        text: Option<&DurationText>,
        default: Duration,
    ) -> Duration {
        text.and_then(|t| self.check(path, values::parse_duration(t.as_str())))
            .unwrap_or(default)
    }

    pub(crate) fn socket_addr(&mut self, path: &str, text: &SocketAddrText) -> Option<SocketAddr> {
        self.check(path, values::parse_socket_addr(text.as_str()))
    }

    /// All recorded errors, in file order.
    pub(crate) fn into_errors(self) -> Vec<ConfigError> {
        let mut errors = self.errors;
        errors.sort_by_key(|e| (e.line, e.col));
        errors
    }
}

/// The validated parts of a config, before the effective JSON and version are computed.
pub(crate) struct Parts {
    pub(crate) admin: Admin,
    pub(crate) runtime: Runtime,
    pub(crate) listeners: Vec<Listener>,
    pub(crate) clusters: Vec<Cluster>,
    pub(crate) identity: Option<crate::ir::Identity>,
    pub(crate) redis: Option<crate::ir::Redis>,
    pub(crate) tracing: Option<crate::ir::Tracing>,
    pub(crate) access_log: Vec<crate::ir::AccessLog>,
}

/// Validates a whole file; errors are left in `ctx`.
pub(crate) fn config(ctx: &mut Ctx<'_>, raw: RawConfig, options: &LoadOptions) -> Parts {
    match raw.api_version.as_ref().map(|v| v.as_str()) {
        Some(defaults::API_VERSION) => {}
        Some(other) => ctx.error(
            "apiVersion",
            format!("unsupported apiVersion {other:?} (expected \"ferry/v1\")"),
        ),
        None => ctx.error("apiVersion", "missing apiVersion (expected \"ferry/v1\")"),
    }
    let admin = raw.admin.unwrap_or_default();
    let admin_address = admin
        .address
        .as_ref()
        .and_then(|a| ctx.socket_addr("admin.address", a))
        .unwrap_or(defaults::ADMIN_ADDRESS);
    let runtime = raw.runtime.unwrap_or_default();
    let worker_threads = match runtime.worker_threads {
        None => defaults::WORKER_THREADS,
        Some(n) => ctx
            .check(
                "runtime.worker_threads",
                usize::try_from(n)
                    .ok()
                    .filter(|n| (1..=1024).contains(n))
                    .ok_or_else(|| format!("invalid worker_threads {n} (expected 1 to 1024)")),
            )
            .unwrap_or(defaults::WORKER_THREADS),
    };
    let drain_timeout = ctx.duration_or(
        "runtime.drain_timeout",
        runtime.drain_timeout.as_ref(),
        defaults::DRAIN_TIMEOUT,
    );

    // The file's own identity wins; `ferry run --identity-dir` fills in one it lacks.
    let identity = match &raw.identity {
        Some(_) => tls::identity(ctx, raw.identity.as_ref()),
        None => options.identity.clone(),
    };
    // An identity with errors still counts as present: its own errors are the ones to fix.
    let has_identity = raw.identity.is_some() || identity.is_some();
    let redis = redis::redis(ctx, raw.redis.as_ref());
    // Likewise a redis with errors: `scope: global` limits are not also reported.
    let has_redis = raw.redis.is_some();
    let tracing = tracing::tracing(ctx, raw.tracing.as_ref());
    let access_log = access_log::access_log(ctx, raw.access_log.as_deref());
    let clusters = cluster::clusters(ctx, &raw.clusters, has_identity);
    let mut names: Vec<&str> = clusters.iter().map(|c| c.name.as_str()).collect();
    names.sort_unstable();
    names.dedup();
    let env = Env {
        clusters: &names,
        has_identity,
        has_redis,
    };
    let listeners = listeners(ctx, &raw.listeners, admin_address, env);
    Parts {
        admin: Admin {
            address: admin_address,
        },
        runtime: Runtime {
            worker_threads,
            drain_timeout,
        },
        listeners,
        clusters,
        identity,
        redis,
        tracing,
        access_log,
    }
}

/// What listeners and routes are checked against: the rest of the file.
#[derive(Debug, Clone, Copy)]
struct Env<'a> {
    /// Cluster names, sorted and unique.
    clusters: &'a [&'a str],
    /// The file has a top-level `identity` (valid or not).
    has_identity: bool,
    /// The file has a top-level `redis` (valid or not).
    has_redis: bool,
}

fn listeners(
    ctx: &mut Ctx<'_>,
    raw: &[RawListener],
    admin: SocketAddr,
    env: Env<'_>,
) -> Vec<Listener> {
    let mut names: HashMap<&str, usize> = HashMap::new();
    // Port 0 asks the OS for a fresh port, so two such listeners never collide.
    let mut addresses: HashMap<SocketAddr, String> = HashMap::new();
    if admin.port() != 0 {
        addresses.insert(admin, "admin.address".into());
    }
    let mut out = Vec::with_capacity(raw.len());
    for (i, l) in raw.iter().enumerate() {
        let path = format!("listeners[{i}]");
        if let Some(first) = names.insert(l.name.as_str(), i) {
            ctx.error(
                &format!("{path}.name"),
                format!(
                    "duplicate listener name {:?} (expected unique names; first used by listeners[{first}])",
                    l.name.as_str()
                ),
            );
        }
        let address = ctx.socket_addr(&format!("{path}.address"), &l.address);
        if let Some(addr) = address.filter(|a| a.port() != 0) {
            if let Some(first) = addresses.get(&addr) {
                ctx.error(
                    &format!("{path}.address"),
                    format!(
                        "duplicate address {addr} (expected unique addresses; also used by {first})"
                    ),
                );
            } else {
                addresses.insert(addr, format!("{path}.address"));
            }
        }
        let limits = listener_limits(ctx, &path, l);
        let routes = route::routes(ctx, &path, &l.routes, env.clusters, env.has_redis);
        out.push(Listener {
            name: l.name.0.clone(),
            address: address.unwrap_or(defaults::ADMIN_ADDRESS),
            routes,
            limits,
            tls: tls::listener_tls(
                ctx,
                &format!("{path}.tls"),
                l.tls.as_ref(),
                env.has_identity,
            ),
            authorization: tls::authorization(
                ctx,
                &format!("{path}.authorization"),
                l.authorization.as_ref(),
            ),
        });
    }
    out
}

fn listener_limits(ctx: &mut Ctx<'_>, path: &str, l: &RawListener) -> ListenerLimits {
    let limits = l.limits.clone().unwrap_or_default();
    ListenerLimits {
        max_request_headers_bytes: limits
            .max_request_headers_bytes
            .unwrap_or(defaults::MAX_REQUEST_HEADERS_BYTES),
        max_request_body_bytes: limits.max_request_body_bytes,
        model_sniff_bytes: limits
            .model_sniff_bytes
            .unwrap_or(defaults::MODEL_SNIFF_BYTES),
        idle_timeout: Some(ctx.duration_or(
            &format!("{path}.limits.idle_timeout"),
            limits.idle_timeout.as_ref(),
            defaults::LISTENER_IDLE_TIMEOUT,
        ))
        .filter(|d| !d.is_zero()),
        request_headers_timeout: Some(ctx.duration_or(
            &format!("{path}.limits.request_headers_timeout"),
            limits.request_headers_timeout.as_ref(),
            defaults::REQUEST_HEADERS_TIMEOUT,
        ))
        .filter(|d| !d.is_zero()),
        max_connections: NonZeroU32::new(
            limits.max_connections.unwrap_or(defaults::MAX_CONNECTIONS),
        ),
        h2_max_concurrent_streams: NonZeroU32::new(
            limits
                .h2_max_concurrent_streams
                .unwrap_or(defaults::H2_MAX_CONCURRENT_STREAMS),
        ),
        stalled_write_timeout: Some(ctx.duration_or(
            &format!("{path}.limits.stalled_write_timeout"),
            limits.stalled_write_timeout.as_ref(),
            defaults::STALLED_WRITE_TIMEOUT,
        ))
        .filter(|d| !d.is_zero()),
    }
}

#[cfg(test)]
mod tests;
