//! Hostile NTP and NTS datagrams against the real `authtime serve` on
//! loopback: a flood of malformed packets while an honest NTS client keeps
//! asking (it must keep its authenticated answers, the server's memory must
//! stay put, and every datagram must be counted), and a corpus of requests
//! of every kind whose replies must never be larger than the requests
//! (no amplification).

mod hostile_support;
mod ntp_support;
use ntp_support::nts_cert;

use std::net::{SocketAddr, UdpSocket};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use authtime_nts::SessionKeys;
use hostile_support::{
    Exchange, Rng, Session, exchange, family_sum, nts_config, nts_request, status_kib,
    udp_socket_drops,
};
use ntp_support::{Serve, TempDir, keygen};

const UID: u16 = 0x0104;
const COOKIE: u16 = 0x0204;
const PLACEHOLDER: u16 = 0x0304;
const AUTHENTICATOR: u16 = 0x0404;

fn field(out: &mut Vec<u8>, field_type: u16, body: &[u8]) {
    out.extend_from_slice(&field_type.to_be_bytes());
    out.extend_from_slice(
        &u16::try_from(4 + body.len())
            .unwrap_or(u16::MAX)
            .to_be_bytes(),
    );
    out.extend_from_slice(body);
}

/// An NTS request built by hand, so that it may break the rules our own
/// client obeys: `cookies` cookie fields and `placeholders` placeholders in
/// the plaintext, then an authenticator that really seals (an empty
/// plaintext) under the session's C2S key.
fn hand_built(
    keys: &SessionKeys,
    cookie: &[u8],
    cookies: usize,
    placeholders: usize,
    rng: &mut Rng,
) -> Vec<u8> {
    let mut out = hostile_support::client_header(rng.next_u64()).encode_to_vec();
    field(&mut out, UID, &rng.bytes(32));
    let mut body = cookie.to_vec();
    body.resize(cookie.len().next_multiple_of(4), 0);
    for _ in 0..cookies {
        field(&mut out, COOKIE, &body);
    }
    for _ in 0..placeholders {
        field(&mut out, PLACEHOLDER, &vec![0; body.len()]);
    }
    let nonce = rng.bytes(16);
    let mut tag = [0u8; 16];
    keys.c2s()
        .seal_in_place(&nonce, &out, &mut tag, 0)
        .expect("seal");
    let mut auth = Vec::new();
    auth.extend_from_slice(&16u16.to_be_bytes());
    auth.extend_from_slice(&16u16.to_be_bytes());
    auth.extend_from_slice(&nonce);
    auth.extend_from_slice(&tag);
    field(&mut out, AUTHENTICATOR, &auth);
    out
}

/// Encodes a header alone (48 bytes).
trait EncodeToVec {
    fn encode_to_vec(&self) -> Vec<u8>;
}

impl EncodeToVec for authtime_wire::Header {
    fn encode_to_vec(&self) -> Vec<u8> {
        let mut buf = [0u8; 48];
        let mut w = authtime_wire::Writer::new(&mut buf);
        self.encode(&mut w).expect("header");
        buf.to_vec()
    }
}

/// Offsets of the extension field headers of an NTS request from our client
/// (UID, cookie, placeholders..., authenticator).
fn field_offsets(packet: &[u8]) -> Vec<usize> {
    let mut at = 48;
    let mut offsets = Vec::new();
    while let Some(h) = packet.get(at..at + 4) {
        offsets.push(at);
        let len = usize::from(u16::from_be_bytes([h[2], h[3]]));
        if len < 4 {
            break;
        }
        at += len;
    }
    offsets
}

/// One malformed or hostile datagram of kind `kind`, made from a valid
/// request `valid` of this session.
fn hostile(kind: usize, valid: &[u8], s: &Session, rng: &mut Rng) -> Vec<u8> {
    let cookie = &s.cookies[0];
    match kind {
        // Random bytes, any length up to a full Ethernet frame.
        0 => {
            let len = rng.below(1200);
            rng.bytes(len)
        }
        // A valid request cut anywhere.
        1 => valid[..rng.below(valid.len())].to_vec(),
        // One extension field length made wrong: zero, too short, not a
        // multiple of 4, overlapping the next field, running past the end.
        2 => {
            let mut p = valid.to_vec();
            let offsets = field_offsets(&p);
            let at = offsets[rng.below(offsets.len())];
            let real = usize::from(u16::from_be_bytes([p[at + 2], p[at + 3]]));
            let lengths = [0, 2, 4, 8, 12, 14, 18, real - 4, real + 4, 0xfffc, 0xffff];
            let len = lengths[rng.below(lengths.len())] as u16;
            p[at + 2..at + 4].copy_from_slice(&len.to_be_bytes());
            p
        }
        // A MAC trailer of a size no MAC has (key id 1 exists on the server).
        3 => {
            let mut p = hostile_support::client_header(rng.next_u64()).encode_to_vec();
            p.extend_from_slice(&1u32.to_be_bytes());
            let sizes = [0, 1, 2, 3, 5, 8, 12, 15, 17, 19, 21, 23, 25, 28, 33, 64];
            let n = sizes[rng.below(sizes.len())];
            p.extend_from_slice(&rng.bytes(n));
            p
        }
        // A cookie of an absurd size (up to a datagram larger than the
        // server's receive buffer), authenticator copied from a valid request.
        4 => {
            let sizes = [0, 4, 8, 252, 256, 260, 1000, 1400, 4000, 9000];
            let n = sizes[rng.below(sizes.len())];
            let mut p = hostile_support::client_header(rng.next_u64()).encode_to_vec();
            field(&mut p, UID, &rng.bytes(32));
            field(&mut p, COOKIE, &rng.bytes(n));
            let auth = field_offsets(valid).last().copied().unwrap_or(48);
            p.extend_from_slice(&valid[auth..]);
            p
        }
        // A byte of the cookie changed: NTS NAK.
        5 => {
            let mut p = valid.to_vec();
            let at = 48 + 36 + 4 + rng.below(cookie.len());
            p[at] ^= 1 << rng.below(8);
            p
        }
        // A byte of the authenticator's ciphertext changed: NTS NAK.
        6 => {
            let mut p = valid.to_vec();
            let len = p.len();
            p[len - 1 - rng.below(16)] ^= 0x80;
            p
        }
        // Asking for too many cookies: 8 to 40 placeholders, correctly sealed.
        7 => {
            let placeholders = 8 + rng.below(33);
            hand_built(&s.keys, cookie, 1, placeholders, rng)
        }
        // Two cookies, or none.
        8 => {
            let cookies = [0, 2, 3][rng.below(3)];
            hand_built(&s.keys, cookie, cookies, 0, rng)
        }
        // Plain NTP headers of every version and mode, with junk after them.
        _ => {
            let len = 48 + 4 * rng.below(20);
            let mut p = rng.bytes(len);
            p[0] = rng.next_u64() as u8;
            p
        }
    }
}

/// The tests of this file run one at a time: the flood keeps both CPUs of a
/// small machine busy, and the other tests' servers would share them.
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn one_at_a_time() -> std::sync::MutexGuard<'static, ()> {
    ONE_AT_A_TIME
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

fn server_with_keys(dir: &TempDir, rate_limit: bool) -> Serve {
    nts_cert(dir, "nts", &[]);
    keygen(
        dir,
        "ntp.keys",
        "ntpd",
        &[("md5", 1), ("sha1", 2), ("aes128", 3)],
    );
    Serve::start(
        dir,
        &nts_config(
            "keys = \"ntp.keys\"\nauth-failure = \"crypto-nak\"",
            "",
            &format!(
                "[keystore]\npath = \"master-keys\"\n[rate-limit]\nenabled = {rate_limit}\n\
                 burst = 4\nrate = 0.5\n"
            ),
        ),
    )
}

/// Every datagram has one outcome: answered (a crypto-NAK counts as a plain
/// answer too), NTS-answered, NTS-NAKed or dropped.
fn outcomes(metrics: &str) -> u64 {
    [
        "authtime_ntp_answered_total",
        "authtime_ntp_dropped_total",
        "authtime_nts_answered_total",
        "authtime_nts_naks_total",
        "authtime_nts_dropped_total",
    ]
    .iter()
    .map(|name| family_sum(metrics, name))
    .sum()
}

#[test]
fn a_flood_of_malformed_packets_is_counted_and_the_honest_client_keeps_its_answers() {
    let _serial = one_at_a_time();
    let dir = TempDir::new("hostile-flood");
    let serve = server_with_keys(&dir, false);
    let session = hostile_support::session(&dir, &serve, &dir.path("nts-ca.pem"));
    let to = SocketAddr::new([127, 0, 0, 1].into(), serve.addr.port());
    let before = serve.scrape();
    let kernel_drops_before = udp_socket_drops(serve.addr.port());

    // The honest client: one NTS exchange every 10 ms from 127.0.0.1, using
    // the fresh cookies each reply brings.
    let stop = Arc::new(AtomicBool::new(false));
    let honest_sent = Arc::new(AtomicU64::new(0));
    let honest_done = Arc::new(AtomicU64::new(0));
    let honest = {
        let (stop, sent, done) = (stop.clone(), honest_sent.clone(), honest_done.clone());
        let (keys, mut cookies) = (session.keys.clone(), session.cookies.clone());
        std::thread::spawn(move || {
            let socket = UdpSocket::bind("127.0.0.1:0").expect("bind");
            let mut rng = Rng::new(99);
            let (mut ok, mut naks, mut lost) = (0u64, 0u64, 0u64);
            let deadline = Instant::now() + Duration::from_secs(30);
            while !stop.load(Ordering::Relaxed) && Instant::now() < deadline {
                let cookie = cookies.pop().expect("a cookie left");
                sent.fetch_add(1, Ordering::Relaxed);
                match exchange(
                    &socket,
                    to,
                    &keys,
                    &cookie,
                    1,
                    &mut rng,
                    Duration::from_secs(1),
                ) {
                    Exchange::Time(fresh) => {
                        ok += 1;
                        cookies.extend(fresh);
                    }
                    Exchange::Nak => naks += 1,
                    Exchange::Lost => {
                        lost += 1;
                        cookies.push(cookie);
                    }
                }
                done.fetch_add(1, Ordering::Relaxed);
                std::thread::sleep(Duration::from_millis(10));
            }
            (ok, naks, lost)
        })
    };

    // The attacker, from 127.0.0.2: bursts of 32, 10 kinds in turn, at
    // least 1000 bursts and on until the honest client has made 50
    // exchanges under the flood (a slow or busy machine makes fewer per
    // second), within 30 s.
    let attacker = UdpSocket::bind("127.0.0.2:0").expect("bind 127.0.0.2");
    let mut rng = Rng::new(0x5eed);
    let (valid, _) = nts_request(&session.keys, &session.cookies[0], 2, &mut rng);
    let pid = serve.process.pid();
    let mut sent = 0u64;
    let mut rss_warm = 0;
    let flood_started = Instant::now();
    let mut bursts = 0;
    while bursts < 1000
        || (honest_done.load(Ordering::Relaxed) < 50
            && flood_started.elapsed() < Duration::from_secs(30))
    {
        let burst = bursts;
        bursts += 1;
        for _ in 0..32 {
            let packet = hostile(rng.below(10), &valid, &session, &mut rng);
            // A datagram the kernel refuses to send (none on loopback) is not counted.
            if attacker.send_to(&packet, to).is_ok() {
                sent += 1;
            }
        }
        if burst == 200 {
            rss_warm = status_kib(pid, "VmRSS");
        }
        std::thread::sleep(Duration::from_millis(1));
        assert!(
            flood_started.elapsed() < Duration::from_secs(40),
            "flood too slow"
        );
    }
    let flood_time = flood_started.elapsed();
    stop.store(true, Ordering::Relaxed);
    let (honest_ok, honest_naks, honest_lost) = honest.join().expect("honest client");
    let honest_sent = honest_sent.load(Ordering::Relaxed);

    // Wait until the server has taken in everything the kernel did not drop.
    let expected = sent + honest_sent;
    let received_before = family_sum(&before, "authtime_ntp_received_total");
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut after = serve.scrape();
    let taken_in = |after: &str| {
        family_sum(after, "authtime_ntp_received_total") - received_before
            + (udp_socket_drops(serve.addr.port()) - kernel_drops_before)
    };
    while taken_in(&after) < expected && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
        after = serve.scrape();
    }
    let rss_end = status_kib(pid, "VmRSS");
    let kernel_drops = udp_socket_drops(serve.addr.port()) - kernel_drops_before;
    let received = family_sum(&after, "authtime_ntp_received_total") - received_before;
    let counted = outcomes(&after) - outcomes(&before);
    eprintln!(
        "flood: {sent} hostile datagrams in {bursts} bursts, {flood_time:?}, honest \
         {honest_ok}/{honest_sent} ({honest_naks} NAKs, {honest_lost} lost), received \
         {received}, counted {counted}, kernel drops {kernel_drops}, RSS {rss_warm} -> \
         {rss_end} KiB"
    );

    assert!(honest_ok >= 50, "the honest client ran: {honest_ok}");
    // Never refused: a NAK would mean a hostile datagram spoiled the honest
    // session. A loss (kernel drop of a full socket buffer, or a reply later
    // than 1 s from a descheduled server) is not a refusal; at least 90%
    // answered keeps the client served.
    assert_eq!(honest_naks, 0, "no honest request was NAKed");
    assert!(
        honest_lost * 10 <= honest_ok + honest_lost,
        "the honest client kept its answers: {honest_ok} answered, {honest_lost} lost"
    );
    // Every datagram that reached the socket was received and has one outcome.
    assert!(
        received + kernel_drops >= expected && received <= expected,
        "received {received} of {expected} (kernel dropped {kernel_drops})"
    );
    assert_eq!(counted, received, "every datagram has exactly one outcome");
    let naks = family_sum(&after, "authtime_nts_naks_total")
        - family_sum(&before, "authtime_nts_naks_total");
    let nts_drops = family_sum(&after, "authtime_nts_dropped_total")
        - family_sum(&before, "authtime_nts_dropped_total");
    assert!(
        naks > 0 && nts_drops > 0,
        "NAKs {naks}, NTS drops {nts_drops}"
    );
    assert!(
        ntp_support::metric(
            &after,
            "authtime_nts_dropped_total{reason=\"nts_too_many_placeholders\"}"
        ) > 0,
        "too many placeholders are refused: {after}"
    );
    // Memory: the workers allocate their buffers at start; a flood must not grow them.
    assert!(
        rss_end <= rss_warm + 8 * 1024,
        "RSS grew from {rss_warm} to {rss_end} KiB"
    );
    // Still a working NTS server for a new client.
    let out = hostile_support::query_nts(&serve, &dir.path("nts-ca.pem"), &[]);
    assert!(out.status.success(), "{}", ntp_support::text_of(&out));
}

/// Sends every request of `corpus` from its own socket to `serve`, collects
/// what comes back until the server has received them all (within 10 s) and
/// 300 ms more, and returns (request length, reply lengths).
fn replies(serve: &Serve, corpus: &[Vec<u8>]) -> Vec<(usize, Vec<usize>)> {
    let to = SocketAddr::new([127, 0, 0, 1].into(), serve.addr.port());
    let received = || family_sum(&serve.scrape(), "authtime_ntp_received_total");
    let expected = received() + corpus.len() as u64;
    let sockets: Vec<UdpSocket> = corpus
        .iter()
        .map(|request| {
            let s = UdpSocket::bind("127.0.0.3:0").expect("bind 127.0.0.3");
            s.send_to(request, to).expect("send");
            s.set_nonblocking(true).expect("nonblocking");
            s
        })
        .collect();
    let mut got = vec![Vec::new(); corpus.len()];
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut drain_until: Option<Instant> = None;
    let mut buf = vec![0u8; 65_536];
    while drain_until.is_none_or(|t| Instant::now() < t) {
        for (i, s) in sockets.iter().enumerate() {
            while let Ok(n) = s.recv(&mut buf) {
                got[i].push(n);
            }
        }
        // A worker counts a batch once its replies are sent; then a short
        // drain, to catch a second reply to one request if there were one.
        if drain_until.is_none() && (received() >= expected || Instant::now() >= deadline) {
            drain_until = Some(Instant::now() + Duration::from_millis(300));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    corpus.iter().map(|r| r.len()).zip(got).collect()
}

#[test]
fn no_reply_is_larger_than_its_request() {
    let _serial = one_at_a_time();
    let dir = TempDir::new("hostile-amplification");
    let serve = server_with_keys(&dir, false);
    let session = hostile_support::session(&dir, &serve, &dir.path("nts-ca.pem"));
    let keys = authtime_keys::KeySet::from_parsed(
        "ntp.keys",
        &authtime_keys::parse_key_file(
            "ntp.keys",
            &std::fs::read(dir.path("ntp.keys")).expect("keys"),
            None,
        )
        .expect("parse"),
    )
    .expect("keys");
    let mut rng = Rng::new(7);
    let mut corpus: Vec<Vec<u8>> = Vec::new();
    // Plain NTP, every version and mode, 48 bytes and longer.
    for version in 0..8u8 {
        for mode in 0..8u8 {
            let mut p = rng.bytes(48);
            p[0] = (version << 3) | mode;
            corpus.push(p);
        }
    }
    // With a MAC under each key (good, bad digest, unknown key): answered
    // with a MAC, a crypto-NAK or nothing.
    for id in [1, 2, 3, 99] {
        for version in [3u8, 4] {
            let key = keys.get(id).or(keys.get(1)).expect("key");
            let config = authtime_proto::ClientConfig {
                version,
                ..Default::default()
            };
            let mut out = [0u8; 128];
            let (len, _) = authtime_proto::build_request(
                &config,
                authtime_wire::NtpTimestamp::from_bits(rng.next_u64()),
                Some(key),
                &mut out,
            )
            .expect("request");
            let mut p = out[..len].to_vec();
            if id == 99 {
                p[48..52].copy_from_slice(&99u32.to_be_bytes());
            }
            corpus.push(p.clone());
            let last = p.len() - 1;
            p[last] ^= 1;
            corpus.push(p);
        }
    }
    // NTS with 0 to 7 placeholders (replies carry that many more cookies),
    // the same with a bad cookie (NAK), and more than 7 placeholders.
    let mut cookies = session.cookies.iter().cycle();
    for placeholders in 0..=7 {
        let cookie = cookies.next().expect("cookie");
        let (p, _) = nts_request(&session.keys, cookie, placeholders, &mut rng);
        corpus.push(p.clone());
        let mut bad = p;
        bad[48 + 36 + 10] ^= 4;
        corpus.push(bad);
    }
    for placeholders in [8, 20] {
        let cookie = cookies.next().expect("cookie");
        corpus.push(hand_built(&session.keys, cookie, 1, placeholders, &mut rng));
    }
    // Garbage and every hostile kind of the flood.
    let (valid, _) = nts_request(&session.keys, &session.cookies[0], 0, &mut rng);
    for kind in 0..10 {
        for _ in 0..6 {
            corpus.push(hostile(kind, &valid, &session, &mut rng));
        }
    }
    corpus.retain(|p| p.len() <= 1472);

    let results = replies(&serve, &corpus);
    let answered = results.iter().filter(|(_, r)| !r.is_empty()).count();
    for (i, (request, got)) in results.iter().enumerate() {
        assert!(
            got.len() <= 1,
            "request {i}: one reply at most, got {got:?}"
        );
        for reply in got {
            assert!(
                reply <= request,
                "request {i} ({request} bytes) got a {reply}-byte reply: {:02x?}",
                &corpus[i][..corpus[i].len().min(64)]
            );
        }
    }
    eprintln!(
        "amplification: {} requests, {answered} answered, none larger",
        corpus.len()
    );
    // The corpus reached the answering paths: plain, MAC, crypto-NAK, NTS, NAK.
    let metrics = serve.scrape();
    assert!(answered >= 40, "{answered} answered\n{metrics}");
    assert!(family_sum(&metrics, "authtime_ntp_crypto_naks_total") > 0);
    assert!(family_sum(&metrics, "authtime_nts_naks_total") > 0);
    assert!(ntp_support::metric(&metrics, "authtime_nts_answered_total") >= 8);

    // With the rate limiter on, the RATE kisses obey the same rule.
    drop(serve);
    let dir = TempDir::new("hostile-amplification-rate");
    let serve = server_with_keys(&dir, true);
    let plain: Vec<Vec<u8>> = corpus.iter().filter(|p| p.len() < 100).cloned().collect();
    let results = replies(&serve, &plain);
    for (request, got) in &results {
        assert!(got.iter().all(|reply| reply <= request));
    }
    assert!(
        family_sum(&serve.scrape(), "authtime_ntp_rate_limited_total") > 0,
        "the limiter acted"
    );
}

/// Writes `bytes` as a seed of fuzz target `target` (named by content, so
/// that a second run adds nothing).
fn seed(target: &str, bytes: &[u8]) {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../fuzz/corpus")
        .join(target);
    std::fs::create_dir_all(&dir).expect("corpus dir");
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in bytes {
        h = (h ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3);
    }
    std::fs::write(dir.join(format!("seed-{h:016x}")), bytes).expect("seed");
}

/// A UDP relay between `listen` and `server` that records every datagram
/// both ways for `limit`.
fn record_relay(listen: UdpSocket, server: SocketAddr, limit: Duration) -> Vec<(bool, Vec<u8>)> {
    let upstream = UdpSocket::bind("127.0.0.1:0").expect("bind");
    upstream.connect(server).expect("connect");
    listen
        .set_read_timeout(Some(Duration::from_millis(20)))
        .expect("timeout");
    upstream
        .set_read_timeout(Some(Duration::from_millis(20)))
        .expect("timeout");
    let (mut seen, mut client, mut buf) = (Vec::new(), None, vec![0u8; 2048]);
    let started = Instant::now();
    while started.elapsed() < limit {
        if let Ok((n, from)) = listen.recv_from(&mut buf) {
            seen.push((true, buf[..n].to_vec()));
            client = Some(from);
            let _ = upstream.send(&buf[..n]);
        }
        if let (Ok(n), Some(to)) = (upstream.recv(&mut buf), client) {
            seen.push((false, buf[..n].to_vec()));
            let _ = listen.send_to(&buf[..n], to);
        }
    }
    seen
}

/// Regenerates the seed corpora in `fuzz/corpus/`: real traffic between
/// chronyd (NTS client and plain client) and `authtime serve` captured by a
/// relay, our own requests of every kind, NTS-KE messages, TESLA packets and
/// key files. Run by hand:
/// `cargo test -p authtime --test hostile_udp -- --ignored write_fuzz_seed_corpora`.
#[test]
#[ignore = "writes fuzz/corpus; run by hand when the formats change"]
fn write_fuzz_seed_corpora() {
    use ntp_support::{chronyd_command, chronyd_private_lines};

    let dir = TempDir::new("fuzz-seeds");
    nts_cert(&dir, "nts", &[]);
    let relay = UdpSocket::bind("127.0.0.1:0").expect("bind");
    let relay_port = relay.local_addr().expect("addr").port();
    keygen(
        &dir,
        "ntp.keys",
        "ntpd",
        &[("md5", 1), ("sha1", 2), ("aes128", 3)],
    );
    let serve = Serve::start(
        &dir,
        &nts_config(
            "keys = \"ntp.keys\"",
            &format!("ntp-server = \"127.0.0.1\"\nntp-port = {relay_port}"),
            "[keystore]\npath = \"master-keys\"\n[rate-limit]\nenabled = false\n",
        ),
    );
    let server = SocketAddr::new([127, 0, 0, 1].into(), serve.addr.port());
    let ke = serve.nts_ke.expect("ke");
    let recorder = std::thread::spawn(move || record_relay(relay, server, Duration::from_secs(9)));
    // Our NTS client, chronyd as an NTS client, then as a plain client,
    // all through the relay.
    let session = hostile_support::session(&dir, &serve, &dir.path("nts-ca.pem"));
    let dump = dir.path("dump");
    std::fs::create_dir_all(&dump).expect("dump");
    for (name, line) in [
        (
            "nts",
            format!(
                "server localhost port {relay_port} nts ntsport {} iburst minpoll -4 maxpoll -4\n\
                 ntstrustedcerts {}\nntsdumpdir {}\n",
                ke.port(),
                dir.path("nts-ca.pem").display(),
                dump.display()
            ),
        ),
        (
            "plain",
            format!("server 127.0.0.1 port {relay_port} iburst minpoll -4 maxpoll -4\n"),
        ),
    ] {
        let conf = dir.path(&format!("chrony-{name}.conf"));
        std::fs::write(&conf, format!("{line}{}", chronyd_private_lines(&dir))).expect("conf");
        let child = chronyd_command(&conf, &["-4", "-Q", "-t", "3"])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("chronyd");
        let mut guard = ntp_support::ChildGuard {
            child,
            name: "chronyd -Q".into(),
        };
        let _ = guard.wait_for_exit(Duration::from_secs(8));
    }
    let captured = recorder.join().expect("relay");
    assert!(
        captured.iter().any(|(req, p)| *req && p.len() > 200),
        "no chrony NTS request captured"
    );
    for (is_request, packet) in &captured {
        seed("ntp_packet_roundtrip", packet);
        seed("nts_extension_fields", packet);
        if *is_request {
            seed("nts_server_handle", packet);
            seed("ntp_server_handle", &[[0u8].as_slice(), packet].concat());
            let mut batch = vec![1u8, u8::try_from(packet.len()).unwrap_or(255)];
            batch.extend_from_slice(packet);
            seed("ntp_server_handle_batch", &batch);
        } else {
            seed("nts_client_response", packet);
            seed("ntp_client_response", &[[0u8].as_slice(), packet].concat());
            seed("ntp_timestamp_roundtrip", packet);
        }
    }

    // Our own requests: plain v1-v4, a MAC under each key type, NTS with 0-7 placeholders.
    let keys = authtime_keys::KeySet::from_parsed(
        "ntp.keys",
        &authtime_keys::parse_key_file(
            "ntp.keys",
            &std::fs::read(dir.path("ntp.keys")).expect("keys"),
            None,
        )
        .expect("parse"),
    )
    .expect("keys");
    for (version, key) in [
        (1, None),
        (3, None),
        (4, None),
        (4, Some(1)),
        (4, Some(2)),
        (4, Some(3)),
    ] {
        let config = authtime_proto::ClientConfig {
            version,
            ..Default::default()
        };
        let mut out = [0u8; 128];
        let (len, _) = authtime_proto::build_request(
            &config,
            authtime_wire::NtpTimestamp::from_bits(0xe000_0000_8000_0000),
            key.and_then(|id| keys.get(id)),
            &mut out,
        )
        .expect("request");
        seed("ntp_packet_roundtrip", &out[..len]);
        seed(
            "ntp_server_handle",
            &[[1u8].as_slice(), &out[..len]].concat(),
        );
        seed(
            "ntp_server_handle",
            &[[3u8].as_slice(), &out[..len]].concat(),
        );
    }
    let mut rng = Rng::new(11);
    for placeholders in 0..=7 {
        let (p, _) = nts_request(&session.keys, &session.cookies[0], placeholders, &mut rng);
        seed("nts_server_handle", &p);
        seed("nts_extension_fields", &p);
    }
    // The NTS harnesses' own valid packet and a few edits of it (0xa5 prefix).
    for target in [
        "nts_server_handle",
        "nts_client_response",
        "nts_cookie_open",
    ] {
        seed(target, &[0xa5]);
        seed(target, &[0xa5, 12, 1]);
        seed(target, &[0xa5, 40, 0x80, 90, 4]);
    }

    // NTS-KE: our client's request, a server response with real cookies,
    // an error response, and records of every type.
    use authtime_ntske::Record;
    let request = authtime_ntske::client_core::build_request(&[15, 17, 30]).expect("request");
    let mut response = vec![
        Record::NextProtocol(vec![0]),
        Record::AeadAlgorithm(vec![15]),
        Record::Server("127.0.0.1".into()),
        Record::Port(123),
    ];
    response.extend(session.cookies.iter().cloned().map(Record::NewCookie));
    response.push(Record::EndOfMessage);
    let response = authtime_ntske::record::encode_records(&response).expect("encode");
    let error = authtime_ntske::record::encode_records(&[
        Record::Error(1),
        Record::Warning(7),
        Record::Unknown {
            critical: false,
            record_type: 1024,
            body: vec![],
        },
        Record::EndOfMessage,
    ])
    .expect("encode");
    for (target, message) in [
        ("ntske_server_request", &request),
        ("ntske_records", &request),
        ("ntske_records", &response),
        ("ntske_records", &error),
        ("ntske_client_response", &response),
        ("ntske_client_response", &error),
    ] {
        seed(target, message);
    }

    // TESLA: a sender's packets, disclosures and bootstrap fragments.
    let params = authtime_tesla::Params {
        t0: authtime_tesla::Time(1_000_000),
        interval_ns: 1_000,
        disclosure_delay: 2,
        chain_len: 64,
        mac: authtime_mac::Algorithm::HmacSha256,
        tag_len: 10,
        rollover_lead: 4,
    };
    let mut now = authtime_tesla::Time(1_000_000);
    let mut sender = authtime_tesla::Sender::new(params, [7; 32], now).expect("sender");
    for i in 0..4u8 {
        now = now.plus_nanos(1_500);
        let packet = sender.packet(&[i; 8], now).expect("packet");
        seed("tesla_packet_parsing", &packet);
        seed(
            "tesla_packet_parsing",
            &sender.key_disclosure(now).expect("disclosure"),
        );
    }
    // A sync exchange: the request, and the response fragments.
    let (_, request) =
        authtime_tesla::SyncClient::new(&[3; 16], now, authtime_tesla::ReceiverConfig::default())
            .expect("sync client");
    seed("tesla_packet_parsing", &request);
    for fragment in sender
        .sync_response(&request, now, &mut Unsigned)
        .expect("sync response")
    {
        seed("tesla_packet_parsing", &fragment);
        seed("tesla_bootstrap_parsing", &fragment);
        if let Some(body) = fragment.get(authtime_tesla::FRAGMENT_HEADER_LEN..) {
            seed("tesla_bootstrap_parsing", body);
        }
    }
    seed(
        "tesla_receiver_handle",
        &[0, 1, 2, 4, 9, 0, 0, 3, 4, 2, 1, 7, 3, 0, 0, 4, 40, 0],
    );
    seed(
        "tesla_receiver_handle",
        &[1, 5, 5, 1, 6, 6, 4, 255, 255, 0, 7, 7, 5, 1, 2],
    );
    let sync = authtime_tesla::SyncRequest::parse(&[0x03; 17]).map(|_| vec![0x03; 17]);
    if let Ok(sync) = sync {
        seed("tesla_packet_parsing", &sync);
    }

    // Key files in both formats, from `authtime keygen`.
    seed(
        "key_file_parsing",
        &std::fs::read(dir.path("ntp.keys")).expect("keys"),
    );
    let chrony = keygen(&dir, "chrony.keys", "chrony", &[("sha1", 1), ("aes128", 2)]);
    seed("key_file_parsing", &std::fs::read(chrony).expect("keys"));
}

/// Signs nothing: the TESLA seeds need a sync response, not a signature.
struct Unsigned;

impl authtime_tesla::BootstrapSigner for Unsigned {
    fn scheme_id(&self) -> u16 {
        0
    }
    fn sign(&mut self, _: &[u8]) -> Result<Vec<u8>, authtime_tesla::SignError> {
        Ok(Vec::new())
    }
}
