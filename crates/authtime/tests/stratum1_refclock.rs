//! Stratum 1 behind chronyd, the way public stratum-1 hosts run: a chronyd
//! fed by a reference clock, and authtime in front of it following chronyd's
//! `tracking` (`[clock] source = "chrony"`).
//!
//! The reference clock is simulated: chronyd's SOCK refclock (the one gpsd
//! feeds) reads `struct sock_sample` datagrams, and [`RefclockFeed`] sends
//! them from this test, every 100 ms, saying that true time is the system
//! time (offset 0 with ±1 µs of noise). chronyd runs with `-x`, so it never
//! touches the host clock, and with `maxclockerror 100` (a 100 ppm
//! oscillator): its root dispersion is then 0.1 to 0.2 ms while it follows the
//! refclock, well above NTP's 15 µs resolution, and grows by 0.1 ms per second
//! once the samples stop (holdover), which makes "follows chronyd's root
//! dispersion" visible on the wire.
//!
//! What it shows, against chronyd 4.3 and `chronyc` on loopback:
//! - chronyd selects the refclock (`#*` in `chronyc sources`) and reports
//!   stratum 1, reference id `GPS` (0x47505300);
//! - authtime then announces stratum 1, reference id `GPS`, leap 0 and
//!   chronyd's root delay (the same fields as chronyd's own NTP reply), and a
//!   root dispersion that chronyc read from chronyd within authtime's last
//!   read interval, plus at most PHI × the age of that reading;
//! - when the refclock falls silent, chronyd stays at stratum 1 and its root
//!   dispersion grows (holdover); authtime's announcement grows at the same
//!   rate, within 30 %;
//! - the same through chronyd's UDP command port (`chrony-address`, how the
//!   packaged unit's authtimed, not root, reads chronyd);
//! - a second chronyd (a client, `-x`) selects authtime (`*`) and reports
//!   stratum 2 with authtime's address as its reference.
//!
//! What it does not show: anything about a real GPS receiver, gpsd or a PPS
//! signal (there is none on a CI machine), nor the accuracy of the served time.

mod ntp_support;

use std::net::SocketAddr;
use std::os::unix::fs::PermissionsExt as _;
use std::os::unix::net::UnixDatagram;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use ntp_support::{
    ChildGuard, Serve, TempDir, authtime, chronyd_with_socket, free_udp_port, plain_reply_header,
    text, text_of, wait_bounded,
};

/// chrony's `SOCK` magic number, "SOCK" (refclock_sock.c).
const SOCK_MAGIC: i32 = 0x534f_434b;

/// RFC 5905's PHI, which authtime adds per second since its reading.
const PHI: f64 = 15e-6;

/// One unit of NTP's short format (root delay, root dispersion): 2^-16 s.
const NTP_SHORT_UNIT: f64 = 1.0 / 65536.0;

/// How fast chronyd's root dispersion may grow between two chronyc readings:
/// `maxclockerror` (100 ppm) plus the skew chronyd estimates, which starts at
/// about 15 ppm and falls below 1 ppm within seconds.
const CHRONYD_GROWTH: f64 = 120e-6;

/// How far back a reply's root dispersion may come from: authtime reads
/// chronyd every second (`poll-interval`, default 1 s); 2.5 s leaves room for
/// a late reading on a loaded machine.
const READ_WINDOW: Duration = Duration::from_millis(2500);

// The sample below is laid out for a 64-bit `long` (`struct timeval`).
const _: () = assert!(
    usize::BITS == 64,
    "sock_sample is laid out for 64-bit Linux"
);

/// chrony's `struct sock_sample` (refclock_sock.c, chrony 4.3), in the host's
/// byte order and layout (x86-64 and aarch64 Linux: a 16-byte `timeval`, 40
/// bytes in all; chronyd drops a datagram of any other length).
fn sock_sample(at: SystemTime, offset: f64) -> [u8; 40] {
    let since = at.duration_since(UNIX_EPOCH).expect("after 1970");
    let secs = i64::try_from(since.as_secs()).expect("seconds fit");
    let micros = i64::from(since.subsec_micros());
    let mut bytes = [0u8; 40];
    bytes[0..8].copy_from_slice(&secs.to_ne_bytes()); // tv.tv_sec
    bytes[8..16].copy_from_slice(&micros.to_ne_bytes()); // tv.tv_usec
    bytes[16..24].copy_from_slice(&offset.to_ne_bytes()); // true time - system time
    bytes[24..28].copy_from_slice(&0i32.to_ne_bytes()); // pulse: no, a full sample
    bytes[28..32].copy_from_slice(&0i32.to_ne_bytes()); // leap: none
    bytes[32..36].copy_from_slice(&0i32.to_ne_bytes()); // padding
    bytes[36..40].copy_from_slice(&SOCK_MAGIC.to_ne_bytes());
    bytes
}

/// A simulated reference clock: a thread sending a sample to chronyd's SOCK
/// socket every 100 ms until it is dropped (joined within 100 ms).
struct RefclockFeed {
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<u64>>,
}

impl RefclockFeed {
    fn start(socket: &Path) -> Self {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&stop);
        let target = socket.to_path_buf();
        let thread = std::thread::spawn(move || {
            let sender = UnixDatagram::unbound().expect("a datagram socket");
            // A fixed xorshift: the same ±1 µs of noise on every run.
            let mut noise_state = 0x2545_f491_4f6c_dd1d_u64;
            let mut sent = 0u64;
            while !flag.load(Ordering::Relaxed) {
                noise_state ^= noise_state << 13;
                noise_state ^= noise_state >> 7;
                noise_state ^= noise_state << 17;
                let noise = ((noise_state >> 11) as f64 / (1u64 << 53) as f64 - 0.5) * 2e-6;
                // chronyd may not have its socket yet; the next sample retries.
                if sender
                    .send_to(&sock_sample(SystemTime::now(), noise), &target)
                    .is_ok()
                {
                    sent += 1;
                }
                std::thread::sleep(Duration::from_millis(100));
            }
            sent
        });
        Self {
            stop,
            thread: Some(thread),
        }
    }

    /// Stops the samples (the receiver loses its fix); returns how many went.
    fn stop(&mut self) -> u64 {
        self.stop.store(true, Ordering::Relaxed);
        self.thread
            .take()
            .map_or(0, |t| t.join().expect("the feed thread"))
    }
}

impl Drop for RefclockFeed {
    fn drop(&mut self) {
        self.stop();
    }
}

/// A chronyd started here with `-x -d`, its files in a private directory.
struct Chronyd {
    _process: ChildGuard,
    home: PathBuf,
    socket: PathBuf,
}

/// Starts chronyd named `name` with `lines` of configuration, a private
/// command socket, and neither an NTP port nor a UDP command port unless
/// `lines` sets one.
fn start_chronyd(dir: &TempDir, name: &str, lines: &str) -> Chronyd {
    // chronyd refuses a command socket in a directory others can write to.
    let home = dir.path(name);
    std::fs::create_dir_all(&home).expect("dir");
    std::fs::set_permissions(&home, std::fs::Permissions::from_mode(0o700)).expect("chmod");
    let socket = home.join("chronyd.sock");
    let conf = home.join("chronyd.conf");
    let sets = |directive: &str| {
        lines.starts_with(&format!("{directive} ")) || lines.contains(&format!("\n{directive} "))
    };
    let port = if sets("port") { "" } else { "port 0\n" };
    let cmdport = if sets("cmdport") { "" } else { "cmdport 0\n" };
    std::fs::write(
        &conf,
        format!(
            "{port}{cmdport}bindcmdaddress {}\npidfile {}\n{lines}",
            socket.display(),
            home.join("chronyd.pid").display(),
        ),
    )
    .expect("conf");
    let process = chronyd_with_socket(&conf, &home.join("chronyd.log"), &socket, name);
    Chronyd {
        _process: process,
        home,
        socket,
    }
}

impl Chronyd {
    fn log(&self) -> String {
        std::fs::read_to_string(self.home.join("chronyd.log")).unwrap_or_default()
    }

    /// `chronyc -c -h SOCKET ARGS...` (bounded by 5 s): its standard output.
    fn chronyc(&self, args: &[&str]) -> String {
        let mut child = Command::new("chronyc")
            .arg("-c")
            .arg("-h")
            .arg(&self.socket)
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("run chronyc (Debian package chrony)");
        let status = wait_bounded(&mut child, Duration::from_secs(5));
        if status.is_none() {
            let _ = child.kill();
            let _ = child.wait();
            return String::new();
        }
        let mut out = String::new();
        if let Some(mut stdout) = child.stdout.take() {
            use std::io::Read as _;
            let _ = stdout.read_to_string(&mut out);
        }
        out
    }

    /// `chronyc tracking`, or `None` when chronyc gave no report.
    fn tracking(&self) -> Option<ChronycTracking> {
        ChronycTracking::parse(&self.chronyc(&["tracking"]))
    }

    /// The state character (`*` selected, `+` combined, ...) of the source
    /// named `name` in `chronyc sources`.
    fn source_state(&self, name: &str) -> Option<char> {
        self.chronyc(&["sources"]).lines().find_map(|line| {
            let fields: Vec<&str> = line.split(',').collect();
            (fields.get(2) == Some(&name))
                .then(|| fields.get(1).and_then(|s| s.chars().next()))
                .flatten()
        })
    }

    /// Waits up to `limit` for `chronyc tracking` to satisfy `ok`.
    fn wait_tracking(
        &self,
        limit: Duration,
        ok: impl Fn(&ChronycTracking) -> bool,
    ) -> ChronycTracking {
        let deadline = Instant::now() + limit;
        loop {
            let tracking = self.tracking();
            if let Some(t) = tracking.as_ref().filter(|t| ok(t)) {
                return t.clone();
            }
            assert!(
                Instant::now() < deadline,
                "chronyd: {tracking:?}\nsources: {}\n{}",
                self.chronyc(&["sources"]),
                self.log()
            );
            std::thread::sleep(Duration::from_millis(200));
        }
    }
}

/// The fields of `chronyc -c tracking` this test reads.
#[derive(Debug, Clone, PartialEq)]
struct ChronycTracking {
    reference_id: u32,
    stratum: u8,
    root_delay: f64,
    root_dispersion: f64,
    leap: String,
}

impl ChronycTracking {
    /// chronyc's CSV: reference id (hex), its name, stratum, reference time,
    /// system time, last offset, RMS offset, frequency, residual frequency,
    /// skew, root delay, root dispersion, update interval, leap status.
    fn parse(csv: &str) -> Option<Self> {
        let fields: Vec<&str> = csv.trim().split(',').collect();
        if fields.len() != 14 {
            return None;
        }
        Some(Self {
            reference_id: u32::from_str_radix(fields[0], 16).ok()?,
            stratum: fields[2].parse().ok()?,
            root_delay: fields[10].parse().ok()?,
            root_dispersion: fields[11].parse().ok()?,
            leap: fields[13].to_string(),
        })
    }
}

/// An NTP reply's header fields.
#[derive(Debug, Clone, Copy)]
struct Reply {
    leap: u8,
    stratum: u8,
    root_delay: f64,
    root_dispersion: f64,
    reference_id: [u8; 4],
}

/// A plain mode-3 request to `target`, and the header of its reply.
fn ask(target: SocketAddr) -> Reply {
    let reply = plain_reply_header(target);
    let short = |at: usize| {
        f64::from(u32::from_be_bytes(reply[at..at + 4].try_into().expect("4"))) * NTP_SHORT_UNIT
    };
    Reply {
        leap: reply[0] >> 6,
        stratum: reply[1],
        root_delay: short(4),
        root_dispersion: short(8),
        reference_id: reply[12..16].try_into().expect("4"),
    }
}

/// chronyd's root dispersion as chronyc read it, and when.
struct Readings(Vec<(Instant, f64)>);

impl Readings {
    fn record(&mut self, chronyd: &Chronyd) -> ChronycTracking {
        let tracking = chronyd.tracking().expect("chronyc tracking");
        self.0.push((Instant::now(), tracking.root_dispersion));
        tracking
    }

    /// The root dispersions authtime may announce at `at`: the smallest and
    /// largest chronyd reported from `READ_WINDOW` before `at` to the first
    /// reading after it, widened below by one NTP short unit (rounding) and
    /// by what chronyd's value may have grown between two readings (authtime
    /// may have read it just after an update, between our readings), and
    /// above by PHI × the window (authtime's own growth since its reading)
    /// and one short unit.
    fn allowed_at(&self, at: Instant) -> (f64, f64) {
        let from = at.checked_sub(READ_WINDOW).unwrap_or(at);
        let last_before = self.0.iter().rposition(|(t, _)| *t < from).unwrap_or(0);
        let first_after = self
            .0
            .iter()
            .position(|(t, _)| *t > at)
            .unwrap_or(self.0.len() - 1);
        let window = &self.0[last_before..=first_after];
        let lo = window.iter().map(|&(_, d)| d).fold(f64::INFINITY, f64::min);
        let hi = window
            .iter()
            .map(|&(_, d)| d)
            .fold(f64::NEG_INFINITY, f64::max);
        let widest_gap = window
            .windows(2)
            .map(|w| w[1].0.duration_since(w[0].0).as_secs_f64())
            .fold(0.0, f64::max);
        (
            lo - CHRONYD_GROWTH * widest_gap - NTP_SHORT_UNIT,
            hi + PHI * READ_WINDOW.as_secs_f64() + NTP_SHORT_UNIT,
        )
    }
}

/// Asks authtime `count` times, 250 ms apart, with chronyc readings between:
/// every reply is stratum 1, `GPS`, leap 0, chronyd's root delay, and a root
/// dispersion chronyd reported within the read window. Returns each reply's
/// time and root dispersion.
fn follow(
    chronyd: &Chronyd,
    serve: &Serve,
    readings: &mut Readings,
    count: usize,
) -> Vec<(Instant, f64)> {
    let mut replies = Vec::with_capacity(count);
    readings.record(chronyd);
    for _ in 0..count {
        std::thread::sleep(Duration::from_millis(125));
        let at = Instant::now();
        let reply = ask(serve.addr);
        replies.push((at, reply));
        std::thread::sleep(Duration::from_millis(125));
        let tracking = readings.record(chronyd);
        assert_eq!((tracking.stratum, tracking.reference_id), (1, 0x4750_5300));
    }
    let mut seen = Vec::with_capacity(count);
    for (at, reply) in replies {
        assert_eq!(
            (reply.leap, reply.stratum, &reply.reference_id),
            (0, 1, b"GPS\0"),
            "{reply:?}"
        );
        // chronyd's refclock root delay is 1 ns, 0 in NTP's short format.
        assert!(reply.root_delay <= NTP_SHORT_UNIT, "{reply:?}");
        let (lo, hi) = readings.allowed_at(at);
        assert!(
            (lo..=hi).contains(&reply.root_dispersion),
            "root dispersion {:.6} s announced, chronyd's within [{lo:.6}, {hi:.6}] s",
            reply.root_dispersion
        );
        seen.push((at, reply.root_dispersion));
    }
    seen
}

/// The least-squares slope of `points` (seconds per second): it averages
/// out the up to one second by which each of authtime's readings lags.
fn growth_rate(points: &[(Instant, f64)]) -> f64 {
    let origin = points[0].0;
    let xs: Vec<f64> = points
        .iter()
        .map(|(t, _)| t.duration_since(origin).as_secs_f64())
        .collect();
    let n = points.len() as f64;
    let mean_x = xs.iter().sum::<f64>() / n;
    let mean_y = points.iter().map(|(_, y)| y).sum::<f64>() / n;
    let (mut num, mut den) = (0.0, 0.0);
    for (x, (_, y)) in xs.iter().zip(points) {
        num += (x - mean_x) * (y - mean_y);
        den += (x - mean_x) * (x - mean_x);
    }
    num / den
}

#[test]
fn authtime_behind_a_refclock_fed_chronyd_announces_stratum_1_and_a_chronyd_client_accepts_it() {
    let dir = TempDir::new("stratum1-refclock");
    let refclock = dir.path("gps").join("refclock.sock");
    let gps_port = free_udp_port();
    let gps_cmdport = free_udp_port();
    // chronyd serves NTP too, so that its own reply can be compared, and
    // answers commands on a UDP port as well as on its socket (the packaged
    // unit's authtimed reads chronyd there).
    let gps = start_chronyd(
        &dir,
        "gps",
        &format!(
            "port {gps_port}\nbindaddress 127.0.0.1\nallow 127.0.0.1\n\
             cmdport {gps_cmdport}\nbindcmdaddress 127.0.0.1\nmaxclockerror 100\n\
             refclock SOCK {} refid GPS poll 0\n",
            refclock.display()
        ),
    );
    let mut feed = RefclockFeed::start(&refclock);

    // chronyd selects the refclock within a few polls of 1 s.
    let tracking = gps.wait_tracking(Duration::from_secs(20), |t| {
        t.stratum == 1 && t.reference_id == 0x4750_5300 && t.leap == "Normal"
    });
    assert_eq!(gps.source_state("GPS"), Some('*'), "{}", gps.log());
    eprintln!("chronyd follows the refclock: {tracking:?}");

    // Every client here is 127.0.0.1: this test asks 4 times a second and
    // the chronyd client 16 times, far above the per-client rate limit a
    // public server keeps (0.5 per second), so the limit is off.
    let serve = Serve::start(
        &dir,
        &format!(
            "[ntp]\nlisten = [\"127.0.0.1:0\"]\n[rate-limit]\nenabled = false\n\
             [clock]\nsource = \"chrony\"\nchrony-socket = \"{}\"\n",
            gps.socket.display()
        ),
    );
    // The same through chronyd's UDP command port (`chrony-address`).
    let over_udp = Serve::start_named(
        &dir,
        "over-udp",
        &format!(
            "[ntp]\nlisten = [\"127.0.0.1:0\"]\n[rate-limit]\nenabled = false\n\
             [clock]\nsource = \"chrony\"\nchrony-address = \"127.0.0.1:{gps_cmdport}\"\n"
        ),
    );
    let serve_target = serve.addr.to_string();
    for server in [&serve, &over_udp] {
        let deadline = Instant::now() + Duration::from_secs(10);
        while server.metric("authtime_clock_stratum") != 1 {
            assert!(Instant::now() < deadline, "{}", server.log_text());
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    // What authtime announces against what chronyd reports and serves.
    let mut readings = Readings(Vec::new());
    let synced = follow(&gps, &serve, &mut readings, 8);
    follow(&gps, &over_udp, &mut readings, 4);
    drop(over_udp);
    let theirs = ask(SocketAddr::from(([127, 0, 0, 1], gps_port)));
    let ours = ask(serve.addr);
    assert_eq!(
        (
            theirs.leap,
            theirs.stratum,
            theirs.reference_id,
            theirs.root_delay
        ),
        (ours.leap, ours.stratum, ours.reference_id, ours.root_delay),
        "chronyd's own reply against authtime's"
    );
    let out = authtime(&["query", &serve_target, "--json"]);
    assert!(out.status.success(), "{}", text_of(&out));
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(json["replies"][0]["stratum"], 1, "{json}");
    assert_eq!(json["replies"][0]["reference_id"], "GPS", "{json}");
    let status = authtime(&[
        "status",
        "--config",
        &dir.path("serve.toml").display().to_string(),
    ]);
    assert!(status.status.success(), "{}", text_of(&status));
    assert!(
        text(&status.stdout).contains("stratum 1, reference id GPS"),
        "{}",
        text_of(&status)
    );
    assert_eq!(
        serve.metric("authtime_clock_reference_id{reference_id=\"GPS\"}"),
        0x4750_5300,
        "{}",
        serve.scrape()
    );

    // A chronyd client accepts authtime as a stratum-1 source: it selects it
    // and becomes stratum 2, with authtime's address as its reference.
    let client = start_chronyd(
        &dir,
        "client",
        &format!(
            "server 127.0.0.1 port {} iburst minpoll -4 maxpoll -4\n",
            serve.addr.port()
        ),
    );
    let client_tracking = client.wait_tracking(Duration::from_secs(20), |t| {
        t.stratum == 2 && t.reference_id == 0x7f00_0001 && t.leap == "Normal"
    });
    let state = client.source_state("127.0.0.1");
    assert_eq!(state, Some('*'), "{}", client.chronyc(&["sources"]));
    eprintln!("the chronyd client follows authtime: {client_tracking:?}");

    // The receiver loses its fix: chronyd keeps stratum 1 (holdover) and its
    // root dispersion grows by maxclockerror (100 ppm) and the skew; authtime
    // announces the same growth.
    let synced_readings = readings.0.len();
    let sent = feed.stop();
    // 24 replies over about 7 s: each of authtime's readings lags by up to a
    // second, a step of about 85 µs, which a longer span averages out.
    let holdover = follow(&gps, &serve, &mut readings, 24);
    let chronyd_rate = growth_rate(&readings.0[synced_readings..]);
    let authtime_rate = growth_rate(&holdover);
    let micros = |points: &[(Instant, f64)]| -> Vec<String> {
        points
            .iter()
            .map(|(_, d)| format!("{:.0}", d * 1e6))
            .collect()
    };
    eprintln!(
        "{sent} samples sent\nwhile synchronized, root dispersion (µs): chronyd {:?}, \
         authtime {:?}\nin holdover: chronyd {:?}, authtime {:?}; \
         chronyd +{:.1} µs/s, authtime +{:.1} µs/s",
        micros(&readings.0[..synced_readings]),
        micros(&synced),
        micros(&readings.0[synced_readings..]),
        micros(&holdover),
        chronyd_rate * 1e6,
        authtime_rate * 1e6,
    );
    assert!(
        chronyd_rate > 80e-6,
        "chronyd's dispersion grows at maxclockerror: {chronyd_rate}"
    );
    assert!(
        (authtime_rate - chronyd_rate).abs() < 0.3 * chronyd_rate,
        "authtime grows at {authtime_rate} s/s, chronyd at {chronyd_rate} s/s"
    );
    let (first, last) = (holdover[0].1, holdover[holdover.len() - 1].1);
    assert!(
        last - first > 250e-6 && last > synced.iter().map(|(_, d)| *d).fold(0.0, f64::max),
        "announced {first} then {last}"
    );
    drop(client);
}
