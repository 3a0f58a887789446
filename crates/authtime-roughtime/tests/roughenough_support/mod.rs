//! roughenough 2.2 and 1.3.0-draft14 as real interop peers: found, or built
//! once per machine, by `scripts/ensure-roughenough.sh`; servers started on
//! 127.0.0.1 and ports picked here, clients run with bounded waits. Every
//! process is killed when its guard drops. How each binary is run, and why,
//! is in docs/roughtime-peers.md.

use std::net::UdpSocket;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// Where the peers are, as `scripts/ensure-roughenough.sh` printed it.
#[derive(Debug)]
pub(crate) struct Install {
    /// `roughenough_server` and `roughenough_client` 2.2.
    pub(crate) bin22: PathBuf,
    /// `roughenough-server` and `roughenough-client` 1.3.0-draft14.
    pub(crate) bin13: PathBuf,
    /// The 2.2 server's version, as it reports it (`2.2.0`).
    pub(crate) version22: String,
    /// The 1.3 client's version, as it reports it (`1.3.0-draft14`).
    pub(crate) version13: String,
}

/// A cold build of both takes about 4 minutes on 2 CPUs; this bounds a much
/// slower machine, and a lock held by another build.
const ENSURE_LIMIT: Duration = Duration::from_secs(15 * 60);

/// Runs `scripts/ensure-roughenough.sh` once per test process (it returns at
/// once when the cache holds the builds) and returns what it printed.
pub(crate) fn install() -> &'static Install {
    static INSTALL: OnceLock<Install> = OnceLock::new();
    INSTALL.get_or_init(|| {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
        let script = root.join("scripts/ensure-roughenough.sh");
        let tmp = PathBuf::from(env!("CARGO_TARGET_TMPDIR"));
        let out = tmp.join("ensure-roughenough.out");
        let log = tmp.join("ensure-roughenough.log");
        let child = Command::new(&script)
            .stdin(Stdio::null())
            .stdout(std::fs::File::create(&out).expect("ensure-roughenough output"))
            .stderr(std::fs::File::create(&log).expect("ensure-roughenough log"))
            .spawn()
            .unwrap_or_else(|e| panic!("run {}: {e}", script.display()));
        let mut child = ChildGuard(child);
        let status = child.wait_bounded(ENSURE_LIMIT);
        let log_text = std::fs::read_to_string(&log).unwrap_or_default();
        let status = status.unwrap_or_else(|| {
            panic!(
                "scripts/ensure-roughenough.sh did not finish within {ENSURE_LIMIT:?}:\n{log_text}"
            )
        });
        assert!(
            status.success(),
            "scripts/ensure-roughenough.sh failed ({status}):\n{log_text}"
        );
        let printed = std::fs::read_to_string(&out).unwrap_or_default();
        let field = |name: &str| {
            printed
                .lines()
                .find_map(|l| l.strip_prefix(name)?.strip_prefix('='))
                .unwrap_or_else(|| panic!("ensure-roughenough.sh printed no {name}=: {printed}"))
                .to_owned()
        };
        Install {
            bin22: PathBuf::from(field("roughenough-2.2-bin")),
            bin13: PathBuf::from(field("roughenough-1.3-bin")),
            version22: field("roughenough-2.2-server-version"),
            version13: field("roughenough-1.3-version"),
        }
    })
}

/// A child process, killed and reaped when dropped.
pub(crate) struct ChildGuard(pub(crate) Child);

impl ChildGuard {
    /// Waits at most `limit` for the process to exit.
    pub(crate) fn wait_bounded(&mut self, limit: Duration) -> Option<ExitStatus> {
        let deadline = Instant::now() + limit;
        loop {
            if let Some(status) = self.0.try_wait().expect("try_wait") {
                return Some(status);
            }
            if Instant::now() >= deadline {
                return None;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for ChildGuard {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A directory of its own under the target's tmp directory, removed on drop.
pub(crate) struct TempDir(PathBuf);

impl TempDir {
    /// A fresh directory named after `name` and this process.
    pub(crate) fn new(name: &str) -> Self {
        static COUNT: AtomicUsize = AtomicUsize::new(0);
        let n = COUNT.fetch_add(1, Ordering::Relaxed);
        let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
            .join(format!("roughenough-{name}-{}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("temp dir");
        Self(dir)
    }

    /// A path inside the directory.
    pub(crate) fn path(&self, file: &str) -> PathBuf {
        self.0.join(file)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// `N` random bytes from the kernel (the crate has no RNG dependency).
pub(crate) fn random<const N: usize>() -> [u8; N] {
    use std::io::Read;
    let mut out = [0u8; N];
    std::fs::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut out))
        .expect("/dev/urandom");
    out
}

/// Seconds since the Unix epoch by the host clock.
pub(crate) fn now_secs() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("clock after 1970")
        .as_secs()
}

/// A UDP port on 127.0.0.1 that nothing was bound to a moment ago. Both
/// roughenough servers bind with SO_REUSEPORT, so a clash would not fail
/// their bind; the servers' keys are random per test, so a response from
/// another server would fail verification rather than pass unnoticed.
pub(crate) fn free_udp_port() -> u16 {
    UdpSocket::bind("127.0.0.1:0")
        .and_then(|s| s.local_addr())
        .expect("bind 127.0.0.1:0")
        .port()
}

/// A running roughenough server, killed when dropped.
pub(crate) struct Server {
    _process: ChildGuard,
    /// Where it listens.
    pub(crate) port: u16,
    /// Its long-term public key, as it logged it.
    pub(crate) public_key: [u8; 32],
    _dir: TempDir,
}

/// How long a server may take to log its public key.
const START_LIMIT: Duration = Duration::from_secs(15);

/// Writes `seed` as hex to `path` with mode 0600 (2.2 refuses anything looser).
fn write_secret(path: &Path, text: &str) {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
        .and_then(|mut f| f.write_all(text.as_bytes()))
        .expect("write secret file");
}

impl Server {
    /// roughenough 2.2's `roughenough_server` (version 1 only) with `seed`.
    pub(crate) fn start_22(seed: &[u8; 32]) -> Self {
        Self::start_22_with(seed, &[])
    }

    /// roughenough 2.2's server with `extra` arguments, such as
    /// `--fixed-offset 600` for a server that lies ten minutes ahead.
    pub(crate) fn start_22_with(seed: &[u8; 32], extra: &[&str]) -> Self {
        let dir = TempDir::new("server22");
        let seed_file = dir.path("seed.hex");
        write_secret(&seed_file, &format!("{}\n", hex::encode(seed)));
        let port = free_udp_port();
        let mut cmd = Command::new(install().bin22.join("roughenough_server"));
        cmd.args(["-i", "127.0.0.1", "-p", &port.to_string(), "-j", "1"])
            .args(extra)
            .arg("--seed-file")
            .arg(&seed_file);
        Self::spawn(cmd, dir, port, "Long term public key: PUBK(")
    }

    /// roughenough 1.3.0-draft14's `roughenough-server` (0x8000000c and
    /// Google's) with `seed`, one worker, at most `batch_size` requests per
    /// signed batch.
    pub(crate) fn start_13(seed: &[u8; 32], batch_size: u8) -> Self {
        let dir = TempDir::new("server13");
        let config = dir.path("r13.yaml");
        let port = free_udp_port();
        write_secret(
            &config,
            &format!(
                "interface: 127.0.0.1\nport: {port}\nseed: {}\nnum_workers: 1\nbatch_size: {batch_size}\n",
                hex::encode(seed)
            ),
        );
        let mut cmd = Command::new(install().bin13.join("roughenough-server"));
        cmd.arg(&config);
        Self::spawn(cmd, dir, port, "Long-term public key       : ")
    }

    fn spawn(mut cmd: Command, dir: TempDir, port: u16, key_prefix: &str) -> Self {
        let log = dir.path("server.log");
        let log_file = std::fs::File::create(&log).expect("server log");
        let child = cmd
            .env("NO_COLOR", "1")
            .stdin(Stdio::null())
            .stdout(Stdio::from(log_file.try_clone().expect("log")))
            .stderr(Stdio::from(log_file))
            .spawn()
            .expect("start roughenough server");
        let mut process = ChildGuard(child);
        let deadline = Instant::now() + START_LIMIT;
        let public_key = loop {
            let text = std::fs::read_to_string(&log).unwrap_or_default();
            let key = text.lines().find_map(|l| {
                let hex_key = &l[l.find(key_prefix)? + key_prefix.len()..];
                let bytes = hex::decode(hex_key.get(..64)?).ok()?;
                <[u8; 32]>::try_from(bytes).ok()
            });
            if let Some(key) = key {
                break key;
            }
            if let Some(status) = process.0.try_wait().expect("try_wait") {
                panic!("roughenough server exited ({status}):\n{text}");
            }
            assert!(
                Instant::now() < deadline,
                "roughenough server logged no public key within {START_LIMIT:?}:\n{text}"
            );
            std::thread::sleep(Duration::from_millis(20));
        };
        // It logs the key before binding; the queries retry until it answers.
        Self {
            _process: process,
            port,
            public_key,
            _dir: dir,
        }
    }
}

/// What a client run printed.
#[derive(Debug)]
pub(crate) struct ClientRun {
    /// The exit status, or `None` when it was killed at the time limit.
    pub(crate) status: Option<ExitStatus>,
    /// Standard output.
    pub(crate) stdout: String,
    /// Standard error.
    pub(crate) stderr: String,
}

/// A client process started by [`spawn_client`], not yet waited for.
pub(crate) struct PendingClient {
    process: ChildGuard,
    dir: TempDir,
}

/// Starts `program` with `args`, output to files (no pipes to fill up).
pub(crate) fn spawn_client(program: &Path, args: &[&str]) -> PendingClient {
    let dir = TempDir::new("client");
    let child = Command::new(program)
        .args(args)
        .env("NO_COLOR", "1")
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(dir.path("stdout")).expect("client stdout"))
        .stderr(std::fs::File::create(dir.path("stderr")).expect("client stderr"))
        .spawn()
        .unwrap_or_else(|e| panic!("start {}: {e}", program.display()));
    PendingClient {
        process: ChildGuard(child),
        dir,
    }
}

impl PendingClient {
    /// Waits at most `limit`, then kills it, and returns what it printed.
    pub(crate) fn finish(mut self, limit: Duration) -> ClientRun {
        let status = self.process.wait_bounded(limit);
        drop(self.process);
        ClientRun {
            status,
            stdout: std::fs::read_to_string(self.dir.path("stdout")).unwrap_or_default(),
            stderr: std::fs::read_to_string(self.dir.path("stderr")).unwrap_or_default(),
        }
    }
}

/// Seconds since the epoch for a 1.3 client time like `Nov 25 2026 21:14:11`
/// (UTC, as printed with `-z`/`-j`).
pub(crate) fn parse_13_time(text: &str) -> Option<u64> {
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    let mut parts = text.split_whitespace();
    let name = parts.next()?;
    let month = i64::try_from(MONTHS.iter().position(|m| *m == name)?).ok()? + 1;
    let day: i64 = parts.next()?.parse().ok()?;
    let year: i64 = parts.next()?.parse().ok()?;
    let mut hms = parts.next()?.split(':').map(|f| f.parse::<i64>());
    let (h, m, s) = (hms.next()?.ok()?, hms.next()?.ok()?, hms.next()?.ok()?);
    // Days from civil (Howard Hinnant's algorithm).
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (month + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    u64::try_from(days * 86_400 + h * 3600 + m * 60 + s).ok()
}

/// Checks a 2.2 client run made with `--epoch` (or `-f %s`): exit 0 and a
/// line `roughenough_client: EPOCH (+/-RADIUSs)` with EPOCH within 5 s of the
/// host clock and the expected radius.
pub(crate) fn assert_22_verified(run: &ClientRun, radius_s: u32, what: &str) {
    assert!(
        run.status.is_some_and(|s| s.success()),
        "{what}: roughenough_client failed: {run:?}"
    );
    let line = run
        .stdout
        .lines()
        .find_map(|l| l.split("roughenough_client: ").nth(1))
        .unwrap_or_else(|| panic!("{what}: no time in {run:?}"));
    let (epoch, radius) = line
        .trim()
        .split_once(' ')
        .unwrap_or_else(|| panic!("{what}: {line}"));
    let epoch: u64 = epoch
        .parse()
        .unwrap_or_else(|_| panic!("{what}: no epoch in {line}"));
    assert!(
        epoch.abs_diff(now_secs()) <= 5,
        "{what}: {epoch} is not the host's time: {line}"
    );
    assert_eq!(radius, format!("(+/-{radius_s}s)"), "{what}: {line}");
}
