//! The top-level `redis`: where `scope: global` limits keep their counters.
//!
//! The address is normalised to one URL form, `redis[s]://[user[:pass]@]host:port[/db]`, so
//! the proxy hands it to its client as is and two spellings of one store (`host:6379`,
//! `redis://host`) are one config version.

use super::Ctx;
use super::values::{is_dns_name, parse_host_port};
use crate::defaults;
use crate::ir::{OnFailure, Redis};
use crate::raw::{OnFailureSpec, RedisSpec};

/// `redis`; `None` when absent or invalid (the error is then recorded).
pub(super) fn redis(ctx: &mut Ctx<'_>, spec: Option<&RedisSpec>) -> Option<Redis> {
    let spec = spec?;
    let url = ctx.check("redis.address", parse_redis_address(spec.address.as_str()));
    let timeout = ctx.duration_or(
        "redis.timeout",
        spec.timeout.as_ref(),
        defaults::REDIS_TIMEOUT,
    );
    if timeout.is_zero() {
        ctx.error(
            "redis.timeout",
            "invalid timeout 0s (expected a duration > 0, e.g. \"50ms\")",
        );
    }
    Some(Redis {
        url: url?,
        timeout,
        on_failure: match spec.on_failure {
            None | Some(OnFailureSpec::Allow) => OnFailure::Allow,
            Some(OnFailureSpec::Deny) => OnFailure::Deny,
        },
    })
}

/// `host:port` → `redis://host:port`; `redis://` and `rediss://` URLs are checked and given
/// the default port when they name none.
pub(crate) fn parse_redis_address(text: &str) -> Result<String, String> {
    let bad = |why: &str| {
        format!(
            "invalid redis address {text:?}: {why} (expected host:port or \
             redis://[user:pass@]host[:port][/db], rediss:// for TLS, e.g. \"127.0.0.1:6379\")"
        )
    };
    let Some((scheme, rest)) = text.split_once("://") else {
        let hp = parse_host_port(text).map_err(|_| bad("not a host:port or URL"))?;
        return Ok(format!("redis://{}:{}", hp.host, hp.port));
    };
    let scheme = scheme.to_ascii_lowercase();
    if scheme != "redis" && scheme != "rediss" {
        return Err(bad(&format!("unsupported scheme {scheme:?}")));
    }
    if rest.contains(['?', '#']) {
        return Err(bad("query strings and fragments are not supported"));
    }
    let (authority, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
    let (userinfo, host_port) = match authority.rsplit_once('@') {
        Some((user, host_port)) => (Some(user), host_port),
        None => (None, authority),
    };
    if userinfo.is_some_and(|u| u.is_empty() || u.chars().any(|c| c.is_control() || c == ' ')) {
        return Err(bad("empty or malformed user:password"));
    }
    let (host, port) = split_host_port(host_port).ok_or_else(|| bad("invalid port"))?;
    let host_ok = match host.strip_prefix('[').and_then(|h| h.strip_suffix(']')) {
        Some(v6) => v6.parse::<std::net::Ipv6Addr>().is_ok(),
        None => is_dns_name(host),
    };
    if !host_ok {
        return Err(bad(if host.is_empty() {
            "no host"
        } else {
            "invalid host"
        }));
    }
    let db = match path.strip_prefix('/') {
        None | Some("") => String::new(),
        Some(db) if !db.is_empty() && db.len() <= 9 && db.bytes().all(|b| b.is_ascii_digit()) => {
            format!(
                "/{}",
                db.parse::<u32>()
                    .map_err(|_| bad("invalid database number"))?
            )
        }
        Some(_) => return Err(bad("the path must be a database number, e.g. /0")),
    };
    let userinfo = userinfo.map(|u| format!("{u}@")).unwrap_or_default();
    let host = host.to_ascii_lowercase();
    Ok(format!("{scheme}://{userinfo}{host}:{port}{db}"))
}

/// `host`, `host:port`, `[v6]` or `[v6]:port`; `None` for a bad port.
fn split_host_port(text: &str) -> Option<(&str, u16)> {
    let port_at = match text.rfind(':') {
        // A colon inside brackets belongs to an IPv6 address.
        Some(i) if !text[i..].contains(']') => i,
        _ => return Some((text, defaults::REDIS_PORT)),
    };
    let port: u16 = text[port_at + 1..].parse().ok().filter(|p| *p != 0)?;
    Some((&text[..port_at], port))
}

/// The URL with its password (if any) replaced by `***`, for `/config_dump`.
pub(crate) fn redact_password(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_owned();
    };
    let (authority, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
    match authority.rsplit_once('@') {
        Some((userinfo, host)) => match userinfo.split_once(':') {
            Some((user, _)) => format!("{scheme}://{user}:***@{host}{path}"),
            None => url.to_owned(),
        },
        None => url.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::{parse_redis_address, redact_password as redact};

    #[test]
    fn addresses_are_normalised() {
        for (text, want) in [
            ("127.0.0.1:6379", "redis://127.0.0.1:6379"),
            ("Redis.NS.svc:7000", "redis://redis.ns.svc:7000"),
            ("[::1]:6380", "redis://[::1]:6380"),
            ("redis://r.ns", "redis://r.ns:6379"),
            ("REDIS://r.ns:1/", "redis://r.ns:1"),
            ("rediss://u:p@r.ns:6380/2", "rediss://u:p@r.ns:6380/2"),
            ("redis://:secret@[::1]/0", "redis://:secret@[::1]:6379/0"),
            ("redis://:p%40ss@h:1/15", "redis://:p%40ss@h:1/15"),
        ] {
            assert_eq!(parse_redis_address(text).as_deref(), Ok(want), "{text}");
        }
    }

    #[test]
    fn bad_addresses_are_refused() {
        for text in [
            "localhost",
            "host:0",
            "host:port",
            "http://h:1",
            "redis://",
            "redis://:1",
            "redis://h:99999",
            "redis://h:1/db",
            "redis://h:1/0/1",
            "redis://h:1?protocol=resp3",
            "redis://@h:1",
            "redis://bad host:1",
            "redis://[zz]:1",
        ] {
            assert!(parse_redis_address(text).is_err(), "{text} accepted");
        }
    }

    #[test]
    fn passwords_are_redacted() {
        assert_eq!(
            redact("rediss://u:p@r.ns:6380/2"),
            "rediss://u:***@r.ns:6380/2"
        );
        assert_eq!(redact("redis://:p@h:1"), "redis://:***@h:1");
        assert_eq!(redact("redis://u@h:1"), "redis://u@h:1");
        assert_eq!(redact("redis://h:1/3"), "redis://h:1/3");
    }
}
