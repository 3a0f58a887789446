//! One worker thread: receive a batch (`recvmmsg`, kernel receive
//! timestamps), sort it (staleness, size, access lists, rate limit, NTS or
//! not), verify the MACs of the plain and MAC requests batched per key
//! ([`Server::prepare_batch`]), then answer each request in arrival order
//! with its own transmit timestamp and `sendmsg` ([`super::reply`], which
//! says why), and read back the transmit timestamps the kernel returned
//! ([`super::tx_stamps`]). All buffers are allocated when the worker starts.
//!
//! The batch logic ([`Worker::answer`]) is the AF_XDP path's too
//! ([`super::xdp_worker`]): it reads a batch through [`Datagrams`] and sends
//! through [`Replies`].

use std::net::UdpSocket;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use authtime_nts::MAX_BATCH;
use authtime_packet_io::{BATCH, RecvBatch, Sender};
use authtime_proto::{PreparedReply, RateVerdict, Server};
use authtime_wire::NtpTimestamp;

use super::batch_io::{Datagrams, Replies, SocketReplies};
use super::key_store::{KeyStore, KeyView};
use super::nts_reply::{NtsBatch, NtsShared, RandomPool, is_nts_request};
use super::reply::{ReplyPath, Request};
use super::timestamps::SharedTimestamps;
use crate::admission::access::AccessList;
use crate::admission::client_limiter::ClientLimiter;
use crate::clock;
use crate::clock::state::{self as clock_state, ClockState, ClockView};
use crate::config::clock::UnsyncPolicy;
use crate::metrics::clients::{ClientPopulation, Outcome, Protocol};
use crate::metrics::served_time::Source;
use crate::metrics::{StatsSink, WorkerCounters, daemon_drop, lock};

/// What every worker shares.
#[derive(Debug)]
pub(crate) struct Shared {
    /// The policy half of every reply; the clock half comes from `clock` at
    /// every batch.
    pub(crate) server: Server,
    /// The state of the clock served.
    pub(crate) clock: Arc<ClockState>,
    pub(crate) keys: Arc<KeyStore>,
    pub(crate) limiter: Option<ClientLimiter>,
    pub(crate) access: AccessList,
    pub(crate) stop: Arc<AtomicBool>,
    /// The rate limiter's monotonic clock starts here.
    pub(crate) started: Instant,
    /// NTS, when configured.
    pub(crate) nts: Option<NtsShared>,
    /// Interleaved mode's transmit times, when it is on.
    pub(crate) timestamps: Option<Arc<SharedTimestamps>>,
    /// Requests older than this when read are dropped.
    pub(crate) max_request_age: Option<Duration>,
    /// Every this many basic replies, one's kernel transmit timestamp is
    /// read to measure the error of the T3 served (0: never).
    pub(crate) sample_every: u32,
    /// The sockets return transmit timestamps when asked.
    pub(crate) tx_stamps: bool,
    /// Basic transmit timestamps get the measured send-path delay added.
    pub(crate) compensate: bool,
    /// Who the clients are, when the metrics endpoint is on.
    pub(crate) clients: Option<Arc<ClientPopulation>>,
}

/// Receive errors other than timeouts are logged at most this often per worker.
const ERROR_LOG_INTERVAL: Duration = Duration::from_secs(10);

/// Serves `socket` until the stop flag is set.
pub(crate) fn run(socket: &UdpSocket, shared: &Shared, counters: &Mutex<WorkerCounters>) {
    let mut rx = RecvBatch::new();
    let mut sender = Sender::new();
    let mut path = ReplyPath::new(shared.tx_stamps, shared.sample_every, shared.compensate);
    let mut keys = KeyView::new(&shared.keys);
    let mut random = RandomPool::new();
    let mut nts_batch = NtsBatch::new();
    let mut clock = ClockView::new(&shared.clock);
    let mut last_error_log: Option<Instant> = None;
    let mut kernel_drops = 0u32;
    let table = shared.timestamps.as_deref();
    while !shared.stop.load(Ordering::Relaxed) {
        match rx.receive(socket) {
            Ok(0) => path.read_tx_stamps(socket, table, &mut lock(counters)),
            Ok(n) => {
                let mut counters = lock(counters);
                // Stamps that came back while the worker waited first, so
                // that a client's next request finds its kernel time.
                path.read_tx_stamps(socket, table, &mut counters);
                let drops = rx.kernel_drops();
                counters.served.kernel_drops += u64::from(drops.wrapping_sub(kernel_drops));
                kernel_drops = drops;
                path.start_batch();
                let mut replies = SocketReplies {
                    socket,
                    sender: &mut sender,
                    batch: &rx,
                };
                let mut worker = Worker {
                    replies: &mut replies,
                    shared,
                    table,
                    path: &mut path,
                    random: &mut random,
                    nts_batch: &mut nts_batch,
                    counters: &mut counters,
                };
                worker.answer(n, &*rx, &mut keys, &mut clock);
                path.read_tx_stamps(socket, table, &mut counters);
            }
            Err(e) => {
                if last_error_log.is_none_or(|t| t.elapsed() >= ERROR_LOG_INTERVAL) {
                    tracing::warn!(error = %e, "receive failed");
                    last_error_log = Some(Instant::now());
                }
                // Do not spin on a persistent error.
                std::thread::sleep(Duration::from_millis(10));
            }
        }
    }
}

/// How one datagram of a batch is answered.
#[derive(Debug, Clone, Copy)]
enum Route {
    /// Dropped (and counted) while sorting.
    Skip,
    /// A plain or MAC request, prepared in slot `j` of the batch.
    Batch(usize),
    /// A request the rate limiter refused (RATE Kiss-o'-Death or drop).
    Limited(RateVerdict),
    /// An NTS request.
    Nts,
}

/// One batch's borrowings: where its replies go, what every worker shares,
/// and this worker's state.
pub(crate) struct Worker<'a, R> {
    pub(crate) replies: &'a mut R,
    pub(crate) shared: &'a Shared,
    /// Interleaved mode's table, on a path that serves it.
    pub(crate) table: Option<&'a SharedTimestamps>,
    pub(crate) path: &'a mut ReplyPath,
    pub(crate) random: &'a mut RandomPool,
    pub(crate) nts_batch: &'a mut NtsBatch,
    pub(crate) counters: &'a mut WorkerCounters,
}

impl<R: Replies> Worker<'_, R> {
    /// Answers the `n` datagrams of `rx`: sorts them, prepares the plain and
    /// MAC requests together and the NTS ones in chunks, then finishes and
    /// sends each reply in arrival order.
    pub(crate) fn answer<D: Datagrams + ?Sized>(
        &mut self,
        n: usize,
        rx: &D,
        keys: &mut KeyView,
        clock: &mut ClockView,
    ) {
        let shared = self.shared;
        // The clock right after the receive, read once for the batch: the
        // receive timestamp of datagrams without a kernel one, the
        // reference for their age, and the time of the NTS keys and of the
        // announcement.
        let wall = clock::now_unix();
        let received_at = NtpTimestamp::from_unix_time(wall);
        let now_unix = u64::try_from(wall.secs).unwrap_or(0);
        // The rate limiter's monotonic time, only when there is one.
        let now_ns = shared.limiter.as_ref().map_or(0, |_| {
            u64::try_from(shared.started.elapsed().as_nanos()).unwrap_or(u64::MAX)
        });
        let keys = keys.refresh(&shared.keys);
        let announcement = clock.announce(&shared.clock, wall);
        self.counters.batches += 1;
        if !announcement.is_synchronized()
            && shared.clock.unsynchronized_policy() == UnsyncPolicy::Drop
        {
            for _ in 0..n {
                self.counters
                    .drop_before_server(daemon_drop::UNSYNCHRONIZED);
            }
            return;
        }
        // Every reply of the batch (plain, MAC, NTS, Kiss-o'-Death) carries the
        // clock fields of this announcement.
        let server = Server::new(clock_state::apply(*shared.server.config(), &announcement));

        let mut routes = [Route::Skip; BATCH];
        let mut recv = [NtpTimestamp::ZERO; BATCH];
        let mut data: [&[u8]; BATCH] = [&[]; BATCH];
        let mut batch: [(&[u8], NtpTimestamp); BATCH] = [(&[], NtpTimestamp::ZERO); BATCH];
        let mut m = 0;
        // The NTS requests, in arrival order, prepared in chunks.
        let mut nts_requests: [&[u8]; BATCH] = [&[]; BATCH];
        let mut nts_count = 0;
        // Who sent the batch, counted after the replies are out.
        let mut seen = [(
            std::net::IpAddr::from([0u8; 4]),
            Protocol::Ntp,
            Outcome::Served,
        ); BATCH];
        let mut seen_count = 0;
        for i in 0..n {
            let d = rx.datagram(i);
            data[i] = d.data;
            let source = d.stamp.map_or(Source::Daemon, |s| Source::from(s.source));
            self.counters.served.rx_source[source as usize] += 1;
            recv[i] = d
                .stamp
                .map_or(received_at, |s| clock::from_realtime(s.secs, s.nanos));
            if let (Some(max), Some(_)) = (shared.max_request_age, d.stamp) {
                let age = received_at.duration_since(recv[i]).as_nanos();
                if age > max.as_nanos() as i128 {
                    self.counters.drop_before_server(daemon_drop::STALE);
                    continue;
                }
            }
            if d.truncated {
                self.counters.drop_before_server(daemon_drop::TOO_LARGE);
                continue;
            }
            let Some(peer) = d.peer else {
                self.counters.drop_before_server(daemon_drop::DENIED);
                continue;
            };
            let nts = shared.nts.is_some() && is_nts_request(d.data);
            let protocol = if nts { Protocol::Nts } else { Protocol::Ntp };
            if !shared.access.is_open() && !shared.access.allows(peer.ip()) {
                self.counters.drop_before_server(daemon_drop::DENIED);
                seen[seen_count] = (peer.ip(), protocol, Outcome::Refused);
                seen_count += 1;
                continue;
            }
            let verdict = shared
                .limiter
                .as_ref()
                .map_or(RateVerdict::Allow, |l| l.check(peer.ip(), now_ns));
            seen[seen_count] = (
                peer.ip(),
                protocol,
                if verdict == RateVerdict::Allow {
                    Outcome::Served
                } else {
                    Outcome::Limited
                },
            );
            seen_count += 1;
            routes[i] = if nts {
                if verdict == RateVerdict::Allow {
                    nts_requests[nts_count] = d.data;
                    nts_count += 1;
                    Route::Nts
                } else {
                    self.counters.received += 1;
                    self.counters.rate_limited += 1;
                    self.counters.nts_dropped.add("rate_limited", 1);
                    Route::Skip
                }
            } else if verdict == RateVerdict::Allow {
                batch[m] = (d.data, recv[i]);
                m += 1;
                Route::Batch(m - 1)
            } else {
                Route::Limited(verdict)
            };
        }

        let mut prepared = [PreparedReply::empty(); BATCH];
        server.prepare_batch(&batch[..m], keys, &mut prepared[..m]);
        // Sorting and preparing, shared among the batch's requests (from
        // the batch's one clock reading: no second read when it is empty).
        let prepared_ns = match m {
            0 => 0,
            m => {
                let took = clock::now().duration_since(received_at).as_nanos();
                u64::try_from(took).unwrap_or(0) / m as u64
            }
        };

        let table = self.table;
        let mut nts_seen = 0;
        // The master keys in force, once for the batch's NTS requests.
        let ring = match &shared.nts {
            Some(nts) if nts_count > 0 => Some(nts.keeper.current()),
            _ => None,
        };
        for (i, route) in routes.iter().enumerate().take(n) {
            let request = Request {
                data: data[i],
                recv_ts: recv[i],
                index: i,
            };
            match *route {
                Route::Skip => {}
                Route::Batch(j) => {
                    let mut stats = StatsSink {
                        counters: self.counters,
                        keys,
                    };
                    self.path.send_ntp(
                        &mut *self.replies,
                        &prepared[j],
                        &request,
                        table,
                        prepared_ns,
                        &mut stats,
                    );
                }
                Route::Limited(verdict) => {
                    let reply =
                        server.prepare_limited(request.data, verdict, request.recv_ts, keys);
                    let mut stats = StatsSink {
                        counters: self.counters,
                        keys,
                    };
                    self.path
                        .send_ntp(&mut *self.replies, &reply, &request, table, 0, &mut stats);
                }
                Route::Nts => {
                    if let (Some(nts), Some(ring)) = (&shared.nts, &ring) {
                        let slot = nts_seen % MAX_BATCH;
                        if slot == 0 {
                            let chunk =
                                &nts_requests[nts_seen..nts_count.min(nts_seen + MAX_BATCH)];
                            self.nts_batch
                                .prepare(nts, ring, chunk, now_unix, self.random);
                        }
                        nts_seen += 1;
                        self.path.send_nts(
                            &mut *self.replies,
                            nts,
                            ring,
                            self.nts_batch.get(slot),
                            &server,
                            &request,
                            table,
                            now_unix,
                            self.random,
                            self.counters,
                        );
                    }
                }
            }
        }
        if let Some(clients) = &shared.clients {
            clients.record_batch(now_unix, &seen[..seen_count]);
        }
    }
}
