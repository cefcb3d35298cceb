//! The ferry the demo runs in-process: the built-in default config with every listener on the
//! address the demo chose and the `local` cluster pointed at the demo model server.

use std::net::SocketAddr;

use ferry_config::{Config, Endpoints};
use serde_json::Value;

/// Name of the default config's listener for traffic to the local model server.
pub const INBOUND: &str = "inbound";
/// Name of the default config's cluster for the local model server.
pub const LOCAL_CLUSTER: &str = "local";

/// Where the demo's pieces listen.
#[derive(Debug, Clone, Copy)]
pub struct Addresses {
    /// ferry's inbound listener.
    pub inbound: SocketAddr,
    /// ferry's admin endpoint.
    pub admin: SocketAddr,
    /// The demo model server (already bound).
    pub model_server: SocketAddr,
}

/// [`ferry_config::default_config`] with the demo's addresses: `inbound` on
/// `addrs.inbound`, other listeners on 127.0.0.1:0 (so the demo never collides with a real
/// sidecar), admin on `addrs.admin`, and cluster `local` → the model server.
pub fn config(addrs: Addresses) -> Config {
    let mut config = ferry_config::default_config();
    let any_loopback = SocketAddr::from(([127, 0, 0, 1], 0));
    config.admin.address = addrs.admin;
    for listener in &mut config.listeners {
        listener.address = if listener.name == INBOUND {
            addrs.inbound
        } else {
            any_loopback
        };
    }
    for cluster in &mut config.clusters {
        if cluster.name == LOCAL_CLUSTER {
            cluster.endpoints = Endpoints::Static(vec![addrs.model_server]);
        }
    }
    // Keep `/config_dump` truthful about what the demo changed.
    let mut effective = (*config.effective_json).clone();
    patch_effective(&mut effective, &config);
    config.effective_json = effective.into();
    config
}

fn patch_effective(json: &mut Value, config: &Config) {
    if let Some(admin) = json.pointer_mut("/admin/address") {
        *admin = config.admin.address.to_string().into();
    }
    let listeners = json.get_mut("listeners").and_then(Value::as_array_mut);
    for entry in listeners.into_iter().flatten() {
        let name = entry.get("name").and_then(Value::as_str).map(str::to_owned);
        let ir = config
            .listeners
            .iter()
            .find(|l| Some(&l.name) == name.as_ref());
        if let (Some(ir), Some(address)) = (ir, entry.get_mut("address")) {
            *address = ir.address.to_string().into();
        }
    }
    let clusters = json.get_mut("clusters").and_then(Value::as_array_mut);
    for entry in clusters.into_iter().flatten() {
        if entry.get("name").and_then(Value::as_str) != Some(LOCAL_CLUSTER) {
            continue;
        }
        let local = config.clusters.iter().find(|c| c.name == LOCAL_CLUSTER);
        if let (Some(Endpoints::Static(addrs)), Some(endpoints)) =
            (local.map(|c| &c.endpoints), entry.get_mut("endpoints"))
        {
            *endpoints = addrs.iter().map(|a| Value::from(a.to_string())).collect();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn points_the_default_config_at_the_demo() {
        let model_server = SocketAddr::from(([127, 0, 0, 1], 4242));
        let config = config(Addresses {
            inbound: SocketAddr::from(([127, 0, 0, 1], 0)),
            admin: SocketAddr::from(([127, 0, 0, 1], 0)),
            model_server,
        });
        assert!(
            config
                .listeners
                .iter()
                .all(|l| l.address.ip().is_loopback())
        );
        assert!(config.listeners.iter().any(|l| l.name == INBOUND));
        let local = config
            .clusters
            .iter()
            .find(|c| c.name == LOCAL_CLUSTER)
            .unwrap();
        assert_eq!(local.endpoints, Endpoints::Static(vec![model_server]));
        assert_eq!(config.admin.address.port(), 0);
        let dump = config.effective_json.to_string();
        assert!(dump.contains("127.0.0.1:4242"), "{dump}");
        assert!(!dump.contains("0.0.0.0"), "{dump}");
    }
}
