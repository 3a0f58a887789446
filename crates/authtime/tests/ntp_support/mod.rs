//! What the NTP tests share: child processes killed on drop, the real
//! `authtime serve` started from a config file, chronyd started on loopback
//! with its files in a temporary directory, keys made by `authtime keygen`,
//! and a Prometheus scrape. Every wait is bounded.

#![allow(dead_code, reason = "each test binary uses a different part")]

pub(crate) mod interop;
pub(crate) mod ntpd_rs;
pub(crate) mod ntpsec;
pub(crate) mod stores;

use std::io::{BufRead as _, BufReader, Read as _, Write as _};
use std::net::{SocketAddr, TcpStream, UdpSocket};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Output, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// The `authtime` binary under test.
pub(crate) fn authtime_bin() -> &'static str {
    env!("CARGO_BIN_EXE_authtime")
}

/// Runs `authtime <args>` to completion (it must finish within 30 s).
pub(crate) fn authtime(args: &[&str]) -> Output {
    let mut child = Command::new(authtime_bin())
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start authtime");
    let (mut out, mut err) = (String::new(), String::new());
    let stdout = child.stdout.take().expect("piped");
    let stderr = child.stderr.take().expect("piped");
    let reader = std::thread::spawn(move || {
        let mut e = String::new();
        let _ = BufReader::new(stderr).read_to_string(&mut e);
        e
    });
    let _ = BufReader::new(stdout).read_to_string(&mut out);
    let status = wait_bounded(&mut child, Duration::from_secs(30)).expect("authtime finished");
    err.push_str(&reader.join().unwrap_or_default());
    Output {
        status,
        stdout: out.into_bytes(),
        stderr: err.into_bytes(),
    }
}

/// Text of an output stream.
pub(crate) fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// A child process that is killed (and reaped) when the guard is dropped,
/// whatever the test did.
pub(crate) struct ChildGuard {
    /// The process.
    pub(crate) child: Child,
    /// What it is, for messages.
    pub(crate) name: String,
}

impl ChildGuard {
    /// Its process id.
    pub(crate) fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Sends `signal` (`HUP`, `TERM`, ...) with kill(1).
    pub(crate) fn signal(&self, signal: &str) {
        let status = Command::new("kill")
            .arg(format!("-{signal}"))
            .arg(self.pid().to_string())
            .status()
            .expect("run kill");
        assert!(status.success(), "kill -{signal} {}", self.name);
    }

    /// Waits up to `limit` for the process to exit.
    pub(crate) fn wait_for_exit(&mut self, limit: Duration) -> Option<ExitStatus> {
        wait_bounded(&mut self.child, limit)
    }
}

impl Drop for ChildGuard {
    fn drop(&mut self) {
        if matches!(self.child.try_wait(), Ok(None)) {
            let _ = self.child.kill();
        }
        let _ = self.child.wait();
    }
}

/// Polls `child` until it exits or `limit` passes.
pub(crate) fn wait_bounded(child: &mut Child, limit: Duration) -> Option<ExitStatus> {
    let deadline = Instant::now() + limit;
    loop {
        if let Ok(Some(status)) = child.try_wait() {
            return Some(status);
        }
        if Instant::now() >= deadline {
            return None;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// A fresh directory for one test's files, removed when dropped.
pub(crate) struct TempDir(pub(crate) PathBuf);

impl TempDir {
    /// `CARGO_TARGET_TMPDIR/<name>-<pid>-<n>`.
    pub(crate) fn new(name: &str) -> Self {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
            .join(format!("{name}-{}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("temp dir");
        Self(dir)
    }

    /// A path inside.
    pub(crate) fn path(&self, name: &str) -> PathBuf {
        self.0.join(name)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Writes a key file with one key per `(type, id)`, made by `authtime keygen`
/// in `format`, and returns its path.
pub(crate) fn keygen(dir: &TempDir, name: &str, format: &str, keys: &[(&str, u32)]) -> PathBuf {
    let mut file = String::new();
    for (key_type, id) in keys {
        let out = authtime(&[
            "keygen",
            "--format",
            format,
            "--type",
            key_type,
            "--first-id",
            &id.to_string(),
        ]);
        assert!(out.status.success(), "keygen: {}", text_of(&out));
        file.push_str(&text(&out.stdout));
    }
    let path = dir.path(name);
    write_private(&path, &file);
    path
}

/// Writes `text` to `path` with mode 0600 (replacing the file).
pub(crate) fn write_private(path: &Path, text: &str) {
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::write(path, text).expect("write");
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600)).expect("chmod");
}

/// Both output streams of a run, for messages.
pub(crate) fn text_of(out: &Output) -> String {
    format!(
        "status {:?}\nstdout: {}\nstderr: {}",
        out.status,
        text(&out.stdout),
        text(&out.stderr)
    )
}

/// A running `authtime serve`.
pub(crate) struct Serve {
    /// The process.
    pub(crate) process: ChildGuard,
    /// The first address it listens on.
    pub(crate) addr: SocketAddr,
    /// Its metrics endpoint.
    pub(crate) metrics: SocketAddr,
    /// Its log (standard error) file.
    pub(crate) log: PathBuf,
    /// Its first NTS-KE address, when it serves NTS-KE.
    pub(crate) nts_ke: Option<SocketAddr>,
    /// Its first Roughtime address (UDP and TCP), when it serves Roughtime.
    pub(crate) roughtime: Option<SocketAddr>,
}

/// The `[clock]` section of test servers that do not choose one: a
/// declared stratum-2 clock whose upstream is 192.0.2.1 (TEST-NET-1), as a
/// lab would run.
pub(crate) const LAB_CLOCK: &str =
    "[clock]\nsource = \"static\"\nstratum = 2\nreference-id = \"192.0.2.1\"\n";

impl Serve {
    /// Starts `authtime serve --config <dir>/serve.toml` with `config_body`
    /// (which must not set `[metrics]`: the endpoint is added on a free
    /// port), and waits until it says where it listens.
    pub(crate) fn start(dir: &TempDir, config_body: &str) -> Self {
        Self::start_named(dir, "serve", config_body)
    }

    /// [`Serve::start`] with the files named `<name>.toml` and `<name>.log`,
    /// so that several servers can share one directory.
    pub(crate) fn start_named(dir: &TempDir, name: &str, config_body: &str) -> Self {
        Self::start_via(dir, name, config_body, &[])
    }

    /// [`Serve::start_named`] with the daemon started through `launcher`
    /// (a command and its arguments, to which `authtime serve --config ...`
    /// is appended, such as `nsenter -t PID -m --`): it must exec the daemon,
    /// so that the process started is the daemon.
    pub(crate) fn start_via(
        dir: &TempDir,
        name: &str,
        config_body: &str,
        launcher: &[&std::ffi::OsStr],
    ) -> Self {
        let config = dir.path(&format!("{name}.toml"));
        // A test server is a lab clock: unless the test chooses a clock
        // source, it declares one (the host's own state differs from machine
        // to machine; tests of the real sources choose them explicitly).
        let clock = if config_body.contains("[clock]") {
            ""
        } else {
            LAB_CLOCK
        };
        std::fs::write(
            &config,
            format!("{config_body}\n{clock}[metrics]\nlisten = \"127.0.0.1:0\"\n"),
        )
        .expect("config");
        let log = dir.path(&format!("{name}.log"));
        let mut command = match launcher.split_first() {
            Some((program, args)) => {
                let mut c = Command::new(program);
                c.args(args).arg(authtime_bin());
                c
            }
            None => Command::new(authtime_bin()),
        };
        let mut child = command
            .arg("serve")
            .arg("--config")
            .arg(&config)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(std::fs::File::create(&log).expect("log file"))
            .spawn()
            .expect("start authtime serve");
        let stdout = child.stdout.take().expect("piped");
        let process = ChildGuard {
            child,
            name: "authtime serve".into(),
        };
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let deadline = Instant::now() + Duration::from_secs(10);
        let (mut addr, mut metrics, mut nts_ke, mut roughtime) = (None, None, None, None);
        while metrics.is_none() {
            let left = deadline.saturating_duration_since(Instant::now());
            let Ok(line) = rx.recv_timeout(left) else {
                panic!(
                    "authtime serve did not start: {}",
                    std::fs::read_to_string(&log).unwrap_or_default()
                );
            };
            if let Some(rest) = line.strip_prefix("listening on udp ") {
                let text = rest.split_whitespace().next().unwrap_or_default();
                addr = addr.or(text.parse().ok());
            }
            if let Some(rest) = line.strip_prefix("NTS-KE on tcp ") {
                nts_ke = nts_ke.or(rest.trim().parse().ok());
            }
            if let Some(rest) = line.strip_prefix("Roughtime on udp and tcp ") {
                roughtime = roughtime.or(rest.trim().parse().ok());
            }
            if let Some(rest) = line.strip_prefix("metrics on http://") {
                metrics = rest.trim_end_matches("/metrics").parse().ok();
            }
        }
        Self {
            process,
            addr: addr.expect("a listen address"),
            metrics: metrics.expect("metrics"),
            log,
            nts_ke,
            roughtime,
        }
    }

    /// The metrics text.
    pub(crate) fn scrape(&self) -> String {
        scrape(self.metrics)
    }

    /// The value of the sample `name` (with labels, as printed), 0 if absent.
    pub(crate) fn metric(&self, sample: &str) -> u64 {
        metric(&self.scrape(), sample)
    }

    /// Waits (up to 5 s) until `sample` reaches at least `value`, and returns it.
    pub(crate) fn wait_metric(&self, sample: &str, value: u64) -> u64 {
        let deadline = Instant::now() + Duration::from_secs(5);
        loop {
            let now = self.metric(sample);
            if now >= value || Instant::now() >= deadline {
                return now;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// A configuration for `authtime status --config` that names this
    /// server's metrics endpoint (and the lab clock), written to
    /// `<dir>/status.toml`.
    #[allow(dead_code, reason = "not every test binary runs authtime status")]
    pub(crate) fn status_config(&self, dir: &TempDir) -> PathBuf {
        let config = dir.path("status.toml");
        std::fs::write(
            &config,
            format!("{LAB_CLOCK}[metrics]\nlisten = \"{}\"\n", self.metrics),
        )
        .expect("status config");
        config
    }

    /// The server's log so far.
    pub(crate) fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }
}

/// `GET /metrics` from `addr`.
pub(crate) fn scrape(addr: SocketAddr) -> String {
    let mut s = TcpStream::connect_timeout(&addr, Duration::from_secs(2)).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(5)))
        .expect("timeout");
    s.write_all(b"GET /metrics HTTP/1.0\r\n\r\n")
        .expect("request");
    let mut out = String::new();
    s.read_to_string(&mut out).expect("response");
    assert!(out.starts_with("HTTP/1.0 200 OK"), "{out}");
    out
}

/// The TLS key exchange groups authtime's NTS-KE server counted handshakes
/// for (`authtime_ntske_key_exchange_groups_total{group=...}` above 0).
pub(crate) fn negotiated_groups(metrics: &str) -> Vec<&str> {
    metrics
        .lines()
        .filter_map(|l| {
            let rest = l.strip_prefix("authtime_ntske_key_exchange_groups_total{group=\"")?;
            let (group, count) = rest.split_once("\"} ")?;
            (count.trim().parse::<u64>().ok()? > 0).then_some(group)
        })
        .collect()
}

/// The value of `sample` in a metrics text, 0 if absent.
pub(crate) fn metric(text: &str, sample: &str) -> u64 {
    text.lines()
        .find_map(|l| l.strip_prefix(sample)?.strip_prefix(' ')?.parse().ok())
        .unwrap_or(0)
}

/// chronyd's path; fails the test (with what to do) when it is missing.
pub(crate) fn chronyd() -> PathBuf {
    ["/usr/sbin/chronyd", "/usr/bin/chronyd", "/sbin/chronyd"]
        .iter()
        .map(PathBuf::from)
        .find(|p| p.exists())
        .unwrap_or_else(|| {
            panic!(
                "chronyd is not installed: these interop tests need the Debian package \
                 `chrony`; run ./test.sh, which installs it"
            )
        })
}

/// Whether this process runs as root (chronyd then needs `-u root` to keep
/// its privileges rather than switch to a user that may not exist).
pub(crate) fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| o.stdout.starts_with(b"0\n"))
}

/// A UDP port that was free a moment ago on 127.0.0.1 (for peers that need
/// a port number in their configuration).
pub(crate) fn free_udp_port() -> u16 {
    UdpSocket::bind("127.0.0.1:0")
        .and_then(|s| s.local_addr())
        .expect("a free port")
        .port()
}

/// The lines chronyd needs to stay inside `dir`: pid file, no command socket
/// or port.
pub(crate) fn chronyd_private_lines(dir: &TempDir) -> String {
    format!(
        "pidfile {}\ncmdport 0\nbindcmdaddress /\n",
        dir.path("chronyd.pid").display()
    )
}

/// chronyd with configuration `conf` and extra arguments (`-Q -t 3`, `-x -d`).
pub(crate) fn chronyd_command(conf: &Path, args: &[&str]) -> Command {
    let mut command = Command::new(chronyd());
    command.args(args).arg("-f").arg(conf);
    if is_root() {
        command.args(["-u", "root"]);
    }
    command
}

/// The first 24 bytes (up to the reference time) of the reply to a plain
/// mode-3 request sent to `target` (2 s at most); the reply is a mode-4
/// header.
#[allow(dead_code, reason = "not every test binary asks a server this way")]
pub(crate) fn plain_reply_header(target: SocketAddr) -> [u8; 24] {
    let socket = UdpSocket::bind("127.0.0.1:0").expect("bind");
    socket
        .set_read_timeout(Some(Duration::from_secs(2)))
        .expect("timeout");
    let mut request = [0u8; 48];
    request[0] = 0x23; // leap 0, version 4, mode 3
    request[40..48].copy_from_slice(&0x1234_5678_9abc_def0_u64.to_be_bytes());
    socket.send_to(&request, target).expect("send");
    let mut reply = [0u8; 128];
    let (n, _) = socket.recv_from(&mut reply).expect("a reply");
    assert!(n >= 48, "{n} bytes");
    assert_eq!(reply[0] & 0x07, 4, "mode 4");
    reply[..24].try_into().expect("24 bytes")
}

/// chronyd started in the foreground (`-x -d`, the host clock untouched) on
/// configuration `conf`, logging to `log`, once it has made its command
/// socket `socket` (10 s at most).
#[allow(
    dead_code,
    reason = "not every test binary starts a chronyd of its own"
)]
pub(crate) fn chronyd_with_socket(
    conf: &Path,
    log: &Path,
    socket: &Path,
    name: &str,
) -> ChildGuard {
    let log = std::fs::File::create(log).expect("log");
    let child = chronyd_command(conf, &["-x", "-d"])
        .stdout(Stdio::null())
        .stderr(Stdio::from(log))
        .spawn()
        .expect("start chronyd");
    let process = ChildGuard {
        child,
        name: format!("chronyd ({name})"),
    };
    let deadline = Instant::now() + Duration::from_secs(10);
    while !socket.exists() {
        assert!(Instant::now() < deadline, "chronyd made no command socket");
        std::thread::sleep(Duration::from_millis(20));
    }
    process
}

/// Waits (up to 10 s) until `target` answers a plain query.
pub(crate) fn wait_for_answers(target: &str, log: impl Fn() -> String) {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let out = authtime(&["query", target, "--timeout", "0.2"]);
        if out.status.success() {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "{target} does not answer: {}\n{}",
            text_of(&out),
            log()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// chronyd serving NTP on 127.0.0.1 with `key_file`, never touching the clock
/// (`-x`, `local stratum 8`); returns it once it answers, with its address.
pub(crate) fn chronyd_server(dir: &TempDir, key_file: &Path) -> (ChildGuard, String) {
    let port = free_udp_port();
    let conf = dir.path("server.conf");
    std::fs::write(
        &conf,
        format!(
            "port {port}\nbindaddress 127.0.0.1\nallow 127.0.0.1\nlocal stratum 8\n\
             keyfile {}\n{}",
            key_file.display(),
            chronyd_private_lines(dir)
        ),
    )
    .expect("conf");
    let child = chronyd_command(&conf, &["-x", "-d"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start chronyd");
    let guard = ChildGuard {
        child,
        name: "chronyd -x -d".into(),
    };
    let target = format!("127.0.0.1:{port}");
    wait_for_answers(&target, String::new);
    (guard, target)
}

/// `chronyd N.N` as `chronyd -v` names itself (for the interop matrix).
pub(crate) fn chronyd_version() -> String {
    let out = Command::new(chronyd())
        .arg("-v")
        .output()
        .expect("chronyd -v");
    let line = text(&out.stdout);
    // "chronyd (chrony) version 4.3 (+READLINE ...)"
    let version = line
        .split_whitespace()
        .skip_while(|w| *w != "version")
        .nth(1)
        .unwrap_or("?");
    format!("chronyd {version}")
}

/// Runs a `chronyd -Q -t LIMIT_S` client with configuration `conf` (and
/// `extra` arguments before `-Q`), its output in `log_path`, until it ends by
/// its own time limit (plus 5 s): whether it exited 0, and its log.
pub(crate) fn run_chronyd_client(
    conf: &Path,
    extra: &[&str],
    log_path: &Path,
    limit_s: u32,
) -> (bool, String) {
    let log = std::fs::File::create(log_path).expect("log");
    let limit = limit_s.to_string();
    let mut args = extra.to_vec();
    args.extend_from_slice(&["-Q", "-t", &limit]);
    let child = chronyd_command(conf, &args)
        .stdout(Stdio::from(log.try_clone().expect("log")))
        .stderr(Stdio::from(log))
        .spawn()
        .expect("start chronyd -Q");
    let mut guard = ChildGuard {
        child,
        name: "chronyd -Q".into(),
    };
    let status = guard
        .wait_for_exit(Duration::from_secs(u64::from(limit_s) + 5))
        .expect("chronyd -Q ends by its own timeout");
    (
        status.success(),
        std::fs::read_to_string(log_path).unwrap_or_default(),
    )
}

/// `authtime nts cert --out-dir DIR --prefix PREFIX --name localhost EXTRA...`:
/// a test CA and a leaf signed by it (or a self-signed leaf with
/// `--self-signed`), as `PREFIX-ca.pem`, `PREFIX-chain.pem` and `PREFIX-key.pem`.
pub(crate) fn nts_cert(dir: &TempDir, prefix: &str, extra: &[&str]) {
    let out_dir = dir.0.display().to_string();
    let mut args = vec![
        "nts",
        "cert",
        "--out-dir",
        &out_dir,
        "--prefix",
        prefix,
        "--name",
        "localhost",
    ];
    args.extend_from_slice(extra);
    let out = authtime(&args);
    assert!(out.status.success(), "nts cert: {}", text_of(&out));
}
