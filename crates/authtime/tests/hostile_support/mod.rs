//! What the hostile-traffic and fault tests share: an NTS server started on
//! loopback with its certificates, an NTS session taken from `authtime query
//! --nts --cookie-store`, NTS requests built and checked in process (so a
//! test can send thousands of them), a seeded byte source, and readings of
//! the server process from /proc (resident memory, open descriptors).

#![allow(dead_code, reason = "each test binary uses a different part")]

use std::net::{SocketAddr, UdpSocket};
use std::path::Path;
use std::time::Duration;

use authtime_nts::{AeadAlgorithm, ClientOutcome, PendingRequest, SessionKeys};
use authtime_wire::{Header, Mode, NtpTimestamp};

use crate::ntp_support::{Serve, TempDir, authtime, text_of};

/// A seeded xorshift byte source: the hostile inputs are reproducible.
pub(crate) struct Rng(u64);

impl Rng {
    pub(crate) fn new(seed: u64) -> Self {
        Self(seed | 1)
    }

    pub(crate) fn next_u64(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    /// A number in `0..n` (`n > 0`).
    pub(crate) fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n as u64) as usize
    }

    pub(crate) fn fill(&mut self, buf: &mut [u8]) {
        for b in buf {
            *b = self.next_u64() as u8;
        }
    }

    pub(crate) fn bytes(&mut self, n: usize) -> Vec<u8> {
        let mut v = vec![0; n];
        self.fill(&mut v);
        v
    }
}

/// The config of a one-worker NTS server on loopback (NTP and NTS-KE on free
/// ports, certificates `nts-chain.pem` / `nts-key.pem`) plus TOML lines for
/// `[ntp]` and `[nts-ke]`, and whole sections after them.
pub(crate) fn nts_config(ntp_extra: &str, ke_extra: &str, sections: &str) -> String {
    format!(
        "[ntp]\nlisten = [\"127.0.0.1:0\"]\nworkers = 1\n{ntp_extra}\n\
         [nts-ke]\nlisten = [\"127.0.0.1:0\"]\ncertificate-chain = \"nts-chain.pem\"\n\
         private-key = \"nts-key.pem\"\nworkers = 1\n{ke_extra}\n{sections}\n"
    )
}

/// An NTS session: the keys and cookies NTS-KE gave, and where to send NTP.
pub(crate) struct Session {
    pub(crate) keys: SessionKeys,
    pub(crate) cookies: Vec<Vec<u8>>,
    pub(crate) ntp: SocketAddr,
}

/// Runs `authtime query --nts` once against `serve` with a cookie store and
/// returns the session it left there (keys and unused cookies).
pub(crate) fn session(dir: &TempDir, serve: &Serve, ca: &Path) -> Session {
    let store = dir.path(&format!("session-{}.json", serve.process.pid()));
    let _ = std::fs::remove_file(&store);
    let out = query_nts(serve, ca, &["--cookie-store", &store.display().to_string()]);
    assert!(out.status.success(), "{}", text_of(&out));
    let jar: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&store).expect("cookie store"))
            .expect("json");
    let hex = |v: &serde_json::Value| hex::decode(v.as_str().expect("hex")).expect("hex");
    let algorithm =
        AeadAlgorithm::from_id(u16::try_from(jar["aead_id"].as_u64().expect("aead")).expect("u16"))
            .expect("known aead");
    let keys = SessionKeys::new(algorithm, &hex(&jar["c2s"]), &hex(&jar["s2c"])).expect("keys");
    let cookies = jar["cookies"]
        .as_array()
        .expect("cookies")
        .iter()
        .map(hex)
        .collect();
    let ntp = format!(
        "{}:{}",
        jar["ntp_server"].as_str().expect("server"),
        jar["ntp_port"]
    );
    let ntp = ntp
        .parse()
        .unwrap_or_else(|_| SocketAddr::new([127, 0, 0, 1].into(), serve.addr.port()));
    Session { keys, cookies, ntp }
}

/// `authtime query --nts localhost:<ke port> --ca <ca> --timeout 1 <extra>`.
pub(crate) fn query_nts(serve: &Serve, ca: &Path, extra: &[&str]) -> std::process::Output {
    query_nts_within(serve, ca, "1", extra)
}

/// [`query_nts`] with `--timeout <seconds>`.
pub(crate) fn query_nts_within(
    serve: &Serve,
    ca: &Path,
    seconds: &str,
    extra: &[&str],
) -> std::process::Output {
    let ke = format!("localhost:{}", serve.nts_ke.expect("NTS-KE").port());
    let ca = ca.display().to_string();
    let mut args = vec![
        "query",
        "--nts",
        &ke,
        "--ca",
        &ca,
        "--timeout",
        seconds,
        "--json",
    ];
    args.extend_from_slice(extra);
    authtime(&args)
}

/// A client header with a transmit timestamp made from `tag`.
pub(crate) fn client_header(tag: u64) -> Header {
    let mut header = Header::new(Mode::Client);
    header.transmit_ts = NtpTimestamp::from_bits(tag);
    header
}

/// Builds an NTS request with `cookie` and `placeholders`.
pub(crate) fn nts_request(
    keys: &SessionKeys,
    cookie: &[u8],
    placeholders: usize,
    rng: &mut Rng,
) -> (Vec<u8>, PendingRequest) {
    let mut out = vec![0u8; 2048];
    let tag = rng.next_u64();
    let pending = authtime_nts::build_request(
        &client_header(tag),
        keys,
        cookie,
        placeholders,
        &mut |b: &mut [u8]| rng.fill(b),
        &mut out,
    )
    .expect("request");
    out.truncate(pending.len());
    (out, pending)
}

/// What one honest NTS exchange gave.
pub(crate) enum Exchange {
    /// An authenticated reply with its fresh cookies.
    Time(Vec<Vec<u8>>),
    /// An NTS NAK that echoed the UID.
    Nak,
    /// No valid reply in time.
    Lost,
}

/// Sends one NTS request from `socket` and waits up to `wait` for its
/// authenticated reply (other datagrams are ignored, as a client must).
pub(crate) fn exchange(
    socket: &UdpSocket,
    to: SocketAddr,
    keys: &SessionKeys,
    cookie: &[u8],
    placeholders: usize,
    rng: &mut Rng,
    wait: Duration,
) -> Exchange {
    let (request, pending) = nts_request(keys, cookie, placeholders, rng);
    socket.send_to(&request, to).expect("send");
    let deadline = std::time::Instant::now() + wait;
    let mut buf = [0u8; 4096];
    loop {
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        if left.is_zero() {
            return Exchange::Lost;
        }
        socket.set_read_timeout(Some(left)).expect("timeout");
        let Ok(n) = socket.recv(&mut buf) else {
            return Exchange::Lost;
        };
        match authtime_nts::check_response(&buf[..n], &pending, keys) {
            Ok(ClientOutcome::Time { cookies, .. }) => return Exchange::Time(cookies),
            Ok(ClientOutcome::Nak { .. }) => return Exchange::Nak,
            Err(_) => {}
        }
    }
}

/// A field of /proc/PID/status in kB (`VmRSS`, `VmHWM`).
pub(crate) fn status_kib(pid: u32, field: &str) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("status");
    status
        .lines()
        .find_map(|l| l.strip_prefix(field)?.strip_prefix(':'))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .expect("field")
}

/// Open file descriptors of process `pid`.
pub(crate) fn fd_count(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/fd"))
        .expect("fd dir")
        .count()
}

/// The sum of every sample of metric family `name` (all label sets).
pub(crate) fn family_sum(text: &str, name: &str) -> u64 {
    text.lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| {
            let rest = l.strip_prefix(name)?;
            let value = if rest.starts_with('{') {
                rest.rsplit_once("} ")?.1
            } else {
                rest.strip_prefix(' ')?
            };
            value.trim().parse::<u64>().ok()
        })
        .sum()
}

/// Datagrams the kernel dropped on the UDP sockets bound to local `port`
/// (the `drops` column of /proc/net/udp; a full receive buffer), to tell
/// them from datagrams the server lost.
pub(crate) fn udp_socket_drops(port: u16) -> u64 {
    let table = std::fs::read_to_string("/proc/net/udp").unwrap_or_default();
    let port = format!(":{port:04X}");
    table
        .lines()
        .skip(1)
        .filter(|l| {
            l.split_whitespace()
                .nth(1)
                .is_some_and(|a| a.ends_with(&port))
        })
        .filter_map(|l| l.split_whitespace().last()?.parse::<u64>().ok())
        .sum()
}
