//! A minimal HTTP/1.0 endpoint for Prometheus: `GET /metrics` on a plain
//! `TcpListener`, one connection at a time, on its own thread; `GET
//! /clients` gives the top talkers as JSON (`authtime status --server`
//! reads it), the only place client addresses leave the daemon.
//!
//! Requests are read with a size limit and a timeout, so a slow or hostile
//! client holds the thread for at most a few seconds; the endpoint is meant
//! for a loopback or management address.

use std::io::{Read as _, Write as _};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::Duration;

use crate::metrics::Metrics;

const MAX_REQUEST: usize = 8192;
const IO_TIMEOUT: Duration = Duration::from_secs(2);
const ACCEPT_POLL: Duration = Duration::from_millis(50);

/// Binds `addr` and serves `metrics` until `stop` is set.
///
/// # Errors
/// The address cannot be bound.
pub(crate) fn spawn(
    addr: SocketAddr,
    metrics: Arc<Metrics>,
    stop: Arc<AtomicBool>,
) -> std::io::Result<(SocketAddr, JoinHandle<()>)> {
    let listener = TcpListener::bind(addr)?;
    // Non-blocking accept, so that the thread notices `stop`.
    listener.set_nonblocking(true)?;
    let local = listener.local_addr()?;
    let handle = std::thread::Builder::new()
        .name("metrics-http".into())
        .spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                match listener.accept() {
                    Ok((stream, _)) => {
                        if let Err(e) = answer(stream, &metrics) {
                            tracing::debug!(error = %e, "metrics request failed");
                        }
                    }
                    Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                        std::thread::sleep(ACCEPT_POLL);
                    }
                    Err(e) => {
                        tracing::debug!(error = %e, "metrics accept failed");
                        std::thread::sleep(ACCEPT_POLL);
                    }
                }
            }
        })?;
    Ok((local, handle))
}

fn answer(mut stream: TcpStream, metrics: &Metrics) -> std::io::Result<()> {
    stream.set_nonblocking(false)?;
    stream.set_read_timeout(Some(IO_TIMEOUT))?;
    stream.set_write_timeout(Some(IO_TIMEOUT))?;
    let mut request = [0u8; MAX_REQUEST];
    let mut len = 0;
    while !request[..len].windows(4).any(|w| w == b"\r\n\r\n")
        && !request[..len].windows(2).any(|w| w == b"\n\n")
    {
        let n = stream.read(&mut request[len..])?;
        if n == 0 {
            break;
        }
        len += n;
        if len == MAX_REQUEST {
            return respond(
                &mut stream,
                "431 Request Header Fields Too Large",
                "text/plain",
                "",
                false,
            );
        }
    }
    let line = request[..len]
        .split(|&b| b == b'\n')
        .next()
        .unwrap_or_default();
    let mut words = line
        .split(|&b| b == b' ' || b == b'\r')
        .filter(|w| !w.is_empty());
    let (method, target) = (words.next(), words.next());
    let head_only = method == Some(b"HEAD");
    const TEXT: &str = "text/plain; version=0.0.4; charset=utf-8";
    let (status, kind, body) = match (method, target) {
        (Some(b"GET" | b"HEAD"), Some(b"/metrics")) => ("200 OK", TEXT, metrics.render()),
        (Some(b"GET" | b"HEAD"), Some(b"/clients")) => match metrics.clients_json() {
            Some(json) => ("200 OK", "application/json", json),
            None => ("404 Not Found", TEXT, "no client figures kept\n".to_owned()),
        },
        (Some(b"GET" | b"HEAD"), Some(b"/")) => (
            "200 OK",
            TEXT,
            "authtime: Prometheus metrics at /metrics, top talkers at /clients\n".to_owned(),
        ),
        (Some(b"GET" | b"HEAD"), _) => ("404 Not Found", TEXT, "not found\n".to_owned()),
        _ => ("405 Method Not Allowed", TEXT, "GET only\n".to_owned()),
    };
    respond(&mut stream, status, kind, &body, head_only)
}

/// Writes the response; a HEAD request gets the headers only.
fn respond(
    stream: &mut TcpStream,
    status: &str,
    kind: &str,
    body: &str,
    head_only: bool,
) -> std::io::Result<()> {
    let head = format!(
        "HTTP/1.0 {status}\r\nContent-Type: {kind}\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    stream.write_all(head.as_bytes())?;
    if !head_only {
        stream.write_all(body.as_bytes())?;
    }
    stream.flush()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn get(addr: SocketAddr, request: &str) -> String {
        let mut s = TcpStream::connect(addr).expect("connect");
        s.write_all(request.as_bytes()).expect("write");
        let mut out = String::new();
        s.read_to_string(&mut out).expect("read");
        out
    }

    #[test]
    fn serves_metrics_and_refuses_the_rest() {
        let metrics = Arc::new(Metrics::default());
        let stop = Arc::new(AtomicBool::new(false));
        let (addr, handle) = spawn(
            "127.0.0.1:0".parse().expect("addr"),
            Arc::clone(&metrics),
            Arc::clone(&stop),
        )
        .expect("bind");
        let ok = get(addr, "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n");
        assert!(ok.starts_with("HTTP/1.0 200 OK\r\n"), "{ok}");
        assert!(ok.contains("\nauthtime_ntp_received_total 0\n"), "{ok}");
        assert!(get(addr, "GET /x HTTP/1.0\r\n\r\n").starts_with("HTTP/1.0 404"));
        // No population kept: /clients is not found; once set, it is JSON.
        assert!(get(addr, "GET /clients HTTP/1.0\r\n\r\n").starts_with("HTTP/1.0 404"));
        let population = Arc::new(crate::metrics::clients::ClientPopulation::new([1; 16], 0));
        population.record(
            u64::try_from(crate::clock::now_unix().secs).unwrap_or(0),
            "192.0.2.7".parse().expect("ip"),
            crate::metrics::clients::Protocol::Ntp,
            crate::metrics::clients::Outcome::Served,
        );
        metrics.set_clients(population);
        let clients = get(addr, "GET /clients HTTP/1.0\r\n\r\n");
        assert!(
            clients.contains("Content-Type: application/json\r\n"),
            "{clients}"
        );
        assert!(
            clients.contains("\"address\":\"192.0.2.7\",\"requests\":1"),
            "{clients}"
        );
        let page = get(addr, "GET /metrics HTTP/1.0\r\n\r\n");
        assert!(
            page.contains("\nauthtime_clients{protocol=\"ntp\",window=\"current\"} 1\n"),
            "{page}"
        );
        assert!(!page.contains("192.0.2.7"), "{page}");
        assert!(get(addr, "POST /metrics HTTP/1.0\r\n\r\n").starts_with("HTTP/1.0 405"));
        let head = get(addr, "HEAD /metrics HTTP/1.0\r\n\r\n");
        assert!(
            head.starts_with("HTTP/1.0 200 OK") && head.ends_with("\r\n\r\n"),
            "{head}"
        );
        stop.store(true, Ordering::Relaxed);
        handle.join().expect("join");
    }
}
