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
use authtime_sign::{Scheme, SigningKey};
use authtime_tesla::{Params, ReceiverConfig, Sender, Time, mac_by_name};
use authtime_tesla_dtls::{SchemeSigner, SchemeVerifier};

const INTERVAL: u64 = 20_000_000;

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
        disclosure_delay: 4,
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
    let member = join_group(group, lo).expect("join");
    member
        .set_read_timeout(Some(Duration::from_millis(200)))
        .expect("timeout");
    let server = thread::spawn(move || {
        let end = Instant::now() + Duration::from_millis(900);
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
    let end = Instant::now() + Duration::from_secs(2);
    while Instant::now() < end {
        let Ok(n) = member.recv(&mut buf) else { break };
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
    assert!(client.uncertainty_ns(local).expect("u") < 100_000_000);
}
