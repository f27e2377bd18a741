//! HTTPS: certificates are verified by default, against the system's
//! store or `--cacert`; a rejected certificate is one clear error naming
//! the fix; client certificates (`--cert`, `--key`) reach servers that
//! require them; `-k` runs the test over real TLS.
//!
//! Each test makes its own authorities with rcgen and writes the PEM files
//! to a directory of its own, removed when the test ends.

use std::io::{BufRead, BufReader};
use std::net::TcpListener;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use crate::common::process::metron_with_env;
use crate::common::tls::*;
use crate::common::*;
use crate::common::{nginx, servers};

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
    assert!(
        err.contains("it is issued by an authority the system does not trust"),
        "{err}"
    );
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
        err.contains(&format!(
            "SSL_CERT_FILE names {missing}, which does not exist, so only metron's built-in roots were tried"
        )),
        "{err}"
    );
    assert!(err.contains("--cacert FILE"), "{err}");
    assert_sentences(&err);

    // Regression: beside an SSL_CERT_DIR that gives certificates, a
    // missing SSL_CERT_FILE went unmentioned.
    let store = pki.dir.0.join("store");
    std::fs::create_dir_all(&store).unwrap();
    std::fs::copy(&pki.other_ca, store.join("other.pem")).unwrap();
    let store = arg(&store);
    let env = [
        ("SSL_CERT_FILE", missing.as_str()),
        ("SSL_CERT_DIR", store.as_str()),
    ];
    let err = one_line_error(&metron_with_env(&args, &env));
    assert!(
        err.contains(&format!(
            "SSL_CERT_FILE names {missing}, which does not exist, so only the authorities in \
             SSL_CERT_DIR ({store}) were tried; pass its authority with --cacert FILE"
        )),
        "{err}"
    );
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

/// No Rust type or variant names (`UnknownIssuer`, `Other(OtherError(..))`)
/// and no bare OS error for a timeout: a message is words.
fn assert_sentences(err: &str) {
    for word in err.split(|c: char| !c.is_ascii_alphanumeric()) {
        let inner_capital = word
            .char_indices()
            .skip(1)
            .any(|(i, c)| c.is_ascii_uppercase() && word.as_bytes()[i - 1].is_ascii_lowercase());
        assert!(!inner_capital, "{word:?} in: {err}");
    }
    assert!(!err.contains("os error 11"), "{err}");
}

/// nginx serving one certificate over TLS on one port, and on another the
/// same with client certificates required (issued by `client_ca`, when
/// given). Its access log has the Host and SNI name of each request.
struct TlsNginx {
    process: servers::Process,
    port: u16,
    mtls_port: u16,
}

impl TlsNginx {
    /// `None` where nginx is not installed (see [`servers::tool`]).
    fn start(cert: &Path, key: &Path, client_ca: Option<&Path>) -> Option<TlsNginx> {
        let nginx = servers::tool("nginx", "nginx")?;
        let client_ca = client_ca.unwrap_or(cert).to_path_buf();
        let (process, [port, mtls_port]) = servers::start(
            servers::fresh_dir("nginx-tls"),
            |dir, [port, mtls]| {
                let conf = nginx_tls_config(dir, port, mtls, cert, key, &client_ca);
                std::fs::write(dir.join("nginx.conf"), conf).unwrap();
                nginx::command(&nginx, dir)
            },
            nginx::last_line,
        );
        Some(TlsNginx {
            process,
            port,
            mtls_port,
        })
    }

    /// `HOST SNI PROTOCOL STATUS` of each request so far.
    fn access_log(&self) -> Vec<String> {
        // nginx writes a line once it is done with the request: let the
        // last ones land.
        std::thread::sleep(Duration::from_millis(300));
        let log = std::fs::read_to_string(self.process.dir.join("access.log")).unwrap_or_default();
        log.lines().map(str::to_string).collect()
    }
}

fn nginx_tls_config(
    dir: &Path,
    port: u16,
    mtls: u16,
    cert: &Path,
    key: &Path,
    ca: &Path,
) -> String {
    let (cert, key, ca) = (cert.display(), key.display(), ca.display());
    format!(
        "{}
  ssl_certificate {cert};
  ssl_certificate_key {key};
  server {{
    listen 127.0.0.1:{port} ssl;
    location / {{ return 200 \"hello\\n\"; }}
  }}
  server {{
    listen 127.0.0.1:{mtls} ssl;
    ssl_client_certificate {ca};
    ssl_verify_client on;
    location / {{ return 200 \"hello\\n\"; }}
  }}
}}
",
        nginx::preamble(dir, "$host $ssl_server_name $server_protocol $status")
    )
}

/// [`completes`], and nginx answered every request 200.
fn completes_at(ngx: &TlsNginx, args: &[&str]) {
    completes(args);
    let log = ngx.access_log();
    assert!(!log.is_empty(), "nginx logged nothing");
    assert!(log.iter().all(|l| l.ends_with(" 200")), "{log:?}");
}

/// Regression: a certificate made the usual way (`openssl req -x509`,
/// which marks it CA:TRUE) given with --cacert was refused as
/// `Other(OtherError(CaUsedAsEndEntity))`, though curl accepts it. It is
/// trusted now, by its names only; without --cacert the refusal says what
/// it is and how to trust it.
#[test]
fn a_self_signed_certificate_in_cacert_is_trusted_as_curl_trusts_it() {
    if !servers::openssl_ready() {
        return;
    }
    let pem = Pem::new();
    let (cert, key) =
        servers::self_signed(&pem.0, "server", "localhost", "DNS:localhost,IP:127.0.0.1");
    let Some(ngx) = TlsNginx::start(&cert, &key, None) else {
        return;
    };
    let cacert = arg(&cert);
    let p = ngx.port;
    for host in ["127.0.0.1", "localhost"] {
        completes_at(
            &ngx,
            &["--cacert", &cacert, &format!("https://{host}:{p}/")],
        );
    }

    let u = format!("https://127.0.0.1:{p}/");
    let err = one_line_error(&metron_with_env(&["-t1", "-c1", "-d1s", &u], &[]));
    assert_eq!(
        err,
        "metron: the TLS certificate of 127.0.0.1 was rejected: it is an authority's \
         certificate (CA:TRUE), not a server's; to trust it as it is, pass it with --cacert \
         FILE, or -k to skip verification\n"
    );

    // Its names still count.
    let pin = format!("app.test:{p}:127.0.0.1");
    let u = format!("https://app.test:{p}/");
    let err = one_line_error(&resolved(&cacert, &pin, &u));
    assert!(
        err.contains("was rejected: it is for localhost, 127.0.0.1, not for app.test; use a URL with a name it is for"),
        "{err}"
    );
    assert_sentences(&err);
}

/// A one-second run of `u` trusting `cacert`, with `--resolve pin`.
fn resolved(cacert: &str, pin: &str, u: &str) -> std::process::Output {
    let flags = ["-t1", "-c1", "-d1s", "--cacert", cacert];
    metron(&[&flags[..], &["--resolve", pin, u]].concat())
}

/// `--resolve` sends the connections to 127.0.0.1 while SNI, the
/// certificate's name and Host stay the URL's: a certificate for a real
/// name is tested against a local server, and nginx saw that name.
#[test]
fn resolve_reaches_a_local_server_by_the_name_on_its_certificate() {
    if !servers::openssl_ready() {
        return;
    }
    let pem = Pem::new();
    let (cert, key) = servers::self_signed(&pem.0, "app", "app.test", "DNS:app.test");
    let Some(ngx) = TlsNginx::start(&cert, &key, None) else {
        return;
    };
    let (cacert, p) = (arg(&cert), ngx.port);
    let pin = format!("app.test:{p}:127.0.0.1");
    completes_at(
        &ngx,
        &[
            "--cacert",
            &cacert,
            "--resolve",
            &pin,
            &format!("https://app.test:{p}/"),
        ],
    );
    let log = ngx.access_log();
    assert!(
        log.iter().all(|l| l == "app.test app.test HTTP/1.1 200"),
        "{log:?}"
    );

    // By its address, the name does not match, and the fix is named.
    let u = format!("https://127.0.0.1:{p}/");
    let err = one_line_error(&metron(&["-t1", "-c1", "-d1s", "--cacert", &cacert, &u]));
    assert!(
        err.contains("it is for app.test, not for 127.0.0.1; use a URL with a name it is for (with --resolve NAME:PORT:ADDR"),
        "{err}"
    );
    assert_sentences(&err);

    for (bad, want) in [
        (format!("app.test:{p}"), "it has no ADDR"),
        (
            format!("app.test:{p}:app.local"),
            "ADDR \"app.local\" is not an IP address",
        ),
    ] {
        let err = one_line_error(&resolved(&cacert, &bad, &u));
        assert!(
            err.starts_with(&format!("metron: --resolve {bad:?}: {want}"))
                && err.contains("write it as HOST:PORT:ADDR"),
            "{err}"
        );
    }
}

/// Regression: a version 1 client certificate (`openssl x509 -req`
/// without extensions) got advice about PEM blocks. The one line says what
/// it is and how to reissue it, and the certificate reissued that way is
/// taken by nginx requiring client certificates.
#[test]
fn a_version_1_client_certificate_says_how_to_reissue_it() {
    if !servers::openssl_ready() {
        return;
    }
    let pem = Pem::new();
    let dir = &pem.0;
    let (ca, ca_key) = servers::self_signed(dir, "ca", "metron test authority", "DNS:ca.test");
    let (server, server_key) =
        servers::self_signed(dir, "server", "localhost", "DNS:localhost,IP:127.0.0.1");
    let client = [
        "req",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-subj",
        "/CN=client",
        "-keyout",
        "client-key.pem",
        "-out",
        "client.csr",
    ];
    servers::openssl(dir, &client);
    let (ca, ca_key) = (arg(&ca), arg(&ca_key));
    let sign = |out: &str, extra: &[&str]| {
        let mut args = vec![
            "x509",
            "-req",
            "-in",
            "client.csr",
            "-CA",
            &ca,
            "-CAkey",
            &ca_key,
        ];
        args.extend_from_slice(&["-days", "2", "-out", out]);
        args.extend_from_slice(extra);
        servers::openssl(dir, &args);
        arg(&dir.join(out))
    };
    let v1 = sign("client-v1.pem", &[]);
    let key = arg(&dir.join("client-key.pem"));
    let Some(ngx) = TlsNginx::start(&server, &server_key, Some(Path::new(&ca))) else {
        return;
    };
    let u = format!("https://127.0.0.1:{}/", ngx.mtls_port);
    let cacert = arg(&server);
    let o = metron(&[
        "-t1", "-c1", "-d1s", "--cacert", &cacert, "--cert", &v1, "--key", &key, &u,
    ]);
    let err = one_line_error(&o);
    assert!(
        err.starts_with(&format!(
            "metron: --cert {v1}: it is an X.509 version 1 certificate"
        )),
        "{err}"
    );
    assert!(
        err.contains("reissue it as version 3") && err.contains("-extfile"),
        "{err}"
    );

    // Reissued as the line says.
    let ext = pem.write(
        "v3.ext",
        "basicConstraints=CA:FALSE\nkeyUsage=digitalSignature,keyEncipherment\n",
    );
    let v3 = sign("client-v3.pem", &["-extfile", &ext]);
    completes_at(
        &ngx,
        &["--cacert", &cacert, "--cert", &v3, "--key", &key, &u],
    );
}

/// A TLS handshake the server never answers printed EAGAIN's words; it
/// says it timed out after --timeout.
#[test]
fn a_tls_handshake_that_times_out_says_so() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    // Accepts, and never says a word.
    std::thread::spawn(move || {
        let held: Vec<_> = listener.incoming().take(4).collect();
        std::thread::sleep(Duration::from_secs(5));
        drop(held);
    });
    let u = format!("https://{addr}/");
    let err = one_line_error(&metron(&["-t1", "-c1", "-d1s", "--timeout", "300ms", &u]));
    assert!(
        err.starts_with(&format!(
            "metron: the TLS handshake with {addr} timed out: no answer within 300ms (--timeout)"
        )),
        "{err}"
    );
    assert_sentences(&err);
}
