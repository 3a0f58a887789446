//! NTPsec 1.2.2 as a real interop peer: Debian's `ntpsec` package, downloaded
//! and unpacked (never installed) once per machine by
//! `scripts/ensure-ntpsec.sh`, run from there.
//!
//! NTPsec's ports are fixed (NTP 123, NTS-KE 4460) and its ntpd wants to be
//! root. Each test therefore makes a [`Namespace`] (see docs/interop.md,
//! "NTPsec 1.2.2"): a user namespace in which the test's user is root, with
//! its own network namespace and loopback. ntpd is root there and binds 123
//! and 4460 of that loopback, but it has no CAP_SYS_TIME over the host's
//! clock (that capability counts only in the initial user namespace), so the
//! kernel refuses any clock change with EPERM; ntpd logs it and keeps
//! running. `authtime serve` and `authtime query` run in the same namespace.
//!
//! Every process in a namespace is started through `setpriv --pdeathsig
//! KILL`, so it dies with the test (whatever ends it), and is killed on drop.

use std::io::{BufRead as _, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::OnceLock;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use super::{ChildGuard, TempDir, authtime_bin, text, text_of, wait_bounded};

/// The peer's name in the interop matrix.
pub(crate) const PEER: &str = "NTPsec 1.2.2";

/// NTPsec's NTP port (fixed).
pub(crate) const NTP_PORT: u16 = 123;

/// NTPsec's NTS-KE port (fixed for its server; its client's default).
pub(crate) const NTS_KE_PORT: u16 = 4460;

/// Runs `scripts/ensure-ntpsec.sh` once per test process (it returns at once
/// when the cache holds the unpacked package) and returns ntpd's path.
pub(crate) fn ntpd() -> &'static Path {
    static NTPD: OnceLock<PathBuf> = OnceLock::new();
    NTPD.get_or_init(|| {
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/ensure-ntpsec.sh");
        let mut child = Command::new(&script)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("run {}: {e}", script.display()));
        let status = wait_bounded(&mut child, Duration::from_secs(300));
        let out = child.wait_with_output().expect("ensure-ntpsec output");
        assert!(
            status.is_some_and(|s| s.success()),
            "scripts/ensure-ntpsec.sh failed: {}",
            text_of(&out)
        );
        let path = PathBuf::from(text(&out.stdout).trim());
        assert!(path.exists(), "no ntpd at {}", path.display());
        path
    })
}

/// A user and network namespace with loopback up, held open by a process
/// that ends when the test's process does (its standard input closes).
pub(crate) struct Namespace {
    holder: ChildGuard,
}

impl Namespace {
    /// Makes the namespace and waits (up to 10 s) until its loopback is up.
    pub(crate) fn new() -> Self {
        let mut child = Command::new("setpriv")
            .args("--pdeathsig KILL unshare --user --map-root-user --net".split_whitespace())
            .args([
                "sh",
                "-c",
                "ip link set lo up && echo up && exec cat >/dev/null",
            ])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start unshare (util-linux)");
        let stdout = child.stdout.take().expect("piped");
        let holder = ChildGuard {
            child,
            name: "namespace holder".into(),
        };
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            let mut line = String::new();
            let _ = BufReader::new(stdout).read_line(&mut line);
            let _ = tx.send(line);
        });
        let line = rx.recv_timeout(Duration::from_secs(10)).unwrap_or_default();
        assert_eq!(
            line.trim(),
            "up",
            "could not make a user and network namespace (unshare --user --map-root-user \
             --net; does the kernel allow unprivileged user namespaces?)"
        );
        Self { holder }
    }

    /// `program` to be run inside the namespace, as its root, killed when
    /// the thread that starts it ends.
    pub(crate) fn command(&self, program: impl AsRef<std::ffi::OsStr>) -> Command {
        let mut command = Command::new("setpriv");
        command
            .args(["--pdeathsig", "KILL", "nsenter", "--target"])
            .arg(self.holder.pid().to_string())
            .args(["--user", "--net", "--preserve-credentials", "--"])
            .arg(program)
            .stdin(Stdio::null());
        command
    }

    /// Runs `command` (from [`Namespace::command`]) to completion within
    /// `limit`, with both outputs captured.
    pub(crate) fn output(mut command: Command, limit: Duration) -> Output {
        let out = std::env::temp_dir().join(format!(
            "authtime-ns-{}-{:?}",
            std::process::id(),
            std::thread::current().id()
        ));
        let (out_path, err_path) = (out.with_extension("out"), out.with_extension("err"));
        let mut child = command
            .stdout(std::fs::File::create(&out_path).expect("stdout file"))
            .stderr(std::fs::File::create(&err_path).expect("stderr file"))
            .spawn()
            .expect("start nsenter");
        let status = wait_bounded(&mut child, limit);
        let _ = child.kill();
        let status = status.unwrap_or_else(|| child.wait().expect("reaped"));
        let output = Output {
            status,
            stdout: std::fs::read(&out_path).unwrap_or_default(),
            stderr: std::fs::read(&err_path).unwrap_or_default(),
        };
        let _ = std::fs::remove_file(out_path);
        let _ = std::fs::remove_file(err_path);
        output
    }

    /// Adds `addr` (an IPv4 address) to the namespace's loopback for a
    /// server that must not share an address with ntpd (NTPsec refuses
    /// servers at 127.x.y.z other than 127.0.0.1, and names no server port),
    /// with 127.0.0.1 as the source address towards it: ntpd sends from the
    /// address the kernel picks, and binds only 127.0.0.1 then.
    pub(crate) fn add_address(&self, addr: &str) {
        for args in [
            format!("addr add {addr}/32 dev lo"),
            format!(
                "route replace local {addr} dev lo table local proto kernel scope host \
                 src 127.0.0.1"
            ),
        ] {
            let mut command = self.command("ip");
            command.args(args.split_whitespace());
            let out = Self::output(command, Duration::from_secs(10));
            assert!(out.status.success(), "ip {args}: {}", text_of(&out));
        }
    }

    /// `authtime <args>` inside the namespace (it must finish within 30 s).
    pub(crate) fn authtime(&self, args: &[&str]) -> Output {
        let mut command = self.command(authtime_bin());
        command.args(args);
        Self::output(command, Duration::from_secs(30))
    }

    /// `GET /metrics` from `127.0.0.1:port` inside the namespace (through
    /// bash's /dev/tcp: the test's own sockets live outside).
    pub(crate) fn scrape(&self, port: u16) -> String {
        let mut command = self.command("bash");
        command.args([
            "-c",
            &format!(
                "exec 3<>/dev/tcp/127.0.0.1/{port} && \
                 printf 'GET /metrics HTTP/1.0\\r\\n\\r\\n' >&3 && cat <&3"
            ),
        ]);
        let out = Self::output(command, Duration::from_secs(10));
        let body = text(&out.stdout);
        assert!(body.starts_with("HTTP/1.0 200 OK"), "{}", text_of(&out));
        body
    }

    /// Runs `query` (arguments of `authtime query`) until it exits 0 or
    /// `limit` passes, and returns the last run.
    pub(crate) fn query_until_ok(&self, query: &[&str], limit: Duration) -> Output {
        let deadline = Instant::now() + limit;
        loop {
            let mut args = vec!["query"];
            args.extend_from_slice(query);
            let out = self.authtime(&args);
            if out.status.success() || Instant::now() >= deadline {
                return out;
            }
            std::thread::sleep(Duration::from_millis(250));
        }
    }
}

/// A running `ntpd -n` in a [`Namespace`], its files in the test's directory.
pub(crate) struct Ntpd {
    /// The process (killed on drop).
    pub(crate) process: ChildGuard,
    /// Its log (`-l`).
    pub(crate) log: PathBuf,
    /// Its statistics directory (`peerstats`).
    pub(crate) stats: PathBuf,
}

/// The configuration lines that keep ntpd's files in `dir` under `name`:
/// drift file, statistics and logging of every event class.
fn private_lines(dir: &TempDir, name: &str) -> String {
    let stats = dir.path(&format!("{name}-stats"));
    std::fs::create_dir_all(&stats).expect("stats dir");
    format!(
        "driftfile {}\nstatsdir {}/\nstatistics peerstats\n\
         filegen peerstats file peerstats type none enable\nlogconfig =all\n",
        dir.path(&format!("{name}.drift")).display(),
        stats.display()
    )
}

/// The lines of an NTPsec server synchronized to its own clock: the local
/// refclock, preferred, polled every 2 s. It syncs about 1 s after start but
/// announces a root dispersion of 7.95 s then, halved at each poll: below
/// RFC 5905's 1.5 s limit on root distance after about 7 s. Explicit
/// `restrict` lines without `limited`: by default NTPsec stops answering a
/// client that asks several times a second.
pub(crate) const LOCAL_CLOCK_SERVER_LINES: &str = "server 127.127.1.0 minpoll 0 maxpoll 0 prefer\nfudge 127.127.1.0 stratum 5\n\
     restrict default\nrestrict 127.0.0.1\n";

/// [`LOCAL_CLOCK_SERVER_LINES`] with its NTS-KE server on, certificate
/// `<prefix>-chain.pem` and key `<prefix>-key.pem` of `dir`, cookie keys in
/// `<name>.ntskeys`.
pub(crate) fn nts_server_lines(dir: &TempDir, name: &str, prefix: &str) -> String {
    format!(
        "{LOCAL_CLOCK_SERVER_LINES}nts enable\nnts cert {}\nnts key {}\nnts cookie {}\n",
        dir.path(&format!("{prefix}-chain.pem")).display(),
        dir.path(&format!("{prefix}-key.pem")).display(),
        dir.path(&format!("{name}.ntskeys")).display(),
    )
}

impl Ntpd {
    /// Starts `ntpd -n -4 -c <dir>/<name>.conf -l <dir>/<name>.log` in `ns`
    /// with `body` and the lines that keep its files in `dir`; waits (up to
    /// 10 s) until its log says it listens on 127.0.0.1:123 and, when `body`
    /// enables its NTS-KE server, that it has loaded its key.
    pub(crate) fn start(ns: &Namespace, dir: &TempDir, name: &str, body: &str) -> Self {
        let conf = dir.path(&format!("{name}.conf"));
        let log = dir.path(&format!("{name}.log"));
        let _ = std::fs::remove_file(&log);
        std::fs::write(&conf, format!("{}{body}", private_lines(dir, name))).expect("conf");
        let mut command = ns.command(ntpd());
        command
            .arg("-n")
            .arg("-4")
            .arg("-c")
            .arg(&conf)
            .arg("-l")
            .arg(&log)
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(dir.path(&format!("{name}.stderr"))).expect("stderr"));
        let child = command.spawn().expect("start ntpd");
        let mut ntpd = Self {
            process: ChildGuard {
                child,
                name: format!("NTPsec ntpd ({name})"),
            },
            log,
            stats: dir.path(&format!("{name}-stats")),
        };
        ntpd.wait_log(" lo 127.0.0.1:123", Duration::from_secs(10));
        if body.contains("nts enable") {
            ntpd.wait_log("NTSs: Private Key OK", Duration::from_secs(10));
        }
        ntpd
    }

    /// Its log so far.
    pub(crate) fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// Its peer statistics so far (one line per sample its clock filter took).
    pub(crate) fn peerstats(&self) -> String {
        std::fs::read_to_string(self.stats.join("peerstats")).unwrap_or_default()
    }

    /// Waits until its log holds `needle` or `limit` passes (then fails the
    /// test with the log); fails at once if ntpd exited.
    pub(crate) fn wait_log(&mut self, needle: &str, limit: Duration) -> String {
        let deadline = Instant::now() + limit;
        loop {
            let log = self.log_text();
            if log.contains(needle) {
                return log;
            }
            if let Ok(Some(status)) = self.process.child.try_wait() {
                panic!(
                    "{} exited ({status}) before \"{needle}\":\n{log}",
                    self.process.name
                );
            }
            assert!(
                Instant::now() < deadline,
                "{}: no \"{needle}\" within {limit:?}:\n{log}",
                self.process.name
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Stops it (SIGTERM, then SIGKILL after 5 s) and waits for it.
    pub(crate) fn stop(mut self) {
        self.process.signal("TERM");
        if self.process.wait_for_exit(Duration::from_secs(5)).is_none() {
            let _ = self.process.child.kill();
        }
    }
}

/// What NTPsec's server logs per NTS-KE session ("NTSs: NTS-KE from
/// 127.0.0.1:45172, Using TLSv1.3, ..., took 0.002 sec, ...").
pub(crate) const SERVER_KE_LINE: &str = "NTSs: NTS-KE from ";

/// What NTPsec's client logs per NTS-KE session ("NTSc: NTS-KE req to
/// localhost took 0.003 sec, OK").
pub(crate) const CLIENT_KE_LINE: &str = "NTSc: NTS-KE req to ";

/// The NTS-KE handshake times (seconds, as NTPsec rounds them: to the
/// millisecond) on the log lines that hold `marker` ([`SERVER_KE_LINE`] or
/// [`CLIENT_KE_LINE`]), in log order.
pub(crate) fn nts_ke_times(log: &str, marker: &str) -> Vec<f64> {
    log.lines()
        .filter(|l| l.contains(marker))
        .filter_map(|l| {
            let rest = &l[l.find(" took ")? + 6..];
            rest.split_whitespace().next()?.parse().ok()
        })
        .collect()
}

/// The metrics port of [`ServeInNamespace`] (the namespace is private, so a
/// fixed port is free).
pub(crate) const SERVE_METRICS_PORT: u16 = 9123;

/// `authtime serve` running in a [`Namespace`].
pub(crate) struct ServeInNamespace {
    /// The process (killed on drop).
    pub(crate) process: ChildGuard,
    /// Its log (standard error).
    pub(crate) log: PathBuf,
}

impl ServeInNamespace {
    /// Starts `authtime serve --config <dir>/<name>.toml` in `ns` with
    /// `body` (which must not set `[metrics]` or `[clock]`: metrics go to
    /// [`SERVE_METRICS_PORT`], the clock is the lab's declared stratum-2
    /// clock), and waits (up to 10 s) until it says its metrics listen.
    pub(crate) fn start(ns: &Namespace, dir: &TempDir, name: &str, body: &str) -> Self {
        let config = dir.path(&format!("{name}.toml"));
        std::fs::write(
            &config,
            format!(
                "{body}\n{}[metrics]\nlisten = \"127.0.0.1:{SERVE_METRICS_PORT}\"\n",
                super::LAB_CLOCK
            ),
        )
        .expect("config");
        let log = dir.path(&format!("{name}.log"));
        let out = dir.path(&format!("{name}.out"));
        let mut command = ns.command(authtime_bin());
        command
            .arg("serve")
            .arg("--config")
            .arg(&config)
            .stdout(std::fs::File::create(&out).expect("stdout file"))
            .stderr(std::fs::File::create(&log).expect("log file"));
        let mut process = ChildGuard {
            child: command.spawn().expect("start authtime serve"),
            name: "authtime serve".into(),
        };
        let deadline = Instant::now() + Duration::from_secs(10);
        while !std::fs::read_to_string(&out)
            .unwrap_or_default()
            .contains("metrics on http://")
        {
            let log_text = std::fs::read_to_string(&log).unwrap_or_default();
            assert!(
                matches!(process.child.try_wait(), Ok(None)) && Instant::now() < deadline,
                "authtime serve did not start: {log_text}"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        Self { process, log }
    }

    /// The server's log so far.
    pub(crate) fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }
}
