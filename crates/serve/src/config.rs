//! What the server is asked to do: the plain struct that the command line
//! (`metron serve`'s flags, parsed outside this module) and the tests turn
//! into a running server.
//!
//! Checks that involve more than one flag live in [`StallPlan::from_flags`]
//! and [`FaultPlan::from_flags`], and the ones that also apply to a
//! hand-built [`ServeConfig`] in [`ServeConfig::check`]. Their messages name
//! the flags, which are the server's interface wherever they are parsed.

use std::net::{Ipv4Addr, SocketAddr};
use std::path::PathBuf;
use std::time::Duration;

use super::fault::FaultPlan;
use super::plan::StallPlan;
use super::tls::BadCert;

/// Most worker threads a server may ask for; more is surely a typo.
pub const MAX_THREADS: usize = 1024;
/// Pause between the bytes of a trickled response, unless told otherwise.
pub const TRICKLE_INTERVAL: Duration = Duration::from_millis(100);

/// Everything a [`super::Server`] needs; tests build it directly.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ServeConfig {
    pub listen: SocketAddr,
    /// Tokio worker threads (1 to [`MAX_THREADS`]).
    pub threads: usize,
    /// Added before every response, on top of a `/delay/MS` route's delay.
    pub delay: Duration,
    /// Body length of the default response.
    pub body_size: u64,
    /// Frame the default response with chunked transfer coding.
    pub chunked: bool,
    /// Close after every Nth response on a connection; `Some(0)` is invalid.
    pub close_every: Option<u64>,
    pub stall: Option<StallPlan>,
    /// Faults injected in place of responses.
    pub fault: Option<FaultPlan>,
    /// Pause between the bytes of a trickled response.
    pub trickle_interval: Duration,
    /// Serve over TLS with this (rejectable) generated certificate.
    pub tls: Option<BadCert>,
    /// Serve over TLS with the certificate chain in this PEM file...
    pub tls_cert: Option<PathBuf>,
    /// ...and its private key, in this one.
    pub tls_key: Option<PathBuf>,
    /// Require client certificates issued by an authority in this PEM file.
    pub client_ca: Option<PathBuf>,
    /// Inspection: with `record > 0` the server keeps the first `record`
    /// requests in full and counts requests per path. Both take a lock per
    /// request, so benchmarks leave it at 0.
    pub record: usize,
}

impl Default for ServeConfig {
    /// The flag defaults, except that the port is chosen by the OS: what a
    /// test wants, and never in the way of a server already on 8080.
    fn default() -> Self {
        ServeConfig {
            listen: SocketAddr::from((Ipv4Addr::LOCALHOST, 0)),
            threads: 1,
            delay: Duration::ZERO,
            body_size: 0,
            chunked: false,
            close_every: None,
            stall: None,
            fault: None,
            trickle_interval: TRICKLE_INTERVAL,
            tls: None,
            tls_cert: None,
            tls_key: None,
            client_ca: None,
            record: 0,
        }
    }
}

impl ServeConfig {
    /// Rejects values a hand-built config may hold but the flags cannot.
    pub fn check(&self) -> Result<(), String> {
        if !(1..=MAX_THREADS).contains(&self.threads) {
            return Err(format!("--threads must be 1 to {MAX_THREADS}"));
        }
        if self.close_every == Some(0) {
            return Err("--close-every must be at least 1".to_string());
        }
        self.check_tls()?;
        match &self.fault {
            Some(plan) => plan.check(),
            None => Ok(()),
        }
    }

    /// The TLS options make one certificate, and a client CA needs TLS.
    fn check_tls(&self) -> Result<(), String> {
        match (&self.tls, &self.tls_cert, &self.tls_key) {
            (_, Some(_), None) => Err("--tls-cert needs --tls-key FILE, its private key".into()),
            (_, None, Some(_)) => {
                Err("--tls-key needs --tls-cert FILE, the certificate it belongs to".into())
            }
            (Some(_), Some(_), _) => {
                Err("--tls and --tls-cert both choose the certificate; drop one of them".into())
            }
            (None, None, _) if self.client_ca.is_some() => {
                Err("--client-ca needs HTTPS: add --tls-cert FILE --tls-key FILE (or --tls)".into())
            }
            _ => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::FaultPlan;

    #[test]
    fn hand_built_configs_are_checked_too() {
        let zero_threads = ServeConfig {
            threads: 0,
            ..ServeConfig::default()
        };
        assert!(zero_threads.check().is_err());
        let never = ServeConfig {
            close_every: Some(0),
            ..ServeConfig::default()
        };
        assert!(never.check().is_err());
        let never_faulty = ServeConfig {
            fault: Some(FaultPlan::every(crate::Fault::Reset, 0)),
            ..ServeConfig::default()
        };
        assert!(never_faulty.check().is_err());
        assert_eq!(ServeConfig::default().check(), Ok(()));
    }
}
