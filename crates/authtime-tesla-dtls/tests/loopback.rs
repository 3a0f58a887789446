//! DTLS + TESLA round trips on loopback: one sender, two receivers, PSK and
//! certificate modes; a receiver with the wrong public key refuses the
//! bootstrap; bytes per flight are accounted.

use std::{
    net::UdpSocket,
    thread,
    time::{Duration, Instant},
};

use authtime_sign::{Scheme, SigningKey};
use authtime_tesla::{Params, ReceiverConfig, Sender, Status, Time, mac_by_name};
use authtime_tesla_dtls::{
    DtlsError, DtlsMode, SchemeSigner, SchemeVerifier, SelfSigned, TeslaDtlsClient,
    TeslaDtlsServer, flights, unix_time,
};

/// 200 ms intervals with d = 4: a packet is unsafe only when its receiver
/// reads it about 600 ms (less the bootstrap's round trip) after it left,
/// which a busy machine's scheduling stalls stay far below.
const INTERVAL_NS: u64 = 200_000_000;
const DELAY: u32 = 4;
const TIMEOUT: Duration = Duration::from_secs(5);

/// The round trips run one at a time: two at once on 2 CPUs only eat the
/// margin the intervals give.
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn one_at_a_time() -> std::sync::MutexGuard<'static, ()> {
    ONE_AT_A_TIME
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

fn sender() -> Sender {
    let now = unix_time();
    let params = Params {
        t0: Time(now.0 - now.0 % INTERVAL_NS),
        interval_ns: INTERVAL_NS,
        disclosure_delay: DELAY,
        chain_len: 4096,
        mac: mac_by_name("hmac-sha256").expect("mac"),
        tag_len: 16,
        rollover_lead: 16,
    };
    Sender::new(params, [0x42; 32], now).expect("sender")
}

fn psk() -> DtlsMode {
    DtlsMode::Psk {
        identity: b"authtime-test".to_vec(),
        key: vec![0x5a; 16],
    }
}

/// Serves `clients` receivers, then sends `count` payloads and key disclosures
/// until every key is out.
fn serve(
    mode: DtlsMode,
    key: SigningKey,
    clients: usize,
    count: u32,
    timeout: Duration,
) -> (
    std::net::SocketAddr,
    thread::JoinHandle<Result<(), DtlsError>>,
) {
    let socket = UdpSocket::bind("127.0.0.1:0").expect("bind");
    let mut server =
        TeslaDtlsServer::new(socket, &mode, sender(), Box::new(SchemeSigner(key))).expect("server");
    let addr = server.local_addr().expect("addr");
    let handle = thread::spawn(move || {
        for _ in 0..clients {
            let accepted = server
                .accept(&unix_time, timeout)
                .inspect_err(|e| eprintln!("server: {e}"))?;
            assert!(accepted.sync_records >= 1);
        }
        for k in 0..count {
            server.broadcast(format!("payload {k}").as_bytes(), unix_time())?;
            thread::sleep(Duration::from_millis(10));
        }
        let end = Instant::now() + Duration::from_nanos(INTERVAL_NS * u64::from(DELAY + 2));
        while Instant::now() < end {
            server.disclose_key(unix_time())?;
            thread::sleep(Duration::from_millis(10));
        }
        server.close();
        Ok(())
    });
    (addr, handle)
}

fn receive_all(client: &mut TeslaDtlsClient, count: u32) -> Vec<String> {
    let mut got = Vec::new();
    let deadline = Instant::now() + TIMEOUT;
    while got.len() < count as usize && Instant::now() < deadline {
        match client.recv(&unix_time) {
            Ok(Status::Authenticated { released, .. }) => {
                got.extend(
                    released
                        .into_iter()
                        .map(|d| String::from_utf8_lossy(&d.payload).into_owned()),
                );
            }
            Ok(_) => {}
            Err(_) => break,
        }
    }
    got
}

fn round_trip(mode: DtlsMode) {
    let _serial = one_at_a_time();
    let key = SigningKey::generate_from_seed(Scheme::Ed25519, [9; 32]);
    let public = key.verifying_key();
    let count = 12;
    let (addr, server) = serve(mode.clone(), key, 2, count, TIMEOUT);
    let mut clients = Vec::new();
    for _ in 0..2 {
        let verifier = SchemeVerifier(public.clone());
        clients.push(
            TeslaDtlsClient::connect(
                addr,
                &mode,
                &verifier,
                ReceiverConfig::default(),
                &unix_time,
                TIMEOUT,
            )
            .expect("bootstrap"),
        );
    }
    // Each receiver reads in its own thread, as soon as both are bootstrapped.
    let readers: Vec<_> = clients
        .into_iter()
        .map(|mut c| {
            thread::spawn(move || {
                let got = receive_all(&mut c, count);
                (c, got)
            })
        })
        .collect();
    let expected: Vec<String> = (0..count).map(|k| format!("payload {k}")).collect();
    let mut clients = Vec::new();
    for r in readers {
        let (c, got) = r.join().expect("reader");
        assert_eq!(got, expected, "{:?}", c.receiver().stats());
        assert_eq!(c.receiver().stats().bad_mac, 0);
        assert_eq!(c.receiver().stats().unsafe_dropped, 0);
        clients.push(c);
    }
    server.join().expect("thread").expect("server");

    // The client's log holds the handshake and the sync response.
    let records = flights::records(&clients[0].log().snapshot());
    let rows = flights::handshake_rows(&records);
    let names: Vec<&str> = rows.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(
        names[..3],
        [
            "Client Hello",
            "Hello Verify Request",
            "Client Hello (cookie)"
        ]
    );
    assert!(names.contains(&"Server Hello"));
    assert!(names.contains(&"Client Key Exchange"));
    assert!(names.contains(&"Finished (server)"));
}

#[test]
fn psk_round_trip_two_receivers() {
    round_trip(psk());
}

#[test]
fn certificate_round_trip_two_receivers() {
    round_trip(DtlsMode::Certificate(
        SelfSigned::generate("authtime-test").expect("cert"),
    ));
}

#[test]
fn a_receiver_with_another_public_key_refuses_the_bootstrap() {
    let key = SigningKey::generate_from_seed(Scheme::Ed25519, [1; 32]);
    let other = SigningKey::generate_from_seed(Scheme::Ed25519, [2; 32]);
    let (addr, server) = serve(psk(), key, 1, 0, TIMEOUT);
    let verifier = SchemeVerifier(other.verifying_key());
    let result = TeslaDtlsClient::connect(
        addr,
        &psk(),
        &verifier,
        ReceiverConfig::default(),
        &unix_time,
        TIMEOUT,
    );
    assert!(
        matches!(
            result,
            Err(DtlsError::Bootstrap(
                authtime_tesla::BootstrapError::BadSignature
            ))
        ),
        "{result:?}"
    );
    let _ = server.join();
}

#[test]
fn a_wrong_psk_fails_the_handshake() {
    let key = SigningKey::generate_from_seed(Scheme::Ed25519, [1; 32]);
    let (addr, server) = serve(psk(), key, 1, 0, Duration::from_millis(500));
    let wrong = DtlsMode::Psk {
        identity: b"authtime-test".to_vec(),
        key: vec![0x00; 16],
    };
    let verifier =
        SchemeVerifier(SigningKey::generate_from_seed(Scheme::Ed25519, [1; 32]).verifying_key());
    let result = TeslaDtlsClient::connect(
        addr,
        &wrong,
        &verifier,
        ReceiverConfig::default(),
        &unix_time,
        Duration::from_millis(500),
    );
    assert!(result.is_err());
    let server = server.join().expect("thread");
    assert!(server.is_err());
}
