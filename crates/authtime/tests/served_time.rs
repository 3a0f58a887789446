//! The time `authtime serve` puts in its replies, seen from a client on
//! loopback with kernel receive timestamps (client and server read one
//! clock, so a reply's kernel arrival time minus its transmit timestamp is
//! how early that timestamp was):
//!
//! - a burst of 32 requests read in one batch: the last reply's transmit
//!   timestamp is as close to its departure as the first's (one clock read
//!   per reply, not per batch);
//! - interleaved mode (RFC 9769): each request from a new source port, on a
//!   server with four workers, gets the previous reply's kernel transmit
//!   time, which lies between the server's clock reading before that reply
//!   and its arrival here;
//! - the interleaved table's bound: more clients than entries fall back to
//!   basic mode, counted, and the server's memory stays put;
//! - requests that waited longer than `max-request-age` are not answered.
//!
//! The server is paused with SIGSTOP where a test needs requests to queue.

mod ntp_support;

use std::net::{SocketAddr, UdpSocket};
use std::time::{Duration, Instant};

use authtime_packet_io::{enable_timestamps, recv_one, wait_for_receive_stamps};
use authtime_wire::{Header, Mode, NtpTimestamp, Reader, Writer};
use ntp_support::{Serve, TempDir};

/// A client socket on loopback whose datagrams carry kernel receive times.
fn client() -> UdpSocket {
    let s = UdpSocket::bind("127.0.0.1:0").expect("bind");
    assert!(enable_timestamps(&s, false).receive, "no kernel timestamps");
    assert!(wait_for_receive_stamps(Duration::from_secs(5)));
    s
}

/// An NTPv4 client request with the given timestamps.
fn request(origin: u64, receive: u64, transmit: u64) -> [u8; 48] {
    let mut h = Header::new(Mode::Client);
    h.version = 4;
    h.origin_ts = NtpTimestamp::from_bits(origin);
    h.receive_ts = NtpTimestamp::from_bits(receive);
    h.transmit_ts = NtpTimestamp::from_bits(transmit);
    let mut buf = [0u8; 48];
    h.encode(&mut Writer::new(&mut buf)).expect("encode");
    buf
}

/// A reply and when the kernel received it.
struct Reply {
    header: Header,
    arrived: NtpTimestamp,
}

/// The next reply on `socket`, waiting at most `limit`.
fn next_reply(socket: &UdpSocket, limit: Duration) -> Option<Reply> {
    socket
        .set_read_timeout(Some(limit.max(Duration::from_millis(1))))
        .expect("timeout");
    let mut buf = [0u8; 512];
    let got = recv_one(socket, &mut buf, true).ok()?;
    let stamp = got.stamp.expect("a kernel receive timestamp");
    let header = Header::decode(&mut Reader::new(&buf[..got.len])).expect("a reply");
    Some(Reply {
        header,
        arrived: NtpTimestamp::from_unix(stamp.secs, stamp.nanos),
    })
}

/// One exchange: send `req` from `socket` to `to`, the reply (2 s at most).
fn exchange(socket: &UdpSocket, to: SocketAddr, req: &[u8; 48]) -> Reply {
    socket.send_to(req, to).expect("send");
    next_reply(socket, Duration::from_secs(2)).expect("a reply within 2 s")
}

/// `later − earlier` in nanoseconds.
fn ns(later: NtpTimestamp, earlier: NtpTimestamp) -> i128 {
    later.duration_since(earlier).as_nanos()
}

fn median(mut v: Vec<i128>) -> i128 {
    v.sort_unstable();
    v[v.len() / 2]
}

/// A server on loopback with rate limiting off and `extra` lines in `[ntp]`.
fn serve(dir: &TempDir, workers: usize, extra: &str) -> Serve {
    Serve::start(
        dir,
        &format!(
            "[ntp]\nlisten = [\"127.0.0.1:0\"]\nworkers = {workers}\n{extra}\n\
             [rate-limit]\nenabled = false\n"
        ),
    )
}

#[test]
fn a_burst_read_in_one_batch_gets_a_transmit_timestamp_per_reply() {
    let dir = TempDir::new("burst");
    // The clock reading as T3, as it is: this test is about where it is
    // read, not about the delay the server may learn to add to it.
    let serve = serve(
        &dir,
        1,
        "max-request-age = 0\naccuracy-sample = 0\ntransmit-timestamp = \"clock\"",
    );
    let socket = client();
    let mut tries = Vec::new();
    for attempt in 0..3u64 {
        let batches = serve.metric("authtime_ntp_receive_batches_total");
        // Paused, the server reads the whole burst in one recvmmsg.
        serve.process.signal("STOP");
        for k in 0..32u64 {
            socket
                .send_to(&request(0, 0, (attempt << 32) | k), serve.addr)
                .expect("send");
        }
        serve.process.signal("CONT");
        let mut early = vec![0i128; 32];
        for _ in 0..32 {
            let r = next_reply(&socket, Duration::from_secs(5)).expect("32 replies");
            let k = (r.header.origin_ts.to_bits() & 0xffff_ffff) as usize;
            early[k] = ns(r.arrived, r.header.transmit_ts);
        }
        let read_in = serve.metric("authtime_ntp_receive_batches_total") - batches;
        assert!(
            early.iter().all(|e| *e >= 0),
            "a transmit timestamp after the reply arrived: {early:?}"
        );
        let first = median(early[..4].to_vec());
        let last = median(early[28..].to_vec());
        // One read per batch made the last replies ~5 µs later per earlier
        // send in the batch (about 150 µs on loopback): a clock read per
        // reply keeps them within a few microseconds of the first.
        if read_in == 1 && last - first < 20_000 {
            return;
        }
        tries.push(format!(
            "attempt {attempt}: {read_in} batch(es), first {first} ns, last {last} ns, all {early:?}"
        ));
    }
    panic!(
        "the burst's last replies were not stamped as exactly as its first:\n{}",
        tries.join("\n")
    );
}

#[test]
fn interleaved_replies_carry_the_kernel_transmit_time_whatever_port_and_worker() {
    let dir = TempDir::new("interleaved");
    let serve = serve(&dir, 4, "");
    let (mut origin, mut last): (u64, Option<Reply>) = (0, None);
    let (mut interleaved, mut checked_against_daemon) = (0, 0);
    let mut basic_daemon_t3: Option<NtpTimestamp> = None;
    for i in 0..12u64 {
        // A new socket each time: a new source port, so SO_REUSEPORT hands
        // the requests to the four workers at random.
        let socket = client();
        let (rx_cookie, tx_cookie) = (0x5151_0000 + i, 0x7a7a_0000 + i);
        let reply = exchange(&socket, serve.addr, &request(origin, rx_cookie, tx_cookie));
        let h = reply.header;
        if h.origin_ts.to_bits() == rx_cookie && origin != 0 {
            interleaved += 1;
            let previous = last.as_ref().expect("a previous reply");
            // The kernel's transmit time of the previous reply: after the
            // server's clock reading for it, before it arrived here.
            let gap = ns(previous.arrived, h.transmit_ts);
            assert!(
                (0..200_000).contains(&gap),
                "reply {i}: transmit {:?} is {gap} ns before the previous reply arrived",
                h.transmit_ts
            );
            if let Some(daemon) = basic_daemon_t3 {
                let after = ns(h.transmit_ts, daemon);
                assert!(
                    after > 0,
                    "reply {i}: {after} ns after the daemon's reading"
                );
                checked_against_daemon += 1;
            }
            basic_daemon_t3 = None;
        } else {
            assert_eq!(
                h.origin_ts.to_bits(),
                tx_cookie,
                "reply {i}: a bogus origin"
            );
            basic_daemon_t3 = Some(h.transmit_ts);
        }
        assert_eq!(
            h.receive_ts.to_bits() & 1,
            1,
            "receive timestamps are marked"
        );
        origin = h.receive_ts.to_bits();
        last = Some(reply);
        // Clients poll far slower; this leaves the server the few
        // microseconds it needs to read the kernel's stamp of the reply.
        std::thread::sleep(Duration::from_millis(5));
    }
    // Request 0 has no origin and request 1 names a reply that was not
    // saved (request 0 did not ask for interleaved mode): 10 can be.
    assert!(
        interleaved >= 9,
        "{interleaved} of 10 interleaved:\n{}",
        serve.scrape()
    );
    assert_eq!(checked_against_daemon, 1);
    assert_eq!(
        serve.metric("authtime_ntp_transmit_timestamps_total{source=\"kernel\"}"),
        interleaved
    );
    assert_eq!(
        serve.metric("authtime_ntp_replies_total{mode=\"interleaved\"}"),
        interleaved
    );
}

/// Resident memory of `pid` in KiB.
fn rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("status");
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .expect("VmRSS")
}

/// `clients` logical clients, each: a basic exchange, an interleaved
/// request the server cannot answer yet (it saves that reply's transmit
/// time), and one it can answer if the time is still held. Returns how many
/// of the last were interleaved.
fn many_clients(socket: &UdpSocket, to: SocketAddr, clients: u64) -> u64 {
    let mut t2 = Vec::with_capacity(clients as usize);
    for c in 0..clients {
        t2.push(
            exchange(socket, to, &request(0, 0, c + 1))
                .header
                .receive_ts
                .to_bits(),
        );
    }
    for (c, origin) in t2.iter_mut().enumerate() {
        let c = c as u64;
        *origin = exchange(socket, to, &request(*origin, 1 << 40 | c, 2 << 40 | c))
            .header
            .receive_ts
            .to_bits();
    }
    let mut interleaved = 0;
    for (c, origin) in t2.iter().enumerate() {
        let rx_cookie = 3 << 40 | c as u64;
        let h = exchange(socket, to, &request(*origin, rx_cookie, 4 << 40 | c as u64)).header;
        if h.origin_ts.to_bits() == rx_cookie {
            interleaved += 1;
        }
    }
    interleaved
}

#[test]
fn more_interleaved_clients_than_entries_fall_back_to_basic_in_bounded_memory() {
    let dir = TempDir::new("table-bound");
    let serve = serve(&dir, 1, "interleaved-table-size = 64");
    let socket = client();
    std::thread::sleep(Duration::from_millis(50));
    let capacity = serve.metric("authtime_ntp_interleaved_timestamps_capacity");
    assert_eq!(capacity, 64);
    let interleaved = many_clients(&socket, serve.addr, 300);
    assert!(
        interleaved <= capacity,
        "{interleaved} interleaved with {capacity} entries"
    );
    let evicted = serve.metric("authtime_ntp_interleaved_evictions_total");
    assert!(evicted >= 300 - capacity, "{evicted} evictions");
    let not_found = serve.metric("authtime_ntp_interleaved_fallbacks_total{reason=\"not_found\"}");
    assert!(
        not_found >= 300 + (300 - interleaved),
        "{not_found} fallbacks"
    );
    assert!(serve.metric("authtime_ntp_interleaved_timestamps_held") <= capacity);
    // Ten times the clients: the table does not grow.
    let before = rss_kib(serve.process.pid());
    let interleaved = many_clients(&socket, serve.addr, 3000);
    let after = rss_kib(serve.process.pid());
    assert!(interleaved <= capacity);
    assert!(serve.metric("authtime_ntp_interleaved_timestamps_held") <= capacity);
    assert!(
        after <= before + 1024,
        "resident memory grew from {before} KiB to {after} KiB"
    );
}

#[test]
fn requests_older_than_the_bound_are_dropped_not_answered_late() {
    let dir = TempDir::new("stale");
    let serve = serve(&dir, 1, "max-request-age = 0.005");
    let socket = client();
    // Answered while fresh.
    exchange(&socket, serve.addr, &request(0, 0, 1));
    serve.process.signal("STOP");
    // The requests must find the server stopped: wait until every thread is
    // (state T in /proc), or a busy machine may let the worker run on.
    let pid = serve.process.pid();
    let stopped = || {
        std::fs::read_dir(format!("/proc/{pid}/task")).is_ok_and(|tasks| {
            tasks.flatten().all(|t| {
                std::fs::read_to_string(t.path().join("stat"))
                    .ok()
                    .and_then(|s| s.rsplit_once(") ").map(|(_, r)| r.starts_with('T')))
                    .unwrap_or(true)
            })
        })
    };
    let deadline = Instant::now() + Duration::from_secs(2);
    while !stopped() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(1));
    }
    assert!(stopped(), "the server did not stop");
    for k in 0..40u64 {
        socket
            .send_to(&request(0, 0, 100 + k), serve.addr)
            .expect("send");
    }
    std::thread::sleep(Duration::from_millis(60));
    serve.process.signal("CONT");
    let stale = serve.wait_metric("authtime_ntp_dropped_total{reason=\"stale\"}", 40);
    assert_eq!(stale, 40, "{}", serve.scrape());
    assert!(
        next_reply(&socket, Duration::from_millis(300)).is_none(),
        "a request 60 ms old was answered"
    );
    // The server answers fresh requests as before.
    let started = Instant::now();
    let reply = exchange(&socket, serve.addr, &request(0, 0, 7));
    assert_eq!(reply.header.origin_ts.to_bits(), 7);
    assert!(started.elapsed() < Duration::from_secs(2));
}

#[test]
fn status_shows_what_the_server_measured_about_the_time_it_served() {
    let dir = TempDir::new("status-served");
    let serve = serve(&dir, 2, "accuracy-sample = 1");
    let socket = client();
    let mut origin = 0;
    for i in 0..6u64 {
        let h = exchange(&socket, serve.addr, &request(origin, 0x100 + i, 0x200 + i)).header;
        origin = h.receive_ts.to_bits();
        std::thread::sleep(Duration::from_millis(5));
    }
    // The configuration `authtime status` reads: the server's clock and the
    // port its metrics endpoint got.
    let config = serve.status_config(&dir);
    let addr = serve.addr.to_string();
    let config_arg = config.display().to_string();
    let out = ntp_support::authtime(&[
        "status",
        "--config",
        &config_arg,
        "--server",
        &addr,
        "--json",
    ]);
    assert!(out.status.success(), "{}", ntp_support::text_of(&out));
    let json: serde_json::Value =
        serde_json::from_slice(&out.stdout).expect("status --json prints JSON");
    let served = &json["served_time"];
    // Two basic replies to the client above, one to `status` itself.
    assert_eq!(served["replies"]["basic"], 3, "{served}");
    assert_eq!(served["replies"]["interleaved"], 4, "{served}");
    assert_eq!(served["transmit_timestamps"]["kernel"], 4, "{served}");
    assert_eq!(served["interleaved_table"]["capacity"], 65536, "{served}");
    // Every basic reply was sampled: three measured errors, each well under
    // a second either way (with transmit-timestamp = "measured", the
    // default, a T3 may be a little after the departure).
    assert_eq!(served["transmit_error"]["samples"], 3, "{served}");
    let mean = served["transmit_error"]["mean_seconds"]
        .as_f64()
        .expect("a mean");
    assert!(mean.abs() < 1.0, "{mean}");
    // The text form says the same in words.
    let out = ntp_support::authtime(&["status", "--config", &config_arg, "--server", &addr]);
    let text = ntp_support::text(&out.stdout);
    assert!(
        text.contains("8 time replies: 4 basic, 4 interleaved"),
        "{text}"
    );
}

#[test]
fn a_flood_past_the_knee_gets_no_reply_older_than_the_bound() {
    let dir = TempDir::new("flood");
    // A receive buffer that holds far more than 5 ms of this server's work
    // (a debug build): only the bound keeps replies fresh.
    let serve = serve(&dir, 1, "max-request-age = 0.005\nreceive-buffer = 8388608");
    let socket = client();
    let _ = authtime_packet_io::set_receive_buffer(&socket, 16 << 20);
    const FLOOD: u64 = 20_000;
    let sender = socket.try_clone().expect("clone");
    let to = serve.addr;
    let started = Instant::now();
    let flood = std::thread::spawn(move || {
        for k in 0..FLOOD {
            let _ = sender.send_to(&request(0, 0, 1_000_000 + k), to);
        }
    });
    let mut oldest_ns = 0i128;
    let mut answered = 0u64;
    while let Some(r) = next_reply(&socket, Duration::from_millis(500)) {
        answered += 1;
        oldest_ns = oldest_ns.max(ns(r.header.transmit_ts, r.header.receive_ts));
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "still answering"
        );
    }
    flood.join().expect("flood");
    let stale = serve.metric("authtime_ntp_dropped_total{reason=\"stale\"}");
    assert!(answered > 0, "nothing answered");
    assert!(
        stale > 0,
        "no request waited 5 ms: no flood ({answered} answered)"
    );
    // A request is read within 5 ms of its arrival or dropped; its reply
    // then waits at most for the rest of its batch (32 replies).
    assert!(
        oldest_ns < 25_000_000,
        "a reply {oldest_ns} ns after its request arrived ({answered} answered, {stale} stale)"
    );
}
