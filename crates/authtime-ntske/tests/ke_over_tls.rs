//! KeServer and KeClient over real TLS on loopback: keys, cookies, limits, reload.

mod common;

use std::sync::Arc;
use std::time::Duration;

use authtime_ntske::client::KeClientError;
use authtime_ntske::client_core::ResponseError;
use authtime_ntske::message::decode_message;
use authtime_ntske::tls_config::client_config;
use authtime_ntske::{KeClient, MessageLimits, Record};
use common::{TempDir, certs, config, eventually, start};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

const T: Duration = Duration::from_secs(3);

#[tokio::test]
async fn self_signed_dns_certificate_gives_identical_keys_and_eight_cookies() {
    let dir = TempDir::new("dns");
    certs::self_signed(&["localhost"]).write_to(dir.path());
    let server = start(config(dir.path())).await;

    let client = KeClient::new(Some(&dir.path().join("trust.pem"))).expect("client");
    let out = client
        .fetch("localhost", server.addr.port(), T)
        .await
        .expect("key exchange");

    assert_eq!(out.aead_id, 15);
    assert_eq!(out.cookies.len(), 8);
    assert_eq!(out.keys.c2s.len(), 32);
    assert_ne!(out.keys.c2s, out.keys.s2c);
    let seen = server.issuer.seen.lock().expect("lock").clone();
    assert_eq!(seen.len(), 1);
    let (aead, c2s, s2c) = &seen[0];
    assert_eq!(
        (*aead, &c2s[..], &s2c[..]),
        (15, &out.keys.c2s[..], &out.keys.s2c[..])
    );
    // Cookie = aead | index | c2s | s2c (RecordingIssuer), in order.
    assert_eq!(out.cookies[7][2], 7);
    assert_eq!(&out.cookies[0][3..35], &out.keys.c2s[..]);
    assert_eq!(out.ntp_server, "127.0.0.1");
    assert_eq!(out.ntp_port, 123);
    assert!(out.elapsed >= out.handshake_elapsed);

    let m = server.handle.metrics();
    assert_eq!(m.handshakes_ok, 1);
    assert_eq!(m.cookies_issued, 8);
    assert_eq!(m.latency_count, 1);
    server.stop().await;
}

#[tokio::test]
async fn ca_signed_ip_address_certificate_and_negotiated_records() {
    let dir = TempDir::new("ip");
    certs::ca_signed(&["127.0.0.1"]).write_to(dir.path());
    let mut cfg = config(dir.path());
    cfg.core.aead_algorithms = vec![15, 17, 30];
    cfg.core.ntp_server = Some("ntp.example.org".into());
    cfg.core.ntp_port = Some(11123);
    let server = start(cfg).await;

    let client = KeClient::new(Some(&dir.path().join("trust.pem")))
        .expect("client")
        .with_aead_preference(vec![30, 15]);
    let out = client
        .fetch("127.0.0.1", server.addr.port(), T)
        .await
        .expect("key exchange");
    assert_eq!(out.aead_id, 30);
    assert_eq!(out.keys.c2s.len(), 16);
    assert_eq!(out.ntp_server, "ntp.example.org");
    assert_eq!(out.ntp_port, 11123);
    let seen = server.issuer.seen.lock().expect("lock").clone();
    assert_eq!(seen[0].1, out.keys.c2s.to_vec());
    assert_eq!(seen[0].2, out.keys.s2c.to_vec());
    server.stop().await;
}

#[tokio::test]
async fn ipv6_literal_with_brackets() {
    let dir = TempDir::new("v6");
    certs::self_signed(&["::1"]).write_to(dir.path());
    let mut cfg = config(dir.path());
    cfg.listen = vec!["[::1]:0".parse().expect("addr")];
    let issuer = Arc::new(common::RecordingIssuer::default());
    let Ok(server) = authtime_ntske::KeServer::bind(cfg, issuer).await else {
        eprintln!("no IPv6 loopback here; skipping");
        return;
    };
    let port = server.local_addrs()[0].port();
    let handle = server.handle();
    let task = tokio::spawn(server.run());
    let client = KeClient::new(Some(&dir.path().join("trust.pem"))).expect("client");
    let out = client.fetch("[::1]", port, T).await.expect("key exchange");
    assert_eq!(out.ntp_server, "::1");
    handle.shutdown();
    task.await.expect("server task");
}

#[tokio::test]
async fn wrong_trust_anchor_and_missing_alpn_fail() {
    let dir = TempDir::new("trust");
    certs::self_signed(&["localhost"]).write_to(dir.path());
    let other = TempDir::new("other");
    certs::self_signed(&["localhost"]).write_to(other.path());
    let server = start(config(dir.path())).await;

    let wrong = KeClient::new(Some(&other.path().join("trust.pem"))).expect("client");
    let err = wrong
        .fetch("localhost", server.addr.port(), T)
        .await
        .expect_err("untrusted");
    assert!(matches!(err, KeClientError::Handshake(_)), "{err}");

    let mut no_alpn = (*client_config(Some(&dir.path().join("trust.pem"))).expect("cfg")).clone();
    no_alpn.alpn_protocols.clear();
    let client = KeClient::from_config(Arc::new(no_alpn));
    let err = client
        .fetch("localhost", server.addr.port(), T)
        .await
        .expect_err("no ALPN");
    assert!(matches!(err, KeClientError::NoAlpn), "{err}");

    let h = server.handle.clone();
    assert!(
        eventually(T, || h.metrics().tls_errors == 2).await,
        "{:?}",
        h.metrics()
    );
    server.stop().await;
}

#[tokio::test]
async fn no_common_aead_is_reported() {
    let dir = TempDir::new("aead");
    certs::self_signed(&["localhost"]).write_to(dir.path());
    let mut cfg = config(dir.path());
    cfg.core.aead_algorithms = vec![17];
    let server = start(cfg).await;
    let client = KeClient::new(Some(&dir.path().join("trust.pem")))
        .expect("client")
        .with_aead_preference(vec![15]);
    let err = client
        .fetch("localhost", server.addr.port(), T)
        .await
        .expect_err("no AEAD");
    assert!(
        matches!(err, KeClientError::Response(ResponseError::NoCommonAead)),
        "{err}"
    );
    let h = server.handle.clone();
    assert!(eventually(T, || h.metrics().no_common_algorithm == 1).await);
    server.stop().await;
}

#[tokio::test]
async fn connection_cap_refuses_the_extra_connection_and_recovers() {
    let dir = TempDir::new("cap");
    certs::self_signed(&["localhost"]).write_to(dir.path());
    let mut cfg = config(dir.path());
    cfg.max_connections = 2;
    cfg.handshake_timeout = Duration::from_secs(5);
    cfg.session_timeout = Duration::from_secs(5);
    let server = start(cfg).await;
    let h = server.handle.clone();

    let idle1 = TcpStream::connect(server.addr).await.expect("connect");
    let idle2 = TcpStream::connect(server.addr).await.expect("connect");
    assert!(eventually(T, || h.active_connections() == 2).await);

    let mut third = TcpStream::connect(server.addr).await.expect("connect");
    let mut byte = [0u8; 1];
    let read = tokio::time::timeout(T, third.read(&mut byte))
        .await
        .expect("closed at once");
    assert!(matches!(read, Ok(0) | Err(_)), "{read:?}");
    assert_eq!(h.metrics().refused_at_cap, 1);

    drop(idle1);
    drop(idle2);
    assert!(eventually(T, || h.active_connections() == 0).await);
    let client = KeClient::new(Some(&dir.path().join("trust.pem"))).expect("client");
    client
        .fetch("localhost", server.addr.port(), T)
        .await
        .expect("serves again");
    server.stop().await;
}

#[tokio::test]
async fn idle_connection_is_closed_at_the_handshake_timeout() {
    let dir = TempDir::new("idle");
    certs::self_signed(&["localhost"]).write_to(dir.path());
    let mut cfg = config(dir.path());
    cfg.handshake_timeout = Duration::from_millis(200);
    cfg.session_timeout = Duration::from_millis(400);
    let server = start(cfg).await;

    let started = std::time::Instant::now();
    let mut idle = TcpStream::connect(server.addr).await.expect("connect");
    let mut byte = [0u8; 1];
    let read = tokio::time::timeout(T, idle.read(&mut byte))
        .await
        .expect("closed by server");
    assert!(matches!(read, Ok(0) | Err(_)));
    assert!(started.elapsed() < Duration::from_secs(2));
    let h = server.handle.clone();
    assert!(eventually(T, || h.metrics().timeouts == 1).await);
    server.stop().await;
}

#[tokio::test]
async fn stalled_request_gets_bad_request_at_the_session_timeout() {
    let dir = TempDir::new("slow");
    certs::self_signed(&["localhost"]).write_to(dir.path());
    let mut cfg = config(dir.path());
    // The session timeout runs from the accept, through the TLS handshake
    // and the first write: long enough for both on a busy machine.
    cfg.session_timeout = Duration::from_secs(2);
    let server = start(cfg).await;

    let tls_config = client_config(Some(&dir.path().join("trust.pem"))).expect("cfg");
    let tcp = TcpStream::connect(server.addr).await.expect("connect");
    let name = rustls_pki_types::ServerName::try_from("localhost").expect("name");
    let mut tls = tokio_rustls::TlsConnector::from(tls_config)
        .connect(name, tcp)
        .await
        .expect("handshake");
    // Half a Next Protocol record, then silence.
    tls.write_all(&[0x80, 0x01, 0x00]).await.expect("write");
    tls.flush().await.expect("flush");
    let mut response = Vec::new();
    let _ = tokio::time::timeout(Duration::from_secs(10), tls.read_to_end(&mut response))
        .await
        .expect("server ends it");
    let records = decode_message(&response, MessageLimits::RESPONSE).expect("a message");
    assert_eq!(records, vec![Record::Error(1), Record::EndOfMessage]);
    let h = server.handle.clone();
    assert!(eventually(T, || h.metrics().timeouts == 1).await);
    server.stop().await;
}

#[tokio::test]
async fn malformed_request_over_tls_gets_error_record() {
    let dir = TempDir::new("bad");
    certs::self_signed(&["localhost"]).write_to(dir.path());
    let server = start(config(dir.path())).await;
    let tls_config = client_config(Some(&dir.path().join("trust.pem"))).expect("cfg");
    let tcp = TcpStream::connect(server.addr).await.expect("connect");
    let name = rustls_pki_types::ServerName::try_from("localhost").expect("name");
    let mut tls = tokio_rustls::TlsConnector::from(tls_config)
        .connect(name, tcp)
        .await
        .expect("handshake");
    // Unknown critical record type 0x1234, then End of Message.
    tls.write_all(&[0x92, 0x34, 0, 0, 0x80, 0, 0, 0])
        .await
        .expect("write");
    let mut response = Vec::new();
    let _ = tokio::time::timeout(T, tls.read_to_end(&mut response))
        .await
        .expect("answer");
    let records = decode_message(&response, MessageLimits::RESPONSE).expect("a message");
    assert_eq!(records, vec![Record::Error(0), Record::EndOfMessage]);
    assert!(
        eventually(T, || server.handle.metrics().bad_requests == 1).await,
        "{:?}",
        server.handle.metrics()
    );
    server.stop().await;
}

#[tokio::test]
async fn certificate_reload_by_call_and_by_polling() {
    let dir = TempDir::new("reload");
    let first = certs::self_signed(&["localhost"]);
    first.write_to(dir.path());
    let mut cfg = config(dir.path());
    cfg.reload_poll_interval = Some(Duration::from_millis(100));
    let server = start(cfg).await;
    let port = server.addr.port();
    let trust_dir = TempDir::new("reload-trust");
    let trust = |name: &str, pem: &str| {
        let p = trust_dir.path().join(name);
        std::fs::write(&p, pem).expect("write trust");
        KeClient::new(Some(&p)).expect("client")
    };
    let client1 = trust("1.pem", &first.trust);
    client1
        .fetch("localhost", port, T)
        .await
        .expect("first cert");

    // A failed reload keeps the old certificate.
    std::fs::write(dir.path().join("chain.pem"), "not a certificate").expect("write");
    assert!(server.handle.reload().is_err());
    client1
        .fetch("localhost", port, T)
        .await
        .expect("old cert kept");
    assert!(server.handle.metrics().reload_failures >= 1);

    // Explicit reload (SIGHUP path).
    let second = certs::self_signed(&["localhost"]);
    second.write_to(dir.path());
    server.handle.reload().expect("reload");
    let client2 = trust("2.pem", &second.trust);
    client2
        .fetch("localhost", port, T)
        .await
        .expect("second cert");
    assert!(client1.fetch("localhost", port, T).await.is_err());

    // Polling notices replaced files by themselves.
    let third = certs::self_signed(&["localhost"]);
    third.write_to(dir.path());
    let client3 = trust("3.pem", &third.trust);
    let mut ok = false;
    for _ in 0..50 {
        if client3.fetch("localhost", port, T).await.is_ok() {
            ok = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(ok, "polling picked up the third certificate");
    server.stop().await;
}

#[tokio::test]
async fn request_split_into_one_byte_tls_records_is_served() {
    let dir = TempDir::new("split");
    certs::self_signed(&["localhost"]).write_to(dir.path());
    let server = start(config(dir.path())).await;
    let tls_config = client_config(Some(&dir.path().join("trust.pem"))).expect("cfg");
    let tcp = TcpStream::connect(server.addr).await.expect("connect");
    tcp.set_nodelay(true).expect("nodelay");
    let name = rustls_pki_types::ServerName::try_from("localhost").expect("name");
    let mut tls = tokio_rustls::TlsConnector::from(tls_config)
        .connect(name, tcp)
        .await
        .expect("handshake");
    let request = authtime_ntske::client_core::build_request(&[15]).expect("request");
    for byte in &request {
        // Each flush ends a TLS record, so the server sees one byte per read.
        tls.write_all(std::slice::from_ref(byte))
            .await
            .expect("write");
        tls.flush().await.expect("flush");
    }
    let mut response = Vec::new();
    let _ = tokio::time::timeout(T, tls.read_to_end(&mut response))
        .await
        .expect("answer");
    let session =
        authtime_ntske::client_core::parse_response(&response, &[15]).expect("valid response");
    assert_eq!(session.cookies.len(), 8);
    server.stop().await;
}

/// The load generator's configuration remembers a chain it checked, but
/// only for that chain and that name: another (untrusted) certificate for
/// the same name, or the trusted chain under another name, is still refused.
#[tokio::test]
async fn load_generator_config_remembers_only_the_chain_and_name_it_checked() {
    use authtime_ntske::tls_config::load_generator_client_config;
    let dir = TempDir::new("gen-trusted");
    certs::ca_signed(&["localhost"]).write_to(dir.path());
    let other = TempDir::new("gen-untrusted");
    certs::self_signed(&["localhost"]).write_to(other.path());
    let trusted = start(config(dir.path())).await;
    let untrusted = start(config(other.path())).await;

    let tls = load_generator_client_config(Some(&dir.path().join("trust.pem"))).expect("config");
    let client = KeClient::from_config(tls);
    for _ in 0..3 {
        let out = client
            .fetch_at(trusted.addr, "localhost", T)
            .await
            .expect("trusted chain");
        assert_eq!(out.cookies.len(), 8);
    }
    let err = client
        .fetch_at(untrusted.addr, "localhost", T)
        .await
        .expect_err("untrusted chain, same name");
    assert!(matches!(err, KeClientError::Handshake(_)), "{err}");
    let err = client
        .fetch_at(trusted.addr, "other.example", T)
        .await
        .expect_err("trusted chain, wrong name");
    assert!(matches!(err, KeClientError::Handshake(_)), "{err}");
    trusted.stop().await;
    untrusted.stop().await;
}
