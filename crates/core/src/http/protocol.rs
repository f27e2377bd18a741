//! The one place that turns an HTTP version into a [`Session`]:
//! everything above sees a session and never asks which protocol it has.

use std::net::SocketAddr;
use std::sync::Arc;

use crate::clock::Nanos;

use super::h1::Http1;
use super::h2::{self, Http2};
use super::h3::{Http3, QuicOptions};
use super::session::Session;
use super::sse::EventReading;
use super::version::Protocol;
use super::ws::{Conversation, WebSocket, WsOptions};

/// The largest WebSocket message read: larger ones close the connection
/// with `1009 message too big`.
pub const MAX_MESSAGE: usize = 16 << 20;

/// What every session of a run is opened with.
#[derive(Clone, Debug)]
pub struct SessionOptions {
    /// The largest response head accepted (`--max-head`).
    pub max_head: usize,
    /// Keep each response's fields and body for a script's `response()`.
    pub capture: bool,
    /// `--sse`: read each response body as an event stream.
    pub reading: EventReading,
    /// Streams in flight per connection at most (`-m`), where the protocol
    /// has several.
    pub max_streams: u32,
    /// The scheme of the host's URL, "http" or "https".
    pub scheme: &'static str,
    /// The host's authority, for requests that name no Host.
    pub authority: String,
    /// For a protocol that does its own TLS (QUIC): the client
    /// configuration, offering its ALPN, and the name to verify.
    pub tls: Option<Arc<rustls::ClientConfig>>,
    pub server_name: String,
    /// WebSocket: what the upgrade says, and how messages go.
    pub websocket: Option<Arc<Conversation>>,
}

impl Protocol {
    /// A new session of this protocol for one connection to `remote`,
    /// started at `now`; the error says why none can start.
    pub fn session<T: Clone + 'static>(
        self,
        opts: &SessionOptions,
        remote: SocketAddr,
        now: Nanos,
    ) -> Result<Box<dyn Session<T>>, String> {
        Ok(match self {
            Protocol::WebSocket => Box::new(WebSocket::new(WsOptions {
                conversation: opts
                    .websocket
                    .clone()
                    .ok_or("a WebSocket connection needs a ws:// or wss:// URL")?,
                authority: opts.authority.clone(),
                max_message: MAX_MESSAGE,
                max_head: opts.max_head,
                // Answers are matched by order: one message at a time.
                max_in_flight: 1,
                capture: opts.capture,
                keep_data: opts.reading == EventReading::Data,
            })),
            Protocol::Http1 => Box::new(Http1::reading(opts.max_head, opts.capture, opts.reading)),
            Protocol::Http3 => {
                let tls = opts
                    .tls
                    .clone()
                    .ok_or("HTTP/3 needs TLS: use an https:// URL")?;
                let quic = QuicOptions {
                    tls,
                    server_name: opts.server_name.clone(),
                    authority: opts.authority.clone(),
                    max_streams: opts.max_streams,
                    max_field_section: opts.max_head as u64,
                    capture: opts.capture,
                    reading: opts.reading,
                };
                Box::new(Http3::new(&quic, remote, now)?)
            }
            Protocol::Http2 => Box::new(Http2::new(h2::Settings {
                max_streams: opts.max_streams,
                max_header_list: u32::try_from(opts.max_head).unwrap_or(u32::MAX),
                capture: opts.capture,
                reading: opts.reading,
                scheme: opts.scheme,
                authority: opts.authority.clone(),
                ..h2::Settings::default()
            })),
        })
    }
}
