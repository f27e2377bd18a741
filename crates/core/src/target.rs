//! The server under test: a URL parsed into scheme, host, port, path and
//! `Host` header value, and the host resolved to its addresses, or to
//! those `--resolve` pins it to.
//!
//! Both the command line's URL and every absolute URL of a requests file go
//! through here, so this module sits below the two of them and imports
//! neither.

use std::net::{IpAddr, SocketAddr, ToSocketAddrs};

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
    /// A `ws://` or `wss://` URL: WebSocket over HTTP (`scheme`) or HTTPS.
    pub websocket: bool,
}

impl Target {
    /// Its scheme as a URL names it: `http`, `https`, `ws` or `wss`.
    pub fn scheme_name(&self) -> &'static str {
        match (self.websocket, self.scheme) {
            (false, Scheme::Http) => "http",
            (false, Scheme::Https) => "https",
            (true, Scheme::Http) => "ws",
            (true, Scheme::Https) => "wss",
        }
    }

    /// Its scheme without TLS, as a URL begins: `http://` or `ws://`.
    pub fn plain_scheme(&self) -> &'static str {
        if self.websocket {
            "ws://"
        } else {
            "http://"
        }
    }
}

/// A URL that cannot be loaded, each with the fix in its message.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum TargetError {
    #[error("invalid URL '{url}': {why}; write it as {form}")]
    Url {
        url: String,
        why: String,
        form: &'static str,
    },
    #[error("unsupported scheme '{0}': use http://, https://, ws:// or wss://")]
    Scheme(String),
    #[error("cannot resolve host '{host}': {why}; check the host name in the URL, or give its address with --resolve HOST:PORT:ADDR")]
    Resolve { host: String, why: String },
    #[error("--resolve pins {host} on port {pinned}, not on the URL's port {port}; write --resolve {host}:{port}:{addrs}, or correct the URL's port")]
    PinPort {
        host: String,
        pinned: u16,
        port: u16,
        addrs: String,
    },
}

/// Parses and resolves the URL.
pub fn parse_target(raw: &str) -> Result<Target, TargetError> {
    parse_target_pinned(raw, &[])
}

/// Parses the URL and resolves it, to pinned addresses if `pins` has
/// its host and port.
pub fn parse_target_pinned(raw: &str, pins: &[Pin]) -> Result<Target, TargetError> {
    let mut target = parse_url(raw)?;
    resolve_pinned(&mut target, pins)?;
    Ok(target)
}

/// The schemes metron loads, each with the form of its URLs.
const URL_FORMS: [(&str, &str); 4] = [
    ("http", "http://host[:port]/path"),
    ("https", "https://host[:port]/path"),
    ("ws", "ws://host[:port]/path"),
    ("wss", "wss://host[:port]/path"),
];

/// `raw` is no URL to load, for `why`; the fix is written in the form of
/// its own scheme's URLs (HTTP's when it has none metron loads).
fn invalid(raw: &str, why: &str) -> TargetError {
    let scheme = raw.split(':').next().unwrap_or_default();
    let form = URL_FORMS
        .iter()
        .find(|f| f.0.eq_ignore_ascii_case(scheme))
        .map_or(URL_FORMS[0].1, |f| f.1);
    TargetError::Url {
        url: raw.to_string(),
        why: why.to_string(),
        form,
    }
}

/// Parses the URL; the target's addresses stay empty until [`resolve`].
pub fn parse_url(raw: &str) -> Result<Target, TargetError> {
    let bad = |why: &str| invalid(raw, why);
    if !raw.contains("://") {
        return Err(match raw.split_once(':') {
            Some((scheme, _)) if URL_FORMS.iter().any(|f| f.0.eq_ignore_ascii_case(scheme)) => {
                bad(&format!("{scheme}: is followed by :// before the host"))
            }
            _ => bad("no scheme"),
        });
    }
    let url = url::Url::parse(raw).map_err(|e| bad(&e.to_string()))?;
    let (scheme, websocket) = match url.scheme() {
        "http" => (Scheme::Http, false),
        "https" => (Scheme::Https, false),
        "ws" => (Scheme::Http, true),
        "wss" => (Scheme::Https, true),
        other => return Err(TargetError::Scheme(other.to_string())),
    };
    let host = match url.host() {
        Some(url::Host::Ipv6(a)) => a.to_string(),
        Some(h) => h.to_string(),
        None => return Err(bad("no host")),
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
        websocket,
    })
}

/// The addresses of a host and port, given instead of looked up
/// (`--resolve HOST:PORT:ADDR[,ADDR...]`, curl's syntax): connections go
/// there while the name stays the host's, for TLS (SNI and the
/// certificate's name) and `Host`, so a certificate for a real name can
/// be tested against another server.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Pin {
    /// Lower case, an IPv6 literal without brackets, as URLs give hosts.
    pub host: String,
    pub port: u16,
    pub addrs: Vec<IpAddr>,
}

impl Pin {
    /// Reads `HOST:PORT:ADDR[,ADDR...]`; an IPv6 host or address goes in
    /// brackets. The error says what is wrong.
    pub fn parse(given: &str) -> Result<Pin, String> {
        let (host, rest) = match given.strip_prefix('[') {
            Some(v6) => v6
                .split_once("]:")
                .ok_or("an IPv6 HOST needs its closing bracket and a PORT")?,
            None => given.split_once(':').ok_or("it has no PORT and no ADDR")?,
        };
        let (port, addrs) = rest.split_once(':').ok_or("it has no ADDR")?;
        if host.is_empty() {
            return Err("HOST is empty".into());
        }
        let port = port
            .parse::<u16>()
            .ok()
            .filter(|&p| p != 0)
            .ok_or_else(|| format!("PORT {port:?} is not a port number (1-65535)"))?;
        let addrs = addrs
            .split(',')
            .map(|a| {
                let bare = a.strip_prefix('[').and_then(|a| a.strip_suffix(']'));
                bare.unwrap_or(a).parse::<IpAddr>().map_err(|_| {
                    format!("ADDR {a:?} is not an IP address (an IPv6 one goes in brackets: [::1])")
                })
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Pin {
            host: host.to_ascii_lowercase(),
            port,
            addrs,
        })
    }

    /// Whether the pin is for `target`'s host and port.
    pub fn is_for(&self, target: &Target) -> bool {
        self.port == target.port && self.host.eq_ignore_ascii_case(&target.host)
    }
}

/// Looks up the target's host, or takes the addresses pinned to its host
/// and port. A host pinned on another port only is refused without a
/// lookup: the pin says the name is not to be looked up (it may be
/// private, or not exist at all), so its port was most likely mistyped.
pub fn resolve_pinned(target: &mut Target, pins: &[Pin]) -> Result<(), TargetError> {
    let port = target.port;
    if let Some(pin) = pins.iter().find(|p| p.is_for(target)) {
        target.addrs = pin
            .addrs
            .iter()
            .map(|&a| SocketAddr::new(a, port))
            .collect();
        return Ok(());
    }
    if let Some(pin) = pins
        .iter()
        .find(|p| p.host.eq_ignore_ascii_case(&target.host))
    {
        let addrs: Vec<String> = pin
            .addrs
            .iter()
            .map(|a| match a {
                IpAddr::V4(a) => a.to_string(),
                IpAddr::V6(a) => format!("[{a}]"),
            })
            .collect();
        let host = match pin.host.contains(':') {
            true => format!("[{}]", pin.host),
            false => pin.host.clone(),
        };
        return Err(TargetError::PinPort {
            host,
            pinned: pin.port,
            port,
            addrs: addrs.join(","),
        });
    }
    resolve(target)
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
        let t = parse_target("wss://127.0.0.1/chat?room=1").unwrap();
        assert_eq!(
            (t.scheme, t.port, t.path.as_str(), t.websocket),
            (Scheme::Https, 443, "/chat?room=1", true)
        );
        let t = parse_target("ws://127.0.0.1:9001").unwrap();
        assert_eq!((t.scheme, t.port, t.websocket), (Scheme::Http, 9001, true));
        let t = parse_target("http://localhost:81/").unwrap();
        assert!(!t.addrs.is_empty());
    }

    /// A bad URL's fix is written in its own scheme's form.
    #[test]
    fn a_bad_url_is_told_the_form_of_its_own_scheme() {
        let said = |raw: &str| parse_url(raw).unwrap_err().to_string();
        let port = said("ws://127.0.0.1:99999/echo");
        assert!(
            port.contains("invalid port number; write it as ws://host[:port]/path"),
            "{port}"
        );
        let slashes = said("wss:/127.0.0.1/echo");
        assert!(
            slashes.contains("wss: is followed by :// before the host; write it as wss://"),
            "{slashes}"
        );
        assert!(said("127.0.0.1:8080/").contains("no scheme; write it as http://"));
        assert!(said("HTTPS://").contains("write it as https://host"));
    }

    #[test]
    fn pinned_hosts_keep_their_name_and_take_the_address() {
        let pins = [Pin::parse("App.Test:8443:127.0.0.1").unwrap()];
        let t = parse_target_pinned("https://app.test:8443/x", &pins).unwrap();
        assert_eq!(t.addrs, vec!["127.0.0.1:8443".parse().unwrap()]);
        assert_eq!(
            (t.host.as_str(), t.authority.as_str()),
            ("app.test", "app.test:8443")
        );
        // Regression: a pin whose port is not the URL's looked the name
        // up, then said to give its address with --resolve. It is refused
        // without a lookup, naming both ports and the pin to write.
        let err = parse_target_pinned("https://app.test:9443/", &pins).unwrap_err();
        assert_eq!(
            err.to_string(),
            "--resolve pins app.test on port 8443, not on the URL's port 9443; write --resolve \
             app.test:9443:127.0.0.1, or correct the URL's port"
        );
        let v6 = [Pin::parse("[::1]:80:[::1],127.0.0.2").unwrap()];
        let err = parse_target_pinned("http://[::1]:8080/", &v6).unwrap_err();
        assert!(
            err.to_string()
                .contains("write --resolve [::1]:8080:[::1],127.0.0.2,"),
            "{err}"
        );
        let pin = Pin::parse("[::1]:80:[::1],127.0.0.2").unwrap();
        assert_eq!(pin.host, "::1");
        assert_eq!(
            pin.addrs,
            vec![
                "::1".parse::<IpAddr>().unwrap(),
                "127.0.0.2".parse().unwrap()
            ]
        );
        let t = parse_target_pinned("http://[::1]/", &[pin]).unwrap();
        assert_eq!(t.addrs.len(), 2);
    }

    #[test]
    fn bad_pins_say_what_is_wrong() {
        let err = |s: &str| Pin::parse(s).unwrap_err();
        assert_eq!(err("app.test"), "it has no PORT and no ADDR");
        assert_eq!(err("app.test:443"), "it has no ADDR");
        assert_eq!(err(":443:127.0.0.1"), "HOST is empty");
        assert_eq!(
            err("a:https:127.0.0.1"),
            "PORT \"https\" is not a port number (1-65535)"
        );
        assert_eq!(
            err("a:0:127.0.0.1"),
            "PORT \"0\" is not a port number (1-65535)"
        );
        assert!(err("a:443:localhost").starts_with("ADDR \"localhost\" is not an IP address"));
        assert!(err("a:443:::1:x").starts_with("ADDR"));
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
