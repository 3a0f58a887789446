//! NTS servers as a fleet sharing their cookie master keys through a real
//! Redis (started by the test on loopback): NTS-KE on one server, NTP on
//! another; a rotation made by either is accepted by both; Redis stopped
//! mid-test changes nothing for clients; and a client whose stored cookies
//! a server no longer accepts gets an NTS NAK and recovers by redoing NTS-KE.

mod hostile_support;
mod ntp_support;
use ntp_support::nts_cert;
use ntp_support::stores::{free_tcp_port, memcached, redis};

use std::time::{Duration, Instant};

use ntp_support::{Serve, TempDir, authtime, free_udp_port, text_of};

fn keystore(redis_port: u16, rotation_s: u64) -> String {
    format!(
        "[keystore]\nkind = \"redis\"\nurl = \"redis://127.0.0.1:{redis_port}?key=fleet\"\n\
         rotation-interval = {rotation_s}\nold-keys = 1\npoll-interval = 0.2\n"
    )
}

#[test]
fn a_fleet_can_share_its_keys_through_memcached_too() {
    let dir = TempDir::new("nts-fleet-memcached");
    nts_cert(&dir, "nts", &["--ip", "127.0.0.1"]);
    let port = free_tcp_port();
    let _memcached = memcached(port);
    let store = format!(
        "[keystore]\nkind = \"memcached\"\nurl = \"memcached://127.0.0.1:{port}/fleet\"\npoll-interval = 0.2\n"
    );
    let ntp = Serve::start_named(
        &dir,
        "ntp",
        &format!("[ntp]\nlisten = [\"127.0.0.1:0\"]\nworkers = 1\n{store}"),
    );
    let ke = Serve::start_named(
        &dir,
        "ke",
        &format!(
            "[ntp]\nlisten = [\"127.0.0.1:0\"]\nworkers = 1\n[nts-ke]\nlisten = [\"127.0.0.1:0\"]\n\
             certificate-chain = \"nts-chain.pem\"\nprivate-key = \"nts-key.pem\"\n\
             ntp-server = \"127.0.0.1\"\nntp-port = {}\nworkers = 1\n{store}",
            ntp.addr.port()
        ),
    );
    let json = query(&dir, &ke, &["--count", "2", "--interval", "0"]);
    assert_eq!(json["address"], ntp.addr.to_string());
    assert_eq!(ntp.metric("authtime_nts_answered_total"), 2);
}

/// An NTP-only member of the fleet (NTS-protected NTP from the shared keys).
fn ntp_server(dir: &TempDir, name: &str, redis_port: u16, rotation_s: u64) -> Serve {
    let body = format!(
        "[ntp]\nlisten = [\"127.0.0.1:0\"]\nworkers = 1\n{}",
        keystore(redis_port, rotation_s)
    );
    Serve::start_named(dir, name, &body)
}

/// An NTS-KE member that sends its clients to the NTP server on `ntp_port`.
fn ke_server(dir: &TempDir, name: &str, redis_port: u16, rotation_s: u64, ntp_port: u16) -> Serve {
    let body = format!(
        "[ntp]\nlisten = [\"127.0.0.1:0\"]\nworkers = 1\n\
         [nts-ke]\nlisten = [\"127.0.0.1:0\"]\ncertificate-chain = \"nts-chain.pem\"\n\
         private-key = \"nts-key.pem\"\nntp-server = \"127.0.0.1\"\nntp-port = {ntp_port}\nworkers = 1\n{}",
        keystore(redis_port, rotation_s)
    );
    let serve = Serve::start_named(dir, name, &body);
    assert!(serve.nts_ke.is_some(), "{}", serve.log_text());
    serve
}

/// `authtime query --nts` through `ke`; returns the JSON report.
fn query(dir: &TempDir, ke: &Serve, extra: &[&str]) -> serde_json::Value {
    let target = format!("localhost:{}", ke.nts_ke.expect("ke").port());
    let ca = dir.path("nts-ca.pem").display().to_string();
    let mut args = vec![
        "query",
        "--nts",
        &target,
        "--ca",
        &ca,
        "--json",
        "--timeout",
        "1",
    ];
    args.extend_from_slice(extra);
    let out = authtime(&args);
    assert!(
        out.status.success(),
        "{}\nke log:\n{}",
        text_of(&out),
        ke.log_text()
    );
    serde_json::from_slice(&out.stdout).expect("json")
}

#[test]
fn cookies_from_one_server_are_accepted_by_another_even_without_redis() {
    let dir = TempDir::new("nts-fleet");
    nts_cert(&dir, "nts", &["--ip", "127.0.0.1"]);
    let redis_port = free_tcp_port();
    let redis_server = redis(redis_port);
    let ntp = ntp_server(&dir, "ntp", redis_port, 86_400);
    let ke = ke_server(&dir, "ke", redis_port, 86_400, ntp.addr.port());

    let json = query(&dir, &ke, &["--count", "2", "--interval", "0"]);
    assert_eq!(
        json["address"],
        ntp.addr.to_string(),
        "the NTP server of the fleet answered"
    );
    assert_eq!(ntp.metric("authtime_nts_answered_total"), 2);
    assert_eq!(ke.metric("authtime_nts_answered_total"), 0);
    // One of them created the ring; the other loaded it.
    let published = ke.metric("authtime_nts_key_rotations_total")
        + ntp.metric("authtime_nts_key_rotations_total");
    assert_eq!(published, 1);

    // Redis goes away: both keep serving with the keys they hold.
    drop(redis_server);
    for serve in [&ntp, &ke] {
        assert_eq!(
            serve.wait_metric("authtime_nts_keystore_down", 1),
            1,
            "{}",
            serve.log_text()
        );
    }
    let json = query(&dir, &ke, &[]);
    assert_eq!(json["replies"][0]["auth"], "nts");
    assert!(
        ke.log_text().contains("NTS key store unavailable"),
        "{}",
        ke.log_text()
    );

    // Redis returns empty: the ring in force is written back, nothing changes for clients.
    let _redis = redis(redis_port);
    for serve in [&ntp, &ke] {
        let deadline = Instant::now() + Duration::from_secs(5);
        while serve.metric("authtime_nts_keystore_down") != 0 {
            assert!(Instant::now() < deadline, "{}", serve.log_text());
            std::thread::sleep(Duration::from_millis(50));
        }
    }
    query(&dir, &ke, &[]);
    assert_eq!(
        ntp.metric("authtime_nts_naks_total{reason=\"nak_unknown_key\"}"),
        0
    );
}

#[test]
fn a_rotation_by_either_server_is_accepted_by_both() {
    let dir = TempDir::new("nts-fleet-rotation");
    nts_cert(&dir, "nts", &["--ip", "127.0.0.1"]);
    let redis_port = free_tcp_port();
    let _redis = redis(redis_port);
    // Two-second periods, one old key kept: three rotations in this test.
    let ntp = ntp_server(&dir, "ntp", redis_port, 2);
    let ke = ke_server(&dir, "ke", redis_port, 2, ntp.addr.port());
    let store = dir.path("cookies").display().to_string();
    query(&dir, &ke, &["--cookie-store", &store]);
    let changes = "authtime_nts_key_ring_changes_total";
    let (ke_before, ntp_before) = (ke.metric(changes), ntp.metric(changes));
    // Two rotations after the cookies were issued, on both servers (about
    // 4 s, waited for on the metrics). The NTP server may have been one
    // ring behind the KE server when read (it polls Redis every 0.2 s), so
    // it must see three changes.
    let deadline = Instant::now() + Duration::from_secs(15);
    while (ke.metric(changes) < ke_before + 2 || ntp.metric(changes) < ntp_before + 3)
        && Instant::now() < deadline
    {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(ke.metric(changes) >= ke_before + 2, "{}", ke.log_text());
    assert!(ntp.metric(changes) >= ntp_before + 3, "{}", ntp.log_text());
    // New keys on both: a fresh NTS-KE on one, NTP on the other.
    let json = query(&dir, &ke, &[]);
    assert_eq!(json["replies"][0]["auth"], "nts");
    let published = ke.metric("authtime_nts_key_rotations_total")
        + ntp.metric("authtime_nts_key_rotations_total");
    assert!(
        published >= 3,
        "the ring was created and rotated at least twice: {published}"
    );
    // The stored cookies are now older than the keys kept: NTS NAK, then a
    // fresh NTS-KE, and the query still succeeds.
    let json = query(&dir, &ke, &["--cookie-store", &store]);
    assert_eq!(json["nts"]["session_from_cookie_store"], true);
    assert_eq!(json["nts"]["ke_exchanges"], 1, "{json}");
    assert_eq!(
        ntp.metric("authtime_nts_naks_total{reason=\"nak_unknown_key\"}"),
        1
    );
}

#[test]
fn a_restarted_server_with_new_keys_naks_old_cookies_and_the_client_recovers() {
    let dir = TempDir::new("nts-nak");
    nts_cert(&dir, "nts", &["--ip", "127.0.0.1"]);
    let (ntp_port, ke_port) = (free_udp_port(), free_tcp_port());
    let body = |keys: &str| {
        format!(
            "[ntp]\nlisten = [\"127.0.0.1:{ntp_port}\"]\nworkers = 1\n\
             [nts-ke]\nlisten = [\"127.0.0.1:{ke_port}\"]\ncertificate-chain = \"nts-chain.pem\"\n\
             private-key = \"nts-key.pem\"\nworkers = 1\n[keystore]\npath = \"{keys}\"\n"
        )
    };
    let store = dir.path("cookies").display().to_string();
    {
        let first = Serve::start_named(&dir, "first", &body("keys-1"));
        let json = query(&dir, &first, &["--cookie-store", &store]);
        assert_eq!(json["nts"]["ke_exchanges"], 1);
        // The same server after a restart keeps its keys (the file store).
        drop(first);
        let again = Serve::start_named(&dir, "again", &body("keys-1"));
        let json = query(&dir, &again, &["--cookie-store", &store]);
        assert_eq!(
            json["nts"]["ke_exchanges"], 0,
            "stored cookies still valid: {json}"
        );
    }
    let other = Serve::start_named(&dir, "other", &body("keys-2"));
    let json = query(&dir, &other, &["--cookie-store", &store]);
    assert_eq!(json["nts"]["session_from_cookie_store"], true);
    assert_eq!(
        json["nts"]["ke_exchanges"], 1,
        "NAK then a fresh NTS-KE: {json}"
    );
    // Key ids are period numbers, so the new ring has a key of the same id
    // whose bytes differ: the cookie does not decrypt.
    assert_eq!(
        other.metric("authtime_nts_naks_total{reason=\"nak_bad_cookie\"}"),
        1
    );
}

/// Whether every NAK reason of `serve` is still at zero.
fn no_naks(serve: &Serve) -> bool {
    ["nak_unknown_key", "nak_bad_cookie", "nak_unauthenticated"]
        .iter()
        .all(|r| serve.metric(&format!("authtime_nts_naks_total{{reason=\"{r}\"}}")) == 0)
}

/// The master keys `serve` holds under `aead` (`256` or `512`).
fn keys_of(serve: &Serve, aead: u32) -> u64 {
    serve.metric(&format!(
        "authtime_nts_master_keys_by_aead{{aead=\"AEAD_AES_SIV_CMAC_{aead}\"}}"
    ))
}

/// A fleet whose ring holds AES-SIV-CMAC-512 keys (what releases before
/// 2026-11-27 made) keeps making them under `cookie-aead = "auto"`, then
/// switches to AES-SIV-CMAC-256 when the operator sets it on every server
/// (`docs/nts.md`; whichever server rotates first makes the next key): the
/// ring holds both kinds for a while, every server reads it, and no cookie,
/// old or new, gets a NAK.
#[test]
fn a_fleet_switches_its_cookie_aead_without_refusing_a_cookie() {
    let dir = TempDir::new("nts-fleet-aead");
    nts_cert(&dir, "nts", &["--ip", "127.0.0.1"]);
    let redis_port = free_tcp_port();
    let _redis = redis(redis_port);
    let store = |aead: &str| {
        format!(
            "[keystore]\nkind = \"redis\"\nurl = \"redis://127.0.0.1:{redis_port}?key=aead\"\n\
             rotation-interval = 2\nold-keys = 6\npoll-interval = 0.2\ncookie-aead = \"{aead}\"\n"
        )
    };
    let ntp_port = free_udp_port();
    let ke_with = |name: &str, aead: &str| {
        let serve = Serve::start_named(
            &dir,
            name,
            &format!(
                "[ntp]\nlisten = [\"127.0.0.1:0\"]\nworkers = 1\n\
                 [nts-ke]\nlisten = [\"127.0.0.1:0\"]\ncertificate-chain = \"nts-chain.pem\"\n\
                 private-key = \"nts-key.pem\"\nntp-server = \"127.0.0.1\"\nntp-port = {ntp_port}\n\
                 workers = 1\n{}",
                store(aead)
            ),
        );
        assert!(serve.nts_ke.is_some(), "{}", serve.log_text());
        serve
    };
    // The first server makes the ring: AES-SIV-CMAC-512 keys.
    let old = ke_with("ke-512", "aes-siv-cmac-512");
    let ntp_with = |name: &str, aead: &str| {
        Serve::start_named(
            &dir,
            name,
            &format!(
                "[ntp]\nlisten = [\"127.0.0.1:{ntp_port}\"]\nworkers = 1\n{}",
                store(aead)
            ),
        )
    };
    let ntp = ntp_with("ntp", "auto");
    assert!(
        ntp.wait_metric("authtime_nts_master_keys", 2) >= 2,
        "{}",
        ntp.log_text()
    );
    // A session whose cookies are sealed under an AES-SIV-CMAC-512 key.
    let ca = dir.path("nts-ca.pem");
    let early = hostile_support::session(&dir, &old, &ca);
    // Rotations go on under `auto`: still only AES-SIV-CMAC-512 keys.
    std::thread::sleep(Duration::from_millis(2500));
    assert!(keys_of(&ntp, 512) >= 3, "{}", ntp.scrape());
    assert_eq!(keys_of(&ntp, 256), 0, "{}", ntp.scrape());

    // The operator sets the new AEAD on every server and restarts them
    // (the NTP server on its port, which the stored session names).
    drop(old);
    drop(ntp);
    let ntp = ntp_with("ntp-256", "aes-siv-cmac-256");
    let new = ke_with("ke-256", "aes-siv-cmac-256");
    let deadline = Instant::now() + Duration::from_secs(8);
    while keys_of(&ntp, 256) == 0 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(keys_of(&ntp, 256) > 0, "{}", ntp.scrape());
    assert!(
        keys_of(&ntp, 512) > 0,
        "the old keys are kept: {}",
        ntp.scrape()
    );
    // A cookie of the early session (under an AES-SIV-CMAC-512 key) and
    // one of a new session (AES-SIV-CMAC-256) both get time.
    let late = hostile_support::session(&dir, &new, &ca);
    let socket = std::net::UdpSocket::bind("127.0.0.1:0").expect("bind");
    let mut rng = hostile_support::Rng::new(27);
    for s in [&early, &late] {
        let got = hostile_support::exchange(
            &socket,
            ntp.addr,
            &s.keys,
            &s.cookies[0],
            0,
            &mut rng,
            Duration::from_secs(2),
        );
        assert!(
            matches!(got, hostile_support::Exchange::Time(_)),
            "{}",
            ntp.scrape()
        );
    }
    assert!(no_naks(&ntp), "{}", ntp.scrape());
    assert!(
        new.log_text().contains("AEAD_AES_SIV_CMAC"),
        "{}",
        new.log_text()
    );
}
