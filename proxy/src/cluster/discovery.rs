//! Endpoint discovery: periodic DNS re-resolution (a headless Service returns one record per
//! pod) and resolving a request's own authority.

use std::io;
use std::net::SocketAddr;
use std::sync::{Arc, Weak};
use std::time::Duration;

use ferry_config::HostPort;

use super::Endpoint;
use super::members::Members;

/// Re-resolves `names` every `every`, keeping endpoint state (EWMA, ejections) for addresses
/// that stay. Ends when the cluster is dropped.
pub(super) async fn refresh_dns(
    cluster: String,
    names: Vec<HostPort>,
    every: Duration,
    endpoints: Weak<Members>,
) {
    let mut ticker = tokio::time::interval(every.max(Duration::from_millis(100)));
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        ticker.tick().await;
        let mut addrs = Vec::new();
        let mut failed = false;
        for hp in &names {
            match tokio::net::lookup_host((hp.host.as_str(), hp.port)).await {
                Ok(found) => addrs.extend(found),
                Err(error) => {
                    failed = true;
                    tracing::warn!(%cluster, host = %hp.host, %error, "DNS resolution failed; keeping the previous endpoints");
                }
            }
        }
        let Some(endpoints) = endpoints.upgrade() else {
            return;
        };
        if failed && addrs.is_empty() {
            continue;
        }
        addrs.sort();
        addrs.dedup();
        let current = endpoints.load();
        if current.iter().map(|e| e.addr).eq(addrs.iter().copied()) {
            continue;
        }
        // The first answer is the cluster's starting set; later additions join (slow start).
        let first = current.is_empty();
        let next: Vec<Arc<Endpoint>> = addrs
            .iter()
            .map(|a| {
                current
                    .iter()
                    .find(|e| e.addr == *a)
                    .cloned()
                    .unwrap_or_else(|| Arc::new(endpoints.endpoint(*a, !first)))
            })
            .collect();
        tracing::info!(%cluster, endpoints = next.len(), "DNS endpoints changed");
        endpoints.store(next);
    }
}

/// Resolves `host[:port]` (the request's authority) to one address.
pub(super) async fn resolve_authority(
    authority: &str,
    default_port: u16,
) -> io::Result<SocketAddr> {
    if authority.is_empty() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "request has no authority",
        ));
    }
    if let Ok(addr) = authority.parse::<SocketAddr>() {
        return Ok(addr);
    }
    let (host, port) = match authority.rsplit_once(':') {
        Some((h, p)) if !h.ends_with(']') || h.starts_with('[') => match p.parse::<u16>() {
            Ok(port) => (h.trim_start_matches('[').trim_end_matches(']'), port),
            Err(_) => (authority, default_port),
        },
        _ => (authority, default_port),
    };
    tokio::net::lookup_host((host, port))
        .await?
        .next()
        .ok_or_else(|| io::Error::new(io::ErrorKind::NotFound, "no addresses"))
}
