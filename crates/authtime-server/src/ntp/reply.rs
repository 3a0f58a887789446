//! The last steps of every NTP reply: pick its mode, read the transmit
//! timestamp, finish the reply, send it, and keep what interleaved mode and
//! the self-measurement need.
//!
//! # Why the transmit timestamp is read here
//!
//! A reply's transmit timestamp (T3) claims the moment the reply leaves. It
//! is read from the system clock once per reply, after everything that does
//! not depend on it (the request's checks and MAC, batched per key; for NTS
//! the cookie, the request's authentication and the fresh cookies) and just
//! before the only work that must follow it: the reply's MAC or NTS seal,
//! which covers T3, and one `sendmsg` (on the AF_XDP path: the frame's
//! headers and one kick of the TX ring, [`super::xdp_worker`]). Replies are
//! sent one by one because a
//! `sendmmsg` runs the kernel's whole send path for each datagram in turn:
//! the k-th datagram of a batch leaves k sends (about 5 µs each on veth)
//! after a T3 read before the call, and no prediction of that delay holds
//! under load. What is left between T3 and the wire is the MAC (tens of
//! nanoseconds; an NTS seal, about a microsecond) and the kernel's send path.
//!
//! Interleaved mode (RFC 9769) removes that too: the reply carries the
//! kernel's transmit timestamp of the previous reply to the same client,
//! read back from the socket's error queue ([`super::tx_stamps`]). A reply is
//! interleaved only with a kernel (or hardware) time; with the daemon's
//! reading alone it is basic, which gives the client the same quality for
//! the packet it just received.

use std::os::fd::AsRawFd;
use std::time::Instant;

use authtime_nts::HeaderFor;
use authtime_packet_io::{DATAGRAM_LEN, TxStamp, TxStampReader};
use authtime_proto::interleaved::{Inserted, SavedTx, TxSource};
use authtime_proto::{PreparedReply, Server, ServerAction};
use authtime_wire::{Header, NtpTimestamp};

use super::batch_io::Replies;
use super::compensation::{Position, SendPathDelay};
use super::nts_reply::{self, NtsShared, RandomPool};
use super::timestamps::SharedTimestamps;
use crate::clock;
use crate::metrics::served_time::{Fallback, ServedTimeCounters, Source};
use crate::metrics::{StatsSink, WorkerCounters};

/// After this many transmit timestamps asked for and none received, the
/// kernel is taken not to return them (for example an unprivileged process
/// with `net.core.tstamp_allow_data = 0`), and none are asked for again.
const GIVE_UP_AFTER: u64 = 1000;

/// How long after the last stamp asked for the error queue is still read
/// when it is empty: software stamps come back before `sendmsg` returns on
/// most drivers, hardware stamps within milliseconds.
const STAMP_WAIT: std::time::Duration = std::time::Duration::from_secs(1);

/// A worker's reply buffer and transmit-timestamp bookkeeping.
pub(crate) struct ReplyPath {
    out: Box<[u8; DATAGRAM_LEN]>,
    stamps: Box<TxStampReader>,
    /// Every `sample_every`-th basic reply is stamped (0: none).
    sample_every: u32,
    until_sample: u32,
    tx_stamps: bool,
    requested: u64,
    delivered: u64,
    /// Stamps asked for and not yet read (a hint: the kernel may drop some).
    outstanding: u64,
    /// When the last stamp was asked for.
    last_request: Option<Instant>,
    /// The send-path delays added to basic transmit timestamps.
    delay: SendPathDelay,
    /// Replies sent since the last receive.
    sent_in_batch: usize,
}

/// What the caller knows about one request.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Request<'a> {
    pub(crate) data: &'a [u8],
    pub(crate) recv_ts: NtpTimestamp,
    /// Its place in the receive batch, which the reply is sent by
    /// ([`Replies::send`]).
    pub(crate) index: usize,
}

impl ReplyPath {
    /// `tx_stamps`: the socket returns transmit timestamps when asked;
    /// `compensate`: basic transmit timestamps get the measured send-path
    /// delay added ([`super::compensation`]).
    pub(crate) fn new(tx_stamps: bool, sample_every: u32, compensate: bool) -> Self {
        Self {
            out: Box::new([0; DATAGRAM_LEN]),
            stamps: TxStampReader::new(),
            sample_every,
            until_sample: sample_every,
            tx_stamps,
            requested: 0,
            delivered: 0,
            outstanding: 0,
            last_request: None,
            delay: SendPathDelay::new(compensate),
            sent_in_batch: 0,
        }
    }

    /// A new batch was received: its first reply is the first to leave
    /// after the worker woke.
    pub(crate) fn start_batch(&mut self) {
        self.sent_in_batch = 0;
    }

    fn position(&self) -> Position {
        if self.sent_in_batch == 0 {
            Position::First
        } else {
            Position::Later
        }
    }

    /// Finishes and sends a prepared plain or MAC reply (or reports its
    /// drop). `prepared_ns` is the share of the batch's preparation that
    /// goes to this request, for the server-time histogram.
    pub(crate) fn send_ntp(
        &mut self,
        sink: &mut impl Replies,
        reply: &PreparedReply<'_>,
        request: &Request<'_>,
        table: Option<&SharedTimestamps>,
        prepared_ns: u64,
        stats: &mut StatsSink<'_>,
    ) {
        let save = table.is_some() && reply.interleaved_origin().is_some();
        let previous = previous_tx(
            table,
            reply.interleaved_origin(),
            &mut stats.counters.served,
        );
        let at = self.position();
        let now = clock::now();
        let t3 = add_ns(now, self.delay.delay_ns(at));
        let action = reply.finish(t3, previous.map(|p| p.tx), &mut self.out[..], stats);
        // From the transmit timestamp's own reading: one clock read fewer
        // per reply (a step of the clock in between counts as zero).
        let took = u64::try_from(clock::now().duration_since(now).as_nanos()).unwrap_or(0);
        let ServerAction::Send(len) = action else {
            return;
        };
        stats
            .counters
            .ntp_time
            .record(prepared_ns.saturating_add(took), 1);
        let time_reply = reply.is_time_reply();
        let basic = time_reply && previous.is_none();
        let t2 = reply.receive_ts().unwrap_or(NtpTimestamp::ZERO);
        let sent = self.send(
            sink,
            len,
            request,
            basic.then_some((t2, at)),
            save,
            stats.counters,
        );
        if !sent || !time_reply {
            return;
        }
        self.count_time_reply(request.recv_ts, t3, previous, &mut stats.counters.served);
        if save && let (Some(table), Some(rx)) = (table, reply.receive_ts()) {
            save_tx(table, rx, now, &mut stats.counters.served);
        }
    }

    /// Answers and sends one NTS request (protected reply or NAK).
    #[expect(
        clippy::too_many_arguments,
        reason = "the request, the keys and what is counted"
    )]
    pub(crate) fn send_nts(
        &mut self,
        sink: &mut impl Replies,
        nts: &NtsShared,
        ring: &authtime_nts::KeyRing,
        prepared: Option<nts_reply::Prepared<'_>>,
        server: &Server,
        request: &Request<'_>,
        table: Option<&SharedTimestamps>,
        now_unix_secs: u64,
        random: &mut RandomPool,
        counters: &mut WorkerCounters,
    ) {
        let Ok(header) = Header::decode(&mut authtime_wire::Reader::new(request.data)) else {
            nts_reply::count_malformed(counters);
            return;
        };
        let origin = authtime_proto::interleaved_origin(&header);
        let save = table.is_some() && origin.is_some();
        let previous = previous_tx(table, origin, &mut counters.served);
        let (mut now, mut t3) = (NtpTimestamp::ZERO, NtpTimestamp::ZERO);
        let mut reply_t2 = NtpTimestamp::ZERO;
        let at = self.position();
        let delay_ns = self.delay.delay_ns(at);
        let outcome = nts_reply::answer(
            nts,
            ring,
            request.data,
            prepared,
            now_unix_secs,
            random,
            &mut self.out[..],
            counters,
            |purpose| {
                now = clock::now();
                t3 = add_ns(now, delay_ns);
                let previous = match purpose {
                    HeaderFor::Reply => previous.map(|p| p.tx),
                    HeaderFor::Nak => None,
                };
                let h = server.time_reply_header_at(&header, request.recv_ts, t3, previous);
                reply_t2 = h.receive_ts;
                h
            },
        );
        let ServerAction::Send(len) = outcome.action else {
            return;
        };
        let time_reply = outcome.time_reply;
        let basic = (time_reply && previous.is_none()).then_some((reply_t2, at));
        let sent = self.send(sink, len, request, basic, save && time_reply, counters);
        if !sent || !time_reply {
            return;
        }
        self.count_time_reply(request.recv_ts, t3, previous, &mut counters.served);
        if save && let Some(table) = table {
            save_tx(table, reply_t2, now, &mut counters.served);
        }
    }

    /// Sends the first `len` bytes of the reply buffer; asks for its
    /// transmit timestamp when it is saved for interleaved mode, or when a
    /// basic reply (`basic`: its receive timestamp and position) is due for
    /// a sample. Returns whether the kernel took it.
    fn send(
        &mut self,
        sink: &mut impl Replies,
        len: usize,
        request: &Request<'_>,
        basic: Option<(NtpTimestamp, Position)>,
        save: bool,
        counters: &mut WorkerCounters,
    ) -> bool {
        self.sent_in_batch += 1;
        let sample = basic.is_some_and(|(_, at)| self.sample_due(at));
        let stamp = self.tx_stamps && (save || sample);
        if stamp && let Some((t2, at)) = basic {
            self.delay.stamped(t2, at);
        }
        match sink.send(request.index, &self.out[..len], stamp) {
            Ok(()) => {
                if stamp {
                    counters.served.kernel_tx_requested += 1;
                    self.requested += 1;
                    self.outstanding += 1;
                    self.last_request = Some(Instant::now());
                }
                true
            }
            Err(e) => {
                counters.send_errors += 1;
                tracing::debug!(error = %e, "the kernel refused a reply");
                false
            }
        }
    }

    fn sample_due(&mut self, at: Position) -> bool {
        if self.sample_every == 0 {
            return false;
        }
        if self.delay.warming_up(at) {
            return true;
        }
        self.until_sample = self.until_sample.saturating_sub(1);
        if self.until_sample == 0 {
            self.until_sample = self.sample_every;
            true
        } else {
            false
        }
    }

    fn count_time_reply(
        &self,
        recv_ts: NtpTimestamp,
        t3: NtpTimestamp,
        previous: Option<SavedTx>,
        served: &mut ServedTimeCounters,
    ) {
        match previous {
            Some(p) => {
                served.interleaved += 1;
                served.tx_source[Source::from(p.source) as usize] += 1;
            }
            None => {
                served.basic += 1;
                served.tx_source[Source::Daemon as usize] += 1;
                let delay = t3.duration_since(recv_ts).as_nanos();
                served
                    .reply_delay
                    .record(u64::try_from(delay).unwrap_or(0), 1);
            }
        }
    }

    /// Reads the transmit timestamps the kernel has returned, if any were
    /// asked for and not yet read.
    pub(crate) fn read_tx_stamps(
        &mut self,
        socket: &impl AsRawFd,
        table: Option<&SharedTimestamps>,
        counters: &mut WorkerCounters,
    ) {
        if self.outstanding == 0 {
            return;
        }
        let mut read = 0u64;
        let delay = &mut self.delay;
        let result = self.stamps.drain(socket, |stamp| {
            read += 1;
            take_stamp(delay, stamp, table, counters);
        });
        if let Err(e) = result {
            tracing::debug!(error = %e, "reading transmit timestamps failed");
        }
        self.tx_stamps_read(read);
    }

    /// One transmit timestamp that came back another way than the socket's
    /// error queue: on the AF_XDP path, from the completion ring
    /// ([`super::xdp_worker`]). Call [`ReplyPath::tx_stamps_read`] after
    /// each pass with how many came.
    pub(crate) fn take_tx_stamp(
        &mut self,
        stamp: &TxStamp<'_>,
        table: Option<&SharedTimestamps>,
        counters: &mut WorkerCounters,
    ) {
        take_stamp(&mut self.delay, stamp, table, counters);
    }

    /// `read` transmit timestamps came back in this pass: when none ever
    /// come, stops asking for them.
    pub(crate) fn tx_stamps_read(&mut self, read: u64) {
        self.delivered += read;
        self.outstanding = self.outstanding.saturating_sub(read);
        if read == 0 && self.last_request.is_none_or(|at| at.elapsed() > STAMP_WAIT) {
            // A stamp the kernel dropped (its error queue is bounded by the
            // socket's receive buffer) is never read: stop looking for it.
            self.outstanding = 0;
        }
        if self.tx_stamps && self.delivered == 0 && self.requested >= GIVE_UP_AFTER {
            self.tx_stamps = false;
            self.outstanding = 0;
            tracing::warn!(
                requested = self.requested,
                "the kernel returned no transmit timestamp: interleaved requests get basic \
                 replies and the served-time error is not measured (on sockets: is \
                 net.core.tstamp_allow_data 0? On AF_XDP: does the driver release frames only \
                 after sending them? See docs/xdp.md)"
            );
        }
    }
}

/// One transmit timestamp, however it came back: into interleaved mode's
/// table and the served-time counters, and its error into the send-path
/// delay.
fn take_stamp(
    delay: &mut SendPathDelay,
    stamp: &TxStamp<'_>,
    table: Option<&SharedTimestamps>,
    counters: &mut WorkerCounters,
) {
    if let Some((t2, error)) = super::tx_stamps::process(stamp, table, &mut counters.served) {
        delay.record(t2, error);
    }
}

/// `ts` plus `ns` nanoseconds (0 to a few hundred microseconds).
fn add_ns(ts: NtpTimestamp, ns: i64) -> NtpTimestamp {
    if ns == 0 {
        return ts;
    }
    // The send-path delays added here are microseconds: 64-bit arithmetic
    // is exact below 2^31 ns, and spares a 128-bit division per reply.
    let bits = if ns.unsigned_abs() < 1 << 31 {
        (ns << 32) / 1_000_000_000
    } else {
        ((i128::from(ns) << 32) / 1_000_000_000) as i64
    };
    NtpTimestamp::from_bits(ts.to_bits().wrapping_add(bits as u64))
}

/// The saved transmit time for an interleaved request naming `origin`, if it
/// was taken by the kernel or the card; counts why not otherwise.
fn previous_tx(
    table: Option<&SharedTimestamps>,
    origin: Option<NtpTimestamp>,
    served: &mut ServedTimeCounters,
) -> Option<SavedTx> {
    let (table, origin) = (table?, origin?);
    match table.take(origin) {
        Some(saved) if saved.source != TxSource::Daemon => Some(saved),
        Some(_) => {
            served.fallbacks[Fallback::NoKernelTimestamp as usize] += 1;
            None
        }
        None => {
            served.fallbacks[Fallback::NotFound as usize] += 1;
            None
        }
    }
}

/// Saves the daemon's reading `t3` as the transmit time of the reply that
/// carried `rx`, until the kernel's replaces it.
fn save_tx(
    table: &SharedTimestamps,
    rx: NtpTimestamp,
    t3: NtpTimestamp,
    served: &mut ServedTimeCounters,
) {
    if table.insert(rx, t3, TxSource::Daemon) == Inserted::Evicted {
        served.evicted += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn add_ns_agrees_with_128_bit_arithmetic() {
        let t = NtpTimestamp::from_bits(0x1234_5678_9abc_def0);
        for ns in [
            -5_000_000_000i64,
            -(1 << 31),
            -200_000,
            -1,
            1,
            999,
            200_000,
            (1 << 31) - 1,
            1 << 31,
            7_000_000_000,
        ] {
            let bits = ((i128::from(ns) << 32) / 1_000_000_000) as u64;
            assert_eq!(
                add_ns(t, ns).to_bits(),
                t.to_bits().wrapping_add(bits),
                "{ns}"
            );
        }
        assert_eq!(add_ns(t, 0), t);
    }
}
