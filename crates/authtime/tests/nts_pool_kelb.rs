//! `authtime serve` as the NTS-KE load balancer (KELB) of an NTS pool
//! (draft-ietf-ntp-nts-keyexchange-pool-00, `[nts-ke-balancer]`), with the
//! real ntpd-rs 1.9 as pool member behind it, on loopback (127.0.0.1 only)
//! and ports the tests pick:
//!
//! - ntp-daemon runs as a member: a stratum-1 NTP server and an NTS-KE
//!   server with its own certificate from a test CA and
//!   `accepted-pool-authentication-tokens`; the KELB holds the token in a
//!   0600 file and checks the member with Support queries;
//! - chronyd and ntp-daemon, as NTS clients, do NTS-KE at the KELB only
//!   (trusting the KELB's CA), then get NTS-protected time from the
//!   member's NTP server, which counts the NTS requests it accepted;
//! - with two members, one stopped mid-test: new sessions keep succeeding
//!   through the other, and the metrics show the stopped one down; the same
//!   with a mixed set (ntpd-rs and `authtime serve` as members), the authtime
//!   member stopped;
//! - with a token the member does not accept: the client gets an Error
//!   record at once, not a hang;
//! - `authtime serve` as the member (`[nts-ke] pool-token-files`) behind the
//!   same KELB: `authtime query --nts` and chronyd get NTS time from it;
//! - the KELB's token file rewritten with the right token and SIGHUP: the
//!   backend comes up and clients get NTS time; rewritten readable by others
//!   and SIGHUP: refused, counted, the token in force stays.
//!
//! ntp-daemon runs in a user namespace under the readonly-clock shim, so it
//! never changes the host clock (docs/interop.md, "ntpd-rs 1.9").

mod ntp_support;

use std::os::unix::fs::PermissionsExt as _;
use std::time::{Duration, Instant};

use ntp_support::interop::{Direction, Row, proven};
use ntp_support::ntpd_rs::{NtpdRs, free_port_on, install};
use ntp_support::{
    Serve, TempDir, authtime, chronyd_private_lines, chronyd_version, metric, nts_cert,
    run_chronyd_client, text_of, write_private,
};

const TOKEN: &str = "pool-token-for-tests-7f3a";
const IP: &str = "127.0.0.1";

/// A running member: the daemon and its ports.
struct Member {
    daemon: NtpdRs,
    ntp_port: u16,
    ke_port: u16,
}

/// ntp-daemon `name` as a pool member accepting `TOKEN`, certificate
/// `<name>-*` from a CA of its own naming 127.0.0.1. `announce`: the member
/// sends its own Server and Port records (ntp-server, ntp-port); else it
/// sends neither and the KELB names it.
fn member(dir: &TempDir, name: &str, announce: bool) -> Member {
    nts_cert(dir, name, &["--ip", IP]);
    let ntp_port = free_port_on(IP);
    let ke_port = free_port_on(IP);
    let announced = if announce {
        format!("ntp-server = \"{IP}\"\nntp-port = {ntp_port}\n")
    } else {
        String::new()
    };
    let daemon = NtpdRs::start(
        dir,
        name,
        &format!(
            "[synchronization]\nlocal-stratum = 1\n\
             [[server]]\nlisten = \"{IP}:{ntp_port}\"\n\
             [[nts-ke-server]]\nlisten = \"{IP}:{ke_port}\"\n\
             certificate-chain-path = \"{}\"\nprivate-key-path = \"{}\"\n\
             accepted-pool-authentication-tokens = [\"{TOKEN}\"]\n{announced}",
            dir.path(&format!("{name}-chain.pem")).display(),
            dir.path(&format!("{name}-key.pem")).display(),
        ),
    );
    let deadline = Instant::now() + Duration::from_secs(10);
    while std::net::TcpStream::connect((IP, ke_port)).is_err() {
        assert!(
            Instant::now() < deadline,
            "ntpd-rs's NTS-KE does not listen:\n{}",
            daemon.log_text()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    Member {
        daemon,
        ntp_port,
        ke_port,
    }
}

/// One `[[nts-ke-balancer.backend]]`: the member `prefix` under `name`,
/// its token file holding `token` (mode 0600), `ntp-port` given when the
/// member announces none.
fn backend(
    dir: &TempDir,
    prefix: &str,
    name: &str,
    m: &Member,
    token: &str,
    announce: bool,
) -> String {
    let token_file = dir.path(&format!("{prefix}.token"));
    write_private(&token_file, &format!("{token}\n"));
    let ntp_port = if announce {
        String::new()
    } else {
        format!("ntp-port = {}\n", m.ntp_port)
    };
    format!(
        "[[nts-ke-balancer.backend]]\nname = \"{name}\"\naddress = \"{IP}:{}\"\n\
         ca-file = \"{prefix}-ca.pem\"\ntoken-file = \"{}\"\n{ntp_port}",
        m.ke_port,
        token_file.display()
    )
}

/// `authtime serve` as KELB with NTS-KE on 127.0.0.1 (certificate `kelb-*`
/// from its own test CA) and the backends `backends`.
fn kelb(dir: &TempDir, backends: &str) -> Serve {
    kelb_with(dir, "", backends)
}

/// [`kelb`] with `nts_ke` added to its `[nts-ke]` section.
fn kelb_with(dir: &TempDir, nts_ke: &str, backends: &str) -> Serve {
    nts_cert(dir, "kelb", &["--ip", IP]);
    let body = format!(
        "[ntp]\nlisten = [\"{IP}:0\"]\nworkers = 1\n\
         [nts-ke]\nlisten = [\"{IP}:0\"]\ncertificate-chain = \"kelb-chain.pem\"\n\
         private-key = \"kelb-key.pem\"\nworkers = 1\nclient-limit = false\n{nts_ke}\
         [keystore]\npath = \"kelb-master-keys\"\n\
         [nts-ke-balancer]\ncheck-interval = 0.5\n{backends}"
    );
    let serve = Serve::start_named(dir, "kelb", &body);
    assert!(serve.nts_ke.is_some(), "no NTS-KE: {}", serve.log_text());
    serve
}

/// Waits (bounded) until `sample` in the KELB's metrics equals `value`.
fn wait_metric_eq(serve: &Serve, sample: &str, value: u64, limit: Duration) -> u64 {
    let deadline = Instant::now() + limit;
    loop {
        let now = serve.metric(sample);
        if now == value || Instant::now() >= deadline {
            return now;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// `authtime query --nts localhost:KELB --ca kelb-ca.pem --json EXTRA...`.
fn query_nts(dir: &TempDir, serve: &Serve, extra: &[&str]) -> std::process::Output {
    let ke = format!("localhost:{}", serve.nts_ke.expect("NTS-KE").port());
    let ca = dir.path("kelb-ca.pem").display().to_string();
    let mut args = vec!["query", "--nts", &ke, "--ca", &ca, "--json"];
    args.extend_from_slice(extra);
    authtime(&args)
}

/// `n` sessions through the KELB, each a new NTS-KE (`authtime query --nts`)
/// and one NTS exchange that must succeed; the NTP servers they went to.
fn sessions(dir: &TempDir, serve: &Serve, n: usize, when: &str) -> Vec<String> {
    (0..n)
        .map(|_| {
            let out = query_nts(dir, serve, &[]);
            assert!(
                out.status.success(),
                "a session failed {when}: {}\n{}",
                text_of(&out),
                serve.log_text()
            );
            let json: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
            assert_eq!(json["replies"][0]["auth"], "nts", "{json}");
            json["address"].as_str().expect("address").to_owned()
        })
        .collect()
}

fn nts_accepted(m: &Member) -> f64 {
    m.daemon
        .ctl_metric_sum("ntp_server_nts_accepted_packets_total")
}

#[test]
fn chronyd_gets_nts_time_from_an_ntpd_rs_member_through_the_kelb() {
    let dir = TempDir::new("kelb-chronyd");
    let m = member(&dir, "member", false);
    let serve = kelb(&dir, &backend(&dir, "member", IP, &m, TOKEN, false));
    let up = "authtime_kelb_backend_up{backend=\"127.0.0.1\"}";
    assert_eq!(
        wait_metric_eq(&serve, up, 1, Duration::from_secs(5)),
        1,
        "member not up:\n{}\n{}",
        serve.scrape(),
        serve.log_text()
    );
    let ke = serve.nts_ke.expect("NTS-KE");
    let conf = dir.path("chronyd.conf");
    let dump = dir.path("chronyd-dump");
    std::fs::create_dir_all(&dump).expect("dump dir");
    // chronyd is told only the KELB; the port given here is a dead one: the
    // NTP server and port come from the KELB's answer.
    std::fs::write(
        &conf,
        format!(
            "server localhost port 9 nts ntsport {} iburst minpoll -4 maxpoll -4\n\
             ntstrustedcerts {}\nntsdumpdir {}\n{}",
            ke.port(),
            dir.path("kelb-ca.pem").display(),
            dump.display(),
            chronyd_private_lines(&dir)
        ),
    )
    .expect("conf");
    let (success, log) = run_chronyd_client(&conf, &["-4"], &dir.path("chronyd.log"), 8);
    assert!(
        success && log.contains("System clock wrong by"),
        "chronyd got no NTS sample through the KELB:\n{log}\nkelb:\n{}\nmember:\n{}",
        serve.log_text(),
        m.daemon.log_text()
    );
    let accepted = nts_accepted(&m);
    assert!(
        accepted >= 1.0,
        "the member accepted {accepted} NTS requests"
    );
    let metrics = serve.scrape();
    assert!(
        metric(
            &metrics,
            "authtime_kelb_requests_total{backend=\"127.0.0.1\",outcome=\"ok\"}"
        ) >= 1,
        "{metrics}"
    );
    assert!(
        metric(&metrics, "authtime_ntske_cookies_issued_total") >= 1,
        "{metrics}"
    );
    // The KELB made no NTS cookies of its own: no NTS request reached it.
    assert_eq!(
        metric(&metrics, "authtime_nts_answered_total"),
        0,
        "{metrics}"
    );

    let test = "nts_pool_kelb::chronyd_gets_nts_time_from_an_ntpd_rs_member_through_the_kelb";
    proven(Row {
        peer: &chronyd_version(),
        direction: Direction::PeerToAuthtime,
        feature: "NTS pool",
        result: "NTS-KE at the authtime KELB, NTS time from an ntpd-rs member",
        test,
    });
    proven(Row {
        peer: &install().peer(),
        direction: Direction::AuthtimeToPeer,
        feature: "NTS pool",
        result: "member: Support query, Fixed Key Request with token, cookies used by chronyd",
        test,
    });
}

#[test]
fn ntpd_rs_gets_nts_time_from_an_ntpd_rs_member_through_the_kelb() {
    let dir = TempDir::new("kelb-ntpd-rs");
    let m = member(&dir, "member", false);
    let serve = kelb(&dir, &backend(&dir, "member", IP, &m, TOKEN, false));
    let up = "authtime_kelb_backend_up{backend=\"127.0.0.1\"}";
    assert_eq!(wait_metric_eq(&serve, up, 1, Duration::from_secs(5)), 1);
    let ke = format!("localhost:{}", serve.nts_ke.expect("NTS-KE").port());
    let mut client = NtpdRs::start(
        &dir,
        "client",
        &format!(
            "[[source]]\nmode = \"nts\"\naddress = \"{ke}\"\ncertificate-authority = \"{}\"\n\
             poll-interval-limits = {{ min = 0, max = 0 }}\ninitial-poll-interval = 0\n",
            dir.path("kelb-ca.pem").display()
        ),
    );
    let want = format!("{IP}:{}", m.ntp_port);
    let source = client
        .wait_for_source(Duration::from_secs(20), |s| {
            s.address == want && s.nts_cookies.is_some_and(|n| n > 0) && s.unanswered_polls == 0
        })
        .unwrap_or_else(|| {
            panic!(
                "ntpd-rs has no answering NTS source at {want}:\n{}\n{}\nkelb:\n{}",
                client.ctl_status("plain"),
                client.log_text(),
                serve.log_text()
            )
        });
    // Polls answered by the member, NTS-protected.
    let deadline = Instant::now() + Duration::from_secs(10);
    while nts_accepted(&m) < 2.0 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(200));
    }
    let accepted = nts_accepted(&m);
    assert!(
        accepted >= 2.0,
        "the member accepted {accepted} NTS requests"
    );
    let plain = client.ctl_status("plain");
    assert!(plain.contains("[NTS]"), "{plain}");
    assert_eq!(source.name, ke, "{source:?}");
    assert!(
        serve.metric("authtime_kelb_requests_total{backend=\"127.0.0.1\",outcome=\"ok\"}") >= 1
    );

    let test = "nts_pool_kelb::ntpd_rs_gets_nts_time_from_an_ntpd_rs_member_through_the_kelb";
    let peer = install().peer();
    proven(Row {
        peer: &peer,
        direction: Direction::PeerToAuthtime,
        feature: "NTS pool",
        result: "NTS-KE at the authtime KELB, NTS time from an ntpd-rs member",
        test,
    });
    proven(Row {
        peer: &peer,
        direction: Direction::AuthtimeToPeer,
        feature: "NTS pool",
        result: "member: Support query, Fixed Key Request with token, cookies used by ntpd-rs",
        test,
    });
}

#[test]
fn sessions_go_to_the_remaining_member_when_one_stops() {
    let dir = TempDir::new("kelb-failover");
    let a = member(&dir, "member-a", false);
    let b = member(&dir, "member-b", true);
    let backends = format!(
        "{}{}",
        backend(&dir, "member-a", IP, &a, TOKEN, false),
        backend(&dir, "member-b", "member-b.test", &b, TOKEN, true)
    );
    let serve = kelb(&dir, &backends);
    let up_a = "authtime_kelb_backend_up{backend=\"127.0.0.1\"}";
    let up_b = "authtime_kelb_backend_up{backend=\"member-b.test\"}";
    assert_eq!(wait_metric_eq(&serve, up_a, 1, Duration::from_secs(5)), 1);
    assert_eq!(wait_metric_eq(&serve, up_b, 1, Duration::from_secs(5)), 1);

    // Both members serve: the round-robin alternates (weights 1 and 1).
    let seen: std::collections::BTreeSet<String> =
        sessions(&dir, &serve, 4, "with both members up")
            .into_iter()
            .collect();
    let both: std::collections::BTreeSet<String> = [
        format!("{IP}:{}", a.ntp_port),
        format!("{IP}:{}", b.ntp_port),
    ]
    .into();
    assert_eq!(seen, both, "the KELB did not use both members");

    // Member B stops; every new session still succeeds, through A.
    let Member { daemon, .. } = b;
    drop(daemon);
    let started = Instant::now();
    for address in sessions(&dir, &serve, 4, "after member B stopped") {
        assert_eq!(address, format!("{IP}:{}", a.ntp_port));
    }
    assert!(started.elapsed() < Duration::from_secs(15));
    assert_eq!(
        wait_metric_eq(&serve, up_b, 0, Duration::from_secs(5)),
        0,
        "{}",
        serve.scrape()
    );
    // Its health checks fail from now on.
    let failures = "authtime_kelb_backend_check_failures_total{backend=\"member-b.test\"}";
    assert!(serve.wait_metric(failures, 1) >= 1, "{}", serve.scrape());
    let metrics = serve.scrape();
    assert_eq!(metric(&metrics, up_a), 1, "{metrics}");
    assert!(
        metric(
            &metrics,
            "authtime_kelb_requests_total{backend=\"127.0.0.1\",outcome=\"ok\"}"
        ) >= 6,
        "{metrics}"
    );
    assert_eq!(
        metric(
            &metrics,
            "authtime_kelb_requests_total{backend=\"\",outcome=\"no_backend\"}"
        ),
        0,
        "{metrics}"
    );
    assert!(nts_accepted(&a) >= 1.0);

    proven(Row {
        peer: &install().peer(),
        direction: Direction::AuthtimeToPeer,
        feature: "NTS pool",
        result: "two members, one stopped: sessions continue through the other",
        test: "nts_pool_kelb::sessions_go_to_the_remaining_member_when_one_stops",
    });
}

#[test]
fn a_token_the_member_refuses_gives_the_client_an_error_not_a_hang() {
    let dir = TempDir::new("kelb-wrong-token");
    let m = member(&dir, "member", false);
    let serve = kelb(
        &dir,
        &backend(&dir, "member", IP, &m, "not-the-token", false),
    );
    let failures = "authtime_kelb_backend_check_failures_total{backend=\"127.0.0.1\"}";
    assert!(serve.wait_metric(failures, 1) >= 1, "{}", serve.scrape());
    assert_eq!(
        serve.metric("authtime_kelb_backend_up{backend=\"127.0.0.1\"}"),
        0
    );
    let started = Instant::now();
    let out = query_nts(&dir, &serve, &[]);
    let took = started.elapsed();
    assert!(!out.status.success(), "{}", text_of(&out));
    let all = text_of(&out);
    assert!(
        all.contains("Error record, code 2"),
        "no Internal Server Error: {all}"
    );
    assert!(took < Duration::from_secs(5), "took {took:?}");
    assert_eq!(
        serve.metric("authtime_kelb_requests_total{backend=\"\",outcome=\"no_backend\"}"),
        1
    );
    // ntpd-rs answered the Support queries with Bad Request and logged them.
    assert!(m.daemon.log_text().contains("not permitted") || nts_accepted(&m) == 0.0);
    proven(Row {
        peer: &install().peer(),
        direction: Direction::AuthtimeToPeer,
        feature: "NTS pool",
        result: "wrong token: member refuses, client gets Internal Server Error at once",
        test: "nts_pool_kelb::a_token_the_member_refuses_gives_the_client_an_error_not_a_hang",
    });
}

#[test]
fn an_authtime_member_behind_the_kelb_serves_nts_time() {
    let dir = TempDir::new("kelb-authtime-member");
    // authtime serve as pool member (`[nts-ke] pool-token-files`), its own CA.
    nts_cert(&dir, "member", &["--ip", IP]);
    write_private(&dir.path("member.token"), &format!("{TOKEN}\n"));
    let member = Serve::start_named(
        &dir,
        "member",
        &format!(
            "[ntp]\nlisten = [\"{IP}:0\"]\nworkers = 1\n\
             [nts-ke]\nlisten = [\"{IP}:0\"]\ncertificate-chain = \"member-chain.pem\"\n\
             private-key = \"member-key.pem\"\nworkers = 1\nclient-limit = false\n\
             pool-token-files = [\"member.token\"]\n\
             [keystore]\npath = \"member-master-keys\"\n"
        ),
    );
    let member_ke = member.nts_ke.expect("member NTS-KE");
    let token_file = dir.path("kelb-member.token");
    write_private(&token_file, &format!("{TOKEN}\n"));
    let serve = kelb(
        &dir,
        &format!(
            "[[nts-ke-balancer.backend]]\nname = \"{IP}\"\naddress = \"{member_ke}\"\n\
             ca-file = \"member-ca.pem\"\ntoken-file = \"{}\"\n",
            token_file.display()
        ),
    );
    let up = "authtime_kelb_backend_up{backend=\"127.0.0.1\"}";
    assert_eq!(
        wait_metric_eq(&serve, up, 1, Duration::from_secs(5)),
        1,
        "{}\n{}",
        serve.scrape(),
        serve.log_text()
    );
    // authtime's client, through the KELB, to the member's NTP server (its
    // Port record, the KELB's Server record naming the backend).
    let out = query_nts(&dir, &serve, &["--count", "3", "--interval", "0.2"]);
    assert!(
        out.status.success(),
        "{}\n{}",
        text_of(&out),
        serve.log_text()
    );
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(json["address"], member.addr.to_string(), "{json}");
    for reply in json["replies"].as_array().expect("replies") {
        assert_eq!(reply["auth"], "nts", "{reply}");
        assert_eq!(reply["ok"], true, "{reply}");
    }
    // chronyd through the same KELB.
    let conf = dir.path("chronyd.conf");
    let dump = dir.path("chronyd-dump");
    std::fs::create_dir_all(&dump).expect("dump dir");
    std::fs::write(
        &conf,
        format!(
            "server localhost port 9 nts ntsport {} iburst minpoll -4 maxpoll -4\n\
             ntstrustedcerts {}\nntsdumpdir {}\n{}",
            serve.nts_ke.expect("NTS-KE").port(),
            dir.path("kelb-ca.pem").display(),
            dump.display(),
            chronyd_private_lines(&dir)
        ),
    )
    .expect("conf");
    let (success, log) = run_chronyd_client(&conf, &["-4"], &dir.path("chronyd.log"), 8);
    assert!(
        success && log.contains("System clock wrong by"),
        "chronyd got no NTS sample through the KELB from the authtime member:\n{log}"
    );
    // The member made the cookies and answered NTS; the KELB made none.
    let member_metrics = member.scrape();
    assert!(
        metric(
            &member_metrics,
            "authtime_ntske_pool_requests_total{kind=\"fixed_key\",outcome=\"ok\"}"
        ) >= 2,
        "{member_metrics}"
    );
    assert!(
        metric(&member_metrics, "authtime_nts_answered_total") >= 4,
        "{member_metrics}"
    );
    assert_eq!(serve.metric("authtime_nts_answered_total"), 0);
    assert!(
        serve.metric("authtime_kelb_requests_total{backend=\"127.0.0.1\",outcome=\"ok\"}") >= 2
    );
}

#[test]
fn a_rewritten_token_file_takes_effect_on_sighup_and_an_open_one_is_refused() {
    let dir = TempDir::new("kelb-token-reload");
    let member = authtime_member(&dir, "member");
    let member_ke = member.nts_ke.expect("member NTS-KE");
    let token_file = dir.path("kelb-member.token");
    let wrong = "not-what-the-member-accepts-91c2";
    write_private(&token_file, &format!("{wrong}\n"));
    // No polling of the files (certificate-check-interval = 0): only SIGHUP reloads.
    let serve = kelb_with(
        &dir,
        "certificate-check-interval = 0\n",
        &format!(
            "[[nts-ke-balancer.backend]]\nname = \"{IP}\"\naddress = \"{member_ke}\"\n\
             ca-file = \"member-ca.pem\"\ntoken-file = \"{}\"\n",
            token_file.display()
        ),
    );
    let up = "authtime_kelb_backend_up{backend=\"127.0.0.1\"}";
    let failures = "authtime_kelb_backend_check_failures_total{backend=\"127.0.0.1\"}";
    let reload_failures = "authtime_kelb_reload_failures_total";
    // The wrong token: the member refuses the checks, clients get Error 2.
    assert!(serve.wait_metric(failures, 1) >= 1, "{}", serve.scrape());
    assert_eq!(serve.metric(up), 0, "{}", serve.scrape());
    let out = query_nts(&dir, &serve, &[]);
    assert!(!out.status.success(), "{}", text_of(&out));
    assert!(
        text_of(&out).contains("Error record, code 2"),
        "{}",
        text_of(&out)
    );
    // The right token and SIGHUP: the backend comes up, clients get NTS time.
    write_private(&token_file, &format!("{TOKEN}\n"));
    serve.process.signal("HUP");
    assert_eq!(
        wait_metric_eq(&serve, up, 1, Duration::from_secs(10)),
        1,
        "{}\n{}",
        serve.scrape(),
        serve.log_text()
    );
    let nts_time = |serve: &Serve| {
        let out = query_nts(&dir, serve, &["--count", "2", "--interval", "0.2"]);
        assert!(
            out.status.success(),
            "{}\n{}",
            text_of(&out),
            serve.log_text()
        );
        let json: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
        assert_eq!(json["address"], member.addr.to_string(), "{json}");
        for reply in json["replies"].as_array().expect("replies") {
            assert_eq!(reply["auth"], "nts", "{reply}");
            assert_eq!(reply["ok"], true, "{reply}");
        }
    };
    nts_time(&serve);
    assert_eq!(serve.metric(reload_failures), 0, "{}", serve.scrape());
    // A wrong token in a file others can read, and SIGHUP: refused, counted;
    // the right token stays in force through further health checks.
    std::fs::write(&token_file, format!("{wrong}\n")).expect("write");
    std::fs::set_permissions(&token_file, std::fs::Permissions::from_mode(0o644)).expect("chmod");
    serve.process.signal("HUP");
    assert!(
        serve.wait_metric(reload_failures, 1) >= 1,
        "{}\n{}",
        serve.scrape(),
        serve.log_text()
    );
    let checks = serve.metric(failures);
    std::thread::sleep(Duration::from_millis(1500));
    assert_eq!(serve.metric(up), 1, "{}", serve.scrape());
    assert_eq!(serve.metric(failures), checks, "{}", serve.scrape());
    nts_time(&serve);
    let log = serve.log_text();
    assert!(
        log.contains("kelb-member.token") && log.contains("chmod 600"),
        "{log}"
    );
    assert!(!log.contains(TOKEN) && !log.contains(wrong), "{log}");
    assert!(!serve.scrape().contains(TOKEN));
}

/// `authtime serve` as pool member `name` (`[nts-ke] pool-token-files`),
/// certificate `<name>-*` from a CA of its own naming 127.0.0.1, announcing
/// 127.0.0.1 in its Server record.
fn authtime_member(dir: &TempDir, name: &str) -> Serve {
    authtime_member_with(dir, name, "client-limit = false\n")
}

/// [`authtime_member`] with `limits` (the `client-*` keys) in its `[nts-ke]`.
fn authtime_member_with(dir: &TempDir, name: &str, limits: &str) -> Serve {
    nts_cert(dir, name, &["--ip", IP]);
    write_private(
        &dir.path(&format!("{name}-member.token")),
        &format!("{TOKEN}\n"),
    );
    Serve::start_named(
        dir,
        name,
        &format!(
            "[ntp]\nlisten = [\"{IP}:0\"]\nworkers = 1\n\
             [nts-ke]\nlisten = [\"{IP}:0\"]\ncertificate-chain = \"{name}-chain.pem\"\n\
             private-key = \"{name}-key.pem\"\nworkers = 1\n{limits}\
             ntp-server = \"{IP}\"\npool-token-files = [\"{name}-member.token\"]\n\
             [keystore]\npath = \"{name}-master-keys\"\n"
        ),
    )
}

#[test]
fn a_mixed_set_keeps_serving_when_its_authtime_member_stops() {
    let dir = TempDir::new("kelb-mixed");
    let a = member(&dir, "member-a", false);
    let b = authtime_member(&dir, "member-b");
    let b_ke = b.nts_ke.expect("member NTS-KE");
    let b_token = dir.path("member-b.token");
    write_private(&b_token, &format!("{TOKEN}\n"));
    let backends = format!(
        "{}[[nts-ke-balancer.backend]]\nname = \"member-b.test\"\naddress = \"{b_ke}\"\n\
         ca-file = \"member-b-ca.pem\"\ntoken-file = \"{}\"\n",
        backend(&dir, "member-a", IP, &a, TOKEN, false),
        b_token.display()
    );
    let serve = kelb(&dir, &backends);
    let up_a = "authtime_kelb_backend_up{backend=\"127.0.0.1\"}";
    let up_b = "authtime_kelb_backend_up{backend=\"member-b.test\"}";
    assert_eq!(wait_metric_eq(&serve, up_a, 1, Duration::from_secs(5)), 1);
    assert_eq!(
        wait_metric_eq(&serve, up_b, 1, Duration::from_secs(5)),
        1,
        "{}\n{}",
        serve.scrape(),
        serve.log_text()
    );

    // Both members serve NTS time through the KELB: ntpd-rs and authtime.
    let a_addr = format!("{IP}:{}", a.ntp_port);
    let b_addr = b.addr.to_string();
    let seen: std::collections::BTreeSet<String> =
        sessions(&dir, &serve, 4, "with both members up")
            .into_iter()
            .collect();
    let both: std::collections::BTreeSet<String> = [a_addr.clone(), b_addr].into();
    assert_eq!(seen, both, "the KELB did not use both members");
    assert!(b.metric("authtime_ntske_pool_requests_total{kind=\"fixed_key\",outcome=\"ok\"}") >= 1);

    // The authtime member stops; every new session goes to ntpd-rs.
    drop(b);
    let started = Instant::now();
    for address in sessions(&dir, &serve, 4, "after the authtime member stopped") {
        assert_eq!(address, a_addr);
    }
    assert!(started.elapsed() < Duration::from_secs(15));
    assert_eq!(
        wait_metric_eq(&serve, up_b, 0, Duration::from_secs(5)),
        0,
        "{}",
        serve.scrape()
    );
    assert_eq!(serve.metric(up_a), 1);
    assert_eq!(
        serve.metric("authtime_kelb_requests_total{backend=\"\",outcome=\"no_backend\"}"),
        0
    );
    assert!(nts_accepted(&a) >= 1.0);
    proven(Row {
        peer: &install().peer(),
        direction: Direction::AuthtimeToPeer,
        feature: "NTS pool",
        result: "mixed set (ntpd-rs and authtime members), authtime stopped: sessions continue through ntpd-rs",
        test: "nts_pool_kelb::a_mixed_set_keeps_serving_when_its_authtime_member_stops",
    });
}

#[test]
fn a_member_with_client_limits_serves_its_load_balancer_past_them() {
    let dir = TempDir::new("kelb-member-limits");
    // Tight per-client limits: 4 handshakes at once, then one per 5 s, and 2
    // connections open. Every session through the KELB reaches the member from
    // the KELB's one address; once the KELB authenticated (its first health
    // check), the member stops counting it as a client.
    let member = authtime_member_with(
        &dir,
        "member",
        "client-limit = true\nclient-rate = 0.2\nclient-burst = 4.0\nclient-max-connections = 2\n",
    );
    let member_ke = member.nts_ke.expect("member NTS-KE");
    let token_file = dir.path("kelb-member.token");
    write_private(&token_file, &format!("{TOKEN}\n"));
    let serve = kelb(
        &dir,
        &format!(
            "[[nts-ke-balancer.backend]]\nname = \"{IP}\"\naddress = \"{member_ke}\"\n\
             ca-file = \"member-ca.pem\"\ntoken-file = \"{}\"\n",
            token_file.display()
        ),
    );
    let up = "authtime_kelb_backend_up{backend=\"127.0.0.1\"}";
    assert_eq!(wait_metric_eq(&serve, up, 1, Duration::from_secs(5)), 1);
    for address in sessions(&dir, &serve, 12, "past the member's client limits") {
        assert_eq!(address, member.addr.to_string());
    }
    let metrics = member.scrape();
    for refused in ["rate_limited", "too_many_from_source"] {
        assert_eq!(
            metric(
                &metrics,
                &format!("authtime_ntske_sessions_total{{outcome=\"{refused}\"}}")
            ),
            0,
            "{metrics}"
        );
    }
    assert!(
        metric(
            &metrics,
            "authtime_ntske_pool_requests_total{kind=\"fixed_key\",outcome=\"ok\"}"
        ) >= 12,
        "{metrics}"
    );
}
