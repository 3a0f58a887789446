//! Interleaved mode (RFC 9769) with a real chronyd as the client (Debian
//! package `chrony`, `xleave`): chronyd (`-x`, never touching the clock)
//! polls `authtime serve` every 1/16 s from a new source port each time, so
//! its requests land on the server's four workers at random, and logs every
//! valid measurement. Its `measurements.log` says, per sample, whether the
//! reply was interleaved (`4I`) and which timestamps it used. Plain, with an
//! AES-128 MAC (a sample is logged only when the reply's MAC verified:
//! RFC 5905 test 5), and over NTS.

mod ntp_support;

use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use ntp_support::interop::{Direction, Row, proven};
use ntp_support::{
    ChildGuard, Serve, TempDir, chronyd_command, chronyd_private_lines, chronyd_version, keygen,
    nts_cert,
};

/// Samples wanted from chronyd before it is stopped.
const WANTED: usize = 6;

/// What chronyd logged.
struct Samples {
    /// Lines of valid measurements.
    lines: Vec<String>,
}

impl Samples {
    /// Interleaved samples whose local transmit and receive timestamps came
    /// from the kernel on chronyd's side too.
    fn interleaved(&self) -> usize {
        self.lines
            .iter()
            .filter(|l| {
                let t: Vec<&str> = l.split_whitespace().collect();
                t.len() >= 3 && t[t.len() - 3] == "4I"
            })
            .count()
    }
}

/// Runs chronyd with `server_line` (and `extra` configuration) until it has
/// logged [`WANTED`] interleaved samples, or 20 s have passed.
fn chronyd_samples(dir: &TempDir, name: &str, server_line: &str, extra: &str) -> Samples {
    let logdir = dir.path(&format!("{name}-logs"));
    std::fs::create_dir_all(&logdir).expect("log dir");
    let conf = dir.path(&format!("{name}.conf"));
    std::fs::write(
        &conf,
        format!(
            "{server_line} xleave iburst minpoll -4 maxpoll -4\n{extra}\nlogdir {}\n\
             log measurements\n{}",
            logdir.display(),
            chronyd_private_lines(dir)
        ),
    )
    .expect("conf");
    let out = std::fs::File::create(dir.path(&format!("{name}.out"))).expect("out");
    let child = chronyd_command(&conf, &["-x", "-d"])
        .stdout(Stdio::from(out.try_clone().expect("out")))
        .stderr(Stdio::from(out))
        .spawn()
        .expect("start chronyd");
    let _guard = ChildGuard {
        child,
        name: "chronyd".into(),
    };
    let log = logdir.join("measurements.log");
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let samples = read_samples(&log);
        if samples.interleaved() >= WANTED || Instant::now() >= deadline {
            return samples;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn read_samples(log: &Path) -> Samples {
    let text = std::fs::read_to_string(log).unwrap_or_default();
    Samples {
        lines: text
            .lines()
            .filter(|l| l.starts_with(|c: char| c.is_ascii_digit()))
            .map(str::to_owned)
            .collect(),
    }
}

fn serve_config(extra: &str) -> String {
    format!(
        "[ntp]\nlisten = [\"127.0.0.1:0\"]\nworkers = 4\n{extra}\n[rate-limit]\nenabled = false\n"
    )
}

fn check(samples: &Samples, serve: &Serve, what: &str) {
    assert!(
        samples.interleaved() >= WANTED,
        "{what}: chronyd logged {} interleaved samples of {}:\n{}\nserver:\n{}",
        samples.interleaved(),
        samples.lines.len(),
        samples.lines.join("\n"),
        serve.scrape()
    );
    let served = serve.metric("authtime_ntp_replies_total{mode=\"interleaved\"}");
    assert!(
        served >= WANTED as u64,
        "{what}: the server counted {served}"
    );
    assert!(serve.metric("authtime_ntp_transmit_timestamps_total{source=\"kernel\"}") >= served);
}

#[test]
fn chronyd_xleave_gets_interleaved_samples_from_authtime() {
    let dir = TempDir::new("xleave-plain");
    let serve = Serve::start(&dir, &serve_config(""));
    let line = format!("server 127.0.0.1 port {}", serve.addr.port());
    let samples = chronyd_samples(&dir, "plain", &line, "");
    check(&samples, &serve, "plain");
    proven(Row {
        peer: &chronyd_version(),
        direction: Direction::PeerToAuthtime,
        feature: "interleaved",
        result: "plain (RFC 9769)",
        test: "interleaved_chrony::chronyd_xleave_gets_interleaved_samples_from_authtime",
    });
}

#[test]
fn chronyd_xleave_verifies_mac_authenticated_interleaved_replies() {
    let dir = TempDir::new("xleave-mac");
    let keys = keygen(&dir, "chrony.keys", "chrony", &[("aes128", 3)]);
    let serve = Serve::start(
        &dir,
        &serve_config(&format!(
            "keys = \"{}\"\nkey-format = \"chrony\"",
            keys.display()
        )),
    );
    let line = format!("server 127.0.0.1 port {} key 3", serve.addr.port());
    let samples = chronyd_samples(&dir, "mac", &line, &format!("keyfile {}", keys.display()));
    check(&samples, &serve, "AES-128 MAC");
    assert!(serve.metric("authtime_ntp_answered_total{auth=\"mac\"}") >= WANTED as u64);
    proven(Row {
        peer: &chronyd_version(),
        direction: Direction::PeerToAuthtime,
        feature: "interleaved",
        result: "AES128 MAC (RFC 9769)",
        test: "interleaved_chrony::chronyd_xleave_verifies_mac_authenticated_interleaved_replies",
    });
}

#[test]
fn chronyd_xleave_gets_interleaved_samples_over_nts() {
    let dir = TempDir::new("xleave-nts");
    nts_cert(&dir, "x", &[]);
    let prefix = dir.path("x").display().to_string();
    let serve = Serve::start(
        &dir,
        &format!(
            "{}[nts-ke]\nlisten = [\"127.0.0.1:0\"]\ncertificate-chain = \"{prefix}-chain.pem\"\n\
             private-key = \"{prefix}-key.pem\"\nworkers = 1\n\
             [keystore]\npath = \"{prefix}-master-keys\"\n",
            serve_config("")
        ),
    );
    let ke = serve.nts_ke.expect("NTS-KE");
    let dump = dir.path("nts-dump");
    std::fs::create_dir_all(&dump).expect("dump dir");
    let line = format!(
        "server localhost port {} nts ntsport {}",
        serve.addr.port(),
        ke.port()
    );
    let extra = format!(
        "ntstrustedcerts {}\nntsdumpdir {}",
        dir.path("x-ca.pem").display(),
        dump.display()
    );
    let samples = chronyd_samples(&dir, "nts", &line, &extra);
    check(&samples, &serve, "NTS");
    assert!(serve.metric("authtime_nts_answered_total") >= WANTED as u64);
    proven(Row {
        peer: &chronyd_version(),
        direction: Direction::PeerToAuthtime,
        feature: "interleaved",
        result: "NTS (RFC 9769)",
        test: "interleaved_chrony::chronyd_xleave_gets_interleaved_samples_over_nts",
    });
}
