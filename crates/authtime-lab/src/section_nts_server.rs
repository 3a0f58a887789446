//! The servers of section `nts`: `authtime serve` and chronyd as NTS servers
//! on loopback, started pinned to one CPU with the same CA-signed P-256
//! certificate, killed (and reaped) when their guard is dropped; their CPU
//! time, and authtime's server-side histograms read from its metrics.

#![allow(
    unsafe_code,
    reason = "sched_setaffinity in pre_exec, geteuid, sysconf"
)]

use crate::section_ntp::LAB_CLOCK;
use std::{
    fs,
    io::{Read as _, Write as _},
    net::{SocketAddr, TcpListener, TcpStream, UdpSocket},
    os::unix::process::CommandExt as _,
    path::{Path, PathBuf},
    process::{Child, Command, Stdio},
    sync::atomic::{AtomicUsize, Ordering},
    time::{Duration, Instant},
};

/// How long a server may take to accept its first NTS-KE connection.
const START_LIMIT: Duration = Duration::from_secs(10);

/// A temporary directory removed when dropped.
pub struct Scratch(PathBuf);

impl Scratch {
    /// A fresh directory under the system's temporary directory, its own
    /// even when several are made at once in one process (tests).
    ///
    /// # Errors
    /// When it cannot be created.
    pub fn new() -> Result<Self, String> {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let dir = std::env::temp_dir().join(format!("authtime-lab-nts-{}-{n}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
        Ok(Self(dir))
    }

    /// A path inside.
    #[must_use]
    pub fn path(&self, name: &str) -> PathBuf {
        self.0.join(name)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}

/// A server process, killed and reaped when dropped.
pub struct NtsServer {
    child: Child,
    /// `authtime` or `chronyd`.
    pub name: &'static str,
    log: PathBuf,
    /// NTS-KE address.
    pub ke: SocketAddr,
    /// Plain NTP address.
    pub ntp: SocketAddr,
    /// Prometheus endpoint (authtime only).
    pub metrics: Option<SocketAddr>,
    /// Whether the process was pinned to its CPU.
    pub pinned: bool,
}

impl NtsServer {
    /// An error when the process has exited, with the end of its log.
    ///
    /// # Errors
    /// The process is gone.
    pub fn check_alive(&mut self) -> Result<(), String> {
        match self.child.try_wait() {
            Ok(None) => Ok(()),
            Ok(Some(status)) => Err(format!(
                "{} exited ({status}): {}",
                self.name,
                log_tail(&self.log)
            )),
            Err(e) => Err(format!("{}: {e}", self.name)),
        }
    }

    /// CPU seconds (user + system) of the server and its child processes
    /// (chronyd's NTS-KE helpers).
    #[must_use]
    pub fn cpu_seconds(&self) -> Option<f64> {
        self.cpu_split().map(|(user, system)| user + system)
    }

    /// [`NtsServer::cpu_seconds`] split into user and system (kernel) time.
    pub fn cpu_split(&self) -> Option<(f64, f64)> {
        let root = self.child.id();
        let (mut user, mut system) = process_cpu_split(root)?;
        if let Ok(entries) = fs::read_dir("/proc") {
            for entry in entries.flatten() {
                let Some(pid) = entry.file_name().to_str().and_then(|p| p.parse().ok()) else {
                    continue;
                };
                if pid != root
                    && parent_of(pid) == Some(root)
                    && let Some((u, s)) = process_cpu_split(pid)
                {
                    user += u;
                    system += s;
                }
            }
        }
        Some((user, system))
    }
}

impl Drop for NtsServer {
    fn drop(&mut self) {
        if matches!(self.child.try_wait(), Ok(None)) {
            let _ = self.child.kill();
        }
        let _ = self.child.wait();
    }
}

pub(crate) fn log_tail(log: &Path) -> String {
    let text = fs::read_to_string(log).unwrap_or_default();
    let lines: Vec<&str> = text.lines().rev().take(3).collect();
    lines.into_iter().rev().collect::<Vec<_>>().join(" / ")
}

fn parent_of(pid: u32) -> Option<u32> {
    let stat = fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let rest = &stat[stat.rfind(')')? + 2..];
    rest.split_whitespace().nth(1)?.parse().ok()
}

/// User plus system CPU seconds of process `pid`.
pub(crate) fn process_cpu(pid: u32) -> Option<f64> {
    process_cpu_split(pid).map(|(user, system)| user + system)
}

/// User and system CPU seconds of process `pid` (`/proc/PID/stat`, in
/// clock ticks of 1/100 s).
pub(crate) fn process_cpu_split(pid: u32) -> Option<(f64, f64)> {
    let stat = fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let rest = &stat[stat.rfind(')')? + 2..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let utime: u64 = fields.get(11)?.parse().ok()?;
    let stime: u64 = fields.get(12)?.parse().ok()?;
    // SAFETY: sysconf has no preconditions.
    let ticks = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    (ticks > 0).then(|| (utime as f64 / ticks as f64, stime as f64 / ticks as f64))
}

/// Pins the calling thread to `cpu`; threads and processes it starts later inherit it.
#[must_use]
pub fn pin_current(cpu: usize) -> bool {
    // SAFETY: an all-zero cpu_set_t is a valid empty set; CPU_SET writes inside
    // it (cpu is checked against its size); sched_setaffinity only reads it.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        if cpu >= 8 * std::mem::size_of::<libc::cpu_set_t>() {
            return false;
        }
        libc::CPU_SET(cpu, &mut set);
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &raw const set) == 0
    }
}

/// Lets the calling thread run on every online CPU again.
pub fn unpin_current() {
    // SAFETY: as in `pin_current`; sysconf has no preconditions.
    unsafe {
        let online = libc::sysconf(libc::_SC_NPROCESSORS_ONLN).max(1) as usize;
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        for cpu in 0..online.min(8 * std::mem::size_of::<libc::cpu_set_t>()) {
            libc::CPU_SET(cpu, &mut set);
        }
        let _ = libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &raw const set);
    }
}

pub(crate) fn free_tcp_port() -> Result<u16, String> {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|s| s.local_addr())
        .map(|a| a.port())
        .map_err(|e| format!("no free TCP port on 127.0.0.1: {e}"))
}

pub(crate) fn free_udp_port() -> Result<u16, String> {
    UdpSocket::bind("127.0.0.1:0")
        .and_then(|s| s.local_addr())
        .map(|a| a.port())
        .map_err(|e| format!("no free UDP port on 127.0.0.1: {e}"))
}

/// The `authtime` executable beside this one (or one directory up, for test binaries).
///
/// # Errors
/// When it is not there.
pub fn authtime_exe() -> Result<PathBuf, String> {
    let me = std::env::current_exe().map_err(|e| format!("cannot find this executable: {e}"))?;
    let exe = me.with_file_name("authtime");
    // Test binaries live one level down, in target/<profile>/deps.
    let above = me
        .parent()
        .and_then(Path::parent)
        .map(|d| d.join("authtime"));
    match [Some(exe.clone()), above]
        .into_iter()
        .flatten()
        .find(|p| p.is_file())
    {
        Some(found) => Ok(found),
        None => Err(format!(
            "{} not found (build it with `cargo build -p authtime`, same profile)",
            exe.display()
        )),
    }
}

/// The certificate files both servers use.
pub struct Certificates {
    /// The CA clients trust.
    pub ca: PathBuf,
    /// Leaf then CA.
    pub chain: PathBuf,
    /// The leaf's P-256 key.
    pub key: PathBuf,
}

/// Makes a CA and a `localhost`/127.0.0.1 leaf with `authtime nts cert`.
///
/// # Errors
/// When the command fails.
pub fn make_certificates(dir: &Scratch) -> Result<Certificates, String> {
    let out = Command::new(authtime_exe()?)
        .args([
            "nts",
            "cert",
            "--name",
            "localhost",
            "--ip",
            "127.0.0.1",
            "--out-dir",
        ])
        .arg(&dir.0)
        .output()
        .map_err(|e| format!("cannot run authtime nts cert: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "authtime nts cert: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    Ok(Certificates {
        ca: dir.path("nts-ca.pem"),
        chain: dir.path("nts-chain.pem"),
        key: dir.path("nts-key.pem"),
    })
}

/// Starts `command` pinned to `cpu` (when given) with its standard error in
/// `log`; returns the child and whether the pin holds.
pub(crate) fn spawn_pinned(
    mut command: Command,
    cpu: Option<usize>,
    log: &Path,
    what: &str,
) -> Result<(Child, bool), String> {
    if let Some(cpu) = cpu {
        // SAFETY: the closure runs between fork and exec and only calls
        // sched_setaffinity (async-signal-safe) on a stack-local set.
        unsafe {
            command.pre_exec(move || {
                let mut set: libc::cpu_set_t = std::mem::zeroed();
                libc::CPU_SET(cpu, &mut set);
                // Best effort: a refused pin leaves the process unpinned.
                let _ = libc::sched_setaffinity(
                    0,
                    std::mem::size_of::<libc::cpu_set_t>(),
                    &raw const set,
                );
                Ok(())
            });
        }
    }
    let child = command
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(fs::File::create(log).map_err(|e| e.to_string())?)
        .spawn()
        .map_err(|e| format!("cannot start {what}: {e}"))?;
    let pinned = cpu.is_some_and(|cpu| affinity_is(child.id(), cpu));
    Ok((child, pinned))
}

/// Whether process `pid` may run only on `cpu`.
fn affinity_is(pid: u32, cpu: usize) -> bool {
    let Ok(status) = fs::read_to_string(format!("/proc/{pid}/status")) else {
        return false;
    };
    status
        .lines()
        .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
        .is_some_and(|v| v.trim() == cpu.to_string())
}

/// Waits until the NTS-KE port accepts connections and NTP answers (bounded).
fn wait_ready(server: &mut NtsServer) -> Result<(), String> {
    let deadline = Instant::now() + START_LIMIT;
    let udp = UdpSocket::bind("127.0.0.1:0").map_err(|e| e.to_string())?;
    udp.set_read_timeout(Some(Duration::from_millis(100)))
        .map_err(|e| e.to_string())?;
    let mut request = [0u8; 48];
    request[0] = 0x23;
    request[40..48].copy_from_slice(&0x1234_5678_9abc_def0u64.to_be_bytes());
    let mut buf = [0u8; 512];
    while Instant::now() < deadline {
        server.check_alive()?;
        let ke = TcpStream::connect_timeout(&server.ke, Duration::from_millis(200)).is_ok();
        let _ = udp.send_to(&request, server.ntp);
        let ntp = udp.recv(&mut buf).is_ok_and(|n| n >= 48);
        if ke && ntp {
            return Ok(());
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    Err(format!(
        "{} did not serve NTS-KE and NTP within {} s: {}",
        server.name,
        START_LIMIT.as_secs(),
        log_tail(&server.log)
    ))
}

/// `authtime serve`: one NTP worker and one NTS-KE worker, rate limiting off,
/// pinned to `cpu` when given.
///
/// # Errors
/// When it cannot be configured or started.
pub fn start_authtime(
    dir: &Scratch,
    certs: &Certificates,
    cpu: Option<usize>,
) -> Result<NtsServer, String> {
    start_authtime_with(dir, certs, cpu, false)
}

/// [`start_authtime`] with NTS-KE's per-client limits on (their defaults)
/// when `client_limit`.
///
/// # Errors
/// As [`start_authtime`].
pub fn start_authtime_with(
    dir: &Scratch,
    certs: &Certificates,
    cpu: Option<usize>,
    client_limit: bool,
) -> Result<NtsServer, String> {
    let (ntp, ke, metrics) = (free_udp_port()?, free_tcp_port()?, free_tcp_port()?);
    let config = dir.path("serve.toml");
    fs::write(
        &config,
        format!(
            "[ntp]\nlisten = [\"127.0.0.1:{ntp}\"]\nworkers = 1\n\
             [rate-limit]\nenabled = false\n{LAB_CLOCK}\
             [nts-ke]\nlisten = [\"127.0.0.1:{ke}\"]\ncertificate-chain = \"{}\"\n\
             private-key = \"{}\"\nworkers = 1\nmax-connections = 512\n\
             client-limit = {client_limit}\n\
             [keystore]\nkind = \"embedded\"\npath = \"{}\"\n\
             [metrics]\nlisten = \"127.0.0.1:{metrics}\"\n",
            certs.chain.display(),
            certs.key.display(),
            dir.path("master-keys").display()
        ),
    )
    .map_err(|e| format!("cannot write {}: {e}", config.display()))?;
    let mut command = Command::new(authtime_exe()?);
    command.arg("serve").arg("--config").arg(&config);
    let log = dir.path("serve.log");
    let (child, pinned) = spawn_pinned(command, cpu, &log, "authtime serve")?;
    let mut server = NtsServer {
        child,
        name: "authtime",
        log,
        ke: SocketAddr::from(([127, 0, 0, 1], ke)),
        ntp: SocketAddr::from(([127, 0, 0, 1], ntp)),
        metrics: Some(SocketAddr::from(([127, 0, 0, 1], metrics))),
        pinned,
    };
    wait_ready(&mut server)?;
    Ok(server)
}

/// chronyd from `PATH` (or the usual sbin directories).
#[must_use]
pub fn find_chronyd() -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .chain(["/usr/sbin", "/sbin", "/usr/local/sbin"].map(PathBuf::from))
        .map(|d| d.join("chronyd"))
        .find(|p| p.is_file())
}

/// chronyd as an NTS server on loopback, never touching the clock
/// (`-4 -x -d`), serving all of 127.0.0.0/8, with `helpers` NTS-KE helper
/// processes, 512 NTS-KE connections per process and no rate limiting
/// (chrony limits only when `ratelimit`/`ntsratelimit` are given) unless
/// `ntsratelimit` gives the directive's options, pinned to `cpu` when given.
///
/// # Errors
/// When it cannot be configured or started.
pub fn start_chronyd(
    chronyd: &Path,
    dir: &Scratch,
    certs: &Certificates,
    cpu: Option<usize>,
    helpers: u32,
    ntsratelimit: Option<&str>,
) -> Result<NtsServer, String> {
    let (ntp, ke) = (free_udp_port()?, free_tcp_port()?);
    let conf = dir.path("chrony.conf");
    let limit = ntsratelimit.map_or(String::new(), |o| format!("ntsratelimit {o}\n"));
    fs::write(
        &conf,
        format!(
            "port {ntp}\nbindaddress 127.0.0.1\nallow 127.0.0.0/8\nlocal stratum 8\n\
             ntsport {ke}\nntsserverkey {}\nntsservercert {}\nntsprocesses {helpers}\n\
             maxntsconnections 512\n{limit}pidfile {}\ncmdport 0\nbindcmdaddress /\n",
            certs.key.display(),
            certs.chain.display(),
            dir.path("chronyd.pid").display()
        ),
    )
    .map_err(|e| format!("cannot write {}: {e}", conf.display()))?;
    let mut command = Command::new(chronyd);
    command.args(["-4", "-x", "-d", "-f"]).arg(&conf);
    // SAFETY: geteuid has no preconditions and cannot fail.
    if unsafe { libc::geteuid() } == 0 {
        command.args(["-u", "root"]);
    }
    let log = dir.path("chronyd.log");
    let (child, pinned) = spawn_pinned(command, cpu, &log, "chronyd")?;
    let mut server = NtsServer {
        child,
        name: "chronyd",
        log,
        ke: SocketAddr::from(([127, 0, 0, 1], ke)),
        ntp: SocketAddr::from(([127, 0, 0, 1], ntp)),
        metrics: None,
        pinned,
    };
    wait_ready(&mut server)?;
    Ok(server)
}

/// One Prometheus histogram, summed over its label sets.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct Histogram {
    /// (upper bound in seconds, cumulative count), ascending; +Inf last.
    pub buckets: Vec<(f64, u64)>,
    /// Sum of the samples, seconds.
    pub sum: f64,
    /// Number of samples.
    pub count: u64,
}

impl Histogram {
    /// `self − earlier` (the samples of an interval).
    #[must_use]
    pub fn since(&self, earlier: &Histogram) -> Histogram {
        Histogram {
            buckets: self
                .buckets
                .iter()
                .map(|&(le, n)| {
                    let before = earlier
                        .buckets
                        .iter()
                        .find(|b| b.0 == le)
                        .map_or(0, |b| b.1);
                    (le, n.saturating_sub(before))
                })
                .collect(),
            sum: (self.sum - earlier.sum).max(0.0),
            count: self.count.saturating_sub(earlier.count),
        }
    }

    /// Mean in microseconds.
    #[must_use]
    pub fn mean_us(&self) -> Option<f64> {
        (self.count > 0).then(|| self.sum / self.count as f64 * 1e6)
    }

    /// The upper bound (µs) of the bucket holding quantile `q`.
    #[must_use]
    pub fn quantile_bound_us(&self, q: f64) -> Option<f64> {
        let target = (self.count as f64 * q).ceil() as u64;
        self.buckets
            .iter()
            .find(|b| b.1 >= target.max(1))
            .map(|b| b.0 * 1e6)
            .filter(|v| v.is_finite())
    }
}

/// Parses histogram `name` from a Prometheus text exposition; `None` when absent.
#[must_use]
pub fn parse_histogram(text: &str, name: &str) -> Option<Histogram> {
    let mut h = Histogram::default();
    let mut seen = false;
    let bucket = format!("{name}_bucket");
    let (sum, count) = (format!("{name}_sum"), format!("{name}_count"));
    for line in text.lines().filter(|l| !l.starts_with('#')) {
        let Some((series, value)) = line.rsplit_once(' ') else {
            continue;
        };
        let metric = series.split('{').next().unwrap_or(series);
        let Ok(v) = value.trim().parse::<f64>() else {
            continue;
        };
        if metric == bucket {
            let le = series
                .split("le=\"")
                .nth(1)
                .and_then(|r| r.split('"').next())
                .map(|s| {
                    if s == "+Inf" {
                        Ok(f64::INFINITY)
                    } else {
                        s.parse::<f64>()
                    }
                });
            if let Some(Ok(le)) = le {
                seen = true;
                match h.buckets.iter_mut().find(|b| b.0 == le) {
                    Some(b) => b.1 += v as u64,
                    None => h.buckets.push((le, v as u64)),
                }
            }
        } else if metric == sum {
            h.sum += v;
        } else if metric == count {
            h.count += v as u64;
        }
    }
    h.buckets.sort_by(|a, b| a.0.total_cmp(&b.0));
    seen.then_some(h)
}

/// Fetches `/metrics` (bounded by a 2 s timeout).
///
/// # Errors
/// When the endpoint does not answer.
pub fn scrape(addr: SocketAddr) -> Result<String, String> {
    let mut stream = TcpStream::connect_timeout(&addr, Duration::from_secs(2))
        .map_err(|e| format!("metrics {addr}: {e}"))?;
    stream
        .set_read_timeout(Some(Duration::from_secs(2)))
        .map_err(|e| e.to_string())?;
    stream
        .write_all(b"GET /metrics HTTP/1.0\r\nHost: localhost\r\n\r\n")
        .map_err(|e| format!("metrics {addr}: {e}"))?;
    let mut body = String::new();
    stream
        .read_to_string(&mut body)
        .map_err(|e| format!("metrics {addr}: {e}"))?;
    Ok(body)
}

/// The server-side histograms of authtime: d_SKE, d_SNTS, d_SNTP.
pub const SERVER_HISTOGRAMS: [(&str, &str); 3] = [
    ("d_SKE", "authtime_ntske_response_seconds"),
    ("d_SNTS", "authtime_nts_response_seconds"),
    ("d_SNTP", "authtime_ntp_response_seconds"),
];

/// The three server-side histograms now (each `None` when the server does not export it).
#[must_use]
pub fn server_histograms(server: &NtsServer) -> [Option<Histogram>; 3] {
    let text = server
        .metrics
        .and_then(|m| scrape(m).ok())
        .unwrap_or_default();
    SERVER_HISTOGRAMS.map(|(_, name)| parse_histogram(&text, name))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn histograms_parse_and_subtract() {
        let text = "# TYPE x histogram\nx_bucket{le=\"0.000016\"} 3\nx_bucket{le=\"0.000032\"} 9\n\
                    x_bucket{le=\"+Inf\"} 10\nx_sum 0.0002\nx_count 10\ny_count 4\n";
        let h = parse_histogram(text, "x").expect("present");
        assert_eq!(h.count, 10);
        assert_eq!(h.buckets.len(), 3);
        assert!((h.mean_us().expect("mean") - 20.0).abs() < 1e-6);
        assert_eq!(h.quantile_bound_us(0.5), Some(32.0));
        assert_eq!(parse_histogram(text, "y"), None);
        let d = h.since(&Histogram {
            buckets: vec![(0.000016, 1)],
            sum: 0.0001,
            count: 5,
        });
        assert_eq!((d.count, d.buckets[0].1), (5, 2));
    }
}
