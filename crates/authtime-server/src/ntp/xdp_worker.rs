//! One AF_XDP worker thread, on one receive queue: take a batch of frames
//! off the socket's RX ring, classify each ([`authtime_frame::parse`]),
//! count and recycle those that are not requests to a served endpoint,
//! dispatch the others by destination port, and answer them with the socket
//! workers' batch logic: NTP ([`super::worker::Worker::answer`], up to
//! [`BATCH`] at a time) here, Roughtime in [`crate::roughtime::xdp`] (up to
//! 64 under one signature, after the NTP requests of the batch). Each NTP
//! reply is written into the chunk its request came in, its Ethernet, IP
//! and UDP headers around it ([`authtime_frame::finish_reply`]), and sent at
//! once: on the TX ring and a kick, so the transmit timestamp read just
//! before it is as late as on the socket path.
//!
//! A request's payload is copied out of its chunk (tens to hundreds of
//! bytes) before the batch is answered, because the chunk is then written
//! with the reply while other requests of the batch are still being read.
//!
//! Receive time: the XDP program's timestamp from the frame's metadata,
//! converted from `CLOCK_TAI` (counted as a `kernel` receive timestamp), or,
//! without metadata, the batch's clock reading (`daemon`), as on the socket
//! path without kernel timestamps.
//!
//! Transmit time: where the socket has AF_XDP transmit metadata
//! ([`Xsk::tx_timestamps`]), the replies the socket path would ask the
//! kernel to stamp (those saved for interleaved mode, and the sampled
//! basic ones) are sent with a timestamp request, and the kernel's time
//! comes back with the frame from the completion ring, right after the
//! kick in copy mode. It is used as the socket path uses the error queue's
//! ([`super::tx_stamps`]): interleaved replies carry it, and the measured
//! send-path delay ([`super::compensation`]) is learnt from it. Without
//! transmit metadata, every time reply is basic and T3 is the bare clock
//! reading.

use std::io;
use std::sync::Mutex;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant, UNIX_EPOCH};

use authtime_frame::{Addressing, DropReason, PassReason, Served, Verdict};
use authtime_packet_io::{BATCH, DATAGRAM_LEN, Datagram, Stamp, StampSource, TxStamp};
use authtime_xdp::{RxFrame, RxStamp, TxCompletion, Xsk, XskStats};

use super::batch_io::{Datagrams, Replies};
use super::key_store::KeyView;
use super::nts_reply::{NtsBatch, RandomPool};
use super::reply::ReplyPath;
use super::sockets::RECEIVE_TIMEOUT;
use super::worker::{Shared, Worker};
use crate::clock::state::ClockView;
use crate::metrics::{LabelCounts, WorkerCounters, lock};
use crate::roughtime::worker::BATCH as ROUGHTIME_BATCH;
use crate::roughtime::xdp::{RoughtimeFrames, XdpRoughtime};

/// How often the kernel's counters of the socket are read.
const STATS_INTERVAL: Duration = Duration::from_secs(1);
/// Errors of the socket are logged at most this often per worker.
const ERROR_LOG_INTERVAL: Duration = Duration::from_secs(10);

/// What one AF_XDP worker counted of the frames its queue received.
#[derive(Debug, Default)]
pub(crate) struct FrameCounters {
    /// Frames that are requests to a served endpoint (answered or dropped
    /// by the NTP or Roughtime logic, and counted there too).
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
    kernel_stamp(stamp.time)
}

/// A kernel reading, converted to the real-time clock, as a [`Stamp`].
fn kernel_stamp(time: std::time::SystemTime) -> Option<Stamp> {
    let since = time.duration_since(UNIX_EPOCH).ok()?;
    Some(Stamp {
        secs: i64::try_from(since.as_secs()).ok()?,
        nanos: since.subsec_nanos(),
        source: StampSource::Kernel,
    })
}

/// The transmit time of a reply sent with a timestamp request, as the
/// error queue would have given it.
fn tx_stamp<'c>(completion: &TxCompletion<'c>) -> Option<TxStamp<'c>> {
    Some(TxStamp {
        stamp: kernel_stamp(completion.sent)?,
        packet: completion.frame,
        id: 0,
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
    fn send(&mut self, i: usize, reply: &[u8], tx_stamp: bool) -> io::Result<()> {
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
        if tx_stamp {
            frame.send_stamped(len).map(|_| ())
        } else {
            frame.send(len).map(|_| ())
        }
    }
}

/// The NTP side of one worker: its staging and the state the batch logic
/// keeps between batches.
struct NtpSide<'s> {
    shared: &'s Shared,
    staging: Staging,
    path: ReplyPath,
    keys: KeyView,
    random: RandomPool,
    nts_batch: NtsBatch,
    clock: ClockView,
}

impl NtpSide<'_> {
    /// Answers the `n` requests staged, each reply in the frame of `held`
    /// its request came in; the frames not answered go back to the fill
    /// ring.
    fn answer(
        &mut self,
        n: usize,
        held: &mut [Option<RxFrame<'_>>; BATCH],
        counters: &mut WorkerCounters,
    ) {
        if n > 0 {
            self.path.start_batch();
            let mut replies = FrameReplies {
                frames: held,
                staging: &self.staging,
            };
            let mut worker = Worker {
                replies: &mut replies,
                shared: self.shared,
                table: self.shared.timestamps.as_deref(),
                path: &mut self.path,
                random: &mut self.random,
                nts_batch: &mut self.nts_batch,
                counters,
            };
            worker.answer(n, &self.staging, &mut self.keys, &mut self.clock);
        }
        for frame in &mut held[..n] {
            *frame = None;
        }
    }

    /// Puts the chunks the kernel has sent back on the fill ring, taking
    /// the transmit times of the replies sent with a timestamp request.
    fn reclaim(&mut self, xsk: &mut Xsk, counters: &Mutex<WorkerCounters>) {
        let table = self.shared.timestamps.as_deref();
        let mut locked = None;
        let mut read = 0;
        let path = &mut self.path;
        xsk.reclaim_completions_with(|completion| {
            if let Some(stamp) = tx_stamp(&completion) {
                let counters = locked.get_or_insert_with(|| lock(counters));
                path.take_tx_stamp(&stamp, table, counters);
                read += 1;
            }
        });
        drop(locked);
        path.tx_stamps_read(read);
    }
}

/// Serves `xsk` until the stop flag is set: NTP requests to `served` are
/// answered, and Roughtime requests to its ports with `roughtime`; every
/// other frame is counted in `frames` and recycled.
pub(crate) fn run(
    xsk: &mut Xsk,
    served: &Served,
    shared: &Shared,
    roughtime: Option<&XdpRoughtime>,
    counters: &Mutex<WorkerCounters>,
    frames: &Mutex<FrameCounters>,
) {
    let mut ntp = NtpSide {
        shared,
        staging: Staging::new(),
        // Transmit timestamps come back from the completion ring when the
        // socket has transmit metadata; without, T3 is the bare clock
        // reading.
        path: ReplyPath::new(xsk.tx_timestamps(), shared.sample_every, shared.compensate),
        keys: KeyView::new(&shared.keys),
        random: RandomPool::new(),
        nts_batch: NtsBatch::new(),
        clock: ClockView::new(&shared.clock),
    };
    let mut roughtime_clock = roughtime.map(|r| ClockView::new(&r.shared.clock));
    // With Roughtime, a receive batch is as large as a Roughtime batch, so
    // that up to 64 requests share a signature; its NTP requests are
    // answered BATCH at a time.
    let receive = if roughtime.is_some() {
        ROUGHTIME_BATCH
    } else {
        BATCH
    };
    let mut last_error_log: Option<Instant> = None;
    let mut last_stats: Option<Instant> = None;
    // The batch below holds the lock as `counters`.
    let counters_lock = counters;
    while !shared.stop.load(Ordering::Relaxed) {
        ntp.reclaim(xsk, counters_lock);
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
        let mut roughtime_frames = RoughtimeFrames::new();
        let mut n = 0;
        for frame in xsk.recv_batch(receive) {
            match authtime_frame::parse(frame.data(), served) {
                Verdict::Ours(request) => {
                    frame_counts.ours += 1;
                    let to = *request.addressing();
                    let payload = request.payload_range();
                    if let (Some(rt), Some(clock)) = (roughtime, roughtime_clock.as_mut())
                        && rt.serves(&to)
                    {
                        if roughtime_frames.is_full() {
                            roughtime_frames.answer(&rt.shared, clock);
                        }
                        roughtime_frames.push(frame, to, payload);
                        continue;
                    }
                    ntp.staging.put(n, request.payload(), to, frame.stamp());
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
            if n == BATCH {
                ntp.answer(n, &mut held, &mut counters);
                n = 0;
            }
        }
        drop(frame_counts);
        ntp.answer(n, &mut held, &mut counters);
        drop(counters);
        if let (Some(rt), Some(clock)) = (roughtime, roughtime_clock.as_mut()) {
            roughtime_frames.answer(&rt.shared, clock);
        }
        drop((held, roughtime_frames));
        // Replies that found the TX ring full, and the Roughtime responses,
        // go now.
        if let Err(e) = xsk.tx_submit()
            && last_error_log.is_none_or(|t| t.elapsed() >= ERROR_LOG_INTERVAL)
        {
            tracing::warn!(error = %e, queue = xsk.queue(), "AF_XDP transmit kick failed");
            last_error_log = Some(Instant::now());
        }
        // The replies' transmit times, before the next batch's interleaved
        // requests look for them.
        ntp.reclaim(xsk, counters_lock);
    }
}

/// Appends the AF_XDP families for the workers of `queues` (queue index,
/// its counters).
pub(crate) fn render(queues: &[(u32, std::sync::Arc<Mutex<FrameCounters>>)], out: &mut String) {
    let mut ours = 0;
    let mut pass = LabelCounts::<&'static str, 16>::default();
    let mut dropped = LabelCounts::<&'static str, 16>::default();
    // Every label shown with 0 before any frame.
    for label in PassReason::ALL {
        pass.add(label.as_str(), 0);
    }
    for label in DropReason::ALL {
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
         them: ours (an NTP or Roughtime request to a served endpoint, answered or dropped as \
         that protocol's counters say), pass (not a request to a served endpoint, such as one \
         to another address of the interface: neither answered nor seen by the kernel) or \
         drop (to a served endpoint but malformed or unanswerable), with the reason.",
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
            ("tx_timestamps", s.tx_timestamps),
            ("tx_timestamps_late", s.tx_timestamps_late),
            ("tx_timestamps_missing", s.tx_timestamps_missing),
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
         the daemon refused (never from a sound kernel); tx_timestamps counts replies' \
         transmit times taken from the completion ring, tx_timestamps_late those refused \
         because the kernel stamped the frame after the kick returned (a driver that \
         releases frames once sent), tx_timestamps_missing those that came without a time.",
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
