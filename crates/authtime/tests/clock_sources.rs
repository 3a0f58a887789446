//! The server tells the truth about its clock, against real chronyd peers
//! started here on loopback (never touching the host clock: `-x`):
//!
//! - `[clock] source = "chrony"` follows a chronyd through its command socket:
//!   a chronyd with no source makes authtime answer unsynchronized, with the
//!   header fields chronyd itself sends (compared byte for byte), and a real
//!   `chronyd -Q` client refuses it; a chronyd with `local stratum 5` makes
//!   authtime announce stratum 5 with chronyd's reference id and a recent
//!   reference time, and `chronyd -Q` accepts it.
//! - `source = "ntp"` follows the same chronyd over NTP.
//! - A source that stops answering turns into "unsynchronized" after
//!   `max-unreadable`, with a log line and metrics; `unsynchronized = "drop"`
//!   drops requests and counts them.

mod ntp_support;

use std::net::SocketAddr;
use std::os::unix::fs::PermissionsExt as _;
use std::time::{Duration, Instant};

use ntp_support::{
    ChildGuard, Serve, TempDir, authtime, chronyd_with_socket, free_udp_port, nts_cert,
    plain_reply_header, run_chronyd_client, text, text_of,
};

/// A chronyd serving NTP on loopback with its command socket in `dir`.
struct Chronyd {
    _process: ChildGuard,
    port: u16,
    socket: std::path::PathBuf,
}

fn start_chronyd(dir: &TempDir, name: &str, local_stratum: Option<u8>) -> Chronyd {
    // chronyd refuses a command socket in a directory others can write to.
    let home = dir.path(name);
    std::fs::create_dir_all(&home).expect("dir");
    std::fs::set_permissions(&home, std::fs::Permissions::from_mode(0o700)).expect("chmod");
    let port = free_udp_port();
    let socket = home.join("chronyd.sock");
    let conf = home.join("chronyd.conf");
    std::fs::write(
        &conf,
        format!(
            "port {port}\nbindaddress 127.0.0.1\nallow 127.0.0.1\ncmdport 0\nbindcmdaddress {}\n\
             pidfile {}\n{}",
            socket.display(),
            home.join("chronyd.pid").display(),
            local_stratum.map_or_else(String::new, |s| format!("local stratum {s}\n")),
        ),
    )
    .expect("conf");
    let process = chronyd_with_socket(&conf, &home.join("chronyd.log"), &socket, name);
    Chronyd {
        _process: process,
        port,
        socket,
    }
}

fn chrony_clock(chronyd: &Chronyd, extra: &str) -> String {
    format!(
        "[ntp]\nlisten = [\"127.0.0.1:0\"]\n[clock]\nsource = \"chrony\"\nchrony-socket = \"{}\"\n{extra}",
        chronyd.socket.display()
    )
}

/// `authtime status` for the configuration of `serve` (written by
/// `Serve::start` as `serve.toml`), asking the running server too.
fn status(dir: &TempDir, serve: &Serve, extra: &[&str]) -> std::process::Output {
    let config = dir.path("serve.toml").display().to_string();
    let addr = serve.addr.to_string();
    let mut args = vec!["status", "--config", &config, "--server", &addr];
    args.extend_from_slice(extra);
    authtime(&args)
}

/// Runs a `chronyd -Q` client against `port` for at most `limit_s` seconds:
/// whether it accepted the server.
fn chronyd_client_accepts(dir: &TempDir, name: &str, port: u16, limit_s: u32) -> (bool, String) {
    let conf = dir.path(&format!("{name}-client.conf"));
    std::fs::write(
        &conf,
        format!(
            "server 127.0.0.1 port {port} iburst minpoll -4 maxpoll -4\npidfile {}\ncmdport 0\n\
             bindcmdaddress /\n",
            dir.path(&format!("{name}-client.pid")).display()
        ),
    )
    .expect("conf");
    let log_path = dir.path(&format!("{name}-client.log"));
    let (success, log) = run_chronyd_client(&conf, &[], &log_path, limit_s);
    (success && log.contains("System clock wrong by"), log)
}

#[test]
fn an_unsynchronized_chronyd_makes_authtime_answer_as_chronyd_does() {
    let dir = TempDir::new("clock-chrony-unsync");
    let chronyd = start_chronyd(&dir, "unsync", None);
    let serve = Serve::start(&dir, &chrony_clock(&chronyd, ""));

    // The header fields chronyd and authtime send for an unsynchronized
    // clock: leap 3 (version 4, mode 4), stratum 0, then poll and precision
    // (not compared: poll echoes the request, precision is each host's),
    // root delay, root dispersion, reference id and reference time.
    let ours = plain_reply_header(serve.addr);
    let theirs = plain_reply_header(SocketAddr::from(([127, 0, 0, 1], chronyd.port)));
    assert_eq!(ours[0], 0xe4, "leap 3, version 4, mode 4");
    assert_eq!((ours[0], ours[1]), (theirs[0], theirs[1]));
    assert_eq!(
        ours[4..24],
        theirs[4..24],
        "root delay, dispersion, refid, reftime"
    );
    assert_eq!(
        ours[4..24],
        [0, 1, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0],
        "1 s, 1 s, refid 0, reference time 0"
    );

    // The user's view: answered, unsynchronized, not a Kiss-o'-Death.
    let out = authtime(&["query", &serve.addr.to_string(), "--json"]);
    assert_eq!(out.status.code(), Some(3), "{}", text_of(&out));
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    let reply = &json["replies"][0];
    assert_eq!(reply["error"], "unsynchronized", "{json}");
    assert_eq!(reply["answered"], true, "{json}");
    assert_eq!(reply["stratum"], 0, "{json}");
    assert_eq!(reply["leap"], "unsynchronized", "{json}");
    let out = authtime(&["query", &format!("127.0.0.1:{}", chronyd.port)]);
    assert!(
        text(&out.stdout).contains("server unsynchronized") && !text_of(&out).contains("Kiss"),
        "chronyd's own reply: {}",
        text_of(&out)
    );

    // Operators see it.
    assert_eq!(serve.metric("authtime_clock_synchronized"), 0);
    assert_eq!(serve.metric("authtime_clock_leap_indicator"), 3);
    assert_eq!(
        serve.metric("authtime_clock_source_info{source=\"chrony\"}"),
        1
    );
    assert!(
        serve.log_text().contains("UNSYNCHRONIZED"),
        "{}",
        serve.log_text()
    );

    // `authtime status` says the same, and why, and so does the running server.
    let out = status(&dir, &serve, &["--json"]);
    assert_eq!(out.status.code(), Some(3), "{}", text_of(&out));
    let status: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(status["source"], "chrony", "{status}");
    assert_eq!(status["synchronized"], false, "{status}");
    assert_eq!(status["announced"]["leap"], 3, "{status}");
    assert!(
        status["unsynchronized_because"]
            .as_str()
            .is_some_and(|w| w.contains("not synchronised")),
        "{status}"
    );
    assert_eq!(status["server"]["reply"]["synchronized"], false, "{status}");
    assert_eq!(status["server"]["reply"]["answered"], true, "{status}");

    // A real client refuses it.
    let (accepted, log) = chronyd_client_accepts(&dir, "unsync", serve.addr.port(), 8);
    assert!(
        !accepted,
        "chronyd -Q used an unsynchronized server:\n{log}"
    );
}

#[test]
fn a_synchronized_chronyd_is_announced_with_its_stratum_and_reference() {
    let dir = TempDir::new("clock-chrony-sync");
    let chronyd = start_chronyd(&dir, "local5", Some(5));
    let serve = Serve::start(&dir, &chrony_clock(&chronyd, ""));
    let follower = Serve::start_named(
        &dir,
        "follower",
        &format!(
            "[ntp]\nlisten = [\"127.0.0.1:0\"]\n[clock]\nsource = \"ntp\"\nntp-server = \"127.0.0.1:{}\"\n",
            chronyd.port
        ),
    );
    for (name, server) in [("chrony source", &serve), ("ntp source", &follower)] {
        let out = authtime(&["query", &server.addr.to_string(), "--json"]);
        assert!(out.status.success(), "{name}: {}", text_of(&out));
        let json: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
        let reply = &json["replies"][0];
        assert_eq!(reply["stratum"], 5, "{name}: {json}");
        assert_eq!(reply["reference_id"], "127.127.1.1", "{name}: {json}");
        assert_eq!(reply["leap"], "none", "{name}: {json}");
        let header = plain_reply_header(server.addr);
        let reference_secs = u32::from_be_bytes(header[16..20].try_into().expect("4"));
        let now_ntp = (std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .expect("after 1970")
            .as_secs()
            + 2_208_988_800) as u32;
        assert!(
            reference_secs != 0 && reference_secs <= now_ntp && now_ntp - reference_secs < 3600,
            "{name}: reference time {reference_secs} against now {now_ntp}"
        );
        assert_eq!(server.metric("authtime_clock_synchronized"), 1, "{name}");
        assert_eq!(server.metric("authtime_clock_stratum"), 5, "{name}");
    }
    let out = status(&dir, &serve, &[]);
    assert!(out.status.success(), "{}", text_of(&out));
    let shown = text(&out.stdout);
    assert!(
        shown.contains(
            "announced: synchronized: leap 0 (no warning), stratum 5, reference id 127.127.1.1"
        ) && shown.contains("announces leap 0 (none), stratum 5, reference id 127.127.1.1"),
        "{shown}"
    );
    let (accepted, log) = chronyd_client_accepts(&dir, "sync", serve.addr.port(), 10);
    assert!(accepted, "chronyd -Q refused a stratum-5 server:\n{log}");
}

#[test]
fn a_source_that_disappears_becomes_unsynchronized_and_drop_counts() {
    let dir = TempDir::new("clock-chrony-gone");
    let chronyd = start_chronyd(&dir, "gone", Some(4));
    let serve = Serve::start(
        &dir,
        &chrony_clock(&chronyd, "max-unreadable = 2\nunsynchronized = \"drop\"\n"),
    );
    let target = serve.addr.to_string();
    assert!(authtime(&["query", &target]).status.success());
    drop(chronyd);
    let deadline = Instant::now() + Duration::from_secs(15);
    while serve.metric("authtime_clock_synchronized") != 0 {
        assert!(Instant::now() < deadline, "{}", serve.scrape());
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(serve.metric("authtime_clock_source_errors_total") > 0);
    assert_eq!(serve.metric("authtime_clock_transitions_total"), 1);
    let log = serve.log_text();
    assert!(
        log.contains("UNSYNCHRONIZED") && log.contains("not been readable"),
        "{log}"
    );
    let out = authtime(&["query", &target, "--timeout", "0.5"]);
    assert_eq!(out.status.code(), Some(3), "{}", text_of(&out));
    assert!(text_of(&out).contains("no reply"), "{}", text_of(&out));
    assert!(
        serve.wait_metric("authtime_ntp_dropped_total{reason=\"unsynchronized\"}", 1) >= 1,
        "{}",
        serve.scrape()
    );
}

#[test]
fn an_unsynchronized_nts_server_still_hands_out_cookies() {
    let dir = TempDir::new("clock-nts-unsync");
    nts_cert(&dir, "t", &[]);
    // chronyd's command port on a port where nothing listens: the source
    // cannot be read, so the clock is unsynchronized from the start.
    let nobody = free_udp_port();
    let serve = Serve::start(
        &dir,
        &format!(
            "[ntp]\nlisten = [\"127.0.0.1:0\"]\nworkers = 1\n[nts-ke]\nlisten = [\"127.0.0.1:0\"]\n\
             certificate-chain = \"t-chain.pem\"\nprivate-key = \"t-key.pem\"\nworkers = 1\n\
             [keystore]\npath = \"keys\"\n[clock]\nsource = \"chrony\"\n\
             chrony-address = \"127.0.0.1:{nobody}\"\n"
        ),
    );
    let ke = format!("localhost:{}", serve.nts_ke.expect("ke").port());
    let store = dir.path("cookies.json").display().to_string();
    let ca = dir.path("t-ca.pem").display().to_string();
    let query = || {
        let out = authtime(&[
            "query",
            "--nts",
            &ke,
            "--ca",
            &ca,
            "--cookie-store",
            &store,
            "--count",
            "3",
            "--interval",
            "0",
            "--timeout",
            "5",
            "--json",
        ]);
        assert_eq!(out.status.code(), Some(3), "{}", text_of(&out));
        let json: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
        json
    };
    let first = query();
    let second = query();
    for json in [&first, &second] {
        for reply in json["replies"].as_array().expect("replies") {
            assert_eq!(reply["error"], "unsynchronized", "{json}");
            assert_eq!(reply["answered"], true, "{json}");
            assert_eq!(reply["authenticated"], true, "{json}");
            assert_eq!(reply["auth"], "nts", "{json}");
            assert_eq!(reply["stratum"], 0, "{json}");
        }
        assert_eq!(json["nts"]["cookies_left"], 8, "{json}");
    }
    assert_eq!(first["nts"]["ke_exchanges"], 1, "{first}");
    assert_eq!(
        second["nts"]["ke_exchanges"], 0,
        "the second run uses the stored cookies: {second}"
    );
}

#[test]
fn status_with_server_fails_when_the_server_gives_no_answer() {
    // `authtime status --server` is the container image's health check: a
    // well-read clock must not hide a server that stopped answering.
    let dir = TempDir::new("clock-status-health");
    let serve = Serve::start(&dir, "[ntp]\nlisten = [\"127.0.0.1:0\"]\nworkers = 1\n");
    let out = status(&dir, &serve, &[]);
    assert!(out.status.success(), "{}", text_of(&out));
    let (config, addr) = (
        dir.path("serve.toml").display().to_string(),
        serve.addr.to_string(),
    );
    drop(serve);
    let out = authtime(&["status", "--config", &config, "--server", &addr]);
    assert_eq!(out.status.code(), Some(3), "{}", text_of(&out));
    assert!(
        text_of(&out).contains(&format!("the server at {addr} gave no usable answer")),
        "{}",
        text_of(&out)
    );
}
