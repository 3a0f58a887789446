//! One AF_XDP worker thread, on one receive queue: take a batch of frames
//! off the socket's RX ring, classify each ([`authtime_frame::parse`]),
//! count and recycle those that are not NTP requests to a served endpoint,
//! and answer the others with the socket workers' batch logic
//! ([`super::worker::Worker::answer`]). Each reply is written into the
//! chunk its request came in, its Ethernet, IP and UDP headers around it
//! ([`authtime_frame::finish_reply`]), and sent at once: on the TX ring and
//! a kick, so the transmit timestamp read just before it is as late as on
//! the socket path.
//!
//! A request's payload is copied out of its chunk (tens to hundreds of
//! bytes) before the batch is answered, because the chunk is then written
//! with the reply while other requests of the batch are still being read.
//!
//! Receive time: the XDP program's timestamp from the frame's metadata,
//! converted from `CLOCK_TAI` (counted as a `kernel` receive timestamp), or,
//! without metadata, the batch's clock reading (`daemon`), as on the socket
//! path without kernel timestamps. No interleaved mode and no kernel
//! transmit timestamps: every time reply is basic.

use std::io;
use std::sync::Mutex;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant, UNIX_EPOCH};

use authtime_frame::{Addressing, DropReason, PassReason, Served, Verdict};
use authtime_packet_io::{BATCH, DATAGRAM_LEN, Datagram, Stamp, StampSource};
use authtime_xdp::{RxFrame, RxStamp, Xsk, XskStats};

use super::batch_io::{Datagrams, Replies};
use super::key_store::KeyView;
use super::nts_reply::{NtsBatch, RandomPool};
use super::reply::ReplyPath;
use super::sockets::RECEIVE_TIMEOUT;
use super::worker::{Shared, Worker};
use crate::clock::state::ClockView;
use crate::metrics::{LabelCounts, WorkerCounters, lock};

/// How often the kernel's counters of the socket are read.
const STATS_INTERVAL: Duration = Duration::from_secs(1);
/// Errors of the socket are logged at most this often per worker.
const ERROR_LOG_INTERVAL: Duration = Duration::from_secs(10);

/// What one AF_XDP worker counted of the frames its queue received.
#[derive(Debug, Default)]
pub(crate) struct FrameCounters {
    /// Frames that are requests to a served endpoint (answered or dropped
    /// by the NTP logic, and counted there too).
    pub(crate) ours: u64,
    /// Frames the program steered here that the frame layer would have
    /// given to the kernel: not answered, only counted.
    pub(crate) pass: LabelCounts<&'static str, 16>,
    /// Malformed or unanswerable frames to a served endpoint.
    pub(crate) drop: LabelCounts<&'static str, 16>,
    /// The kernel's counters of the socket, as last read.
    pub(crate) socket: XskStats,
}

/// The requests of one batch, copied out of their chunks: what the batch
/// logic reads ([`Datagrams`]). Allocated once per worker.
pub(crate) struct Staging {
    payloads: Box<[[u8; DATAGRAM_LEN]; BATCH]>,
    lens: [usize; BATCH],
    truncated: [bool; BATCH],
    addressing: [Option<Addressing>; BATCH],
    stamps: [Option<Stamp>; BATCH],
}

impl Staging {
    pub(crate) fn new() -> Self {
        Self {
            payloads: Box::new([[0; DATAGRAM_LEN]; BATCH]),
            lens: [0; BATCH],
            truncated: [false; BATCH],
            addressing: [None; BATCH],
            stamps: [None; BATCH],
        }
    }

    /// Keeps request `i`: its UDP payload, its addresses, its receive time.
    fn put(&mut self, i: usize, payload: &[u8], addressing: Addressing, stamp: RxStamp) {
        let len = payload.len().min(DATAGRAM_LEN);
        self.payloads[i][..len].copy_from_slice(&payload[..len]);
        self.lens[i] = len;
        self.truncated[i] = payload.len() > DATAGRAM_LEN;
        self.addressing[i] = Some(addressing);
        self.stamps[i] = realtime_stamp(stamp);
    }
}

/// The XDP program's reading as a receive timestamp; `None` (the batch's
/// clock reading is used) when the frame came without one.
fn realtime_stamp(stamp: RxStamp) -> Option<Stamp> {
    if stamp.source != authtime_xdp::StampSource::XdpMetadata {
        return None;
    }
    let since = stamp.time.duration_since(UNIX_EPOCH).ok()?;
    Some(Stamp {
        secs: i64::try_from(since.as_secs()).ok()?,
        nanos: since.subsec_nanos(),
        source: StampSource::Kernel,
    })
}

impl Datagrams for Staging {
    fn datagram(&self, i: usize) -> Datagram<'_> {
        Datagram {
            data: &self.payloads[i][..self.lens[i]],
            peer: self.addressing[i].map(|a| a.source()),
            stamp: self.stamps[i],
            truncated: self.truncated[i],
        }
    }
}

/// Replies written into the requests' own chunks and sent at once.
struct FrameReplies<'s, 'f> {
    frames: &'s mut [Option<RxFrame<'f>>; BATCH],
    staging: &'s Staging,
}

impl Replies for FrameReplies<'_, '_> {
    fn send(&mut self, i: usize, reply: &[u8], _tx_stamp: bool) -> io::Result<()> {
        let (Some(mut frame), Some(to)) = (
            self.frames.get_mut(i).and_then(Option::take),
            self.staging.addressing.get(i).copied().flatten(),
        ) else {
            return Err(io::Error::other("no frame for this request"));
        };
        let offset = authtime_frame::reply_payload_offset(&to);
        let buf = frame.buffer_mut();
        let Some(payload) = buf.get_mut(offset..offset + reply.len()) else {
            // Dropping the frame gives its chunk back for receiving.
            return Err(io::Error::other("the reply does not fit its frame's chunk"));
        };
        payload.copy_from_slice(reply);
        let len = authtime_frame::finish_reply(&to, buf, reply.len()).map_err(io::Error::other)?;
        frame.send(len).map(|_| ())
    }
}

/// Serves `xsk` until the stop flag is set: requests to `served` are
/// answered, every other frame is counted in `frames` and recycled.
pub(crate) fn run(
    xsk: &mut Xsk,
    served: &Served,
    shared: &Shared,
    counters: &Mutex<WorkerCounters>,
    frames: &Mutex<FrameCounters>,
) {
    let mut staging = Staging::new();
    // No transmit timestamps come back from an AF_XDP socket, and no
    // send-path delay is measured: plain clock readings for T3.
    let mut path = ReplyPath::new(false, 0, false);
    let mut keys = KeyView::new(&shared.keys);
    let mut random = RandomPool::new();
    let mut nts_batch = NtsBatch::new();
    let mut clock = ClockView::new(&shared.clock);
    let mut last_error_log: Option<Instant> = None;
    let mut last_stats: Option<Instant> = None;
    while !shared.stop.load(Ordering::Relaxed) {
        xsk.reclaim_completions();
        if last_stats.is_none_or(|t| t.elapsed() >= STATS_INTERVAL) {
            if let Ok(stats) = xsk.stats() {
                lock(frames).socket = stats;
            }
            last_stats = Some(Instant::now());
        }
        match xsk.wait(RECEIVE_TIMEOUT) {
            Ok(true) => {}
            Ok(false) => continue,
            // A signal, such as the one glibc sends every thread to apply
            // the privilege switch.
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => {
                if last_error_log.is_none_or(|t| t.elapsed() >= ERROR_LOG_INTERVAL) {
                    tracing::warn!(error = %e, queue = xsk.queue(), "AF_XDP poll failed");
                    last_error_log = Some(Instant::now());
                }
                std::thread::sleep(Duration::from_millis(10));
                continue;
            }
        }
        let mut counters = lock(counters);
        let mut frame_counts = lock(frames);
        let mut held: [Option<RxFrame<'_>>; BATCH] = std::array::from_fn(|_| None);
        let mut n = 0;
        for frame in xsk.recv_batch(BATCH) {
            match authtime_frame::parse(frame.data(), served) {
                Verdict::Ours(request) => {
                    staging.put(n, request.payload(), *request.addressing(), frame.stamp());
                    frame_counts.ours += 1;
                }
                // Not answered: the frame goes back to the fill ring.
                Verdict::Pass(reason) => {
                    frame_counts.pass.add(reason.as_str(), 1);
                    continue;
                }
                Verdict::Drop(reason) => {
                    frame_counts.drop.add(reason.as_str(), 1);
                    continue;
                }
            }
            held[n] = Some(frame);
            n += 1;
        }
        drop(frame_counts);
        if n > 0 {
            path.start_batch();
            let mut replies = FrameReplies {
                frames: &mut held,
                staging: &staging,
            };
            let mut worker = Worker {
                replies: &mut replies,
                shared,
                table: None,
                path: &mut path,
                random: &mut random,
                nts_batch: &mut nts_batch,
                counters: &mut counters,
            };
            worker.answer(n, &staging, &mut keys, &mut clock);
        }
        drop(counters);
        // Requests not answered give their chunks back.
        drop(held);
        // Replies that found the TX ring full go now.
        if let Err(e) = xsk.tx_submit()
            && last_error_log.is_none_or(|t| t.elapsed() >= ERROR_LOG_INTERVAL)
        {
            tracing::warn!(error = %e, queue = xsk.queue(), "AF_XDP transmit kick failed");
            last_error_log = Some(Instant::now());
        }
    }
}

/// Pass reasons shown with 0 before any frame: every one the frame layer
/// knows today (a new one appears once counted).
const PASS_LABELS: [PassReason; 11] = [
    PassReason::Short,
    PassReason::Vlan,
    PassReason::NotIp,
    PassReason::BadIpHeader,
    PassReason::IpOptions,
    PassReason::Fragment,
    PassReason::Ipv6Extension,
    PassReason::NotUdp,
    PassReason::OtherPort,
    PassReason::OtherAddress,
    PassReason::BadDestination,
];

/// Drop reasons shown with 0 before any frame.
const DROP_LABELS: [DropReason; 8] = [
    DropReason::Short,
    DropReason::BadLength,
    DropReason::BadIpChecksum,
    DropReason::BadUdpChecksum,
    DropReason::MissingUdpChecksum,
    DropReason::BadSourceMac,
    DropReason::BadSourceAddress,
    DropReason::SourcePortZero,
];

/// Appends the AF_XDP families for the workers of `queues` (queue index,
/// its counters).
pub(crate) fn render(queues: &[(u32, std::sync::Arc<Mutex<FrameCounters>>)], out: &mut String) {
    let mut ours = 0;
    let mut pass = LabelCounts::<&'static str, 16>::default();
    let mut dropped = LabelCounts::<&'static str, 16>::default();
    for label in PASS_LABELS {
        pass.add(label.as_str(), 0);
    }
    for label in DROP_LABELS {
        dropped.add(label.as_str(), 0);
    }
    let mut sockets = Vec::with_capacity(queues.len());
    for (queue, counters) in queues {
        let c = lock(counters);
        ours += c.ours;
        for (label, n) in c.pass.iter() {
            pass.add(label, n);
        }
        for (label, n) in c.drop.iter() {
            dropped.add(label, n);
        }
        sockets.push((*queue, c.socket));
    }
    let mut frames = vec![("{verdict=\"ours\"}".to_owned(), ours)];
    for (verdict, counts) in [("pass", &pass), ("drop", &dropped)] {
        for (reason, n) in counts.iter() {
            frames.push((format!("{{verdict=\"{verdict}\",reason=\"{reason}\"}}"), n));
        }
    }
    crate::metrics::write_family(
        out,
        "authtime_xdp_frames_total",
        "counter",
        "Frames the XDP program steered to the AF_XDP sockets, by what the frame layer made of \
         them: ours (an NTP request to a served endpoint, answered or dropped as the NTP \
         counters say), pass (not a request to a served endpoint, such as one to another \
         address of the interface: neither answered nor seen by the kernel) or drop (to a \
         served endpoint but malformed or unanswerable), with the reason.",
        &frames,
    );
    let mut events = Vec::new();
    for (queue, s) in &sockets {
        for (event, n) in [
            ("rx_dropped", s.rx_dropped),
            ("rx_invalid_descs", s.rx_invalid_descs),
            ("tx_invalid_descs", s.tx_invalid_descs),
            ("rx_ring_full", s.rx_ring_full),
            ("fill_ring_empty", s.rx_fill_ring_empty),
            ("tx_ring_empty", s.tx_ring_empty),
            ("refused_descs", s.refused_descs),
        ] {
            events.push((format!("{{queue=\"{queue}\",event=\"{event}\"}}"), n));
        }
    }
    crate::metrics::write_family(
        out,
        "authtime_xdp_socket_events_total",
        "counter",
        "The kernel's counters of each AF_XDP socket (XDP_STATISTICS, read every second): \
         frames dropped (rx_dropped, rx_ring_full: the worker fell behind), fill ring found \
         empty, TX ring found empty, invalid descriptors; refused_descs counts descriptors \
         the daemon refused (never from a sound kernel).",
        &events,
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_metadata_stamps_are_receive_timestamps() {
        let time = UNIX_EPOCH + Duration::new(1_700_000_000, 123);
        let meta = RxStamp {
            time,
            source: authtime_xdp::StampSource::XdpMetadata,
        };
        assert_eq!(
            realtime_stamp(meta),
            Some(Stamp {
                secs: 1_700_000_000,
                nanos: 123,
                source: StampSource::Kernel
            })
        );
        let user = RxStamp {
            time,
            source: authtime_xdp::StampSource::UserSpace,
        };
        assert_eq!(realtime_stamp(user), None);
    }

    #[test]
    fn every_reason_is_rendered_before_any_frame() {
        let counters = std::sync::Arc::new(Mutex::new(FrameCounters::default()));
        lock(&counters)
            .drop
            .add(DropReason::BadUdpChecksum.as_str(), 2);
        lock(&counters).ours = 5;
        let mut out = String::new();
        render(&[(0, counters)], &mut out);
        for line in [
            "authtime_xdp_frames_total{verdict=\"ours\"} 5",
            "authtime_xdp_frames_total{verdict=\"pass\",reason=\"vlan\"} 0",
            "authtime_xdp_frames_total{verdict=\"drop\",reason=\"bad_udp_checksum\"} 2",
            "authtime_xdp_socket_events_total{queue=\"0\",event=\"rx_ring_full\"} 0",
        ] {
            assert!(out.lines().any(|l| l == line), "{line} missing in\n{out}");
        }
    }
}
