//! Interop with the real NTPsec 1.2.2 (Debian's `ntpsec`, unpacked by
//! `scripts/ensure-ntpsec.sh`), both ways, each test in a user and network
//! namespace of its own where NTPsec has its fixed ports and no power over
//! the host clock (`ntp_support::ntpsec`, docs/interop.md):
//!
//! - NTPsec's NTS client uses `authtime serve`: NTS-KE, NTS-protected
//!   exchanges it accepts; its NTS-KE handshake time;
//! - `authtime query --nts` against NTPsec's NTS-KE and NTP servers, and plain
//!   `authtime query`; what NTPsec announces right after it syncs to its own
//!   clock;
//! - symmetric keys (AES-128-CMAC, SHA1) both ways;
//! - a cookie store whose cookies NTPsec no longer decodes after it made new
//!   cookie keys (it drops such requests without a NAK).

mod ntp_support;

use std::time::Duration;

use ntp_support::interop::{Direction, Row, median, proven};
use ntp_support::ntpsec::{
    self, Namespace, Ntpd, PEER, SERVE_METRICS_PORT, ServeInNamespace, nts_ke_times,
};
use ntp_support::{TempDir, keygen, metric, negotiated_groups, nts_cert, text_of};

/// authtime's NTP port in the namespace (NTPsec holds 123 there).
const SERVE_NTP_PORT: u16 = 11123;

/// `authtime serve` in `ns` with NTS-KE on 127.0.0.1:4460 (NTPsec's
/// default) and NTP on 127.0.0.1:11123 (announced in NTS-KE), and `extra`
/// lines in its `[ntp]` section.
fn serve_nts(ns: &Namespace, dir: &TempDir, extra_ntp: &str) -> ServeInNamespace {
    let body = format!(
        "[ntp]\nlisten = [\"127.0.0.1:{SERVE_NTP_PORT}\"]\nworkers = 1\n{extra_ntp}\
         [nts-ke]\nlisten = [\"127.0.0.1:{}\"]\ncertificate-chain = \"{}\"\n\
         private-key = \"{}\"\nworkers = 1\n[keystore]\npath = \"{}\"\n",
        ntpsec::NTS_KE_PORT,
        dir.path("nts-chain.pem").display(),
        dir.path("nts-key.pem").display(),
        dir.path("master-keys").display(),
    );
    ServeInNamespace::start(ns, dir, "serve", &body)
}

/// NTPsec's peerstats lines about `addr` (the samples its clock filter took).
fn samples_from(ntpd: &Ntpd, addr: &str) -> usize {
    ntpd.peerstats()
        .lines()
        .filter(|l| l.split_whitespace().nth(2) == Some(addr))
        .count()
}

/// Waits up to `limit` until NTPsec took `n` samples from `addr`.
fn wait_samples(ntpd: &Ntpd, addr: &str, n: usize, limit: Duration) -> bool {
    let deadline = std::time::Instant::now() + limit;
    while samples_from(ntpd, addr) < n {
        if std::time::Instant::now() >= deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    true
}

/// Whether every sample NTPsec took from `addr` had the "authentic" bit of
/// its peer status word (RFC 5905 / ntpq: 0x2000), and there was one.
fn all_authentic(ntpd: &Ntpd, addr: &str) -> bool {
    let statuses: Vec<u16> = ntpd
        .peerstats()
        .lines()
        .filter(|l| l.split_whitespace().nth(2) == Some(addr))
        .filter_map(|l| u16::from_str_radix(l.split_whitespace().nth(3)?, 16).ok())
        .collect();
    !statuses.is_empty() && statuses.iter().all(|s| s & 0x2000 != 0)
}

/// The lines of an NTPsec NTS client of `localhost` (NTS-KE on 4460, the
/// NTP port from NTS-KE), trusting `ca`, polling every 2 s.
fn nts_client_lines(ca: &std::path::Path) -> String {
    format!(
        "server localhost nts ca {} minpoll 0 maxpoll 0 iburst\n",
        ca.display()
    )
}

#[test]
fn ntpsec_client_takes_nts_samples_from_authtime_serve() {
    let ns = Namespace::new();
    let dir = TempDir::new("ntpsec-nts-client");
    nts_cert(&dir, "nts", &["--ip", "127.0.0.1"]);
    let serve = serve_nts(&ns, &dir, "");
    let ntpd = Ntpd::start(
        &ns,
        &dir,
        "client",
        &nts_client_lines(&dir.path("nts-ca.pem")),
    );
    let ok = wait_samples(&ntpd, "127.0.0.1", 3, Duration::from_secs(20));
    let log = ntpd.log_text();
    assert!(
        ok && all_authentic(&ntpd, "127.0.0.1"),
        "NTPsec took no authenticated samples from authtime:\n{log}\npeerstats:\n{}\nserver:\n{}",
        ntpd.peerstats(),
        serve.log_text()
    );
    assert!(log.contains("NTSc: Using port 11123"), "{log}");
    assert!(log.contains("NTSc: Got 8 cookies"), "{log}");
    assert!(log.contains("aead=15"), "{log}");
    let metrics = ns.scrape(SERVE_METRICS_PORT);
    assert!(
        metric(&metrics, "authtime_ntske_sessions_total{outcome=\"ok\"}") >= 1,
        "{metrics}"
    );
    assert!(
        metric(&metrics, "authtime_nts_answered_total") >= 3,
        "{metrics}"
    );
    assert_eq!(
        metric(&metrics, "authtime_ntp_answered_total{auth=\"none\"}"),
        0,
        "NTPsec sent only NTS requests"
    );
    // NTPsec's OpenSSL 3.0 has no ML-KEM: every handshake took X25519.
    assert_eq!(negotiated_groups(&metrics), ["X25519"], "{metrics}");
    let test = "nts_ntpsec::ntpsec_client_takes_nts_samples_from_authtime_serve";
    let rows = [
        (
            "NTS-KE",
            "TLS 1.3; NTP port 11123 from the Port Negotiation record",
        ),
        ("AEAD", "AEAD_AES_SIV_CMAC_256 (15)"),
        (
            "cookies",
            "8 per NTS-KE, one used per request; every sample authentic",
        ),
        ("key group", "X25519 (classical fallback)"),
    ];
    for (feature, result) in &rows {
        proven(Row {
            peer: PEER,
            direction: Direction::PeerToAuthtime,
            feature,
            result,
            test,
        });
    }
}

/// How many NTS-KE handshakes each direction's figure is the median of.
const HANDSHAKES: usize = 5;

#[test]
fn ntpsec_client_nts_ke_handshake_time_with_authtime() {
    let ns = Namespace::new();
    let dir = TempDir::new("ntpsec-nts-handshake");
    nts_cert(&dir, "nts", &["--ip", "127.0.0.1"]);
    let _serve = serve_nts(&ns, &dir, "");
    let mut times = Vec::new();
    // NTPsec runs NTS-KE once per start: start it a few times.
    for run in 0..HANDSHAKES {
        let mut ntpd = Ntpd::start(
            &ns,
            &dir,
            &format!("client-{run}"),
            &nts_client_lines(&dir.path("nts-ca.pem")),
        );
        let log = ntpd.wait_log(ntpsec::CLIENT_KE_LINE, Duration::from_secs(10));
        assert!(
            log.lines()
                .any(|l| l.contains(ntpsec::CLIENT_KE_LINE) && l.ends_with(", OK")),
            "{log}"
        );
        times.extend(nts_ke_times(&log, ntpsec::CLIENT_KE_LINE));
        ntpd.stop();
    }
    assert_eq!(times.len(), HANDSHAKES, "{times:?}");
    let ms = median(&times) * 1e3;
    eprintln!("NTPsec client -> authtime NTS-KE, as NTPsec logs it (ms): {times:?}, median {ms}");
    // A recorded figure, not a bound.
    proven(Row {
        peer: PEER,
        direction: Direction::PeerToAuthtime,
        feature: "handshake",
        result: &format!("{ms:.0} ms median of {HANDSHAKES} (NTPsec's log, 1 ms steps)"),
        test: "nts_ntpsec::ntpsec_client_nts_ke_handshake_time_with_authtime",
    });
}

/// NTPsec as an NTS server in `ns` with a certificate made for it: its NTS-KE
/// on 4460, NTP on 123, synchronized to its own clock. Returns it and the CA
/// file to trust.
fn ntpsec_nts_server(ns: &Namespace, dir: &TempDir) -> (Ntpd, String) {
    nts_cert(dir, "ntpsec", &["--ip", "127.0.0.1"]);
    let ntpd = Ntpd::start(
        ns,
        dir,
        "server",
        &ntpsec::nts_server_lines(dir, "server", "ntpsec"),
    );
    (ntpd, dir.path("ntpsec-ca.pem").display().to_string())
}

/// How long NTPsec may take to sync to its own clock and answer (about 7 s
/// here; see `nts_server_lines`).
const SYNC_LIMIT: Duration = Duration::from_secs(40);

/// The JSON of a successful `authtime query --json` run.
fn json_of(out: &std::process::Output) -> serde_json::Value {
    assert!(out.status.success(), "{}", text_of(out));
    serde_json::from_slice(&out.stdout).expect("json")
}

/// What NTPsec announced while it came up: the root dispersion (s) of the
/// first reply that carried one, and how long after the first query.
struct Synced {
    first_root_dispersion: f64,
    first_after: Duration,
    usable_after: Duration,
    /// The first usable reply.
    reply: serde_json::Value,
}

/// Queries NTPsec's NTP (plain) every 0.5 s until a reply is usable (exit
/// 0), at most [`SYNC_LIMIT`].
fn wait_synced(ns: &Namespace) -> Synced {
    let start = std::time::Instant::now();
    let mut first = None;
    loop {
        let out = ns.authtime(&["query", "127.0.0.1", "--timeout", "0.5", "--json"]);
        let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap_or_default();
        let reply = json["replies"][0].clone();
        if first.is_none()
            && let Some(dispersion) = reply["root_dispersion"].as_f64()
        {
            first = Some((dispersion, start.elapsed()));
        }
        if out.status.success() {
            let (first_root_dispersion, first_after) = first.expect("a root dispersion");
            return Synced {
                first_root_dispersion,
                first_after,
                usable_after: start.elapsed(),
                reply,
            };
        }
        assert!(
            start.elapsed() < SYNC_LIMIT,
            "NTPsec gave no usable reply within {SYNC_LIMIT:?}: {}",
            text_of(&out)
        );
        std::thread::sleep(Duration::from_millis(500));
    }
}

#[test]
fn authtime_query_gets_nts_and_plain_samples_from_ntpsec() {
    let ns = Namespace::new();
    let dir = TempDir::new("ntpsec-nts-server");
    let (ntpd, ca) = ntpsec_nts_server(&ns, &dir);
    // Plain NTP first, while NTPsec comes up: what it announces right after
    // it synchronized to its own clock, and when a reply becomes usable.
    let synced = wait_synced(&ns);
    eprintln!(
        "NTPsec announced root dispersion {:.3} s {:?} after the first query; first usable \
         reply after {:?}: {}",
        synced.first_root_dispersion, synced.first_after, synced.usable_after, synced.reply
    );
    assert_eq!(synced.reply["auth"], "none", "{}", synced.reply);
    assert_eq!(
        synced.reply["stratum"], 6,
        "local clock fudged to stratum 5, plus one"
    );

    let nts = ["--nts", "localhost", "--ca", &ca, "--json"];
    let mut args = nts.to_vec();
    args.extend_from_slice(&["--count", "3", "--interval", "0.2"]);
    let out = ns.query_until_ok(&args, Duration::from_secs(10));
    let json = json_of(&out);
    assert_eq!(json["address"], "127.0.0.1:123", "{json}");
    assert_eq!(json["nts"]["aead"], "AEAD_AES_SIV_CMAC_256", "{json}");
    for reply in json["replies"].as_array().expect("replies") {
        assert_eq!(reply["auth"], "nts", "{reply}");
        assert_eq!(reply["ok"], true, "{reply}");
    }
    // A few more NTS-KE handshakes for the figure.
    let mut ke_ms = vec![json["nts"]["ke_ms"].as_f64().expect("ke_ms")];
    while ke_ms.len() < HANDSHAKES {
        let json = json_of(&ns.query_until_ok(&nts, Duration::from_secs(5)));
        ke_ms.push(json["nts"]["ke_ms"].as_f64().expect("ke_ms"));
    }
    let server_side = nts_ke_times(&ntpd.log_text(), ntpsec::SERVER_KE_LINE);
    eprintln!(
        "authtime -> NTPsec NTS-KE (ms): authtime's {ke_ms:?}, NTPsec's log {server_side:?} s"
    );
    assert!(server_side.len() >= HANDSHAKES, "{}", ntpd.log_text());
    let test = "nts_ntpsec::authtime_query_gets_nts_and_plain_samples_from_ntpsec";
    let handshake = format!(
        "{:.1} ms median of {HANDSHAKES} (authtime query's ke_ms)",
        median(&ke_ms)
    );
    // NTPsec's OpenSSL 3.0 has no ML-KEM: authtime's client falls back.
    assert_eq!(json["nts"]["tls_group"], "X25519", "{json}");
    let rows = [
        ("NTS-KE", "TLS 1.3; NTP at 127.0.0.1:123"),
        ("AEAD", "AEAD_AES_SIV_CMAC_256 (15)"),
        (
            "cookies",
            "3 requests on one NTS-KE, every reply authenticated",
        ),
        ("plain NTP", "stratum 6 (local clock, fudged stratum 5)"),
        ("handshake", handshake.as_str()),
        ("key group", "X25519 (classical fallback)"),
    ];
    for (feature, result) in rows {
        proven(Row {
            peer: PEER,
            direction: Direction::AuthtimeToPeer,
            feature,
            result,
            test,
        });
    }
}

/// The keys of the symmetric-key tests: NTPsec's AES-128-CMAC and SHA1.
const KEYS: [(&str, u32); 2] = [("aes128", 1), ("sha1", 2)];

#[test]
fn authtime_query_gets_authenticated_samples_from_ntpsec_with_keys() {
    let ns = Namespace::new();
    let dir = TempDir::new("ntpsec-keys-server");
    let key_file = keygen(&dir, "ntp.keys", "ntpd", &KEYS);
    let _ntpd = Ntpd::start(
        &ns,
        &dir,
        "server",
        &format!(
            "{}keys {}\ntrustedkey 1 2\n",
            ntpsec::LOCAL_CLOCK_SERVER_LINES,
            key_file.display()
        ),
    );
    wait_synced(&ns);
    let key_path = key_file.display().to_string();
    for (key_type, key_id) in KEYS {
        let id = key_id.to_string();
        let out = ns.authtime(&[
            "query",
            "127.0.0.1",
            "--key-file",
            &key_path,
            "--key-id",
            &id,
            "--count",
            "2",
            "--interval",
            "0.2",
            "--json",
        ]);
        let json = json_of(&out);
        for reply in json["replies"].as_array().expect("replies") {
            assert_eq!(reply["authenticated"], true, "{key_type}: {reply}");
            assert_eq!(reply["key_id"], key_id, "{reply}");
        }
    }
    // Other bytes under key 1: NTPsec does not answer with that key.
    let other = keygen(&dir, "other.keys", "ntpd", &KEYS);
    let other_path = other.display().to_string();
    let out = ns.authtime(&[
        "query",
        "127.0.0.1",
        "--key-file",
        &other_path,
        "--key-id",
        "1",
    ]);
    assert_eq!(out.status.code(), Some(1), "{}", text_of(&out));
    proven(Row {
        peer: PEER,
        direction: Direction::AuthtimeToPeer,
        feature: "symmetric key",
        result: "AES128 (CMAC), SHA1",
        test: "nts_ntpsec::authtime_query_gets_authenticated_samples_from_ntpsec_with_keys",
    });
}

#[test]
fn ntpsec_client_takes_authenticated_samples_from_authtime_serve_with_keys() {
    let ns = Namespace::new();
    let dir = TempDir::new("ntpsec-keys-client");
    let key_file = keygen(&dir, "ntp.keys", "ntpd", &KEYS);
    // NTPsec's client names no server port (123 only), refuses servers at
    // 127.x.y.z other than 127.0.0.1, and keeps one association per address.
    // So authtime serves port 123 on two TEST-NET-2 addresses of the
    // namespace's loopback, one per key, and ntpd binds neither of them nor
    // the wildcard.
    let addrs = ["198.51.100.1", "198.51.100.2"];
    for addr in addrs {
        ns.add_address(addr);
    }
    let _serve = ServeInNamespace::start(
        &ns,
        &dir,
        "serve",
        &format!(
            "[ntp]\nlisten = [\"{}:123\", \"{}:123\"]\nworkers = 1\n\
             keys = \"{}\"\nkey-format = \"ntpd\"\n",
            addrs[0],
            addrs[1],
            key_file.display()
        ),
    );
    let ntpd = Ntpd::start(
        &ns,
        &dir,
        "client",
        &format!(
            "interface ignore wildcard\ninterface ignore {0}\ninterface ignore {1}\n\
             keys {2}\ntrustedkey 1 2\n\
             server {0} key 1 minpoll 0 maxpoll 0 iburst\n\
             server {1} key 2 minpoll 0 maxpoll 0 iburst\n",
            addrs[0],
            addrs[1],
            key_file.display()
        ),
    );
    for addr in addrs {
        let ok = wait_samples(&ntpd, addr, 2, Duration::from_secs(20));
        assert!(
            ok && all_authentic(&ntpd, addr),
            "{addr}: NTPsec took no authenticated samples:\n{}\npeerstats:\n{}",
            ntpd.log_text(),
            ntpd.peerstats()
        );
    }
    let metrics = ns.scrape(SERVE_METRICS_PORT);
    assert!(
        metric(&metrics, "authtime_ntp_answered_total{auth=\"mac\"}") >= 4,
        "{metrics}"
    );
    assert_eq!(
        metric(&metrics, "authtime_ntp_answered_total{auth=\"none\"}"),
        0,
        "NTPsec sent only keyed requests"
    );
    proven(Row {
        peer: PEER,
        direction: Direction::PeerToAuthtime,
        feature: "symmetric key",
        result: "AES128 (CMAC), SHA1",
        test: "nts_ntpsec::ntpsec_client_takes_authenticated_samples_from_authtime_serve_with_keys",
    });
}

/// `authtime query --nts localhost --ca CA --cookie-store STORE --json`.
fn query_with_store(ns: &Namespace, ca: &str, store: &str) -> std::process::Output {
    ns.authtime(&[
        "query",
        "--nts",
        "localhost",
        "--ca",
        ca,
        "--cookie-store",
        store,
        "--json",
    ])
}

#[test]
fn authtime_query_cookie_store_recovers_when_ntpsec_makes_new_cookie_keys() {
    let ns = Namespace::new();
    let dir = TempDir::new("ntpsec-cookie-store");
    let (ntpd, ca) = ntpsec_nts_server(&ns, &dir);
    wait_synced(&ns);
    let store = dir.path("cookies").display().to_string();
    let json = json_of(&query_with_store(&ns, &ca, &store));
    assert_eq!(json["nts"]["ke_exchanges"], 1, "{json}");
    // The stored session serves the next run without NTS-KE.
    let json = json_of(&query_with_store(&ns, &ca, &store));
    assert_eq!(json["nts"]["ke_exchanges"], 0, "{json}");
    assert_eq!(json["nts"]["session_from_cookie_store"], true, "{json}");

    // NTPsec restarts without its cookie keys: it makes new ones, and the
    // stored cookies no longer decode. It drops such requests, no NAK.
    ntpd.stop();
    let keys = dir.path("server.ntskeys");
    std::fs::remove_file(&keys).expect("NTPsec wrote its cookie keys");
    let ntpd = Ntpd::start(
        &ns,
        &dir,
        "server",
        &ntpsec::nts_server_lines(&dir, "server", "ntpsec"),
    );
    assert!(keys.exists(), "NTPsec made no new cookie keys");
    wait_synced(&ns);

    let out = query_with_store(&ns, &ca, &store);
    let json = json_of(&out);
    assert_eq!(
        json["nts"]["ke_exchanges"], 1,
        "the stale session is dropped and NTS-KE redone once: {json}"
    );
    assert_eq!(json["nts"]["stored_session_dropped"], true, "{json}");
    for reply in json["replies"].as_array().expect("replies") {
        assert_eq!(reply["auth"], "nts", "{reply}");
    }
    // The fresh session is stored again.
    let json = json_of(&query_with_store(&ns, &ca, &store));
    assert_eq!(json["nts"]["ke_exchanges"], 0, "{json}");
    drop(ntpd);
    proven(Row {
        peer: PEER,
        direction: Direction::AuthtimeToPeer,
        feature: "NAK recovery",
        result: "no NAK for undecodable cookies (new cookie keys): stored session dropped, \
                 NTS-KE redone once in the same run",
        test: "nts_ntpsec::authtime_query_cookie_store_recovers_when_ntpsec_makes_new_cookie_keys",
    });
}
