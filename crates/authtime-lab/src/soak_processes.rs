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

/// A Redis data node on `port`, its files (the RDB a replica receives, or
/// one restored into it) in `dir`.
fn start_redis_node(
    port: u16,
    master: Option<u16>,
    dir: &Path,
    log: &Path,
) -> Result<Guard, String> {
    fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let mut cmd = Command::new("redis-server");
    cmd.args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
        .args(["--save", "", "--appendonly", "no"])
        .arg("--dir")
        .arg(dir)
        .args(["--dbfilename", "dump.rdb"]);
    if let Some(master) = master {
        cmd.args(["--replicaof", "127.0.0.1", &master.to_string()]);
    }
    let out = fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(log)
        .map_err(|e| e.to_string())?;
    let child = cmd
        .stdin(Stdio::null())
        .stdout(out)
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| format!("cannot start redis-server: {e}"))?;
    let guard = Guard(child);
    wait_listening(port, "redis-server")?;
    Ok(guard)
}

fn wait_listening(port: u16, what: &str) -> Result<(), String> {
    let deadline = Instant::now() + Duration::from_secs(10);
    while Instant::now() < deadline {
        if TcpStream::connect(("127.0.0.1", port)).is_ok() {
            return Ok(());
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    Err(format!("{what} did not listen on {port} within 10 s"))
}

/// The key store of the soak: a Redis master, its replica and one sentinel
/// that monitors them as `soak` (the daemon finds the master through the
/// sentinel), on free loopback ports, without persistence.
pub(crate) struct RedisSet {
    nodes: [Option<Guard>; 2],
    ports: [u16; 2],
    /// Index of the node the sentinel names as master.
    master: usize,
    sentinel_port: u16,
    _sentinel: Guard,
    dir: PathBuf,
}

/// The master's name at the sentinel.
pub(crate) const SENTINEL_MASTER: &str = "soak";

impl RedisSet {
    pub(crate) fn start(dir: &Path, ports: [u16; 2], sentinel_port: u16) -> Result<Self, String> {
        let master = start_redis_node(
            ports[0],
            None,
            &dir.join("redis-0"),
            &dir.join("redis-0.log"),
        )?;
        let replica = start_redis_node(
            ports[1],
            Some(ports[0]),
            &dir.join("redis-1"),
            &dir.join("redis-1.log"),
        )?;
        let conf = dir.join("sentinel.conf");
        fs::write(
            &conf,
            format!(
                "port {sentinel_port}\nbind 127.0.0.1\n\
                 sentinel monitor {SENTINEL_MASTER} 127.0.0.1 {} 1\n\
                 sentinel down-after-milliseconds {SENTINEL_MASTER} 500\n\
                 sentinel failover-timeout {SENTINEL_MASTER} 5000\n",
                ports[0]
            ),
        )
        .map_err(|e| e.to_string())?;
        let sentinel = Command::new("redis-server")
            .arg(&conf)
            .arg("--sentinel")
            .current_dir(dir)
            .stdin(Stdio::null())
            .stdout(fs::File::create(dir.join("sentinel.log")).map_err(|e| e.to_string())?)
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| format!("cannot start redis-server --sentinel: {e}"))?;
        let sentinel = Guard(sentinel);
        wait_listening(sentinel_port, "redis sentinel")?;
        let set = Self {
            nodes: [Some(master), Some(replica)],
            ports,
            master: 0,
            sentinel_port,
            _sentinel: sentinel,
            dir: dir.to_owned(),
        };
        // A failover needs the sentinel to know the replica (it learns it
        // from the master's INFO, every 10 s at first).
        set.wait_for_replica(Duration::from_secs(30))?;
        Ok(set)
    }

    /// The daemon's `[keystore] url`.
    pub(crate) fn url(&self, key: &str) -> String {
        format!(
            "redis+sentinel://127.0.0.1:{}/{SENTINEL_MASTER}?key={key}",
            self.sentinel_port
        )
    }

    fn node_log(&self, i: usize) -> PathBuf {
        self.dir.join(format!("redis-{i}.log"))
    }

    /// Node `i` started again with nothing in its directory but, when
    /// given, `rdb` as its data.
    fn restart_node(
        &self,
        i: usize,
        master: Option<u16>,
        rdb: Option<&Path>,
    ) -> Result<Guard, String> {
        let dir = self.dir.join(format!("redis-{i}"));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        if let Some(rdb) = rdb {
            fs::copy(rdb, dir.join("dump.rdb")).map_err(|e| format!("{}: {e}", rdb.display()))?;
        }
        start_redis_node(self.ports[i], master, &dir, &self.node_log(i))
    }

    fn snapshot_path(&self) -> PathBuf {
        self.dir.join("snapshot.rdb")
    }

    /// Whether the master holds `key`.
    pub(crate) fn holds(&self, key: &str) -> bool {
        resp_command(self.ports[self.master], &["EXISTS", key])
            .first()
            .map(String::as_str)
            == Some(":1")
    }

    /// Saves what the master holds now (`SAVE`) as the snapshot that
    /// [`RedisSet::outage`] may restore later.
    pub(crate) fn take_snapshot(&self) -> Result<(), String> {
        let reply = resp_command(self.ports[self.master], &["SAVE"]);
        if reply.first().map(String::as_str) != Some("+OK") {
            return Err(format!("SAVE on the master: {reply:?}"));
        }
        let rdb = self
            .dir
            .join(format!("redis-{}", self.master))
            .join("dump.rdb");
        fs::copy(&rdb, self.snapshot_path()).map_err(|e| format!("{}: {e}", rdb.display()))?;
        Ok(())
    }

    fn wait_for_replica(&self, limit: Duration) -> Result<(), String> {
        let deadline = Instant::now() + limit;
        let replica = self.ports[1 - self.master].to_string();
        while Instant::now() < deadline {
            let reply = resp_command(
                self.sentinel_port,
                &["SENTINEL", "replicas", SENTINEL_MASTER],
            );
            // Flattened: "name", "127.0.0.1:PORT", …, "flags", "slave", …
            let up = reply.iter().any(|s| s.ends_with(&format!(":{replica}")))
                && reply
                    .iter()
                    .position(|s| s == "flags")
                    .and_then(|i| reply.get(i + 1))
                    .is_some_and(|f| f == "slave");
            if up {
                return Ok(());
            }
            std::thread::sleep(Duration::from_millis(200));
        }
        Err(format!(
            "the sentinel did not list the replica on port {replica} within {limit:?}"
        ))
    }

    /// The fault "Redis stopped and restarted": both data nodes killed, 5 s
    /// down, then the master started again, empty or from the snapshot of
    /// [`RedisSet::take_snapshot`] (an earlier state of the keys, as a
    /// Redis with RDB persistence restarts from its last save), and its
    /// replica, empty, syncing from it.
    pub(crate) fn outage(&mut self, from_snapshot: bool) -> String {
        self.nodes = [None, None];
        std::thread::sleep(Duration::from_secs(5));
        let m = self.master;
        let snapshot = self.snapshot_path();
        let master = self.restart_node(m, None, from_snapshot.then_some(snapshot.as_path()));
        let replica = master
            .as_ref()
            .map_err(Clone::clone)
            .and_then(|_| self.restart_node(1 - m, Some(self.ports[m]), None));
        match (master, replica) {
            (Ok(a), Ok(b)) => {
                self.nodes[m] = Some(a);
                self.nodes[1 - m] = Some(b);
                let known = self.wait_for_replica(Duration::from_secs(30));
                format!(
                    "master and replica killed, 5 s down, the master started again {}, its \
                     replica empty{}",
                    if from_snapshot {
                        "from the snapshot taken at the start (an earlier state of the keys)"
                    } else {
                        "empty"
                    },
                    known.err().map_or(String::new(), |e| format!(" ({e})"))
                )
            }
            (a, b) => format!(
                "master and replica killed; restart failed: {}",
                [a.err(), b.err()]
                    .into_iter()
                    .flatten()
                    .collect::<Vec<_>>()
                    .join("; ")
            ),
        }
    }

    /// The fault "Redis failover": the master killed (SIGKILL), the sentinel
    /// promotes the replica, and the old master comes back empty as the new
    /// master's replica.
    pub(crate) fn failover(&mut self) -> String {
        let old = self.master;
        let new_port = self.ports[1 - old].to_string();
        self.nodes[old] = None;
        let started = Instant::now();
        let mut promoted = None;
        while started.elapsed() < Duration::from_secs(20) {
            let reply = resp_command(
                self.sentinel_port,
                &["SENTINEL", "get-master-addr-by-name", SENTINEL_MASTER],
            );
            if reply.get(1) == Some(&new_port) {
                promoted = Some(started.elapsed());
                break;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let Some(promoted) = promoted else {
            return "master killed; the sentinel did not promote the replica within 20 s".into();
        };
        self.master = 1 - old;
        match self.restart_node(old, Some(self.ports[1 - old]), None) {
            Ok(g) => {
                self.nodes[old] = Some(g);
                let known = self.wait_for_replica(Duration::from_secs(30));
                format!(
                    "master (port {}) killed, replica (port {new_port}) promoted after {:.1} s, \
                     the old master back as its replica{}",
                    self.ports[old],
                    promoted.as_secs_f64(),
                    known.err().map_or(String::new(), |e| format!(" ({e})"))
                )
            }
            Err(e) => format!("replica promoted; the old master did not come back: {e}"),
        }
    }
}

/// One command to a Redis node or sentinel on `port` over RESP; the simple
/// strings, errors and integers (with their `+`, `-`, `:`) and bulk strings of its reply (nested arrays
/// flattened), or nothing on any error.
fn resp_command(port: u16, args: &[&str]) -> Vec<String> {
    let Ok(mut s) = TcpStream::connect_timeout(
        &SocketAddr::from(([127, 0, 0, 1], port)),
        Duration::from_secs(1),
    ) else {
        return Vec::new();
    };
    let _ = s.set_read_timeout(Some(Duration::from_millis(500)));
    let mut req = format!("*{}\r\n", args.len());
    for a in args {
        req.push_str(&format!("${}\r\n{a}\r\n", a.len()));
    }
    if s.write_all(req.as_bytes()).is_err() {
        return Vec::new();
    }
    // Read until the reply stops coming (replies here are small).
    let mut text = Vec::new();
    let mut buf = [0u8; 4096];
    while let Ok(n) = s.read(&mut buf) {
        if n == 0 {
            break;
        }
        text.extend_from_slice(&buf[..n]);
        if n < buf.len() {
            break;
        }
    }
    let text = String::from_utf8_lossy(&text);
    let mut out = Vec::new();
    let mut lines = text.split("\r\n");
    while let Some(line) = lines.next() {
        if line.starts_with('+') || line.starts_with('-') || line.starts_with(':') {
            out.push(line.to_owned());
        } else if line.starts_with('$')
            && line != "$-1"
            && let Some(v) = lines.next()
        {
            out.push(v.to_owned());
        }
    }
    out
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

/// RSS (KiB), open fds, threads and the threads' run-queue wait (ms) of `pid`.
pub(crate) fn proc_sample(pid: u32) -> Option<(u64, u64, u64, f64)> {
    let status = fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let rss = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))?
        .split_whitespace()
        .next()?
        .parse()
        .ok()?;
    let fds = fs::read_dir(format!("/proc/{pid}/fd")).ok()?.count() as u64;
    let mut threads = 0;
    let mut wait_ns = 0u64;
    for task in fs::read_dir(format!("/proc/{pid}/task")).ok()?.flatten() {
        threads += 1;
        wait_ns += fs::read_to_string(task.path().join("schedstat"))
            .ok()
            .and_then(|s| s.split_whitespace().nth(1)?.parse::<u64>().ok())
            .unwrap_or(0);
    }
    Some((rss, fds, threads, wait_ns as f64 / 1e6))
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
    // Round 1 is basic; rounds 2 and 3 ask for interleaved replies (origin =
    // the previous reply's receive timestamp), more sources than the
    // interleaved table holds.
    let mut previous: Vec<Option<[u8; 8]>> = vec![None; sockets.len()];
    let mut interleaved = 0;
    for round in 0..3u64 {
        // Round 3 runs backwards: the sources whose state the table still
        // holds (the last 64 of round 2) come first and get interleaved
        // replies; in round 2's order each lookup would find its entry
        // already evicted by the sources before it.
        let order: Vec<usize> = if round == 2 {
            (0..sockets.len()).rev().collect()
        } else {
            (0..sockets.len()).collect()
        };
        for i in order {
            let (s, prev) = (&sockets[i], &previous[i]);
            let mut request = request;
            request[40..48].copy_from_slice(&(round + 1).to_be_bytes());
            if let Some(rx) = prev {
                request[24..32].copy_from_slice(rx);
                request[32..40].copy_from_slice(&(round + 100).to_be_bytes());
            }
            let _ = s.send_to(&request, d.ntp);
        }
        let mut buf = [0u8; 128];
        for (s, prev) in sockets.iter().zip(previous.iter_mut()) {
            if let Ok(n) = s.recv(&mut buf) {
                answered += 1;
                if n >= 48 {
                    // An interleaved reply's origin is our receive field, not our transmit.
                    if buf[24..32] == (round + 100).to_be_bytes() {
                        interleaved += 1;
                    }
                    let mut rx = [0u8; 8];
                    rx.copy_from_slice(&buf[32..40]);
                    *prev = Some(rx);
                }
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
        "{} sources in 127.0.0.2-250, 3 NTP requests each, the last two asking for interleaved \
         replies ({answered} answered, {interleaved} interleaved); {ke} NTS-KE connections from as many sources",
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
