//! Why an NTS client session gave no time: one variant per cause, each
//! sorted into the verdict a caller reports ([`FailureClass`]).

use std::fmt;
use std::net::SocketAddr;
use std::time::Duration;

use crate::KeClientError;

/// How a caller should report a [`SessionError`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FailureClass {
    /// Something failed authentication: TLS, the NTS-KE response, the
    /// server's replies, or a NAK after a fresh NTS-KE.
    Authentication,
    /// No usable answer: unreachable, silent, unresolvable.
    NoAnswer,
    /// The authenticated reply says the server's clock is unsynchronized, or
    /// is unfit by its root distance ([`SessionError::Reply`] holding
    /// [`authtime_proto::ClientError::Unsynchronized`] or
    /// [`authtime_proto::ClientError::RootDistanceTooLarge`]).
    Unsynchronized,
}

/// Why an NTS session gave no sample.
#[non_exhaustive]
#[derive(Debug)]
pub enum SessionError {
    /// NTS-KE with `server` failed.
    KeyExchange {
        /// `host:port` of the NTS-KE server.
        server: String,
        /// What failed.
        error: KeClientError,
    },
    /// NTS-KE with `server` succeeded but gave no cookie.
    NoCookie {
        /// `host:port` of the NTS-KE server.
        server: String,
    },
    /// The NTP server named by NTS-KE does not resolve.
    Resolve {
        /// The name NTS-KE gave.
        ntp_server: String,
        /// The resolver's error; `None` when the name resolved to no address.
        error: Option<std::io::Error>,
    },
    /// NTS-KE negotiated an AEAD this client cannot run.
    UnsupportedAead(u16),
    /// The negotiated keys do not fit the AEAD.
    SessionKeys(authtime_nts::AeadError),
    /// No cookie left to send.
    NoCookieLeft,
    /// The system gave no random bytes.
    Random(getrandom::Error),
    /// The plain NTP request could not be built.
    PlainRequest(authtime_proto::ClientError),
    /// The plain NTP request's header could not be read back.
    PlainHeader(authtime_wire::WireError),
    /// The NTS request could not be built.
    BuildRequest(authtime_nts::ClientError),
    /// No UDP socket to the NTP server.
    Connect {
        /// The NTP server.
        addr: SocketAddr,
        /// The socket error.
        error: std::io::Error,
    },
    /// The request could not be sent.
    Send(std::io::Error),
    /// An ICMP port unreachable came back.
    ConnectionRefused,
    /// An authenticated reply whose header gives no time (unsynchronized, Kiss-o'-Death...).
    Reply(authtime_proto::ClientError),
    /// The server answered with an NTS NAK (RFC 8915 section 5.7).
    Nak,
    /// A NAK again right after a fresh NTS-KE.
    NakAfterFreshKe,
    /// Only replies that failed the NTS checks arrived; the last one's reason.
    OnlyForgedReplies(authtime_nts::ClientError),
    /// Nothing arrived in time.
    Timeout(Duration),
    /// Nothing arrived in time after the stored session, silent too, was
    /// dropped and NTS-KE redone.
    TimeoutAfterDroppingStored(Duration),
}

impl SessionError {
    /// Whether NTS-KE failed because the server's certificate chain is
    /// outside its validity period at the time it was checked against
    /// ([`KeClientError::is_certificate_validity`]).
    #[must_use]
    pub fn is_certificate_validity(&self) -> bool {
        matches!(self, Self::KeyExchange { error, .. } if error.is_certificate_validity())
    }

    /// How to report this error.
    #[must_use]
    pub fn class(&self) -> FailureClass {
        use KeClientError as E;
        match self {
            Self::KeyExchange {
                error: E::Handshake(_) | E::NoAlpn | E::Response(_),
                ..
            }
            | Self::NoCookie { .. }
            | Self::UnsupportedAead(_)
            | Self::SessionKeys(_)
            | Self::NakAfterFreshKe
            | Self::OnlyForgedReplies(_) => FailureClass::Authentication,
            Self::Reply(
                authtime_proto::ClientError::Unsynchronized { .. }
                | authtime_proto::ClientError::RootDistanceTooLarge { .. },
            ) => FailureClass::Unsynchronized,
            _ => FailureClass::NoAnswer,
        }
    }
}

impl fmt::Display for SessionError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::KeyExchange { server, error } => write!(f, "NTS-KE with {server}: {error}"),
            Self::NoCookie { server } => {
                write!(f, "NTS-KE with {server}: the server sent no cookie")
            }
            Self::Resolve {
                ntp_server,
                error: Some(_),
            } => write!(f, "cannot resolve the NTP server {ntp_server}"),
            Self::Resolve {
                ntp_server,
                error: None,
            } => write!(f, "the NTP server {ntp_server} has no address"),
            Self::UnsupportedAead(id) => write!(f, "unsupported AEAD {id}"),
            Self::SessionKeys(e) => write!(f, "session keys: {e}"),
            Self::NoCookieLeft => f.write_str("no cookie left"),
            Self::Random(e) => write!(f, "{e}"),
            Self::PlainRequest(e) => write!(f, "{e}"),
            Self::PlainHeader(e) => write!(f, "{e}"),
            Self::BuildRequest(e) => write!(f, "cannot build the request: {e}"),
            Self::Connect { addr, error } => write!(f, "cannot reach {addr}: {error}"),
            Self::Send(e) => write!(f, "cannot send: {e}"),
            Self::ConnectionRefused => {
                f.write_str("connection refused: nothing listens on that port")
            }
            Self::Reply(e) => write!(f, "{e}"),
            Self::Nak => f.write_str("the NTP server answered with an NTS NAK"),
            Self::NakAfterFreshKe => {
                f.write_str("the server answered with an NTS NAK again after a fresh NTS-KE")
            }
            Self::OnlyForgedReplies(e) => {
                write!(f, "only replies that failed NTS checks arrived (last: {e})")
            }
            Self::Timeout(t) => write!(f, "no reply within {} s", t.as_secs_f64()),
            Self::TimeoutAfterDroppingStored(t) => write!(
                f,
                "no reply within {} s, neither to the stored NTS session (dropped) nor to a \
                 fresh one after NTS-KE",
                t.as_secs_f64()
            ),
        }
    }
}

impl std::error::Error for SessionError {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_sort_into_the_verdicts_the_query_reports() {
        let server = "ke.example:4460".to_owned();
        let refused = SessionError::KeyExchange {
            server: server.clone(),
            error: KeClientError::NoAlpn,
        };
        let silent = SessionError::KeyExchange {
            server,
            error: KeClientError::Timeout,
        };
        assert_eq!(refused.class(), FailureClass::Authentication);
        assert_eq!(silent.class(), FailureClass::NoAnswer);
        assert_eq!(
            SessionError::NakAfterFreshKe.class(),
            FailureClass::Authentication
        );
        assert_eq!(SessionError::Nak.class(), FailureClass::NoAnswer);
        assert_eq!(
            SessionError::Timeout(Duration::from_millis(1500)).to_string(),
            "no reply within 1.5 s"
        );
        assert_eq!(
            silent.to_string(),
            "NTS-KE with ke.example:4460: NTS-KE timed out"
        );
    }
}
