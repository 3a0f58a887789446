//! The server: client request (mode 3) in, server reply (mode 4) out
//! (RFC 5905 sections 8 and 9.2, MACs of section 7.3 and RFC 8573).
//!
//! Handling is split into steps that [`Server::handle`] runs for one datagram
//! and [`Server::handle_batch`] runs for many, with the MAC work of each step
//! grouped per key: check (no key material), verify, plan the reply, compute
//! the reply's MAC, write it. Both paths share every step but the grouping,
//! so they give the same bytes and the same counts.

use authtime_keys::{KeyEntry, KeySet};
use authtime_mac::{Mac, Tag};
use authtime_wire::{
    HEADER_LEN, Header, KissCode, LeapIndicator, Mode, NtpTimestamp, Packet, PacketWriter, Trailer,
    WireError, Writer, digest_len_on_wire,
};

use crate::server_prepared::PreparedReply;
use crate::{DropReason, RateVerdict, Reaction, ServerConfig, ServerStats};

/// What the caller does with a datagram after [`Server::handle`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ServerAction {
    /// Send the first `len` bytes of the output buffer back to the sender.
    Send(usize),
    /// Send nothing.
    Drop(DropReason),
}

/// A stateless NTP server: every reply depends only on the request, the
/// timestamps given, the keys and the [`ServerConfig`].
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Server {
    config: ServerConfig,
}

/// A request that passed every check that needs no key material: `'r` is
/// the request's lifetime, `'k` the key set's.
#[derive(Debug, Clone, Copy)]
pub(crate) struct CheckedRequest<'r, 'k> {
    pub(crate) header: Header,
    pub(crate) auth: RequestAuth<'r, 'k>,
}

/// The request's authentication, before any MAC is computed.
#[derive(Debug, Clone, Copy)]
pub(crate) enum RequestAuth<'r, 'k> {
    /// No MAC.
    Plain,
    /// A MAC under a known key, of the right length, still to verify.
    Mac {
        key: &'k KeyEntry,
        authenticated: &'r [u8],
        digest: &'r [u8],
    },
    /// Failed without computing anything: unknown key, or a digest of the
    /// wrong length for the key.
    Failed(DropReason),
}

/// The kind of reply.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ReplyKind {
    /// Time service.
    Time,
    /// Kiss-o'-Death with this code.
    Kiss(KissCode),
    /// A time header with a crypto-NAK for a failed MAC.
    CryptoNak,
}

/// The reply to write, once the request's MAC is verified: everything but
/// its transmit timestamp (and, in interleaved mode, its origin).
#[derive(Debug, Clone, Copy)]
pub(crate) enum Plan<'k> {
    Drop(DropReason),
    Reply {
        /// The reply header, transmit timestamp still zero.
        header: Header,
        /// The request's header (its origin, receive and transmit
        /// timestamps decide an interleaved reply).
        request: Header,
        kind: ReplyKind,
        trailer: PlannedTrailer<'k>,
        /// The key id of a failed authentication answered with a crypto-NAK.
        failed_key: Option<u32>,
    },
}

#[derive(Debug, Clone, Copy)]
pub(crate) enum PlannedTrailer<'k> {
    None,
    CryptoNak,
    Mac(&'k KeyEntry),
}

/// Everything the counters need to know about one request's fate.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Outcome {
    pub(crate) action: ServerAction,
    pub(crate) failed_key: Option<u32>,
    pub(crate) crypto_nak: bool,
    pub(crate) authenticated: bool,
    pub(crate) rate_limited: bool,
}

impl Server {
    /// A server replying with `config`.
    #[must_use]
    pub fn new(config: ServerConfig) -> Self {
        Self { config }
    }

    /// The configuration replies are built from.
    #[must_use]
    pub fn config(&self) -> &ServerConfig {
        &self.config
    }

    /// Replaces the configuration (after a clock update or a reload).
    pub fn set_config(&mut self, config: ServerConfig) {
        self.config = config;
    }

    /// Handles one datagram: `recv_ts` is when it arrived, `tx_ts` the
    /// transmit timestamp to put in the reply (basic mode). A reply is
    /// written into `out` and is never longer than `request`. Never panics,
    /// never allocates. The same as [`Server::prepare`], then
    /// [`PreparedReply::finish`] in basic mode: a server that
    /// reads its clock for the transmit timestamp calls those two, reading
    /// it between them.
    pub fn handle(
        &self,
        request: &[u8],
        recv_ts: NtpTimestamp,
        tx_ts: NtpTimestamp,
        keys: &KeySet,
        out: &mut [u8],
        stats: &mut impl ServerStats,
    ) -> ServerAction {
        self.prepare(request, recv_ts, keys)
            .finish(tx_ts, None, out, stats)
    }

    /// Handles one datagram after the rate limiter's verdict: answered as by
    /// [`Server::handle`], answered with a RATE Kiss-o'-Death, or dropped.
    #[expect(
        clippy::too_many_arguments,
        reason = "handle's arguments and the verdict"
    )]
    pub fn handle_limited(
        &self,
        request: &[u8],
        verdict: RateVerdict,
        recv_ts: NtpTimestamp,
        tx_ts: NtpTimestamp,
        keys: &KeySet,
        out: &mut [u8],
        stats: &mut impl ServerStats,
    ) -> ServerAction {
        self.prepare_limited(request, verdict, recv_ts, keys)
            .finish(tx_ts, None, out, stats)
    }

    /// Answers a request with a Kiss-o'-Death carrying `code` (RFC 5905
    /// section 7.4: stratum 0, leap unsynchronized, the code as reference id),
    /// authenticated like a time reply when the request is. For deny lists
    /// (`DENY`, `RSTR`); rate limiting goes through [`Server::handle_limited`].
    #[expect(clippy::too_many_arguments, reason = "handle's arguments and the code")]
    pub fn kiss(
        &self,
        request: &[u8],
        code: KissCode,
        recv_ts: NtpTimestamp,
        tx_ts: NtpTimestamp,
        keys: &KeySet,
        out: &mut [u8],
        stats: &mut impl ServerStats,
    ) -> ServerAction {
        self.prepare_kiss(request, code, recv_ts, keys)
            .finish(tx_ts, None, out, stats)
    }

    /// Checks a request and verifies its MAC: everything but the reply's
    /// transmit timestamp and the reply's own MAC.
    pub(crate) fn prepare_one<'k>(
        &self,
        request: &[u8],
        kind: ReplyKind,
        rate_limited: bool,
        recv_ts: NtpTimestamp,
        keys: &'k KeySet,
    ) -> PreparedReply<'k> {
        let plan = match self.check_request(request, keys) {
            Err(reason) => Plan::Drop(reason),
            Ok(req) => {
                let verified = match req.auth {
                    RequestAuth::Mac {
                        key,
                        authenticated,
                        digest,
                    } => verify_digest(key.mac(), authenticated, digest),
                    RequestAuth::Plain | RequestAuth::Failed(_) => false,
                };
                self.plan(&req, verified, kind, recv_ts)
            }
        };
        PreparedReply::new(plan, request.len(), rate_limited)
    }

    /// Decodes and checks a request; looks its key up and checks the digest
    /// length, but computes no MAC.
    pub(crate) fn check_request<'r, 'k>(
        &self,
        request: &'r [u8],
        keys: &'k KeySet,
    ) -> Result<CheckedRequest<'r, 'k>, DropReason> {
        let packet = Packet::decode(request).map_err(DropReason::Malformed)?;
        let header = *packet.header();
        if !(1..=4).contains(&header.version) {
            return Err(DropReason::UnsupportedVersion {
                version: header.version,
            });
        }
        if header.mode != Mode::Client {
            return Err(DropReason::NotARequest { mode: header.mode });
        }
        let auth = match packet.trailer() {
            Trailer::None if self.config.require_authentication => {
                return Err(DropReason::Unauthenticated);
            }
            Trailer::None => RequestAuth::Plain,
            Trailer::CryptoNak => return Err(DropReason::CryptoNakInRequest),
            Trailer::Mac(mac) => match keys.get(mac.key_id) {
                None => RequestAuth::Failed(DropReason::UnknownKey { key_id: mac.key_id }),
                Some(key)
                    if mac.digest.len()
                        != digest_len_on_wire(header.version, key.mac().tag_len()) =>
                {
                    RequestAuth::Failed(DropReason::BadMac { key_id: mac.key_id })
                }
                Some(key) => RequestAuth::Mac {
                    key,
                    authenticated: packet.authenticated_bytes(),
                    digest: mac.digest,
                },
            },
        };
        Ok(CheckedRequest { header, auth })
    }

    /// The reply to a checked request whose MAC (if any) verified or not,
    /// its transmit timestamp still to come.
    pub(crate) fn plan<'k>(
        &self,
        req: &CheckedRequest<'_, 'k>,
        verified: bool,
        kind: ReplyKind,
        recv_ts: NtpTimestamp,
    ) -> Plan<'k> {
        let trailer = match req.auth {
            RequestAuth::Plain => PlannedTrailer::None,
            RequestAuth::Mac { key, .. } if verified => PlannedTrailer::Mac(key),
            RequestAuth::Mac { key, .. } => {
                return self.plan_failure(req, DropReason::BadMac { key_id: key.id() }, recv_ts);
            }
            RequestAuth::Failed(reason) => return self.plan_failure(req, reason, recv_ts),
        };
        Plan::Reply {
            header: self.reply_header(&req.header, kind, recv_ts, NtpTimestamp::ZERO),
            request: req.header,
            kind,
            trailer,
            failed_key: None,
        }
    }

    fn plan_failure<'k>(
        &self,
        req: &CheckedRequest<'_, 'k>,
        reason: DropReason,
        recv_ts: NtpTimestamp,
    ) -> Plan<'k> {
        match reason.reaction(self.config.auth_failure) {
            Reaction::Drop => Plan::Drop(reason),
            Reaction::CryptoNak => Plan::Reply {
                header: self.reply_header(
                    &req.header,
                    ReplyKind::Time,
                    recv_ts,
                    NtpTimestamp::ZERO,
                ),
                request: req.header,
                kind: ReplyKind::CryptoNak,
                trailer: PlannedTrailer::CryptoNak,
                failed_key: reason.failed_key_id(),
            },
        }
    }

    /// The header of a time reply to `request`, as [`Server::handle`] would
    /// write it: for protocols that build the rest of the reply themselves
    /// (NTS, RFC 8915 section 5.7).
    #[must_use]
    pub fn time_reply_header(
        &self,
        request: &Header,
        recv_ts: NtpTimestamp,
        tx_ts: NtpTimestamp,
    ) -> Header {
        self.reply_header(request, ReplyKind::Time, recv_ts, tx_ts)
    }

    /// The reply header: the request's version and poll, the request's
    /// transmit timestamp as origin (RFC 5905 section 9.2, fast_xmit).
    ///
    /// The lowest bit of the receive timestamp is set and that of the
    /// transmit timestamp cleared (2^-32 s, a quarter of a nanosecond, below
    /// any clock's precision), as chrony does: a request whose origin has
    /// that bit set names one of this server's receive timestamps, which is
    /// how an interleaved request (RFC 9769) is told from a basic one without
    /// saving the receive timestamp of every reply.
    fn reply_header(
        &self,
        request: &Header,
        kind: ReplyKind,
        recv_ts: NtpTimestamp,
        tx_ts: NtpTimestamp,
    ) -> Header {
        let c = &self.config;
        let (leap, stratum, reference_id) = match kind {
            ReplyKind::Time | ReplyKind::CryptoNak => (c.leap, c.stratum, c.reference_id),
            ReplyKind::Kiss(code) => (LeapIndicator::Unsynchronized, 0, code.into()),
        };
        Header {
            leap,
            version: request.version,
            mode: Mode::Server,
            stratum,
            poll: request.poll,
            precision: c.precision,
            root_delay: c.root_delay,
            root_dispersion: c.root_dispersion,
            reference_id,
            reference_ts: c.reference_ts,
            origin_ts: request.transmit_ts,
            receive_ts: mark_receive(recv_ts),
            transmit_ts: mark_transmit(tx_ts),
        }
    }
}

/// A receive timestamp as this server sends it: lowest bit set.
#[must_use]
pub(crate) const fn mark_receive(ts: NtpTimestamp) -> NtpTimestamp {
    NtpTimestamp::from_bits(ts.to_bits() | 1)
}

/// A transmit timestamp as this server sends it: lowest bit clear.
#[must_use]
pub(crate) const fn mark_transmit(ts: NtpTimestamp) -> NtpTimestamp {
    NtpTimestamp::from_bits(ts.to_bits() & !1)
}

/// Whether `digest` is the MAC of `authenticated` under `mac`, truncated to
/// the digest's length, compared in constant time.
pub(crate) fn verify_digest(mac: &dyn Mac, authenticated: &[u8], digest: &[u8]) -> bool {
    mac.compute(&[], authenticated)
        .ok()
        .is_some_and(|tag| truncated_matches(&tag, digest))
}

/// Constant-time comparison of `digest` with the first bytes of `tag`.
pub(crate) fn truncated_matches(tag: &Tag, digest: &[u8]) -> bool {
    tag.as_bytes()
        .get(..digest.len())
        .is_some_and(|prefix| authtime_mac::ct_bytes_eq(prefix, digest))
}

/// The 48 bytes of `header`.
pub(crate) fn encode_header(header: &Header) -> [u8; HEADER_LEN] {
    let mut bytes = [0u8; HEADER_LEN];
    // A header the server builds always has a valid version and fits.
    let _ = header.encode(&mut Writer::new(&mut bytes));
    bytes
}

/// The MAC of an encoded reply header, `None` if the MAC refuses (never for the
/// key types of key files, which take no nonce).
pub(crate) fn reply_tag(mac: &dyn Mac, encoded_header: &[u8]) -> Option<Tag> {
    mac.compute(&[], encoded_header).ok()
}

/// Writes a planned reply (with its tag, for a MAC'd one) into `out`.
pub(crate) fn write_planned(
    plan: &Plan<'_>,
    tag: Option<&Tag>,
    request_len: usize,
    rate_limited: bool,
    out: &mut [u8],
) -> Outcome {
    let mut outcome = Outcome {
        action: ServerAction::Drop(DropReason::OutputTooSmall),
        failed_key: None,
        crypto_nak: false,
        authenticated: false,
        rate_limited,
    };
    match *plan {
        Plan::Drop(reason) => {
            outcome.failed_key = reason.failed_key_id();
            outcome.action = ServerAction::Drop(reason);
        }
        Plan::Reply {
            header,
            trailer,
            failed_key,
            ..
        } => {
            outcome.failed_key = failed_key;
            outcome.action = match write_reply(out, &header, trailer, tag, request_len) {
                Ok(len) => {
                    outcome.authenticated = matches!(trailer, PlannedTrailer::Mac(_));
                    outcome.crypto_nak = matches!(trailer, PlannedTrailer::CryptoNak);
                    ServerAction::Send(len)
                }
                Err(reason) => ServerAction::Drop(reason),
            };
        }
    }
    outcome
}

fn write_reply(
    out: &mut [u8],
    header: &Header,
    trailer: PlannedTrailer<'_>,
    tag: Option<&Tag>,
    request_len: usize,
) -> Result<usize, DropReason> {
    let writer = PacketWriter::new(out, header).map_err(write_error)?;
    let len = match trailer {
        PlannedTrailer::None => writer.finish(),
        PlannedTrailer::CryptoNak => writer.finish_with_crypto_nak(),
        PlannedTrailer::Mac(key) => {
            let tag = tag.ok_or(DropReason::KeyUnusable { key_id: key.id() })?;
            let digest_len = digest_len_on_wire(header.version, tag.len());
            writer.finish_with_mac(
                key.id(),
                tag.as_bytes().get(..digest_len).unwrap_or_default(),
            )
        }
    }
    .map_err(write_error)?;
    if len > request_len {
        return Err(DropReason::ReplyLargerThanRequest);
    }
    Ok(len)
}

fn write_error(e: WireError) -> DropReason {
    match e {
        WireError::BufferTooSmall { .. } => DropReason::OutputTooSmall,
        other => DropReason::Malformed(other),
    }
}

/// Reports one request's fate to the counters, in the documented order.
pub(crate) fn report(stats: &mut impl ServerStats, outcome: &Outcome) {
    stats.received();
    if outcome.rate_limited {
        stats.rate_limited();
    }
    if let Some(key_id) = outcome.failed_key {
        stats.mac_failure(key_id);
    }
    match outcome.action {
        ServerAction::Send(_) => {
            if outcome.crypto_nak {
                stats.crypto_nak();
            }
            stats.answered(outcome.authenticated);
        }
        ServerAction::Drop(reason) => stats.dropped(&reason),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use authtime_keys::{KeyMaterial, KeyType};

    #[test]
    fn truncated_comparison_uses_the_tag_prefix() {
        let tag = Tag::from_slice(&[1, 2, 3, 4, 5]);
        assert!(truncated_matches(&tag, &[1, 2, 3]));
        assert!(truncated_matches(&tag, &[1, 2, 3, 4, 5]));
        assert!(!truncated_matches(&tag, &[1, 2, 4]));
        assert!(!truncated_matches(&tag, &[1, 2, 3, 4, 5, 6]));
    }

    #[test]
    fn sha256_digests_verify_truncated_to_20_bytes() {
        let key = KeyEntry::new(&KeyMaterial::new(4, KeyType::Sha256, &[4; 32])).expect("key");
        let msg = [0x23u8; 48];
        let tag = key.mac().compute(&[], &msg).expect("tag");
        assert!(verify_digest(key.mac(), &msg, &tag.as_bytes()[..20]));
        assert!(verify_digest(key.mac(), &msg, tag.as_bytes()));
        assert!(!verify_digest(key.mac(), &msg[..47], &tag.as_bytes()[..20]));
    }

    #[test]
    fn reply_header_copies_version_poll_and_transmit() {
        let mut request = Header::new(Mode::Client);
        request.version = 3;
        request.poll = 10;
        request.transmit_ts = NtpTimestamp::from_bits(42);
        let server = Server::default();
        let recv = NtpTimestamp::from_bits(7);
        let tx = NtpTimestamp::from_bits(8);
        let h = server.reply_header(&request, ReplyKind::Time, recv, tx);
        assert_eq!((h.version, h.poll, h.mode), (3, 10, Mode::Server));
        // Receive marked (lowest bit set), transmit marked (cleared).
        assert_eq!(
            (h.origin_ts, h.receive_ts, h.transmit_ts),
            (
                request.transmit_ts,
                NtpTimestamp::from_bits(7),
                NtpTimestamp::from_bits(8)
            )
        );
        let kiss = server.reply_header(&request, ReplyKind::Kiss(KissCode::RATE), recv, tx);
        assert_eq!(
            (kiss.stratum, kiss.leap),
            (0, LeapIndicator::Unsynchronized)
        );
        assert_eq!(kiss.kiss_code(), Some(KissCode::RATE));
        assert_eq!(encode_header(&h)[0], 0x1c);
    }
}
