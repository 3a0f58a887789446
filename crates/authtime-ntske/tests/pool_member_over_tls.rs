//! A pool member over real TLS on loopback: a load balancer's support query and Fixed
//! Key Request on one kept-alive connection, refusals, token files.

mod common;

use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};
use std::time::Duration;

use authtime_ntske::message::{MessageReader, Progress, decode_message};
use authtime_ntske::pool_member::{PoolOutcome, PoolRequestKind};
use authtime_ntske::pool_record::{AlgorithmDescription, PoolRecord};
use authtime_ntske::record::encode_records;
use authtime_ntske::server::KeServerError;
use authtime_ntske::tls_config::client_config;
use authtime_ntske::{KeServer, MessageLimits, Record};
use common::{RecordingIssuer, TempDir, certs, config, eventually, start};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio_rustls::client::TlsStream;

const T: Duration = Duration::from_secs(5);
const TOKEN: &str = "kelb-shared-secret-1";

fn token_file(dir: &Path, name: &str, token: &str, mode: u32) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, format!("{token}\n")).expect("write token");
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).expect("chmod");
    path
}

async fn connect(dir: &Path, addr: std::net::SocketAddr) -> TlsStream<TcpStream> {
    let tls_config = client_config(Some(&dir.join("trust.pem"))).expect("cfg");
    let tcp = TcpStream::connect(addr).await.expect("connect");
    let name = rustls_pki_types::ServerName::try_from("localhost").expect("name");
    tokio_rustls::TlsConnector::from(tls_config)
        .connect(name, tcp)
        .await
        .expect("handshake")
}

/// Reads exactly one response message from a connection that may stay open.
async fn read_message(tls: &mut TlsStream<TcpStream>) -> Vec<Record> {
    let mut reader = MessageReader::new(MessageLimits::RESPONSE);
    let mut buf = [0u8; 4096];
    loop {
        let n = tokio::time::timeout(T, tls.read(&mut buf))
            .await
            .expect("response in time")
            .expect("read");
        assert!(n > 0, "connection closed before End of Message");
        if reader.feed(&buf[..n]).expect("valid message") == Progress::Complete {
            return reader.finish().expect("complete");
        }
    }
}

/// True when the server closes the connection (after any bytes still due).
async fn closes(tls: &mut TlsStream<TcpStream>) -> bool {
    let mut rest = Vec::new();
    matches!(
        tokio::time::timeout(T, tls.read_to_end(&mut rest)).await,
        Ok(Ok(_))
    ) && rest.is_empty()
}

fn fixed_key_request(token: &str, c2s: &[u8], s2c: &[u8]) -> Vec<u8> {
    encode_records(&[
        PoolRecord::Authentication(token.into()).to_record(),
        Record::NextProtocol(vec![0]),
        Record::AeadAlgorithm(vec![15]),
        PoolRecord::FixedKey {
            c2s: c2s.to_vec(),
            s2c: s2c.to_vec(),
        }
        .to_record(),
        Record::EndOfMessage,
    ])
    .expect("encodable")
}

#[tokio::test]
async fn support_then_fixed_key_on_one_kept_alive_connection() {
    let dir = TempDir::new("pool-member");
    certs::self_signed(&["localhost"]).write_to(dir.path());
    let mut cfg = config(dir.path());
    cfg.pool_token_files = vec![token_file(dir.path(), "token", TOKEN, 0o600)];
    let server = start(cfg).await;
    let mut tls = connect(dir.path(), server.addr).await;

    let support = encode_records(&[
        PoolRecord::Authentication(TOKEN.into()).to_record(),
        PoolRecord::SupportedAlgorithms(vec![]).to_record(),
        PoolRecord::SupportedNextProtocols(vec![]).to_record(),
        PoolRecord::KeepAlive.to_record(),
        Record::EndOfMessage,
    ])
    .expect("encodable");
    tls.write_all(&support).await.expect("write");
    let answer = read_message(&mut tls).await;
    assert_eq!(
        answer,
        vec![
            PoolRecord::SupportedAlgorithms(vec![
                AlgorithmDescription {
                    aead_id: 15,
                    key_len: 32
                },
                AlgorithmDescription {
                    aead_id: 17,
                    key_len: 64
                },
            ])
            .to_record(),
            PoolRecord::SupportedNextProtocols(vec![0]).to_record(),
            PoolRecord::KeepAlive.to_record(),
            Record::EndOfMessage,
        ]
    );

    // Same connection: a Fixed Key Request without Keep Alive.
    let (c2s, s2c) = ([0x11u8; 32], [0x22u8; 32]);
    tls.write_all(&fixed_key_request(TOKEN, &c2s, &s2c))
        .await
        .expect("write");
    let answer = read_message(&mut tls).await;
    assert_eq!(answer[0], Record::NextProtocol(vec![0]));
    assert_eq!(answer[1], Record::AeadAlgorithm(vec![15]));
    let cookies: Vec<_> = answer
        .iter()
        .filter_map(|r| match r {
            Record::NewCookie(c) => Some(c.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(cookies.len(), 8);
    // The recording issuer's cookie is aead | index | c2s | s2c: the fixed keys.
    assert_eq!(&cookies[0][3..35], &c2s);
    assert_eq!(&cookies[0][35..], &s2c);
    assert_eq!(
        *server.issuer.seen.lock().expect("lock"),
        vec![(15, c2s.to_vec(), s2c.to_vec())]
    );
    assert!(!answer.contains(&PoolRecord::KeepAlive.to_record()));
    assert!(
        closes(&mut tls).await,
        "closed after a response without Keep Alive"
    );

    let h = server.handle.clone();
    assert!(
        eventually(T, || {
            let m = h.metrics();
            m.pool_keep_alive_requests == 1
                && m.pool_requests_of(PoolRequestKind::Support, PoolOutcome::Ok) == 1
                && m.pool_requests_of(PoolRequestKind::FixedKey, PoolOutcome::Ok) == 1
                && m.handshakes_ok == 1
                && m.cookies_issued == 8
        })
        .await,
        "{:?}",
        h.metrics()
    );
    server.stop().await;
}

#[tokio::test]
async fn unauthenticated_fixed_key_gets_error_0_and_the_connection_closes() {
    let dir = TempDir::new("pool-unauth");
    certs::self_signed(&["localhost"]).write_to(dir.path());
    let mut cfg = config(dir.path());
    cfg.pool_token_files = vec![token_file(dir.path(), "token", TOKEN, 0o600)];
    let server = start(cfg).await;
    let mut tls = connect(dir.path(), server.addr).await;
    let mut request = fixed_key_request("kelb-shared-secret-2", &[1; 32], &[2; 32]);
    // Ask for Keep Alive too: it must not be granted.
    request.splice(0..0, [0x00, 0x08, 0x00, 0x00]);
    tls.write_all(&request).await.expect("write");
    let mut response = Vec::new();
    tokio::time::timeout(T, tls.read_to_end(&mut response))
        .await
        .expect("closed in time")
        .expect("read");
    assert_eq!(
        decode_message(&response, MessageLimits::RESPONSE).expect("message"),
        vec![Record::Error(0), Record::EndOfMessage]
    );
    assert!(server.issuer.seen.lock().expect("lock").is_empty());
    let h = server.handle.clone();
    assert!(
        eventually(T, || h.metrics().pool_requests_of(
            PoolRequestKind::FixedKey,
            PoolOutcome::NotAuthorized
        ) == 1)
        .await
    );
    server.stop().await;
}

#[tokio::test]
async fn an_ordinary_client_with_a_token_and_keep_alive_gets_one_request() {
    let dir = TempDir::new("pool-plain");
    certs::self_signed(&["localhost"]).write_to(dir.path());
    let mut cfg = config(dir.path());
    cfg.pool_token_files = vec![token_file(dir.path(), "token", TOKEN, 0o600)];
    let server = start(cfg).await;
    let mut tls = connect(dir.path(), server.addr).await;
    let request = encode_records(&[
        PoolRecord::Authentication(TOKEN.into()).to_record(),
        PoolRecord::KeepAlive.to_record(),
        Record::NextProtocol(vec![0]),
        Record::AeadAlgorithm(vec![15]),
        Record::EndOfMessage,
    ])
    .expect("encodable");
    tls.write_all(&request).await.expect("write");
    let mut response = Vec::new();
    tokio::time::timeout(T, tls.read_to_end(&mut response))
        .await
        .expect("closed in time")
        .expect("read");
    let records = decode_message(&response, MessageLimits::RESPONSE).expect("message");
    assert_eq!(
        records
            .iter()
            .filter(|r| matches!(r, Record::NewCookie(_)))
            .count(),
        8
    );
    assert!(!records.contains(&PoolRecord::KeepAlive.to_record()));
    server.stop().await;
}

#[tokio::test]
async fn token_files_are_mode_checked_and_reloaded() {
    let dir = TempDir::new("pool-tokens");
    certs::self_signed(&["localhost"]).write_to(dir.path());
    let mut cfg = config(dir.path());
    let path = token_file(dir.path(), "token", TOKEN, 0o644);
    cfg.pool_token_files = vec![path.clone()];
    let refused = KeServer::bind(cfg.clone(), std::sync::Arc::new(RecordingIssuer::default()))
        .await
        .expect_err("a 0644 token file is refused");
    assert!(matches!(refused, KeServerError::PoolToken(_)));
    let shown = refused.to_string();
    assert!(
        shown.contains("0644") && shown.contains("chmod 600"),
        "{shown}"
    );
    assert!(!shown.contains(TOKEN));

    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).expect("chmod");
    let server = start(cfg).await;
    let support = |token: &str| {
        encode_records(&[
            PoolRecord::Authentication(token.into()).to_record(),
            PoolRecord::SupportedNextProtocols(vec![]).to_record(),
            Record::EndOfMessage,
        ])
        .expect("encodable")
    };
    let ask = |token: &'static str| {
        let dir = dir.path().to_path_buf();
        let addr = server.addr;
        async move {
            let mut tls = connect(&dir, addr).await;
            tls.write_all(&support(token)).await.expect("write");
            let mut response = Vec::new();
            let _ = tokio::time::timeout(T, tls.read_to_end(&mut response)).await;
            decode_message(&response, MessageLimits::RESPONSE).expect("message")
        }
    };
    let ok = vec![
        PoolRecord::SupportedNextProtocols(vec![0]).to_record(),
        Record::EndOfMessage,
    ];
    let refused = vec![Record::Error(0), Record::EndOfMessage];
    assert_eq!(ask(TOKEN).await, ok);
    assert_eq!(ask("rotated-token").await, refused);

    // A failed reload (file made readable by others) keeps the old token.
    token_file(dir.path(), "token", "rotated-token", 0o644);
    assert!(server.handle.reload_pool_tokens().is_err());
    assert_eq!(server.handle.metrics().pool_token_reload_failures, 1);
    assert_eq!(ask(TOKEN).await, ok);

    // A good one replaces it.
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).expect("chmod");
    server.handle.reload().expect("certificate reload");
    assert_eq!(ask("rotated-token").await, ok);
    assert_eq!(ask(TOKEN).await, refused);
    server.stop().await;
}

fn support_keep_alive(token: &str) -> Vec<u8> {
    encode_records(&[
        PoolRecord::Authentication(token.into()).to_record(),
        PoolRecord::SupportedNextProtocols(vec![]).to_record(),
        PoolRecord::KeepAlive.to_record(),
        Record::EndOfMessage,
    ])
    .expect("encodable")
}

#[tokio::test]
async fn kept_alive_connections_end_at_the_cap_on_idle_and_on_a_key_exchange() {
    let dir = TempDir::new("pool-limits");
    certs::self_signed(&["localhost"]).write_to(dir.path());
    let mut cfg = config(dir.path());
    cfg.pool_token_files = vec![token_file(dir.path(), "token", TOKEN, 0o600)];
    cfg.max_requests_per_connection = 3;
    cfg.keep_alive_idle_timeout = Duration::from_millis(300);
    let server = start(cfg).await;
    let ka = PoolRecord::KeepAlive.to_record();

    // The cap: the third request of a connection is answered without Keep Alive.
    let mut tls = connect(dir.path(), server.addr).await;
    for i in 0..3 {
        tls.write_all(&support_keep_alive(TOKEN))
            .await
            .expect("write");
        let answer = read_message(&mut tls).await;
        assert_eq!(answer.contains(&ka), i < 2, "request {i}: {answer:?}");
    }
    assert!(closes(&mut tls).await);

    // Idle: a kept-alive connection without a next request is closed.
    let mut tls = connect(dir.path(), server.addr).await;
    tls.write_all(&support_keep_alive(TOKEN))
        .await
        .expect("write");
    assert!(read_message(&mut tls).await.contains(&ka));
    let started = tokio::time::Instant::now();
    assert!(closes(&mut tls).await);
    assert!(started.elapsed() < Duration::from_secs(3));

    // An ordinary key exchange on a kept-alive connection: Bad Request, closed.
    let mut tls = connect(dir.path(), server.addr).await;
    tls.write_all(&support_keep_alive(TOKEN))
        .await
        .expect("write");
    assert!(read_message(&mut tls).await.contains(&ka));
    let plain = encode_records(&[
        Record::NextProtocol(vec![0]),
        Record::AeadAlgorithm(vec![15]),
        Record::EndOfMessage,
    ])
    .expect("encodable");
    tls.write_all(&plain).await.expect("write");
    assert_eq!(
        read_message(&mut tls).await,
        vec![Record::Error(1), Record::EndOfMessage]
    );
    assert!(closes(&mut tls).await);
    assert!(server.issuer.seen.lock().expect("lock").is_empty());
    let h = server.handle.clone();
    assert!(
        eventually(T, || h.metrics().pool_keep_alive_requests == 3
            && h.active_connections() == 0)
        .await,
        "{:?}",
        h.metrics()
    );
    server.stop().await;
}

#[tokio::test]
async fn token_files_are_reloaded_when_they_change() {
    let dir = TempDir::new("pool-poll");
    certs::self_signed(&["localhost"]).write_to(dir.path());
    let mut cfg = config(dir.path());
    cfg.pool_token_files = vec![token_file(dir.path(), "token", TOKEN, 0o600)];
    cfg.reload_poll_interval = Some(Duration::from_millis(50));
    let server = start(cfg).await;
    let accepted = |token: &'static str| {
        let dir = dir.path().to_path_buf();
        let addr = server.addr;
        async move {
            let mut tls = connect(&dir, addr).await;
            tls.write_all(&support_keep_alive(token))
                .await
                .expect("write");
            let answer = read_message(&mut tls).await;
            answer[0] != Record::Error(0)
        }
    };
    assert!(accepted(TOKEN).await);
    // A different length, so the size changes even if the mtime does not.
    token_file(dir.path(), "token", "a-longer-rotated-token", 0o600);
    let end = tokio::time::Instant::now() + T;
    while !accepted("a-longer-rotated-token").await {
        assert!(tokio::time::Instant::now() < end, "new token not picked up");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(!accepted(TOKEN).await);
    server.stop().await;
}
