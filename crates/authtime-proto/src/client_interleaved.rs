//! The client side of RFC 9769's interleaved client/server mode, as chrony's
//! client runs it: each reply may carry the server's exact transmit time of
//! the reply before it, so that the client can measure the server's clock
//! against the time the server's reply really left, not the time the server
//! read its clock before sending.
//!
//! Request n carries a fresh transmit timestamp (a random cookie; T1 is kept
//! apart), as origin the server's receive timestamp T2 of the last reply
//! that arrived, and as receive our receive time T4 of that reply (its bits
//! below our precision replaced by random ones, as chrony does, so that no
//! two requests carry the same receive field). The server tells the mode of
//! its reply by its origin:
//!
//! - origin = our transmit field: a **basic** reply (the server does not do
//!   interleaved mode, or has no transmit timestamp for us); its sample is
//!   RFC 5905's, from this exchange.
//! - origin = our receive field: an **interleaved** reply. Its transmit
//!   timestamp is when the server's previous reply to us actually left, so
//!   the sample is that previous exchange's: T1 when that request left, T2
//!   its reply's receive timestamp, T3 this reply's transmit timestamp, T4
//!   when that reply arrived.
//! - anything else: bogus, dropped (RFC 5905 section 8, test 2).
//!
//! One reply is taken per request; a new request gives up the one before
//! it, and since the receive field never repeats, a late reply to an older
//! request matches neither field. After [`MAX_UNANSWERED`] requests in a row
//! without a reply, or a reply that gives no sample, the client starts over
//! in basic mode rather than ask the server for a transmit timestamp it may
//! no longer hold. MACs are checked as in basic mode ([`crate::PendingRequest`]).
//!
//! Sans-IO: times and random bytes are inputs. The caller reads T1 and T4
//! (kernel timestamps at best) and may refine T1 after the fact
//! ([`InterleavedClient::set_send_time`]) when a transmit timestamp comes
//! in late.

use authtime_keys::KeyEntry;
use authtime_wire::{Mode, NtpTimestamp, Packet};

use crate::client::{ExchangeTimes, check_mac, judge_reply, write_request};
use crate::{ClientConfig, ClientError, Sample};

/// Requests in a row without a valid reply after which the client stops
/// asking for interleaved replies and starts over in basic mode: the server
/// would answer with the transmit time of a reply long gone, if it still
/// holds it at all.
pub const MAX_UNANSWERED: u32 = 4;

/// Random bytes for one request: 8 for the transmit cookie, 4 for the bits
/// of the receive field below our precision.
pub const REQUEST_RANDOM_LEN: usize = 12;

/// Bits of the receive field that are random at least, whatever the
/// configured precision (2^-24 s): enough that two requests never repeat it.
const MIN_FUZZ_BITS: u32 = 8;

/// How a sample was measured.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SampleMode {
    /// From a basic reply: T3 is the time the server read its clock before
    /// sending, earlier than the reply left by however long sending took.
    Basic,
    /// From an interleaved reply: T3 is the time the server's previous
    /// reply actually left (a kernel or hardware timestamp at the server).
    Interleaved,
}

impl SampleMode {
    /// `basic` or `interleaved`, for output.
    #[must_use]
    pub const fn name(self) -> &'static str {
        match self {
            Self::Basic => "basic",
            Self::Interleaved => "interleaved",
        }
    }
}

/// A request written by [`InterleavedClient::build_request`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct InterleavedRequest {
    /// Its length in the output buffer.
    pub len: usize,
    /// Its number: 0 for the client's first request, then counting up.
    pub seq: u64,
    /// Its transmit field (a random cookie), by which a caller recognises
    /// the request's own kernel transmit timestamp.
    pub transmit_ts: NtpTimestamp,
    /// Whether it asks for an interleaved reply (it echoes a previous reply).
    pub asks_interleaved: bool,
}

/// A sample with how it was measured.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct InterleavedSample {
    /// Offset, delay, dispersion and the server's header fields (those of
    /// the reply that gave the sample).
    pub sample: Sample,
    /// Basic or interleaved.
    pub mode: SampleMode,
    /// The request the reply answered.
    pub answered: u64,
    /// The request whose T1, and whose reply's T2 and T4, the sample uses:
    /// `answered` for a basic sample, an earlier one for an interleaved one.
    pub measured: u64,
    /// T1 as used.
    pub t1: NtpTimestamp,
    /// T4 as used.
    pub t4: NtpTimestamp,
}

/// An exchange whose reply arrived and gave a sample: what the next
/// request echoes, and what an interleaved reply to it completes.
#[derive(Debug, Clone, Copy)]
struct Answered {
    seq: u64,
    t1: NtpTimestamp,
    server_receive: NtpTimestamp,
    t4: NtpTimestamp,
}

/// The request waiting for its reply.
#[derive(Debug, Clone, Copy)]
struct InFlight {
    seq: u64,
    transmit_ts: NtpTimestamp,
    /// Zero when the request does not ask for an interleaved reply.
    receive_ts: NtpTimestamp,
    t1: NtpTimestamp,
}

/// An interleaved client of one server: at most one request in flight.
#[derive(Debug, Clone)]
pub struct InterleavedClient<'k> {
    config: ClientConfig,
    key: Option<&'k KeyEntry>,
    next_seq: u64,
    in_flight: Option<InFlight>,
    last: Option<Answered>,
    unanswered: u32,
    /// The transmit and receive fields of the request before, which the
    /// next one must not repeat.
    previous_fields: (NtpTimestamp, NtpTimestamp),
}

impl<'k> InterleavedClient<'k> {
    /// A client that has sent nothing yet; with `key`, requests carry a MAC
    /// under it and only replies whose MAC verifies count.
    #[must_use]
    pub fn new(config: ClientConfig, key: Option<&'k KeyEntry>) -> Self {
        Self {
            config,
            key,
            next_seq: 0,
            in_flight: None,
            last: None,
            unanswered: 0,
            previous_fields: (NtpTimestamp::ZERO, NtpTimestamp::ZERO),
        }
    }

    /// Writes the next request into `out`. `now` is T1 as read before the
    /// send (refine it with [`InterleavedClient::set_send_time`]); `random`
    /// gives the transmit cookie and the receive field's low bits. A request
    /// still in flight is given up: its reply, if one comes, is bogus.
    ///
    /// # Errors
    /// [`ClientError::OutputTooSmall`]; the client is unchanged then.
    pub fn build_request(
        &mut self,
        now: NtpTimestamp,
        random: [u8; REQUEST_RANDOM_LEN],
        out: &mut [u8],
    ) -> Result<InterleavedRequest, ClientError> {
        let mut unanswered = self.unanswered;
        let mut last = self.last;
        if self.in_flight.is_some() {
            unanswered = unanswered.saturating_add(1);
            if unanswered >= MAX_UNANSWERED {
                last = None;
            }
        }
        let [c0, c1, c2, c3, c4, c5, c6, c7, f0, f1, f2, f3] = random;
        let cookie = u64::from_be_bytes([c0, c1, c2, c3, c4, c5, c6, c7]);
        let fuzz = u32::from_be_bytes([f0, f1, f2, f3]);
        let (previous_transmit, previous_receive) = self.previous_fields;
        let (origin_ts, receive_ts) = match last {
            Some(a) => {
                let receive = fuzzed(a.t4, fuzz, self.fuzz_bits());
                let receive = avoiding(
                    receive,
                    &[NtpTimestamp::ZERO, a.server_receive, previous_receive],
                );
                (a.server_receive, receive)
            }
            None => (NtpTimestamp::ZERO, NtpTimestamp::ZERO),
        };
        let transmit_ts = avoiding(
            NtpTimestamp::from_bits(cookie),
            &[NtpTimestamp::ZERO, origin_ts, receive_ts, previous_transmit],
        );
        let len = write_request(
            &self.config,
            origin_ts,
            receive_ts,
            transmit_ts,
            self.key,
            out,
        )?;
        let seq = self.next_seq;
        self.next_seq += 1;
        self.unanswered = unanswered;
        self.last = last;
        self.previous_fields = (transmit_ts, receive_ts);
        self.in_flight = Some(InFlight {
            seq,
            transmit_ts,
            receive_ts,
            t1: now,
        });
        Ok(InterleavedRequest {
            len,
            seq,
            transmit_ts,
            asks_interleaved: last.is_some(),
        })
    }

    /// Sets T1 of request `seq` (its kernel transmit timestamp, say) when it
    /// is the request in flight or the one whose reply last gave a sample
    /// (the stamp came in after its reply); returns whether it was one of
    /// them. A sample already returned keeps the T1 it was computed with.
    pub fn set_send_time(&mut self, seq: u64, t1: NtpTimestamp) -> bool {
        if let Some(f) = self.in_flight.as_mut().filter(|f| f.seq == seq) {
            f.t1 = t1;
            return true;
        }
        if let Some(a) = self.last.as_mut().filter(|a| a.seq == seq) {
            a.t1 = t1;
            return true;
        }
        false
    }

    /// Checks `response`, received at `t4`, against the request in flight
    /// and computes its sample: basic or interleaved by its origin, MAC
    /// under our key, no Kiss-o'-Death, a synchronized server, consistent
    /// timestamps, a root distance of at most [`crate::MAX_ROOT_DISTANCE`].
    ///
    /// A datagram that does not answer the request in flight (wrong mode or
    /// origin, a failed MAC) leaves it in flight ([`ClientError::reaction`]
    /// says to ignore it). A reply that answers it ends it, with a sample or
    /// an error; after an error the next request starts over in basic mode.
    ///
    /// # Errors
    /// The first check that fails.
    pub fn process_response(
        &mut self,
        response: &[u8],
        t4: NtpTimestamp,
    ) -> Result<InterleavedSample, ClientError> {
        let packet = Packet::decode(response).map_err(ClientError::Malformed)?;
        let h = *packet.header();
        if h.mode != Mode::Server {
            return Err(ClientError::NotAServerReply { mode: h.mode });
        }
        let Some(request) = self.in_flight else {
            return Err(ClientError::OriginMismatch);
        };
        let mode = if h.origin_ts == request.transmit_ts {
            SampleMode::Basic
        } else if !request.receive_ts.is_zero() && h.origin_ts == request.receive_ts {
            SampleMode::Interleaved
        } else {
            return Err(ClientError::OriginMismatch);
        };
        let auth = check_mac(self.key, &packet)?;
        // The reply answers our request: it is the only one we take for it.
        self.in_flight = None;
        self.unanswered = 0;
        let (measured, times) = match (mode, self.last) {
            (SampleMode::Basic, _) => (
                request.seq,
                ExchangeTimes {
                    t1: request.t1,
                    t2: h.receive_ts,
                    t3: h.transmit_ts,
                    t4,
                },
            ),
            (SampleMode::Interleaved, Some(a)) => (
                a.seq,
                ExchangeTimes {
                    t1: a.t1,
                    t2: a.server_receive,
                    t3: h.transmit_ts,
                    t4: a.t4,
                },
            ),
            // A request asks for interleaved replies only with an answered
            // exchange to echo, and nothing clears it while the request is
            // in flight; kept as an error rather than a panic all the same.
            (SampleMode::Interleaved, None) => {
                self.last = None;
                return Err(ClientError::OriginMismatch);
            }
        };
        let result = judge_reply(&h, &times, self.config.precision, auth);
        self.last = match (&result, h.receive_ts.is_zero()) {
            (Ok(_), false) => Some(Answered {
                seq: request.seq,
                t1: request.t1,
                server_receive: h.receive_ts,
                t4,
            }),
            _ => None,
        };
        result.map(|sample| InterleavedSample {
            sample,
            mode,
            answered: request.seq,
            measured,
            t1: times.t1,
            t4: times.t4,
        })
    }

    /// The request in flight: its number and transmit field.
    #[must_use]
    pub fn in_flight(&self) -> Option<(u64, NtpTimestamp)> {
        self.in_flight.map(|f| (f.seq, f.transmit_ts))
    }

    /// Random bits at the bottom of the receive field: those below our
    /// precision, at least [`MIN_FUZZ_BITS`].
    fn fuzz_bits(&self) -> u32 {
        let below_precision = 32 + i32::from(self.config.precision);
        u32::try_from(below_precision)
            .unwrap_or(0)
            .clamp(MIN_FUZZ_BITS, 32)
    }
}

/// `t` with its lowest `bits` bits replaced by those of `fuzz`.
fn fuzzed(t: NtpTimestamp, fuzz: u32, bits: u32) -> NtpTimestamp {
    let mask = if bits >= 32 {
        u64::from(u32::MAX)
    } else {
        (1u64 << bits) - 1
    };
    NtpTimestamp::from_bits((t.to_bits() & !mask) | (u64::from(fuzz) & mask))
}

/// `t`, or the next value after it that is none of `forbidden`: counting up
/// from `t`, one of the first `forbidden.len() + 1` values is free.
fn avoiding(t: NtpTimestamp, forbidden: &[NtpTimestamp]) -> NtpTimestamp {
    let mut bits = t.to_bits();
    for _ in 0..=forbidden.len() {
        if !forbidden.contains(&NtpTimestamp::from_bits(bits)) {
            break;
        }
        bits = bits.wrapping_add(1);
    }
    NtpTimestamp::from_bits(bits)
}

#[cfg(test)]
#[path = "client_interleaved_tests.rs"]
mod tests;
