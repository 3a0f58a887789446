//! The Roughtime UDP worker: one `recvmmsg` batch of up to [`BATCH`]
//! requests in, one call of the sans-IO core
//! (`authtime_roughtime::respond_parsed`: one Merkle tree and one signature
//! per version) for every request of it that passed the filters, one
//! `sendmmsg` out. Each request is parsed once, here, and the parsed form is
//! what the core answers. [`answer_requests`] is shared with the TCP server;
//! [`answer_batch`], one receive batch from datagrams to responses, with the
//! AF_XDP workers (`crate::ntp::xdp_worker`), which read and answer through
//! [`BatchIo`] in the frames themselves.
//!
//! The time answered with is the system clock, rounded to the second; the
//! radius is what the clock state says the uncertainty is ([`radius`]), and
//! nothing is answered while the clock is unsynchronized.

use std::net::{IpAddr, UdpSocket};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use authtime_clock::Announcement;
use authtime_packet_io::{RecvBatch, SendBatch};
use authtime_proto::RateVerdict;
use authtime_roughtime::request::MIN_REQUEST_PACKET;
use authtime_roughtime::{BatchTime, parse_request, respond_parsed};
use authtime_wire::UnixTime;

use crate::admission::access::AccessList;
use crate::admission::client_limiter::ClientLimiter;
use crate::clock;
use crate::clock::state::{ClockState, ClockView};
use crate::metrics::clients::{ClientPopulation, Outcome, Protocol};
use crate::ntp::batch_io::Datagrams;
use crate::roughtime::keys::RoughtimeKeys;
use crate::roughtime::metrics::{Refusal, RoughtimeMetrics};

/// Requests per `recvmmsg`, so at most this many share a signature: 64, as
/// roughenough reads, twice the NTP worker's batch. The receive buffers are
/// 64 × 2 KiB per worker. The AF_XDP workers batch as many.
pub(crate) const BATCH: usize = 64;

/// What the UDP workers and the TCP connections share.
#[derive(Debug)]
pub(crate) struct RoughtimeShared {
    pub(crate) keys: Arc<RoughtimeKeys>,
    pub(crate) clock: Arc<ClockState>,
    pub(crate) limiter: Option<ClientLimiter>,
    pub(crate) access: AccessList,
    pub(crate) max_radius: u32,
    pub(crate) metrics: Arc<RoughtimeMetrics>,
    pub(crate) stop: Arc<AtomicBool>,
    /// The rate limiter's monotonic clock starts here.
    pub(crate) started: Instant,
    /// Who the clients are, when the metrics endpoint is on.
    pub(crate) clients: Option<Arc<ClientPopulation>>,
}

/// The radius for `announcement`: the root distance an NTP reply would
/// carry (root delay / 2 + root dispersion) plus the half second the
/// whole-second midpoint may be off, rounded up, at least 1 s. `None` while
/// unsynchronized.
#[must_use]
pub fn radius(announcement: &Announcement) -> Option<u32> {
    if !announcement.is_synchronized() {
        return None;
    }
    let distance = announcement.root_delay.as_seconds_f64() / 2.0
        + announcement.root_dispersion.as_seconds_f64()
        + 0.5;
    // Non-finite or negative distances cannot come from an NtpShort; the
    // clamp keeps the conversion total anyway.
    Some(distance.ceil().clamp(1.0, f64::from(u32::MAX)) as u32)
}

/// `now` rounded to the nearest second.
fn midpoint(now: UnixTime) -> u64 {
    let secs = now.secs + i64::from(now.nanos >= 500_000_000);
    u64::try_from(secs).unwrap_or(0)
}

/// Answers `requests` (bytes and sender) as one batch. Returns the response
/// for each, in order, or `None` where it is dropped (counted).
pub(crate) fn answer_requests(
    shared: &RoughtimeShared,
    announcement: &Announcement,
    now: UnixTime,
    requests: &[(&[u8], IpAddr)],
) -> Vec<Option<Vec<u8>>> {
    let m = &shared.metrics;
    let mut out: Vec<Option<Vec<u8>>> = vec![None; requests.len()];
    let all = requests.len() as u64;
    let Some(radius) = radius(announcement) else {
        m.refuse(Refusal::Unsynchronized, all);
        return out;
    };
    if radius > shared.max_radius {
        m.refuse(Refusal::RadiusTooLarge, all);
        return out;
    }
    m.radius.store(u64::from(radius), Ordering::Relaxed);
    let midpoint = midpoint(now);
    let active = shared.keys.current();
    if !active.key.covers(midpoint) {
        m.refuse(Refusal::OutsideDelegation, all);
        return out;
    }
    let now_ns = u64::try_from(shared.started.elapsed().as_nanos()).unwrap_or(u64::MAX);
    let mut batch = Vec::with_capacity(requests.len());
    let mut origin = Vec::with_capacity(requests.len());
    let mut seen = Vec::with_capacity(if shared.clients.is_some() {
        requests.len()
    } else {
        0
    });
    for (i, (bytes, peer)) in requests.iter().enumerate() {
        if !shared.access.is_open() && !shared.access.allows(*peer) {
            m.refuse(Refusal::Denied, 1);
            if shared.clients.is_some() {
                seen.push((*peer, Protocol::Roughtime, Outcome::Refused));
            }
            continue;
        }
        if shared.clients.is_some() {
            seen.push((*peer, Protocol::Roughtime, Outcome::Served));
        }
        if bytes.len() < MIN_REQUEST_PACKET {
            m.refuse(Refusal::TooShort, 1);
            continue;
        }
        let request = match parse_request(bytes) {
            Ok(r) => r,
            Err(e) => {
                m.refuse(Refusal::from_error(&e), 1);
                continue;
            }
        };
        if request.srv.is_some_and(|s| s != active.srv) {
            m.refuse(Refusal::WrongSrv, 1);
            continue;
        }
        if let Some(limiter) = &shared.limiter
            && limiter.check(*peer, now_ns) != RateVerdict::Allow
        {
            m.refuse(Refusal::RateLimited, 1);
            if let Some(last) = seen.last_mut() {
                last.2 = Outcome::Limited;
            }
            continue;
        }
        batch.push(request);
        origin.push(i);
    }
    if let Some(clients) = &shared.clients {
        clients.record_batch(u64::try_from(now.secs).unwrap_or(0), &seen);
    }
    if batch.is_empty() {
        return out;
    }
    let time = BatchTime { midpoint, radius };
    match respond_parsed(&batch, time, &active.key) {
        Ok(responses) => {
            m.batch(batch.len());
            let mut signed: Vec<_> = batch.iter().map(|r| r.version).collect();
            signed.sort_unstable();
            signed.dedup();
            m.signatures
                .fetch_add(signed.len() as u64, Ordering::Relaxed);
            for ((response, i), request) in responses.into_iter().zip(origin).zip(&batch) {
                match response {
                    Ok(bytes) => {
                        m.sent(request.version);
                        out[i] = Some(bytes);
                    }
                    Err(e) => m.refuse(Refusal::from_error(&e), 1),
                }
            }
        }
        Err(e) => m.refuse(Refusal::from_error(&e), batch.len() as u64),
    }
    out
}

/// What [`answer_batch`] reads a receive batch from and sends its responses
/// through: the sockets (`recvmmsg` and `sendmmsg`, here) or the frames of
/// an AF_XDP socket. One type does both, since on AF_XDP a response is
/// written into its request's own frame. A generic parameter, not a trait
/// object: the socket path compiles to the calls it made before there were
/// two paths.
pub(crate) trait BatchIo: Datagrams {
    /// Sends each `(i, response)` to the source of datagram `i` of the
    /// batch; counts in `metrics` those that did not leave.
    fn send_responses<'r>(
        &mut self,
        responses: impl Iterator<Item = (usize, &'r [u8])>,
        metrics: &RoughtimeMetrics,
    );
}

/// Answers the `n` datagrams of one receive batch under one signature per
/// version, and sends the responses.
pub(crate) fn answer_batch<B: BatchIo>(
    shared: &RoughtimeShared,
    clock_view: &mut ClockView,
    n: usize,
    io: &mut B,
) {
    let now = clock::now_unix();
    let announcement = clock_view.announce(&shared.clock, now);
    shared
        .metrics
        .received
        .fetch_add(n as u64, Ordering::Relaxed);
    let mut requests = Vec::with_capacity(n);
    let mut index = Vec::with_capacity(n);
    for i in 0..n {
        let d = io.datagram(i);
        match d.peer {
            _ if d.truncated => shared.metrics.refuse(Refusal::TooLarge, 1),
            None => shared.metrics.refuse(Refusal::Malformed, 1),
            Some(peer) => {
                requests.push((d.data, peer.ip()));
                index.push(i);
            }
        }
    }
    let answers = answer_requests(shared, &announcement, now, &requests);
    drop(requests);
    let responses = answers
        .iter()
        .zip(&index)
        .filter_map(|(a, &i)| a.as_deref().map(|bytes| (i, bytes)));
    io.send_responses(responses, &shared.metrics);
}

/// One `recvmmsg` batch, answered with one `sendmmsg` on its socket.
struct SocketBatch<'a> {
    socket: &'a UdpSocket,
    rx: &'a RecvBatch<BATCH>,
    send: &'a mut SendBatch<BATCH>,
}

impl Datagrams for SocketBatch<'_> {
    #[inline]
    fn datagram(&self, i: usize) -> authtime_packet_io::Datagram<'_> {
        self.rx.datagram(i)
    }
}

impl BatchIo for SocketBatch<'_> {
    #[inline]
    fn send_responses<'r>(
        &mut self,
        responses: impl Iterator<Item = (usize, &'r [u8])>,
        metrics: &RoughtimeMetrics,
    ) {
        let rx = self.rx;
        let refused = self.send.send(
            self.socket,
            responses.map(|(i, bytes)| (bytes, rx.peer_name(i))),
        );
        if refused > 0 {
            metrics.refuse(Refusal::SendFailed, refused as u64);
        }
    }
}

/// Receive errors other than timeouts are logged at most this often.
const ERROR_LOG_INTERVAL: Duration = Duration::from_secs(10);

/// Serves Roughtime on `socket` until the stop flag is set.
pub(crate) fn run(socket: &UdpSocket, shared: &RoughtimeShared) {
    let mut rx = RecvBatch::<BATCH>::boxed();
    let mut send = SendBatch::<BATCH>::boxed();
    let mut clock_view = ClockView::new(&shared.clock);
    let mut last_error_log: Option<Instant> = None;
    while !shared.stop.load(Ordering::Relaxed) {
        let n = match rx.receive(socket) {
            Ok(0) => continue,
            Ok(n) => n,
            Err(e) => {
                if last_error_log.is_none_or(|t| t.elapsed() >= ERROR_LOG_INTERVAL) {
                    tracing::warn!(error = %e, "Roughtime receive failed");
                    last_error_log = Some(Instant::now());
                }
                std::thread::sleep(Duration::from_millis(10));
                continue;
            }
        };
        let mut io = SocketBatch {
            socket,
            rx: &rx,
            send: &mut send,
        };
        answer_batch(shared, &mut clock_view, n, &mut io);
    }
}

#[cfg(test)]
mod tests {
    use authtime_clock::UnsyncCause;
    use authtime_wire::NtpShort;

    use super::*;

    fn synchronized(delay: f64, dispersion: f64) -> Announcement {
        let mut a = Announcement::unsynchronized(UnsyncCause::ChronyNotSynchronised);
        a.unsynchronized = None;
        a.root_delay = NtpShort::from_seconds_f64(delay);
        a.root_dispersion = NtpShort::from_seconds_f64(dispersion);
        a
    }

    #[test]
    fn the_radius_covers_the_root_distance_and_the_rounding() {
        assert_eq!(radius(&synchronized(0.0, 0.0)), Some(1));
        assert_eq!(radius(&synchronized(0.02, 0.01)), Some(1));
        assert_eq!(radius(&synchronized(0.2, 0.45)), Some(2));
        assert_eq!(radius(&synchronized(4.0, 2.7)), Some(6));
        assert_eq!(
            radius(&Announcement::unsynchronized(
                UnsyncCause::ChronyNotSynchronised
            )),
            None
        );
    }

    #[test]
    fn midpoints_round_to_the_nearest_second() {
        assert_eq!(
            midpoint(UnixTime {
                secs: 10,
                nanos: 499_999_999
            }),
            10
        );
        assert_eq!(
            midpoint(UnixTime {
                secs: 10,
                nanos: 500_000_000
            }),
            11
        );
        assert_eq!(midpoint(UnixTime { secs: -3, nanos: 0 }), 0);
    }
}
