//! The interleaved client against a simulated server that answers as
//! chrony's does: interleaved when the request's origin names a receive
//! timestamp it holds a transmit timestamp for, basic otherwise. Clocks are
//! simulated: the server is `SERVER_AHEAD` ahead of the client, each way
//! takes `ONE_WAY`, and a basic reply's T3 is read `SEND_COST` before the
//! reply really leaves, so a basic sample is off by half of that and an
//! interleaved one is exact.

use authtime_keys::{KeyMaterial, KeySet, KeyType};
use authtime_wire::{
    Header, KissCode, LeapIndicator, NtpShort, PacketWriter, ReferenceId, Trailer,
    digest_len_on_wire,
};

use super::*;
use crate::{AuthStatus, ClientReaction};

const SERVER_AHEAD_NS: i128 = 123_456_789;
const ONE_WAY_NS: i128 = 100_000;
/// From the server's receive timestamp to its clock read for T3.
const READ_T3_NS: i128 = 5_000;
/// From that clock read to the moment the reply really leaves.
const SEND_COST_NS: i128 = 35_000;
const INTERVAL_NS: i128 = 1_000_000_000;
/// Rounding of nanoseconds to NTP fractions, four timestamps at a time.
const EXACT: f64 = 5e-9;

fn ntp(true_ns: i128) -> NtpTimestamp {
    let unix_ns = 1_700_000_000_000_000_000 + true_ns;
    NtpTimestamp::from_unix(
        (unix_ns / 1_000_000_000) as i64,
        (unix_ns % 1_000_000_000) as u32,
    )
}

fn keys() -> KeySet {
    KeySet::new(&[
        KeyMaterial::new(3, KeyType::Aes128Cmac, &[3; 16]),
        KeyMaterial::new(4, KeyType::Sha1, &[4; 20]),
    ])
    .expect("keys")
}

/// What the simulated server does with a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Serving {
    /// Interleaved whenever it can.
    Interleaved,
    /// Basic only, like ntpd-rs.
    BasicOnly,
}

/// A server that keeps, per receive timestamp, the transmit time of its
/// reply (chrony's table of timestamps for interleaved clients).
struct SimServer {
    serving: Serving,
    keys: KeySet,
    held: Vec<(NtpTimestamp, NtpTimestamp)>,
}

impl SimServer {
    fn new(serving: Serving) -> Self {
        Self {
            serving,
            keys: keys(),
            held: Vec::new(),
        }
    }

    /// The reply to `request`, which arrived at `arrival_ns` (true time),
    /// and the true time it leaves.
    fn answer(&mut self, request: &[u8], arrival_ns: i128) -> (Vec<u8>, i128) {
        let req = Packet::decode(request).expect("a request");
        let rh = *req.header();
        let t2 = ntp(arrival_ns + SERVER_AHEAD_NS);
        let read_t3 = ntp(arrival_ns + READ_T3_NS + SERVER_AHEAD_NS);
        let departure_ns = arrival_ns + READ_T3_NS + SEND_COST_NS;
        let asks = !rh.origin_ts.is_zero() && rh.receive_ts != rh.transmit_ts;
        let held = self
            .held
            .iter()
            .find(|(rx, _)| *rx == rh.origin_ts)
            .map(|(_, tx)| *tx);
        let mut h = Header::new(Mode::Server);
        h.version = rh.version;
        h.poll = rh.poll;
        h.stratum = 2;
        h.precision = -24;
        h.reference_id = ReferenceId::from_ascii(*b"SIM\0");
        h.root_delay = NtpShort::from_seconds_f64(0.001);
        h.root_dispersion = NtpShort::from_seconds_f64(0.001);
        h.receive_ts = t2;
        match (self.serving, asks, held) {
            (Serving::Interleaved, true, Some(previous_tx)) => {
                h.origin_ts = rh.receive_ts;
                h.transmit_ts = previous_tx;
            }
            _ => {
                h.origin_ts = rh.transmit_ts;
                h.transmit_ts = read_t3;
            }
        }
        self.held.push((t2, ntp(departure_ns + SERVER_AHEAD_NS)));
        let mut out = vec![0u8; 128];
        let writer = PacketWriter::new(&mut out, &h).expect("writer");
        let len = match req.trailer() {
            Trailer::Mac(mac) => {
                let key = self.keys.get(mac.key_id).expect("a known key");
                let tag = key
                    .mac()
                    .compute(&[], writer.authenticated_bytes())
                    .expect("tag");
                let n = digest_len_on_wire(h.version, tag.len());
                writer.finish_with_mac(mac.key_id, &tag.as_bytes()[..n])
            }
            _ => writer.finish(),
        }
        .expect("reply");
        out.truncate(len);
        (out, departure_ns)
    }
}

/// A client, a server and the true time.
struct World<'k> {
    client: InterleavedClient<'k>,
    server: SimServer,
    now_ns: i128,
    random: u64,
}

/// A request on its way and the reply it got, not yet delivered.
struct Exchange {
    request: InterleavedRequest,
    bytes: Vec<u8>,
    reply: Vec<u8>,
    t4: NtpTimestamp,
}

impl<'k> World<'k> {
    fn new(serving: Serving, key: Option<&'k KeyEntry>) -> Self {
        Self {
            client: InterleavedClient::new(ClientConfig::default(), key),
            server: SimServer::new(serving),
            now_ns: 0,
            random: 0x9e37_79b9_7f4a_7c15,
        }
    }

    fn random(&mut self) -> [u8; REQUEST_RANDOM_LEN] {
        let mut out = [0u8; REQUEST_RANDOM_LEN];
        for b in &mut out {
            self.random ^= self.random << 13;
            self.random ^= self.random >> 7;
            self.random ^= self.random << 17;
            *b = self.random as u8;
        }
        out
    }

    /// Sends a request now and lets the server answer it; the next request
    /// goes out an interval later.
    fn send(&mut self) -> Exchange {
        let random = self.random();
        let mut bytes = vec![0u8; 128];
        let request = self
            .client
            .build_request(ntp(self.now_ns), random, &mut bytes)
            .expect("request");
        bytes.truncate(request.len);
        let (reply, departure_ns) = self.server.answer(&bytes, self.now_ns + ONE_WAY_NS);
        self.now_ns += INTERVAL_NS;
        Exchange {
            request,
            bytes,
            reply,
            t4: ntp(departure_ns + ONE_WAY_NS),
        }
    }

    fn deliver(&mut self, e: &Exchange) -> Result<InterleavedSample, ClientError> {
        self.client.process_response(&e.reply, e.t4)
    }

    /// One exchange, its reply delivered.
    fn exchange(&mut self) -> InterleavedSample {
        let e = self.send();
        self.deliver(&e).expect("a sample")
    }
}

fn fields(request: &[u8]) -> (NtpTimestamp, NtpTimestamp, NtpTimestamp) {
    let h = *Packet::decode(request).expect("request").header();
    (h.origin_ts, h.receive_ts, h.transmit_ts)
}

fn assert_exact(s: &InterleavedSample) {
    assert_eq!(s.mode, SampleMode::Interleaved, "{s:?}");
    let ahead = SERVER_AHEAD_NS as f64 * 1e-9;
    assert!((s.sample.offset - ahead).abs() < EXACT, "{s:?}");
    let delay = 2.0 * ONE_WAY_NS as f64 * 1e-9;
    assert!((s.sample.delay - delay).abs() < EXACT, "{s:?}");
}

/// A basic sample: T3 read `SEND_COST` early shifts the offset by half of
/// it and adds it to the delay.
fn assert_basic(s: &InterleavedSample) {
    assert_eq!(s.mode, SampleMode::Basic, "{s:?}");
    let send_cost = SEND_COST_NS as f64 * 1e-9;
    let ahead = SERVER_AHEAD_NS as f64 * 1e-9;
    assert!(
        (s.sample.offset - (ahead - send_cost / 2.0)).abs() < EXACT,
        "{s:?}"
    );
    let delay = 2.0 * ONE_WAY_NS as f64 * 1e-9 + send_cost;
    assert!((s.sample.delay - delay).abs() < EXACT, "{s:?}");
}

#[test]
fn first_sample_is_basic_and_the_later_ones_exact() {
    let mut world = World::new(Serving::Interleaved, None);
    let first = world.send();
    assert_eq!(
        fields(&first.bytes).0,
        NtpTimestamp::ZERO,
        "no origin in the first request"
    );
    assert_eq!(fields(&first.bytes).1, NtpTimestamp::ZERO);
    assert!(!first.request.asks_interleaved);
    let s = world.deliver(&first).expect("sample");
    assert_basic(&s);
    assert_eq!((s.answered, s.measured), (0, 0));
    let mut previous_t2 = Packet::decode(&first.reply)
        .expect("reply")
        .header()
        .receive_ts;
    let mut previous_t4 = first.t4;
    for n in 1..6u64 {
        let e = world.send();
        let (origin, receive, transmit) = fields(&e.bytes);
        assert!(e.request.asks_interleaved);
        assert_eq!(origin, previous_t2, "origin: the last reply's T2");
        // The receive field is the last reply's T4 to within our precision
        // (2^-20 s): its lowest bits are random.
        let off = receive.duration_since(previous_t4).as_seconds_f64().abs();
        assert!(
            off < 2f64.powi(-20),
            "receive {receive:?} vs T4 {previous_t4:?}"
        );
        assert_ne!(receive, transmit);
        assert_eq!(transmit, e.request.transmit_ts);
        let s = world.deliver(&e).expect("sample");
        assert_exact(&s);
        assert_eq!((s.answered, s.measured), (n, n - 1));
        assert_eq!(s.t4, previous_t4, "T4 of the previous exchange");
        previous_t2 = Packet::decode(&e.reply).expect("reply").header().receive_ts;
        previous_t4 = e.t4;
    }
}

#[test]
fn a_basic_only_server_gives_basic_samples() {
    let mut world = World::new(Serving::BasicOnly, None);
    for n in 0..5u64 {
        let s = world.exchange();
        assert_basic(&s);
        assert_eq!((s.answered, s.measured), (n, n));
    }
}

#[test]
fn a_server_that_switches_modes_gives_the_right_sample_each_time() {
    let mut world = World::new(Serving::Interleaved, None);
    assert_basic(&world.exchange());
    assert_exact(&world.exchange());
    // The server loses its table (restart, or full): basic replies to
    // interleaved requests, then interleaved again from the next one.
    world.server.held.clear();
    world.server.serving = Serving::BasicOnly;
    assert_basic(&world.exchange());
    assert_basic(&world.exchange());
    world.server.serving = Serving::Interleaved;
    let s = world.exchange();
    assert_exact(&s);
    assert_eq!((s.answered, s.measured), (4, 3));
    world.server.held.clear();
    assert_basic(&world.exchange());
    assert_exact(&world.exchange());
}

#[test]
fn after_a_lost_reply_the_sample_measures_the_last_answered_exchange() {
    let mut world = World::new(Serving::Interleaved, None);
    assert_basic(&world.exchange());
    let s1 = world.exchange();
    assert_exact(&s1);
    // Request 2 goes out and its reply is lost: request 3 echoes the
    // reply to request 1 again, with a fresh receive field.
    let lost = world.send();
    let lost_fields = fields(&lost.bytes);
    let e = world.send();
    let (origin, receive, _) = fields(&e.bytes);
    assert_eq!(origin, lost_fields.0);
    assert_ne!(receive, lost_fields.1, "the receive field never repeats");
    let s = world.deliver(&e).expect("sample");
    assert_exact(&s);
    assert_eq!((s.answered, s.measured), (3, 1));
    // And the next one measures exchange 3.
    let s = world.exchange();
    assert_exact(&s);
    assert_eq!((s.answered, s.measured), (4, 3));
}

#[test]
fn replies_to_older_requests_and_duplicates_are_bogus() {
    let mut world = World::new(Serving::Interleaved, None);
    assert_basic(&world.exchange());
    // Reply 1 (interleaved) arrives late, after request 2 went out: it is
    // neither a basic nor an interleaved reply to request 2.
    let late = world.send();
    let current = world.send();
    assert_eq!(
        world.deliver(&late),
        Err(ClientError::OriginMismatch),
        "a late interleaved reply"
    );
    // A basic reply to the older request: its origin is the older cookie.
    let mut late_basic = late.reply.clone();
    late_basic[24..32].copy_from_slice(&late.request.transmit_ts.to_bits().to_be_bytes());
    assert_eq!(
        world.client.process_response(&late_basic, late.t4),
        Err(ClientError::OriginMismatch)
    );
    assert_eq!(
        ClientError::OriginMismatch.reaction(),
        ClientReaction::IgnorePacket
    );
    // The current request is still in flight and its reply counts.
    assert_eq!(world.client.in_flight().map(|f| f.0), Some(2));
    let s = world.deliver(&current).expect("sample");
    assert_exact(&s);
    assert_eq!((s.answered, s.measured), (2, 0));
    // One reply per request: a duplicate is bogus.
    assert_eq!(world.deliver(&current), Err(ClientError::OriginMismatch));
}

#[test]
fn macs_are_checked_in_both_modes() {
    let keys = keys();
    for id in [3, 4] {
        let mut world = World::new(Serving::Interleaved, keys.get(id));
        let first = world.send();
        assert_basic(&world.deliver(&first).expect("basic, authenticated"));
        let e = world.send();
        // A forged reply (bad MAC, no MAC) is ignored; the real one counts.
        let mut forged = e.reply.clone();
        let last = forged.len() - 1;
        forged[last] ^= 1;
        assert_eq!(
            world.client.process_response(&forged, e.t4),
            Err(ClientError::BadMac { key_id: id })
        );
        assert_eq!(
            world.client.process_response(&e.reply[..48], e.t4),
            Err(ClientError::MissingMac)
        );
        let s = world.deliver(&e).expect("interleaved, authenticated");
        assert_exact(&s);
        let AuthStatus::SymmetricKey { key_id, .. } = s.sample.auth else {
            panic!("{s:?}")
        };
        assert_eq!(key_id, id);
    }
    // Without a key, a MAC'd reply is not ours.
    let mut world = World::new(Serving::Interleaved, None);
    let e = world.send();
    let mut keyed = InterleavedClient::new(ClientConfig::default(), keys.get(3));
    let mut bytes = [0u8; 128];
    let r = keyed
        .build_request(NtpTimestamp::from_bits(1), [7; 12], &mut bytes)
        .expect("request");
    let (reply, _) = world.server.answer(&bytes[..r.len], 0);
    assert_eq!(
        world.client.process_response(&reply, e.t4),
        Err(ClientError::OriginMismatch)
    );
}

#[test]
fn a_reply_without_a_sample_starts_over_in_basic_mode() {
    let mut world = World::new(Serving::Interleaved, None);
    assert_basic(&world.exchange());
    let e = world.send();
    // The same reply as a RATE kiss: it answers the request, gives no sample.
    let mut kiss = e.reply.clone();
    kiss[1] = 0;
    kiss[12..16].copy_from_slice(&KissCode::RATE.0);
    assert!(matches!(
        world.client.process_response(&kiss, e.t4),
        Err(ClientError::KissOfDeath { .. })
    ));
    let e = world.send();
    assert!(!e.request.asks_interleaved);
    assert_eq!(fields(&e.bytes).0, NtpTimestamp::ZERO);
    assert_basic(&world.deliver(&e).expect("sample"));
    // An unsynchronized interleaved reply too.
    let e = world.send();
    let mut unsync = e.reply.clone();
    unsync[0] |= 0xc0;
    assert!(matches!(
        world.client.process_response(&unsync, e.t4),
        Err(ClientError::Unsynchronized {
            leap: LeapIndicator::Unsynchronized,
            ..
        })
    ));
    assert!(!world.send().request.asks_interleaved);
}

#[test]
fn too_many_unanswered_requests_start_over_in_basic_mode() {
    let mut world = World::new(Serving::Interleaved, None);
    assert_basic(&world.exchange());
    for _ in 0..MAX_UNANSWERED {
        assert!(world.send().request.asks_interleaved);
    }
    let e = world.send();
    assert!(!e.request.asks_interleaved, "{MAX_UNANSWERED} unanswered");
    assert_basic(&world.deliver(&e).expect("sample"));
    assert_exact(&world.exchange());
}

#[test]
fn a_late_transmit_stamp_refines_the_next_interleaved_sample() {
    let mut world = World::new(Serving::Interleaved, None);
    // Request 0's T1 as first read is 1 ms early; its kernel stamp, read
    // after the reply, corrects it.
    let random = world.random();
    let mut bytes = [0u8; 128];
    let r = world
        .client
        .build_request(ntp(-1_000_000), random, &mut bytes)
        .expect("request");
    let (reply, departure_ns) = world.server.answer(&bytes[..r.len], ONE_WAY_NS);
    world.now_ns += INTERVAL_NS;
    let s = world
        .client
        .process_response(&reply, ntp(departure_ns + ONE_WAY_NS))
        .expect("sample");
    assert!((s.sample.offset - SERVER_AHEAD_NS as f64 * 1e-9).abs() > 1e-4);
    assert!(world.client.set_send_time(0, ntp(0)));
    assert!(!world.client.set_send_time(7, ntp(0)), "no such request");
    let e = world.send();
    assert!(
        world
            .client
            .set_send_time(e.request.seq, ntp(world.now_ns - INTERVAL_NS))
    );
    let s = world.deliver(&e).expect("sample");
    assert_exact(&s);
    assert_eq!(s.t1, ntp(0));
}

#[test]
fn fields_never_collide() {
    // A receive time whose fuzzed bits equal the origin and the cookie.
    let mut client = InterleavedClient::new(ClientConfig::default(), None);
    let mut out = [0u8; 48];
    let t2 = NtpTimestamp::from_bits(0x1234_5678_0000_0000);
    let r = client
        .build_request(t2, [0; 12], &mut out)
        .expect("request");
    assert_ne!(r.transmit_ts, NtpTimestamp::ZERO, "a zero cookie is bumped");
    let mut h = Header::new(Mode::Server);
    h.stratum = 2;
    h.origin_ts = r.transmit_ts;
    h.receive_ts = t2;
    h.transmit_ts = t2;
    let mut reply = [0u8; 48];
    PacketWriter::new(&mut reply, &h)
        .and_then(PacketWriter::finish)
        .expect("reply");
    // T4 equal to T2, so the receive field's high bits equal the origin's.
    client.process_response(&reply, t2).expect("sample");
    let random = {
        let mut r = [0u8; 12];
        r[..8].copy_from_slice(&t2.to_bits().to_be_bytes());
        r
    };
    let r = client.build_request(t2, random, &mut out).expect("request");
    let (origin, receive, transmit) = fields(&out);
    assert_eq!(origin, t2);
    assert!(receive != origin && receive != transmit && transmit != origin);
    assert_eq!(transmit, r.transmit_ts);
    // The next request, same random bytes: no field repeats the one before.
    let r2 = client.build_request(t2, random, &mut out).expect("request");
    let (_, receive2, transmit2) = fields(&out);
    assert!(receive2 != receive && transmit2 != transmit);
    assert_eq!(r2.seq, r.seq + 1);
    assert_eq!(
        client.build_request(t2, random, &mut [0u8; 47]),
        Err(ClientError::OutputTooSmall)
    );
}

/// The client against this crate's own server core: `Server::prepare`, then
/// `PreparedReply::finish` with the transmit time a `TimestampTable` saved
/// for the reply the request names, as authtime's workers do (a transmit
/// time saved only for replies to requests that ask for interleaved mode).
#[test]
fn authtimes_own_server_core_gives_exact_interleaved_samples() {
    use crate::interleaved::{TimestampTable, TxSource};
    use crate::{NoStats, Server, ServerAction};

    let keys = keys();
    for key_id in [None, Some(3)] {
        let server = Server::default();
        let mut table = TimestampTable::new(64);
        let mut client =
            InterleavedClient::new(ClientConfig::default(), key_id.and_then(|id| keys.get(id)));
        let mut now_ns: i128 = 0;
        let mut modes = Vec::new();
        for n in 0..6u8 {
            let mut request = [0u8; 128];
            let sent = client
                .build_request(ntp(now_ns), [n; REQUEST_RANDOM_LEN], &mut request)
                .expect("request");
            let arrival_ns = now_ns + ONE_WAY_NS;
            let prepared = server.prepare(
                &request[..sent.len],
                ntp(arrival_ns + SERVER_AHEAD_NS),
                &keys,
            );
            let previous = prepared
                .interleaved_origin()
                .and_then(|origin| table.take(origin))
                .map(|saved| saved.tx);
            let mut reply = [0u8; 128];
            let read_t3 = ntp(arrival_ns + READ_T3_NS + SERVER_AHEAD_NS);
            let ServerAction::Send(len) =
                prepared.finish(read_t3, previous, &mut reply, &mut NoStats)
            else {
                panic!("no reply to request {n}");
            };
            let departure_ns = arrival_ns + READ_T3_NS + SEND_COST_NS;
            if let (Some(rx), Some(_)) = (prepared.receive_ts(), prepared.interleaved_origin()) {
                table.insert(rx, ntp(departure_ns + SERVER_AHEAD_NS), TxSource::Kernel);
            }
            let s = client
                .process_response(&reply[..len], ntp(departure_ns + ONE_WAY_NS))
                .expect("sample");
            match s.mode {
                SampleMode::Basic => assert_basic(&s),
                SampleMode::Interleaved => assert_exact(&s),
            }
            assert_eq!(
                s.sample.auth != AuthStatus::Unauthenticated,
                key_id.is_some()
            );
            modes.push(s.mode);
            now_ns += INTERVAL_NS;
        }
        // Nothing to echo in the first request; no transmit time saved for
        // the reply to the first, basic one: interleaved from the third on.
        assert_eq!(
            modes,
            [
                SampleMode::Basic,
                SampleMode::Basic,
                SampleMode::Interleaved,
                SampleMode::Interleaved,
                SampleMode::Interleaved,
                SampleMode::Interleaved
            ],
            "key {key_id:?}"
        );
    }
}
