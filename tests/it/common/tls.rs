//! HTTPS targets and certificates: a hand-written TLS server, a private
//! authority that issues server and client certificates into files, and
//! runs that must refuse or complete.

use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use metron::serve::{ServeConfig, Server};
use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, KeyPair,
    KeyUsagePurpose,
};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};

use super::*;

/// A TLS server with a self-signed certificate that answers every request
/// with a tiny 200. It serves a bounded number of connections.
pub fn self_signed_server() -> u16 {
    let ck =
        rcgen::generate_simple_self_signed(vec!["localhost".into(), "127.0.0.1".into()]).unwrap();
    let cert = CertificateDer::from(ck.cert.der().to_vec());
    let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(ck.key_pair.serialize_der()));
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(vec![cert], key)
        .unwrap();
    let config = Arc::new(config);
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for stream in listener.incoming().take(64).flatten() {
            let config = config.clone();
            std::thread::spawn(move || {
                let Ok(conn) = rustls::ServerConnection::new(config) else {
                    return;
                };
                let mut tls = BufReader::new(rustls::StreamOwned::new(conn, stream));
                let mut line = String::new();
                loop {
                    line.clear();
                    match tls.read_line(&mut line) {
                        Ok(0) | Err(_) => return,
                        Ok(_) if line == "\r\n" => {
                            let w = tls.get_mut();
                            if w.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
                                .is_err()
                            {
                                return;
                            }
                            let _ = w.flush();
                        }
                        Ok(_) => {}
                    }
                }
            });
        }
    });
    port
}

/// The error of a run that must not start, in-process.
pub fn refusal(args: &[&str]) -> String {
    match try_bench(args) {
        Ok(_) => panic!("metron {args:?} ran"),
        Err(e) => e.to_string(),
    }
}

/// A directory of PEM files for one test, removed when dropped.
pub struct Pem(pub PathBuf);

impl Pem {
    pub fn new() -> Pem {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let dir = std::env::temp_dir().join(format!("metron-tls-{}-{n}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        Pem(dir)
    }

    /// Writes `text` to `name` and returns its path as an argument.
    pub fn write(&self, name: &str, text: &str) -> String {
        let path = self.0.join(name);
        std::fs::write(&path, text).unwrap();
        arg(&path)
    }
}

impl Drop for Pem {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A path as a command-line argument.
pub fn arg(path: &Path) -> String {
    path.to_str().unwrap().to_string()
}

/// A certificate authority of the test's own.
pub struct Authority {
    pub cert: rcgen::Certificate,
    pub key: KeyPair,
}

impl Authority {
    pub fn new(name: &str) -> Authority {
        let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.distinguished_name.push(DnType::CommonName, name);
        params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
        let key = KeyPair::generate().unwrap();
        let cert = params.self_signed(&key).unwrap();
        Authority { cert, key }
    }

    /// A certificate it issues and its key, both PEM: for a server on
    /// 127.0.0.1/localhost, or for a client.
    pub fn issue(&self, purpose: ExtendedKeyUsagePurpose) -> (String, String) {
        let names = vec!["127.0.0.1".to_string(), "localhost".to_string()];
        let mut params = CertificateParams::new(names).unwrap();
        params
            .distinguished_name
            .push(DnType::CommonName, "metron test");
        params.extended_key_usages = vec![purpose];
        let key = KeyPair::generate().unwrap();
        let cert = params.signed_by(&key, &self.cert, &self.key).unwrap();
        (cert.pem(), key.serialize_pem())
    }
}

/// The files of one test: an authority that issued the server's
/// certificate and a client's, and a stranger authority that issued
/// another client's.
pub struct Pki {
    pub dir: Pem,
    pub ca: String,
    pub other_ca: String,
    pub server_cert: String,
    pub server_key: String,
    pub client_cert: String,
    pub client_key: String,
    pub stranger_cert: String,
    pub stranger_key: String,
}

impl Pki {
    pub fn new() -> Pki {
        let dir = Pem::new();
        let ca = Authority::new("metron test authority");
        let other = Authority::new("metron stranger authority");
        let (server_cert, server_key) = ca.issue(ExtendedKeyUsagePurpose::ServerAuth);
        let (client_cert, client_key) = ca.issue(ExtendedKeyUsagePurpose::ClientAuth);
        let (stranger_cert, stranger_key) = other.issue(ExtendedKeyUsagePurpose::ClientAuth);
        Pki {
            ca: dir.write("ca.pem", &ca.cert.pem()),
            other_ca: dir.write("other-ca.pem", &other.cert.pem()),
            server_cert: dir.write("server.pem", &server_cert),
            server_key: dir.write("server-key.pem", &server_key),
            client_cert: dir.write("client.pem", &client_cert),
            client_key: dir.write("client-key.pem", &client_key),
            stranger_cert: dir.write("stranger.pem", &stranger_cert),
            stranger_key: dir.write("stranger-key.pem", &stranger_key),
            dir,
        }
    }

    /// The built-in target presenting the server certificate; with
    /// `client_ca`, requiring client certificates issued by it.
    pub fn server(&self, client_ca: Option<&str>) -> (Server, String) {
        let srv = server(ServeConfig {
            tls_cert: Some(self.server_cert.clone().into()),
            tls_key: Some(self.server_key.clone().into()),
            client_ca: client_ca.map(PathBuf::from),
            ..ServeConfig::default()
        });
        let u = format!("{}/", srv.url());
        assert!(u.starts_with("https://127.0.0.1:"), "{u}");
        (srv, u)
    }
}

/// A run of 20 requests that must complete, all of them.
pub fn completes(args: &[&str]) {
    let _g = serial();
    let mut argv = vec!["-t1", "-c2", "-R20", "-d1s"];
    argv.extend_from_slice(args);
    let (o, _) = bench(&argv);
    assert_balanced(&o);
    let c = o.stats.counters;
    assert_eq!(c.completed, 20, "{args:?}: {c:?}");
    assert_eq!(
        c.errors.lost_requests() + c.errors.connect,
        0,
        "{args:?}: {c:?}"
    );
}
