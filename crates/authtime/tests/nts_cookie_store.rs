//! `authtime query` against the real `authtime serve` in two cases NTPsec
//! showed (issue 20):
//! - a cookie store whose cookies the server can no longer open, and a
//!   server that drops such requests without an NTS NAK (NTPsec 1.2 does;
//!   authtime's server NAKs, so a relay in front of it drops the NAKs): the
//!   stored session is dropped, NTS-KE is redone and the run gets its
//!   authenticated sample;
//! - a server announcing a root dispersion of 7.95 s (NTPsec right after it
//!   syncs to its local clock): the reply is unfit (RFC 5905 MAXDIST), plain
//!   and with NTS, exit code 3.

mod ntp_support;
use ntp_support::nts_cert;

use std::net::{SocketAddr, TcpListener, UdpSocket};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use ntp_support::{Serve, TempDir, authtime, free_udp_port, text_of};

fn free_tcp_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("free port")
        .port()
}

/// A UDP relay for one client at a time in front of an NTP server that
/// drops the server's NTS NAKs (kiss code NTSN, RFC 8915 section 5.7), as
/// a server that stays silent on cookies it cannot open would look.
struct NakDroppingRelay {
    addr: SocketAddr,
    naks_dropped: Arc<AtomicU64>,
    forwarded: Arc<AtomicU64>,
    stop: Arc<AtomicBool>,
}

impl NakDroppingRelay {
    fn start(port: u16, server: SocketAddr) -> Self {
        let front = UdpSocket::bind(("127.0.0.1", port)).expect("relay port");
        let back = UdpSocket::bind("127.0.0.1:0").expect("relay upstream");
        back.connect(server).expect("connect");
        for s in [&front, &back] {
            s.set_read_timeout(Some(Duration::from_millis(20)))
                .expect("timeout");
        }
        let (naks_dropped, forwarded, stop) = (
            Arc::new(AtomicU64::new(0)),
            Arc::new(AtomicU64::new(0)),
            Arc::new(AtomicBool::new(false)),
        );
        let relay = Self {
            addr: front.local_addr().expect("addr"),
            naks_dropped: naks_dropped.clone(),
            forwarded: forwarded.clone(),
            stop: stop.clone(),
        };
        std::thread::spawn(move || {
            let mut client = None;
            let mut buf = [0u8; 2048];
            while !stop.load(Ordering::Relaxed) {
                if let Ok((n, from)) = front.recv_from(&mut buf) {
                    client = Some(from);
                    let _ = back.send(&buf[..n]);
                }
                if let (Ok(n), Some(to)) = (back.recv(&mut buf), client) {
                    // Stratum 0 with the kiss code NTSN at bytes 12..16.
                    if n >= 48 && buf[1] == 0 && &buf[12..16] == b"NTSN" {
                        naks_dropped.fetch_add(1, Ordering::Relaxed);
                    } else {
                        forwarded.fetch_add(1, Ordering::Relaxed);
                        let _ = front.send_to(&buf[..n], to);
                    }
                }
            }
        });
        relay
    }
}

impl Drop for NakDroppingRelay {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

fn query(ke_port: u16, ca: &str, store: &str) -> (std::process::Output, serde_json::Value) {
    let out = authtime(&[
        "query",
        "--nts",
        &format!("localhost:{ke_port}"),
        "--ca",
        ca,
        "--cookie-store",
        store,
        "--timeout",
        "1",
        "--json",
    ]);
    let json = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("json ({e}): {}", text_of(&out)));
    (out, json)
}

#[test]
fn stored_cookies_a_server_drops_silently_are_replaced_in_the_same_run() {
    let dir = TempDir::new("nts-cookie-store-silent");
    nts_cert(&dir, "nts", &[]);
    let (ntp_port, ke_port, relay_port) = (free_udp_port(), free_tcp_port(), free_udp_port());
    // NTS-KE sends clients to the relay, which forwards to the server.
    let config = |keys: &str| {
        format!(
            "[ntp]\nlisten = [\"127.0.0.1:{ntp_port}\"]\nworkers = 1\n\
             [nts-ke]\nlisten = [\"127.0.0.1:{ke_port}\"]\ncertificate-chain = \"nts-chain.pem\"\n\
             private-key = \"nts-key.pem\"\nworkers = 1\nntp-server = \"127.0.0.1\"\n\
             ntp-port = {relay_port}\n[keystore]\npath = \"{keys}\"\n"
        )
    };
    let relay = NakDroppingRelay::start(relay_port, ([127, 0, 0, 1], ntp_port).into());
    let ca = dir.path("nts-ca.pem").display().to_string();
    let store = dir.path("cookies").display().to_string();

    let first = Serve::start_named(&dir, "first", &config("keys-first"));
    let (out, json) = query(ke_port, &ca, &store);
    assert!(out.status.success(), "{}", text_of(&out));
    assert_eq!(json["nts"]["ke_exchanges"], 1, "{json}");
    assert_eq!(
        json["nts"]["ntp_server"],
        format!("127.0.0.1:{}", relay.addr.port())
    );
    drop(first);

    // New master keys: the stored cookies no longer open. The server NAKs,
    // the relay drops the NAK, the client hears nothing.
    let second = Serve::start_named(&dir, "second", &config("keys-second"));
    let (out, json) = query(ke_port, &ca, &store);
    assert!(out.status.success(), "{}", text_of(&out));
    let nts = &json["nts"];
    assert_eq!(nts["session_from_cookie_store"], true, "{json}");
    assert_eq!(nts["stored_session_dropped"], true, "{json}");
    assert_eq!(nts["ke_exchanges"], 1, "{json}");
    assert_eq!(json["replies"][0]["auth"], "nts", "{json}");
    assert_eq!(relay.naks_dropped.load(Ordering::Relaxed), 1);
    // The store now holds the fresh session: the next run needs no NTS-KE.
    let (out, json) = query(ke_port, &ca, &store);
    assert!(out.status.success(), "{}", text_of(&out));
    assert_eq!(json["nts"]["ke_exchanges"], 0, "{json}");
    assert_eq!(json["nts"]["stored_session_dropped"], false, "{json}");

    // Without --json the drop is said in words.
    std::fs::remove_file(dir.path("cookies")).expect("rm");
    let (out, _) = query(ke_port, &ca, &store);
    assert!(out.status.success(), "{}", text_of(&out));
    drop(second);
    let _third = Serve::start_named(&dir, "third", &config("keys-third"));
    let out = authtime(&[
        "query",
        "--nts",
        &format!("localhost:{ke_port}"),
        "--ca",
        &ca,
        "--cookie-store",
        &store,
        "--timeout",
        "1",
    ]);
    assert!(out.status.success(), "{}", text_of(&out));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("got no reply and was dropped"),
        "{}",
        text_of(&out)
    );
    assert!(relay.forwarded.load(Ordering::Relaxed) >= 4);
}

#[test]
fn a_fresh_session_after_a_dropped_one_is_not_retried_and_the_store_is_emptied() {
    let dir = TempDir::new("nts-cookie-store-dead");
    nts_cert(&dir, "nts", &[]);
    let (ntp_port, ke_port) = (free_udp_port(), free_tcp_port());
    // NTS-KE names an NTP port where nothing answers (a UDP socket held
    // open and never read: no ICMP refusal either).
    let silent = UdpSocket::bind("127.0.0.1:0").expect("silent port");
    let config = format!(
        "[ntp]\nlisten = [\"127.0.0.1:{ntp_port}\"]\nworkers = 1\n\
         [nts-ke]\nlisten = [\"127.0.0.1:{ke_port}\"]\ncertificate-chain = \"nts-chain.pem\"\n\
         private-key = \"nts-key.pem\"\nworkers = 1\nntp-server = \"127.0.0.1\"\n\
         ntp-port = {}\n[keystore]\npath = \"keys\"\n",
        silent.local_addr().expect("addr").port()
    );
    let serve = Serve::start(&dir, &config);
    let ca = dir.path("nts-ca.pem").display().to_string();
    let store = dir.path("cookies").display().to_string();
    // A fresh session that gets no reply: one NTS-KE, no retry.
    let (out, json) = query(ke_port, &ca, &store);
    assert_eq!(out.status.code(), Some(3), "{}", text_of(&out));
    assert_eq!(json["nts"]["ke_exchanges"], 1, "{json}");
    assert_eq!(json["nts"]["stored_session_dropped"], false, "{json}");
    assert!(dir.path("cookies").exists());
    // Its stored session is silent too: dropped, NTS-KE once more, silent
    // again; reported, and the store keeps the fresh session's cookies.
    let (out, json) = query(ke_port, &ca, &store);
    assert_eq!(out.status.code(), Some(3), "{}", text_of(&out));
    assert_eq!(json["nts"]["ke_exchanges"], 1, "{json}");
    assert_eq!(json["nts"]["stored_session_dropped"], true, "{json}");
    let reason = json["replies"][0]["reason"].as_str().unwrap_or_default();
    assert!(
        reason.contains("neither to the stored NTS session (dropped) nor to a fresh one"),
        "{json}"
    );
    assert!(dir.path("cookies").exists());
    // No NTS-KE server any more: the silent stored session is dropped and,
    // with nothing in its place, removed from the store.
    drop(serve);
    let (out, json) = query(ke_port, &ca, &store);
    assert_eq!(out.status.code(), Some(3), "{}", text_of(&out));
    assert_eq!(json["nts"]["stored_session_dropped"], true, "{json}");
    assert!(!dir.path("cookies").exists(), "{json}");
}

#[test]
fn a_root_distance_over_maxdist_is_unfit_plain_and_with_nts() {
    let dir = TempDir::new("root-distance");
    nts_cert(&dir, "nts", &[]);
    // NTPsec's announcement right after it syncs to its local clock.
    let serve = Serve::start(
        &dir,
        "[ntp]\nlisten = [\"127.0.0.1:0\"]\nworkers = 1\n[nts-ke]\nlisten = [\"127.0.0.1:0\"]\n\
         certificate-chain = \"nts-chain.pem\"\nprivate-key = \"nts-key.pem\"\nworkers = 1\n\
         [keystore]\npath = \"keys\"\n\
         [clock]\nsource = \"static\"\nstratum = 2\nreference-id = \"192.0.2.1\"\n\
         root-dispersion = 7.95\n",
    );
    let ntp = serve.addr.to_string();
    let ke = format!("localhost:{}", serve.nts_ke.expect("ke").port());
    let ca = dir.path("nts-ca.pem").display().to_string();
    for args in [
        vec!["query", &ntp, "--json"],
        vec!["query", "--nts", &ke, "--ca", &ca, "--json"],
    ] {
        let out = authtime(&args);
        assert_eq!(out.status.code(), Some(3), "{}", text_of(&out));
        let json: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
        let reply = &json["replies"][0];
        assert_eq!(reply["error"], "root_distance_too_large", "{json}");
        assert_eq!(reply["answered"], true, "{json}");
        assert_eq!(reply["max_root_distance"], 1.5, "{json}");
        let distance = reply["root_distance"].as_f64().expect("distance");
        assert!((7.95..8.0).contains(&distance), "{json}");
    }
    let out = authtime(&["query", &ntp]);
    assert_eq!(out.status.code(), Some(3), "{}", text_of(&out));
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("exceeds RFC 5905's MAXDIST of 1.5 s"),
        "{}",
        text_of(&out)
    );
}
