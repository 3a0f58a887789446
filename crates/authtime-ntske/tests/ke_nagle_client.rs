//! An NTS-KE client that leaves Nagle on (NTPsec's does) against KeServer.
//!
//! Such a client sends its TLS Finished, then holds its small request until
//! that Finished is acknowledged. A server with nothing to send after the
//! handshake leaves the ACK to the kernel's delayed-ACK timer (about 40 ms on
//! Linux), and every key exchange took that long. KeServer sends one TLS 1.3
//! session ticket as soon as it has the client's Finished, and the ticket
//! carries the ACK. The test asserts the structure (one ticket per handshake,
//! received before the response) and only records the times: the machines
//! are shared, so a bound on them would be a flaky test.
//!
//! `AUTHTIME_NAGLE_RUNS=20 cargo test -p authtime-ntske --test ke_nagle_client -- --nocapture`
//! prints the median of 20 key exchanges.

mod common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use authtime_ntske::client_core::{build_request, parse_response};
use authtime_ntske::tls_config::client_config;
use common::{TempDir, certs, config, start};
use rustls::client::{ClientSessionMemoryCache, ClientSessionStore, Resumption};
use rustls_pki_types::ServerName;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

const T: Duration = Duration::from_secs(3);

/// A session store that counts the TLS 1.3 tickets it was given and never
/// hands one out, so every handshake is a full one.
#[derive(Debug)]
struct TicketCounter {
    inner: ClientSessionMemoryCache,
    tickets: AtomicUsize,
}

impl ClientSessionStore for TicketCounter {
    fn set_kx_hint(&self, name: ServerName<'static>, group: rustls::NamedGroup) {
        self.inner.set_kx_hint(name, group);
    }
    fn kx_hint(&self, name: &ServerName<'_>) -> Option<rustls::NamedGroup> {
        self.inner.kx_hint(name)
    }
    fn set_tls12_session(
        &self,
        name: ServerName<'static>,
        value: rustls::client::Tls12ClientSessionValue,
    ) {
        self.inner.set_tls12_session(name, value);
    }
    fn tls12_session(
        &self,
        _name: &ServerName<'_>,
    ) -> Option<rustls::client::Tls12ClientSessionValue> {
        None
    }
    fn remove_tls12_session(&self, name: &ServerName<'static>) {
        self.inner.remove_tls12_session(name);
    }
    fn insert_tls13_ticket(
        &self,
        _name: ServerName<'static>,
        _value: rustls::client::Tls13ClientSessionValue,
    ) {
        self.tickets.fetch_add(1, Ordering::SeqCst);
    }
    fn take_tls13_ticket(
        &self,
        _name: &ServerName<'static>,
    ) -> Option<rustls::client::Tls13ClientSessionValue> {
        None
    }
}

fn median_ms(times: &mut [Duration]) -> f64 {
    times.sort();
    times[times.len() / 2].as_secs_f64() * 1e3
}

#[tokio::test]
async fn a_nagle_on_client_gets_a_ticket_that_acknowledges_its_finished() {
    let runs: usize = std::env::var("AUTHTIME_NAGLE_RUNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(7);
    let dir = TempDir::new("nagle");
    certs::ca_signed(&["localhost"]).write_to(dir.path());
    let server = start(config(dir.path())).await;
    let counter = Arc::new(TicketCounter {
        inner: ClientSessionMemoryCache::new(4),
        tickets: AtomicUsize::new(0),
    });
    let mut tls = (*client_config(Some(&dir.path().join("trust.pem"))).expect("config")).clone();
    tls.resumption = Resumption::store(counter.clone());
    let connector = tokio_rustls::TlsConnector::from(Arc::new(tls));
    let request = build_request(&[15]).expect("request");
    let times = Mutex::new(Vec::new());

    for run in 0..runs {
        let started = Instant::now();
        // Nagle stays on: no set_nodelay.
        let tcp = TcpStream::connect(server.addr).await.expect("connect");
        assert!(!tcp.nodelay().expect("nodelay"));
        let name = ServerName::try_from("localhost").expect("name");
        let mut stream = connector.connect(name, tcp).await.expect("handshake");
        stream.write_all(&request).await.expect("write");
        stream.flush().await.expect("flush");
        let mut response = Vec::new();
        tokio::time::timeout(T, stream.read_to_end(&mut response))
            .await
            .expect("answer in time")
            .expect("answer");
        times.lock().expect("lock").push(started.elapsed());
        let session = parse_response(&response, &[15]).expect("valid response");
        assert_eq!(session.cookies.len(), 8);
        // The ticket came in the server's first flight after the handshake,
        // ahead of the response.
        assert_eq!(counter.tickets.load(Ordering::SeqCst), run + 1);
    }
    let mut times = times.into_inner().expect("lock");
    eprintln!(
        "Nagle-on client, {runs} NTS-KE exchanges on loopback: median {:.2} ms, max {:.2} ms",
        median_ms(&mut times),
        times.last().map_or(0.0, |d| d.as_secs_f64() * 1e3)
    );
    assert_eq!(server.handle.metrics().handshakes_ok, runs as u64);
    server.stop().await;
}
