//! The TLS pieces against each other over loopback, with throwaway certificates (rcgen).

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use ferry_config::{FieldLocation, Identity, TlsMode};
use ferry_filters::authorization::IdentityMatch;
use rcgen::{
    BasicConstraints, CertificateParams, CertifiedIssuer, IsCa, KeyPair, KeyUsagePurpose, SanType,
};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

use super::connect::Alpn;
use super::*;
use crate::metrics::Metrics;

struct Ca {
    issuer: CertifiedIssuer<'static, KeyPair>,
}

impl Ca {
    fn new() -> Ca {
        // Distinct names: webpki finds an issuer by name, and two CAs of one name would
        // make a stranger's certificate a bad signature instead of an unknown issuer.
        static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
        params
            .distinguished_name
            .push(rcgen::DnType::CommonName, format!("test CA {n}"));
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.key_usages = vec![KeyUsagePurpose::KeyCertSign];
        Ca {
            issuer: CertifiedIssuer::self_signed(params, KeyPair::generate().unwrap()).unwrap(),
        }
    }

    /// Writes `<name>.crt`/`<name>.key` for `uris` (valid now unless `expired`).
    fn issue(&self, dir: &Path, name: &str, uris: &[&str], expired: bool) {
        let key = KeyPair::generate().unwrap();
        let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
        params.subject_alt_names = uris
            .iter()
            .map(|u| SanType::URI((*u).to_owned().try_into().unwrap()))
            .collect();
        if expired {
            params.not_before = rcgen::date_time_ymd(2020, 1, 1);
            params.not_after = rcgen::date_time_ymd(2021, 1, 1);
        }
        let cert = params.signed_by(&key, &self.issuer).unwrap();
        std::fs::write(dir.join(format!("{name}.crt")), cert.pem()).unwrap();
        std::fs::write(dir.join(format!("{name}.key")), key.serialize_pem()).unwrap();
    }

    fn write(&self, dir: &Path, name: &str) {
        std::fs::write(dir.join(name), self.issuer.pem()).unwrap();
    }
}

fn at(path: &str) -> FieldLocation {
    FieldLocation {
        file: "ferry.yaml".into(),
        line: 3,
        col: 7,
        path: path.into(),
    }
}

fn identity(dir: &Path, name: &str, key: &str) -> Identity {
    Identity {
        cert: dir.join(format!("{name}.crt")),
        cert_at: at("identity.cert"),
        key: dir.join(format!("{key}.key")),
        key_at: at("identity.key"),
        trust: vec![dir.join("ca.crt")],
        trust_at: vec![at("identity.trust[0]")],
    }
}

fn store(dir: &Path, name: &str) -> Arc<IdentityStore> {
    let store = Arc::new(IdentityStore::default());
    let m = Material::load(&identity(dir, name, name)).unwrap();
    store.set(Some(Arc::new(m)));
    store
}

const SERVER: &str = "spiffe://cluster.local/ns/models/sa/triton";
const CLIENT: &str = "spiffe://cluster.local/ns/prep/sa/client";

#[test]
fn loads_an_identity_and_reports_each_fault_at_its_field() {
    let dir = tempfile::tempdir().unwrap();
    let ca = Ca::new();
    ca.write(dir.path(), "ca.crt");
    ca.issue(dir.path(), "good", &[SERVER], false);
    ca.issue(dir.path(), "other", &[SERVER], false);
    ca.issue(dir.path(), "plain", &[], false);
    ca.issue(dir.path(), "old", &[SERVER], true);
    ca.issue(dir.path(), "two", &[SERVER, CLIENT], false);

    let m = Material::load(&identity(dir.path(), "good", "good")).unwrap();
    assert_eq!(m.id.as_str(), SERVER);
    assert_eq!(m.files.len(), 3);

    let err = |name: &str, key: &str| {
        let errors = Material::load(&identity(dir.path(), name, key)).unwrap_err();
        errors
            .iter()
            .map(|e| format!("{}:{}: {}", e.path, e.line, e.message))
            .collect::<Vec<_>>()
            .join("\n")
    };
    let mismatch = err("good", "other");
    assert!(mismatch.starts_with("identity.key:3:"), "{mismatch}");
    assert!(
        mismatch.contains("does not match the certificate"),
        "{mismatch}"
    );
    let no_san = err("plain", "plain");
    assert!(
        no_san.contains("identity.cert") && no_san.contains("no URI SAN"),
        "{no_san}"
    );
    let expired = err("old", "old");
    assert!(expired.contains("certificate expired"), "{expired}");
    let two = err("two", "two");
    assert!(two.contains("more than one URI SAN"), "{two}");
    let missing = err("absent", "good");
    assert!(
        missing.contains("cannot read certificate chain"),
        "{missing}"
    );
    std::fs::write(dir.path().join("junk.crt"), "not pem").unwrap();
    let junk = err("junk", "good");
    assert!(junk.contains("no CERTIFICATE block"), "{junk}");
}

/// A strict terminator on loopback; returns its address and the accepted connections' facts.
async fn serve(
    store: Arc<IdentityStore>,
    peers: Option<IdentityMatch>,
    mode: TlsMode,
) -> (
    std::net::SocketAddr,
    tokio::sync::mpsc::UnboundedReceiver<Result<Option<String>, Reason>>,
) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let terminator = Arc::new(
        Terminator::new(
            "inbound".into(),
            mode,
            peers,
            Duration::from_millis(500),
            store,
        )
        .unwrap(),
    );
    let metrics = Arc::new(Metrics::new());
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    tokio::spawn(async move {
        loop {
            let (stream, peer) = listener.accept().await.unwrap();
            let conn = ferry_filters::connection::Connection::plaintext("inbound".into(), peer);
            let outcome = terminator.accept(stream, conn, &metrics).await;
            let sent = match outcome {
                Ok(Accepted::Tls(mut tls, conn)) => {
                    let _ = tls.write_all(b"ok").await;
                    let _ = tls.shutdown().await;
                    Ok(conn.identity.map(|i| i.0.to_string()))
                }
                Ok(Accepted::Plain(_)) => Ok(None),
                Err(reason) => Err(reason),
            };
            let _ = tx.send(sent);
        }
    });
    (addr, rx)
}

async fn mesh_client(
    store: &Arc<IdentityStore>,
    server: Option<&str>,
    addr: std::net::SocketAddr,
) -> std::io::Result<String> {
    let server = server.map(|s| IdentityMatch::exact(s).unwrap());
    let originator = Originator::mesh(store, server, None).unwrap();
    let tcp = TcpStream::connect(addr).await?;
    let mut tls = originator.connect(tcp, Alpn::H2, None).await?;
    let mut got = String::new();
    tls.read_to_string(&mut got).await?;
    Ok(got)
}

#[tokio::test]
async fn mesh_handshake_carries_the_peer_identity() {
    let dir = tempfile::tempdir().unwrap();
    let ca = Ca::new();
    ca.write(dir.path(), "ca.crt");
    ca.issue(dir.path(), "server", &[SERVER], false);
    ca.issue(dir.path(), "client", &[CLIENT], false);
    let peers = IdentityMatch::trust_domain("cluster.local").unwrap();
    let (addr, mut seen) = serve(store(dir.path(), "server"), Some(peers), TlsMode::Strict).await;
    let client = store(dir.path(), "client");
    assert_eq!(
        mesh_client(&client, Some(SERVER), addr).await.unwrap(),
        "ok"
    );
    assert_eq!(seen.recv().await.unwrap().unwrap().as_deref(), Some(CLIENT));

    // The client refuses a server whose SPIFFE ID is not the expected one.
    let wrong = mesh_client(&client, Some("spiffe://cluster.local/ns/x/sa/y"), addr).await;
    assert!(wrong.is_err(), "{wrong:?}");
    assert_eq!(seen.recv().await.unwrap(), Err(Reason::PeerRefused));
}

#[tokio::test]
async fn refusals_are_classified() {
    let dir = tempfile::tempdir().unwrap();
    let ca = Ca::new();
    ca.write(dir.path(), "ca.crt");
    ca.issue(dir.path(), "server", &[SERVER], false);
    ca.issue(
        dir.path(),
        "foreign",
        &["spiffe://cluster.local.evil/ns/a/sa/b"],
        false,
    );
    ca.issue(dir.path(), "old", &[CLIENT], true);
    let other = Ca::new();
    other.write(dir.path(), "other-ca.crt");
    other.issue(dir.path(), "stranger", &[CLIENT], false);
    let peers = IdentityMatch::trust_domain("cluster.local").unwrap();
    let (addr, mut seen) = serve(store(dir.path(), "server"), Some(peers), TlsMode::Strict).await;

    // A foreign trust domain that shares a prefix with ours.
    assert!(
        mesh_client(&store(dir.path(), "foreign"), None, addr)
            .await
            .is_err()
    );
    assert_eq!(seen.recv().await.unwrap(), Err(Reason::BadIdentity));

    // An unknown CA: the stranger trusts our CA's server but holds another CA's certificate.
    let stranger = Arc::new(IdentityStore::default());
    let mut id = identity(dir.path(), "stranger", "stranger");
    id.trust = vec![dir.path().join("ca.crt")];
    stranger.set(Some(Arc::new(Material::load(&id).unwrap())));
    assert!(mesh_client(&stranger, None, addr).await.is_err());
    assert_eq!(seen.recv().await.unwrap(), Err(Reason::UnknownCa));

    // Plaintext, then garbage after a TLS record byte, then a stalled handshake.
    let mut plain = TcpStream::connect(addr).await.unwrap();
    plain.write_all(b"GET / HTTP/1.1\r\n\r\n").await.unwrap();
    assert_eq!(seen.recv().await.unwrap(), Err(Reason::Plaintext));
    let mut junk = TcpStream::connect(addr).await.unwrap();
    junk.write_all(&[0x16, 0xff, 0xff, 0, 1, 2, 3, 4, 5])
        .await
        .unwrap();
    assert_eq!(seen.recv().await.unwrap(), Err(Reason::Protocol));
    let mut stalled = TcpStream::connect(addr).await.unwrap();
    stalled.write_all(&[0x16]).await.unwrap();
    assert_eq!(seen.recv().await.unwrap(), Err(Reason::Timeout));
}

#[tokio::test]
async fn expired_client_certificates_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let ca = Ca::new();
    ca.write(dir.path(), "ca.crt");
    ca.issue(dir.path(), "server", &[SERVER], false);
    ca.issue(dir.path(), "good", &[CLIENT], false);
    ca.issue(dir.path(), "old", &[CLIENT], true);
    let (addr, mut seen) = serve(store(dir.path(), "server"), None, TlsMode::Strict).await;
    // Our own loader refuses an expired identity, so swap the expired pair in by hand: the
    // store holds the good material, the resolver is pointed at the expired key.
    let good = Material::load(&identity(dir.path(), "good", "good")).unwrap();
    let old = std::fs::read(dir.path().join("old.crt")).unwrap();
    let old_key = std::fs::read(dir.path().join("old.key")).unwrap();
    use rustls_pki_types::pem::PemObject;
    let chain = vec![rustls_pki_types::CertificateDer::from_pem_slice(&old).unwrap()];
    let key = rustls_pki_types::PrivateKeyDer::from_pem_slice(&old_key).unwrap();
    let signing = material::provider()
        .key_provider
        .load_private_key(key)
        .unwrap();
    let expired = Material {
        key: Arc::new(rustls::sign::CertifiedKey::new(chain, signing)),
        ..good
    };
    let client = Arc::new(IdentityStore::default());
    client.set(Some(Arc::new(expired)));
    assert!(mesh_client(&client, None, addr).await.is_err());
    assert_eq!(seen.recv().await.unwrap(), Err(Reason::Expired));
}

#[tokio::test]
async fn permissive_serves_plaintext_and_tls_on_one_port() {
    let dir = tempfile::tempdir().unwrap();
    let ca = Ca::new();
    ca.write(dir.path(), "ca.crt");
    ca.issue(dir.path(), "server", &[SERVER], false);
    ca.issue(dir.path(), "client", &[CLIENT], false);
    let (addr, mut seen) = serve(store(dir.path(), "server"), None, TlsMode::Permissive).await;
    let mut plain = TcpStream::connect(addr).await.unwrap();
    plain.write_all(b"GET / HTTP/1.1\r\n\r\n").await.unwrap();
    assert_eq!(seen.recv().await.unwrap(), Ok(None));
    let client = store(dir.path(), "client");
    assert_eq!(
        mesh_client(&client, Some(SERVER), addr).await.unwrap(),
        "ok"
    );
    assert_eq!(seen.recv().await.unwrap().unwrap().as_deref(), Some(CLIENT));
}

#[tokio::test]
async fn rotation_changes_what_new_handshakes_present() {
    let dir = tempfile::tempdir().unwrap();
    let ca = Ca::new();
    ca.write(dir.path(), "ca.crt");
    ca.issue(dir.path(), "server", &[SERVER], false);
    ca.issue(
        dir.path(),
        "next",
        &["spiffe://cluster.local/ns/models/sa/next"],
        false,
    );
    ca.issue(dir.path(), "client", &[CLIENT], false);
    let server = store(dir.path(), "server");
    let (addr, mut seen) = serve(server.clone(), None, TlsMode::Strict).await;
    let client = store(dir.path(), "client");
    assert!(mesh_client(&client, Some(SERVER), addr).await.is_ok());
    assert!(seen.recv().await.unwrap().is_ok());
    let next = Material::load(&identity(dir.path(), "next", "next")).unwrap();
    server.set(Some(Arc::new(next)));
    // The old identity is no longer presented; the new one is.
    assert!(mesh_client(&client, Some(SERVER), addr).await.is_err());
    let _ = seen.recv().await;
    let next_id = "spiffe://cluster.local/ns/models/sa/next";
    assert!(mesh_client(&client, Some(next_id), addr).await.is_ok());
}
