//! One worker thread: receive a batch, filter it (size, access lists, rate
//! limit), answer it through [`Server::handle_batch`], send the replies in one
//! batch. All buffers are allocated when the worker starts.

use std::net::UdpSocket;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use authtime_packet_io::{BATCH, DATAGRAM_LEN, RecvBatch, SendBatch};
use authtime_proto::{BatchItem, RateVerdict, Server, ServerAction};
use authtime_wire::NtpTimestamp;

use crate::admission::access::AccessList;
use crate::admission::client_limiter::ClientLimiter;
use crate::clock;
use crate::clock::state::{self as clock_state, ClockState, ClockView};
use crate::config::clock::UnsyncPolicy;
use crate::metrics::{StatsSink, WorkerCounters, daemon_drop, lock};
use crate::ntp::key_store::{KeyStore, KeyView};
use crate::ntp::nts_reply::{self as nts_worker, NtsShared, RandomPool, is_nts_request};
use crate::nts::keys::unix_now;

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
}

/// Receive errors other than timeouts are logged at most this often per worker.
const ERROR_LOG_INTERVAL: Duration = Duration::from_secs(10);

/// Serves `socket` until the stop flag is set.
pub(crate) fn run(socket: &UdpSocket, shared: &Shared, counters: &Mutex<WorkerCounters>) {
    let mut rx = RecvBatch::new();
    let mut tx: Box<[[u8; DATAGRAM_LEN]; BATCH]> = Box::new([[0; DATAGRAM_LEN]; BATCH]);
    let mut send = SendBatch::new();
    let mut keys = KeyView::new(&shared.keys);
    let mut random = RandomPool::new();
    let mut clock = ClockView::new(&shared.clock);
    let mut last_error_log: Option<Instant> = None;
    while !shared.stop.load(Ordering::Relaxed) {
        match rx.receive(socket) {
            Ok(0) => {}
            Ok(n) => answer(
                n,
                socket,
                shared,
                &rx,
                &mut tx,
                &mut send,
                &mut keys,
                &mut random,
                &mut clock,
                counters,
            ),
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

#[expect(
    clippy::too_many_arguments,
    reason = "the worker's buffers, passed apart so that they borrow separately"
)]
fn answer(
    n: usize,
    socket: &UdpSocket,
    shared: &Shared,
    rx: &RecvBatch,
    tx: &mut [[u8; DATAGRAM_LEN]; BATCH],
    send: &mut SendBatch,
    keys: &mut KeyView,
    random: &mut RandomPool,
    clock: &mut ClockView,
    counters: &Mutex<WorkerCounters>,
) {
    // The clock right after the receive: the receive timestamp of datagrams
    // without a kernel one.
    let received_at = clock::now();
    let now_ns = u64::try_from(shared.started.elapsed().as_nanos()).unwrap_or(u64::MAX);
    let keys = keys.refresh(&shared.keys);
    let now_unix = unix_now();
    let announcement = clock.announce(&shared.clock, clock::now_unix());
    let mut counters = lock(counters);
    counters.batches += 1;
    if !announcement.is_synchronized() && shared.clock.unsynchronized_policy() == UnsyncPolicy::Drop
    {
        for _ in 0..n {
            counters.drop_before_server(daemon_drop::UNSYNCHRONIZED);
        }
        return;
    }
    // Every reply of the batch (plain, MAC, NTS, Kiss-o'-Death) carries the
    // clock fields of this announcement.
    let server = Server::new(clock_state::apply(*shared.server.config(), &announcement));
    let mut stats = StatsSink {
        counters: &mut counters,
        keys,
    };

    // Items answered by the batch fill slots from the front; rate-limited
    // ones, answered one by one, from the back. `origin[slot]` is the datagram.
    let mut items = tx
        .each_mut()
        .map(|out| BatchItem::new(&[], NtpTimestamp::ZERO, out));
    let mut origin = [0usize; BATCH];
    let (mut front, mut back) = (0, BATCH);
    for i in 0..n {
        let d = rx.datagram(i);
        let recv_ts = d
            .stamp
            .map_or(received_at, |s| clock::from_realtime(s.secs, s.nanos));
        if d.truncated {
            stats.counters.drop_before_server(daemon_drop::TOO_LARGE);
            continue;
        }
        let Some(peer) = d.peer else {
            stats.counters.drop_before_server(daemon_drop::DENIED);
            continue;
        };
        if !shared.access.is_open() && !shared.access.allows(peer.ip()) {
            stats.counters.drop_before_server(daemon_drop::DENIED);
            continue;
        }
        let verdict = shared
            .limiter
            .as_ref()
            .map_or(RateVerdict::Allow, |l| l.check(peer.ip(), now_ns));
        if let Some(nts) = shared.nts.as_ref().filter(|_| is_nts_request(d.data)) {
            back -= 1;
            origin[back] = i;
            let item = &mut items[back];
            item.action = if verdict == RateVerdict::Allow {
                nts_worker::answer(
                    nts,
                    &server,
                    d.data,
                    recv_ts,
                    clock::now(),
                    now_unix,
                    random,
                    item.out,
                    stats.counters,
                )
            } else {
                stats.counters.received += 1;
                stats.counters.rate_limited += 1;
                stats.counters.nts_dropped.add("rate_limited", 1);
                ServerAction::Drop(authtime_proto::DropReason::RateLimited)
            };
            continue;
        }
        if verdict == RateVerdict::Allow {
            items[front].request = d.data;
            items[front].recv_ts = recv_ts;
            origin[front] = i;
            front += 1;
        } else {
            back -= 1;
            origin[back] = i;
            let item = &mut items[back];
            item.action = server.handle_limited(
                d.data,
                verdict,
                recv_ts,
                clock::now(),
                keys,
                item.out,
                &mut stats,
            );
        }
    }
    let started = Instant::now();
    server.handle_batch(&mut items[..front], clock::now(), keys, &mut stats);
    if front > 0 {
        let took = u64::try_from(started.elapsed().as_nanos()).unwrap_or(u64::MAX);
        stats
            .counters
            .ntp_time
            .record(took / front as u64, front as u64);
    }

    let replies = (0..front).chain(back..BATCH).filter_map(|slot| {
        let item = &items[slot];
        match item.action {
            ServerAction::Send(len) => Some((&item.out[..len], rx.peer_name(origin[slot]))),
            ServerAction::Drop(_) => None,
        }
    });
    let refused = send.send(socket, replies);
    if refused > 0 {
        stats.counters.send_errors += refused as u64;
        tracing::debug!(refused, "the kernel refused replies");
    }
}
