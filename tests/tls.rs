//! HTTPS: certificates are verified by default, a rejected certificate is
//! one clear error naming -k, and -k runs the test over real TLS.

mod common;

use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::sync::Arc;

use common::*;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};

/// A TLS server with a self-signed certificate that answers every request
/// with a tiny 200. It serves a bounded number of connections.
fn self_signed_server() -> u16 {
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

#[test]
fn an_untrusted_certificate_is_rejected_with_a_hint() {
    let port = self_signed_server();
    let u = format!("https://127.0.0.1:{port}/");
    let err = try_bench(&["-t1", "-c1", "-d1s", &u])
        .map(|_| ())
        .unwrap_err()
        .to_string();
    assert!(err.contains("certificate"), "{err}");
    assert!(err.contains("-k"), "{err}");
}

#[test]
fn insecure_mode_runs_over_tls() {
    let _g = serial();
    let port = self_signed_server();
    let u = format!("https://127.0.0.1:{port}/");
    let (o, _) = bench(&["-k", "-t1", "-c2", "-R100", "-d1s", &u]);
    assert_balanced(&o);
    let c = o.stats.counters;
    assert_eq!(c.completed, 100, "{c:?}");
    assert_eq!(c.errors.lost_requests() + c.errors.connect, 0, "{c:?}");
}

/// https:// against a plain HTTP server: the handshake fails, and the one
/// line says what is likely wrong.
#[test]
fn https_to_a_plain_server_says_to_use_http() {
    let srv = server(metron::serve::ServeConfig::default());
    let u = format!("https://{}/", srv.addr());
    let err = one_line_error(&metron(&["-t1", "-c1", "-d1s", &u]));
    assert!(
        err.contains("TLS handshake with") && err.contains("wants http://"),
        "{err}"
    );
}
