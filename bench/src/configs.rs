//! Configs for the proxies under test, rendered from the templates in `bench/configs/`.
//!
//! The templates are the checked-in, reviewable contract of "equivalent configuration"; this
//! module only fills in ports and paths and, for the route-table scenario, generates `n` extra
//! path-prefix routes ahead of the default ones (`/route-<i>/`), so the probe request for
//! route `n-1` must get past every earlier one in a proxy that matches linearly.

use std::fmt::Write;
use std::path::Path;

use crate::targets::Kind;

pub mod access_log;

const FERRY: &str = include_str!("../configs/ferry.yaml");
const ENVOY: &str = include_str!("../configs/envoy.yaml");
const HAPROXY: &str = include_str!("../configs/haproxy.cfg");
const NGINX: &str = include_str!("../configs/nginx.conf");
const HAPROXY_TCP: &str = include_str!("../configs/haproxy-tcp.cfg");
const FERRY_TRANSLATE: &str = include_str!("../configs/ferry-translate.yaml");
const ENVOY_TRANSLATE: &str = include_str!("../configs/envoy-translate.yaml");
const FERRY_LIMITS: &str = include_str!("../configs/ferry-limits.yaml");
const FERRY_TRACING: &str = include_str!("../configs/ferry-tracing.yaml");
const ENVOY_TRACING: &str = include_str!("../configs/envoy-tracing.yaml");

/// The FileDescriptorSet of `bench/proto/inference_http.proto` (compiled by build.rs with
/// protox), which envoy-translate.yaml loads from the work directory.
pub const ENVOY_DESCRIPTOR: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/inference_http.pb"));
/// File name of [`ENVOY_DESCRIPTOR`] inside the work directory.
pub const ENVOY_DESCRIPTOR_FILE: &str = "inference_http.pb";

/// Ports a proxy config refers to.
#[derive(Debug, Clone, Copy)]
pub struct Ports {
    /// Downstream HTTP/1.1 listener (also h2c where the proxy can share it).
    pub h1: u16,
    /// Downstream h2c listener (the same as `h1` except for nginx).
    pub h2: u16,
    /// Admin listener (ferry, Envoy).
    pub admin: u16,
    /// The bench upstream.
    pub upstream: u16,
}

/// Which rate limit the `limit_*` scenarios' route carries (`configs/ferry-limits.yaml`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Limit {
    /// No limit: the same route and listener, the baseline of both scenarios.
    Off,
    /// A local limit that never refuses, keyed by `x-tenant`.
    Local,
    /// The same as a `scope: global` limit, counted in the redis-server on this port.
    Global {
        /// The redis-server's loopback port.
        redis_port: u16,
    },
}

/// Whether and how the `tracing` scenario's proxy traces (`configs/{ferry,envoy}-tracing.yaml`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Tracing {
    /// No tracing block (ferry) or tracer (Envoy): the baseline.
    None,
    /// Tracing on, a `ratio` (0..=1) of new traces sampled, exported over OTLP/gRPC to the
    /// sink on this loopback port.
    Sampled {
        /// Share of new traces recorded.
        ratio: f64,
        /// The OTLP sink's port.
        otlp_port: u16,
    },
}

/// Path of the probe request that matches the last of `n` generated routes.
pub fn route_probe_path(n: usize) -> String {
    format!("/route-{}/probe", n.saturating_sub(1))
}

/// The config text for `kind`, or `None` for targets without one (direct, tcp-relay).
pub fn render(kind: Kind, ports: Ports, workdir: &Path, routes: usize) -> Option<String> {
    let (template, route_block) = match kind {
        // Direct has no proxy; the relay takes its addresses on the command line.
        Kind::Direct | Kind::TcpRelay => return None,
        Kind::Ferry | Kind::FerryBase => (FERRY, ferry_routes(routes)),
        Kind::Envoy => (ENVOY, envoy_routes(routes)),
        Kind::Haproxy => (HAPROXY, haproxy_routes(routes)),
        Kind::Nginx => (NGINX, nginx_routes(routes)),
        // A TCP relay has no routes: every request reaches the upstream as it is.
        Kind::HaproxyTcp => (HAPROXY_TCP, String::new()),
    };
    Some(fill(
        &template.replace("@ROUTES@\n", &route_block),
        ports,
        workdir,
    ))
}

/// The `translate` scenario's config for `kind` (ferry and Envoy only): OIP REST infer in,
/// gRPC ModelInfer to the upstream.
pub fn render_translate(kind: Kind, ports: Ports, workdir: &Path) -> Option<String> {
    let template = match kind {
        Kind::Ferry | Kind::FerryBase => FERRY_TRANSLATE,
        Kind::Envoy => ENVOY_TRANSLATE,
        _ => return None,
    };
    Some(fill(template, ports, workdir))
}

/// The `limit_*` scenarios' config (ferry only): the template's lines marked `# limit local` or
/// `# limit global` kept for that limit and dropped otherwise, so the runs differ in the limit
/// alone.
pub fn render_limits(kind: Kind, ports: Ports, workdir: &Path, limit: Limit) -> Option<String> {
    if !kind.is_ferry() {
        return None;
    }
    let (keep, redis_port) = match limit {
        Limit::Off => (None, 0),
        Limit::Local => (Some("local"), 0),
        Limit::Global { redis_port } => (Some("global"), redis_port),
    };
    let text: String = FERRY_LIMITS
        .lines()
        .filter_map(|line| match line.split_once(" # limit ") {
            None => Some(line),
            Some((kept, which)) if Some(which) == keep => Some(kept),
            Some(_) => None,
        })
        .fold(String::new(), |mut out, line| {
            out.push_str(line);
            out.push('\n');
            out
        });
    Some(fill(&text, ports, workdir).replace("@REDIS_PORT@", &redis_port.to_string()))
}

/// The `tracing` scenario's config (ferry and Envoy): the template's lines marked `# tracing`
/// kept (with the ratio and the sink's port) or dropped, so the runs differ in tracing alone.
pub fn render_tracing(
    kind: Kind,
    ports: Ports,
    workdir: &Path,
    tracing: Tracing,
) -> Option<String> {
    let template = match kind {
        Kind::Ferry | Kind::FerryBase => FERRY_TRACING,
        Kind::Envoy => ENVOY_TRACING,
        _ => return None,
    };
    let (on, ratio, otlp_port) = match tracing {
        Tracing::None => (false, 0.0, 0),
        Tracing::Sampled { ratio, otlp_port } => (true, ratio, otlp_port),
    };
    let text: String = template
        .lines()
        .filter_map(|line| match line.strip_suffix(" # tracing") {
            None => Some(line),
            Some(kept) => on.then_some(kept),
        })
        .fold(String::new(), |mut out, line| {
            out.push_str(line);
            out.push('\n');
            out
        });
    Some(
        fill(&text, ports, workdir)
            .replace("@OTLP_PORT@", &otlp_port.to_string())
            .replace("@RATIO@", &ratio.to_string())
            // Envoy's random_sampling is a percentage.
            .replace("@SAMPLING_PCT@", &(ratio * 100.0).to_string()),
    )
}

fn fill(template: &str, ports: Ports, workdir: &Path) -> String {
    template
        .replace("@H1_PORT@", &ports.h1.to_string())
        .replace("@H2_PORT@", &ports.h2.to_string())
        .replace("@ADMIN_PORT@", &ports.admin.to_string())
        .replace("@UP_PORT@", &ports.upstream.to_string())
        .replace("@WORKDIR@", &workdir.display().to_string())
}

fn lines(n: usize, line: impl Fn(&mut String, usize)) -> String {
    let mut out = String::with_capacity(n * 96);
    for i in 0..n {
        line(&mut out, i);
    }
    out
}

fn ferry_routes(n: usize) -> String {
    lines(n, |out, i| {
        let _ = writeln!(
            out,
            "      - {{ name: r{i}, match: {{ path: {{ prefix: /route-{i}/ }} }}, to: upstream }}"
        );
    })
}

fn envoy_routes(n: usize) -> String {
    lines(n, |out, i| {
        let _ = writeln!(
            out,
            "                        - {{ match: {{ prefix: \"/route-{i}/\" }}, route: {{ cluster: upstream_h1, timeout: 0s }} }}"
        );
    })
}

fn haproxy_routes(n: usize) -> String {
    lines(n, |out, i| {
        let _ = writeln!(
            out,
            "    use_backend upstream_h1 if {{ path_beg /route-{i}/ }}"
        );
    })
}

fn nginx_routes(n: usize) -> String {
    lines(n, |out, i| {
        let _ = writeln!(
            out,
            "        location /route-{i}/ {{ proxy_pass http://upstream_h1; }}"
        );
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_placeholder_is_filled() {
        let ports = Ports {
            h1: 1,
            h2: 2,
            admin: 3,
            upstream: 4,
        };
        for kind in [
            Kind::Ferry,
            Kind::FerryBase,
            Kind::Envoy,
            Kind::Haproxy,
            Kind::Nginx,
            Kind::HaproxyTcp,
        ] {
            let text = render(kind, ports, Path::new("/tmp/x"), 3).unwrap();
            for placeholder in [
                "@H1_PORT@",
                "@H2_PORT@",
                "@ADMIN_PORT@",
                "@UP_PORT@",
                "@WORKDIR@",
                "@ROUTES@",
            ] {
                assert!(!text.contains(placeholder), "{kind:?}: {placeholder}");
            }
            assert_eq!(text.contains("/route-2/"), kind.routes_http(), "{kind:?}");
            assert!(
                !text.contains("@ROUTES@") && !text.contains("_PORT@"),
                "{kind:?}"
            );
        }
    }

    #[test]
    fn translate_configs_are_filled_and_name_the_descriptor() {
        let ports = Ports {
            h1: 1,
            h2: 1,
            admin: 3,
            upstream: 4,
        };
        for kind in [Kind::Ferry, Kind::FerryBase, Kind::Envoy] {
            let text = render_translate(kind, ports, Path::new("/tmp/x")).unwrap();
            assert!(
                !text.contains("_PORT@") && !text.contains("@WORKDIR@"),
                "{kind:?}"
            );
        }
        let envoy = render_translate(Kind::Envoy, ports, Path::new("/tmp/x")).unwrap();
        assert!(envoy.contains(&format!("/tmp/x/{ENVOY_DESCRIPTOR_FILE}")));
        assert!(render_translate(Kind::Nginx, ports, Path::new("/tmp/x")).is_none());
    }

    #[test]
    fn limit_configs_differ_in_the_limit_alone() {
        let ports = Ports {
            h1: 1,
            h2: 1,
            admin: 3,
            upstream: 4,
        };
        let dir = Path::new("/tmp/x");
        let off = render_limits(Kind::Ferry, ports, dir, Limit::Off).unwrap();
        let local = render_limits(Kind::Ferry, ports, dir, Limit::Local).unwrap();
        let global =
            render_limits(Kind::Ferry, ports, dir, Limit::Global { redis_port: 6390 }).unwrap();
        assert!(
            !off.contains("rate_limit") && !off.contains("redis"),
            "{off}"
        );
        assert_eq!(local.matches("rate_limit").count(), 1, "{local}");
        assert!(
            !local.contains("scope") && !local.contains("redis"),
            "{local}"
        );
        assert!(global.contains("scope: global") && global.contains("127.0.0.1:6390"));
        assert_eq!(global.matches("rate_limit").count(), 1, "{global}");
        for text in [&off, &local, &global] {
            assert!(!text.contains('@') && !text.contains(" # limit "), "{text}");
        }
        assert!(render_limits(Kind::Envoy, ports, dir, Limit::Off).is_none());
    }

    #[test]
    fn tracing_configs_differ_in_the_tracing_block_alone() {
        let ports = Ports {
            h1: 1,
            h2: 1,
            admin: 3,
            upstream: 4,
        };
        let dir = Path::new("/tmp/x");
        let sampled = Tracing::Sampled {
            ratio: 0.01,
            otlp_port: 4317,
        };
        // The settings, without the templates' comments.
        let settings = |t: String| -> String {
            t.lines()
                .filter(|l| !l.trim_start().starts_with('#'))
                .fold(String::new(), |out, l| out + l + "\n")
        };
        let off = settings(render_tracing(Kind::Ferry, ports, dir, Tracing::None).unwrap());
        let on = settings(render_tracing(Kind::Ferry, ports, dir, sampled).unwrap());
        assert!(!off.contains("tracing:") && !off.contains("otlp"), "{off}");
        assert!(on.contains("ratio: 0.01 }") && on.contains("http://127.0.0.1:4317"));
        let envoy_off = settings(render_tracing(Kind::Envoy, ports, dir, Tracing::None).unwrap());
        let envoy_on = settings(render_tracing(Kind::Envoy, ports, dir, sampled).unwrap());
        assert!(!envoy_off.contains("tracing") && !envoy_off.contains("otlp"));
        assert!(
            envoy_on.contains("random_sampling: { value: 1 }"),
            "{envoy_on}"
        );
        assert!(envoy_on.contains("port_value: 4317"));
        for text in [&off, &on, &envoy_off, &envoy_on] {
            assert!(
                !text.contains("_PORT@") && !text.contains("@RATIO@"),
                "{text}"
            );
            assert!(!text.contains("@SAMPLING_PCT@") && !text.contains(" # tracing"));
        }
        // The runs differ in the marked lines alone.
        for (template, off, on) in [
            (FERRY_TRACING, &off, &on),
            (ENVOY_TRACING, &envoy_off, &envoy_on),
        ] {
            let marked = template
                .lines()
                .filter(|l| l.ends_with(" # tracing"))
                .count();
            assert_eq!(on.lines().count(), off.lines().count() + marked);
            let mut rest = on.lines();
            assert!(off.lines().all(|l| rest.any(|o| o == l)), "{off}");
        }
        assert!(render_tracing(Kind::Nginx, ports, dir, sampled).is_none());
    }

    #[test]
    fn the_descriptor_carries_the_http_binding() {
        use prost::Message;
        // Well-formed protobuf (unknown fields are skipped, bad wire data is an error) ...
        assert!(<() as Message>::decode(ENVOY_DESCRIPTOR).is_ok());
        // ... holding the imports Envoy resolves and the binding it routes by.
        let text = String::from_utf8_lossy(ENVOY_DESCRIPTOR);
        for needle in [
            "inference_http.proto",
            "post",
            "google/api/annotations.proto",
            "google/protobuf/descriptor.proto",
            "/v2/models/{model_name}/infer",
        ] {
            assert!(text.contains(needle), "{needle}");
        }
    }
}
