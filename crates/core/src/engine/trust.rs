//! Which server certificates a run accepts: those of the operating
//! system's store (or of the compiled-in roots, when the store gives
//! none), those of `--cacert`, or any with `-k`. In every case the
//! handshake's signatures are checked, so a connection is real TLS.
//!
//! `--cacert` also trusts a certificate that is itself in the file, byte
//! for byte, though it is marked as an authority (CA:TRUE): that is what
//! `openssl req -x509` makes by default for a test server, and curl
//! accepts it given so. rustls's WebPKI verifier refuses a CA's
//! certificate presented by a server; [`listed`] wraps it and accepts
//! exactly that case.

use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::WebPkiServerVerifier;
use rustls::crypto::{CryptoProvider, WebPkiSupportedAlgorithms};
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::server::ParsedCertificate;
use rustls::{CertificateError, DigitallySignedStruct, DistinguishedName, RootCertStore};

/// The operating system's store as it was read, for a refused
/// certificate's error.
pub struct SystemStore {
    pub roots: RootCertStore,
    /// What was wrong with the store (a file `SSL_CERT_FILE` names that
    /// does not exist, say), and what was trusted instead, as a clause
    /// for the error; `None` when it read cleanly.
    pub trouble: Option<String>,
}

/// The operating system's trust store (or the files `SSL_CERT_FILE` and
/// `SSL_CERT_DIR` name, when set). A store that yields no usable
/// certificate (a minimal container without a CA bundle, say) is replaced
/// by the compiled-in roots, so public servers still verify. Neither is an
/// error: what went wrong is said only if a certificate is then refused.
pub fn system_store() -> SystemStore {
    let found = rustls_native_certs::load_native_certs();
    let mut roots = RootCertStore::empty();
    let (added, _unusable) = roots.add_parsable_certificates(found.certs);
    let env = StoreEnv::read();
    let wrong = found.errors.first().map(|e| env.explain(e));
    if added > 0 {
        // A missing SSL_CERT_FILE beside a good SSL_CERT_DIR still leaves
        // the run trusting less than the user meant.
        let trouble = wrong.map(|(wrong, of_file)| match (&env.dir, of_file) {
            (Some(dir), true) => {
                format!("{wrong}, so only the authorities in SSL_CERT_DIR ({dir}) were tried")
            }
            _ => format!("{wrong}, so only the store's other authorities were tried"),
        });
        return SystemStore { roots, trouble };
    }
    let wrong = wrong.map_or_else(|| env.empty(), |(wrong, _)| wrong);
    let roots = RootCertStore::from_iter(webpki_roots::TLS_SERVER_ROOTS.iter().cloned());
    SystemStore {
        roots,
        trouble: Some(format!(
            "{wrong}, so only metron's built-in roots were tried"
        )),
    }
}

/// `SSL_CERT_FILE` and `SSL_CERT_DIR`, as this process has them: what a
/// store error is told against.
struct StoreEnv {
    file: Option<PathBuf>,
    dir: Option<String>,
}

impl StoreEnv {
    fn read() -> StoreEnv {
        StoreEnv {
            file: std::env::var_os("SSL_CERT_FILE").map(PathBuf::from),
            dir: std::env::var_os("SSL_CERT_DIR").map(|d| d.to_string_lossy().into_owned()),
        }
    }

    /// A store error as a clause naming the variable that led to it, and
    /// whether it is `SSL_CERT_FILE`'s.
    fn explain(&self, e: &rustls_native_certs::Error) -> (String, bool) {
        use rustls_native_certs::ErrorKind;
        let (inner, path) = match &e.kind {
            ErrorKind::Io { inner, path } => (inner, path.as_path()),
            ErrorKind::Pem(_) => {
                return (
                    "a file of the system's trust store is not valid PEM".into(),
                    false,
                )
            }
            _ => return ("the system's trust store cannot be read".into(), false),
        };
        let what = match inner.kind() {
            io::ErrorKind::NotFound => "which does not exist".to_string(),
            _ => format!("which cannot be read ({})", plain_io(inner)),
        };
        if self.file.as_deref() == Some(path) {
            return (
                format!("SSL_CERT_FILE names {}, {what}", path.display()),
                true,
            );
        }
        let clause = if self.is_dir(path) {
            format!("SSL_CERT_DIR names {}, {what}", path.display())
        } else {
            format!("{} in the system's trust store, {what}", path.display())
        };
        (clause, false)
    }

    fn is_dir(&self, path: &Path) -> bool {
        self.dir
            .as_deref()
            .is_some_and(|dirs| std::env::split_paths(dirs).any(|d| d == path))
    }

    /// Why a store that read without error gave no certificate.
    fn empty(&self) -> String {
        match (&self.file, &self.dir) {
            (Some(file), _) => format!(
                "SSL_CERT_FILE names {}, which holds no certificate",
                file.display()
            ),
            (None, Some(dir)) => format!("SSL_CERT_DIR names {dir}, which holds no certificate"),
            (None, None) => "the system's trust store holds no certificate".to_string(),
        }
    }
}

/// An I/O error's words without the OS error number.
fn plain_io(e: &io::Error) -> String {
    let text = e.to_string();
    match text.find(" (os error") {
        Some(at) => text[..at].to_string(),
        None => text,
    }
}

/// `--cacert`: rustls's WebPKI verifier over the file's authorities, and
/// the file's certificates as given.
pub fn listed(
    roots: Arc<RootCertStore>,
    certs: Arc<[CertificateDer<'static>]>,
    provider: Arc<CryptoProvider>,
) -> Arc<dyn ServerCertVerifier> {
    let inner = WebPkiServerVerifier::builder_with_provider(roots, provider.clone())
        .build()
        .expect("--cacert gives at least one authority");
    Arc::new(Verifier {
        check: Check::Listed { inner, certs },
        provider,
    })
}

/// `-k`: any certificate, but the handshake's signatures still checked,
/// so the connection is a real TLS connection, just not an authenticated
/// one.
pub fn any(provider: Arc<CryptoProvider>) -> Arc<dyn ServerCertVerifier> {
    Arc::new(Verifier {
        check: Check::Any,
        provider,
    })
}

/// A server's certificate checked as `check` says, and the handshake's
/// signatures with the provider's algorithms (as WebPKI's verifier checks
/// them).
#[derive(Debug)]
struct Verifier {
    check: Check,
    provider: Arc<CryptoProvider>,
}

#[derive(Debug)]
enum Check {
    /// Whatever the certificate, the name, the stapled OCSP response and
    /// the time: `-k` asked not to check them.
    Any,
    /// The WebPKI verifier, which also accepts a server certificate that
    /// is one of `certs` byte for byte when the only fault it found is
    /// that the certificate is an authority's.
    Listed {
        inner: Arc<WebPkiServerVerifier>,
        certs: Arc<[CertificateDer<'static>]>,
    },
}

impl Verifier {
    fn algorithms(&self) -> &WebPkiSupportedAlgorithms {
        &self.provider.signature_verification_algorithms
    }
}

impl ServerCertVerifier for Verifier {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        let Check::Listed { inner, certs } = &self.check else {
            return Ok(ServerCertVerified::assertion());
        };
        let verdict =
            inner.verify_server_cert(end_entity, intermediates, server_name, ocsp_response, now);
        match verdict {
            Err(e) if is_ca_used_as_end_entity(&e) && certs.iter().any(|c| c == end_entity) => {
                // webpki checks a certificate's dates before its basic
                // constraints, so this fault means the dates were good
                // (the unit test `a_listed_authority_out_of_date_is_refused`
                // holds it to that); rustls checks the name only after
                // the chain, so it is checked here.
                let cert = ParsedCertificate::try_from(end_entity)?;
                rustls::client::verify_server_name(&cert, server_name)?;
                Ok(ServerCertVerified::assertion())
            }
            other => other,
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(message, cert, dss, self.algorithms())
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(message, cert, dss, self.algorithms())
    }

    fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
        self.algorithms().supported_schemes()
    }

    fn root_hint_subjects(&self) -> Option<&[DistinguishedName]> {
        match &self.check {
            Check::Listed { inner, .. } => inner.root_hint_subjects(),
            Check::Any => None,
        }
    }
}

/// The WebPKI verifier's refusal of a certificate marked as an authority
/// (CA:TRUE) presented as a server's.
pub fn is_ca_used_as_end_entity(e: &rustls::Error) -> bool {
    webpki_error(e).is_some_and(|w| *w == webpki::Error::CaUsedAsEndEntity)
}

/// The WebPKI error rustls passes on without a variant of its own.
pub fn webpki_error(e: &rustls::Error) -> Option<&webpki::Error> {
    match e {
        rustls::Error::InvalidCertificate(fault) => webpki_fault(fault),
        _ => None,
    }
}

/// [`webpki_error`], of a certificate's fault.
pub fn webpki_fault(fault: &CertificateError) -> Option<&webpki::Error> {
    match fault {
        CertificateError::Other(other) => other.0.downcast_ref::<webpki::Error>(),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, KeyPair};

    /// A self-signed certificate marked CA:TRUE for `names`, as
    /// `openssl req -x509` makes one, valid from `from` to `to` (seconds
    /// from now).
    fn authority_for(names: &[&str], from: i64, to: i64) -> CertificateDer<'static> {
        let names: Vec<String> = names.iter().map(|n| n.to_string()).collect();
        let mut params = CertificateParams::new(names).unwrap();
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params
            .distinguished_name
            .push(DnType::CommonName, "localhost");
        let now = time::OffsetDateTime::now_utc();
        params.not_before = now + time::Duration::seconds(from);
        params.not_after = now + time::Duration::seconds(to);
        let key = KeyPair::generate().unwrap();
        params.self_signed(&key).unwrap().der().clone()
    }

    /// `--cacert` holding `certs`.
    fn cacert(certs: &[&CertificateDer<'static>]) -> Arc<dyn ServerCertVerifier> {
        let mut roots = RootCertStore::empty();
        for c in certs {
            roots.add((*c).clone()).unwrap();
        }
        let certs: Vec<_> = certs.iter().map(|c| (*c).clone()).collect();
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        listed(Arc::new(roots), certs.into(), provider)
    }

    fn verify(
        v: &Arc<dyn ServerCertVerifier>,
        cert: &CertificateDer<'_>,
        host: &str,
    ) -> Result<ServerCertVerified, rustls::Error> {
        let name = ServerName::try_from(host.to_string()).unwrap();
        v.verify_server_cert(cert, &[], &name, &[], UnixTime::now())
    }

    const DAY: i64 = 24 * 3600;

    #[test]
    fn a_listed_authority_is_trusted_as_a_server() {
        let cert = authority_for(&["localhost", "127.0.0.1"], -DAY, DAY);
        let v = cacert(&[&cert]);
        assert!(verify(&v, &cert, "localhost").is_ok());
        assert!(verify(&v, &cert, "127.0.0.1").is_ok());
        // Its names still count.
        let wrong = verify(&v, &cert, "app.test").unwrap_err();
        assert!(
            matches!(
                wrong,
                rustls::Error::InvalidCertificate(CertificateError::NotValidForNameContext { .. })
            ),
            "{wrong:?}"
        );
    }

    /// webpki checks dates before basic constraints: a listed authority
    /// out of its dates is refused for its dates, never let through.
    #[test]
    fn a_listed_authority_out_of_date_is_refused() {
        let expired = authority_for(&["localhost"], -2 * DAY, -DAY);
        let early = authority_for(&["localhost"], DAY, 2 * DAY);
        let v = cacert(&[&expired, &early]);
        let e = verify(&v, &expired, "localhost").unwrap_err();
        assert!(
            matches!(
                e,
                rustls::Error::InvalidCertificate(CertificateError::ExpiredContext { .. })
            ),
            "{e:?}"
        );
        let e = verify(&v, &early, "localhost").unwrap_err();
        assert!(
            matches!(
                e,
                rustls::Error::InvalidCertificate(CertificateError::NotValidYetContext { .. })
            ),
            "{e:?}"
        );
    }

    /// Only the very certificate: another authority's, though for the same
    /// name, is still refused as WebPKI refuses it.
    #[test]
    fn an_authority_not_listed_is_refused() {
        let listed_one = authority_for(&["localhost"], -DAY, DAY);
        let other = authority_for(&["localhost"], -DAY, DAY);
        let v = cacert(&[&listed_one]);
        let e = verify(&v, &other, "localhost").unwrap_err();
        assert!(is_ca_used_as_end_entity(&e), "{e:?}");
    }

    /// A certificate issued by a listed authority verifies as before.
    #[test]
    fn a_chain_to_a_listed_authority_still_verifies() {
        let mut ca = CertificateParams::new(Vec::<String>::new()).unwrap();
        ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        let ca_key = KeyPair::generate().unwrap();
        let ca = ca.self_signed(&ca_key).unwrap();
        let leaf = CertificateParams::new(vec!["localhost".to_string()]).unwrap();
        let leaf_key = KeyPair::generate().unwrap();
        let leaf = leaf.signed_by(&leaf_key, &ca, &ca_key).unwrap();
        let v = cacert(&[ca.der()]);
        assert!(verify(&v, leaf.der(), "localhost").is_ok());
    }
}
