//! The rows of the truth matrix (tests/it/matrix.rs): every way metron
//! reaches the built-in target, as a test's parameter. A behaviour of the
//! server is written once, as a function of a [`Row`], and [`matrix!`]
//! makes one test of it per row, so that a new protocol is checked against
//! every behaviour by adding its row here.

use std::net::SocketAddr;

use metron::engine::Outcome;
use metron::serve::{BadCert, Http2, Http3, ServeConfig, Server};

use super::grpcio::PROTO;
use super::tls::Pki;
use super::{server, try_bench};

/// How metron reaches the target.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Row {
    /// HTTP/1.1 over TCP.
    Http1,
    /// HTTP/2 with prior knowledge (`--http2` to an http:// URL).
    H2c,
    /// HTTP/2 over TLS, chosen by ALPN (`--http2` to an https:// URL).
    H2,
    /// HTTP/3 over QUIC.
    Http3,
    /// gRPC calls over h2c (`--grpc`), which the target answers with an
    /// empty reply and status OK.
    Grpc,
}

/// The method the gRPC row calls (tests/grpc/greet.proto).
const METHOD: &str = "greet.Greeter/SayHello";

impl Row {
    /// The target speaking this row's protocol, with `cfg`'s other
    /// settings: `streams` caps its streams per connection, where the
    /// protocol has streams.
    pub fn server(self, cfg: ServeConfig) -> Server {
        server(self.config(cfg))
    }

    /// `cfg` made to speak this row's protocol (an untrusted certificate
    /// of the moment over TLS).
    pub fn config(self, cfg: ServeConfig) -> ServeConfig {
        let tls = match cfg.tls_cert {
            Some(_) => None,
            None => cfg.tls.or(Some(BadCert::Untrusted)),
        };
        match self {
            Row::Http1 => cfg,
            Row::H2c | Row::Grpc => ServeConfig {
                http2: Some(cfg.http2.unwrap_or_default()),
                ..cfg
            },
            Row::H2 => ServeConfig {
                http2: Some(cfg.http2.unwrap_or_default()),
                tls,
                ..cfg
            },
            Row::Http3 => ServeConfig {
                http3: Some(cfg.http3.unwrap_or_default()),
                tls,
                ..cfg
            },
        }
    }

    /// The target of [`Pki::server`] (its authority's certificate, and
    /// client certificates required when `client_ca` is given), speaking
    /// this row's protocol; `None` for a row without TLS.
    pub fn tls_server(self, pki: &Pki, client_ca: Option<&str>) -> Option<Server> {
        if !self.tls() {
            return None;
        }
        let cfg = ServeConfig {
            tls_cert: Some(pki.server_cert.clone().into()),
            tls_key: Some(pki.server_key.clone().into()),
            client_ca: client_ca.map(Into::into),
            ..ServeConfig::default()
        };
        Some(server(self.config(cfg)))
    }

    /// The HTTP/2 or HTTP/3 settings that cap a connection at `n`
    /// streams, in `cfg`.
    pub fn with_streams(self, n: u32, cfg: ServeConfig) -> ServeConfig {
        match self {
            Row::Http3 => ServeConfig {
                http3: Some(Http3 {
                    max_streams: n,
                    ..Http3::default()
                }),
                ..cfg
            },
            _ => ServeConfig {
                http2: Some(Http2 {
                    max_streams: Some(n),
                    ..Http2::default()
                }),
                ..cfg
            },
        }
    }

    /// It speaks TLS.
    pub fn tls(self) -> bool {
        matches!(self, Row::H2 | Row::Http3)
    }

    /// Its connections carry several requests at once (`-m` applies).
    pub fn has_streams(self) -> bool {
        self != Row::Http1
    }

    /// The arguments of a run against `srv`: this row's flags, `flags`,
    /// then the URL. `trust`: skip certificate checks (`-k`).
    pub fn args(self, srv: &Server, flags: &[&str], trust: bool) -> Vec<String> {
        self.args_at(srv.addr(), flags, trust)
    }

    /// [`Row::args`] for a target at `addr`, trusted (`-k`).
    pub fn args_to(self, addr: SocketAddr, flags: &[&str]) -> Vec<String> {
        self.args_at(addr, flags, true)
    }

    fn args_at(self, addr: SocketAddr, flags: &[&str], trust: bool) -> Vec<String> {
        let mut args: Vec<String> = match self {
            Row::Http1 => vec![],
            Row::H2c | Row::H2 => vec!["--http2".into()],
            Row::Http3 => vec!["--http3".into()],
            Row::Grpc => vec![
                "--grpc".into(),
                METHOD.into(),
                "--proto".into(),
                PROTO.into(),
            ],
        };
        if trust && self.tls() {
            args.push("-k".into());
        }
        args.extend(flags.iter().map(|f| f.to_string()));
        let scheme = if self.tls() { "https" } else { "http" };
        args.push(format!("{scheme}://{addr}/"));
        args
    }

    /// The flag that leaves one request in flight on a connection at a
    /// time, as HTTP/1.1 has it (`-m1` over streams).
    pub fn one_stream(self) -> &'static [&'static str] {
        if self.has_streams() {
            &["-m1"]
        } else {
            &[]
        }
    }

    /// A run against `srv` with `flags`, in-process: its outcome and text
    /// report, or its one-line error.
    pub fn run(self, srv: &Server, flags: &[&str]) -> Result<(Outcome, String), String> {
        let args = self.args(srv, flags, true);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        try_bench(&args).map_err(|e| e.to_string())
    }

    /// The same, which must start.
    pub fn bench(self, srv: &Server, flags: &[&str]) -> (Outcome, String) {
        self.run(srv, flags)
            .unwrap_or_else(|e| panic!("{self:?} {flags:?} did not run: {e}"))
    }
}

impl Row {
    /// The row a test of [`matrix!`] is named after.
    pub fn named(name: &str) -> Row {
        match name {
            "http1" => Row::Http1,
            "h2c" => Row::H2c,
            "h2" => Row::H2,
            "http3" => Row::Http3,
            "grpc" => Row::Grpc,
            _ => panic!("no row of the matrix is named {name}"),
        }
    }
}

/// `matrix! { fn name(row) { .. } }`: a module `name` of one test per row
/// (`http1`, `h2c`, `h2`, `http3`, `grpc`), each running the body with
/// `row` the row it names; `fn name(row) in [h2, http3] { .. }` for the
/// rows a behaviour applies to (a TLS refusal needs TLS). Doc comments and
/// attributes go on the module.
macro_rules! matrix {
    ($(#[$meta:meta])* fn $name:ident($row:ident) $body:block) => {
        $crate::common::matrix::matrix! {
            $(#[$meta])* fn $name($row) in [http1, h2c, h2, http3, grpc] $body
        }
    };
    ($(#[$meta:meta])* fn $name:ident($row:ident) in [$($r:ident),+] $body:block) => {
        $(#[$meta])*
        mod $name {
            #[allow(unused_imports)]
            use super::*;
            use $crate::common::matrix::Row;

            fn run($row: Row) $body

            $(
                #[test]
                fn $r() {
                    run(Row::named(stringify!($r)))
                }
            )+
        }
    };
}

pub(crate) use matrix;
