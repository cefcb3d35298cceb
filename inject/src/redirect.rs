//! How traffic reaches the sidecar, and the `ferry-init` container of the iptables mode.
//!
//! In the default [`RedirectMode::Ports`] mode nothing is redirected: Services target ferry's
//! inbound port and apps call `127.0.0.1:15001`. In [`RedirectMode::Iptables`] mode an init
//! container installs nat-table rules in the pod's network namespace, as istio-init and
//! linkerd-init do, so neither the Service nor the app has to know about ferry. The rules are
//! generated here as an `iptables-restore` file inside a short shell script that the init
//! container receives as its argument: what runs in the pod is readable in the pod spec.

use serde_json::{Value, json};

use crate::settings::{SidecarArgs, ports};

/// Name of the init container that installs the redirect rules.
pub const INIT_CONTAINER_NAME: &str = "ferry-init";
/// nat chain holding the inbound rules (jumped to from `PREROUTING`).
pub const INBOUND_CHAIN: &str = "FERRY_INBOUND";
/// nat chain holding the outbound rules (jumped to from `OUTPUT`).
pub const OUTBOUND_CHAIN: &str = "FERRY_OUTPUT";
/// Outbound ports never redirected: ferry proxies HTTP, and DNS falls back to TCP for large
/// answers, which would otherwise land on the HTTP listener and fail.
pub const DEFAULT_OUTBOUND_EXCLUDES: [u16; 1] = [53];

/// How traffic reaches the sidecar.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum RedirectMode {
    /// Explicit ports: the Service targets 15006, the app calls 127.0.0.1:15001.
    #[default]
    Ports,
    /// An init container redirects the pod's TCP traffic to ferry with iptables.
    Iptables,
}

impl RedirectMode {
    /// Parses the annotation spelling.
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "ports" => Some(Self::Ports),
            "iptables" => Some(Self::Iptables),
            _ => None,
        }
    }

    /// The annotation (and flag) spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Ports => "ports",
            Self::Iptables => "iptables",
        }
    }
}

/// The redirect rules of one pod.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RedirectRules {
    /// UID ferry runs as; its own traffic is never redirected (that would loop).
    pub proxy_uid: i64,
    /// Destination ports of inbound connections left alone: ferry's own, then the pod's.
    pub exclude_inbound: Vec<u16>,
    /// Destination ports of outbound connections left alone: DNS, then the pod's.
    pub exclude_outbound: Vec<u16>,
}

// === impl RedirectRules ===

impl RedirectRules {
    /// Rules for a pod whose annotations exclude `inbound` and `outbound` ports besides the
    /// ones ferry always excludes.
    pub fn new(proxy_uid: i64, inbound: &[u16], outbound: &[u16]) -> Self {
        let own = ports::RESERVED.map(|(p, _)| p);
        Self {
            proxy_uid,
            exclude_inbound: dedup(own.iter().chain(inbound)),
            exclude_outbound: dedup(DEFAULT_OUTBOUND_EXCLUDES.iter().chain(outbound)),
        }
    }

    /// The nat table as `iptables-restore --noflush` input: two chains of ferry's own, jumped
    /// to from `PREROUTING` and `OUTPUT`, so other rules in the pod's namespace are untouched.
    pub fn nat_table(&self) -> String {
        let mut t = String::from("*nat\n");
        t.push_str(&format!(
            ":{INBOUND_CHAIN} - [0:0]\n:{OUTBOUND_CHAIN} - [0:0]\n"
        ));
        t.push_str(&format!(
            "# Inbound: TCP to the pod goes to ferry's inbound listener.\n\
             -A PREROUTING -p tcp -j {INBOUND_CHAIN}\n"
        ));
        for port in &self.exclude_inbound {
            t.push_str(&format!(
                "-A {INBOUND_CHAIN} -p tcp --dport {port} -j RETURN\n"
            ));
        }
        t.push_str(&format!(
            "-A {INBOUND_CHAIN} -p tcp -j REDIRECT --to-ports {}\n",
            ports::INBOUND
        ));
        t.push_str(&format!(
            "# Outbound: TCP from the app goes to ferry's outbound listener; ferry's own\n\
             # connections (by UID) and loopback traffic go out as they are.\n\
             -A OUTPUT -p tcp -j {OUTBOUND_CHAIN}\n\
             -A {OUTBOUND_CHAIN} -m owner --uid-owner {uid} -j RETURN\n\
             -A {OUTBOUND_CHAIN} -o lo -j RETURN\n\
             -A {OUTBOUND_CHAIN} -d 127.0.0.0/8 -j RETURN\n",
            uid = self.proxy_uid
        ));
        for port in &self.exclude_outbound {
            t.push_str(&format!(
                "-A {OUTBOUND_CHAIN} -p tcp --dport {port} -j RETURN\n"
            ));
        }
        t.push_str(&format!(
            "-A {OUTBOUND_CHAIN} -p tcp -j REDIRECT --to-ports {}\nCOMMIT\n",
            ports::OUTBOUND
        ));
        t
    }

    /// The shell script the init container runs. Re-running it in the same network namespace
    /// (an init container restarted in a surviving sandbox) leaves the same rules, not two
    /// copies: the jumps are removed first and `iptables-restore` flushes the chains it
    /// declares. It ends by printing the nat table, so `kubectl logs -c ferry-init` shows what
    /// is installed.
    pub fn script(&self) -> String {
        format!(
            "set -eu\n\
             iptables -t nat -D PREROUTING -p tcp -j {INBOUND_CHAIN} 2>/dev/null || true\n\
             iptables -t nat -D OUTPUT -p tcp -j {OUTBOUND_CHAIN} 2>/dev/null || true\n\
             iptables-restore --noflush <<'EOF'\n{}EOF\n\
             iptables-save -t nat\n",
            self.nat_table()
        )
    }

    /// The `ferry-init` container: root with only `NET_ADMIN` and `NET_RAW`, which is what
    /// changing the namespace's nat table takes.
    pub(crate) fn init_container(&self, args: &SidecarArgs) -> Value {
        json!({
            "name": INIT_CONTAINER_NAME,
            "image": args.init_image,
            "imagePullPolicy": args.image_pull_policy,
            "command": ["/bin/sh", "-c"],
            "args": [self.script()],
            "resources": {
                "requests": {"cpu": "10m", "memory": "16Mi"},
                "limits": {"memory": "64Mi"},
            },
            "securityContext": {
                "runAsUser": 0,
                "runAsGroup": 0,
                "runAsNonRoot": false,
                "allowPrivilegeEscalation": false,
                "privileged": false,
                // iptables takes its lock in /run/xtables.lock.
                "readOnlyRootFilesystem": false,
                "capabilities": {"add": ["NET_ADMIN", "NET_RAW"], "drop": ["ALL"]},
            },
        })
    }
}

fn dedup<'a>(ports: impl Iterator<Item = &'a u16>) -> Vec<u16> {
    let mut out: Vec<u16> = Vec::new();
    for p in ports {
        if !out.contains(p) {
            out.push(*p);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modes_parse_and_print() {
        for mode in [RedirectMode::Ports, RedirectMode::Iptables] {
            assert_eq!(RedirectMode::parse(mode.as_str()), Some(mode));
        }
        assert_eq!(RedirectMode::parse("tproxy"), None);
        assert_eq!(RedirectMode::default(), RedirectMode::Ports);
    }

    #[test]
    fn exclusions_keep_ferry_ports_first_without_duplicates() {
        let r = RedirectRules::new(2102, &[22, 15000, 22], &[5432, 53]);
        assert_eq!(r.exclude_inbound, vec![15000, 15001, 15006, 22]);
        assert_eq!(r.exclude_outbound, vec![53, 5432]);
    }

    #[test]
    fn nat_table_exact_rules() {
        let r = RedirectRules::new(2102, &[22], &[5432, 6379]);
        let expected = "\
*nat
:FERRY_INBOUND - [0:0]
:FERRY_OUTPUT - [0:0]
# Inbound: TCP to the pod goes to ferry's inbound listener.
-A PREROUTING -p tcp -j FERRY_INBOUND
-A FERRY_INBOUND -p tcp --dport 15000 -j RETURN
-A FERRY_INBOUND -p tcp --dport 15001 -j RETURN
-A FERRY_INBOUND -p tcp --dport 15006 -j RETURN
-A FERRY_INBOUND -p tcp --dport 22 -j RETURN
-A FERRY_INBOUND -p tcp -j REDIRECT --to-ports 15006
# Outbound: TCP from the app goes to ferry's outbound listener; ferry's own
# connections (by UID) and loopback traffic go out as they are.
-A OUTPUT -p tcp -j FERRY_OUTPUT
-A FERRY_OUTPUT -m owner --uid-owner 2102 -j RETURN
-A FERRY_OUTPUT -o lo -j RETURN
-A FERRY_OUTPUT -d 127.0.0.0/8 -j RETURN
-A FERRY_OUTPUT -p tcp --dport 53 -j RETURN
-A FERRY_OUTPUT -p tcp --dport 5432 -j RETURN
-A FERRY_OUTPUT -p tcp --dport 6379 -j RETURN
-A FERRY_OUTPUT -p tcp -j REDIRECT --to-ports 15001
COMMIT
";
        assert_eq!(r.nat_table(), expected);
    }

    #[test]
    fn script_wraps_the_table() {
        let r = RedirectRules::new(1337, &[], &[]);
        let script = r.script();
        assert!(script.starts_with(
            "set -eu\n\
             iptables -t nat -D PREROUTING -p tcp -j FERRY_INBOUND 2>/dev/null || true\n\
             iptables -t nat -D OUTPUT -p tcp -j FERRY_OUTPUT 2>/dev/null || true\n\
             iptables-restore --noflush <<'EOF'\n*nat\n"
        ));
        assert!(
            script.ends_with("COMMIT\nEOF\niptables-save -t nat\n"),
            "{script}"
        );
        assert!(script.contains("--uid-owner 1337 -j RETURN\n"));
    }
}
