//! Hostile input without sockets: the fuzz seed corpora (and mutations of
//! every seed) replayed through the fuzz harnesses in every test run, so a
//! finding added to `fuzz/corpus/` stays a regression test even where the
//! fuzzer does not run; and a TESLA receiver under a flood of forged packets
//! (simulated clock): packets of a second sender with another key chain,
//! genuine packets with a byte changed, replays, random bytes and forged key
//! disclosures, sent before each genuine packet. The receiver's buffer must
//! stay within its bounds at every step, no forged payload may ever be
//! released, and the genuine stream must still be authenticated.

use authtime_tesla::{
    BootstrapSigner, BootstrapVerifier, Params, ReceiverConfig, Sender, SignError, Status,
    SyncClient, Time,
};

/// No signatures: this test is about the data stream, not the bootstrap.
struct Unsigned;

impl BootstrapSigner for Unsigned {
    fn scheme_id(&self) -> u16 {
        0
    }
    fn sign(&mut self, _: &[u8]) -> Result<Vec<u8>, SignError> {
        Ok(Vec::new())
    }
}

impl BootstrapVerifier for Unsigned {
    fn scheme_id(&self) -> u16 {
        0
    }
    fn verify(&self, _: &[u8], _: &[u8]) -> bool {
        true
    }
}

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

const INTERVAL_NS: u64 = 1_000;
const BUFFER_PACKETS: usize = 64;
const BUFFER_BYTES: usize = 16 * 1024;

fn params() -> Params {
    Params {
        t0: Time(1_000_000),
        interval_ns: INTERVAL_NS,
        disclosure_delay: 2,
        chain_len: 1024,
        mac: authtime_mac::Algorithm::HmacSha256,
        tag_len: 10,
        rollover_lead: 4,
    }
}

/// Runs 300 intervals with `forged_per_interval` forged datagrams before
/// each genuine packet; returns (genuine sent, delivered, refused).
fn run(forged_per_interval: usize) -> (u64, u64, u64) {
    let mut now = Time(1_000_000);
    let mut tx = Sender::new(params(), [7; 32], now).expect("sender");
    let mut forger = Sender::new(params(), [9; 32], now).expect("forger");
    let config = ReceiverConfig {
        buffer_max_packets: BUFFER_PACKETS,
        buffer_max_bytes: BUFFER_BYTES,
        ..ReceiverConfig::default()
    };
    let (mut client, request) = SyncClient::new(&[3; 16], now, config).expect("client");
    let mut rx = None;
    for fragment in tx
        .sync_response(&request, now, &mut Unsigned)
        .expect("sync")
    {
        if let Ok(Some(r)) = client.handle(&fragment, now, &Unsigned) {
            rx = Some(r);
        }
    }
    let mut rx = rx.expect("bootstrapped");
    let mut rng = Rng(0x7e51a);
    let (mut sent, mut delivered, mut refused) = (0u64, 0u64, 0u64);
    let mut genuine_sent: Vec<Vec<u8>> = Vec::new();
    for i in 0..300u32 {
        now = now.plus_nanos(INTERVAL_NS);
        let payload = format!("genuine {i}").into_bytes();
        let genuine = tx.packet(&payload, now).expect("packet");
        for k in 0..forged_per_interval {
            let forged = match k % 5 {
                0 | 1 => forger
                    .packet(format!("forged {i} {k}").as_bytes(), now)
                    .expect("forged"),
                2 => {
                    let mut p = genuine.clone();
                    let at = (rng.next() as usize) % p.len();
                    p[at] ^= 1 << (rng.next() % 8);
                    p
                }
                3 => genuine_sent
                    .get((rng.next() as usize) % genuine_sent.len().max(1))
                    .cloned()
                    .unwrap_or_default(),
                _ => {
                    let len = (rng.next() % 200) as usize;
                    (0..len).map(|_| rng.next() as u8).collect()
                }
            };
            if let Status::Authenticated { released, .. } = rx.handle(&forged, now) {
                for d in &released {
                    assert!(d.payload.starts_with(b"genuine"), "forged payload released");
                }
                delivered += released.len() as u64;
            }
            let s = rx.stats();
            assert!(s.buffered_packets <= BUFFER_PACKETS as u64, "{s:?}");
            assert!(s.buffered_bytes <= BUFFER_BYTES as u64, "{s:?}");
        }
        sent += 1;
        match rx.handle(&genuine, now) {
            Status::Authenticated { released, own, .. } => {
                for d in &released {
                    assert!(d.payload.starts_with(b"genuine"), "forged payload released");
                }
                delivered += released.len() as u64;
                let _ = own;
            }
            Status::Waiting | Status::NoPayload => {}
            other => {
                refused += 1;
                if refused == 1 {
                    eprintln!("tesla: interval {i}: a genuine packet was refused: {other:?}");
                }
            }
        }
        genuine_sent.push(genuine);
        // Forged disclosures of the forger's keys must not be accepted.
        if i % 10 == 0 {
            let disclosure = forger.key_disclosure(now).expect("disclosure");
            let _ = rx.handle(&disclosure, now);
        }
    }
    let s = rx.stats();
    eprintln!(
        "tesla: {forged_per_interval} forged per interval: {delivered}/{sent} delivered, \
         {refused} refused, {s:?}"
    );
    (sent, delivered, refused)
}

#[test]
fn a_flood_of_forged_packets_keeps_the_buffer_bounded_and_the_stream_authenticated() {
    let (sent, delivered, refused) = run(0);
    // Without an attack, every packet but the last two (their keys come later) arrives.
    assert!(delivered + 3 >= sent && refused == 0, "{delivered}/{sent}");
    let (sent, delivered, refused) = run(20);
    assert_eq!(
        refused, 0,
        "a genuine packet was refused under 20 forged per interval"
    );
    assert!(
        delivered + 3 >= sent,
        "under 20 forged per interval: {delivered}/{sent}"
    );
}

#[test]
fn a_flood_larger_than_the_buffer_still_lets_the_genuine_stream_through() {
    let (sent, delivered, refused) = run(200);
    assert!(
        delivered * 10 >= sent * 9,
        "{delivered}/{sent} delivered, {refused} refused"
    );
}

/// A fuzz harness: arbitrary bytes in, a panic when an invariant breaks.
type Harness = fn(&[u8]);

/// The fuzz targets whose harness is a library function, with that function.
const HARNESSES: [(&str, Harness); 29] = [
    (
        "config_parsing",
        authtime_server::fuzz_harness::config_parsing,
    ),
    (
        "ntp_packet_roundtrip",
        authtime_wire::fuzz_harness::packet_roundtrip,
    ),
    (
        "ntp_timestamp_roundtrip",
        authtime_wire::fuzz_harness::timestamp_roundtrip,
    ),
    (
        "ntp_server_handle",
        authtime_proto::fuzz_harness::server_handle,
    ),
    (
        "ntp_server_handle_batch",
        authtime_proto::fuzz_harness::server_handle_batch,
    ),
    (
        "ntp_client_response",
        authtime_proto::fuzz_harness::client_process_response,
    ),
    (
        "key_file_parsing",
        authtime_keys::fuzz_harness::parse_key_file,
    ),
    (
        "kek_file_parsing",
        authtime_keys::fuzz_harness::kek_file_parsing,
    ),
    (
        "sealed_blob_parsing",
        authtime_keys::fuzz_harness::sealed_blob_parsing,
    ),
    (
        "store_url_parsing",
        authtime_keys::fuzz_harness::store_url_parsing,
    ),
    (
        "nts_extension_fields",
        authtime_nts::fuzz_harness::extension_fields,
    ),
    ("nts_cookie_open", authtime_nts::fuzz_harness::cookie_open),
    (
        "nts_server_handle",
        authtime_nts::fuzz_harness::server_handle,
    ),
    ("nts_server_batch", authtime_nts::fuzz_harness::server_batch),
    (
        "nts_client_response",
        authtime_nts::fuzz_harness::client_response,
    ),
    ("ntske_records", authtime_ntske::fuzz_harness::records),
    (
        "ntske_server_request",
        authtime_ntske::fuzz_harness::server_request,
    ),
    (
        "ntske_client_response",
        authtime_ntske::fuzz_harness::client_response,
    ),
    (
        "ntske_pool_member_request",
        authtime_ntske::fuzz_harness::pool_member_request,
    ),
    (
        "ntske_pool_backend_response",
        authtime_ntske::fuzz_harness::pool_backend_response,
    ),
    (
        "ntske_balancer_request",
        authtime_ntske::fuzz_harness::balancer_request,
    ),
    (
        "ntske_cert_expiry",
        authtime_ntske::fuzz_harness::cert_expiry,
    ),
    (
        "tesla_packet_parsing",
        authtime_tesla::fuzz_harness::packet_parsing,
    ),
    (
        "tesla_bootstrap_parsing",
        authtime_tesla::fuzz_harness::bootstrap_parsing,
    ),
    (
        "tesla_receiver_handle",
        authtime_tesla::fuzz_harness::receiver_handle,
    ),
    (
        "chrony_tracking_reply",
        authtime_clock::chrony_cmd::fuzz_tracking_reply,
    ),
    ("leap_seconds_list", authtime_clock::leap_list::fuzz_parse),
    (
        "ntp_upstream_reply",
        authtime_clock::ntp_upstream::fuzz_reply,
    ),
    (
        "frame_parse_build",
        authtime_frame::fuzz_harness::parse_build,
    ),
];

/// Mutations tried per seed: bit flips, truncations, a byte inserted or
/// removed, a 16-bit length field set to an edge value.
const MUTATIONS_PER_SEED: usize = 40;

fn mutate(seed: &[u8], rng: &mut Rng) -> Vec<u8> {
    let mut v = seed.to_vec();
    let at = |rng: &mut Rng, len: usize| (rng.next() as usize) % len.max(1);
    match rng.next() % 5 {
        0 if !v.is_empty() => {
            let i = at(rng, v.len());
            v[i] ^= 1 << (rng.next() % 8);
        }
        1 => v.truncate(at(rng, v.len() + 1)),
        2 => {
            let i = at(rng, v.len() + 1);
            v.insert(i, rng.next() as u8);
        }
        3 if !v.is_empty() => {
            v.remove(at(rng, v.len()));
        }
        _ if v.len() >= 2 => {
            let i = at(rng, v.len() - 1);
            let edge = [0u16, 1, 4, 0x7fff, 0x8000, 0xfffc, 0xffff][(rng.next() % 7) as usize];
            v[i..i + 2].copy_from_slice(&edge.to_be_bytes());
        }
        _ => v.push(rng.next() as u8),
    }
    v
}

#[test]
fn the_fuzz_seed_corpora_and_their_mutations_pass_the_harnesses() {
    let fuzz = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz");
    let mut rng = Rng(0xc0ff_ee00_1234_5678);
    let (mut seeds, mut runs) = (0usize, 0usize);
    let started = std::time::Instant::now();
    for (target, harness) in HARNESSES {
        let mut files = Vec::new();
        for dir in ["corpus", "seeds"] {
            if let Ok(entries) = std::fs::read_dir(fuzz.join(dir).join(target)) {
                files.extend(entries.filter_map(Result::ok).map(|e| e.path()));
            }
        }
        files.sort();
        for file in files {
            let seed = std::fs::read(&file).expect("seed");
            seeds += 1;
            harness(&seed);
            for _ in 0..MUTATIONS_PER_SEED {
                harness(&mutate(&seed, &mut rng));
                runs += 1;
            }
        }
    }
    eprintln!(
        "corpus replay: {seeds} seeds, {runs} mutations in {:?}",
        started.elapsed()
    );
    // The seeds are committed with the tests (see docs/security.md); an
    // empty corpus would make this test prove nothing.
    assert!(
        seeds >= 60,
        "only {seeds} seeds under fuzz/corpus: is fuzz/corpus in .gitignore? \
         Regenerate with `cargo test -p authtime --test hostile_udp -- --ignored \
         write_fuzz_seed_corpora`"
    );
}
