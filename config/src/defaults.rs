//! Every default of the file format, in one place: validation fills them in, the effective
//! config shows them, and docs/config.md lists them.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::time::Duration;

use crate::ir::{LbPolicy, Propagation, RetryOn, UpstreamProtocol};

/// The only accepted `apiVersion`.
pub const API_VERSION: &str = "ferry/v1";
/// `admin.address`.
pub const ADMIN_ADDRESS: SocketAddr = SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), 15000);
/// `runtime.worker_threads`.
pub const WORKER_THREADS: usize = 2;
/// `runtime.drain_timeout`.
pub const DRAIN_TIMEOUT: Duration = Duration::from_secs(30);
/// `listeners[].limits.max_request_headers_bytes`.
pub const MAX_REQUEST_HEADERS_BYTES: u32 = 64 * 1024;
/// `listeners[].limits.model_sniff_bytes`.
pub const MODEL_SNIFF_BYTES: u32 = 16 * 1024;
/// `listeners[].limits.idle_timeout`.
pub const LISTENER_IDLE_TIMEOUT: Duration = Duration::from_secs(5 * 60);
/// `listeners[].limits.request_headers_timeout`: as HAProxy's usual `timeout http-request`;
/// long enough for any client on a pod network, short enough that slow-header clients cannot
/// pile up.
pub const REQUEST_HEADERS_TIMEOUT: Duration = Duration::from_secs(10);
/// `listeners[].limits.max_connections`: far above what one model server behind its sidecar
/// sees, while 4096 connections at ~20 KiB each (hyper's buffers, TLS state) stay under
/// 100 MiB and well inside a container's usual open-file limit.
pub const MAX_CONNECTIONS: u32 = 4096;
/// `listeners[].limits.h2_max_concurrent_streams`.
pub const H2_MAX_CONCURRENT_STREAMS: u32 = 1024;
/// `listeners[].limits.stalled_write_timeout`.
pub const STALLED_WRITE_TIMEOUT: Duration = Duration::from_secs(30);
/// `routes[].timeout`.
pub const ROUTE_TIMEOUT: Duration = Duration::from_secs(15);
/// `routes[].direct_response.content_type`.
pub const DIRECT_RESPONSE_CONTENT_TYPE: &str = "text/plain; charset=utf-8";
/// `routes[].to[].weight`.
pub const WEIGHT: u32 = 1;
/// `routes[].retry.attempts`.
pub const RETRY_ATTEMPTS: u32 = 2;
/// Largest accepted `routes[].retry.attempts`.
pub const MAX_RETRY_ATTEMPTS: u32 = 10;
/// `routes[].retry.on`.
pub const RETRY_ON: [RetryOn; 2] = [RetryOn::ConnectFailure, RetryOn::Unavailable];
/// `routes[].retry.budget` as a ratio.
pub const RETRY_BUDGET_RATIO: f64 = 0.2;
/// `routes[].retry.min_retries_per_second`.
pub const MIN_RETRIES_PER_SECOND: u32 = 10;
/// `routes[].retry.max_body_bytes`.
pub const RETRY_MAX_BODY_BYTES: u32 = 64 * 1024;
/// `clusters[].protocol`.
pub const PROTOCOL: UpstreamProtocol = UpstreamProtocol::Auto;
/// `clusters[].lb`.
pub const LB: LbPolicy = LbPolicy::P2cEwma;
/// `clusters[].connect_timeout`.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(1);
/// `clusters[].idle_timeout`.
pub const CLUSTER_IDLE_TIMEOUT: Duration = Duration::from_secs(90);
/// `clusters[].dns.refresh`.
pub const DNS_REFRESH: Duration = Duration::from_secs(5);
/// `clusters[].original_authority.default_port`.
pub const DEFAULT_PORT: u16 = 80;
/// `clusters[].slow_start.initial`: Envoy's `min_weight_percent` default.
pub const SLOW_START_INITIAL: f64 = 0.1;
/// `clusters[].lb.load_report.weight`: a fully loaded endpoint (metric 1) costs twice an idle one.
pub const LOAD_REPORT_WEIGHT: f64 = 1.0;
/// `lb.bounded_load` of a hash cluster: no endpoint above 1.25× the mean in-flight (the
/// factor Mirrokni, Thorup and Zadimoghaddam's paper and Vimeo's deployment use).
pub const HASH_BOUNDED_LOAD: f64 = 1.25;
/// `clusters[].outlier.consecutive_failures`.
pub const OUTLIER_CONSECUTIVE_FAILURES: u32 = 5;
/// `clusters[].outlier.ejection`.
pub const OUTLIER_EJECTION: Duration = Duration::from_secs(10);
/// `clusters[].outlier.max_ejection`.
pub const OUTLIER_MAX_EJECTION: Duration = Duration::from_secs(5 * 60);
/// `clusters[].outlier.max_ejection_percent`.
pub const OUTLIER_MAX_EJECTION_PERCENT: u8 = 50;

/// Default bound on a translated body and its decoded tensors: 64 MiB.
pub const TRANSLATE_MAX_DECODED_BYTES: u64 = 64 * 1024 * 1024;

/// Default time fetched model metadata is trusted before `validate_tensors` fetches it again.
pub const TENSOR_METADATA_REFRESH: Duration = Duration::from_secs(30);
/// A TLS handshake not finished within this is abandoned.
pub const TLS_HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);
/// `redis.timeout`.
pub const REDIS_TIMEOUT: Duration = Duration::from_millis(50);
/// The port of a `redis.address` that names none.
pub const REDIS_PORT: u16 = 6379;
/// `routes[].rate_limit[].fallback`.
pub const TOKEN_FALLBACK: u64 = 0;
/// `routes[].rate_limit[].request_usage`.
pub const REQUEST_USAGE: bool = true;
/// `routes[].concurrency.queue`.
pub const CONCURRENCY_QUEUE: u32 = 0;
/// `routes[].concurrency.queue_timeout`.
pub const CONCURRENCY_QUEUE_TIMEOUT: Duration = Duration::from_secs(1);
/// `tracing.otlp.timeout`.
pub const OTLP_TIMEOUT: Duration = Duration::from_secs(5);
/// `tracing.propagation`.
pub const TRACING_PROPAGATION: [Propagation; 1] = [Propagation::W3c];
/// `tracing.sampling.ratio`.
pub const SAMPLING_RATIO: f64 = 1.0;
/// `tracing.queue`.
pub const TRACING_QUEUE: usize = 2048;
/// Largest accepted `tracing.queue`.
pub const MAX_TRACING_QUEUE: usize = 1 << 20;
/// `access_log[].sample`.
pub const ACCESS_LOG_SAMPLE: f64 = 1.0;
/// `routes[].mirror[].compare`.
pub const MIRROR_COMPARE: crate::ir::Compare = crate::ir::Compare::None;
/// `routes[].mirror[].tolerance.abs`.
pub const MIRROR_TOLERANCE_ABS: f64 = 1e-4;
/// `routes[].mirror[].tolerance.rel`.
pub const MIRROR_TOLERANCE_REL: f64 = 1e-3;
/// `routes[].mirror[].max_body`: 16 MiB, a large image batch; bounds the copy of the request
/// and of the primary's answer each mirrored request may hold.
pub const MIRROR_MAX_BODY: u64 = 16 * 1024 * 1024;
/// `routes[].mirror[].timeout`: how long a mirrored request may take, answer included.
pub const MIRROR_TIMEOUT: Duration = Duration::from_secs(10);
/// `routes[].mirror[].max_in_flight`: mirrored requests in flight per route and candidate;
/// over it a mirror is dropped, so a hung candidate holds at most this many copies.
pub const MIRROR_MAX_IN_FLIGHT: u32 = 64;
