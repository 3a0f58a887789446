//! The NTS-KE load balancer over real TLS on loopback, with fake pool members
//! (tokio-rustls servers speaking the member side of
//! draft-ietf-ntp-nts-keyexchange-pool-00) whose behaviour each test picks:
//! the keys the member receives are the client's own, a failure after the keys
//! were sent is not retried elsewhere, a failed connect is.

mod common;

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use authtime_ntske::balancer::{BackendConfig, BalancerConfig};
use authtime_ntske::client::KeClientError;
use authtime_ntske::client_core::ResponseError;
use authtime_ntske::message::{MessageLimits, MessageReader, Progress};
use authtime_ntske::pool_client::PoolToken;
use authtime_ntske::pool_client_io::{BackendEndpoint, tls_server_name};
use authtime_ntske::pool_record::{AlgorithmDescription, PoolRecord};
use authtime_ntske::record::encode_records;
use authtime_ntske::tls_config::{client_config, server_config_from_files};
use authtime_ntske::{Balancer, KeClient, KeResponder, KeServer, Record};
use common::{TempDir, certs, config};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;
use tokio_rustls::TlsAcceptor;

const T: Duration = Duration::from_secs(3);
const TOKEN: &str = "tok-1";

/// What a fake member does with a Fixed Key Request.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Behaviour {
    /// 8 cookies `c2s | s2c`, no Server or Port record.
    Cookies,
    /// Error record, Internal Server Error.
    Refuse,
    /// Never answers (holds the connection).
    Hang,
}

struct Member {
    addr: SocketAddr,
    fixed_key_requests: Arc<AtomicUsize>,
    task: tokio::task::JoinHandle<()>,
}

/// A fake member on 127.0.0.1 with the certificate files of `dir`.
async fn member(dir: &std::path::Path, behaviour: Behaviour) -> Member {
    let tls = server_config_from_files(&dir.join("chain.pem"), &dir.join("key.pem")).expect("tls");
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("addr");
    let fixed_key_requests = Arc::new(AtomicUsize::new(0));
    let count = fixed_key_requests.clone();
    let task = tokio::spawn(async move {
        loop {
            let Ok((tcp, _)) = listener.accept().await else {
                return;
            };
            let acceptor = TlsAcceptor::from(tls.clone());
            let count = count.clone();
            tokio::spawn(async move {
                let Ok(mut tls) = acceptor.accept(tcp).await else {
                    return;
                };
                let mut reader = MessageReader::new(MessageLimits::REQUEST);
                let mut buf = [0u8; 4096];
                loop {
                    let Ok(n) = tls.read(&mut buf).await else {
                        return;
                    };
                    if n == 0 || reader.feed(&buf[..n]) != Ok(Progress::NeedMore) {
                        break;
                    }
                }
                let Ok(records) = reader.finish() else { return };
                let token_ok = records.iter().any(|r| {
                    matches!(&PoolRecord::from_record(r), Some(Ok(PoolRecord::Authentication(t))) if t == TOKEN)
                });
                let fixed = records
                    .iter()
                    .find_map(|r| match &PoolRecord::from_record(r) {
                        Some(Ok(PoolRecord::FixedKey { c2s, s2c })) => {
                            Some((c2s.clone(), s2c.clone()))
                        }
                        _ => None,
                    });
                let answer = match (token_ok, fixed) {
                    (false, _) => vec![Record::Error(1), Record::EndOfMessage],
                    (true, None) => vec![
                        PoolRecord::SupportedAlgorithms(vec![
                            AlgorithmDescription {
                                aead_id: 15,
                                key_len: 32,
                            },
                            AlgorithmDescription {
                                aead_id: 17,
                                key_len: 64,
                            },
                        ])
                        .to_record(),
                        PoolRecord::SupportedNextProtocols(vec![0]).to_record(),
                        Record::EndOfMessage,
                    ],
                    (true, Some((c2s, s2c))) => {
                        count.fetch_add(1, Ordering::SeqCst);
                        match behaviour {
                            Behaviour::Refuse => vec![Record::Error(2), Record::EndOfMessage],
                            Behaviour::Hang => {
                                tokio::time::sleep(Duration::from_secs(30)).await;
                                return;
                            }
                            Behaviour::Cookies => {
                                let aead = records
                                    .iter()
                                    .find_map(|r| match r {
                                        Record::AeadAlgorithm(a) => a.first().copied(),
                                        _ => None,
                                    })
                                    .unwrap_or(0);
                                let mut out = vec![
                                    Record::NextProtocol(vec![0]),
                                    Record::AeadAlgorithm(vec![aead]),
                                ];
                                for _ in 0..8 {
                                    out.push(Record::NewCookie(
                                        [c2s.clone(), s2c.clone()].concat(),
                                    ));
                                }
                                out.push(Record::EndOfMessage);
                                out
                            }
                        }
                    }
                };
                let bytes = encode_records(&answer).expect("encode");
                let _ = tls.write_all(&bytes).await;
                let _ = tls.shutdown().await;
            });
        }
    });
    Member {
        addr,
        fixed_key_requests,
        task,
    }
}

fn backend(dir: &std::path::Path, name: &str, m: &Member, weight: u32) -> BackendConfig {
    BackendConfig {
        name: name.to_owned(),
        endpoint: BackendEndpoint {
            host: "127.0.0.1".into(),
            port: m.addr.port(),
            tls_name: tls_server_name("127.0.0.1").expect("name"),
            tls: client_config(Some(&dir.join("trust.pem"))).expect("client tls"),
        },
        token: PoolToken::new(TOKEN).expect("token"),
        weight,
        ntp_port: Some(11123),
    }
}

struct Kelb {
    addr: SocketAddr,
    balancer: Arc<Balancer>,
    handle: authtime_ntske::KeServerHandle,
}

/// A KELB on 127.0.0.1 whose backends were checked once.
async fn kelb(dir: &std::path::Path, backends: Vec<BackendConfig>) -> Kelb {
    kelb_with(dir, backends, Duration::from_secs(2)).await
}

/// [`kelb`] with a session timeout.
async fn kelb_with(
    dir: &std::path::Path,
    backends: Vec<BackendConfig>,
    session_timeout: Duration,
) -> Kelb {
    let balancer = Arc::new(
        Balancer::new(BalancerConfig {
            backends,
            check_interval: Duration::from_secs(3600),
            timeout: Duration::from_secs(1),
            aead_algorithms: Vec::new(),
        })
        .expect("balancer"),
    );
    balancer.check_all().await;
    let mut config = config(dir);
    config.session_timeout = session_timeout;
    let server = KeServer::bind_responder(config, KeResponder::Balancer(balancer.clone()))
        .await
        .expect("bind");
    let addr = server.local_addrs()[0];
    let handle = server.handle();
    tokio::spawn(server.run());
    Kelb {
        addr,
        balancer,
        handle,
    }
}

fn client(dir: &std::path::Path) -> KeClient {
    KeClient::new(Some(&dir.join("trust.pem"))).expect("client")
}

#[tokio::test]
async fn the_member_gets_the_clients_own_keys_and_the_client_its_cookies() {
    let dir = TempDir::new("kelb-keys");
    certs::ca_signed(&["127.0.0.1"]).write_to(dir.path());
    let m = member(dir.path(), Behaviour::Cookies).await;
    let kelb = kelb(
        dir.path(),
        vec![backend(dir.path(), "ntp1.example.net", &m, 1)],
    )
    .await;
    assert!(kelb.balancer.metrics().backends[0].up);
    for aead in [15u16, 17] {
        let out = client(dir.path())
            .with_aead_preference(vec![aead])
            .fetch("127.0.0.1", kelb.addr.port(), T)
            .await
            .expect("key exchange through the KELB");
        assert_eq!(out.aead_id, aead);
        assert_eq!(out.cookies.len(), 8);
        // The member's cookie is c2s | s2c as it received them: the client's keys.
        let keys = [out.keys.c2s.to_vec(), out.keys.s2c.to_vec()].concat();
        assert_eq!(out.cookies[0], keys);
        assert_eq!(out.ntp_server, "ntp1.example.net");
        assert_eq!(out.ntp_port, 11123);
    }
    let m_snapshot = kelb.balancer.metrics();
    assert_eq!(m_snapshot.backends[0].ok, 2);
    assert_eq!(kelb.handle.metrics().handshakes_ok, 2);
    assert_eq!(kelb.handle.metrics().cookies_issued, 16);
    kelb.handle.shutdown();
    m.task.abort();
}

#[tokio::test]
async fn a_failure_after_the_keys_left_is_not_retried_elsewhere() {
    let dir = TempDir::new("kelb-no-retry");
    certs::ca_signed(&["127.0.0.1"]).write_to(dir.path());
    let refusing = member(dir.path(), Behaviour::Refuse).await;
    let good = member(dir.path(), Behaviour::Cookies).await;
    // Weight 2 against 1: the smooth round-robin picks the refusing member first.
    let kelb = kelb(
        dir.path(),
        vec![
            backend(dir.path(), "a.example", &refusing, 2),
            backend(dir.path(), "b.example", &good, 1),
        ],
    )
    .await;
    let e = client(dir.path())
        .fetch("127.0.0.1", kelb.addr.port(), T)
        .await
        .expect_err("the member refused");
    assert!(
        matches!(e, KeClientError::Response(ResponseError::ServerError(2))),
        "{e}"
    );
    assert_eq!(refusing.fixed_key_requests.load(Ordering::SeqCst), 1);
    assert_eq!(good.fixed_key_requests.load(Ordering::SeqCst), 0);
    let m = kelb.balancer.metrics();
    assert_eq!((m.backends[0].backend_error, m.backends[1].ok), (1, 0));
    // The next client goes to the other member and succeeds.
    let out = client(dir.path())
        .fetch("127.0.0.1", kelb.addr.port(), T)
        .await
        .expect("second client");
    assert_eq!(out.ntp_server, "b.example");
    assert_eq!(good.fixed_key_requests.load(Ordering::SeqCst), 1);
    kelb.handle.shutdown();
    refusing.task.abort();
    good.task.abort();
}

#[tokio::test]
async fn a_failed_connect_is_retried_with_another_member() {
    let dir = TempDir::new("kelb-retry");
    certs::ca_signed(&["127.0.0.1"]).write_to(dir.path());
    let gone = member(dir.path(), Behaviour::Cookies).await;
    let good = member(dir.path(), Behaviour::Cookies).await;
    let kelb = kelb(
        dir.path(),
        vec![
            backend(dir.path(), "a.example", &gone, 5),
            backend(dir.path(), "b.example", &good, 1),
        ],
    )
    .await;
    assert!(kelb.balancer.metrics().backends.iter().all(|b| b.up));
    // Member A stops between its health check and the client.
    gone.task.abort();
    let _ = gone.task.await;
    let out = client(dir.path())
        .fetch("127.0.0.1", kelb.addr.port(), T)
        .await
        .expect("retried with member B");
    assert_eq!(out.ntp_server, "b.example");
    let m = kelb.balancer.metrics();
    assert_eq!(m.backends[0].connect_failed, 1);
    assert!(!m.backends[0].up);
    assert_eq!(m.backends[1].ok, 1);
    // With B stopped too, no backend is left: Internal Server Error at once.
    good.task.abort();
    let _ = good.task.await;
    let e = client(dir.path())
        .fetch("127.0.0.1", kelb.addr.port(), T)
        .await
        .expect_err("no backend");
    assert!(
        matches!(e, KeClientError::Response(ResponseError::ServerError(2))),
        "{e}"
    );
    assert_eq!(
        kelb.balancer.metrics().no_backend,
        1,
        "{:?}",
        kelb.balancer.metrics()
    );
    kelb.handle.shutdown();
}

#[tokio::test]
async fn a_member_that_never_answers_costs_the_client_at_most_the_session_timeout() {
    let dir = TempDir::new("kelb-hang");
    certs::ca_signed(&["127.0.0.1"]).write_to(dir.path());
    let hanging = member(dir.path(), Behaviour::Hang).await;
    let kelb = kelb_with(
        dir.path(),
        vec![backend(dir.path(), "a.example", &hanging, 1)],
        Duration::from_millis(600),
    )
    .await;
    let started = std::time::Instant::now();
    let e = client(dir.path())
        .fetch("127.0.0.1", kelb.addr.port(), T)
        .await
        .expect_err("the member never answered");
    assert!(
        matches!(e, KeClientError::Response(ResponseError::ServerError(2))),
        "{e}"
    );
    assert!(
        started.elapsed() < Duration::from_millis(1500),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(hanging.fixed_key_requests.load(Ordering::SeqCst), 1);
    assert_eq!(kelb.handle.metrics().internal_errors, 1);
    assert_eq!(kelb.balancer.metrics().backends[0].backend_error, 1);
    kelb.handle.shutdown();
    hanging.task.abort();
}

/// Sends `records` to the KELB over TLS and returns the answer's records.
async fn raw_exchange(dir: &std::path::Path, addr: SocketAddr, records: &[Record]) -> Vec<Record> {
    let tls = client_config(Some(&dir.join("trust.pem"))).expect("client tls");
    let tcp = tokio::net::TcpStream::connect(addr).await.expect("connect");
    let mut tls = tokio_rustls::TlsConnector::from(tls)
        .connect(tls_server_name("127.0.0.1").expect("name"), tcp)
        .await
        .expect("handshake");
    tls.write_all(&encode_records(records).expect("encode"))
        .await
        .expect("write");
    tls.flush().await.expect("flush");
    let mut reader = MessageReader::new(MessageLimits::RESPONSE);
    let mut buf = [0u8; 4096];
    loop {
        let n = tokio::time::timeout(T, tls.read(&mut buf))
            .await
            .expect("in time")
            .expect("read");
        if n == 0 || reader.feed(&buf[..n]).expect("valid") == Progress::Complete {
            break;
        }
    }
    reader.finish().expect("one message")
}

#[tokio::test]
async fn a_denied_member_is_skipped_and_pool_records_from_clients_are_refused() {
    let dir = TempDir::new("kelb-deny");
    certs::ca_signed(&["127.0.0.1"]).write_to(dir.path());
    let a = member(dir.path(), Behaviour::Cookies).await;
    let b = member(dir.path(), Behaviour::Cookies).await;
    let kelb = kelb(
        dir.path(),
        vec![
            backend(dir.path(), "a.example", &a, 5),
            backend(dir.path(), "b.example", &b, 1),
        ],
    )
    .await;
    let deny_a = [
        Record::NextProtocol(vec![0]),
        Record::AeadAlgorithm(vec![17, 15]),
        PoolRecord::NtpServerDeny("A.example".into()).to_record(),
        Record::EndOfMessage,
    ];
    for _ in 0..3 {
        let answer = raw_exchange(dir.path(), kelb.addr, &deny_a).await;
        assert!(
            answer.contains(&Record::Server("b.example".into())),
            "{answer:?}"
        );
        assert!(
            answer.contains(&Record::AeadAlgorithm(vec![17])),
            "{answer:?}"
        );
        assert!(answer.contains(&Record::Port(11123)), "{answer:?}");
        assert_eq!(
            answer
                .iter()
                .filter(|r| matches!(r, Record::NewCookie(_)))
                .count(),
            8
        );
    }
    assert_eq!(a.fixed_key_requests.load(Ordering::SeqCst), 0);
    // Denying both: no backend left.
    let mut deny_both = deny_a.to_vec();
    deny_both.insert(2, PoolRecord::NtpServerDeny("b.example".into()).to_record());
    let answer = raw_exchange(dir.path(), kelb.addr, &deny_both).await;
    assert_eq!(answer, [Record::Error(2), Record::EndOfMessage]);
    // A client's Fixed Key Request is an unknown critical record here: Error 0.
    let fixed = [
        Record::NextProtocol(vec![0]),
        Record::AeadAlgorithm(vec![15]),
        PoolRecord::FixedKey {
            c2s: vec![1; 32],
            s2c: vec![2; 32],
        }
        .to_record(),
        Record::EndOfMessage,
    ];
    let answer = raw_exchange(dir.path(), kelb.addr, &fixed).await;
    assert_eq!(answer, [Record::Error(0), Record::EndOfMessage]);
    assert_eq!(
        a.fixed_key_requests.load(Ordering::SeqCst) + b.fixed_key_requests.load(Ordering::SeqCst),
        3
    );
    kelb.handle.shutdown();
    a.task.abort();
    b.task.abort();
}
