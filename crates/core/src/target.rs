//! The server under test: a URL parsed into scheme, host, port, path and
//! `Host` header value, and the host resolved to its addresses.
//!
//! Both the command line's URL and every absolute URL of a requests file go
//! through here, so this module sits below the two of them and imports
//! neither.

use std::net::{SocketAddr, ToSocketAddrs};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scheme {
    Http,
    Https,
}

/// The server under test.
#[derive(Clone, Debug)]
pub struct Target {
    pub scheme: Scheme,
    /// Host as written in the URL (IPv6 literals without brackets).
    pub host: String,
    pub port: u16,
    /// Path and query, never empty.
    pub path: String,
    /// Value of the `Host` header: host, plus the port when not the default.
    pub authority: String,
    /// Every address the host resolved to, in resolver order.
    pub addrs: Vec<SocketAddr>,
}

/// A URL that cannot be loaded, each with the fix in its message.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum TargetError {
    #[error("invalid URL '{url}': {why}; write it as http://host[:port]/path")]
    Url { url: String, why: String },
    #[error("unsupported scheme '{0}': use http:// or https://")]
    Scheme(String),
    #[error("cannot resolve host '{host}': {why}; check the host name in the URL")]
    Resolve { host: String, why: String },
}

/// Parses and resolves the URL.
pub fn parse_target(raw: &str) -> Result<Target, TargetError> {
    let mut target = parse_url(raw)?;
    resolve(&mut target)?;
    Ok(target)
}

/// Parses the URL; the target's addresses stay empty until [`resolve`].
pub fn parse_url(raw: &str) -> Result<Target, TargetError> {
    if !raw.contains("://") {
        let why = "no scheme".to_string();
        return Err(TargetError::Url {
            url: raw.to_string(),
            why,
        });
    }
    let url = url::Url::parse(raw).map_err(|e| TargetError::Url {
        url: raw.to_string(),
        why: e.to_string(),
    })?;
    let scheme = match url.scheme() {
        "http" => Scheme::Http,
        "https" => Scheme::Https,
        other => return Err(TargetError::Scheme(other.to_string())),
    };
    let host = match url.host() {
        Some(url::Host::Ipv6(a)) => a.to_string(),
        Some(h) => h.to_string(),
        None => {
            return Err(TargetError::Url {
                url: raw.to_string(),
                why: "no host".to_string(),
            })
        }
    };
    let bad = |why: &str| TargetError::Url {
        url: raw.to_string(),
        why: why.to_string(),
    };
    // Sent nowhere, so refused rather than dropped without a word (and
    // kept out of the report, which prints the URL).
    if !url.username().is_empty() || url.password().is_some() {
        return Err(bad(
            "credentials in a URL are not sent; remove them and pass -H 'Authorization: ...'",
        ));
    }
    if url.port() == Some(0) {
        return Err(bad("port 0 is not a port to connect to"));
    }
    let default_port = if scheme == Scheme::Https { 443 } else { 80 };
    let port = url.port().unwrap_or(default_port);
    let host_part = url.host_str().unwrap_or(&host).to_string(); // keeps IPv6 brackets
    let authority = match url.port() {
        Some(p) => format!("{host_part}:{p}"),
        None => host_part,
    };
    let mut path = url.path().to_string();
    if let Some(q) = url.query() {
        path.push('?');
        path.push_str(q);
    }
    Ok(Target {
        scheme,
        host,
        port,
        path,
        authority,
        addrs: Vec::new(),
    })
}

/// Looks up the target's host.
pub fn resolve(target: &mut Target) -> Result<(), TargetError> {
    let host = &target.host;
    let why = |why: String| TargetError::Resolve {
        host: host.clone(),
        why,
    };
    let addrs: Vec<SocketAddr> = (host.as_str(), target.port)
        .to_socket_addrs()
        .map_err(|e| why(e.to_string()))?
        .collect();
    if addrs.is_empty() {
        return Err(why("no addresses".to_string()));
    }
    target.addrs = addrs;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_of_every_shape() {
        let t = parse_target("http://127.0.0.1:8080/a/b?x=1&y=2").unwrap();
        assert_eq!(
            (t.host.as_str(), t.port, t.path.as_str()),
            ("127.0.0.1", 8080, "/a/b?x=1&y=2")
        );
        assert_eq!(t.authority, "127.0.0.1:8080");
        let t = parse_target("http://[::1]:9000").unwrap();
        assert_eq!((t.host.as_str(), t.path.as_str()), ("::1", "/"));
        assert_eq!(t.authority, "[::1]:9000");
        assert_eq!(t.addrs, vec!["[::1]:9000".parse().unwrap()]);
        let t = parse_target("https://127.0.0.1/").unwrap();
        assert_eq!(
            (t.scheme, t.port, t.authority.as_str()),
            (Scheme::Https, 443, "127.0.0.1")
        );
        let t = parse_target("http://localhost:81/").unwrap();
        assert!(!t.addrs.is_empty());
    }

    #[test]
    fn urls_that_cannot_be_honoured_are_refused() {
        let err = |u: &str| parse_url(u).unwrap_err().to_string();
        assert!(err("http://127.0.0.1:0/").contains("port 0 is not a port"));
        for u in ["http://user:secret@127.0.0.1/", "http://user@127.0.0.1/"] {
            assert!(err(u).contains("credentials in a URL are not sent"), "{u}");
        }
    }
}
