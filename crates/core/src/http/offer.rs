//! What a run may speak to its hosts ([`Protocols`]), and the words that
//! tell a user which flag to change when a host will not speak it: the
//! pre-flight's advice is the offer's, so it lives beside it.

use super::h2::DEFAULT_MAX_STREAMS;
use super::version::Protocol;

/// What may be spoken to every host of the run: `offer` in order of
/// preference. A plain-text host gets the first (HTTP/2 there is h2c with
/// prior knowledge); a TLS host is offered all of them by ALPN and the
/// server's choice holds for every connection to it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Protocols {
    pub offer: Vec<Protocol>,
    /// HTTP/2 streams in flight per connection at most (`-m`); the server's
    /// SETTINGS_MAX_CONCURRENT_STREAMS lowers it.
    pub max_streams: u32,
    /// The flag that chose `offer`, as typed (`--http2`, `--alpn h2`), for
    /// the errors that tell what to change; `None` for the default.
    pub asked_by: Option<String>,
    /// `--0rtt`: HTTP/3 connections that resume a TLS session send their
    /// requests as early data, before the handshake completes.
    pub zero_rtt: bool,
    /// Every request is a gRPC call (`--grpc`), which only HTTP/2
    /// carries: the errors of a server that does not speak it say so,
    /// rather than advise HTTP/1.1 or an ALPN offer `--grpc` refuses.
    pub calls: bool,
    /// WebSocket's server pushes (`--ws push`): each connection carries
    /// one subscription, not messages awaiting answers.
    pub pushes: bool,
}

impl Default for Protocols {
    fn default() -> Self {
        Protocols {
            offer: vec![Protocol::Http1],
            max_streams: DEFAULT_MAX_STREAMS,
            asked_by: None,
            zero_rtt: false,
            calls: false,
            pushes: false,
        }
    }
}

impl Protocols {
    /// Whether HTTP/2 may be spoken.
    pub fn offers_http2(&self) -> bool {
        self.offer.contains(&Protocol::Http2)
    }

    /// Whether a protocol with several streams per connection (HTTP/2,
    /// HTTP/3) may be spoken: `-m` then applies.
    pub fn offers_streams(&self) -> bool {
        self.offer.iter().any(|p| p.multiplexes())
    }

    /// What the banner says of the protocol offered: nothing for HTTP/1.1
    /// alone, so that the banner stays the one wrk prints. `streams` is
    /// what the pre-flight found each connection may carry, when a
    /// server's limit lowered `-m`.
    pub fn banner(&self, server_capped: Option<u32>) -> Option<String> {
        let streams = match server_capped {
            Some(n) if n < self.max_streams => format!(
                "up to {n} streams each: the server's limit, below -m {}",
                self.max_streams
            ),
            _ => format!("up to {} streams each", self.max_streams),
        };
        match self.offer.as_slice() {
            [Protocol::Http1] => None,
            [Protocol::WebSocket] => Some(websocket_banner(self.pushes).to_string()),
            [one] => Some(format!("{}, {streams}", one.name())),
            several => {
                let names: Vec<&str> = several.iter().map(|p| p.name()).collect();
                Some(format!("{} by ALPN, HTTP/2 {streams}", names.join(" or ")))
            }
        }
    }
}

/// What the banner says of a WebSocket run: `pushes` under `--ws push`.
pub fn websocket_banner(pushes: bool) -> &'static str {
    if pushes {
        "WebSocket, one subscription each, its messages pushed"
    } else {
        "WebSocket, one message in flight each"
    }
}

/// What a server that cannot speak HTTP/2 is told of `--grpc`'s calls,
/// which have no other protocol to go over.
pub const GRPC_NEEDS_H2: &str =
    "gRPC runs over HTTP/2 only: check that the URL names a gRPC server's host and port";

impl Protocols {
    /// What the pre-flight offers a TLS host over TCP to learn of its
    /// certificate, whatever the run offers: every protocol TCP carries.
    pub fn over_tcp() -> Protocols {
        Protocols {
            offer: vec![Protocol::Http2, Protocol::Http1],
            ..Protocols::default()
        }
    }

    /// The advice for a server that took none of the protocols offered by
    /// ALPN.
    pub fn none_chosen(&self) -> String {
        match (self.offer.as_slice(), &self.asked_by) {
            // gRPC offers h2 alone, and nothing else would carry it.
            _ if self.calls => {
                format!("it does not speak HTTP/2 over TLS, and {GRPC_NEEDS_H2}")
            }
            ([Protocol::Http2], flag) => format!(
                "it may not speak HTTP/2 over TLS: drop {}, or offer both with --alpn h2,http/1.1",
                flag.as_deref().unwrap_or("--http2")
            ),
            ([Protocol::Http1], Some(flag)) => format!(
                "it may not speak HTTP/1.1 over TLS: drop {flag}, or offer both with --alpn h2,http/1.1"
            ),
            ([Protocol::Http1], None) => {
                "it may not speak HTTP/1.1 over TLS: offer both with --alpn h2,http/1.1, or check the URL's port".to_string()
            }
            _ => "it speaks neither HTTP/2 nor HTTP/1.1 over TLS: check the URL's port".to_string(),
        }
    }

    /// The protocol a TLS server that chose none by ALPN speaks, when it
    /// was offered: HTTP/1.1, which needs no ALPN (nor does WebSocket,
    /// which upgrades from it).
    pub fn without_alpn(&self) -> Option<Protocol> {
        self.offer
            .iter()
            .copied()
            .find(|&p| p == Protocol::Http1 || p == Protocol::WebSocket)
    }

    /// Why a plain-text host cannot be loaded over a protocol that needs
    /// TLS (HTTP/3).
    pub fn needs_tls(&self) -> String {
        let first = self.offer.first().map_or("HTTP/3", |p| p.name());
        format!("{first} needs TLS")
    }

    /// The ALPN names offered, as typed to `--alpn`.
    pub fn alpn_list(&self) -> String {
        self.offer
            .iter()
            .map(|p| p.alpn())
            .collect::<Vec<_>>()
            .join(",")
    }

    /// The fix for an HTTP/2-only server asked for HTTP/1.1.
    pub fn http2_instead(&self) -> String {
        match &self.asked_by {
            Some(flag) => format!("use --http2 instead of {flag}"),
            None => "add --http2".to_string(),
        }
    }

    /// The fix of a server that takes HTTP/2 but cannot be loaded over it:
    /// `first` (when there is one) or dropping the flag that asked for it,
    /// to load it over HTTP/1.1; gRPC calls have no HTTP/1.1 to fall back
    /// to, so for them only `first`, or the words that say so. With a
    /// `first`, HTTP/1.1 is offered only as what it is: a way out if the
    /// server speaks it too, which an HTTP/2-only one does not.
    pub fn http1_instead(&self, first: &str) -> String {
        let flag = self.asked_by.as_deref().unwrap_or("--http2");
        match (self.calls, first) {
            (true, "") => GRPC_NEEDS_H2.to_string(),
            (true, first) => format!("{first} (gRPC runs over HTTP/2 only)"),
            (false, "") => format!("drop {flag} to load it over HTTP/1.1"),
            (false, first) => {
                format!("{first}, or drop {flag} to load it over HTTP/1.1 if it speaks that too")
            }
        }
    }

    /// The fix of a plain-text host that does not answer HTTP/2 with prior
    /// knowledge.
    pub fn no_prior_knowledge(&self) -> String {
        match self.calls {
            true => format!("{GRPC_NEEDS_H2} (an https:// URL for one that takes TLS)"),
            false => {
                "drop --http2 for HTTP/1.1, or use an https:// URL to negotiate HTTP/2 by ALPN"
                    .to_string()
            }
        }
    }
}
