//! Throwaway PKI for the mutual-TLS tests: a CA per test (ECDSA P-256) and workload
//! certificates carrying a SPIFFE URI SAN, with the variations the refusal tests need (an RSA
//! key, an expired or not-yet-valid certificate, no URI SAN, extra DNS/IP SANs for peers that
//! verify host names), written as PEM files. Nothing here is ever trusted outside the test that
//! made it.

use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use anyhow::{Context as _, bail};
use rcgen::string::Ia5String;
use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
    KeyUsagePurpose, SanType, SerialNumber,
};
use sha2::{Digest as _, Sha256};
use tokio::process::Command;

/// A certificate authority that lives as long as the test.
pub struct Ca {
    issuer: Issuer<'static, KeyPair>,
    pem: String,
}

/// What a workload certificate should look like.
#[derive(Clone, Debug)]
pub struct Workload {
    uris: Vec<String>,
    dns: Vec<String>,
    ips: Vec<IpAddr>,
    validity: Validity,
    rsa: bool,
    serial: Option<u64>,
}

#[derive(Clone, Copy, Debug)]
enum Validity {
    /// From a day ago for this long.
    Current(Duration),
    Expired,
    NotYetValid,
}

/// An issued certificate and its key, as PEM.
#[derive(Clone, Debug)]
pub struct Issued {
    /// The certificate (PEM).
    pub cert_pem: String,
    /// The private key (PKCS#8 PEM).
    pub key_pem: String,
    /// The certificate (DER).
    pub der: Vec<u8>,
    /// Its `notAfter`, in Unix seconds.
    pub not_after: u64,
}

/// Paths of a certificate and key written to disk.
#[derive(Clone, Debug)]
pub struct Written {
    /// The certificate file.
    pub cert: PathBuf,
    /// The key file.
    pub key: PathBuf,
}

const DAY: Duration = Duration::from_secs(24 * 3600);

// === impl Ca ===

impl Ca {
    /// A fresh self-signed CA whose common name is `name`.
    pub fn new(name: &str) -> anyhow::Result<Ca> {
        let mut params = CertificateParams::new(Vec::<String>::new())?;
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.distinguished_name.push(DnType::CommonName, name);
        params.key_usages = vec![
            KeyUsagePurpose::KeyCertSign,
            KeyUsagePurpose::CrlSign,
            KeyUsagePurpose::DigitalSignature,
        ];
        let now = SystemTime::now();
        params.not_before = (now - 30 * DAY).into();
        params.not_after = (now + 365 * DAY).into();
        let key = KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256)?;
        let cert = params.self_signed(&key)?;
        Ok(Ca {
            pem: cert.pem(),
            issuer: Issuer::new(params, key),
        })
    }

    /// The CA certificate (PEM), the trust bundle for peers of this CA.
    pub fn pem(&self) -> &str {
        &self.pem
    }

    /// Writes the CA certificate to `path`.
    pub async fn write(&self, path: &Path) -> anyhow::Result<()> {
        tokio::fs::write(path, &self.pem)
            .await
            .with_context(|| format!("writing {}", path.display()))
    }

    /// Issues a certificate for `workload`.
    pub async fn issue(&self, workload: &Workload) -> anyhow::Result<Issued> {
        let key = if workload.rsa {
            rsa_key().await?
        } else {
            KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256)?
        };
        let mut params = CertificateParams::new(Vec::<String>::new())?;
        let cn = workload
            .uris
            .first()
            .or(workload.dns.first())
            .map_or("workload", String::as_str);
        params.distinguished_name.push(DnType::CommonName, cn);
        for uri in &workload.uris {
            params
                .subject_alt_names
                .push(SanType::URI(Ia5String::try_from(uri.as_str())?));
        }
        for dns in &workload.dns {
            params
                .subject_alt_names
                .push(SanType::DnsName(Ia5String::try_from(dns.as_str())?));
        }
        for ip in &workload.ips {
            params.subject_alt_names.push(SanType::IpAddress(*ip));
        }
        params.key_usages = vec![
            KeyUsagePurpose::DigitalSignature,
            KeyUsagePurpose::KeyEncipherment,
        ];
        params.extended_key_usages = vec![
            ExtendedKeyUsagePurpose::ServerAuth,
            ExtendedKeyUsagePurpose::ClientAuth,
        ];
        params.use_authority_key_identifier_extension = true;
        if let Some(serial) = workload.serial {
            params.serial_number = Some(SerialNumber::from_slice(&serial.to_be_bytes()));
        }
        let now = SystemTime::now();
        let (from, to) = match workload.validity {
            Validity::Current(lifetime) => (now - DAY, now + lifetime),
            Validity::Expired => (now - 30 * DAY, now - DAY),
            Validity::NotYetValid => (now + DAY, now + 30 * DAY),
        };
        params.not_before = from.into();
        params.not_after = to.into();
        let cert = params.signed_by(&key, &self.issuer)?;
        Ok(Issued {
            cert_pem: cert.pem(),
            key_pem: key.serialize_pem(),
            der: cert.der().to_vec(),
            // X.509 times have whole seconds; rcgen drops the fraction.
            not_after: to.duration_since(SystemTime::UNIX_EPOCH)?.as_secs(),
        })
    }
}

impl std::fmt::Debug for Ca {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Ca").finish_non_exhaustive()
    }
}

/// An RSA-2048 key from `openssl genpkey` (rcgen's ring backend cannot generate RSA keys).
async fn rsa_key() -> anyhow::Result<KeyPair> {
    let out = Command::new(crate::peers::openssl().await?)
        .args([
            "genpkey",
            "-algorithm",
            "RSA",
            "-pkeyopt",
            "rsa_keygen_bits:2048",
        ])
        .kill_on_drop(true)
        .output()
        .await
        .context("running openssl genpkey")?;
    if !out.status.success() {
        bail!(
            "openssl genpkey failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    Ok(KeyPair::from_pem(&String::from_utf8(out.stdout)?)?)
}

// === impl Workload ===

impl Workload {
    /// A workload named by one SPIFFE ID, valid now, ECDSA P-256.
    pub fn spiffe(id: &str) -> Workload {
        Workload {
            uris: vec![id.to_owned()],
            ..Workload::anonymous()
        }
    }

    /// A workload certificate with no URI SAN at all (only a DNS SAN).
    pub fn anonymous() -> Workload {
        Workload {
            uris: Vec::new(),
            dns: Vec::new(),
            ips: Vec::new(),
            validity: Validity::Current(30 * DAY),
            rsa: false,
            serial: None,
        }
    }

    /// Adds a DNS SAN (for peers that check host names: curl, openssl, grpcio).
    pub fn dns(mut self, name: &str) -> Workload {
        self.dns.push(name.to_owned());
        self
    }

    /// Adds `localhost` and `127.0.0.1` SANs, so host-name-checking clients accept the cert on
    /// loopback.
    pub fn loopback(mut self) -> Workload {
        self.dns.push("localhost".to_owned());
        self.ips.push(IpAddr::from([127, 0, 0, 1]));
        self
    }

    /// Adds a second URI SAN.
    pub fn uri(mut self, uri: &str) -> Workload {
        self.uris.push(uri.to_owned());
        self
    }

    /// Valid until `lifetime` from now (default 30 days).
    pub fn valid_for(mut self, lifetime: Duration) -> Workload {
        self.validity = Validity::Current(lifetime);
        self
    }

    /// Valid from 30 days ago until yesterday.
    pub fn expired(mut self) -> Workload {
        self.validity = Validity::Expired;
        self
    }

    /// Valid from tomorrow.
    pub fn not_yet_valid(mut self) -> Workload {
        self.validity = Validity::NotYetValid;
        self
    }

    /// An RSA-2048 key instead of ECDSA P-256.
    pub fn rsa(mut self) -> Workload {
        self.rsa = true;
        self
    }

    /// A fixed serial number (default: random).
    pub fn serial(mut self, serial: u64) -> Workload {
        self.serial = Some(serial);
        self
    }
}

// === impl Issued ===

impl Issued {
    /// Writes `<dir>/<stem>.crt` and `<dir>/<stem>.key`.
    pub async fn write(&self, dir: &Path, stem: &str) -> anyhow::Result<Written> {
        let written = Written {
            cert: dir.join(format!("{stem}.crt")),
            key: dir.join(format!("{stem}.key")),
        };
        tokio::fs::write(&written.cert, &self.cert_pem).await?;
        tokio::fs::write(&written.key, &self.key_pem).await?;
        Ok(written)
    }

    /// SHA-256 of the DER certificate, lowercase hex (the `Hash=` of x-forwarded-client-cert).
    pub fn sha256_hex(&self) -> String {
        Sha256::digest(&self.der)
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect()
    }

    /// The certificate's base64 body without line breaks, to find it in other tools' output.
    pub fn base64_body(&self) -> String {
        pem_body(&self.cert_pem)
    }
}

/// The base64 body of the first PEM block in `text`, without line breaks.
pub fn pem_body(text: &str) -> String {
    text.lines()
        .skip_while(|l| !l.starts_with("-----BEGIN"))
        .skip(1)
        .take_while(|l| !l.starts_with("-----END"))
        .map(str::trim)
        .collect()
}
