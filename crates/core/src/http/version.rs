//! The HTTP versions metron speaks, by name ([`Protocol`]), and what a
//! run's hosts spoke ([`Spoken`]): named as text only where a report
//! prints it, and in the JSON document.

use std::fmt;
use std::str::FromStr;

/// An HTTP version metron speaks, named in the JSON document as the
/// reports name it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub enum Protocol {
    #[serde(rename = "HTTP/1.1")]
    Http1,
    #[serde(rename = "HTTP/2")]
    Http2,
    #[serde(rename = "HTTP/3")]
    Http3,
    /// RFC 6455 over HTTP/1.1's upgrade: messages, not requests.
    #[serde(rename = "WebSocket")]
    WebSocket,
}

/// What carries a protocol's bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Carrier {
    /// A TCP stream (TLS over it for https).
    Stream,
    /// UDP datagrams (the session does its own TLS, as QUIC does).
    Datagrams,
}

impl Protocol {
    /// Its name in TLS's ALPN.
    pub fn alpn(self) -> &'static str {
        match self {
            Protocol::Http1 | Protocol::WebSocket => "http/1.1",
            Protocol::Http2 => "h2",
            Protocol::Http3 => "h3",
        }
    }

    /// Its name in the reports.
    pub fn name(self) -> &'static str {
        match self {
            Protocol::Http1 => "HTTP/1.1",
            Protocol::Http2 => "HTTP/2",
            Protocol::Http3 => "HTTP/3",
            Protocol::WebSocket => "WebSocket",
        }
    }

    /// The protocol the reports call `name`.
    pub fn from_name(name: &str) -> Option<Protocol> {
        [
            Protocol::Http1,
            Protocol::Http2,
            Protocol::Http3,
            Protocol::WebSocket,
        ]
        .into_iter()
        .find(|p| p.name() == name)
    }

    /// The protocol an ALPN name stands for.
    pub fn from_alpn(name: &[u8]) -> Option<Protocol> {
        match name {
            b"http/1.1" => Some(Protocol::Http1),
            b"h2" => Some(Protocol::Http2),
            b"h3" => Some(Protocol::Http3),
            _ => None,
        }
    }

    /// It carries several requests at once on one connection (`-m`
    /// applies).
    pub fn multiplexes(self) -> bool {
        matches!(self, Protocol::Http2 | Protocol::Http3)
    }

    /// With `--0rtt`, a connection that resumes a TLS session sends its
    /// requests as early data (QUIC's 0-RTT).
    pub fn early_data(self) -> bool {
        self == Protocol::Http3
    }

    /// What carries its bytes.
    pub fn carrier(self) -> Carrier {
        match self {
            Protocol::Http3 => Carrier::Datagrams,
            _ => Carrier::Stream,
        }
    }
}

/// The protocols the hosts of a run spoke, each once, in the order of the
/// first host that spoke it. The JSON document holds it in its words
/// (`"HTTP/1.1, HTTP/2"`).
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(into = "String", try_from = "String")]
pub struct Spoken(Vec<Protocol>);

impl Spoken {
    /// What `hosts` (one protocol per host) spoke.
    pub fn of(hosts: impl IntoIterator<Item = Protocol>) -> Spoken {
        let mut seen = Vec::new();
        for p in hosts {
            if !seen.contains(&p) {
                seen.push(p);
            }
        }
        Spoken(seen)
    }

    /// Whether WebSocket was spoken: each request was a message, answered
    /// by a message rather than a status.
    pub fn messages(&self) -> bool {
        self.0.contains(&Protocol::WebSocket)
    }

    /// Whether a host carried several requests at once on a connection
    /// (`-m` applied to it).
    pub fn multiplexes(&self) -> bool {
        self.0.iter().any(|p| p.multiplexes())
    }

    /// The name of the one multiplexing protocol spoken, whose streams a
    /// report counts (`None` when there is none, or several).
    pub fn streams_of(&self) -> Option<&'static str> {
        self.multiplexing().map(Protocol::name)
    }

    /// The one multiplexing protocol spoken (`None` when there is none, or
    /// several).
    pub fn multiplexing(&self) -> Option<Protocol> {
        match self
            .0
            .iter()
            .filter(|p| p.multiplexes())
            .collect::<Vec<_>>()[..]
        {
            [one] => Some(*one),
            _ => None,
        }
    }
}

/// As the reports name it: the protocol every host spoke (`HTTP/2`), or
/// each in turn when they differ (`HTTP/1.1, HTTP/2`).
impl fmt::Display for Spoken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names: Vec<&str> = self.0.iter().map(|p| p.name()).collect();
        f.write_str(&names.join(", "))
    }
}

impl From<Spoken> for String {
    fn from(spoken: Spoken) -> String {
        spoken.to_string()
    }
}

impl TryFrom<String> for Spoken {
    type Error = String;

    fn try_from(words: String) -> Result<Spoken, String> {
        words.parse()
    }
}

/// Read back from a saved report's words.
impl FromStr for Spoken {
    type Err = String;

    fn from_str(s: &str) -> Result<Spoken, String> {
        s.split(", ")
            .map(|name| {
                Protocol::from_name(name)
                    .ok_or_else(|| format!("the protocol {name:?} is not one metron speaks"))
            })
            .collect::<Result<Vec<_>, _>>()
            .map(Spoken::of)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_the_hosts_spoke_reads_back_from_its_name() {
        use Protocol::{Http1, Http2};
        let mixed = Spoken::of([Http2, Http1, Http2]);
        assert_eq!(mixed.to_string(), "HTTP/2, HTTP/1.1");
        assert_eq!("HTTP/2, HTTP/1.1".parse(), Ok(mixed));
        assert!(!Spoken::of([Http1]).multiplexes());
        assert_eq!("HTTP/3".parse(), Ok(Spoken::of([Protocol::Http3])));
        assert_eq!(Spoken::of([Protocol::Http3]).streams_of(), Some("HTTP/3"));
        assert!("HTTP/4".parse::<Spoken>().is_err());
    }
}
