//! PEM files named by flags: certificate authorities, a certificate chain
//! and its private key. Shared by the client's `--cacert`, `--cert` and
//! `--key` and by `metron serve`'s `--tls-cert`, `--tls-key` and
//! `--client-ca`, so that each failure reads the same way: one line naming
//! the flag, the file, what is wrong and the fix.

mod x509;

use std::io::Read;
use std::path::Path;
use std::sync::Arc;

use rustls::pki_types::pem::{self, PemObject};
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::sign::CertifiedKey;
use rustls::RootCertStore;

/// Largest file read: a PEM bundle of every public authority is a few
/// hundred kilobytes, so anything bigger is the wrong file (or a device
/// that never ends).
const MAX_BYTES: u64 = 16 << 20;

const FIX_CERTS: &str = "give a PEM file of -----BEGIN CERTIFICATE----- blocks";
const VERSION_1: &str = "it is an X.509 version 1 certificate (what openssl x509 -req makes \
     without extensions), and TLS here needs version 3";
const VERSION_2: &str = "it is an X.509 version 2 certificate, and TLS here needs version 3";
const REISSUE_V3: &str =
    "reissue it as version 3 by giving extensions, e.g. openssl x509 -req ... \
     -extfile <(printf 'basicConstraints=CA:FALSE\\nkeyUsage=digitalSignature,keyEncipherment')";
const FIX_KEY: &str =
    "give a PEM key (BEGIN PRIVATE KEY, BEGIN RSA PRIVATE KEY or BEGIN EC PRIVATE KEY)";

/// A PEM file that cannot be used, as one line.
#[derive(Debug, PartialEq, thiserror::Error)]
#[error("{flag} {path}: {why}; {fix}")]
pub struct PemError {
    flag: &'static str,
    path: String,
    why: String,
    fix: String,
}

impl PemError {
    fn new(
        flag: &'static str,
        path: &Path,
        why: impl Into<String>,
        fix: impl Into<String>,
    ) -> Self {
        PemError {
            flag,
            path: path.display().to_string(),
            why: why.into(),
            fix: fix.into(),
        }
    }
}

/// The certificates of the file (a chain starts with its own certificate).
pub fn certificates(
    flag: &'static str,
    path: &Path,
) -> Result<Vec<CertificateDer<'static>>, PemError> {
    let bytes = read(flag, path)?;
    let certs = CertificateDer::pem_slice_iter(&bytes)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| not_pem(flag, path, e, FIX_CERTS))?;
    if certs.is_empty() {
        return Err(PemError::new(flag, path, "no certificate in it", FIX_CERTS));
    }
    Ok(certs)
}

/// The certificate authorities of the file, each checked to be usable as
/// a trust anchor.
pub fn authorities(flag: &'static str, path: &Path) -> Result<RootCertStore, PemError> {
    authorities_as_given(flag, path).map(|(roots, _)| roots)
}

/// [`authorities`], and the certificates as the file gives them, for a
/// caller that also trusts a server presenting one of them itself (a
/// self-signed certificate given as its own authority).
pub fn authorities_as_given(
    flag: &'static str,
    path: &Path,
) -> Result<(RootCertStore, Vec<CertificateDer<'static>>), PemError> {
    let certs = certificates(flag, path)?;
    let mut roots = RootCertStore::empty();
    for (n, cert) in certs.iter().enumerate() {
        roots.add(cert.clone()).map_err(|_| {
            let why = format!(
                "certificate {} in it cannot be an authority (it is not a well-formed X.509 certificate)",
                n + 1
            );
            PemError::new(flag, path, why, FIX_CERTS)
        })?;
    }
    Ok((roots, certs))
}

/// The first private key of the file: PKCS#8, RSA (PKCS#1) or SEC1.
pub fn private_key(flag: &'static str, path: &Path) -> Result<PrivateKeyDer<'static>, PemError> {
    let bytes = read(flag, path)?;
    match PrivateKeyDer::from_pem_slice(&bytes) {
        Ok(key) => Ok(key),
        Err(pem::Error::NoItemsFound) if contains(&bytes, b"ENCRYPTED PRIVATE KEY") => {
            let fix = format!(
                "decrypt it first, e.g. openssl pkey -in {} -out plain-key.pem",
                path.display()
            );
            Err(PemError::new(flag, path, "the key is encrypted", fix))
        }
        Err(pem::Error::NoItemsFound) => {
            Err(PemError::new(flag, path, "no private key in it", FIX_KEY))
        }
        Err(e) => Err(not_pem(flag, path, e, FIX_KEY)),
    }
}

/// A certificate chain and its private key, checked to belong together.
/// `cert` and `key` are each a flag and its file.
pub fn certified_key(
    cert: (&'static str, &Path),
    key: (&'static str, &Path),
) -> Result<Arc<CertifiedKey>, PemError> {
    let chain = certificates(cert.0, cert.1)?;
    match x509::version(&chain[0]) {
        Some(1) => return Err(PemError::new(cert.0, cert.1, VERSION_1, REISSUE_V3)),
        Some(2) => return Err(PemError::new(cert.0, cert.1, VERSION_2, REISSUE_V3)),
        _ => {}
    }
    let der = private_key(key.0, key.1)?;
    let provider = rustls::crypto::ring::default_provider();
    let signer = provider.key_provider.load_private_key(der).map_err(|e| {
        let why = format!("the key cannot sign ({e})");
        PemError::new(
            key.0,
            key.1,
            why,
            "use an RSA, ECDSA (P-256, P-384) or Ed25519 key",
        )
    })?;
    let certified = CertifiedKey::new(chain, signer);
    match certified.keys_match() {
        Ok(()) | Err(rustls::Error::InconsistentKeys(rustls::InconsistentKeys::Unknown)) => {
            Ok(Arc::new(certified))
        }
        Err(rustls::Error::InconsistentKeys(_)) => {
            let why = format!(
                "it does not belong to the certificate in {} {}",
                cert.0,
                cert.1.display()
            );
            Err(PemError::new(
                key.0,
                key.1,
                why,
                "pass the key that was made with that certificate",
            ))
        }
        // rustls's reason names its own types: the words are ours.
        Err(_) => {
            let why = "its first certificate is not a well-formed X.509 certificate";
            Err(PemError::new(cert.0, cert.1, why, FIX_CERTS))
        }
    }
}

/// Reads the whole file, refusing one too big to be PEM.
fn read(flag: &'static str, path: &Path) -> Result<Vec<u8>, PemError> {
    let cannot = |e: std::io::Error| {
        PemError::new(flag, path, format!("cannot read it: {e}"), "check the path")
    };
    let file = std::fs::File::open(path).map_err(cannot)?;
    let mut bytes = Vec::new();
    file.take(MAX_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(cannot)?;
    if bytes.len() as u64 > MAX_BYTES {
        let why = format!("it is over {} MiB, too big for a PEM file", MAX_BYTES >> 20);
        return Err(PemError::new(flag, path, why, "name the right file"));
    }
    Ok(bytes)
}

fn not_pem(flag: &'static str, path: &Path, e: pem::Error, fix: &str) -> PemError {
    PemError::new(flag, path, format!("not valid PEM ({e})"), fix)
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    /// A directory of its own for each test, removed when dropped.
    struct Dir(PathBuf);

    impl Dir {
        fn new(name: &str) -> Dir {
            let dir =
                std::env::temp_dir().join(format!("metron-pem-{name}-{}", std::process::id()));
            std::fs::create_dir_all(&dir).unwrap();
            Dir(dir)
        }

        fn file(&self, name: &str, contents: &[u8]) -> PathBuf {
            let path = self.0.join(name);
            std::fs::write(&path, contents).unwrap();
            path
        }
    }

    impl Drop for Dir {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    fn one_line(e: PemError) -> String {
        let s = e.to_string();
        assert!(!s.contains('\n'), "{s}");
        s
    }

    fn pair() -> (String, String) {
        let ck = rcgen::generate_simple_self_signed(vec!["localhost".into()]).unwrap();
        (ck.cert.pem(), ck.key_pair.serialize_pem())
    }

    #[test]
    fn a_certificate_and_its_key_load_together() {
        let dir = Dir::new("pair");
        let (cert, key) = pair();
        let c = dir.file("c.pem", cert.as_bytes());
        let k = dir.file("k.pem", key.as_bytes());
        assert_eq!(certificates("--cert", &c).unwrap().len(), 1);
        assert_eq!(authorities("--cacert", &c).unwrap().len(), 1);
        assert!(certified_key(("--cert", &c), ("--key", &k)).is_ok());
    }

    /// Regression: a version 1 certificate got advice about PEM blocks.
    #[test]
    fn a_version_1_certificate_is_named_with_how_to_reissue_it() {
        let testdata = Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata");
        let (c, k) = (testdata.join("v1.pem"), testdata.join("v1-key.pem"));
        let err = one_line(certified_key(("--cert", &c), ("--key", &k)).unwrap_err());
        assert!(
            err.starts_with(&format!(
                "--cert {}: it is an X.509 version 1 certificate",
                c.display()
            )),
            "{err}"
        );
        assert!(err.contains("reissue it as version 3"), "{err}");
        assert!(err.contains("-extfile"), "{err}");
    }

    #[test]
    fn a_key_of_another_certificate_is_named() {
        let dir = Dir::new("mismatch");
        let (cert, _) = pair();
        let (_, other) = pair();
        let c = dir.file("c.pem", cert.as_bytes());
        let k = dir.file("k.pem", other.as_bytes());
        let err = one_line(certified_key(("--cert", &c), ("--key", &k)).unwrap_err());
        assert!(
            err.starts_with(&format!("--key {}: it does not belong", k.display())),
            "{err}"
        );
        assert!(err.contains("--cert"), "{err}");
    }

    #[test]
    fn files_that_are_not_what_the_flag_wants_say_so() {
        let dir = Dir::new("bad");
        let (cert, key) = pair();
        let c = dir.file("c.pem", cert.as_bytes());
        let k = dir.file("k.pem", key.as_bytes());
        let text = dir.file("notes.txt", b"hello\n");
        let broken = dir.file(
            "broken.pem",
            b"-----BEGIN CERTIFICATE-----\n!!!!\n-----END CERTIFICATE-----\n",
        );
        let encrypted = dir.file(
            "enc.pem",
            b"-----BEGIN ENCRYPTED PRIVATE KEY-----\nAAAA\n-----END ENCRYPTED PRIVATE KEY-----\n",
        );
        let missing = dir.0.join("missing.pem");
        let cases = [
            (
                certificates("--cacert", &missing).unwrap_err(),
                "cannot read it",
            ),
            (
                certificates("--cacert", &text).unwrap_err(),
                "no certificate in it",
            ),
            (
                certificates("--cert", &k).unwrap_err(),
                "no certificate in it",
            ),
            (
                certificates("--cacert", &broken).unwrap_err(),
                "not valid PEM",
            ),
            (
                private_key("--key", &c).unwrap_err(),
                "no private key in it",
            ),
            (
                private_key("--key", &encrypted).unwrap_err(),
                "the key is encrypted",
            ),
            (private_key("--key", &dir.0).unwrap_err(), "cannot read it"),
        ];
        for (err, want) in cases {
            let err = one_line(err);
            assert!(err.contains(want), "{err}");
        }
    }
}
