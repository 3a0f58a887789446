//! ntpd-rs 1.9 (the `ntpd` crate) as a real interop peer: found, or built
//! once per machine, by `scripts/ensure-ntpd-rs.sh`; started on loopback from
//! a configuration in the test's directory; observed through `ntp-ctl`.
//!
//! ntpd-rs has no option to leave the clock alone: a daemon with sources
//! exits (code 70, "Could not control clock") unless it may change it. Every
//! ntp-daemon here therefore runs (see docs/interop.md, "ntpd-rs 1.9"):
//! - in a user namespace (`unshare --user --map-root-user`): root there, but
//!   without CAP_SYS_TIME over the host's clocks, so the kernel refuses any
//!   clock change with EPERM;
//! - under the `readonly-clock` LD_PRELOAD shim (`scripts/readonly-clock.c`),
//!   which answers clock changes itself, keeps what was asked so later reads
//!   return it, and lets reads through. It logs each absorbed call to
//!   [`NtpdRs::absorbed`].

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use super::{ChildGuard, TempDir, wait_bounded};

/// Where the peer is, as `scripts/ensure-ntpd-rs.sh` printed it.
#[derive(Debug)]
pub(crate) struct Install {
    /// Directory of `ntp-daemon` and `ntp-ctl`.
    pub(crate) bin: PathBuf,
    /// `1.9.x`, from `ntp-daemon --version`.
    pub(crate) version: String,
    /// The compiled readonly-clock shim.
    pub(crate) shim: PathBuf,
}

impl Install {
    /// The peer's name for the interop matrix: `ntpd-rs 1.9.x`.
    pub(crate) fn peer(&self) -> String {
        format!("ntpd-rs {}", self.version)
    }
}

/// A cold build takes about 2.5 minutes on 2 CPUs; this bounds a much slower
/// machine too, and a lock held by another build.
const ENSURE_LIMIT: Duration = Duration::from_secs(30 * 60);

/// Runs `scripts/ensure-ntpd-rs.sh` once per test process (it returns at
/// once when the cache holds the build) and returns what it printed.
pub(crate) fn install() -> &'static Install {
    static INSTALL: OnceLock<Install> = OnceLock::new();
    INSTALL.get_or_init(|| {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
        let script = root.join("scripts/ensure-ntpd-rs.sh");
        let log = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("ensure-ntpd-rs.log");
        let out = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("ensure-ntpd-rs.out");
        let mut child = Command::new(&script)
            .stdin(Stdio::null())
            .stdout(std::fs::File::create(&out).expect("ensure-ntpd-rs output"))
            .stderr(std::fs::File::create(&log).expect("ensure-ntpd-rs log"))
            .spawn()
            .unwrap_or_else(|e| panic!("run {}: {e}", script.display()));
        let status = wait_bounded(&mut child, ENSURE_LIMIT);
        let log_text = std::fs::read_to_string(&log).unwrap_or_default();
        let Some(status) = status else {
            let _ = child.kill();
            let _ = child.wait();
            panic!("scripts/ensure-ntpd-rs.sh did not finish within {ENSURE_LIMIT:?}:\n{log_text}");
        };
        assert!(
            status.success(),
            "scripts/ensure-ntpd-rs.sh failed ({status}); ntpd-rs 1.9 is needed for these \
             interop tests:\n{log_text}"
        );
        let printed = std::fs::read_to_string(&out).unwrap_or_default();
        let field = |name: &str| {
            printed
                .lines()
                .find_map(|l| l.strip_prefix(name)?.strip_prefix('='))
                .unwrap_or_else(|| panic!("ensure-ntpd-rs.sh printed no {name}=: {printed}"))
                .to_owned()
        };
        Install {
            bin: PathBuf::from(field("ntpd-rs-bin")),
            version: field("ntpd-rs-version"),
            shim: PathBuf::from(field("readonly-clock")),
        }
    })
}

/// A running `ntp-daemon`, killed when dropped.
pub(crate) struct NtpdRs {
    /// The process (ntp-daemon itself: unshare execs it).
    pub(crate) process: ChildGuard,
    /// Its configuration file.
    pub(crate) config: PathBuf,
    /// Its log (standard output and error).
    pub(crate) log: PathBuf,
    /// The shim's log: one line per clock change it absorbed.
    pub(crate) absorbed: PathBuf,
}

impl NtpdRs {
    /// Starts ntp-daemon with `<dir>/<name>.toml` holding `body` and an
    /// `[observability]` section added here (debug log, observation socket
    /// in `dir`), and waits until its observation socket is there.
    pub(crate) fn start(dir: &TempDir, name: &str, body: &str) -> Self {
        let install = install();
        let socket = dir.path(&format!("{name}.sock"));
        // sockaddr_un holds 108 bytes: fail clearly, not with ENAMETOOLONG.
        assert!(
            socket.as_os_str().len() < 100,
            "observation socket path too long: {}",
            socket.display()
        );
        // A socket left by an earlier daemon would end the wait below at once.
        let _ = std::fs::remove_file(&socket);
        let config = dir.path(&format!("{name}.toml"));
        std::fs::write(
            &config,
            format!(
                "[observability]\nlog-level = \"debug\"\nansi-colors = false\n\
                 observation-path = \"{}\"\n\n{body}",
                socket.display()
            ),
        )
        .expect("ntpd-rs config");
        let log = dir.path(&format!("{name}.log"));
        let absorbed = dir.path(&format!("{name}.absorbed"));
        let log_file = std::fs::File::create(&log).expect("ntpd-rs log");
        let child = Command::new("unshare")
            .args(["--user", "--map-root-user"])
            .arg(install.bin.join("ntp-daemon"))
            .arg("-c")
            .arg(&config)
            .env("LD_PRELOAD", &install.shim)
            .env("READONLY_CLOCK_LOG", &absorbed)
            .stdin(Stdio::null())
            .stdout(Stdio::from(log_file.try_clone().expect("log")))
            .stderr(Stdio::from(log_file))
            .spawn()
            .expect("start unshare ntp-daemon");
        let mut daemon = Self {
            process: ChildGuard {
                child,
                name: format!("ntp-daemon ({name})"),
            },
            config,
            log,
            absorbed,
        };
        let deadline = Instant::now() + Duration::from_secs(10);
        while !socket.exists() {
            if let Ok(Some(status)) = daemon.process.child.try_wait() {
                panic!("ntp-daemon exited ({status}):\n{}", daemon.log_text());
            }
            assert!(
                Instant::now() < deadline,
                "ntp-daemon made no observation socket:\n{}",
                daemon.log_text()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        daemon
    }

    /// The daemon's log so far.
    pub(crate) fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// The clock changes the shim absorbed so far, one line each.
    pub(crate) fn absorbed_text(&self) -> String {
        std::fs::read_to_string(&self.absorbed).unwrap_or_default()
    }

    /// Whether the daemon still runs (it exits on fatal errors, such as
    /// not being allowed to control the clock).
    pub(crate) fn is_running(&mut self) -> bool {
        matches!(self.process.child.try_wait(), Ok(None))
    }

    /// `ntp-ctl -c CONFIG status -f FORMAT`: its standard output.
    pub(crate) fn ctl_status(&self, format: &str) -> String {
        let mut child = Command::new(install().bin.join("ntp-ctl"))
            .arg("-c")
            .arg(&self.config)
            .args(["status", "-f", format])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start ntp-ctl");
        let stdout = child.stdout.take().expect("piped");
        let reader = std::thread::spawn(move || {
            let mut out = String::new();
            let _ = std::io::Read::read_to_string(&mut std::io::BufReader::new(stdout), &mut out);
            out
        });
        let status = wait_bounded(&mut child, Duration::from_secs(10));
        if status.is_none() {
            let _ = child.kill();
        }
        let _ = child.wait();
        let out = reader.join().unwrap_or_default();
        assert!(
            status.is_some_and(|s| s.success()),
            "ntp-ctl status failed: {out}"
        );
        out
    }

    /// The sources `ntp-ctl status -f prometheus` shows.
    pub(crate) fn sources(&self) -> Vec<Source> {
        parse_sources(&self.ctl_status("prometheus"))
    }

    /// The value of the unlabelled or labelled sample `sample` in `ntp-ctl
    /// status -f prometheus`, summed over its label sets; 0 if absent.
    pub(crate) fn ctl_metric_sum(&self, family: &str) -> f64 {
        let text = self.ctl_status("prometheus");
        text.lines()
            .filter(|l| {
                l.strip_prefix(family)
                    .is_some_and(|rest| rest.starts_with('{') || rest.starts_with(' '))
            })
            .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
            .sum()
    }

    /// Polls `ntp-ctl` (every 200 ms, up to `limit`) until a source satisfies
    /// `good`; returns it, or `None` with the last status in the panic
    /// message left to the caller.
    pub(crate) fn wait_for_source(
        &mut self,
        limit: Duration,
        good: impl Fn(&Source) -> bool,
    ) -> Option<Source> {
        let deadline = Instant::now() + limit;
        loop {
            assert!(self.is_running(), "ntp-daemon exited:\n{}", self.log_text());
            if let Some(source) = self.sources().into_iter().find(&good) {
                return Some(source);
            }
            if Instant::now() >= deadline {
                return None;
            }
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    /// Milliseconds each NTS-KE of the daemon took as its own log shows it:
    /// from "Running spawner ... ty=\"nts\"" to the "new source" that
    /// spawner created (TCP connect, TLS handshake, NTS-KE records, and
    /// ntpd-rs's own certificate checks).
    pub(crate) fn ke_times_ms(&self) -> Vec<f64> {
        ke_times_ms_in(&self.log_text())
    }
}

/// One source in `ntp-ctl status -f prometheus`.
#[derive(Debug, Clone, Default)]
pub(crate) struct Source {
    /// What the configuration named (the NTS-KE server for NTS sources).
    pub(crate) name: String,
    /// The NTP server's address.
    pub(crate) address: String,
    /// ntpd-rs's id for it; a source respawned after NTS-KE gets a new one.
    pub(crate) id: String,
    /// Seconds between polls.
    pub(crate) poll_interval_s: f64,
    /// Polls since the last answered one (at most 8).
    pub(crate) unanswered_polls: u64,
    /// Unused NTS cookies; `None` for a source without NTS.
    pub(crate) nts_cookies: Option<u64>,
    /// The source's offset in seconds.
    pub(crate) offset_s: f64,
}

/// The sources of a `ntp-ctl status -f prometheus` text.
pub(crate) fn parse_sources(text: &str) -> Vec<Source> {
    let mut sources: Vec<Source> = Vec::new();
    for line in text.lines() {
        let Some(rest) = line.strip_prefix("ntp_source_") else {
            continue;
        };
        let Some((metric, rest)) = rest.split_once('{') else {
            continue;
        };
        let Some((labels, value)) = rest.rsplit_once("} ") else {
            continue;
        };
        let label = |key: &str| {
            labels
                .split("\",")
                .find_map(|kv| kv.strip_prefix(key)?.strip_prefix("=\""))
                .unwrap_or_default()
                .trim_end_matches('"')
                .to_owned()
        };
        let id = label("id");
        let index = match sources.iter().position(|s| s.id == id) {
            Some(i) => i,
            None => {
                sources.push(Source {
                    name: label("name"),
                    address: label("address"),
                    id,
                    ..Source::default()
                });
                sources.len() - 1
            }
        };
        let source = &mut sources[index];
        let value: f64 = value.trim().parse().unwrap_or(f64::NAN);
        match metric {
            "poll_interval_seconds" => source.poll_interval_s = value,
            "unanswered_polls" => source.unanswered_polls = value as u64,
            "nts_cookies_available" => source.nts_cookies = Some(value as u64),
            "offset_seconds" => source.offset_s = value,
            _ => {}
        }
    }
    sources
}

/// [`NtpdRs::ke_times_ms`] of a log text.
pub(crate) fn ke_times_ms_in(log: &str) -> Vec<f64> {
    let mut started: Option<(f64, String)> = None;
    let mut times = Vec::new();
    for line in log.lines() {
        if line.contains("Running spawner") && line.contains("ty=\"nts\"") {
            if let (Some(t), Some(id)) = (log_seconds(line), spawner_id(line)) {
                started = Some((t, id));
            }
        } else if line.contains("new source")
            && let Some((t0, id)) = &started
            && spawner_id(line).as_ref() == Some(id)
            && let Some(t) = log_seconds(line)
        {
            times.push((t - t0) * 1000.0);
            started = None;
        }
    }
    times
}

/// Seconds of the day of a log line's RFC 3339 timestamp
/// (`2026-11-25T19:59:01.067135Z ...`).
fn log_seconds(line: &str) -> Option<f64> {
    let stamp = line.split_whitespace().next()?;
    let time = stamp.split_once('T')?.1.trim_end_matches('Z');
    let mut parts = time.split(':');
    let h: f64 = parts.next()?.parse().ok()?;
    let m: f64 = parts.next()?.parse().ok()?;
    let s: f64 = parts.next()?.parse().ok()?;
    Some(h * 3600.0 + m * 60.0 + s)
}

/// The `SpawnerId(N)` a log line names.
fn spawner_id(line: &str) -> Option<String> {
    let start = line.find("SpawnerId(")?;
    let end = line[start..].find(')')?;
    Some(line[start..start + end + 1].to_owned())
}

/// A port free a moment ago on `ip` for both UDP and TCP (ntpd-rs needs
/// port numbers in its configuration).
pub(crate) fn free_port_on(ip: &str) -> u16 {
    for _ in 0..100 {
        let udp = std::net::UdpSocket::bind((ip, 0)).expect("bind udp");
        let port = udp.local_addr().expect("addr").port();
        if std::net::TcpListener::bind((ip, port)).is_ok() {
            return port;
        }
    }
    panic!("no port free for both UDP and TCP on {ip}");
}
