//! The protocol as a test's parameter: a behaviour that must hold over
//! HTTP/1.1 and HTTP/2 alike is written once, as a function of a
//! [`Proto`], and [`per_protocol!`] makes one test of it per protocol.

use std::process::Output;

use metron::engine::Outcome;
use metron::serve::{Http2, ServeConfig, Server};

use super::{bench, metron, script, server, url};

/// The protocol a test speaks to the built-in target.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Proto {
    Http1,
    /// With prior knowledge (h2c), as `--http2` speaks to http:// URLs.
    Http2,
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
        }
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
        };
        [flag, args].concat()
    }

    /// The flag that leaves one request in flight on a connection at a
    /// time, as HTTP/1.1 has it (HTTP/2's `-m1`).
    pub fn one_stream(self) -> &'static [&'static str] {
        match self {
            Proto::Http1 => &[],
            Proto::Http2 => &["-m1"],
        }
    }

    /// The version the target records of a request of this protocol.
    pub fn version(self) -> u8 {
        match self {
            Proto::Http1 => 1,
            Proto::Http2 => 2,
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
        let u = url(srv, "/");
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
        let (s, u) = (script(name), url(srv, "/"));
        self.metron(&[flags, &["-s", &s, &u], script_args].concat())
    }
}

/// `per_protocol! { fn name(proto) { .. } }`: a module `name` of two
/// tests, `http1` and `http2`, each running the body with `proto` the
/// protocol it names. Doc comments and attributes go on the module.
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
        }
    };
}

pub(crate) use per_protocol;
