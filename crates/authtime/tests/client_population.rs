//! Who the clients are, seen by a real `authtime serve` (NTP, NTS-KE, NTS,
//! Roughtime) on loopback: NTP clients from 21 source addresses
//! (127.0.0.10-29 and one heavy sender at 127.0.0.50 that the rate limiter
//! stops), an NTS query and a Roughtime query from 127.0.0.1. The metrics
//! give the distinct clients by protocol, the limited ones and the rate
//! distribution, without any address; `/clients` and `authtime status
//! --server` name the top talker.

mod ntp_support;

use std::net::{Ipv4Addr, SocketAddr, UdpSocket};
use std::time::Duration;

use ntp_support::{Serve, TempDir, authtime, metric, nts_cert, text, text_of};

const HEAVY: Ipv4Addr = Ipv4Addr::new(127, 0, 0, 50);

/// A client request from `source`; whether an answer came.
fn ntp_from(source: Ipv4Addr, to: SocketAddr, count: usize) -> usize {
    let s = UdpSocket::bind((source, 0)).expect("bind a loopback source");
    s.set_read_timeout(Some(Duration::from_millis(300)))
        .expect("timeout");
    let mut request = [0u8; 48];
    request[0] = 0x23;
    let mut answered = 0;
    for i in 0..count {
        request[40..48].copy_from_slice(&(i as u64 + 1).to_be_bytes());
        s.send_to(&request, to).expect("send");
        let mut buf = [0u8; 128];
        if s.recv(&mut buf).is_ok() {
            answered += 1;
        }
    }
    answered
}

#[test]
fn clients_are_counted_by_protocol_and_the_top_talker_is_named() {
    let dir = TempDir::new("client-population");
    nts_cert(&dir, "nts", &[]);
    let keygen = authtime(&[
        "roughtime",
        "keygen",
        "--out",
        &dir.path("lt.key").display().to_string(),
    ]);
    assert!(keygen.status.success(), "{}", text_of(&keygen));
    let public = text(&keygen.stdout)
        .lines()
        .find_map(|l| l.strip_prefix("public key (hex): ").map(str::to_owned))
        .expect("the public key");
    let serve = Serve::start(
        &dir,
        "[ntp]\nlisten = [\"127.0.0.1:0\"]\n\
         [rate-limit]\nenabled = true\nrate = 1\nburst = 4\n\
         [nts-ke]\nlisten = [\"127.0.0.1:0\"]\ncertificate-chain = \"nts-chain.pem\"\n\
         private-key = \"nts-key.pem\"\nworkers = 1\n\
         [keystore]\npath = \"keys\"\n\
         [roughtime]\nlisten = [\"127.0.0.1:0\"]\nlong-term-key = \"lt.key\"\nrate-limit = 0\n",
    );
    for last in 10..30 {
        assert_eq!(ntp_from(Ipv4Addr::new(127, 0, 0, last), serve.addr, 1), 1);
    }
    let heavy_answers = ntp_from(HEAVY, serve.addr, 30);
    assert!(heavy_answers >= 4, "{heavy_answers}");
    let nts = authtime(&[
        "query",
        "--nts",
        &format!("localhost:{}", serve.nts_ke.expect("NTS-KE").port()),
        "--ca",
        &dir.path("nts-ca.pem").display().to_string(),
        "--timeout",
        "2",
    ]);
    assert!(nts.status.success(), "{}", text_of(&nts));
    let roughtime = authtime(&[
        "roughtime",
        "query",
        "--server",
        &serve.roughtime.expect("Roughtime").to_string(),
        "--public-key",
        &public,
        "--timeout-ms",
        "1000",
        "--retries",
        "2",
    ]);
    assert!(roughtime.status.success(), "{}", text_of(&roughtime));

    // The metrics. The estimate is linear counting over 4096 registers,
    // exact at these sizes unless two addresses fall into one register (a
    // chance of about n²/2m, 5 % for 21 addresses under the daemon's random
    // key): then it is one short.
    let page = serve.scrape();
    let clients = |labels: &str| metric(&page, &format!("authtime_clients{{{labels}}}"));
    let ntp = clients("protocol=\"ntp\",window=\"current\"");
    assert!((20..=21).contains(&ntp), "{ntp}\n{page}");
    assert_eq!(clients("protocol=\"nts\",window=\"current\""), 1, "{page}");
    assert_eq!(
        clients("protocol=\"roughtime\",window=\"current\""),
        1,
        "{page}"
    );
    assert_eq!(
        clients("protocol=\"nts-ke\",window=\"current\""),
        1,
        "{page}"
    );
    let any = clients("protocol=\"any\",window=\"current\"");
    assert!((21..=22).contains(&any), "{any}\n{page}");
    assert_eq!(
        metric(&page, "authtime_clients_limited{window=\"current\"}"),
        1,
        "{page}"
    );
    assert_eq!(
        metric(
            &page,
            "authtime_clients_by_request_rate{window=\"current\",le=\"+Inf\"}"
        ),
        22,
        "{page}"
    );
    assert!(!page.contains("127.0.0."), "no address in the metrics");

    // `authtime status --server` reads the figures and the top talkers (its
    // own NTP query makes 127.0.0.1 an NTP client too).
    let config = serve.status_config(&dir);
    let (config_arg, addr) = (config.display().to_string(), serve.addr.to_string());
    let out = authtime(&["status", "--config", &config_arg, "--server", &addr]);
    let shown = text(&out.stdout);
    assert!(out.status.success(), "{}", text_of(&out));
    // 22 and 22, or one short after a shared register (see above).
    let near_22 = |n: &str| n == "22" || n == "21";
    let line = shown
        .lines()
        .find(|l| l.contains(" distinct (ntp ~"))
        .unwrap_or_else(|| panic!("no client line: {shown}"));
    let (any, rest) = line
        .split_once("~")
        .and_then(|(_, r)| r.split_once(" distinct (ntp ~"))
        .unwrap_or_else(|| panic!("{line}"));
    let (ntp, rest) = rest.split_once(", ").unwrap_or_else(|| panic!("{line}"));
    assert!(near_22(any) && near_22(ntp), "{line}");
    assert!(
        rest.starts_with("nts ~1, roughtime ~1, nts-ke ~1); ~1 rate limited"),
        "{line}"
    );
    assert!(
        shown.contains(&format!("top:       {HEAVY} 30 requests (")),
        "{shown}"
    );
    let out = authtime(&[
        "status",
        "--config",
        &config_arg,
        "--server",
        &addr,
        "--json",
    ]);
    assert!(out.status.success(), "{}", text_of(&out));
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    let current = &json["clients"]["windows"]["current"];
    assert_eq!(current["top"][0]["address"], HEAVY.to_string(), "{json}");
    assert_eq!(current["top"][0]["requests"], 30, "{json}");
    // Limited: dropped, or answered with a RATE kiss (at most one a second).
    let limited = current["top"][0]["limited_or_refused"]
        .as_u64()
        .expect("count");
    assert!((1..=26).contains(&limited), "{json}");
    assert_eq!(current["by_protocol"]["ntp"], 22.0, "{json}");
    assert_eq!(json["clients"]["window_seconds"], 3600, "{json}");
}
