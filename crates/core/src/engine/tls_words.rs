//! What a failed TLS handshake met, in words: rustls's errors (and the
//! WebPKI faults it passes on) as clauses a user can act on, never the
//! libraries' type names. The pre-flight puts them into its one-line
//! errors and adds the fix.

use std::io;

use rustls::pki_types::{ServerName, UnixTime};
use rustls::{AlertDescription, CertificateError, PeerIncompatible};

use super::transport::rustls_error;
use super::trust::webpki_fault;

/// What ended a handshake: a TLS error, or what the socket said.
pub fn handshake(e: &io::Error) -> String {
    if let Some(tls) = rustls_error(e) {
        return tls_error(tls);
    }
    match e.kind() {
        io::ErrorKind::UnexpectedEof => "the server closed the connection".to_string(),
        io::ErrorKind::ConnectionReset => "the server reset the connection".to_string(),
        _ => e.to_string(),
    }
}

/// A rustls error, as a clause.
pub fn tls_error(e: &rustls::Error) -> String {
    use rustls::Error as E;
    match e {
        E::InvalidCertificate(c) => certificate(c),
        E::NoCertificatesPresented => "the server presented no certificate".to_string(),
        E::AlertReceived(a) => format!(
            "the server ended the handshake with the alert {}",
            alert(*a)
        ),
        E::InvalidMessage(_) => "the server's answer is not TLS".to_string(),
        E::InappropriateMessage { .. } | E::InappropriateHandshakeMessage { .. } => {
            "the server sent a TLS message out of turn".to_string()
        }
        E::PeerIncompatible(p) => incompatible(p),
        E::PeerMisbehaved(_) => "the server broke the TLS protocol".to_string(),
        E::DecryptError => "a TLS record from the server did not decrypt".to_string(),
        E::PeerSentOversizedRecord => {
            "the server sent a TLS record over the size limit".to_string()
        }
        E::NoApplicationProtocol => "the server chose no protocol offered by ALPN".to_string(),
        E::General(why) => why.clone(),
        _ => "the TLS library refused the handshake".to_string(),
    }
}

/// Why a server's certificate was refused, as a clause about "it".
pub fn certificate(e: &CertificateError) -> String {
    use CertificateError as C;
    match e {
        C::UnknownIssuer => "it is issued by an authority metron does not trust".to_string(),
        C::NotValidForNameContext {
            expected,
            presented,
        } => {
            let names: Vec<String> = presented.iter().map(|n| presented_name(n)).collect();
            match names.as_slice() {
                [] => format!("it names no host, and so not {}", server_name(expected)),
                _ => format!(
                    "it is for {}, not for {}",
                    names.join(", "),
                    server_name(expected)
                ),
            }
        }
        C::NotValidForName => "it is not for the host in the URL".to_string(),
        C::ExpiredContext { time, not_after } => format!(
            "it expired on {} (it is now {})",
            date(*not_after),
            date(*time)
        ),
        C::Expired => "it has expired".to_string(),
        C::NotValidYetContext { time, not_before } => format!(
            "it is not valid before {} (it is now {})",
            date(*not_before),
            date(*time)
        ),
        C::NotValidYet => "it is not valid yet".to_string(),
        C::BadSignature => "its signature does not verify with its issuer's key".to_string(),
        C::BadEncoding => "it is not a well-formed X.509 certificate".to_string(),
        C::Revoked => "it has been revoked".to_string(),
        C::UnhandledCriticalExtension => {
            "it has a critical extension that metron does not know".to_string()
        }
        C::InvalidPurpose | C::InvalidPurposeContext { .. } => {
            "it is not meant for TLS servers (its extended key usage lacks serverAuth)".to_string()
        }
        C::UnsupportedSignatureAlgorithmContext { .. }
        | C::UnsupportedSignatureAlgorithmForPublicKeyContext { .. } => {
            "it is signed with an algorithm metron does not support".to_string()
        }
        C::Other(_) => webpki_words(e),
        _ => "it failed verification".to_string(),
    }
}

/// The faults rustls passes on from WebPKI without a variant of its own.
fn webpki_words(e: &CertificateError) -> String {
    use webpki::Error as W;
    match webpki_fault(e) {
        Some(W::CaUsedAsEndEntity) => {
            "it is an authority's certificate (CA:TRUE), not a server's".to_string()
        }
        Some(W::EndEntityUsedAsCa) => {
            "an issuer in its chain is not marked as an authority (CA:TRUE)".to_string()
        }
        Some(W::UnsupportedCertVersion) => {
            "it is an X.509 version 1 certificate; version 3 is needed".to_string()
        }
        Some(W::PathLenConstraintViolated | W::MaximumPathDepthExceeded) => {
            "its chain is longer than its authorities allow".to_string()
        }
        Some(W::NameConstraintViolation) => {
            "it names a host its authority may not issue for".to_string()
        }
        Some(W::UnsupportedCriticalExtension) => {
            "it has a critical extension that metron does not know".to_string()
        }
        Some(W::EmptyEkuExtension) => {
            "it is not meant for TLS servers (its extended key usage lacks serverAuth)".to_string()
        }
        Some(W::BadDer | W::BadDerTime | W::MalformedExtensions | W::ExtensionValueInvalid) => {
            "it is not a well-formed X.509 certificate".to_string()
        }
        _ => "it failed verification".to_string(),
    }
}

/// A name a certificate presents, as WebPKI writes them
/// (`DnsName("localhost")`, `IpAddress(127.0.0.1)`), without the wrapping.
fn presented_name(n: &str) -> String {
    let inner = n
        .strip_prefix("DnsName(\"")
        .and_then(|r| r.strip_suffix("\")"))
        .or_else(|| {
            n.strip_prefix("IpAddress(")
                .and_then(|r| r.strip_suffix(')'))
        });
    inner.unwrap_or(n).to_string()
}

fn server_name(n: &ServerName<'_>) -> String {
    n.to_str().into_owned()
}

/// A certificate's time, in UTC to the second.
fn date(t: UnixTime) -> String {
    let Ok(at) = time::OffsetDateTime::from_unix_timestamp(t.as_secs() as i64) else {
        return format!("{} s after 1970", t.as_secs());
    };
    format!(
        "{}-{:02}-{:02} {:02}:{:02}:{:02} UTC",
        at.year(),
        at.month() as u8,
        at.day(),
        at.hour(),
        at.minute(),
        at.second()
    )
}

/// Why the server and metron found nothing in common.
fn incompatible(p: &PeerIncompatible) -> String {
    use PeerIncompatible as P;
    match p {
        P::ServerDoesNotSupportTls12Or13
        | P::ServerTlsVersionIsDisabledByOurConfig
        | P::SupportedVersionsExtensionRequired => {
            "the server speaks no TLS version metron does (1.2 and 1.3)".to_string()
        }
        P::NoCipherSuitesInCommon => "the server and metron have no cipher suite in common".into(),
        P::NoKxGroupsInCommon => "the server and metron have no key exchange in common".into(),
        P::NoSignatureSchemesInCommon | P::NoCertificateRequestSignatureSchemesInCommon => {
            "the server and metron have no signature scheme in common".to_string()
        }
        _ => "the server wants a TLS feature metron does not offer".to_string(),
    }
}

/// An alert by its name in the TLS specifications (RFC 8446 and the
/// registry of alerts), as servers' logs and other tools name it.
pub fn alert(a: AlertDescription) -> String {
    let name = match u8::from(a) {
        0 => "close_notify",
        10 => "unexpected_message",
        20 => "bad_record_mac",
        21 => "decryption_failed",
        22 => "record_overflow",
        30 => "decompression_failure",
        40 => "handshake_failure",
        41 => "no_certificate",
        42 => "bad_certificate",
        43 => "unsupported_certificate",
        44 => "certificate_revoked",
        45 => "certificate_expired",
        46 => "certificate_unknown",
        47 => "illegal_parameter",
        48 => "unknown_ca",
        49 => "access_denied",
        50 => "decode_error",
        51 => "decrypt_error",
        60 => "export_restriction",
        70 => "protocol_version",
        71 => "insufficient_security",
        80 => "internal_error",
        86 => "inappropriate_fallback",
        90 => "user_canceled",
        100 => "no_renegotiation",
        109 => "missing_extension",
        110 => "unsupported_extension",
        111 => "certificate_unobtainable",
        112 => "unrecognized_name",
        113 => "bad_certificate_status_response",
        114 => "bad_certificate_hash_value",
        115 => "unknown_psk_identity",
        116 => "certificate_required",
        120 => "no_application_protocol",
        121 => "ech_required",
        n => return format!("number {n}"),
    };
    name.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    /// No message shows a Rust type or variant name: each of these came
    /// out as such before.
    #[test]
    fn errors_read_as_sentences() {
        let ca = rustls::OtherError(Arc::new(webpki::Error::CaUsedAsEndEntity));
        let cases = [
            (
                rustls::Error::InvalidCertificate(CertificateError::UnknownIssuer),
                "it is issued by an authority metron does not trust",
            ),
            (
                rustls::Error::InvalidCertificate(CertificateError::Other(ca)),
                "it is an authority's certificate (CA:TRUE), not a server's",
            ),
            (
                rustls::Error::AlertReceived(AlertDescription::CertificateRequired),
                "the server ended the handshake with the alert certificate_required",
            ),
            (
                rustls::Error::AlertReceived(AlertDescription::UnknownCA),
                "the server ended the handshake with the alert unknown_ca",
            ),
            (
                rustls::Error::InvalidMessage(rustls::InvalidMessage::InvalidContentType),
                "the server's answer is not TLS",
            ),
            (
                rustls::Error::PeerIncompatible(PeerIncompatible::ServerDoesNotSupportTls12Or13),
                "the server speaks no TLS version metron does (1.2 and 1.3)",
            ),
        ];
        for (e, want) in cases {
            assert_eq!(tls_error(&e), want);
        }
    }

    #[test]
    fn names_and_dates_are_written_out() {
        let wrong_name = CertificateError::NotValidForNameContext {
            expected: ServerName::try_from("app.test").unwrap(),
            presented: vec![
                "DnsName(\"localhost\")".to_string(),
                "IpAddress(127.0.0.1)".to_string(),
            ],
        };
        assert_eq!(
            certificate(&wrong_name),
            "it is for localhost, 127.0.0.1, not for app.test"
        );
        let expired = CertificateError::ExpiredContext {
            time: UnixTime::since_unix_epoch(std::time::Duration::from_secs(1_700_000_000)),
            not_after: UnixTime::since_unix_epoch(std::time::Duration::from_secs(1_600_000_000)),
        };
        assert_eq!(
            certificate(&expired),
            "it expired on 2020-09-13 12:26:40 UTC (it is now 2023-11-14 22:13:20 UTC)"
        );
    }

    #[test]
    fn socket_errors_keep_their_words() {
        let eof = io::Error::new(io::ErrorKind::UnexpectedEof, "eof");
        assert_eq!(handshake(&eof), "the server closed the connection");
        let tls = super::super::transport::tls_error(rustls::Error::DecryptError);
        assert_eq!(
            handshake(&tls),
            "a TLS record from the server did not decrypt"
        );
    }
}
