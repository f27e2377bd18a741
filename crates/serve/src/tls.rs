//! Serving HTTPS. `--tls` presents a certificate a verifying client must
//! reject, so that a client's refusal (and its `-k` way around it) can be
//! tested against a real handshake; `--tls-cert` and `--tls-key` present
//! a given one (issued by a test's own authority, say), and `--client-ca`
//! requires client certificates issued by the authorities in a file.
//!
//! The `--tls` certificate is generated at start (rcgen), for `localhost`
//! and `127.0.0.1`/`::1`, and never written anywhere: no file to ship, and
//! nothing any client could come to trust.
//!
//! With `--http2`, ALPN offers `h2` and `http/1.1`; `session` serves
//! whichever the client picked.

use std::sync::Arc;

use rcgen::{CertificateParams, KeyPair};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use rustls::server::WebPkiClientVerifier;
use rustls::sign::{CertifiedKey, SingleCertAndKey};

use super::config::{BadCert, ServeConfig};
use metron_pem as pem;

/// The ALPN name of HTTP/2 over TLS (offered with `--http2`).
pub(crate) const ALPN_H2: &[u8] = b"h2";
/// The ALPN name of HTTP/1.1.
const ALPN_HTTP1: &[u8] = b"http/1.1";

/// Names the certificate is issued for.
const NAMES: [&str; 3] = ["localhost", "127.0.0.1", "::1"];

/// The TLS configuration `cfg` asks for, if any; an error is one line
/// naming the flag and its file.
pub(crate) fn server_config(
    cfg: &ServeConfig,
) -> Result<Option<Arc<rustls::ServerConfig>>, String> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let certified = match (cfg.tls, &cfg.tls_cert, &cfg.tls_key) {
        (Some(bad), _, _) => {
            let (cert, key) = generate(bad).map_err(|e| format!("--tls: {e}"))?;
            let certified = CertifiedKey::from_der(vec![cert], key, &provider);
            Arc::new(certified.map_err(|e| format!("--tls: {e}"))?)
        }
        (None, Some(cert), Some(key)) => {
            pem::certified_key(("--tls-cert", cert), ("--tls-key", key))
                .map_err(|e| e.to_string())?
        }
        _ => return Ok(None),
    };
    let builder = rustls::ServerConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?;
    let builder = match &cfg.client_ca {
        Some(file) => {
            let roots = pem::authorities("--client-ca", file).map_err(|e| e.to_string())?;
            let verifier = WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider)
                .build()
                .map_err(|e| format!("--client-ca {}: {e}", file.display()))?;
            builder.with_client_cert_verifier(verifier)
        }
        None => builder.with_no_client_auth(),
    };
    let mut config = builder.with_cert_resolver(Arc::new(SingleCertAndKey::from(certified)));
    if cfg.http2.is_some() {
        // HTTP/2 first, so that a client offering both gets it; a client
        // offering neither (or no ALPN at all) is served HTTP/1.1.
        config.alpn_protocols = vec![ALPN_H2.to_vec(), ALPN_HTTP1.to_vec()];
    }
    Ok(Some(Arc::new(config)))
}

/// A self-signed certificate of kind `cert` and its private key.
fn generate(
    cert: BadCert,
) -> Result<(CertificateDer<'static>, PrivateKeyDer<'static>), rcgen::Error> {
    let names: Vec<String> = NAMES.iter().map(|n| n.to_string()).collect();
    let mut params = CertificateParams::new(names)?;
    if cert == BadCert::Expired {
        params.not_before = rcgen::date_time_ymd(2000, 1, 1);
        params.not_after = rcgen::date_time_ymd(2001, 1, 1);
    }
    let key = KeyPair::generate()?;
    let cert = params.self_signed(&key)?;
    let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key.serialize_der()));
    Ok((cert.der().clone(), key))
}

#[cfg(test)]
mod tests {
    use super::*;
    use rustls::pki_types::ServerName;
    use rustls::{CertificateError, ClientConfig, ClientConnection, Error, RootCertStore};

    /// Runs a handshake in memory between a server presenting `cert` and a
    /// client trusting `roots`; returns the client's verdict.
    fn handshake(cert: BadCert, trust_it: bool) -> Result<(), Error> {
        let (der, key) = generate(cert).unwrap();
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let server = rustls::ServerConfig::builder_with_provider(provider.clone())
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_no_client_auth()
            .with_single_cert(vec![der.clone()], key)
            .unwrap();
        let mut roots = RootCertStore::empty();
        if trust_it {
            roots.add(der).unwrap();
        }
        let client = ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_root_certificates(roots)
            .with_no_client_auth();
        let name = ServerName::try_from("127.0.0.1").unwrap();
        let mut client = ClientConnection::new(Arc::new(client), name).unwrap();
        let mut server = rustls::ServerConnection::new(Arc::new(server)).unwrap();
        for _ in 0..10 {
            if !client.is_handshaking() {
                return Ok(());
            }
            let mut wire = Vec::new();
            while client.wants_write() {
                client.write_tls(&mut wire).unwrap();
            }
            let _ = server.read_tls(&mut &wire[..]);
            let _ = server.process_new_packets();
            wire.clear();
            while server.wants_write() {
                server.write_tls(&mut wire).unwrap();
            }
            let _ = client.read_tls(&mut &wire[..]);
            client.process_new_packets()?;
        }
        panic!("the handshake did not finish");
    }

    #[test]
    fn the_untrusted_certificate_is_valid_but_unknown() {
        assert_eq!(
            handshake(BadCert::Untrusted, false),
            Err(Error::InvalidCertificate(CertificateError::UnknownIssuer))
        );
        assert_eq!(handshake(BadCert::Untrusted, true), Ok(()));
    }

    #[test]
    fn the_expired_certificate_is_expired_even_when_trusted() {
        let trusted = handshake(BadCert::Expired, true).unwrap_err();
        assert!(
            matches!(
                trusted,
                Error::InvalidCertificate(
                    CertificateError::Expired | CertificateError::ExpiredContext { .. }
                )
            ),
            "{trusted:?}"
        );
        assert!(handshake(BadCert::Expired, false).is_err());
    }

    #[test]
    fn a_server_config_builds() {
        let cfg = |tls| ServeConfig {
            tls,
            ..ServeConfig::default()
        };
        assert!(server_config(&cfg(Some(BadCert::Expired)))
            .unwrap()
            .is_some());
        assert!(server_config(&cfg(None)).unwrap().is_none());
    }

    #[test]
    fn missing_files_are_named_with_their_flag() {
        let cfg = ServeConfig {
            tls_cert: Some("no-such-cert.pem".into()),
            tls_key: Some("no-such-key.pem".into()),
            ..ServeConfig::default()
        };
        let err = server_config(&cfg).unwrap_err();
        assert!(
            err.starts_with("--tls-cert no-such-cert.pem: cannot read it"),
            "{err}"
        );
        let cfg = ServeConfig {
            tls: Some(BadCert::Untrusted),
            client_ca: Some("no-such-ca.pem".into()),
            ..ServeConfig::default()
        };
        let err = server_config(&cfg).unwrap_err();
        assert!(
            err.starts_with("--client-ca no-such-ca.pem: cannot read it"),
            "{err}"
        );
    }
}
