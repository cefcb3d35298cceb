//! What a fault run stands on: the endpoints (and, for the DNS fault, the hosts file that
//! names them) and, for the identity fault, two certificate sets and the listener's identity
//! files laid out as a Kubernetes Secret volume.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};
use std::time::Duration;

use super::Fault;
use super::endpoint::Endpoint;
use super::ferry::{Identity, Source};
use crate::error::{IoContext, Result};
use crate::mtls::{Certs, Workload};

/// The DNS fault's host name, known only to ferry's private `/etc/hosts`.
const DNS_NAME: &str = "models.faults.test";
/// How often ferry re-resolves it.
const DNS_REFRESH: Duration = Duration::from_millis(250);

/// The identity fault's two certificate sets and the kubelet-style directory ferry reads.
pub(super) struct Rotation {
    dir: PathBuf,
    sets: [Workload; 2],
}

/// Two endpoints on 127.0.0.1; for the DNS fault three on 127.0.0.2–4 sharing one port (a
/// name resolves to addresses, not ports) and a hosts file answering the first two.
pub(super) fn start_endpoints(
    fault: Fault,
    work: &Path,
) -> Result<(Vec<Endpoint>, Source, Option<PathBuf>)> {
    if fault != Fault::Dns {
        let any = SocketAddr::from(([127, 0, 0, 1], 0));
        let endpoints = vec![Endpoint::start(any)?, Endpoint::start(any)?];
        let source = Source::Endpoints(endpoints.iter().map(|e| e.addr).collect());
        return Ok((endpoints, source, None));
    }
    let first = Endpoint::start(SocketAddr::new(loopback(2), 0))?;
    let port = first.addr.port();
    let mut endpoints = vec![first];
    for host in [3, 4] {
        endpoints.push(Endpoint::start(SocketAddr::new(loopback(host), port))?);
    }
    let hosts = work.join("hosts");
    write_hosts(&hosts, &[loopback(2), loopback(3)])?;
    let source = Source::Dns {
        name: format!("{DNS_NAME}:{port}"),
        refresh: DNS_REFRESH,
    };
    Ok((endpoints, source, Some(hosts)))
}

pub(super) fn loopback(last: u8) -> IpAddr {
    IpAddr::V4(Ipv4Addr::new(127, 0, 0, last))
}

/// Rewrites the hosts file in place: ferry's namespace has this very inode bound over
/// `/etc/hosts`, so a rename would not be seen. Both answers are the same length, so the
/// window in which a lookup could read a half-written file is one short write.
pub(super) fn write_hosts(path: &Path, addrs: &[IpAddr]) -> Result<()> {
    let mut text = String::from("127.0.0.1 localhost\n");
    for a in addrs {
        text.push_str(&format!("{a} {DNS_NAME}\n"));
    }
    std::fs::write(path, text).ctx(|| format!("writing {}", path.display()))
}

/// Two certificate sets (two CAs, both trusted by ferry and the client, as during a trust
/// rotation), and the listener's files as a Kubernetes Secret volume lays them out:
/// `tls.crt` → `..data/tls.crt`, `..data` → a versioned directory, swapped atomically.
pub(super) fn identity_files(work: &Path) -> Result<(Identity, Rotation, Certs)> {
    let a = Certs::generate(&work.join("certs-a"))?;
    let b = Certs::generate(&work.join("certs-b"))?;
    let bundle = work.join("trust-bundle.crt");
    let mut pem = std::fs::read_to_string(&a.ca).ctx(|| "reading CA a".into())?;
    pem.push_str(&std::fs::read_to_string(&b.ca).ctx(|| "reading CA b".into())?);
    std::fs::write(&bundle, pem).ctx(|| "writing the trust bundle".into())?;
    let dir = work.join("identity");
    std::fs::create_dir_all(&dir).ctx(|| format!("creating {}", dir.display()))?;
    for name in ["tls.crt", "tls.key"] {
        std::os::unix::fs::symlink(format!("..data/{name}"), dir.join(name))
            .ctx(|| format!("linking {name}"))?;
    }
    let rotation = Rotation {
        dir: dir.clone(),
        sets: [a.inbound.clone(), b.inbound.clone()],
    };
    rotation.publish(0)?;
    let identity = Identity {
        cert: dir.join("tls.crt"),
        key: dir.join("tls.key"),
        trust: vec![bundle.clone()],
    };
    let client = Certs {
        ca: bundle,
        inbound: a.inbound,
        outbound: a.outbound,
    };
    Ok((identity, rotation, client))
}

// === impl Rotation ===

impl Rotation {
    /// Makes set `which` current: a new versioned directory, then `..data` renamed onto it.
    pub(super) fn publish(&self, which: usize) -> Result<()> {
        let set = &self.sets[which % 2];
        let version = format!(
            "..v{}",
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos())
        );
        let versioned = self.dir.join(&version);
        std::fs::create_dir_all(&versioned).ctx(|| "creating a secret version".into())?;
        std::fs::copy(&set.cert, versioned.join("tls.crt")).ctx(|| "copying tls.crt".into())?;
        std::fs::copy(&set.key, versioned.join("tls.key")).ctx(|| "copying tls.key".into())?;
        let tmp = self.dir.join("..data_tmp");
        let _ = std::fs::remove_file(&tmp);
        std::os::unix::fs::symlink(&version, &tmp).ctx(|| "linking ..data_tmp".into())?;
        std::fs::rename(&tmp, self.dir.join("..data")).ctx(|| "swapping ..data".into())
    }
}
