//! The protocol as a test's parameter: a behaviour that must hold over
//! HTTP/1.1, HTTP/2 and HTTP/3 alike is written once, as a function of a
//! [`Proto`], and [`per_protocol!`] makes one test of it per protocol.

use std::process::Output;

use metron::engine::Outcome;
use metron::serve::{BadCert, Http2, Http3, Pick, ServeConfig, Server, ServerStats};

use super::h2::bench_within;
use super::{bench, metron, script, server};

/// HTTP/2's code for a stream refused before it was processed (RFC 9113
/// section 7); HTTP/3's (H3_REQUEST_REJECTED) is what its target sends
/// unless told otherwise.
const REFUSED_STREAM: u32 = 0x7;

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
                http3: Some(cfg.http3.unwrap_or_default()),
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

    /// [`bench`] in this protocol with `url` last, within the time limit of
    /// [`bench_within`]: a run that hangs fails the test instead.
    pub fn bench_within(self, args: &[&str], url: &str) -> (Outcome, String) {
        bench_within(&[&self.args(args)[..], &[url]].concat())
    }

    /// A target of this protocol, which has streams, that goes away (a
    /// graceful GOAWAY) after `goaway_after` streams on each connection and
    /// refuses the streams `refuse` picks as never processed (HTTP/2's
    /// REFUSED_STREAM, HTTP/3's H3_REQUEST_REJECTED), with `cfg`'s other
    /// settings.
    pub fn stream_faults(
        self,
        goaway_after: Option<u64>,
        refuse: Option<Pick>,
        cfg: ServeConfig,
    ) -> Server {
        match self {
            Proto::Http1 => panic!("HTTP/1.1 has no streams to refuse or go away from"),
            Proto::Http2 => server(ServeConfig {
                http2: Some(Http2 {
                    goaway_after,
                    reset: refuse,
                    reset_code: refuse.map(|_| REFUSED_STREAM),
                    ..Http2::default()
                }),
                ..cfg
            }),
            Proto::Http3 => self.server(ServeConfig {
                http3: Some(Http3 {
                    goaway_after,
                    reset: refuse,
                    ..Http3::default()
                }),
                ..cfg
            }),
        }
    }

    /// The streams the target reset (refused) in this protocol.
    pub fn server_resets(self, stats: &ServerStats) -> u64 {
        match self {
            Proto::Http1 => 0,
            Proto::Http2 => stats.h2_resets(),
            Proto::Http3 => stats.h3_resets(),
        }
    }

    /// The connections the target retired with a GOAWAY in this protocol.
    pub fn server_goaways(self, stats: &ServerStats) -> u64 {
        match self {
            Proto::Http1 => 0,
            Proto::Http2 => stats.h2_goaways(),
            Proto::Http3 => stats.h3_goaways(),
        }
    }

    /// The code the client counts a graceful GOAWAY under: HTTP/2's
    /// NO_ERROR, HTTP/3's H3_NO_ERROR (its GOAWAY carries no code, and is
    /// always the graceful kind).
    pub fn goaway_no_error(self) -> u32 {
        match self {
            Proto::Http3 => 0x100,
            Proto::Http1 | Proto::Http2 => 0x0,
        }
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
///
/// `per_protocol! { except [http1] fn name(proto) { .. } }` leaves out the
/// protocols named in the brackets (by their test's name: `http1`, `http2`,
/// `http3`), for a behaviour a protocol does not have: HTTP/1.1 has no
/// streams to refuse, for one. No test is made for them, rather than one
/// that passes without running, so the list of tests says what is checked.
/// A name that is not a protocol's is a compile error, not a silent no-op.
macro_rules! per_protocol {
    ($(#[$meta:meta])* $(except [$($out:ident),* $(,)?])? fn $name:ident($proto:ident) $body:block) => {
        $(#[$meta])*
        mod $name {
            #[allow(unused_imports)]
            use super::*;
            use $crate::common::proto::Proto;

            $($($crate::common::proto::per_protocol!(@known $out);)*)?

            fn run($proto: Proto) $body

            $crate::common::proto::per_protocol!(@row http1 Http1 [$($($out)*)?]);
            $crate::common::proto::per_protocol!(@row http2 Http2 [$($($out)*)?]);
            $crate::common::proto::per_protocol!(@row http3 Http3 [$($($out)*)?]);
        }
    };
    // A row named in the exclusions makes no test.
    (@row http1 $variant:ident [http1 $($rest:ident)*]) => {};
    (@row http2 $variant:ident [http2 $($rest:ident)*]) => {};
    (@row http3 $variant:ident [http3 $($rest:ident)*]) => {};
    (@row $row:ident $variant:ident [$other:ident $($rest:ident)*]) => {
        $crate::common::proto::per_protocol!(@row $row $variant [$($rest)*]);
    };
    (@row $row:ident $variant:ident []) => {
        #[test]
        fn $row() {
            run(Proto::$variant)
        }
    };
    (@known http1) => {};
    (@known http2) => {};
    (@known http3) => {};
    (@known $other:ident) => {
        compile_error!(concat!(
            "per_protocol!: `",
            stringify!($other),
            "` is not a protocol; except takes http1, http2, http3"
        ));
    };
}

pub(crate) use per_protocol;
