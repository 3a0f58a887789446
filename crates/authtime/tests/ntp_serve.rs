//! `authtime serve` as a process, from the outside: malformed datagrams are
//! dropped and counted exactly as the sans-IO server counts them (read back
//! from the Prometheus endpoint), rate limiting answers with a RATE kiss, deny
//! lists drop, SIGHUP reloads keys (and keeps them when the new file is bad),
//! SIGTERM stops the server with exit 0.

mod ntp_support;

use std::net::UdpSocket;
use std::time::Duration;

use authtime_keys::KeySet;
use authtime_proto::{Server, ServerCounters};
use authtime_wire::{NtpTimestamp, Packet};
use ntp_support::{Serve, TempDir, authtime, keygen, text, text_of, write_private};

/// A client request header: NTPv4, mode 3, a transmit timestamp.
fn request_header(version: u8, mode: u8) -> Vec<u8> {
    let mut h = vec![0u8; 48];
    h[0] = (version << 3) | mode;
    h[40..48].copy_from_slice(&0x1234_5678_9abc_def0u64.to_be_bytes());
    h
}

fn with(mut head: Vec<u8>, tail: &[u8]) -> Vec<u8> {
    head.extend_from_slice(tail);
    head
}

/// Extension field header (type 0x0104) with `length`, then `body`.
fn ef(length: u16, body_len: usize) -> Vec<u8> {
    let mut f = vec![0x01, 0x04];
    f.extend_from_slice(&length.to_be_bytes());
    f.resize(4 + body_len, 0xab);
    f
}

/// The datagrams of the malformed-packet test, each with what it is.
fn malformed_datagrams() -> Vec<(&'static str, Vec<u8>)> {
    let v4 = || request_header(4, 3);
    let mut cases = vec![
        ("truncated header", v4()[..20].to_vec()),
        ("empty", Vec::new()),
        ("length not a multiple of 4", v4()[..46].to_vec()),
        (
            "extension field too short",
            with(with(v4(), &ef(8, 4)), &[0; 20]),
        ),
        ("extension field overrun", with(v4(), &ef(256, 28))),
        ("extension field misaligned", with(v4(), &ef(30, 28))),
        ("last extension field too short", with(v4(), &ef(16, 12))),
        (
            "MAC of 8 bytes",
            with(v4(), &[0, 0, 0, 1, 1, 2, 3, 4, 5, 6, 7, 8]),
        ),
        (
            "MD5 key with a 20-byte digest",
            with(v4(), &with(vec![0, 0, 0, 1], &[7; 20])),
        ),
        (
            "AES key with a 20-byte digest",
            with(v4(), &with(vec![0, 0, 0, 3], &[7; 20])),
        ),
        (
            "MAC under an unknown key",
            with(v4(), &with(vec![0, 0, 0, 99], &[7; 16])),
        ),
        ("bad MD5 MAC", with(v4(), &with(vec![0, 0, 0, 1], &[7; 16]))),
        ("crypto-NAK with a key id", with(v4(), &[0, 0, 0, 5])),
        ("crypto-NAK request", with(v4(), &[0, 0, 0, 0])),
        ("server mode", request_header(4, 4)),
        ("version 0", request_header(0, 3)),
        ("version 6", request_header(6, 3)),
        (
            "NTPv3 MAC of 68 bytes",
            with(request_header(3, 3), &[0; 72]),
        ),
    ];
    // Random bytes of random lengths (a fixed xorshift, so failures repeat).
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    for _ in 0..200 {
        let len = (next() % 300) as usize;
        cases.push(("random bytes", (0..len).map(|_| next() as u8).collect()));
    }
    cases
}

#[test]
fn malformed_datagrams_are_dropped_and_counted_like_the_sans_io_server() {
    let dir = TempDir::new("serve-malformed");
    let key_file = keygen(
        &dir,
        "chrony.keys",
        "chrony",
        &[("md5", 1), ("sha1", 2), ("aes128", 3)],
    );
    let serve = Serve::start(
        &dir,
        &format!(
            "[ntp]\nlisten = [\"127.0.0.1:0\"]\nkeys = \"{}\"\nworkers = 2\n\
             [rate-limit]\nenabled = false\n",
            key_file.display()
        ),
    );
    let cases = malformed_datagrams();
    let socket = UdpSocket::bind("127.0.0.1:0").expect("bind");
    for (_, bytes) in &cases {
        socket.send_to(bytes, serve.addr).expect("send");
    }
    // One more than the receive buffer.
    socket.send_to(&[0x23; 3000], serve.addr).expect("send");
    let total = cases.len() as u64 + 1;
    assert_eq!(
        serve.wait_metric("authtime_ntp_received_total", total),
        total,
        "{}",
        serve.scrape()
    );

    // The same datagrams through the sans-IO server.
    let (keys, _) = KeySet::load(&key_file, None).expect("keys");
    let mut expected = ServerCounters::default();
    let mut out = [0u8; 2048];
    for (_, bytes) in &cases {
        let ts = NtpTimestamp::from_bits(1 << 40);
        Server::default().handle(bytes, ts, ts, &keys, &mut out, &mut expected);
    }
    let metrics = serve.scrape();
    let value = |sample: &str| ntp_support::metric(&metrics, sample);
    assert_eq!(
        value("authtime_ntp_answered_total{auth=\"none\"}"),
        expected.answered_plain,
        "random requests that happen to be valid are answered: {metrics}"
    );
    assert_eq!(value("authtime_ntp_answered_total{auth=\"mac\"}"), 0);
    for (reason, count) in &expected.dropped {
        let sample = format!("authtime_ntp_dropped_total{{reason=\"{reason}\"}}");
        assert_eq!(value(&sample), *count, "{sample}\n{metrics}");
    }
    assert_eq!(value("authtime_ntp_dropped_total{reason=\"too_large\"}"), 1);
    for (key_id, count) in &expected.mac_failures {
        let label = if keys.get(*key_id).is_some() {
            key_id.to_string()
        } else {
            "unknown".into()
        };
        let sample = format!("authtime_ntp_mac_failures_total{{key_id=\"{label}\"}}");
        assert_eq!(value(&sample), *count, "{sample}\n{metrics}");
    }
    // Every kind of malformation of the list is there, under its codec name.
    let mut names: Vec<&str> = cases
        .iter()
        .filter_map(|(_, b)| Packet::decode(b).err().map(|e| e.name()))
        .collect();
    names.sort_unstable();
    names.dedup();
    for name in [
        "header_too_short",
        "length_not_multiple_of_4",
        "ef_too_short",
        "ef_overrun",
        "ef_misaligned",
        "unparsable_trailer",
        "crypto_nak_key_id",
    ] {
        assert!(names.contains(&name), "{name} not exercised: {names:?}");
        let sample = format!("authtime_ntp_malformed_total{{error=\"{name}\"}}");
        assert!(value(&sample) > 0, "{sample}\n{metrics}");
    }
    assert!(value("authtime_ntp_dropped_total{reason=\"bad_mac\"}") >= 3);
    assert!(value("authtime_ntp_mac_failures_total{key_id=\"1\"}") >= 2);
    // The server still answers.
    let target = serve.addr.to_string();
    let ok = authtime(&["query", &target]);
    assert!(ok.status.success(), "{}", text_of(&ok));
    // Nothing a peer sent was logged as a warning. (The lab clock of the
    // test server may draw one start-up warning on a host whose kernel says
    // unsynchronized: that one is about the host, not about the packets.)
    let log = serve.log_text();
    assert!(
        !log.lines()
            .any(|l| l.contains("WARN") && !l.contains("source = \"static\" announces")),
        "{log}"
    );
}

#[test]
fn sighup_reloads_keys_and_sigterm_stops_cleanly() {
    let dir = TempDir::new("serve-signals");
    let served = keygen(&dir, "served.keys", "ntpd", &[("sha1", 1)]);
    let client = keygen(&dir, "client.keys", "ntpd", &[("aes128", 5)]);
    let mut serve = Serve::start(
        &dir,
        &format!(
            "[ntp]\nlisten = [\"127.0.0.1:0\"]\nkeys = \"{}\"\nworkers = 1\n",
            served.display()
        ),
    );
    let target = serve.addr.to_string();
    let client_path = client.to_string_lossy().into_owned();
    let query_key_5 = || {
        authtime(&[
            "query",
            &target,
            "--key-file",
            &client_path,
            "--key-id",
            "5",
            // Not shorter: a loaded CI machine once let a 0.3 s wait for a
            // reply that did come run out.
            "--timeout",
            "1.0",
        ])
    };
    let before = query_key_5();
    assert_eq!(before.status.code(), Some(1), "{}", text_of(&before));

    // The client's key becomes the server's; SIGHUP.
    std::fs::copy(&client, &served).expect("copy");
    serve.process.signal("HUP");
    assert_eq!(
        serve.wait_metric("authtime_key_reloads_total{result=\"ok\"}", 1),
        1
    );
    let after = query_key_5();
    assert!(after.status.success(), "{}", text_of(&after));
    assert!(text(&after.stdout).contains("authenticated: key 5 AES128"));

    // A broken file: the reload fails, key 5 keeps working.
    write_private(&served, "5 NOSUCHTYPE 0011\n");
    serve.process.signal("HUP");
    assert_eq!(
        serve.wait_metric("authtime_key_reloads_total{result=\"error\"}", 1),
        1
    );
    let kept = query_key_5();
    assert!(kept.status.success(), "{}", text_of(&kept));
    assert_eq!(serve.metric("authtime_keys_loaded"), 1);

    serve.process.signal("TERM");
    let status = serve
        .process
        .wait_for_exit(Duration::from_secs(5))
        .expect("stops within 5 s of SIGTERM");
    assert_eq!(status.code(), Some(0), "{}", serve.log_text());
    let log = serve.log_text();
    assert!(
        log.contains("key reload failed, keeping the old keys"),
        "{log}"
    );
    assert!(log.contains("stopped"), "{log}");
}

#[test]
fn a_client_over_its_rate_gets_one_rate_kiss_and_denied_clients_nothing() {
    let dir = TempDir::new("serve-limits");
    let serve = Serve::start(
        &dir,
        "[ntp]\nlisten = [\"127.0.0.1:0\"]\nworkers = 2\n\
         [rate-limit]\nrate = 0.1\nburst = 3\nkiss-interval = 60\n",
    );
    let target = serve.addr.to_string();
    let out = authtime(&[
        "query",
        &target,
        "--count",
        "5",
        "--interval",
        "0",
        "--timeout",
        "0.3",
    ]);
    assert_eq!(out.status.code(), Some(3), "{}", text_of(&out));
    let stdout = text(&out.stdout);
    assert_eq!(stdout.matches("stratum 2").count(), 3, "{stdout}");
    assert!(stdout.contains("RATE"), "{stdout}");
    assert_eq!(serve.wait_metric("authtime_ntp_rate_limited_total", 2), 2);
    assert_eq!(
        serve.metric("authtime_ntp_dropped_total{reason=\"rate_limited\"}"),
        1
    );
    drop(serve);

    let denied = Serve::start(
        &dir,
        "[ntp]\nlisten = [\"127.0.0.1:0\"]\n[access]\ndeny = [\"127.0.0.0/8\"]\n",
    );
    let out = authtime(&["query", &denied.addr.to_string(), "--timeout", "0.3"]);
    assert_eq!(out.status.code(), Some(3), "{}", text_of(&out));
    assert!(
        text(&out.stderr).contains("no reply within 0.3 s"),
        "{}",
        text_of(&out)
    );
    assert_eq!(
        denied.wait_metric("authtime_ntp_dropped_total{reason=\"denied\"}", 1),
        1
    );
}

#[test]
fn serve_refuses_bad_configuration_with_one_line() {
    let dir = TempDir::new("serve-bad-config");
    let config = dir.path("bad.toml");
    std::fs::write(&config, "[ntp]\nlisten = [\"nowhere\"]\nstratum = 0\n").expect("write");
    let out = authtime(&["serve", "--config", &config.to_string_lossy()]);
    assert_eq!(out.status.code(), Some(2), "{}", text_of(&out));
    let stderr = text(&out.stderr);
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.contains("bad.toml:2:11: ntp.listen[0]"), "{stderr}");
    assert!(stderr.contains("and 1 more"), "{stderr}");
    let out = authtime(&["serve", "--listen", "127.0.0.1"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("--listen: `127.0.0.1` is not an address with a port"));
}
