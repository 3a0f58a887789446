//! `authtime serve` with a `[roughtime]` section, from the outside: the real
//! daemon on loopback answers `authtime roughtime query` (both versions),
//! roughenough 2.2's client (`-P 1` and `-P 19`) and 1.3.0-draft14's client,
//! over UDP and TCP; requests under 1024 bytes get nothing; requests sent
//! together are answered in batches under one signature; an unsynchronized
//! clock gets no answer; online keys rotate and live in the key store; an
//! offline delegation is served until its MAXT and not after. Every wait is
//! bounded; nothing asserts how fast anything is.

#![allow(clippy::unwrap_used)]

mod ntp_support;
#[path = "../../authtime-roughtime/tests/roughenough_support/mod.rs"]
#[allow(dead_code, reason = "shared with the roughtime crate's interop tests")]
mod roughenough_support;

use std::io::{Read as _, Write as _};
use std::net::{SocketAddr, TcpStream, UdpSocket};
use std::os::unix::fs::PermissionsExt as _;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use authtime_roughtime::{Version, build_request, verify_response};
use ntp_support::interop::{self, Direction, Row};
use ntp_support::{Serve, TempDir, authtime, free_udp_port, text};

/// How long a peer client may take.
const CLIENT_LIMIT: Duration = Duration::from_secs(20);

/// A long-term key made by `authtime roughtime keygen`: (base64, hex, bytes).
fn keygen(dir: &TempDir) -> (String, String, [u8; 32]) {
    let out = authtime(&[
        "roughtime",
        "keygen",
        "--out",
        &dir.path("lt.key").to_string_lossy(),
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    let field = |prefix: &str| {
        stdout
            .lines()
            .find_map(|l| l.strip_prefix(prefix))
            .unwrap_or_else(|| panic!("{prefix} in {stdout}"))
            .trim()
            .to_owned()
    };
    let (b64, hex_key) = (field("public key (base64): "), field("public key (hex): "));
    let bytes: [u8; 32] = hex::decode(&hex_key).unwrap().try_into().unwrap();
    let mode = std::fs::metadata(dir.path("lt.key"))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o600);
    (b64, hex_key, bytes)
}

/// Starts the daemon with `roughtime` as the body of its `[roughtime]`
/// section on a free port, and the `extra` sections.
fn serve(dir: &TempDir, roughtime: &str, extra: &str) -> (Serve, SocketAddr) {
    // Port 0: the daemon binds UDP and then TCP on the port UDP got, and says
    // which. A port picked here and bound later by the daemon could be taken
    // in between by another test (a CI run saw "Address already in use").
    let serve = Serve::start(
        dir,
        &format!(
            "[ntp]\nlisten = [\"127.0.0.1:0\"]\nworkers = 1\n[roughtime]\nlisten = [\"127.0.0.1:0\"]\n\
             {roughtime}\n{extra}"
        ),
    );
    let addr = serve
        .roughtime
        .expect("the daemon prints its Roughtime address");
    (serve, addr)
}

fn query(addr: SocketAddr, key: &str, version: &str) -> std::process::Output {
    authtime(&[
        "roughtime",
        "query",
        "--server",
        &addr.to_string(),
        "--public-key",
        key,
        "--version",
        version,
        "--timeout-ms",
        "1000",
        "--retries",
        "2",
    ])
}

fn now_secs() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

/// A request from the library, for the hand-made exchanges.
fn request(version: Version, i: u64) -> Vec<u8> {
    let mut nonce = roughenough_support::random::<32>();
    nonce[..8].copy_from_slice(&i.to_le_bytes());
    build_request(&[version], &nonce, None).unwrap()
}

fn udp_client() -> UdpSocket {
    let s = UdpSocket::bind("127.0.0.1:0").unwrap();
    s.set_read_timeout(Some(Duration::from_millis(500)))
        .unwrap();
    s
}

#[test]
fn authtime_and_roughenough_clients_get_verified_time_over_udp_and_tcp() {
    let dir = TempDir::new("roughtime-serve");
    let (b64, hex_key, public) = keygen(&dir);
    let (serve, addr) = serve(
        &dir,
        "long-term-key = \"lt.key\"\nrate-limit = 0\n",
        "[keystore]\npath = \"nts-keys\"\n",
    );

    // authtime's own client, both versions.
    for (version, shown) in [("1", "version 1,"), ("draft", "version draft-0x8000000c,")] {
        let out = query(addr, &b64, version);
        let stdout = text(&out.stdout);
        assert!(out.status.success(), "{stdout}{}", text(&out.stderr));
        assert!(
            stdout.contains(shown) && stdout.contains("radius 1 s"),
            "{stdout}"
        );
    }

    // roughenough 2.2's client, version 1 and draft 19.
    let install = roughenough_support::install();
    let port = addr.port().to_string();
    for protocol in ["1", "19"] {
        let run = roughenough_support::spawn_client(
            &install.bin22.join("roughenough_client"),
            &[
                "-P",
                protocol,
                "-t",
                "5",
                "-f",
                "%s",
                "-k",
                &hex_key,
                "127.0.0.1",
                &port,
            ],
        )
        .finish(CLIENT_LIMIT);
        roughenough_support::assert_22_verified(&run, 1, &format!("-P {protocol}"));
        interop::proven(Row {
            peer: &format!("roughenough {}", install.version22),
            direction: Direction::PeerToAuthtime,
            feature: "Roughtime",
            result: &format!(
                "version {} verified (client -P {protocol}), daemon",
                if protocol == "1" { "1" } else { "0x8000000c" }
            ),
            test: "roughtime_serve::authtime_and_roughenough_clients_get_verified_time_over_udp_and_tcp",
        });
    }

    // roughenough 1.3's client (0x8000000c): it exits 0 on a timeout too,
    // so the line it prints is the proof.
    let run = roughenough_support::spawn_client(
        &install.bin13.join("roughenough-client"),
        &[
            "-p",
            "14",
            "-j",
            "-t",
            "5",
            "-k",
            &hex_key,
            "127.0.0.1",
            &port,
        ],
    )
    .finish(CLIENT_LIMIT);
    let line = run
        .stdout
        .lines()
        .find(|l| l.contains("\"midpoint\""))
        .unwrap_or_else(|| panic!("1.3 client printed no response: {run:?}"));
    assert!(
        line.contains("\"verified\": Yes") && line.contains("\"radius\": 1,"),
        "{line}"
    );
    interop::proven(Row {
        peer: &format!("roughenough {}", install.version13),
        direction: Direction::PeerToAuthtime,
        feature: "Roughtime",
        result: "version 0x8000000c verified, daemon",
        test: "roughtime_serve::authtime_and_roughenough_clients_get_verified_time_over_udp_and_tcp",
    });

    // A request under 1024 bytes gets nothing, and is counted.
    let client = udp_client();
    client.send_to(&[0u8; 1023], addr).unwrap();
    let mut buf = [0u8; 2048];
    assert!(
        client.recv_from(&mut buf).is_err(),
        "a short request was answered"
    );
    assert!(serve.wait_metric("authtime_roughtime_dropped_total{reason=\"too_short\"}", 1) >= 1);

    // TCP: two framed requests on one connection, each answered.
    let mut tcp = TcpStream::connect_timeout(&addr, Duration::from_secs(2)).unwrap();
    tcp.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    for version in [Version::Rfc1, Version::Draft12] {
        let req = request(version, 0);
        tcp.write_all(&req).unwrap();
        let mut head = [0u8; 12];
        tcp.read_exact(&mut head).unwrap();
        let len = u32::from_le_bytes(head[8..12].try_into().unwrap()) as usize;
        let mut response = head.to_vec();
        response.resize(12 + len, 0);
        tcp.read_exact(&mut response[12..]).unwrap();
        let v = verify_response(&req, &response, &public).unwrap();
        assert_eq!((v.version, v.radius), (version, 1));
        assert!(v.midpoint.abs_diff(now_secs()) <= 5);
    }
    drop(tcp);

    // Requests sent together: every one answered and verified, and at least
    // one receive batch of several under one signature (a few rounds, since
    // the worker may drain the socket between two datagrams).
    let mut rounds = 0;
    while serve.metric("authtime_roughtime_batch_size_bucket{le=\"1\"}")
        == serve.metric("authtime_roughtime_batch_size_count")
    {
        rounds += 1;
        assert!(rounds <= 5, "no batch of two or more in 5 rounds");
        let requests: Vec<Vec<u8>> = (0..24).map(|i| request(Version::Rfc1, i)).collect();
        for req in &requests {
            client.send_to(req, addr).unwrap();
        }
        let mut answered = vec![false; requests.len()];
        let deadline = Instant::now() + Duration::from_secs(10);
        while answered.iter().any(|a| !a) && Instant::now() < deadline {
            let Ok((n, _)) = client.recv_from(&mut buf) else {
                continue;
            };
            if let Some(i) = requests
                .iter()
                .position(|r| verify_response(r, &buf[..n], &public).is_ok())
            {
                answered[i] = true;
            }
        }
        assert!(answered.iter().all(|a| *a), "unanswered: {answered:?}");
    }
    let metrics = serve.scrape();
    let value = |sample: &str| ntp_support::metric(&metrics, sample);
    let responses = value("authtime_roughtime_responses_total{version=\"1\"}")
        + value("authtime_roughtime_responses_total{version=\"0x8000000c\"}");
    assert!(
        value("authtime_roughtime_signatures_total") < responses,
        "fewer signatures than responses:\n{metrics}"
    );
    assert_eq!(value("authtime_roughtime_radius_seconds"), 1);
    assert!(value("authtime_roughtime_online_key_expiry_seconds") > 80_000);
    assert_eq!(value("authtime_roughtime_tcp_connections_total"), 1);

    // The online key is in the key store, beside the NTS master keys.
    let stored = dir.path("nts-keys.roughtime");
    let mode = std::fs::metadata(&stored).unwrap().permissions().mode();
    assert_eq!(mode & 0o077, 0, "{mode:o}");
}

#[test]
fn an_unsynchronized_clock_gets_no_roughtime_answer() {
    let dir = TempDir::new("roughtime-unsync");
    let (b64, _, _) = keygen(&dir);
    // chronyd's command port where nothing listens: unsynchronized from the start.
    let nobody = free_udp_port();
    let (serve, addr) = serve(
        &dir,
        "long-term-key = \"lt.key\"\n",
        &format!("[clock]\nsource = \"chrony\"\nchrony-address = \"127.0.0.1:{nobody}\"\n"),
    );
    let out = authtime(&[
        "roughtime",
        "query",
        "--server",
        &addr.to_string(),
        "--public-key",
        &b64,
        "--timeout-ms",
        "300",
        "--retries",
        "1",
    ]);
    assert_eq!(out.status.code(), Some(3), "{}", text(&out.stdout));
    assert!(
        serve.wait_metric(
            "authtime_roughtime_dropped_total{reason=\"unsynchronized\"}",
            1
        ) >= 1
    );
    assert_eq!(
        serve.metric("authtime_roughtime_responses_total{version=\"1\"}"),
        0
    );
    // `authtime status` on the same configuration says so.
    let config = dir.path("serve.toml").to_string_lossy().into_owned();
    let status = authtime(&["status", "--config", &config]);
    assert_eq!(status.status.code(), Some(3));
    assert!(
        text(&status.stdout).contains("roughtime: no answers while the clock is unsynchronized"),
        "{}",
        text(&status.stdout)
    );
}

/// `authtime status` shows the radius the daemon signs for the same clock
/// state, and the daemon answers with that radius; over `max-radius` it says
/// the server stays silent.
#[test]
fn status_shows_the_radius_the_daemon_signs() {
    let dir = TempDir::new("roughtime-status");
    let (b64, _, _) = keygen(&dir);
    let clock = "[clock]\nsource = \"static\"\nstratum = 1\nreference-id = \"GPS\"\n\
                 root-delay = 0.4\nroot-dispersion = 1.5\n";
    let (serve, addr) = serve(&dir, "long-term-key = \"lt.key\"\n", clock);
    let config = dir.path("serve.toml").to_string_lossy().into_owned();
    let status = authtime(&["status", "--config", &config, "--json"]);
    assert!(status.status.success(), "{}", text(&status.stdout));
    let doc: serde_json::Value = serde_json::from_slice(&status.stdout).unwrap();
    // 0.4 / 2 + 1.5 (+ its growth since the reading) + 0.5, rounded up.
    assert_eq!(doc["roughtime"]["radius"], 3, "{doc}");
    assert_eq!(doc["roughtime"]["answers"], true, "{doc}");
    let out = query(addr, &b64, "1");
    let stdout = text(&out.stdout);
    assert!(stdout.contains("radius 3 s"), "{stdout}");
    drop(serve);

    let wide = dir.path("wide.toml");
    std::fs::write(
        &wide,
        format!(
            "[roughtime]\nlong-term-key = \"lt.key\"\nmax-radius = 10\n{}",
            clock.replace("root-dispersion = 1.5", "root-dispersion = 12.0")
        ),
    )
    .unwrap();
    let status = authtime(&["status", "--config", &wide.to_string_lossy()]);
    assert!(
        text(&status.stdout)
            .contains("roughtime: no answers: the radius would be 13 s, over max-radius 10 s"),
        "{}",
        text(&status.stdout)
    );
}

#[test]
fn online_keys_rotate_and_an_offline_delegation_is_served_until_its_maxt() {
    let dir = TempDir::new("roughtime-rotate");
    let (b64, _, _) = keygen(&dir);
    // A 6-second lifetime: a new key when 2 s are left.
    let (serve, addr) = serve(
        &dir,
        "long-term-key = \"lt.key\"\nonline-key-lifetime = 6\n",
        "",
    );
    assert!(query(addr, &b64, "1").status.success());
    let deadline = Instant::now() + Duration::from_secs(20);
    while serve.metric("authtime_roughtime_key_rotations_total") < 1 {
        assert!(
            Instant::now() < deadline,
            "no rotation:\n{}",
            serve.log_text()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    let out = query(addr, &b64, "1");
    assert!(
        out.status.success(),
        "after rotation: {}",
        text(&out.stdout)
    );
    drop(serve);

    // An offline delegation valid for a few more seconds: answered now, not
    // after its MAXT.
    let delegation = dir.path("rt.delegation");
    let out = authtime(&[
        "roughtime",
        "delegate",
        "--long-term-key",
        &dir.path("lt.key").to_string_lossy(),
        "--valid-for",
        "4s",
        "--out",
        &delegation.to_string_lossy(),
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let printed = text(&out.stdout);
    assert!(printed.contains(&b64), "{printed}");
    let maxt: u64 = printed
        .split("MAXT ")
        .nth(1)
        .and_then(|rest| rest.split(')').next()?.parse().ok())
        .unwrap_or_else(|| panic!("no MAXT in {printed}"));
    let (serve, addr) = serve_named(&dir, "offline", "delegation = \"rt.delegation\"\n");
    let out = query(addr, &b64, "1");
    if now_secs() < maxt {
        assert!(out.status.success(), "{}", text(&out.stdout));
    }
    while now_secs() <= maxt + 1 {
        std::thread::sleep(Duration::from_millis(100));
    }
    let out = query(addr, &b64, "1");
    assert_eq!(out.status.code(), Some(3), "{}", text(&out.stdout));
    assert!(serve.metric("authtime_roughtime_dropped_total{reason=\"outside_delegation\"}") >= 1);
    assert!(
        serve.log_text().contains("delegation"),
        "{}",
        serve.log_text()
    );
}

/// [`serve`] under another file name (a second daemon in one directory).
fn serve_named(dir: &TempDir, name: &str, roughtime: &str) -> (Serve, SocketAddr) {
    let serve = Serve::start_named(
        dir,
        name,
        &format!(
            "[ntp]\nlisten = [\"127.0.0.1:0\"]\nworkers = 1\n[roughtime]\nlisten = [\"127.0.0.1:0\"]\n\
             {roughtime}\n"
        ),
    );
    let addr = serve
        .roughtime
        .expect("the daemon prints its Roughtime address");
    (serve, addr)
}

#[test]
fn a_client_over_its_rate_is_dropped_and_counted() {
    let dir = TempDir::new("roughtime-rate");
    let (_, _, public) = keygen(&dir);
    let (serve, addr) = serve(
        &dir,
        "long-term-key = \"lt.key\"\nrate-limit = 0.01\nrate-limit-burst = 1\n",
        "",
    );
    // One request a hundred seconds is the rate: of five sent at once, the
    // first is answered and the others are over it, however fast the
    // machine is.
    let client = udp_client();
    let requests: Vec<Vec<u8>> = (0..5).map(|i| request(Version::Rfc1, i)).collect();
    for req in &requests {
        client.send_to(req, addr).unwrap();
    }
    let mut buf = [0u8; 2048];
    let (n, _) = client.recv_from(&mut buf).expect("the first is answered");
    assert!(verify_response(&requests[0], &buf[..n], &public).is_ok());
    assert_eq!(
        serve.wait_metric(
            "authtime_roughtime_dropped_total{reason=\"rate_limited\"}",
            4
        ),
        4
    );
    assert_eq!(
        serve.metric("authtime_roughtime_responses_total{version=\"1\"}"),
        1
    );
}

#[test]
fn config_check_reads_the_roughtime_key_as_the_daemon_does() {
    let dir = TempDir::new("roughtime-config-check");
    keygen(&dir);
    let config = dir.path("rt.toml");
    std::fs::write(&config, "[roughtime]\nlong-term-key = \"lt.key\"\n").unwrap();
    let check = || authtime(&["config", "check", &config.to_string_lossy()]);
    let out = check();
    assert!(out.status.success(), "{}", text(&out.stdout));
    std::fs::set_permissions(dir.path("lt.key"), std::fs::Permissions::from_mode(0o644)).unwrap();
    let out = check();
    assert_eq!(out.status.code(), Some(2));
    let stdout = text(&out.stdout);
    assert!(
        stdout.contains(":2:17: roughtime.long-term-key:") && stdout.contains("chmod 600"),
        "{stdout}"
    );
}

#[test]
fn bad_tcp_frames_close_the_connection_and_are_counted() {
    let dir = TempDir::new("roughtime-tcp-bad");
    let (_, _, public) = keygen(&dir);
    let (serve, addr) = serve(
        &dir,
        "long-term-key = \"lt.key\"\nmax-connections = 2\ntcp-timeout = 0.5\n",
        "",
    );
    let connect = || {
        let s = TcpStream::connect_timeout(&addr, Duration::from_secs(2)).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        s
    };
    let closed = |mut s: TcpStream| {
        let mut buf = [0u8; 16];
        matches!(s.read(&mut buf), Ok(0) | Err(_))
    };
    // Not a Roughtime frame.
    let mut s = connect();
    s.write_all(b"GET / HTTP/1.0\r\n\r\n").unwrap();
    assert!(closed(s));
    // A length over the limit: closed before the body is read.
    let mut s = connect();
    s.write_all(b"ROUGHTIM").unwrap();
    s.write_all(&u32::MAX.to_le_bytes()).unwrap();
    assert!(closed(s));
    // A client that sends nothing is closed after tcp-timeout.
    assert!(closed(connect()));
    assert!(serve.wait_metric("authtime_roughtime_dropped_total{reason=\"malformed\"}", 1) >= 1);
    assert!(serve.wait_metric("authtime_roughtime_dropped_total{reason=\"too_large\"}", 1) >= 1);
    // The server still answers.
    let mut s = connect();
    let req = request(Version::Rfc1, 7);
    s.write_all(&req).unwrap();
    let mut head = [0u8; 12];
    s.read_exact(&mut head).unwrap();
    let len = u32::from_le_bytes(head[8..12].try_into().unwrap()) as usize;
    let mut response = head.to_vec();
    response.resize(12 + len, 0);
    s.read_exact(&mut response[12..]).unwrap();
    assert!(verify_response(&req, &response, &public).is_ok());
}

/// The online key (DELE's PUBK) a response was signed with.
fn online_key_of(response: &[u8]) -> [u8; 32] {
    use authtime_roughtime::message::{Message, unframe};
    use authtime_roughtime::tags::Tag;
    let msg = Message::parse(unframe(response).unwrap()).unwrap();
    let cert = Message::parse(msg.require(Tag::CERT).unwrap()).unwrap();
    let dele = Message::parse(cert.require(Tag::DELE).unwrap()).unwrap();
    dele.require_array::<32>(Tag::PUBK).unwrap()
}

#[test]
fn two_servers_sharing_a_key_store_answer_with_one_online_key() {
    let dir = TempDir::new("roughtime-fleet");
    let (_, _, public) = keygen(&dir);
    let section = "long-term-key = \"lt.key\"\n";
    let store = "[keystore]\npath = \"fleet-keys\"\n";
    let (first, a) = serve(&dir, section, store);
    let second = Serve::start_named(
        &dir,
        "second",
        &format!(
            "[ntp]\nlisten = [\"127.0.0.1:0\"]\nworkers = 1\n[roughtime]\nlisten = [\"127.0.0.1:0\"]\n\
             {section}{store}"
        ),
    );
    let b = second
        .roughtime
        .expect("the daemon prints its Roughtime address");
    let client = udp_client();
    let mut keys = Vec::new();
    for addr in [a, b] {
        let req = request(Version::Rfc1, 1);
        let mut buf = [0u8; 2048];
        let n = (0..3)
            .find_map(|_| {
                client.send_to(&req, addr).unwrap();
                client.recv_from(&mut buf).ok().map(|(n, _)| n)
            })
            .expect("an answer");
        verify_response(&req, &buf[..n], &public).unwrap();
        keys.push(online_key_of(&buf[..n]));
    }
    assert_eq!(keys[0], keys[1], "two online keys in one fleet");
    drop((first, second));
}
