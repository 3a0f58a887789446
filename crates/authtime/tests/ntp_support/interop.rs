//! The interop matrix's evidence: a test calls [`proven`] after its
//! assertions passed, and the row lands in `target/tmp/interop-rows/`, one
//! JSON line per proven fact. `test.sh` empties that directory before `cargo
//! test` and builds the matrix from it afterwards
//! (`cargo run -p authtime-docgen --bin interop-matrix`), so the README's
//! matrix lists only what a run proved.

use std::io::Write as _;
use std::path::PathBuf;

/// Who spoke to whom.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Direction {
    /// authtime is the client (query or NTS-KE client), the peer serves.
    AuthtimeToPeer,
    /// The peer is the client, authtime serves.
    PeerToAuthtime,
}

impl Direction {
    fn label(self) -> &'static str {
        match self {
            Self::AuthtimeToPeer => "authtime client → peer server",
            Self::PeerToAuthtime => "peer client → authtime server",
        }
    }
}

/// One proven fact. `feature` is one of the matrix's columns: `NTS-KE`,
/// `AEAD`, `cookies`, `NTS NTP` (NTS-protected exchanges accepted),
/// `NAK recovery`, `NTS pool` (authtime as NTS-KE load balancer: clients
/// through it, members behind it), `key group`, `plain NTP`,
/// `symmetric key`, `interleaved` (RFC 9769), `handshake`, `Roughtime`,
/// `Roughtime malfeasance`; `result` says what was seen (for example
/// `AEAD_AES_SIV_CMAC_256 (15)`, `X25519MLKEM768`, `3.1 ms median of 5`).
pub(crate) struct Row<'a> {
    /// The peer, with its version: `chronyd 4.3`, `ntpd-rs 1.9.0`, `NTPsec 1.2.2`.
    pub(crate) peer: &'a str,
    /// Who was the client.
    pub(crate) direction: Direction,
    /// The column.
    pub(crate) feature: &'a str,
    /// What was seen.
    pub(crate) result: &'a str,
    /// The test that proved it (`file::function`).
    pub(crate) test: &'a str,
}

/// The directory the rows go to.
pub(crate) fn rows_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("interop-rows")
}

fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out
}

/// Records `row` as proven. Call it only after the test's assertions about
/// that fact have passed.
pub(crate) fn proven(row: Row<'_>) {
    let dir = rows_dir();
    std::fs::create_dir_all(&dir).expect("interop rows directory");
    let line = format!(
        "{{\"peer\":\"{}\",\"direction\":\"{}\",\"feature\":\"{}\",\"result\":\"{}\",\"test\":\"{}\"}}\n",
        escape(row.peer),
        escape(row.direction.label()),
        escape(row.feature),
        escape(row.result),
        escape(row.test),
    );
    let path = dir.join(format!("{}.jsonl", std::process::id()));
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&path)
        .expect("interop rows file");
    file.write_all(line.as_bytes()).expect("interop row");
}

/// The median of `values` (which must not be empty), for the figures of
/// the matrix.
pub(crate) fn median(values: &[f64]) -> f64 {
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    let n = sorted.len();
    if n % 2 == 1 {
        sorted[n / 2]
    } else {
        (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0
    }
}
