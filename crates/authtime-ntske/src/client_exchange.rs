//! One NTS-protected NTP exchange over UDP (RFC 8915 section 5): a cookie
//! from the jar, the request, and the reply checked; the fresh cookies of an
//! authenticated reply go back into the jar.

use std::net::{IpAddr, SocketAddr, UdpSocket};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use authtime_nts::{AeadAlgorithm, ClientOutcome, SessionKeys, check_response};
use authtime_proto::{AuthStatus, ClientConfig, Sample, build_request};
use authtime_wire::{Header, NtpTimestamp, Reader};

use crate::client_session_error::SessionError;
use crate::cookie_store::CookieJar;

/// Cookies a client wants to hold (RFC 8915 section 4.1.6: servers send 8).
pub(crate) const WANTED_COOKIES: usize = 8;

/// The system clock as an NTP timestamp (t1 and t4 of the exchange).
fn now() -> NtpTimestamp {
    match SystemTime::now().duration_since(UNIX_EPOCH) {
        Ok(d) => NtpTimestamp::from_unix(
            i64::try_from(d.as_secs()).unwrap_or(i64::MAX),
            d.subsec_nanos(),
        ),
        // A clock before 1970 is broken; era arithmetic still works from 0.
        Err(_) => NtpTimestamp::from_unix(0, 0),
    }
}

/// One protected request to `addr` and its reply. Replies that fail any
/// check are ignored while the timeout runs (anyone can send them).
pub(crate) fn exchange(
    jar: &mut CookieJar,
    addr: SocketAddr,
    timeout: Duration,
) -> Result<Sample, SessionError> {
    let algorithm =
        AeadAlgorithm::from_id(jar.aead_id).ok_or(SessionError::UnsupportedAead(jar.aead_id))?;
    let keys =
        SessionKeys::new(algorithm, &jar.c2s, &jar.s2c).map_err(SessionError::SessionKeys)?;
    let Some(cookie) = jar.cookies.pop() else {
        return Err(SessionError::NoCookieLeft);
    };
    let placeholders = WANTED_COOKIES.saturating_sub(jar.cookies.len() + 1).min(7);

    let mut wire_ts = [0u8; 8];
    getrandom::fill(&mut wire_ts).map_err(SessionError::Random)?;
    let transmit = NtpTimestamp::from_bits(u64::from_be_bytes(wire_ts));
    // The plain request's header: version 4, mode 3, our transmit timestamp.
    let mut plain = [0u8; 128];
    let (len, mut pending) = build_request(&ClientConfig::default(), transmit, None, &mut plain)
        .map_err(SessionError::PlainRequest)?;
    let header =
        Header::decode(&mut Reader::new(&plain[..len])).map_err(SessionError::PlainHeader)?;
    let mut rng = |buf: &mut [u8]| {
        if getrandom::fill(buf).is_err() {
            buf.fill(0);
        }
    };
    let mut request = [0u8; 1500];
    let nts_pending = authtime_nts::build_request(
        &header,
        &keys,
        &cookie,
        placeholders,
        &mut rng,
        &mut request,
    )
    .map_err(SessionError::BuildRequest)?;

    let local: SocketAddr = match addr {
        SocketAddr::V4(_) => (IpAddr::from([0u8; 4]), 0).into(),
        SocketAddr::V6(_) => (IpAddr::from([0u16; 8]), 0).into(),
    };
    let socket = UdpSocket::bind(local)
        .and_then(|s| s.connect(addr).map(|()| s))
        .map_err(|error| SessionError::Connect { addr, error })?;
    pending.set_send_time(now());
    socket
        .send(&request[..nts_pending.len()])
        .map_err(SessionError::Send)?;
    let deadline = Instant::now() + timeout;
    let mut reply = [0u8; 2048];
    let mut ignored = None;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() || socket.set_read_timeout(Some(left)).is_err() {
            break;
        }
        let n = match socket.recv(&mut reply) {
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionRefused => {
                return Err(SessionError::ConnectionRefused);
            }
            Err(_) => break,
        };
        let t4 = now();
        match check_response(&reply[..n], &nts_pending, &keys) {
            Ok(ClientOutcome::Time { header, cookies }) => {
                // The reply is authenticated: its fresh cookies are good
                // whatever its header says (an unsynchronized server still
                // hands them out, and a client polling it must not drain
                // its jar).
                jar.cookies.extend(cookies);
                jar.cookies.truncate(WANTED_COOKIES);
                let auth = AuthStatus::Nts {
                    aead_id: jar.aead_id,
                };
                return pending
                    .check_header(&header, t4, auth)
                    .map_err(SessionError::Reply);
            }
            Ok(ClientOutcome::Nak { .. }) => return Err(SessionError::Nak),
            Err(e) => ignored = Some(e),
        }
    }
    Err(match ignored {
        Some(reason) => SessionError::OnlyForgedReplies(reason),
        None => SessionError::Timeout(timeout),
    })
}
