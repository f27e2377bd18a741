//! The protocol as a test's parameter: a behaviour that must hold over
//! HTTP/1.1, HTTP/2 and HTTP/3 alike is written once, as a function of a
//! [`Proto`], and [`per_protocol!`] makes one test of it per protocol.

use std::process::Output;

use metron::engine::Outcome;
use metron::serve::{BadCert, Http2, Http3, ServeConfig, Server};

use super::{bench, metron, script, server};

/// The protocol a test speaks to the built-in target.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Proto {
    Http1,
    /// With prior knowledge (h2c), as `--http2` speaks to http:// URLs.
    Http2,
    /// Over QUIC to the target's certificate of the moment (`-k`).
    Http3,
}

impl Proto {
    /// The built-in target speaking this protocol, with `cfg`'s other
    /// settings.
    pub fn server(self, cfg: ServeConfig) -> Server {
        match self {
            Proto::Http1 => server(cfg),
            Proto::Http2 => server(ServeConfig {
                http2: Some(Http2::default()),
                ..cfg
            }),
            Proto::Http3 => server(ServeConfig {
                http3: Some(Http3::default()),
                tls: Some(BadCert::Untrusted),
                ..cfg
            }),
        }
    }

    /// The URL of `path` on `srv` in this protocol's scheme.
    pub fn url(self, srv: &Server, path: &str) -> String {
        let scheme = match self {
            Proto::Http1 | Proto::Http2 => "http",
            Proto::Http3 => "https",
        };
        format!("{scheme}://{}{path}", srv.addr())
    }

    /// A target of this protocol that keeps what it receives.
    pub fn recording(self) -> Server {
        self.server(ServeConfig {
            record: 100_000,
            ..ServeConfig::default()
        })
    }

    /// `args` with this protocol's flag in front.
    pub fn args<'a>(self, args: &[&'a str]) -> Vec<&'a str> {
        let flag: &[&str] = match self {
            Proto::Http1 => &[],
            Proto::Http2 => &["--http2"],
            Proto::Http3 => &["--http3", "-k"],
        };
        [flag, args].concat()
    }

    /// The flag that leaves one request in flight on a connection at a
    /// time, as HTTP/1.1 has it (`-m1` over streams).
    pub fn one_stream(self) -> &'static [&'static str] {
        match self {
            Proto::Http1 => &[],
            Proto::Http2 | Proto::Http3 => &["-m1"],
        }
    }

    /// It carries requests on streams (`-m` applies).
    pub fn has_streams(self) -> bool {
        self != Proto::Http1
    }

    /// The version the target records of a request of this protocol.
    pub fn version(self) -> u8 {
        match self {
            Proto::Http1 => 1,
            Proto::Http2 => 2,
            Proto::Http3 => 3,
        }
    }

    /// [`bench`] in this protocol.
    pub fn bench(self, args: &[&str]) -> (Outcome, String) {
        bench(&self.args(args))
    }

    /// The metron binary in this protocol.
    pub fn metron(self, args: &[&str]) -> Output {
        metron(&self.args(args))
    }

    /// A short rate-mode run of the binary in this protocol (100 requests
    /// over a second on two connections) against `srv`, with its JSON
    /// document on standard output (`--json -`).
    pub fn json_on_stdout(self, srv: &Server) -> Output {
        let u = self.url(srv, "/");
        self.metron(&["-t1", "-c2", "-R100", "-d1s", "--json", "-", &u])
    }

    /// The metron binary in this protocol as wrk's command line puts a
    /// scripted run: `flags`, `-s` and the script of tests/scripts named
    /// `name`, the URL of `srv`, then the script's arguments.
    pub fn metron_script(
        self,
        srv: &Server,
        name: &str,
        flags: &[&str],
        script_args: &[&str],
    ) -> Output {
        let (s, u) = (script(name), self.url(srv, "/"));
        self.metron(&[flags, &["-s", &s, &u], script_args].concat())
    }
}

/// `per_protocol! { fn name(proto) { .. } }`: a module `name` of three
/// tests, `http1`, `http2` and `http3`, each running the body with `proto`
/// the protocol it names. Doc comments and attributes go on the module.
macro_rules! per_protocol {
    ($(#[$meta:meta])* fn $name:ident($proto:ident) $body:block) => {
        $(#[$meta])*
        mod $name {
            #[allow(unused_imports)]
            use super::*;
            use $crate::common::proto::Proto;

            fn run($proto: Proto) $body

            #[test]
            fn http1() {
                run(Proto::Http1)
            }

            #[test]
            fn http2() {
                run(Proto::Http2)
            }

            #[test]
            fn http3() {
                run(Proto::Http3)
            }
        }
    };
}

pub(crate) use per_protocol;
