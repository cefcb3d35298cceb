//! Configs ferry uses without a file: the built-in default and `--listen/--upstream`.
//!
//! Both are built directly as IR so they cannot fail; a test checks the default against
//! `examples/default.yaml`, which ships as [`DEFAULT_YAML`].

use std::net::SocketAddr;
use std::num::NonZeroU32;

use crate::defaults;
use crate::effective::finish;
use crate::ir::{
    Action, Admin, Cluster, Config, Endpoints, HeaderEdits, LbPolicy, Listener, ListenerLimits,
    ListenerTls, OutlierDetection, Route, RouteMatch, Runtime, Translate, TranslateDirection,
    UpstreamBinary, UpstreamProtocol, WeightedCluster,
};
use crate::validate::Parts;

/// The built-in default config (examples/default.yaml): used when `ferry run` gets no file.
pub const DEFAULT_YAML: &str = include_str!("../../examples/default.yaml");

/// The built-in default: admin on 127.0.0.1:15000; `inbound` 0.0.0.0:15006 → cluster `local`
/// (127.0.0.1:8080); `outbound` 127.0.0.1:15001 → `passthrough` (the request's authority).
pub fn default_config() -> Config {
    let local = cluster(
        "local",
        Endpoints::Static(vec![loopback(8080)]),
        defaults::LB,
    );
    let passthrough = cluster(
        "passthrough",
        Endpoints::OriginalAuthority {
            default_port: defaults::DEFAULT_PORT,
        },
        defaults::LB,
    );
    finish(Parts {
        admin: Admin {
            address: defaults::ADMIN_ADDRESS,
        },
        runtime: runtime(),
        identity: None,
        redis: None,
        tracing: None,
        access_log: Vec::new(),
        listeners: vec![
            listener("inbound", SocketAddr::from(([0, 0, 0, 0], 15006)), "local"),
            listener("outbound", loopback(15001), "passthrough"),
        ],
        clusters: vec![local, passthrough],
    })
}

/// The config of `ferry run --listen A --upstream B [--admin C]`: listener `main` with route
/// `default` to cluster `upstream` (protocol auto, round robin, outlier detection on).
pub fn one_route_config(
    listen: SocketAddr,
    upstream: SocketAddr,
    admin: Option<SocketAddr>,
) -> Config {
    one_route_translate_config(listen, upstream, admin, None)
}

/// [`one_route_config`] whose route translates in `direction` (OIP v2, default limits):
/// `ferry run --listen A --upstream B --translate rest-to-grpc|grpc-to-rest`.
pub fn one_route_translate_config(
    listen: SocketAddr,
    upstream: SocketAddr,
    admin: Option<SocketAddr>,
    direction: Option<TranslateDirection>,
) -> Config {
    let mut main = listener("main", listen, "upstream");
    for route in &mut main.routes {
        route.translate = direction.map(|direction| Translate {
            direction,
            max_decoded_bytes: defaults::TRANSLATE_MAX_DECODED_BYTES,
            upstream_binary: UpstreamBinary::Auto,
            descriptor: None,
            signature: None,
        });
    }
    finish(Parts {
        admin: Admin {
            address: admin.unwrap_or(defaults::ADMIN_ADDRESS),
        },
        runtime: runtime(),
        identity: None,
        redis: None,
        tracing: None,
        access_log: Vec::new(),
        listeners: vec![main],
        clusters: vec![cluster(
            "upstream",
            Endpoints::Static(vec![upstream]),
            LbPolicy::RoundRobin,
        )],
    })
}

fn loopback(port: u16) -> SocketAddr {
    SocketAddr::from(([127, 0, 0, 1], port))
}

fn runtime() -> Runtime {
    Runtime {
        worker_threads: defaults::WORKER_THREADS,
        drain_timeout: defaults::DRAIN_TIMEOUT,
    }
}

fn listener(name: &str, address: SocketAddr, cluster: &str) -> Listener {
    Listener {
        name: name.to_owned(),
        address,
        routes: vec![Route {
            name: "default".to_owned(),
            matcher: RouteMatch::default(),
            action: Action::Forward(vec![WeightedCluster {
                cluster: cluster.to_owned(),
                weight: NonZeroU32::MIN,
            }]),
            request_headers: HeaderEdits::default(),
            response_headers: HeaderEdits::default(),
            prefix_rewrite: None,
            timeout: Some(defaults::ROUTE_TIMEOUT),
            retry: None,
            translate: None,
            validate_tensors: None,
            authorization: None,
            rate_limit: Vec::new(),
            concurrency: None,
            access_log: true,
            load_report: Default::default(),
            fault: None,
            mirror: Vec::new(),
        }],
        limits: ListenerLimits {
            max_request_headers_bytes: defaults::MAX_REQUEST_HEADERS_BYTES,
            max_request_body_bytes: None,
            model_sniff_bytes: defaults::MODEL_SNIFF_BYTES,
            idle_timeout: Some(defaults::LISTENER_IDLE_TIMEOUT),
            request_headers_timeout: Some(defaults::REQUEST_HEADERS_TIMEOUT),
            max_connections: NonZeroU32::new(defaults::MAX_CONNECTIONS),
            h2_max_concurrent_streams: NonZeroU32::new(defaults::H2_MAX_CONCURRENT_STREAMS),
            stalled_write_timeout: Some(defaults::STALLED_WRITE_TIMEOUT),
        },
        tls: ListenerTls::default(),
        authorization: None,
    }
}

fn cluster(name: &str, endpoints: Endpoints, lb: LbPolicy) -> Cluster {
    Cluster {
        name: name.to_owned(),
        endpoints,
        protocol: UpstreamProtocol::Auto,
        lb,
        connect_timeout: defaults::CONNECT_TIMEOUT,
        idle_timeout: defaults::CLUSTER_IDLE_TIMEOUT,
        tls: None,
        slow_start: None,
        load_report: None,
        hash: None,
        outlier: Some(OutlierDetection {
            consecutive_failures: defaults::OUTLIER_CONSECUTIVE_FAILURES,
            base_ejection: defaults::OUTLIER_EJECTION,
            max_ejection: defaults::OUTLIER_MAX_EJECTION,
            max_ejection_percent: defaults::OUTLIER_MAX_EJECTION_PERCENT,
        }),
    }
}
