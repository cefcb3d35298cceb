//! The mesh the mutual-TLS tests build: a throwaway CA with its files in a temp dir, config
//! builders for a server sidecar (inbound TLS listener) and a client sidecar (outbound listener
//! with a `mesh` cluster), and the counters the tests read.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::Context as _;
use ferry_integration::certs::Written;
use ferry_integration::certs::pem_body;
use ferry_integration::{
    Admin, Ca, Ferry, Issued, TlsClient, Workload, eventually, peers, to_yaml,
};
use serde_json::{Value, json};

/// Patience for eventual assertions that should pass almost at once.
pub const PATIENCE: Duration = Duration::from_secs(10);

/// The trust domain of the mesh.
pub const TRUST_DOMAIN: &str = "cluster.local";
/// The server sidecar's identity.
pub const SERVER_ID: &str = "spiffe://cluster.local/ns/models/sa/triton";
/// The client sidecar's identity.
pub const CLIENT_ID: &str = "spiffe://cluster.local/ns/prep/sa/client";
/// Another identity in the same trust domain, outside `ns/prep`.
pub const BATCH_ID: &str = "spiffe://cluster.local/ns/batch/sa/scorer";

/// Name of the server sidecar's TLS listener.
pub const INBOUND: &str = "inbound";
/// Name of the client sidecar's plaintext listener.
pub const OUTBOUND: &str = "outbound";

/// A CA and the directory its files are written to.
pub struct Pki {
    /// The CA.
    pub ca: Ca,
    dir: tempfile::TempDir,
}

/// A certificate issued for a test, in memory and on disk.
pub struct Cert {
    /// PEMs and DER.
    pub issued: Issued,
    /// The files.
    pub files: Written,
}

// === impl Pki ===

impl Pki {
    /// A fresh CA with `ca.crt` written.
    pub async fn new() -> anyhow::Result<Pki> {
        Self::named("ferry test CA").await
    }

    /// A fresh CA with the common name `name` (webpki finds an issuer by name, so a stranger's
    /// CA needs its own name to be unknown rather than an impostor).
    pub async fn named(name: &str) -> anyhow::Result<Pki> {
        let pki = Pki {
            ca: Ca::new(name)?,
            dir: tempfile::Builder::new().prefix("ferry-pki-").tempdir()?,
        };
        pki.ca.write(&pki.ca_path()).await?;
        Ok(pki)
    }

    /// The directory holding the files.
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// The CA bundle file.
    pub fn ca_path(&self) -> PathBuf {
        self.dir.path().join("ca.crt")
    }

    /// Issues `workload` and writes `<stem>.crt` / `<stem>.key`.
    pub async fn issue(&self, stem: &str, workload: &Workload) -> anyhow::Result<Cert> {
        let issued = self.ca.issue(workload).await?;
        let files = issued.write(self.dir.path(), stem).await?;
        Ok(Cert { issued, files })
    }

    /// A server certificate for [`SERVER_ID`] that host-name-checking clients accept on
    /// loopback.
    pub async fn server(&self) -> anyhow::Result<Cert> {
        self.issue("server", &Workload::spiffe(SERVER_ID).loopback())
            .await
    }

    /// A client certificate for `id`, written as `<stem>.crt` / `<stem>.key`.
    pub async fn client(&self, stem: &str, id: &str) -> anyhow::Result<Cert> {
        self.issue(stem, &Workload::spiffe(id)).await
    }

    /// A rustls client trusting this CA and presenting `cert`.
    pub fn tls_client(&self, cert: &Cert) -> anyhow::Result<TlsClient> {
        TlsClient::new(self.ca.pem(), &cert.issued.cert_pem, &cert.issued.key_pem)
    }

    /// The `identity` section for `cert` (absolute paths).
    pub fn identity(&self, cert: &Cert) -> Value {
        json!({
            "cert": path_str(&cert.files.cert),
            "key": path_str(&cert.files.key),
            "trust": [path_str(&self.ca_path())],
        })
    }
}

// === impl Cert ===

impl Cert {
    /// The curl arguments presenting this certificate and trusting `ca`.
    pub fn curl_args(&self, ca: &Path) -> Vec<String> {
        vec![
            "--cert".into(),
            path_str(&self.files.cert),
            "--key".into(),
            path_str(&self.files.key),
            "--cacert".into(),
            path_str(ca),
        ]
    }
}

/// A path as a string for a config or a command line.
pub fn path_str(p: &Path) -> String {
    p.to_string_lossy().into_owned()
}

/// A whole config with `identity` (or none), listeners and clusters; admin on `127.0.0.1:0`.
pub fn config(identity: Option<Value>, listeners: Value, clusters: Value) -> Value {
    let mut cfg = json!({
        "apiVersion": "ferry/v1",
        "admin": { "address": "127.0.0.1:0" },
        "listeners": listeners,
        "clusters": clusters,
    });
    if let (Some(identity), Some(map)) = (identity, cfg.as_object_mut()) {
        map.insert("identity".into(), identity);
    }
    cfg
}

/// A listener named `name` on `127.0.0.1:0` with `tls` (when given) and `routes`.
pub fn listener(name: &str, tls: Option<Value>, routes: Value) -> Value {
    let mut l = json!({ "name": name, "address": "127.0.0.1:0", "routes": routes });
    if let (Some(tls), Some(map)) = (tls, l.as_object_mut()) {
        map.insert("tls".into(), tls);
    }
    l
}

/// `tls` for a strict listener admitting the mesh's trust domain, with a short handshake
/// timeout so stalled clients are dropped within the tests' patience.
pub fn strict() -> Value {
    json!({ "mode": "strict", "peers": { "trust_domain": TRUST_DOMAIN }, "handshake_timeout": "1s" })
}

/// A static cluster.
pub fn cluster(name: &str, addr: SocketAddr) -> Value {
    json!({ "name": name, "endpoints": [addr.to_string()] })
}

/// A cluster reaching a server sidecar over mutual TLS, pinned to [`SERVER_ID`].
pub fn mesh_cluster(name: &str, addr: SocketAddr) -> Value {
    json!({
        "name": name,
        "endpoints": [addr.to_string()],
        "tls": { "mode": "mesh", "server": { "exact": SERVER_ID } },
    })
}

/// One catch-all route named `all` to `cluster`.
pub fn catch_all(cluster: &str) -> Value {
    json!([{ "name": "all", "to": cluster }])
}

/// Starts ferry with `config` rendered as YAML.
pub async fn start(config: &Value) -> anyhow::Result<Ferry> {
    Ferry::start(&to_yaml(config)).await
}

/// A server sidecar (strict inbound, one catch-all route to `app`) and a client sidecar
/// (plaintext outbound, one catch-all route over mutual TLS to the server), each with its own
/// certificate from one CA. `inbound` may override the inbound listener's fields.
pub struct Hop {
    /// The CA and files.
    pub pki: Pki,
    /// The client sidecar's certificate.
    pub client_cert: Cert,
    /// The server sidecar.
    pub server: Ferry,
    /// The client sidecar.
    pub client: Ferry,
}

// === impl Hop ===

impl Hop {
    /// Starts both sidecars in front of `app`, with `extra` merged into the inbound listener
    /// (for `authorization`, or `routes` replacing the catch-all).
    pub async fn start(app: SocketAddr, extra: Value) -> anyhow::Result<Hop> {
        let pki = Pki::new().await?;
        let server_cert = pki.server().await?;
        let client_cert = pki.client("client", CLIENT_ID).await?;
        let mut inbound = listener(INBOUND, Some(strict()), catch_all("app"));
        if let (Some(map), Some(extra)) = (inbound.as_object_mut(), extra.as_object()) {
            for (k, v) in extra {
                map.insert(k.clone(), v.clone());
            }
        }
        let server = start(&config(
            Some(pki.identity(&server_cert)),
            json!([inbound]),
            json!([cluster("app", app)]),
        ))
        .await?;
        let client = start(&config(
            Some(pki.identity(&client_cert)),
            json!([listener(OUTBOUND, None, catch_all("mesh"))]),
            json!([mesh_cluster("mesh", server.listener(INBOUND)?)]),
        ))
        .await?;
        Ok(Hop {
            pki,
            client_cert,
            server,
            client,
        })
    }

    /// The client sidecar's plaintext listener, where apps send their calls.
    pub fn outbound(&self) -> anyhow::Result<SocketAddr> {
        self.client.listener(OUTBOUND)
    }

    /// What the app should see in `x-forwarded-client-cert` for calls through the hop.
    pub fn expected_xfcc(&self) -> String {
        xfcc(SERVER_ID, &self.client_cert.issued, CLIENT_ID)
    }
}

/// The `x-forwarded-client-cert` ferry writes for a caller presenting `peer` as `peer_id`.
pub fn xfcc(by: &str, peer: &Issued, peer_id: &str) -> String {
    format!("By={by};Hash={};URI={peer_id}", peer.sha256_hex())
}

/// A counter's value on `ferry` (0 when not exposed yet).
pub async fn counter(ferry: &Ferry, name: &str, labels: &[(&str, &str)]) -> anyhow::Result<f64> {
    Ok(Admin::new(ferry.admin()).metrics().await?.sum(name, labels))
}

/// Waits until the counter reaches at least `want`.
pub async fn counter_reaches(
    ferry: &Ferry,
    name: &str,
    labels: &[(&str, &str)],
    want: f64,
) -> anyhow::Result<f64> {
    eventually(PATIENCE, || async {
        let m = Admin::new(ferry.admin()).metrics().await?;
        let v = m.sum(name, labels);
        anyhow::ensure!(
            v >= want,
            "{name}{labels:?} is {v}, want >= {want}; metrics:\n{}",
            tls_lines(&m.text)
        );
        Ok(v)
    })
    .await
    .with_context(|| format!("ferry logs:\n{}", ferry.logs()))
}

/// The TLS and authorization lines of a metrics page, for failure messages.
fn tls_lines(text: &str) -> String {
    text.lines()
        .filter(|l| l.contains("tls") || l.contains("authz"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The certificate a new TLS connection to `ferry`'s inbound listener is shown, as the
/// base64 body of the PEM `openssl s_client -showcerts` prints.
pub async fn served_cert(ferry: &Ferry, pki: &Pki, client: &Cert) -> anyhow::Result<String> {
    let out = peers::run_openssl(&[
        "s_client",
        "-connect",
        &ferry.listener(INBOUND)?.to_string(),
        "-cert",
        &path_str(&client.files.cert),
        "-key",
        &path_str(&client.files.key),
        "-CAfile",
        &path_str(&pki.ca_path()),
        "-showcerts",
    ])
    .await?;
    let text = String::from_utf8_lossy(&out.stdout);
    let body = pem_body(&text);
    anyhow::ensure!(
        !body.is_empty(),
        "openssl s_client showed no certificate:\n{text}"
    );
    Ok(body)
}

pub async fn assert_serves(
    ferry: &Ferry,
    pki: &Pki,
    client: &Cert,
    want: &Issued,
    what: &str,
) -> anyhow::Result<()> {
    eventually(PATIENCE, || async {
        let got = served_cert(ferry, pki, client).await?;
        anyhow::ensure!(
            got == want.base64_body(),
            "ferry still serves another certificate"
        );
        Ok(())
    })
    .await
    .with_context(|| format!("{what}; ferry logs:\n{}", ferry.logs()))
}
