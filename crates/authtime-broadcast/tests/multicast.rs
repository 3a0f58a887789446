//! A broadcast round trip over loopback multicast: the server multicasts
//! TESLA-protected mode-5 packets and answers a direct sync; the client
//! bootstraps, joins the group and accepts authenticated time.

use std::{
    net::{Ipv4Addr, SocketAddrV4, UdpSocket},
    thread,
    time::{Duration, Instant},
};

use authtime_broadcast::{
    BroadcastServer, ClientConfig, bootstrap, join_group, monotonic_time, multicast_sender,
    unix_time,
};
use authtime_clock::Announcement;
use authtime_sign::{Scheme, SigningKey};
use authtime_tesla::{Params, ReceiverConfig, Sender, Time, mac_by_name};
use authtime_tesla_dtls::{SchemeSigner, SchemeVerifier};
use authtime_wire::{LeapIndicator, NtpShort, NtpTimestamp, ReferenceId};

/// 100 ms intervals with d = 4: the bootstrap's round trip may take up to
/// 400 ms and a packet read up to about 300 ms late is still safe, far
/// above the stalls of a busy shared machine.
const INTERVAL: u64 = 100_000_000;
const DELAY: u32 = 4;

#[test]
fn multicast_round_trip_on_loopback() {
    let lo = Ipv4Addr::LOCALHOST;
    let sync = UdpSocket::bind("127.0.0.1:0").expect("bind");
    let sync_addr = sync.local_addr().expect("addr");
    // A port of our own for the group: bind a throwaway socket to learn a free one.
    let port = UdpSocket::bind("127.0.0.1:0")
        .and_then(|s| s.local_addr())
        .expect("port")
        .port();
    let group = SocketAddrV4::new(Ipv4Addr::new(239, 255, 82, 4), port);
    let now = unix_time();
    let params = Params {
        t0: Time(now.0 - now.0 % INTERVAL),
        interval_ns: INTERVAL,
        disclosure_delay: DELAY,
        chain_len: 4096,
        mac: mac_by_name("hmac-sha256").expect("mac"),
        tag_len: 16,
        rollover_lead: 16,
    };
    let key = SigningKey::generate_from_seed(Scheme::Ed25519, [4; 32]);
    let verifier = SchemeVerifier(key.verifying_key());
    let sender = Sender::new(params, [1; 32], now).expect("sender");
    let mut server = BroadcastServer::new(
        multicast_sender(lo, 1).expect("sender socket"),
        sync,
        group,
        sender,
        Box::new(SchemeSigner(key)),
    );
    // The sender's clock: synchronized at stratum 2 (until told, packets say
    // unsynchronized and clients refuse them).
    server.set_clock(Announcement {
        leap: LeapIndicator::NoWarning,
        stratum: 2,
        reference_id: ReferenceId([192, 0, 2, 1]),
        reference_ts: NtpTimestamp::from_unix(
            i64::try_from(now.0 / 1_000_000_000).expect("secs"),
            0,
        ),
        root_delay: NtpShort::ZERO,
        root_dispersion: NtpShort::from_seconds_f64(0.001),
        unsynchronized: None,
    });
    let member = join_group(group, lo).expect("join");
    member
        .set_read_timeout(Some(Duration::from_millis(200)))
        .expect("timeout");
    // 2 s of broadcasting: 20 intervals, the first 16 of them disclosed.
    let server = thread::spawn(move || {
        let end = Instant::now() + Duration::from_secs(2);
        while Instant::now() < end {
            server.broadcast().expect("broadcast");
            server
                .answer_syncs(Duration::from_millis(10))
                .expect("sync");
        }
        server
    });
    let mut client = bootstrap(
        sync_addr,
        &verifier,
        ReceiverConfig::default(),
        ClientConfig::default(),
        Duration::from_secs(2),
    )
    .expect("bootstrap");
    let mut buf = [0u8; 1500];
    // Until the server is done (a read timeout alone may be a stall).
    let end = Instant::now() + Duration::from_secs(10);
    while Instant::now() < end {
        let Ok(n) = member.recv(&mut buf) else {
            if server.is_finished() {
                break;
            }
            continue;
        };
        client.handle(&buf[..n], monotonic_time());
    }
    let server = server.join().expect("server thread");
    let stats = client.stats();
    assert_eq!(server.syncs(), 1);
    assert!(
        stats.accepted >= 10,
        "{stats:?} {:?}",
        client.receiver().stats()
    );
    assert_eq!(stats.failed, 0);
    // The estimate is a lower bound on sender - local within the bound.
    let local = monotonic_time();
    let offset = client.offset_ns().expect("estimate");
    let upper = client.upper_bound_ns(local);
    assert!(offset <= upper);
    // The bootstrap's round trip (under d intervals, 400 ms) plus the best
    // sample's delay: small on loopback, bounded with room for a busy machine.
    let uncertainty = client.uncertainty_ns(local).expect("u");
    assert!(uncertainty < 500_000_000, "uncertainty {uncertainty} ns");
}
