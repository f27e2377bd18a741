//! Turning a run's statistics into what people and scripts read.
//!
//! The text report reproduces the original's layout byte for byte, which
//! takes more than format strings: its numbers come from 80-bit
//! arithmetic (`crate::units`) and from the C HdrHistogram's rules for means,
//! percentiles and the percentile spectrum (`stats::summary`, [`spectrum`]).
//! Each of those lives in its own file so the text layout ([`text`]) reads
//! as the list of lines it prints.

pub mod csv;
pub mod hlog;
pub mod html;
pub mod json;
pub mod merge;
pub mod series;
pub mod spectrum;
pub mod sweep;
pub mod text;

pub use text::{write_text, TextReport};

use crate::http::ws::{Conversation, Shape};
use crate::http::Spoken;
use crate::stats::EventKind;

/// What a run's requests were, as the reports name them: over WebSocket
/// each is a message answered by one (`--ws echo`), or a connection's
/// subscription (`--ws push`, whose events are WebSocket's); otherwise a
/// request. Told by the protocol spoken and the events' kind, which the
/// run and its document both hold; the JSON keeps its field names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Counted {
    Requests,
    Messages,
    Subscriptions,
}

impl Counted {
    pub fn of(protocol: Option<&Spoken>, events: Option<EventKind>) -> Counted {
        match (protocol.is_some_and(Spoken::messages), events) {
            (_, Some(EventKind::WebSocket)) => Counted::Subscriptions,
            (true, _) => Counted::Messages,
            (false, _) => Counted::Requests,
        }
    }

    /// What a run's configuration counts: a WebSocket echo's messages,
    /// a push's subscriptions, or requests.
    pub fn of_websocket(conversation: Option<&Conversation>) -> Counted {
        match conversation.map(|c| c.shape) {
            Some(Shape::Push) => Counted::Subscriptions,
            Some(Shape::Echo) => Counted::Messages,
            None => Counted::Requests,
        }
    }

    /// One of them: `request`, `message`, `subscription`.
    pub fn one(self) -> &'static str {
        match self {
            Counted::Requests => "request",
            Counted::Messages => "message",
            Counted::Subscriptions => "subscription",
        }
    }

    /// Several: `requests`, `messages`, `subscriptions`.
    pub fn many(self) -> &'static str {
        match self {
            Counted::Requests => "requests",
            Counted::Messages => "messages",
            Counted::Subscriptions => "subscriptions",
        }
    }

    /// At the start of a line: `Requests`, `Messages`, `Subscriptions`.
    pub fn title(self) -> &'static str {
        match self {
            Counted::Requests => "Requests",
            Counted::Messages => "Messages",
            Counted::Subscriptions => "Subscriptions",
        }
    }

    /// The run spoke WebSocket.
    pub fn websocket(self) -> bool {
        self != Counted::Requests
    }
}
