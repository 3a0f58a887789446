//! TLS key exchange groups of NTS-KE: authtime's client and server both offer
//! the hybrid post-quantum X25519MLKEM768 first and fall back to the
//! classical groups for peers without it, in either direction.

mod common;

use std::sync::Arc;
use std::time::Duration;

use authtime_ntske::message::{MessageLimits, MessageReader, Progress};
use authtime_ntske::metrics::KEY_EXCHANGE_GROUPS;
use authtime_ntske::tls_config::{
    client_config, key_exchange_groups, load_certificates, load_private_key,
};
use authtime_ntske::{ALPN_NTSKE, KeClient, KeServerCore, ServerCoreConfig};
use common::{RecordingIssuer, TempDir, certs, config, start};
use rustls::crypto::SupportedKxGroup;
use rustls::crypto::aws_lc_rs::{default_provider, kx_group};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

const T: Duration = Duration::from_secs(3);

/// The server's count of handshakes that negotiated `group`.
fn count(snapshot: &authtime_ntske::KeMetricsSnapshot, group: &str) -> u64 {
    let i = KEY_EXCHANGE_GROUPS
        .iter()
        .position(|g| *g == group)
        .expect("a counted group");
    snapshot.key_exchange_groups[i]
}

#[test]
fn the_hybrid_group_comes_first_then_the_classical_ones() {
    let names: Vec<_> = key_exchange_groups().iter().map(|g| g.name()).collect();
    assert_eq!(
        names,
        [
            rustls::NamedGroup::X25519MLKEM768,
            rustls::NamedGroup::X25519,
            rustls::NamedGroup::secp256r1,
            rustls::NamedGroup::secp384r1,
        ]
    );
}

#[tokio::test]
async fn authtime_client_and_server_negotiate_x25519mlkem768() {
    let dir = TempDir::new("pq");
    certs::ca_signed(&["localhost"]).write_to(dir.path());
    let server = start(config(dir.path())).await;
    let client = KeClient::new(Some(&dir.path().join("trust.pem"))).expect("client");
    let out = client
        .fetch("localhost", server.addr.port(), T)
        .await
        .expect("key exchange");
    assert_eq!(out.tls_group, Some("X25519MLKEM768"));
    assert_eq!(out.cookies.len(), 8);
    let m = server.handle.metrics();
    assert_eq!(count(&m, "X25519MLKEM768"), 1);
    assert_eq!(m.key_exchange_groups.iter().sum::<u64>(), 1);
    server.stop().await;
}

/// A client configuration like authtime's, offering only `groups`.
fn client_offering(
    trust: &std::path::Path,
    groups: Vec<&'static dyn SupportedKxGroup>,
) -> Arc<rustls::ClientConfig> {
    let mut provider = default_provider();
    provider.kx_groups = groups;
    let roots = {
        let mut roots = rustls::RootCertStore::empty();
        for cert in load_certificates(trust).expect("trust") {
            roots.add(cert).expect("root");
        }
        roots
    };
    let mut tls = rustls::ClientConfig::builder_with_provider(Arc::new(provider))
        .with_protocol_versions(&[&rustls::version::TLS13])
        .expect("TLS 1.3")
        .with_root_certificates(roots)
        .with_no_client_auth();
    tls.alpn_protocols = vec![ALPN_NTSKE.to_vec()];
    Arc::new(tls)
}

#[tokio::test]
async fn a_client_without_the_hybrid_group_still_gets_keys_from_the_server() {
    let dir = TempDir::new("classical-client");
    certs::ca_signed(&["localhost"]).write_to(dir.path());
    let server = start(config(dir.path())).await;
    let trust = dir.path().join("trust.pem");
    for (group, name) in [
        (kx_group::X25519, "X25519"),
        (kx_group::SECP256R1, "secp256r1"),
    ] {
        let client = KeClient::from_config(client_offering(&trust, vec![group]));
        let out = client
            .fetch("localhost", server.addr.port(), T)
            .await
            .expect("key exchange");
        assert_eq!(out.tls_group, Some(name));
        assert_eq!(out.cookies.len(), 8);
        assert_eq!(count(&server.handle.metrics(), name), 1);
    }
    assert_eq!(count(&server.handle.metrics(), "X25519MLKEM768"), 0);
    server.stop().await;
}

/// Serves one NTS-KE session with a rustls server that offers only `group`.
async fn classical_server(
    dir: &std::path::Path,
    group: &'static dyn SupportedKxGroup,
) -> (u16, tokio::task::JoinHandle<Option<rustls::NamedGroup>>) {
    let mut provider = default_provider();
    provider.kx_groups = vec![group];
    let mut tls = rustls::ServerConfig::builder_with_provider(Arc::new(provider))
        .with_protocol_versions(&[&rustls::version::TLS13])
        .expect("TLS 1.3")
        .with_no_client_auth()
        .with_single_cert(
            load_certificates(&dir.join("chain.pem")).expect("chain"),
            load_private_key(&dir.join("key.pem")).expect("key"),
        )
        .expect("server config");
    tls.alpn_protocols = vec![ALPN_NTSKE.to_vec()];
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(tls));
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let port = listener.local_addr().expect("addr").port();
    let core = KeServerCore::new(
        ServerCoreConfig::default(),
        Arc::new(RecordingIssuer::default()),
    )
    .expect("core");
    let task = tokio::spawn(async move {
        let (tcp, _) = listener.accept().await.expect("accept");
        let mut tls = acceptor.accept(tcp).await.expect("handshake");
        let group = tls
            .get_ref()
            .1
            .negotiated_key_exchange_group()
            .map(|g| g.name());
        let mut reader = MessageReader::new(MessageLimits::REQUEST);
        let mut buf = [0u8; 1024];
        loop {
            let n = tls.read(&mut buf).await.expect("read");
            if n == 0 || reader.feed(&buf[..n]).expect("request") == Progress::Complete {
                break;
            }
        }
        let records = reader.finish().expect("request");
        let response = core.respond_to_records(&records, tls.get_ref().1);
        tls.write_all(&response.bytes).await.expect("write");
        let _ = tls.shutdown().await;
        group
    });
    (port, task)
}

#[tokio::test]
async fn authtime_client_falls_back_for_a_server_without_the_hybrid_group() {
    let dir = TempDir::new("classical-server");
    certs::ca_signed(&["localhost"]).write_to(dir.path());
    let trust = dir.path().join("trust.pem");
    let client = KeClient::from_config(client_config(Some(&trust)).expect("config"));
    // X25519: the client's second key share is accepted at once; secp256r1:
    // the server asks for a share it can use (HelloRetryRequest).
    for (group, name) in [
        (kx_group::X25519, "X25519"),
        (kx_group::SECP256R1, "secp256r1"),
    ] {
        let (port, server) = classical_server(dir.path(), group).await;
        let out = client
            .fetch("localhost", port, T)
            .await
            .expect("key exchange");
        assert_eq!(out.tls_group, Some(name));
        assert_eq!(out.cookies.len(), 8);
        assert_eq!(server.await.expect("server"), Some(group.name()));
    }
}
