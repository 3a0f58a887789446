//! The client side of one exchange: build a request, check the response, and
//! compute offset, delay and dispersion (RFC 5905 section 8).

use authtime_keys::{KeyEntry, KeyType};
use authtime_wire::{
    Header, LeapIndicator, Mode, NtpDuration, NtpTimestamp, Packet, PacketWriter, ReferenceId,
    Trailer, WireError, digest_len_on_wire,
};

use crate::ClientError;
use crate::server::verify_digest;

/// Frequency tolerance PHI of RFC 5905 section 7.2: 15 ppm.
const PHI: f64 = 15e-6;
/// MINDISP of RFC 5905 section 7.2: the least delay a root distance counts, 10 ms.
const MIN_DISPERSION: f64 = 0.01;
/// MAXDIST of RFC 5905 section 7.2: a server whose root distance exceeds
/// 1.5 s is unfit (section 11.2.1, `fit()`), whatever its offset.
pub const MAX_ROOT_DISTANCE: f64 = 1.5;
const NTP_UNITS_PER_SECOND: f64 = 4_294_967_296.0;

/// What a client puts into its requests.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ClientConfig {
    /// NTP version of the request, 1 to 4 (the server answers in kind).
    pub version: u8,
    /// Poll exponent announced to the server.
    pub poll: i8,
    /// log2 of the local clock's precision in seconds, for the dispersion.
    pub precision: i8,
}

impl Default for ClientConfig {
    /// NTPv4, poll 2^6 s, precision 2^-20 s.
    fn default() -> Self {
        Self {
            version: 4,
            poll: 6,
            precision: -20,
        }
    }
}

/// How a sample was authenticated.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AuthStatus {
    /// No MAC was asked for or given.
    Unauthenticated,
    /// The reply's MAC verified under this symmetric key.
    SymmetricKey {
        /// The key id.
        key_id: u32,
        /// Its type.
        key_type: KeyType,
    },
    /// The reply was authenticated by NTS (RFC 8915) under this AEAD.
    Nts {
        /// The AEAD's IANA id.
        aead_id: u16,
    },
}

/// One measurement of the server's clock against ours (RFC 5905 section 8).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Sample {
    /// Server clock minus our clock, in seconds: ((T2 − T1) + (T3 − T4)) / 2.
    pub offset: f64,
    /// Round-trip delay in seconds: (T4 − T1) − (T3 − T2). Not clamped: a small
    /// negative value means the two clocks' rates or precisions disagree.
    pub delay: f64,
    /// Dispersion of this sample in seconds: both precisions plus PHI times
    /// the round trip.
    pub dispersion: f64,
    /// The server's stratum.
    pub stratum: u8,
    /// The server's reference id.
    pub reference_id: ReferenceId,
    /// The server's leap indicator.
    pub leap: LeapIndicator,
    /// The server's precision exponent.
    pub precision: i8,
    /// The server's root delay in seconds.
    pub root_delay: f64,
    /// The server's root dispersion in seconds.
    pub root_dispersion: f64,
    /// Root distance of this sample in seconds: RFC 5905 section A.5.5.2
    /// `root_dist()` for one fresh sample, that is max(MINDISP, root delay
    /// plus delay) / 2, plus root dispersion, plus dispersion. Jitter (one
    /// sample has none) and the PHI aging since the sample (zero at T4) add
    /// nothing. Never above [`MAX_ROOT_DISTANCE`] in a sample the client
    /// returns.
    pub root_distance: f64,
    /// The reply's version.
    pub version: u8,
    /// The server's transmit timestamp (T3).
    pub server_transmit: NtpTimestamp,
    /// How the reply was authenticated.
    pub auth: AuthStatus,
}

/// A request on its way: what the response must match.
#[derive(Debug, Clone, Copy)]
pub struct PendingRequest<'k> {
    /// The transmit timestamp on the wire, which the reply must echo as origin.
    transmit_ts: NtpTimestamp,
    /// T1: when the request left, by our clock.
    send_time: NtpTimestamp,
    key: Option<&'k KeyEntry>,
    precision: i8,
}

/// Writes a client request (mode 3) into `out` and returns its length and what
/// the response must match. `transmit_ts` goes on the wire and, until
/// [`PendingRequest::set_send_time`] says otherwise, is also T1. With `key`,
/// the request carries a MAC under it (digests truncated to 20 bytes in NTPv4).
///
/// Apart from version, mode, poll and transmit timestamp, every header field is
/// zero, so the request reveals nothing about the client's clock.
///
/// # Errors
/// [`ClientError::OutputTooSmall`].
pub fn build_request<'k>(
    config: &ClientConfig,
    transmit_ts: NtpTimestamp,
    key: Option<&'k KeyEntry>,
    out: &mut [u8],
) -> Result<(usize, PendingRequest<'k>), ClientError> {
    let len = write_request(
        config,
        NtpTimestamp::ZERO,
        NtpTimestamp::ZERO,
        transmit_ts,
        key,
        out,
    )?;
    Ok((
        len,
        PendingRequest {
            transmit_ts,
            send_time: transmit_ts,
            key,
            precision: config.precision,
        },
    ))
}

/// Writes a client request (mode 3) with the given origin, receive and
/// transmit timestamps, MAC'd under `key` when there is one; every other
/// header field but version and poll is zero.
pub(crate) fn write_request(
    config: &ClientConfig,
    origin_ts: NtpTimestamp,
    receive_ts: NtpTimestamp,
    transmit_ts: NtpTimestamp,
    key: Option<&KeyEntry>,
    out: &mut [u8],
) -> Result<usize, ClientError> {
    let mut header = Header::new(Mode::Client);
    header.version = config.version;
    header.poll = config.poll;
    header.origin_ts = origin_ts;
    header.receive_ts = receive_ts;
    header.transmit_ts = transmit_ts;
    let to_client_error = |e: WireError| match e {
        WireError::BufferTooSmall { .. } => ClientError::OutputTooSmall,
        other => ClientError::Malformed(other),
    };
    let writer = PacketWriter::new(out, &header).map_err(to_client_error)?;
    match key {
        None => writer.finish(),
        Some(key) => {
            let tag = key
                .mac()
                .compute(&[], writer.authenticated_bytes())
                .map_err(|_| ClientError::BadMac { key_id: key.id() })?;
            let digest_len = digest_len_on_wire(header.version, tag.len());
            writer.finish_with_mac(
                key.id(),
                tag.as_bytes().get(..digest_len).unwrap_or_default(),
            )
        }
    }
    .map_err(to_client_error)
}

impl PendingRequest<'_> {
    /// Sets T1, when the request actually left (a kernel transmit timestamp,
    /// or the clock when the wire's transmit timestamp was random).
    pub fn set_send_time(&mut self, t1: NtpTimestamp) {
        self.send_time = t1;
    }

    /// The transmit timestamp on the wire.
    #[must_use]
    pub fn transmit_ts(&self) -> NtpTimestamp {
        self.transmit_ts
    }

    /// Checks `response`, received at `recv_time` (T4), and computes the
    /// sample: mode 4, origin timestamp equal to our transmit timestamp, the
    /// MAC under our key (constant-time) when we sent one, no Kiss-o'-Death,
    /// a synchronized server, consistent timestamps and a root distance of
    /// at most [`MAX_ROOT_DISTANCE`].
    ///
    /// # Errors
    /// The first check that fails; [`ClientError::reaction`] says whether to
    /// keep waiting.
    pub fn process_response(
        &self,
        response: &[u8],
        recv_time: NtpTimestamp,
    ) -> Result<Sample, ClientError> {
        let packet = Packet::decode(response).map_err(ClientError::Malformed)?;
        let h = *packet.header();
        if h.mode != Mode::Server {
            return Err(ClientError::NotAServerReply { mode: h.mode });
        }
        if h.origin_ts != self.transmit_ts {
            return Err(ClientError::OriginMismatch);
        }
        let auth = self.check_mac(&packet)?;
        self.check_header(&h, recv_time, auth)
    }

    /// The checks and the sample of [`PendingRequest::process_response`] for
    /// a header whose packet was authenticated by other means (NTS, RFC 8915
    /// section 5.7): mode 4, origin equal to our transmit timestamp, no
    /// Kiss-o'-Death, a synchronized server, consistent timestamps, a root
    /// distance of at most [`MAX_ROOT_DISTANCE`].
    ///
    /// # Errors
    /// The first check that fails.
    pub fn check_header(
        &self,
        h: &Header,
        recv_time: NtpTimestamp,
        auth: AuthStatus,
    ) -> Result<Sample, ClientError> {
        if h.mode != Mode::Server {
            return Err(ClientError::NotAServerReply { mode: h.mode });
        }
        if h.origin_ts != self.transmit_ts {
            return Err(ClientError::OriginMismatch);
        }
        let times = ExchangeTimes {
            t1: self.send_time,
            t2: h.receive_ts,
            t3: h.transmit_ts,
            t4: recv_time,
        };
        judge_reply(h, &times, self.precision, auth)
    }

    fn check_mac(&self, packet: &Packet<'_>) -> Result<AuthStatus, ClientError> {
        check_mac(self.key, packet)
    }
}

/// The four timestamps of one measurement (RFC 5905 section 8): T1 when the
/// request left and T4 when the reply arrived, by our clock; T2 when the
/// request arrived and T3 when the reply left, by the server's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ExchangeTimes {
    pub(crate) t1: NtpTimestamp,
    pub(crate) t2: NtpTimestamp,
    pub(crate) t3: NtpTimestamp,
    pub(crate) t4: NtpTimestamp,
}

/// The reply's MAC against the key of the request (constant-time), as RFC
/// 5905 section 8's test 5 asks, for basic and interleaved replies alike.
pub(crate) fn check_mac(
    key: Option<&KeyEntry>,
    packet: &Packet<'_>,
) -> Result<AuthStatus, ClientError> {
    match (key, packet.trailer()) {
        (None, Trailer::None) => Ok(AuthStatus::Unauthenticated),
        (None, _) => Err(ClientError::UnexpectedMac),
        (Some(_), Trailer::CryptoNak) => Err(ClientError::CryptoNak),
        (Some(_), Trailer::None) => Err(ClientError::MissingMac),
        (Some(key), Trailer::Mac(mac)) => {
            if mac.key_id != key.id() {
                return Err(ClientError::WrongKeyId {
                    expected: key.id(),
                    got: mac.key_id,
                });
            }
            let expected_len = digest_len_on_wire(packet.header().version, key.mac().tag_len());
            if mac.digest.len() != expected_len
                || !verify_digest(key.mac(), packet.authenticated_bytes(), mac.digest)
            {
                return Err(ClientError::BadMac { key_id: key.id() });
            }
            Ok(AuthStatus::SymmetricKey {
                key_id: key.id(),
                key_type: key.key_type(),
            })
        }
    }
}

/// What a reply that answers our request (mode and origin checked) gives:
/// no Kiss-o'-Death, a synchronized server, consistent timestamps, a root
/// distance of at most [`MAX_ROOT_DISTANCE`], then the sample of `times`.
pub(crate) fn judge_reply(
    h: &Header,
    times: &ExchangeTimes,
    client_precision: i8,
    auth: AuthStatus,
) -> Result<Sample, ClientError> {
    // chrony, NTPsec and authtime announce an unsynchronized clock with
    // leap 3, stratum 0 and reference id 0; a kiss code is ASCII.
    if let Some(code) = h.kiss_code() {
        return Err(ClientError::KissOfDeath {
            code,
            authenticated: auth != AuthStatus::Unauthenticated,
        });
    }
    if h.leap == LeapIndicator::Unsynchronized || h.stratum == 0 || h.stratum >= 16 {
        return Err(ClientError::Unsynchronized {
            leap: h.leap,
            stratum: h.stratum,
            auth,
        });
    }
    let sample = sample(h, times, client_precision, auth)?;
    // RFC 5905 section 11.2.1: a root distance above MAXDIST makes the
    // server unfit (NTPsec sends 7.95 s right after it syncs to its
    // local clock). Not `>=`: exactly 1.5 s is still fit.
    if sample.root_distance > MAX_ROOT_DISTANCE || sample.root_distance.is_nan() {
        return Err(ClientError::RootDistanceTooLarge {
            root_distance: NtpDuration::from_seconds_f64(sample.root_distance),
            root_delay: h.root_delay,
            root_dispersion: h.root_dispersion,
            auth,
        });
    }
    Ok(sample)
}

/// RFC 5905 section 8's offset, delay and dispersion. Each difference of two
/// timestamps is era-safe (64-bit wrapping, RFC 5905 section 6); sums are
/// taken in i128 so nothing overflows.
fn sample(
    h: &Header,
    times: &ExchangeTimes,
    client_precision: i8,
    auth: AuthStatus,
) -> Result<Sample, ClientError> {
    let ExchangeTimes { t1, t2, t3, t4 } = *times;
    if t2.is_zero() || t3.is_zero() {
        return Err(ClientError::InvalidTimestamps);
    }
    let diff = |a: NtpTimestamp, b: NtpTimestamp| i128::from(a.duration_since(b).to_bits());
    let round_trip = diff(t4, t1);
    let server_time = diff(t3, t2);
    if round_trip < 0 || server_time < 0 {
        return Err(ClientError::InvalidTimestamps);
    }
    let offset = (diff(t2, t1) + diff(t3, t4)) as f64 / 2.0 / NTP_UNITS_PER_SECOND;
    let delay = (round_trip - server_time) as f64 / NTP_UNITS_PER_SECOND;
    let dispersion = 2f64.powi(i32::from(h.precision))
        + 2f64.powi(i32::from(client_precision))
        + PHI * (round_trip as f64 / NTP_UNITS_PER_SECOND);
    let root_delay = h.root_delay.as_seconds_f64();
    let root_dispersion = h.root_dispersion.as_seconds_f64();
    let root_distance =
        (root_delay + delay).max(MIN_DISPERSION) / 2.0 + root_dispersion + dispersion;
    Ok(Sample {
        offset,
        delay,
        dispersion,
        stratum: h.stratum,
        reference_id: h.reference_id,
        leap: h.leap,
        precision: h.precision,
        root_delay,
        root_dispersion,
        root_distance,
        version: h.version,
        server_transmit: t3,
        auth,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ClientReaction;
    use crate::{AuthFailurePolicy, NoStats, Server, ServerAction, ServerConfig};
    use authtime_keys::{KeyMaterial, KeySet};
    use authtime_wire::{KissCode, NtpShort};

    fn keys() -> KeySet {
        KeySet::new(&[
            KeyMaterial::new(1, KeyType::Md5, &[1; 16]),
            KeyMaterial::new(2, KeyType::Sha1, &[2; 20]),
            KeyMaterial::new(3, KeyType::Aes128Cmac, &[3; 16]),
            KeyMaterial::new(4, KeyType::Sha256, &[4; 32]),
        ])
        .expect("keys")
    }

    fn secs(s: f64) -> NtpDuration {
        NtpDuration::from_seconds_f64(s)
    }

    /// One exchange: client at `t1`, server clock `server_ahead` seconds ahead,
    /// `one_way` seconds each way, `server_hold` seconds in the server.
    fn exchange(
        t1: NtpTimestamp,
        server_ahead: f64,
        key: Option<&KeyEntry>,
        server_keys: &KeySet,
        config: ServerConfig,
    ) -> Result<Sample, ClientError> {
        let (one_way, server_hold) = (0.010, 0.001);
        let mut req = [0u8; 128];
        let (n, pending) =
            build_request(&ClientConfig::default(), t1, key, &mut req).expect("request");
        let t2 = t1.wrapping_add(secs(one_way + server_ahead));
        let t3 = t2.wrapping_add(secs(server_hold));
        let t4 = t1.wrapping_add(secs(2.0 * one_way + server_hold));
        let mut out = [0u8; 128];
        let server = Server::new(config);
        match server.handle(&req[..n], t2, t3, server_keys, &mut out, &mut NoStats) {
            ServerAction::Send(len) => pending.process_response(&out[..len], t4),
            ServerAction::Drop(reason) => panic!("server dropped: {reason}"),
        }
    }

    #[test]
    fn offset_and_delay_with_every_key_type() {
        let keys = keys();
        let t1 = NtpTimestamp::from_unix(1_700_000_000, 0);
        for id in [None, Some(1), Some(2), Some(3), Some(4)] {
            let key = id.and_then(|id| keys.get(id));
            let s = exchange(t1, 0.25, key, &keys, ServerConfig::default()).expect("sample");
            assert!((s.offset - 0.25).abs() < 1e-6, "{s:?}");
            assert!((s.delay - 0.020).abs() < 1e-6, "{s:?}");
            assert!(s.dispersion > 0.0 && s.dispersion < 1e-5);
            assert_eq!(s.stratum, 2);
            match (id, s.auth) {
                (None, AuthStatus::Unauthenticated) => {}
                (Some(id), AuthStatus::SymmetricKey { key_id, .. }) => assert_eq!(id, key_id),
                other => panic!("{other:?}"),
            }
        }
    }

    #[test]
    fn offset_is_right_across_the_ntp_era_boundary() {
        let keys = keys();
        // T1 one millisecond before 2036-02-07T06:28:16Z; T2..T4 in era 1.
        let t1 = NtpTimestamp::from_parts(u32::MAX, u32::MAX - 4_294_967);
        let s = exchange(t1, -3.5, keys.get(3), &keys, ServerConfig::default()).expect("sample");
        assert!((s.offset + 3.5).abs() < 1e-6, "{s:?}");
        assert!((s.delay - 0.020).abs() < 1e-6, "{s:?}");
    }

    #[test]
    fn wrong_key_and_crypto_nak_are_reported() {
        let keys = keys();
        let other =
            KeySet::new(&[KeyMaterial::new(3, KeyType::Aes128Cmac, &[9; 16])]).expect("keys");
        let t1 = NtpTimestamp::from_unix(1_700_000_000, 0);
        // The server has a different key 3: with the crypto-NAK policy, the
        // client learns it.
        let nak = ServerConfig {
            auth_failure: AuthFailurePolicy::CryptoNak,
            ..ServerConfig::default()
        };
        let e = exchange(t1, 0.0, other.get(3), &keys, nak).expect_err("nak");
        assert_eq!(e, ClientError::CryptoNak);
        // A reply under another key than ours.
        let mut req = [0u8; 128];
        let (n, pending) =
            build_request(&ClientConfig::default(), t1, keys.get(1), &mut req).expect("req");
        let mut out = [0u8; 128];
        let ServerAction::Send(len) =
            Server::default().handle(&req[..n], t1, t1, &keys, &mut out, &mut NoStats)
        else {
            panic!("dropped")
        };
        out[len - 1] ^= 1;
        assert_eq!(
            pending.process_response(&out[..len], t1),
            Err(ClientError::BadMac { key_id: 1 })
        );
        out[51] = 2;
        assert_eq!(
            pending.process_response(&out[..len], t1),
            Err(ClientError::WrongKeyId {
                expected: 1,
                got: 2
            })
        );
        assert_eq!(
            pending.process_response(&out[..48], t1),
            Err(ClientError::MissingMac)
        );
    }

    #[test]
    fn bogus_replies_are_ignored() {
        let keys = keys();
        let t1 = NtpTimestamp::from_unix(1_700_000_000, 0);
        let mut req = [0u8; 48];
        let (n, pending) =
            build_request(&ClientConfig::default(), t1, None, &mut req).expect("req");
        assert_eq!(n, 48);
        let mut out = [0u8; 48];
        let ServerAction::Send(len) =
            Server::default().handle(&req, t1, t1, &keys, &mut out, &mut NoStats)
        else {
            panic!("dropped")
        };
        let mut replayed = out;
        replayed[24..32].copy_from_slice(&[0; 8]);
        assert_eq!(
            pending.process_response(&replayed, t1),
            Err(ClientError::OriginMismatch)
        );
        assert_eq!(
            pending.process_response(&req, t1),
            Err(ClientError::NotAServerReply { mode: Mode::Client })
        );
        assert!(matches!(
            pending.process_response(&out[..47], t1),
            Err(ClientError::Malformed(_))
        ));
        let earlier = t1.wrapping_add(secs(-1.0));
        assert_eq!(
            pending.process_response(&out[..len], earlier),
            Err(ClientError::InvalidTimestamps)
        );
        let mut unsync = out;
        unsync[0] |= 0xc0;
        assert_eq!(
            pending.process_response(&unsync, t1),
            Err(ClientError::Unsynchronized {
                leap: LeapIndicator::Unsynchronized,
                stratum: 2,
                auth: AuthStatus::Unauthenticated
            })
        );
        assert!(pending.process_response(&out[..len], t1).is_ok());
    }

    /// A plain reply from our server with its root delay and root
    /// dispersion replaced (a crafted reply: bytes 4..12 are not covered by
    /// anything without a key), 1 ms round trip.
    fn reply_with_root(
        root_delay: f64,
        root_dispersion: f64,
    ) -> (PendingRequest<'static>, [u8; 48], NtpTimestamp) {
        let t1 = NtpTimestamp::from_unix(1_700_000_000, 0);
        let mut req = [0u8; 48];
        let (_, pending) =
            build_request(&ClientConfig::default(), t1, None, &mut req).expect("req");
        let t2 = t1.wrapping_add(secs(0.0005));
        let mut out = [0u8; 48];
        let ServerAction::Send(48) =
            Server::default().handle(&req, t2, t2, &keys(), &mut out, &mut NoStats)
        else {
            panic!("no 48-byte reply")
        };
        out[4..8].copy_from_slice(
            &NtpShort::from_seconds_f64(root_delay)
                .to_bits()
                .to_be_bytes(),
        );
        out[8..12].copy_from_slice(
            &NtpShort::from_seconds_f64(root_dispersion)
                .to_bits()
                .to_be_bytes(),
        );
        (pending, out, t1.wrapping_add(secs(0.001)))
    }

    #[test]
    fn root_distance_within_maxdist_is_fit() {
        // RFC 5905 section 7.2: MAXDIST 1.5 s. 1.49 s of root dispersion
        // plus max(MINDISP, 1 ms) / 2 = 5 ms is 1.495 s.
        let (pending, reply, t4) = reply_with_root(0.0, 1.49);
        let s = pending.process_response(&reply, t4).expect("fit");
        assert!((s.root_distance - 1.495).abs() < 1e-4, "{s:?}");
        // Root delay counts half.
        let (pending, reply, t4) = reply_with_root(0.5, 1.2);
        let s = pending.process_response(&reply, t4).expect("fit");
        assert!((s.root_distance - 1.4505).abs() < 1e-4, "{s:?}");
    }

    #[test]
    fn root_distance_beyond_maxdist_is_unfit() {
        for (root_delay, root_dispersion) in [(0.0, 1.51), (0.6, 1.3), (0.0, 7.95)] {
            let (pending, reply, t4) = reply_with_root(root_delay, root_dispersion);
            let e = pending.process_response(&reply, t4).expect_err("unfit");
            let ClientError::RootDistanceTooLarge {
                root_distance,
                root_dispersion: sent,
                auth,
                ..
            } = e
            else {
                panic!("{e:?}")
            };
            let expected = (root_delay + 0.001_f64).max(0.01) / 2.0 + root_dispersion;
            assert!(
                (root_distance.as_seconds_f64() - expected).abs() < 1e-3,
                "{e:?}"
            );
            assert!((sent.as_seconds_f64() - root_dispersion).abs() < 1e-4);
            assert_eq!(auth, AuthStatus::Unauthenticated);
            assert_eq!(e.reaction(), ClientReaction::DiscardSample);
            assert!(e.to_string().contains("exceeds 1.5 s"), "{e}");
        }
    }

    #[test]
    fn kiss_of_death_is_reported_with_its_authentication() {
        let keys = keys();
        let t1 = NtpTimestamp::from_unix(1_700_000_000, 0);
        let mut req = [0u8; 68];
        let (n, pending) =
            build_request(&ClientConfig::default(), t1, keys.get(1), &mut req).expect("req");
        let mut out = [0u8; 68];
        let ServerAction::Send(len) = Server::default().kiss(
            &req[..n],
            KissCode::RATE,
            t1,
            t1,
            &keys,
            &mut out,
            &mut NoStats,
        ) else {
            panic!("dropped")
        };
        assert_eq!(
            pending.process_response(&out[..len], t1),
            Err(ClientError::KissOfDeath {
                code: KissCode::RATE,
                authenticated: true
            })
        );
    }

    #[test]
    fn requests_reveal_nothing_but_version_mode_poll_and_transmit() {
        let t1 = NtpTimestamp::from_parts(0x0102_0304, 0x0506_0708);
        let mut req = [0u8; 48];
        build_request(&ClientConfig::default(), t1, None, &mut req).expect("req");
        let mut expected = [0u8; 48];
        expected[0] = 0x23;
        expected[2] = 6;
        expected[40..].copy_from_slice(&[1, 2, 3, 4, 5, 6, 7, 8]);
        assert_eq!(req, expected);
        assert_eq!(
            build_request(&ClientConfig::default(), t1, None, &mut [0u8; 47]).map(|r| r.0),
            Err(ClientError::OutputTooSmall)
        );
    }
}
