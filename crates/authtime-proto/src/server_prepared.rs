//! A reply in two steps, so that its transmit timestamp is read as late as
//! possible: [`Server::prepare`] does everything that does not depend on
//! when the reply leaves (decode, checks, the request's MAC, the reply
//! header), and [`PreparedReply::finish`] takes the transmit timestamp,
//! computes the reply's MAC over the header that carries it, and writes the
//! reply. A caller reads its clock between the two, just before it sends.
//!
//! Interleaved mode (RFC 9769 section 2) is decided in `finish` too: a
//! request that names one of this server's receive timestamps
//! ([`PreparedReply::interleaved_origin`]) gets, when the caller still holds
//! the transmit time of the reply that carried it, that transmit time as its
//! transmit timestamp and the request's receive timestamp as its origin.

use authtime_keys::KeySet;
use authtime_wire::{Header, KissCode, NtpTimestamp};

use crate::server::{
    Plan, PlannedTrailer, ReplyKind, encode_header, mark_transmit, reply_tag, report, write_planned,
};
use crate::{DropReason, RateVerdict, Server, ServerAction, ServerStats};

/// A reply planned up to the moment it leaves. `'k` is the key set's
/// lifetime (the reply's MAC key).
#[derive(Debug, Clone, Copy)]
pub struct PreparedReply<'k> {
    plan: Plan<'k>,
    request_len: usize,
    rate_limited: bool,
}

impl<'k> PreparedReply<'k> {
    pub(crate) fn new(plan: Plan<'k>, request_len: usize, rate_limited: bool) -> Self {
        Self {
            plan,
            request_len,
            rate_limited,
        }
    }

    /// A placeholder that [`PreparedReply::finish`] drops, for arrays filled later.
    #[must_use]
    pub fn empty() -> Self {
        Self::new(Plan::Drop(DropReason::OutputTooSmall), 0, false)
    }

    /// Whether `finish` will write a reply (time, Kiss-o'-Death or
    /// crypto-NAK) rather than drop the request.
    #[must_use]
    pub fn is_reply(&self) -> bool {
        matches!(self.plan, Plan::Reply { .. })
    }

    /// Whether `finish` will write a time reply (not a Kiss-o'-Death, not a
    /// crypto-NAK): the replies a server counts by mode.
    #[must_use]
    pub fn is_time_reply(&self) -> bool {
        matches!(
            self.plan,
            Plan::Reply {
                kind: ReplyKind::Time,
                ..
            }
        )
    }

    /// The receive timestamp the reply carries, as sent (lowest bit set):
    /// the key under which a caller saves the reply's transmit time for an
    /// interleaved request that names it. `None` for a dropped request.
    #[must_use]
    pub fn receive_ts(&self) -> Option<NtpTimestamp> {
        match self.plan {
            Plan::Reply { header, .. } => Some(header.receive_ts),
            Plan::Drop(_) => None,
        }
    }

    /// The receive timestamp of an earlier reply that this request names,
    /// when it asks for an interleaved reply (RFC 9769 section 2): an NTPv4
    /// time request (no Kiss-o'-Death, no crypto-NAK) whose origin has the
    /// lowest bit set (one of this server's receive timestamps, see
    /// [`Server`]) and whose receive and transmit timestamps differ (a basic
    /// client that echoes the server's transmit timestamp never matches).
    /// Such a reply is also the one whose transmit time a caller saves for
    /// the client's next request.
    #[must_use]
    pub fn interleaved_origin(&self) -> Option<NtpTimestamp> {
        match self.plan {
            Plan::Reply {
                request,
                kind: ReplyKind::Time,
                ..
            } => interleaved_origin(&request),
            _ => None,
        }
    }

    /// Writes the reply into `out` and reports it to `stats` (or the drop).
    ///
    /// `now` is the clock read just before the call: the transmit timestamp
    /// of a basic reply. With `previous_tx` (the transmit time the caller
    /// saved for [`PreparedReply::interleaved_origin`]) and a request that
    /// asks for it, the reply is interleaved: `previous_tx` as transmit
    /// timestamp and the request's receive timestamp as origin. Otherwise it
    /// is basic, whatever `previous_tx` says. The reply's MAC, if any, is
    /// computed here, over the header with its final timestamps.
    pub fn finish(
        &self,
        now: NtpTimestamp,
        previous_tx: Option<NtpTimestamp>,
        out: &mut [u8],
        stats: &mut impl ServerStats,
    ) -> ServerAction {
        let interleaved = previous_tx.filter(|_| self.interleaved_origin().is_some());
        let plan = match self.plan {
            Plan::Reply {
                mut header,
                request,
                kind,
                trailer,
                failed_key,
            } => {
                set_transmit(&mut header, &request, now, interleaved);
                Plan::Reply {
                    header,
                    request,
                    kind,
                    trailer,
                    failed_key,
                }
            }
            drop @ Plan::Drop(_) => drop,
        };
        let tag = match plan {
            Plan::Reply {
                header,
                trailer: PlannedTrailer::Mac(key),
                ..
            } => reply_tag(key.mac(), &encode_header(&header)),
            _ => None,
        };
        let outcome = write_planned(
            &plan,
            tag.as_ref(),
            self.request_len,
            self.rate_limited,
            out,
        );
        report(stats, &outcome);
        outcome.action
    }
}

/// The receive timestamp of an earlier reply that `request` names, when it
/// asks for an interleaved reply: see [`PreparedReply::interleaved_origin`],
/// which adds that a Kiss-o'-Death or crypto-NAK is never interleaved. For
/// protocols that build the reply themselves (NTS).
#[must_use]
pub fn interleaved_origin(request: &Header) -> Option<NtpTimestamp> {
    (request.version == 4
        && request.origin_ts.to_bits() & 1 == 1
        && request.receive_ts != request.transmit_ts)
        .then_some(request.origin_ts)
}

/// Sets the transmit timestamp (and, interleaved, the origin) of `header`,
/// the reply to `request`: `previous` as transmit and the request's receive
/// timestamp as origin when given, else `now`.
fn set_transmit(
    header: &mut Header,
    request: &Header,
    now: NtpTimestamp,
    previous: Option<NtpTimestamp>,
) {
    match previous {
        Some(previous) => {
            header.origin_ts = request.receive_ts;
            header.transmit_ts = mark_transmit(previous);
        }
        None => header.transmit_ts = basic_transmit(header.receive_ts, now),
    }
}

/// The transmit timestamp of a basic reply read at `now`, marked. When `now`
/// equals the receive timestamp but for the marker bits (a clock read within
/// a quarter nanosecond of the receive timestamp, or a caller that passes
/// the same time twice), it is moved just past the receive timestamp, so
/// that the marker bits never make the transmit timestamp precede it.
fn basic_transmit(receive: NtpTimestamp, now: NtpTimestamp) -> NtpTimestamp {
    let t3 = mark_transmit(now);
    if receive.to_bits().wrapping_sub(t3.to_bits()) == 1 {
        NtpTimestamp::from_bits(receive.to_bits().wrapping_add(1))
    } else {
        t3
    }
}

impl Server {
    /// The header of a time reply to `request` received at `recv_ts`, for
    /// protocols that build the rest of the reply themselves (NTS, RFC 8915
    /// section 5.7): interleaved with `previous` as transmit timestamp when
    /// given and the request asks for it ([`interleaved_origin`]), else
    /// basic with `now`. The timestamps are marked as in every reply.
    #[must_use]
    pub fn time_reply_header_at(
        &self,
        request: &Header,
        recv_ts: NtpTimestamp,
        now: NtpTimestamp,
        previous: Option<NtpTimestamp>,
    ) -> Header {
        let mut header = self.time_reply_header(request, recv_ts, NtpTimestamp::ZERO);
        let previous = previous.filter(|_| interleaved_origin(request).is_some());
        set_transmit(&mut header, request, now, previous);
        header
    }

    /// Prepares the reply to one datagram that arrived at `recv_ts`: checks
    /// it and verifies its MAC, as [`Server::handle`] does, but leaves the
    /// transmit timestamp to [`PreparedReply::finish`]. Never panics, never
    /// allocates.
    pub fn prepare<'k>(
        &self,
        request: &[u8],
        recv_ts: NtpTimestamp,
        keys: &'k KeySet,
    ) -> PreparedReply<'k> {
        self.prepare_one(request, ReplyKind::Time, false, recv_ts, keys)
    }

    /// Prepares the reply after the rate limiter's verdict, as
    /// [`Server::handle_limited`] answers: a time reply, a RATE
    /// Kiss-o'-Death, or a drop.
    pub fn prepare_limited<'k>(
        &self,
        request: &[u8],
        verdict: RateVerdict,
        recv_ts: NtpTimestamp,
        keys: &'k KeySet,
    ) -> PreparedReply<'k> {
        match verdict {
            RateVerdict::Allow => self.prepare(request, recv_ts, keys),
            RateVerdict::Kiss => self.prepare_one(
                request,
                ReplyKind::Kiss(KissCode::RATE),
                true,
                recv_ts,
                keys,
            ),
            RateVerdict::Drop => {
                PreparedReply::new(Plan::Drop(DropReason::RateLimited), request.len(), true)
            }
        }
    }

    /// Prepares a Kiss-o'-Death with `code`, as [`Server::kiss`] answers.
    pub fn prepare_kiss<'k>(
        &self,
        request: &[u8],
        code: KissCode,
        recv_ts: NtpTimestamp,
        keys: &'k KeySet,
    ) -> PreparedReply<'k> {
        self.prepare_one(request, ReplyKind::Kiss(code), false, recv_ts, keys)
    }
}

#[cfg(test)]
mod tests {
    use authtime_keys::{KeyMaterial, KeyType};
    use authtime_wire::{Mode, Packet, Writer};

    use super::*;
    use crate::NoStats;

    fn request(origin: u64, receive: u64, transmit: u64, version: u8) -> Vec<u8> {
        let mut h = Header::new(Mode::Client);
        h.version = version;
        h.origin_ts = NtpTimestamp::from_bits(origin);
        h.receive_ts = NtpTimestamp::from_bits(receive);
        h.transmit_ts = NtpTimestamp::from_bits(transmit);
        let mut buf = vec![0u8; 48];
        h.encode(&mut Writer::new(&mut buf)).expect("encode");
        buf
    }

    fn reply(prepared: &PreparedReply<'_>, now: u64, previous: Option<u64>) -> Header {
        let mut out = [0u8; 128];
        let action = prepared.finish(
            NtpTimestamp::from_bits(now),
            previous.map(NtpTimestamp::from_bits),
            &mut out,
            &mut NoStats,
        );
        let ServerAction::Send(len) = action else {
            panic!("{action:?}")
        };
        *Packet::decode(&out[..len]).expect("reply").header()
    }

    #[test]
    fn basic_requests_get_basic_replies_whatever_the_caller_holds() {
        let keys = KeySet::new(&[]).expect("keys");
        let server = Server::default();
        // A basic client (origin 0), one that echoes our transmit timestamp
        // (lowest bit clear), and one whose receive equals its transmit.
        for req in [
            request(0, 0, 0x55, 4),
            request(0x1000, 0x77, 0x55, 4),
            request(0x1001, 0x55, 0x55, 4),
            request(0x1001, 0x77, 0x55, 3),
        ] {
            let p = server.prepare(&req, NtpTimestamp::from_bits(0x2000), &keys);
            assert_eq!(p.interleaved_origin(), None);
            let h = reply(&p, 0x3003, Some(0x2500));
            assert_eq!(h.origin_ts.to_bits(), 0x55);
            assert_eq!(h.receive_ts.to_bits(), 0x2001, "receive marked");
            assert_eq!(h.transmit_ts.to_bits(), 0x3002, "now, marked");
        }
    }

    #[test]
    fn interleaved_requests_get_the_previous_transmit_time() {
        let keys = KeySet::new(&[]).expect("keys");
        let server = Server::default();
        let req = request(0x1001, 0x77, 0x55, 4);
        let p = server.prepare(&req, NtpTimestamp::from_bits(0x2000), &keys);
        assert_eq!(
            p.interleaved_origin(),
            Some(NtpTimestamp::from_bits(0x1001))
        );
        assert_eq!(p.receive_ts(), Some(NtpTimestamp::from_bits(0x2001)));
        let h = reply(&p, 0x3003, Some(0x1500));
        assert_eq!(
            (
                h.origin_ts.to_bits(),
                h.receive_ts.to_bits(),
                h.transmit_ts.to_bits()
            ),
            (0x77, 0x2001, 0x1500)
        );
        // Without a saved transmit time: basic.
        let h = reply(&p, 0x3003, None);
        assert_eq!(
            (h.origin_ts.to_bits(), h.transmit_ts.to_bits()),
            (0x55, 0x3002)
        );
    }

    #[test]
    fn the_marker_bits_never_put_transmit_before_receive() {
        let keys = KeySet::new(&[]).expect("keys");
        let p = Server::default().prepare(
            &request(0, 0, 0x55, 4),
            NtpTimestamp::from_bits(0x2000),
            &keys,
        );
        for now in [0x2000, 0x2001] {
            let h = reply(&p, now, None);
            assert_eq!(
                (h.receive_ts.to_bits(), h.transmit_ts.to_bits()),
                (0x2001, 0x2002)
            );
        }
        assert_eq!(reply(&p, 0x2002, None).transmit_ts.to_bits(), 0x2002);
        // A clock stepped back between the two reads is served as it is.
        assert_eq!(reply(&p, 0x1000, None).transmit_ts.to_bits(), 0x1000);
    }

    #[test]
    fn nts_headers_follow_the_same_rule() {
        let server = Server::default();
        let req = request(0x1001, 0x77, 0x55, 4);
        let h = *Packet::decode(&req).expect("req").header();
        assert_eq!(
            interleaved_origin(&h),
            Some(NtpTimestamp::from_bits(0x1001))
        );
        let recv = NtpTimestamp::from_bits(0x2000);
        let now = NtpTimestamp::from_bits(0x3003);
        let previous = Some(NtpTimestamp::from_bits(0x1500));
        let r = server.time_reply_header_at(&h, recv, now, previous);
        assert_eq!(
            (
                r.origin_ts.to_bits(),
                r.receive_ts.to_bits(),
                r.transmit_ts.to_bits()
            ),
            (0x77, 0x2001, 0x1500)
        );
        let r = server.time_reply_header_at(&h, recv, now, None);
        assert_eq!(
            (r.origin_ts.to_bits(), r.transmit_ts.to_bits()),
            (0x55, 0x3002)
        );
        let basic = *Packet::decode(&request(0, 0, 0x55, 4))
            .expect("req")
            .header();
        assert_eq!(interleaved_origin(&basic), None);
        let r = server.time_reply_header_at(&basic, recv, now, previous);
        assert_eq!(
            (r.origin_ts.to_bits(), r.transmit_ts.to_bits()),
            (0x55, 0x3002)
        );
    }

    #[test]
    fn kisses_and_drops_are_never_interleaved() {
        let keys = KeySet::new(&[]).expect("keys");
        let server = Server::default();
        let req = request(0x1001, 0x77, 0x55, 4);
        let kiss = server.prepare_limited(&req, RateVerdict::Kiss, NtpTimestamp::ZERO, &keys);
        assert!(kiss.is_reply());
        assert_eq!(kiss.interleaved_origin(), None);
        let h = reply(&kiss, 0x3003, Some(0x1500));
        assert_eq!(h.transmit_ts.to_bits(), 0x3002);
        let dropped = server.prepare_limited(&req, RateVerdict::Drop, NtpTimestamp::ZERO, &keys);
        assert!(!dropped.is_reply());
        assert_eq!(
            (dropped.receive_ts(), dropped.interleaved_origin()),
            (None, None)
        );
    }

    #[test]
    fn the_reply_mac_covers_the_interleaved_header() {
        let keys =
            KeySet::new(&[KeyMaterial::new(3, KeyType::Aes128Cmac, &[3; 16])]).expect("keys");
        let server = Server::default();
        let mut req = request(0x1001, 0x77, 0x55, 4);
        let tag = keys
            .get(3)
            .expect("key")
            .mac()
            .compute(&[], &req)
            .expect("tag");
        req.extend_from_slice(&3u32.to_be_bytes());
        req.extend_from_slice(tag.as_bytes());
        let p = server.prepare(&req, NtpTimestamp::from_bits(0x2000), &keys);
        let mut out = [0u8; 128];
        let ServerAction::Send(len) = p.finish(
            NtpTimestamp::from_bits(0x3000),
            Some(NtpTimestamp::from_bits(0x1500)),
            &mut out,
            &mut NoStats,
        ) else {
            panic!("dropped")
        };
        assert_eq!(len, 68);
        let expected = keys
            .get(3)
            .expect("key")
            .mac()
            .compute(&[], &out[..48])
            .expect("tag");
        assert_eq!(&out[52..68], expected.as_bytes());
        assert_eq!(
            u64::from_be_bytes(out[40..48].try_into().expect("8")),
            0x1500
        );
    }
}
