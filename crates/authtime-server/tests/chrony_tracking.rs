//! `chrony_client::query_tracking` against a real chronyd (Debian package
//! `chrony`, installed by ./test.sh and the CI), over its Unix command socket
//! and its UDP command port, in two states:
//!
//! - no sources: chronyd says "not synchronised" (leap status 3, stratum 0);
//! - `local stratum 5`: chronyd declares itself synchronised to its local
//!   reference (reference id 0x7F7F0101, "127.127.1.1", stratum 5).
//!
//! Each chronyd runs in the foreground (`-d`: `-n` with its log on stderr),
//! never touching the clock (`-x`), without an NTP port (`port 0`), with its
//! pid file, command socket and our client sockets in a private temporary
//! directory, and its command port on a free loopback port. It is killed and
//! the directory removed when its test ends, passed or failed. The results
//! are compared with `chronyc -c tracking` through the same socket.

use std::io::Read as _;
use std::net::{SocketAddr, UdpSocket};
use std::os::unix::fs::PermissionsExt as _;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use authtime_clock::chrony_cmd::{ChronyLeap, Tracking};
use authtime_clock::{SourceReading, UnsyncCause};
use authtime_server::clock::chrony_client::{
    ChronyClientErrorKind, ChronyEndpoint, query_tracking,
};
use authtime_wire::{ReferenceId, UnixTime};

/// Longest wait for anything chronyd does.
const DEADLINE: Duration = Duration::from_secs(20);

fn find(names: &[&str]) -> Option<PathBuf> {
    names.iter().map(PathBuf::from).find(|p| p.exists())
}

fn chronyd() -> PathBuf {
    find(&["/usr/sbin/chronyd", "/usr/bin/chronyd"]).unwrap_or_else(|| {
        panic!("chronyd is not installed (Debian package `chrony`): this test needs it")
    })
}

fn chronyc() -> PathBuf {
    find(&["/usr/bin/chronyc", "/usr/sbin/chronyc"]).unwrap_or_else(|| {
        panic!("chronyc is not installed (Debian package `chrony`): this test needs it")
    })
}

fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| o.stdout.starts_with(b"0\n"))
}

fn free_udp_port() -> u16 {
    UdpSocket::bind("127.0.0.1:0")
        .and_then(|s| s.local_addr())
        .expect("a free port")
        .port()
}

/// A chronyd in its own directory, killed and cleaned up on drop.
struct Chronyd {
    child: Child,
    dir: PathBuf,
    cmd_port: u16,
}

impl Chronyd {
    /// Starts chronyd with `extra` configuration lines.
    fn start(name: &str, extra: &str) -> Self {
        let chronyd = chronyd();
        let dir = std::env::temp_dir().join(format!(
            "authtime-chrony-tracking-{name}-{}",
            std::process::id()
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("client")).expect("temp dir");
        // chronyd refuses a command socket in a directory open to others.
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700)).expect("mode");
        let cmd_port = free_udp_port();
        let conf = dir.join("chronyd.conf");
        std::fs::write(
            &conf,
            format!(
                "port 0\ncmdport {cmd_port}\nbindcmdaddress 127.0.0.1\n\
                 bindcmdaddress {}\npidfile {}\n{extra}",
                dir.join("chronyd.sock").display(),
                dir.join("chronyd.pid").display()
            ),
        )
        .expect("conf");
        let log = std::fs::File::create(dir.join("chronyd.log")).expect("log");
        let mut command = Command::new(chronyd);
        command.args(["-x", "-d", "-f"]).arg(&conf);
        if is_root() {
            command.args(["-u", "root"]);
        }
        let child = command
            .stdin(Stdio::null())
            .stdout(Stdio::from(log.try_clone().expect("log")))
            .stderr(Stdio::from(log))
            .spawn()
            .expect("start chronyd");
        Self {
            child,
            dir,
            cmd_port,
        }
    }

    fn log(&self) -> String {
        std::fs::read_to_string(self.dir.join("chronyd.log")).unwrap_or_default()
    }

    fn socket(&self) -> PathBuf {
        self.dir.join("chronyd.sock")
    }

    fn client_dir(&self) -> PathBuf {
        self.dir.join("client")
    }

    fn unix(&self) -> ChronyEndpoint {
        ChronyEndpoint::Unix {
            socket: self.socket(),
            client_dir: self.client_dir(),
        }
    }

    fn udp(&self) -> ChronyEndpoint {
        ChronyEndpoint::Udp(SocketAddr::from(([127, 0, 0, 1], self.cmd_port)))
    }

    /// Queries `endpoint` until `done` accepts the report, within the deadline.
    fn poll(&mut self, endpoint: &ChronyEndpoint, done: impl Fn(&Tracking) -> bool) -> Tracking {
        let start = Instant::now();
        let mut last = String::from("nothing yet");
        while start.elapsed() < DEADLINE {
            if let Ok(Some(status)) = self.child.try_wait() {
                panic!("chronyd exited ({status}):\n{}", self.log());
            }
            match query_tracking(endpoint, Duration::from_millis(500)) {
                Ok(t) if done(&t) => {
                    eprintln!("{endpoint}: after {:?}: {t:?}", start.elapsed());
                    return t;
                }
                Ok(t) => last = format!("{t:?}"),
                Err(e) => last = e.to_string(),
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        panic!(
            "{endpoint}: no expected report within {DEADLINE:?}; last: {last}\nchronyd log:\n{}",
            self.log()
        );
    }

    /// `chronyc -c tracking` through the Unix socket, split into its fields.
    fn chronyc_tracking(&self) -> Vec<String> {
        let mut child = Command::new(chronyc())
            .arg("-h")
            .arg(self.socket())
            .args(["-c", "tracking"])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start chronyc");
        let start = Instant::now();
        let status = loop {
            if let Some(status) = child.try_wait().expect("wait") {
                break status;
            }
            if start.elapsed() > DEADLINE {
                // Our own child, through its handle.
                let _ = child.kill();
                let _ = child.wait();
                panic!("chronyc did not finish within {DEADLINE:?}");
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        let mut out = String::new();
        let mut err = String::new();
        if let Some(mut o) = child.stdout.take() {
            let _ = o.read_to_string(&mut out);
        }
        if let Some(mut e) = child.stderr.take() {
            let _ = e.read_to_string(&mut err);
        }
        assert!(status.success(), "chronyc failed ({status}): {out}{err}");
        let line = out.lines().next().unwrap_or_default();
        line.split(',').map(str::to_owned).collect()
    }

    /// Client sockets left behind in the client directory.
    fn leftover_client_sockets(&self) -> Vec<PathBuf> {
        std::fs::read_dir(self.client_dir())
            .expect("client dir")
            .filter_map(|e| e.ok().map(|e| e.path()))
            .collect()
    }
}

impl Drop for Chronyd {
    fn drop(&mut self) {
        // Our own child, through its handle.
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn unix_now() -> i64 {
    i64::try_from(
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .expect("clock after 1970")
            .as_secs(),
    )
    .expect("seconds fit")
}

/// chronyc's CSV fields: reference id (hex), address or name, stratum, ...,
/// leap status (the 14th).
fn assert_matches_chronyc(t: &Tracking, csv: &[String]) {
    assert_eq!(csv.len(), 14, "{csv:?}");
    assert_eq!(
        u32::from_str_radix(&csv[0], 16).ok(),
        Some(t.reference_id),
        "{csv:?}"
    );
    assert_eq!(csv[2].parse::<u16>().ok(), Some(t.stratum), "{csv:?}");
    let leap = match t.leap {
        ChronyLeap::Normal => "Normal",
        ChronyLeap::InsertSecond => "Insert second",
        ChronyLeap::DeleteSecond => "Delete second",
        ChronyLeap::NotSynchronised => "Not synchronised",
    };
    assert_eq!(csv[13], leap, "{csv:?}");
}

#[test]
fn chronyd_without_sources_reports_not_synchronised() {
    let mut chronyd = Chronyd::start("unsync", "");
    for endpoint in [chronyd.unix(), chronyd.udp()] {
        let t = chronyd.poll(&endpoint, |_| true);
        assert_eq!(t.leap, ChronyLeap::NotSynchronised, "{endpoint}: {t:?}");
        assert_eq!(t.stratum, 0, "{endpoint}: {t:?}");
        assert_eq!(t.reference_id, 0, "{endpoint}: {t:?}");
        assert_eq!(t.source_address, None, "{endpoint}: {t:?}");
        assert_eq!(t.reference_time, UnixTime::new(0, 0), "{endpoint}: {t:?}");
        assert_eq!(
            t.to_reading(),
            SourceReading::Unsynchronized(UnsyncCause::ChronyNotSynchronised)
        );
        assert_matches_chronyc(&t, &chronyd.chronyc_tracking());
    }
    assert_eq!(chronyd.leftover_client_sockets(), Vec::<PathBuf>::new());
}

#[test]
fn chronyd_with_local_stratum_5_reports_synchronised() {
    let mut chronyd = Chronyd::start("local", "local stratum 5\n");
    let synced = |t: &Tracking| t.stratum == 5 && t.leap == ChronyLeap::Normal;
    for endpoint in [chronyd.unix(), chronyd.udp()] {
        let t = chronyd.poll(&endpoint, synced);
        assert_eq!(t.reference_id, 0x7F7F_0101, "{endpoint}: {t:?}");
        assert_eq!(t.source_address, None, "{endpoint}: {t:?}");
        let age = unix_now() - t.reference_time.secs;
        assert!(
            (-5..=3600).contains(&age),
            "{endpoint}: reference time {:?} is {age} s old",
            t.reference_time
        );
        assert!(t.root_delay >= 0.0 && t.root_dispersion >= 0.0, "{t:?}");
        match t.to_reading() {
            SourceReading::Synchronized(s) => {
                assert_eq!(s.stratum, 5);
                assert_eq!(s.reference_id, ReferenceId([0x7F, 0x7F, 1, 1]));
                assert_eq!(s.reference_time, Some(t.reference_time));
            }
            other => panic!("{endpoint}: {other:?}"),
        }
        assert_matches_chronyc(&t, &chronyd.chronyc_tracking());
    }
    assert_eq!(chronyd.leftover_client_sockets(), Vec::<PathBuf>::new());
}

#[test]
fn stopped_chronyd_gives_named_errors() {
    let mut chronyd = Chronyd::start("stopped", "");
    chronyd.poll(&chronyd.unix(), |_| true);
    let _ = chronyd.child.kill();
    let _ = chronyd.child.wait();
    // The socket file stays behind: nobody listens on it.
    let err = query_tracking(&chronyd.unix(), Duration::from_millis(200)).expect_err("stopped");
    let text = err.to_string();
    eprintln!("{text}");
    assert!(
        text.contains(&chronyd.socket().display().to_string()),
        "{text}"
    );
    assert!(
        matches!(err.kind(), ChronyClientErrorKind::Connect(_)),
        "{text}"
    );
    let err = query_tracking(&chronyd.udp(), Duration::from_millis(200)).expect_err("stopped");
    let text = err.to_string();
    eprintln!("{text}");
    assert!(text.contains(&chronyd.cmd_port.to_string()), "{text}");
    assert_eq!(chronyd.leftover_client_sockets(), Vec::<PathBuf>::new());
}
