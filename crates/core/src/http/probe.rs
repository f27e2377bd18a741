//! What a protocol's pre-flight check reads through and how one fails:
//! the seam between the engine, which reaches a host, and the protocols
//! (`http::preflight`), which check what it says.

use std::io::{self, Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use rustls::{ClientConnection, StreamOwned};

/// A connected stream whose reads can be given a deadline: TCP, or TLS
/// over it.
pub trait Line: Read + Write {
    fn set_read_timeout(&self, timeout: Option<Duration>) -> io::Result<()>;
}

impl Line for TcpStream {
    fn set_read_timeout(&self, timeout: Option<Duration>) -> io::Result<()> {
        TcpStream::set_read_timeout(self, timeout)
    }
}

impl Line for StreamOwned<ClientConnection, TcpStream> {
    fn set_read_timeout(&self, timeout: Option<Duration>) -> io::Result<()> {
        self.sock.set_read_timeout(timeout)
    }
}

/// A failure of a protocol that brings its own transport, in the words of
/// a client that asked for it, or one that is not the protocol's to name:
/// the socket's, or the certificates' (which TLS over TCP may explain
/// better).
pub enum Named {
    Said(String),
    Socket(io::Error),
    Certificate(String),
    ClientCertificate {
        alert: u8,
    },
    /// The server ended the handshake with this TLS alert, for a reason
    /// of its own.
    Alert {
        alert: u8,
    },
}
