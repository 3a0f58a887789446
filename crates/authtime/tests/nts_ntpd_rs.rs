//! Interop with the real ntpd-rs 1.9 (crate `ntpd`, built once per machine
//! by `scripts/ensure-ntpd-rs.sh`), both ways, on loopback and ports the
//! tests pick. ntp-daemon runs in a user namespace under the readonly-clock
//! shim, so it never changes the host clock (docs/interop.md, "ntpd-rs 1.9").
//!
//! - ntpd-rs's daemon uses `authtime serve` as its NTS source: NTS-KE,
//!   NTS-protected polls, `ntp-ctl status` shows the source with cookies and
//!   no missing polls; after authtime's master keys are replaced, it gets
//!   NTS NAKs, redoes NTS-KE and is usable again;
//! - ntpd-rs's daemon uses `authtime serve` as a plain NTP source;
//! - `authtime query --nts` and plain `authtime query` get samples from
//!   ntpd-rs's own NTS-KE and NTP servers;
//! - both ways, NTS-KE takes the hybrid post-quantum group X25519MLKEM768.
//!
//! ntpd-rs rejects a source at one of the host's own addresses unless it is
//! stratum 1 ("detected synchronization loop"): authtime listens on
//! 127.0.0.2 when ntpd-rs is its client. ntpd-rs 1.9 has no NTP symmetric-key
//! (MAC) authentication, so there is no such test here.

mod ntp_support;

use std::path::Path;
use std::time::{Duration, Instant};

use ntp_support::interop::{Direction, Row, median, proven};
use ntp_support::ntpd_rs::{NtpdRs, Source, free_port_on, install};
use ntp_support::{Serve, TempDir, authtime, metric, negotiated_groups, nts_cert, text_of};

/// The address authtime serves ntpd-rs on: not 127.0.0.1, which ntpd-rs
/// finds among the host's interface addresses (see the module comment).
const AUTHTIME_IP: &str = "127.0.0.2";

/// ntpd-rs polls once a second here (the least it allows, 2^0 s), twice
/// authtime's default per-client rate: the tests allow more.
const POLL_FAST: &str = "poll-interval-limits = { min = 0, max = 0 }\ninitial-poll-interval = 0\n";

/// `authtime serve` on 127.0.0.2 with NTP, and with NTS-KE when `nts_ke`
/// holds its extra lines (`""` for the defaults), on ports picked here; the
/// certificate (from `nts_cert` with prefix `nts`) names 127.0.0.2.
fn serve_for_ntpd_rs(dir: &TempDir, nts_ke: Option<&str>) -> Serve {
    let ntp_port = free_port_on(AUTHTIME_IP);
    let mut body = format!(
        "[ntp]\nlisten = [\"{AUTHTIME_IP}:{ntp_port}\"]\nworkers = 1\n\
         [rate-limit]\nrate = 8.0\n"
    );
    if let Some(extra) = nts_ke {
        nts_cert(dir, "nts", &["--ip", AUTHTIME_IP]);
        let ke_port = free_port_on(AUTHTIME_IP);
        body.push_str(&format!(
            "[nts-ke]\nlisten = [\"{AUTHTIME_IP}:{ke_port}\"]\n\
             certificate-chain = \"nts-chain.pem\"\nprivate-key = \"nts-key.pem\"\n\
             workers = 1\n{extra}\
             [keystore]\npath = \"master-keys\"\npoll-interval = 0.2\n"
        ));
    }
    let serve = Serve::start(dir, &body);
    assert!(
        nts_ke.is_none() || serve.nts_ke.is_some(),
        "no NTS-KE address: {}",
        serve.log_text()
    );
    serve
}

/// authtime's `[nts-ke]` accepting only the mandatory AEAD, so that a
/// working session shows which AEAD it used.
const ONLY_AES_SIV_CMAC_256: &str = "aead = [\"aes-siv-cmac-256\"]\n";

/// ntp-daemon with one NTS source: `serve`'s NTS-KE, trusting the test CA.
fn ntpd_rs_nts_client(dir: &TempDir, serve: &Serve) -> NtpdRs {
    let ke = serve.nts_ke.expect("NTS-KE").to_string();
    ntpd_rs_nts_client_of(dir, "ntpd-rs", &ke, &dir.path("nts-ca.pem"))
}

/// ntp-daemon named `name` with one NTS source: the NTS-KE server `ke`
/// (`HOST:PORT`), trusting the CA in `ca`.
fn ntpd_rs_nts_client_of(dir: &TempDir, name: &str, ke: &str, ca: &Path) -> NtpdRs {
    NtpdRs::start(
        dir,
        name,
        &format!(
            "[[source]]\nmode = \"nts\"\naddress = \"{ke}\"\n\
             certificate-authority = \"{}\"\n{POLL_FAST}",
            ca.display()
        ),
    )
}

/// Milliseconds of the NTS-KE of a fresh ntp-daemon with one NTS source,
/// `ke` trusted through `ca`, as its log shows it.
fn ntpd_rs_ke_time(dir: &TempDir, name: &str, ke: &str, ca: &Path) -> f64 {
    let ntpd_rs = ntpd_rs_nts_client_of(dir, name, ke, ca);
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        if let Some(&t) = ntpd_rs.ke_times_ms().first() {
            return t;
        }
        assert!(
            Instant::now() < deadline,
            "no NTS-KE in ntpd-rs's log:\n{}",
            ntpd_rs.log_text()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A source ntpd-rs can use: answered polls, none missing, at the fast
/// poll interval; with NTS, holding cookies.
fn usable(source: &Source, nts: bool) -> bool {
    source.unanswered_polls == 0
        && (source.poll_interval_s - 1.0).abs() < 0.01
        && source.nts_cookies.is_some() == nts
        && source.nts_cookies.is_none_or(|n| n > 0)
}

/// The sum of every sample of the metric family `family` (all label sets).
fn metric_sum(text: &str, family: &str) -> u64 {
    text.lines()
        .filter(|l| {
            l.strip_prefix(family)
                .is_some_and(|rest| rest.starts_with('{') || rest.starts_with(' '))
        })
        .filter_map(|l| l.rsplit(' ').next()?.parse::<u64>().ok())
        .sum()
}

/// Waits (up to `limit`) until `serve`'s `sample` reaches `value`.
fn wait_metric_for(serve: &Serve, sample: &str, value: u64, limit: Duration) -> u64 {
    let deadline = Instant::now() + limit;
    loop {
        let now = serve.metric(sample);
        if now >= value || Instant::now() >= deadline {
            return now;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// The hybrid post-quantum group both ntpd-rs (rustls with aws-lc-rs and
/// `prefer-post-quantum`) and authtime offer first.
const HYBRID_GROUP: &str = "X25519MLKEM768";

/// The IANA AEAD id of a name authtime prints, for the matrix.
fn aead_with_id(name: &str) -> String {
    let id = match name {
        "AEAD_AES_SIV_CMAC_256" => "15",
        "AEAD_AES_SIV_CMAC_512" => "17",
        "AEAD_AES_128_GCM_SIV" => "30",
        _ => "?",
    };
    format!("{name} ({id})")
}

/// ntp-daemon with a source takes control of the clock at start (it sets
/// the kernel's status bits, `ADJ_STATUS`): the shim answered that, and the
/// daemon, which exits when the kernel refuses, still runs.
fn assert_clock_changes_absorbed(ntpd_rs: &mut NtpdRs) {
    let absorbed = ntpd_rs.absorbed_text();
    assert!(
        absorbed.contains(" modes=0x10 absorbed"),
        "the shim answered no clock change:\n{absorbed}"
    );
    assert!(ntpd_rs.is_running(), "{}", ntpd_rs.log_text());
}

#[test]
fn ntpd_rs_uses_authtime_as_its_nts_source() {
    let dir = TempDir::new("ntpd-rs-nts-client");
    // authtime's defaults. ntpd-rs offers AES-SIV-CMAC-512, then -256, and
    // authtime follows the client's order; authtime does not show which AEAD
    // a session took, so the AEAD row comes from the NAK test, whose server
    // accepts only AES-SIV-CMAC-256.
    let serve = serve_for_ntpd_rs(&dir, Some(""));
    let mut ntpd_rs = ntpd_rs_nts_client(&dir, &serve);
    let ke = serve.nts_ke.expect("NTS-KE").to_string();

    // Four answered NTS polls, then the source as ntp-ctl shows it.
    let answered = wait_metric_for(
        &serve,
        "authtime_nts_answered_total",
        4,
        Duration::from_secs(20),
    );
    assert!(
        answered >= 4,
        "authtime answered {answered} NTS requests from ntpd-rs:\n{}\nserver:\n{}",
        ntpd_rs.log_text(),
        serve.log_text()
    );
    let source = ntpd_rs
        .wait_for_source(Duration::from_secs(10), |s| usable(s, true) && s.name == ke)
        .unwrap_or_else(|| {
            panic!(
                "ntp-ctl shows no usable NTS source:\n{}\n{}",
                ntpd_rs.ctl_status("plain"),
                ntpd_rs.log_text()
            )
        });
    let plain = ntpd_rs.ctl_status("plain");
    assert!(plain.contains("[NTS]"), "{plain}");
    assert!(plain.contains("Missing polls:\t\t0"), "{plain}");
    assert!(source.offset_s.abs() < 0.05, "same host, {source:?}");

    let metrics = serve.scrape();
    assert_eq!(
        metric(&metrics, "authtime_ntske_sessions_total{outcome=\"ok\"}"),
        1,
        "{metrics}"
    );
    assert_eq!(
        metric_sum(&metrics, "authtime_nts_naks_total"),
        0,
        "{metrics}"
    );
    assert_eq!(
        metric(&metrics, "authtime_ntp_answered_total{auth=\"none\"}"),
        0,
        "ntpd-rs sent only NTS requests"
    );
    // Both offer the hybrid group first: every handshake took it.
    assert_eq!(negotiated_groups(&metrics), [HYBRID_GROUP], "{metrics}");
    assert_clock_changes_absorbed(&mut ntpd_rs);

    let peer = install().peer();
    let test = "nts_ntpd_rs::ntpd_rs_uses_authtime_as_its_nts_source";
    // The row's text is the same on every passing run (the matrix check
    // compares it); the counts are in the assertions above.
    let rows = [
        ("NTS-KE", "ntp-ctl: NTS source, 0 missing polls"),
        ("cookies", "ntp-ctl: cookies available"),
        ("key group", HYBRID_GROUP),
    ];
    for (feature, result) in &rows {
        proven(Row {
            peer: &peer,
            direction: Direction::PeerToAuthtime,
            feature,
            result,
            test,
        });
    }
}

#[test]
fn ntpd_rs_redoes_nts_ke_after_authtime_replaces_its_master_keys() {
    let dir = TempDir::new("ntpd-rs-nts-nak");
    let serve = serve_for_ntpd_rs(&dir, Some(ONLY_AES_SIV_CMAC_256));
    let mut ntpd_rs = ntpd_rs_nts_client(&dir, &serve);
    let first = ntpd_rs
        .wait_for_source(Duration::from_secs(20), |s| usable(s, true))
        .unwrap_or_else(|| panic!("no usable NTS source:\n{}", ntpd_rs.log_text()));

    // A new ring in the store, as a fleet's other server or an operator's
    // emergency re-key would write it: authtime adopts it within its 0.2 s
    // store poll, and no cookie ntpd-rs holds opens any more. The ring is
    // made by a second authtime with its own store.
    let fresh = Serve::start_named(
        &dir,
        "fresh",
        "[ntp]\nlisten = [\"127.0.0.1:0\"]\nworkers = 1\n[keystore]\npath = \"fresh-keys\"\n",
    );
    drop(fresh);
    let ring = std::fs::read(dir.path("fresh-keys")).expect("the fresh ring");
    let swap = dir.path("master-keys.swap");
    std::fs::write(&swap, &ring).expect("write the new ring");
    std::fs::rename(&swap, dir.path("master-keys")).expect("replace the ring");
    let answered_before = serve.metric("authtime_nts_answered_total");

    // ntpd-rs ignores a NAK (it may be forged) but gets no fresh cookie, so
    // its 8 cookies run out in 8 polls; then it redoes NTS-KE.
    let deadline = Instant::now() + Duration::from_secs(40);
    loop {
        let metrics = serve.scrape();
        let naks = metric_sum(&metrics, "authtime_nts_naks_total");
        if naks >= 1 && metric(&metrics, "authtime_ntske_sessions_total{outcome=\"ok\"}") >= 2 {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "no NAK and second NTS-KE:\n{metrics}\n{}",
            ntpd_rs.log_text()
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    assert!(
        ntpd_rs.log_text().contains("Received nts not-acknowledge"),
        "ntpd-rs saw no NTS NAK:\n{}",
        ntpd_rs.log_text()
    );
    ntpd_rs
        .wait_for_source(Duration::from_secs(20), |s| {
            usable(s, true) && s.id != first.id
        })
        .unwrap_or_else(|| {
            panic!(
                "ntpd-rs's source is not usable again after NTS-KE:\n{}\n{}",
                ntpd_rs.ctl_status("plain"),
                ntpd_rs.log_text()
            )
        });
    let answered = wait_metric_for(
        &serve,
        "authtime_nts_answered_total",
        answered_before + 2,
        Duration::from_secs(10),
    );
    assert!(
        answered >= answered_before + 2,
        "{answered} <= {answered_before} + 2"
    );
    assert_clock_changes_absorbed(&mut ntpd_rs);

    let peer = install().peer();
    let test = "nts_ntpd_rs::ntpd_rs_redoes_nts_ke_after_authtime_replaces_its_master_keys";
    for (feature, result) in [
        (
            "NAK recovery",
            "NAKs, NTS-KE redone, source usable again with cookies",
        ),
        ("AEAD", "AEAD_AES_SIV_CMAC_256 (15)"),
    ] {
        proven(Row {
            peer: &peer,
            direction: Direction::PeerToAuthtime,
            feature,
            result,
            test,
        });
    }
}

#[test]
fn ntpd_rs_nts_ke_handshakes_with_authtime() {
    let dir = TempDir::new("ntpd-rs-nts-handshake");
    let serve = serve_for_ntpd_rs(&dir, Some(""));
    let authtime_ke = serve.nts_ke.expect("NTS-KE").to_string();
    // The same measure against ntpd-rs's own NTS-KE server, in the same run:
    // ntpd-rs's time includes its own work (certificate store, resolving),
    // and the machine's load moves both alike.
    let (_server, _, rs_ke_port) = ntpd_rs_server(&dir);
    let rs_ke = format!("localhost:{rs_ke_port}");
    // One NTS-KE per daemon start: five starts each, alternating.
    let (mut with_authtime, mut with_ntpd_rs) = (Vec::new(), Vec::new());
    for i in 0..5 {
        let ca = dir.path("nts-ca.pem");
        with_authtime.push(ntpd_rs_ke_time(
            &dir,
            &format!("ke-a{i}"),
            &authtime_ke,
            &ca,
        ));
        let ca = dir.path("rs-ca.pem");
        with_ntpd_rs.push(ntpd_rs_ke_time(&dir, &format!("ke-r{i}"), &rs_ke, &ca));
    }
    assert_eq!(
        serve.metric("authtime_ntske_sessions_total{outcome=\"ok\"}"),
        5
    );
    let result = format!(
        "{:.1} ms median of {} (ntpd-rs's log: KE start to source created; \
         ntpd-rs to its own server in the same run: {:.1} ms)",
        median(&with_authtime),
        with_authtime.len(),
        median(&with_ntpd_rs),
    );
    proven(Row {
        peer: &install().peer(),
        direction: Direction::PeerToAuthtime,
        feature: "handshake",
        result: &result,
        test: "nts_ntpd_rs::ntpd_rs_nts_ke_handshakes_with_authtime",
    });
}

#[test]
fn ntpd_rs_uses_authtime_as_a_plain_ntp_server() {
    let dir = TempDir::new("ntpd-rs-plain-client");
    let serve = serve_for_ntpd_rs(&dir, None);
    let mut ntpd_rs = NtpdRs::start(
        &dir,
        "ntpd-rs",
        &format!(
            "[[source]]\nmode = \"server\"\naddress = \"{}\"\n{POLL_FAST}",
            serve.addr
        ),
    );
    let answered = wait_metric_for(
        &serve,
        "authtime_ntp_answered_total{auth=\"none\"}",
        4,
        Duration::from_secs(20),
    );
    assert!(answered >= 4, "{answered}:\n{}", ntpd_rs.log_text());
    let source = ntpd_rs
        .wait_for_source(Duration::from_secs(10), |s| usable(s, false))
        .unwrap_or_else(|| {
            panic!(
                "ntp-ctl shows no usable source:\n{}\n{}",
                ntpd_rs.ctl_status("plain"),
                ntpd_rs.log_text()
            )
        });
    assert_eq!(source.address, serve.addr.to_string());
    assert_clock_changes_absorbed(&mut ntpd_rs);
    proven(Row {
        peer: &install().peer(),
        direction: Direction::PeerToAuthtime,
        feature: "plain NTP",
        result: "ntp-ctl: source polled every 1 s, 0 missing polls",
        test: "nts_ntpd_rs::ntpd_rs_uses_authtime_as_a_plain_ntp_server",
    });
}

/// ntp-daemon as a stratum-1 NTP and NTS-KE server on 127.0.0.1 (no
/// sources: it never asks for the clock), certificate `rs-*` from the test
/// CA naming localhost: (daemon, NTP port, NTS-KE port).
fn ntpd_rs_server(dir: &TempDir) -> (NtpdRs, u16, u16) {
    nts_cert(dir, "rs", &["--ip", "127.0.0.1"]);
    let ntp_port = free_port_on("127.0.0.1");
    let ke_port = free_port_on("127.0.0.1");
    let ntpd_rs = NtpdRs::start(
        dir,
        "ntpd-rs-server",
        &format!(
            "[synchronization]\nlocal-stratum = 1\n\
             [[server]]\nlisten = \"127.0.0.1:{ntp_port}\"\n\
             [[nts-ke-server]]\nlisten = \"127.0.0.1:{ke_port}\"\n\
             certificate-chain-path = \"{}\"\nprivate-key-path = \"{}\"\nntp-port = {ntp_port}\n",
            dir.path("rs-chain.pem").display(),
            dir.path("rs-key.pem").display(),
        ),
    );
    let deadline = Instant::now() + Duration::from_secs(10);
    while std::net::TcpStream::connect(("127.0.0.1", ke_port)).is_err() {
        assert!(
            Instant::now() < deadline,
            "ntpd-rs's NTS-KE does not listen:\n{}",
            ntpd_rs.log_text()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    (ntpd_rs, ntp_port, ke_port)
}

/// `authtime query --nts localhost:KE --ca rs-ca.pem --json EXTRA...`.
fn query_nts(dir: &TempDir, ke_port: u16, extra: &[&str]) -> serde_json::Value {
    let ke = format!("localhost:{ke_port}");
    let ca = dir.path("rs-ca.pem").display().to_string();
    let mut args = vec!["query", "--nts", &ke, "--ca", &ca, "--json"];
    args.extend_from_slice(extra);
    let out = authtime(&args);
    assert!(out.status.success(), "{}", text_of(&out));
    serde_json::from_slice(&out.stdout).expect("json")
}

#[test]
fn authtime_query_gets_nts_and_plain_samples_from_ntpd_rs() {
    let dir = TempDir::new("ntpd-rs-server");
    let (mut ntpd_rs, ntp_port, ke_port) = ntpd_rs_server(&dir);
    let json = query_nts(&dir, ke_port, &["--count", "3", "--interval", "0.2"]);
    assert_eq!(json["address"], format!("127.0.0.1:{ntp_port}"), "{json}");
    let replies = json["replies"].as_array().expect("replies");
    assert_eq!(replies.len(), 3, "{json}");
    for reply in replies {
        assert_eq!(reply["auth"], "nts", "{reply}");
        assert_eq!(reply["ok"], true, "{reply}");
        assert_eq!(reply["stratum"], 1, "{reply}");
    }
    let aead = json["nts"]["aead"].as_str().expect("aead").to_owned();
    assert_eq!(json["nts"]["tls_group"], HYBRID_GROUP, "{json}");
    let cookies = json["nts"]["cookies_left"].as_u64().expect("cookies_left");
    assert!(cookies >= 1, "{json}");
    let nts_accepted = ntpd_rs.ctl_metric_sum("ntp_server_nts_accepted_packets_total");
    assert!(
        nts_accepted >= 3.0,
        "ntpd-rs accepted {nts_accepted} NTS requests"
    );

    // Plain NTP from the same server.
    let out = authtime(&["query", &format!("127.0.0.1:{ntp_port}"), "--json"]);
    assert!(out.status.success(), "{}", text_of(&out));
    let plain: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(plain["replies"][0]["auth"], "none", "{plain}");
    assert_eq!(plain["replies"][0]["stratum"], 1, "{plain}");

    // The handshake as authtime's client times it, over fresh sessions.
    let times: Vec<f64> = (0..5)
        .map(|_| {
            let json = query_nts(&dir, ke_port, &[]);
            json["nts"]["ke_ms"].as_f64().expect("ke_ms")
        })
        .collect();
    assert!(ntpd_rs.is_running(), "{}", ntpd_rs.log_text());
    // A server without sources never asks to change the clock.
    assert_eq!(ntpd_rs.absorbed_text(), "");

    let peer = install().peer();
    let test = "nts_ntpd_rs::authtime_query_gets_nts_and_plain_samples_from_ntpd_rs";
    let aead = aead_with_id(&aead);
    let handshake = format!(
        "{:.1} ms median of {} (authtime query's ke_ms)",
        median(&times),
        times.len()
    );
    let rows = [
        ("NTS-KE", "authenticated samples, stratum 1".to_owned()),
        ("AEAD", aead),
        (
            "cookies",
            "one used per request, fresh ones kept".to_owned(),
        ),
        ("plain NTP", "stratum 1 replies".to_owned()),
        ("handshake", handshake),
        ("key group", HYBRID_GROUP.to_owned()),
    ];
    for (feature, result) in &rows {
        proven(Row {
            peer: &peer,
            direction: Direction::AuthtimeToPeer,
            feature,
            result,
            test,
        });
    }
}

#[test]
fn ntpd_rs_without_the_shim_cannot_change_the_clock_and_exits() {
    // The user namespace alone: ntp-daemon with a source tries to take
    // control of the clock, the kernel refuses (no CAP_SYS_TIME over the
    // host's clocks), and it exits 70. This is the safety net under the shim.
    let dir = TempDir::new("ntpd-rs-no-shim");
    let install = install();
    let config = dir.path("ntpd-rs.toml");
    std::fs::write(
        &config,
        format!("[[source]]\nmode = \"server\"\naddress = \"{AUTHTIME_IP}:9\"\n"),
    )
    .expect("config");
    let out = std::process::Command::new("unshare")
        .args(["--user", "--map-root-user"])
        .arg(install.bin.join("ntp-daemon"))
        .arg("-c")
        .arg(&config)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("unshare ntp-daemon");
    let mut guard = ntp_support::ChildGuard {
        child: out,
        name: "ntp-daemon without shim".into(),
    };
    let status = guard
        .wait_for_exit(Duration::from_secs(10))
        .expect("ntp-daemon exits at once");
    assert_eq!(status.code(), Some(70), "{status}");
}

#[test]
fn parses_ntp_ctl_prometheus_sources() {
    let text = "ntp_source_poll_interval_seconds{name=\"127.0.0.2:24460\",address=\"127.0.0.2:23123\",id=\"1\"} 1.0000000002328306\n\
                ntp_source_unanswered_polls{name=\"127.0.0.2:24460\",address=\"127.0.0.2:23123\",id=\"1\"} 0\n\
                ntp_source_nts_cookies_available{name=\"127.0.0.2:24460\",address=\"127.0.0.2:23123\",id=\"1\"} 8\n\
                ntp_source_offset_seconds{name=\"127.0.0.2:24460\",address=\"127.0.0.2:23123\",id=\"1\"} -0.00009\n";
    let sources = ntp_support::ntpd_rs::parse_sources(text);
    assert_eq!(sources.len(), 1);
    let s = &sources[0];
    assert_eq!(
        (s.name.as_str(), s.address.as_str(), s.id.as_str()),
        ("127.0.0.2:24460", "127.0.0.2:23123", "1")
    );
    assert_eq!((s.unanswered_polls, s.nts_cookies), (0, Some(8)));
    assert!(usable(s, true));
}

#[test]
fn reads_nts_ke_times_from_the_ntpd_rs_log() {
    let log = "2026-11-25T19:59:01.067135Z DEBUG ntpd::daemon::system: Running spawner id=SpawnerId(1) ty=\"nts\" addr=\"127.0.0.2:24460\"\n\
               2026-11-25T19:59:01.174108Z  INFO ntpd::daemon::system: new source source_id=SourceId(1) addr=\"127.0.0.2:23123\" spawner=SpawnerId(1)\n";
    let t = ntp_support::ntpd_rs::ke_times_ms_in(log);
    assert_eq!(t.len(), 1);
    assert!((t[0] - 106.973).abs() < 0.01, "{t:?}");
}
