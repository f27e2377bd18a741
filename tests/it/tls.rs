//! HTTPS: certificates are verified by default, against the system's
//! store or `--cacert`; a rejected certificate is one clear error naming
//! the fix; client certificates (`--cert`, `--key`) reach servers that
//! require them; `-k` runs the test over real TLS.
//!
//! Each test makes its own authorities with rcgen and writes the PEM files
//! to a directory of its own, removed when the test ends.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};

use crate::common::process::metron_with_env;
use crate::common::tls::*;
use crate::common::*;

#[test]
fn an_untrusted_certificate_is_rejected_with_a_hint() {
    let port = self_signed_server();
    let u = format!("https://127.0.0.1:{port}/");
    let err = refusal(&["-t1", "-c1", "-d1s", &u]);
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

#[test]
fn a_private_authority_is_trusted_with_cacert() {
    let pki = Pki::new();
    let (_srv, u) = pki.server(None);
    let err = one_line_error(&metron_with_env(&["-t1", "-c1", "-d1s", &u], &[]));
    assert!(err.contains("UnknownIssuer"), "{err}");
    assert!(
        err.contains("pass its authority with --cacert FILE, or -k to skip verification"),
        "{err}"
    );

    completes(&["--cacert", &pki.ca, &u]);
    completes(&["-k", &u]);

    let err = refusal(&["-t1", "-c1", "-d1s", "--cacert", &pki.other_ca, &u]);
    let want = format!(
        "--cacert {} does not hold the authority that issued it",
        pki.other_ca
    );
    assert!(err.contains(&want), "{err}");
}

/// The system's store is read as OpenSSL-based tools read it:
/// SSL_CERT_FILE replaces it; one that gives nothing leaves the
/// compiled-in roots, and a refusal then says so.
#[test]
fn the_system_store_honours_ssl_cert_file() {
    let pki = Pki::new();
    let (_srv, u) = pki.server(None);
    let args = ["-t1", "-c1", "-R20", "-d300ms", &u];
    let o = metron_with_env(&args, &[("SSL_CERT_FILE", &pki.ca)]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(stdout(&o).contains("requests in"), "{}", stdout(&o));

    let missing = arg(&pki.dir.0.join("missing.pem"));
    let o = metron_with_env(&args, &[("SSL_CERT_FILE", &missing)]);
    let err = one_line_error(&o);
    assert!(
        err.contains("only metron's built-in roots were tried"),
        "{err}"
    );
    assert!(err.contains(&missing), "{err}");
    assert!(err.contains("--cacert FILE"), "{err}");
}

#[test]
fn a_server_that_requires_a_client_certificate_gets_one() {
    let pki = Pki::new();
    let (_srv, u) = pki.server(Some(&pki.ca));
    let cacert = ["--cacert", pki.ca.as_str()];

    let o = metron_with_env(&["-t1", "-c1", "-d1s", cacert[0], cacert[1], &u], &[]);
    let err = one_line_error(&o);
    assert!(err.contains("requires a client certificate"), "{err}");
    assert!(err.contains("pass --cert FILE --key FILE"), "{err}");

    let (cert, key) = (pki.client_cert.as_str(), pki.client_key.as_str());
    completes(&["--cacert", &pki.ca, "--cert", cert, "--key", key, &u]);
    completes(&["-k", "--cert", cert, "--key", key, &u]);

    let (cert, key) = (pki.stranger_cert.as_str(), pki.stranger_key.as_str());
    let err = refusal(&[
        "-t1", "-c1", "-d1s", "--cacert", &pki.ca, "--cert", cert, "--key", key, &u,
    ]);
    assert!(
        err.contains(&format!("refused the client certificate of --cert {cert}")),
        "{err}"
    );
    assert!(!err.contains('\n'), "{err}");
}

/// With --requests every https host gets the same trust and client
/// certificate: two servers of one authority, both requiring a client
/// certificate, load from one file.
#[test]
fn every_host_of_a_requests_file_gets_the_same_trust() {
    let pki = Pki::new();
    let (_a, a) = pki.server(Some(&pki.ca));
    let (_b, b) = pki.server(Some(&pki.ca));
    let file = pki
        .dir
        .write("requests.txt", &format!("GET {a}\n\nGET {b}\n"));
    let (cert, key) = (pki.client_cert.as_str(), pki.client_key.as_str());
    let args = ["--requests", &file, "--cacert", &pki.ca];
    completes(&[&args[..], &["--cert", cert, "--key", key, &a]].concat());
    let err = refusal(&[&["-t1", "-c2", "-d1s"], &args[..], &[&a]].concat());
    assert!(err.contains("requires a client certificate"), "{err}");
}

/// Every TLS file and flag mistake is one line naming the fix, before
/// anything connects (nothing listens on port 1).
#[test]
fn bad_tls_files_and_flags_name_the_fix() {
    let pki = Pki::new();
    let missing = arg(&pki.dir.0.join("missing.pem"));
    let text = pki.dir.write("notes.txt", "not a certificate\n");
    let u = "https://127.0.0.1:1/";
    let (cert, key, other_key) = (&pki.client_cert, &pki.client_key, &pki.stranger_key);
    let cases: Vec<(Vec<&str>, String)> = vec![
        (
            vec!["--cacert", &missing, u],
            format!("--cacert {missing}: cannot read it"),
        ),
        (
            vec!["--cacert", &text, u],
            format!("--cacert {text}: no certificate in it"),
        ),
        (
            vec!["--cacert", key, u],
            format!("--cacert {key}: no certificate in it"),
        ),
        (
            vec!["--cert", &missing, "--key", key, u],
            format!("--cert {missing}: cannot read it"),
        ),
        (
            vec!["--cert", cert, "--key", cert, u],
            format!("--key {cert}: no private key in it"),
        ),
        (
            vec!["--cert", cert, "--key", other_key, u],
            format!("--key {other_key}: it does not belong to the certificate in --cert {cert}"),
        ),
        (vec!["--cert", cert, u], "--cert needs --key FILE".into()),
        (vec!["--key", key, u], "--key needs --cert FILE".into()),
        (
            vec!["-k", "--cacert", &pki.ca, u],
            "-k accepts any certificate, so --cacert".into(),
        ),
        (
            vec!["--cacert", &pki.ca, "http://127.0.0.1:1/"],
            "--cacert only applies to https:// hosts".into(),
        ),
        (
            vec!["--cert", cert, "--key", key, "http://127.0.0.1:1/"],
            "--cert only applies to https:// hosts".into(),
        ),
        (
            vec!["-k", "http://127.0.0.1:1/"],
            "-k only applies to https:// hosts".into(),
        ),
    ];
    for (args, want) in cases {
        let mut argv = vec!["-t1", "-c1", "-d1s"];
        argv.extend_from_slice(&args);
        let err = one_line_error(&metron(&argv));
        assert!(err.contains(&want), "{args:?}: got {err}, want {want}");
    }
}

/// `metron serve --tls-cert --tls-key --client-ca` as a user starts it.
#[test]
fn the_serve_command_serves_a_given_certificate() {
    let pki = Pki::new();
    let mut child = Command::new(env!("CARGO_BIN_EXE_metron"))
        .args(["serve", "--listen", "127.0.0.1:0"])
        .args(["--tls-cert", &pki.server_cert, "--tls-key", &pki.server_key])
        .args(["--client-ca", &pki.ca])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    let read = BufReader::new(child.stdout.as_mut().unwrap()).read_line(&mut line);
    let u = format!(
        "{}/",
        line.trim().trim_start_matches("metron serve listening on ")
    );
    let o = (read.is_ok() && u.starts_with("https://127.0.0.1:")).then(|| {
        let (cert, key) = (pki.client_cert.as_str(), pki.client_key.as_str());
        let args = [
            "-t1", "-c1", "-R20", "-d300ms", "--cacert", &pki.ca, "--cert", cert, "--key", key, &u,
        ];
        metron(&args)
    });
    let _ = child.kill();
    let _ = child.wait();
    let o = o.unwrap_or_else(|| panic!("metron serve did not start: {line}"));
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));

    let o = metron(&[
        "serve",
        "--tls-cert",
        &pki.server_cert,
        "--tls-key",
        &pki.client_key,
    ]);
    let err = one_line_error(&o);
    assert!(
        err.contains("--tls-key") && err.contains("does not belong"),
        "{err}"
    );
}
