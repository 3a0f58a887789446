//! The processes and faults of the `soak` section (`section_soak`): Redis and
//! the daemon started under guards that kill them, the metrics and `/proc`
//! samples, and the injected faults (malformed packets, an NTS-KE flood, many
//! clients, SIGHUP, file replacement). All traffic stays on 127.0.0.0/8.

#![allow(unsafe_code, reason = "kill(2) to send SIGHUP to the daemon")]

use crate::section_nts_server::authtime_exe;
use std::{
    collections::BTreeMap,
    fs,
    io::{BufRead as _, BufReader, Read as _, Write as _},
    net::{SocketAddr, TcpStream, UdpSocket},
    path::{Path, PathBuf},
    process::{Child, Command, Stdio},
    sync::mpsc,
    time::{Duration, Instant},
};

/// A child process killed and reaped when dropped.
pub(crate) struct Guard(pub(crate) Child);

impl Drop for Guard {
    fn drop(&mut self) {
        if matches!(self.0.try_wait(), Ok(None)) {
            let _ = self.0.kill();
        }
        let _ = self.0.wait();
    }
}

pub(crate) fn start_redis(port: u16, log: &Path) -> Result<Guard, String> {
    let child = Command::new("redis-server")
        .args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
        .args(["--save", "", "--appendonly", "no"])
        .stdin(Stdio::null())
        .stdout(fs::File::create(log).map_err(|e| e.to_string())?)
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| format!("cannot start redis-server: {e}"))?;
    let guard = Guard(child);
    let deadline = Instant::now() + Duration::from_secs(10);
    while Instant::now() < deadline {
        if TcpStream::connect(("127.0.0.1", port)).is_ok() {
            return Ok(guard);
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    Err(format!("redis-server did not listen on {port} within 10 s"))
}

pub(crate) fn authtime(args: &[&str]) -> Result<String, String> {
    let out = Command::new(authtime_exe()?)
        .args(args)
        .output()
        .map_err(|e| format!("cannot run authtime: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "authtime {}: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// The daemon and where it listens.
pub(crate) struct Daemon {
    pub(crate) guard: Guard,
    pub(crate) log: PathBuf,
    pub(crate) ntp: SocketAddr,
    pub(crate) ke: SocketAddr,
    pub(crate) roughtime: SocketAddr,
    pub(crate) metrics: SocketAddr,
}

pub(crate) fn start_daemon(config: &Path, log: &Path) -> Result<Daemon, String> {
    let mut child = Command::new(authtime_exe()?)
        .arg("serve")
        .arg("--config")
        .arg(config)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(fs::File::create(log).map_err(|e| e.to_string())?)
        .spawn()
        .map_err(|e| format!("cannot start authtime serve: {e}"))?;
    let stdout = child.stdout.take().ok_or("no stdout")?;
    let guard = Guard(child);
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let deadline = Instant::now() + Duration::from_secs(15);
    let (mut ntp, mut ke, mut roughtime, mut metrics) = (None, None, None, None);
    while metrics.is_none() || ntp.is_none() || ke.is_none() || roughtime.is_none() {
        let left = deadline.saturating_duration_since(Instant::now());
        let Ok(line) = rx.recv_timeout(left) else {
            return Err(format!(
                "authtime serve did not start: {}",
                fs::read_to_string(log).unwrap_or_default()
            ));
        };
        if let Some(rest) = line.strip_prefix("listening on udp ") {
            ntp = ntp.or(rest.split_whitespace().next().and_then(|t| t.parse().ok()));
        }
        if let Some(rest) = line.strip_prefix("NTS-KE on tcp ") {
            ke = ke.or(rest.trim().parse().ok());
        }
        if let Some(rest) = line.strip_prefix("Roughtime on udp and tcp ") {
            roughtime = roughtime.or(rest.trim().parse().ok());
        }
        if let Some(rest) = line.strip_prefix("metrics on http://") {
            metrics = rest.trim_end_matches("/metrics").parse().ok();
        }
    }
    Ok(Daemon {
        guard,
        log: log.to_owned(),
        ntp: ntp.ok_or("no NTP address")?,
        ke: ke.ok_or("no NTS-KE address")?,
        roughtime: roughtime.ok_or("no Roughtime address")?,
        metrics: metrics.ok_or("no metrics address")?,
    })
}

pub(crate) fn scrape(addr: SocketAddr) -> BTreeMap<String, f64> {
    let mut out = BTreeMap::new();
    let Ok(mut s) = TcpStream::connect_timeout(&addr, Duration::from_secs(2)) else {
        return out;
    };
    let _ = s.set_read_timeout(Some(Duration::from_secs(5)));
    if s.write_all(b"GET /metrics HTTP/1.0\r\n\r\n").is_err() {
        return out;
    }
    let mut text = String::new();
    let _ = s.read_to_string(&mut text);
    for line in text.lines() {
        if !line.starts_with("authtime_") {
            continue;
        }
        if let Some((series, value)) = line.rsplit_once(' ')
            && let Ok(v) = value.trim().parse::<f64>()
        {
            out.insert(series.to_owned(), v);
        }
    }
    out
}

pub(crate) fn proc_sample(pid: u32) -> Option<(u64, u64, u64)> {
    let status = fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let rss = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))?
        .split_whitespace()
        .next()?
        .parse()
        .ok()?;
    let fds = fs::read_dir(format!("/proc/{pid}/fd")).ok()?.count() as u64;
    let threads = fs::read_dir(format!("/proc/{pid}/task")).ok()?.count() as u64;
    Some((rss, fds, threads))
}

/// A small xorshift generator for malformed packets (no cryptographic use).
pub(crate) struct Rng(pub(crate) u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: u64) -> usize {
        (self.next() % n) as usize
    }
    fn bytes(&mut self, n: usize) -> Vec<u8> {
        (0..n).map(|_| self.next() as u8).collect()
    }
}

pub(crate) fn malformed(d: &Daemon, rng: &mut Rng) -> String {
    let Ok(udp) = UdpSocket::bind("127.0.0.1:0") else {
        return "no socket".into();
    };
    let mut sent = 0;
    for i in 0..200usize {
        let len = (rng.next() % 200) as usize;
        let mut p = rng.bytes(len.max(1));
        // Every few: an NTP header that looks right, with junk after it.
        if i % 4 == 0 && p.len() >= 48 {
            p[0] = 0x23;
        }
        // NTS: a client request with an NTS extension field of random contents.
        if i % 4 == 1 {
            let mut q = vec![0u8; 48];
            q[0] = 0x23;
            q.extend_from_slice(&[0x01, 0x04, 0x00, 0x24]);
            q.extend_from_slice(&rng.bytes(32));
            q.extend_from_slice(&[0x02, 0x04, 0x00, 0x68]);
            q.extend_from_slice(&rng.bytes(100));
            p = q;
        }
        // A MAC under a key id the server does not have, and one with a short MAC.
        if i % 4 == 2 {
            let mut q = vec![0u8; 48];
            q[0] = 0x23;
            q.extend_from_slice(&(9999u32 + i as u32).to_be_bytes());
            q.extend_from_slice(&rng.bytes(if i % 8 == 2 { 16 } else { 7 }));
            p = q;
        }
        if udp.send_to(&p, d.ntp).is_ok() {
            sent += 1;
        }
        let n = if i % 2 == 0 { 1024 } else { rng.below(1100) };
        let mut r = rng.bytes(n);
        if i % 3 == 0 && r.len() >= 12 {
            r[..8].copy_from_slice(b"ROUGHTIM");
        }
        if udp.send_to(&r, d.roughtime).is_ok() {
            sent += 1;
        }
        if i % 10 == 0 {
            std::thread::sleep(Duration::from_millis(5));
        }
    }
    let mut tcp = 0;
    for _ in 0..40 {
        if let Ok(mut s) = TcpStream::connect_timeout(&d.ke, Duration::from_millis(500)) {
            let junk = {
                let n = 1 + rng.below(600);
                rng.bytes(n)
            };
            if s.write_all(&junk).is_ok() {
                tcp += 1;
            }
        }
        if let Ok(mut s) = TcpStream::connect_timeout(&d.roughtime, Duration::from_millis(500)) {
            let junk = {
                let n = 1 + rng.below(600);
                rng.bytes(n)
            };
            let _ = s.write_all(&junk);
        }
    }
    format!(
        "{sent} malformed datagrams (NTP, NTS, MAC, Roughtime), {tcp} junk NTS-KE streams and as many Roughtime TCP ones"
    )
}

pub(crate) fn ke_flood(d: &Daemon) -> String {
    let mut held = Vec::new();
    let mut opened = 0;
    for _ in 0..3 {
        for _ in 0..150 {
            if let Ok(s) = TcpStream::connect_timeout(&d.ke, Duration::from_millis(300)) {
                opened += 1;
                held.push(s);
            }
        }
        std::thread::sleep(Duration::from_millis(500));
        held.clear();
    }
    format!("{opened} NTS-KE connections opened and dropped without a handshake, 150 at a time")
}

pub(crate) fn many_clients(d: &Daemon) -> String {
    let mut request = [0u8; 48];
    request[0] = 0x23;
    let mut answered = 0;
    let mut sockets = Vec::new();
    for last in 2..=250u8 {
        if let Ok(s) = UdpSocket::bind((std::net::Ipv4Addr::new(127, 0, 0, last), 0)) {
            let _ = s.set_read_timeout(Some(Duration::from_millis(2)));
            sockets.push(s);
        }
    }
    for round in 0..3u64 {
        for s in &sockets {
            request[40..48].copy_from_slice(&(round + 1).to_be_bytes());
            let _ = s.send_to(&request, d.ntp);
        }
        let mut buf = [0u8; 128];
        for s in &sockets {
            if s.recv(&mut buf).is_ok() {
                answered += 1;
            }
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    // NTS-KE from many addresses too (the client-limit table).
    let mut ke = 0;
    for last in 2..=250u8 {
        let socket = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None);
        if let Ok(socket) = socket
            && socket
                .bind(&SocketAddr::from(([127, 0, 0, last], 0)).into())
                .is_ok()
            && socket
                .connect_timeout(&d.ke.into(), Duration::from_millis(300))
                .is_ok()
        {
            ke += 1;
        }
    }
    format!(
        "{} sources in 127.0.0.2-250, 3 NTP requests each ({answered} answered); {ke} NTS-KE connections from as many sources",
        sockets.len()
    )
}

pub(crate) fn sighup(pid: u32) -> bool {
    // SAFETY: kill(2) with a pid of a child this process started and has not reaped.
    unsafe { libc::kill(pid as libc::pid_t, libc::SIGHUP) == 0 }
}

pub(crate) fn replace_file(from: &Path, to: &Path) -> Result<(), String> {
    let tmp = to.with_extension("new");
    fs::copy(from, &tmp).map_err(|e| format!("copy {}: {e}", from.display()))?;
    fs::rename(&tmp, to).map_err(|e| format!("rename {}: {e}", to.display()))
}
