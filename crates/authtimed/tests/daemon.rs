//! `authtimed` as an operator runs it: `--help`, a bad configuration refused
//! with one line, and a server that tells systemd it is ready (a
//! `NOTIFY_SOCKET` made here), answers NTP on loopback and stops on SIGTERM.

use std::io::{BufRead as _, BufReader};
use std::net::SocketAddr;
use std::os::unix::fs::PermissionsExt as _;
use std::os::unix::net::UnixDatagram;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

mod support;
use support::{Guard, authtimed, identity_args, ntp_exchange, temp_dir};

#[test]
fn help_names_the_exit_codes_and_bad_configuration_is_one_line() {
    let out = authtimed().arg("--help").output().expect("run");
    assert!(out.status.success());
    let help = String::from_utf8_lossy(&out.stdout);
    assert!(
        help.contains("Exit codes") && help.contains("--config"),
        "{help}"
    );

    let dir = temp_dir("bad");
    let config = dir.join("bad.toml");
    std::fs::write(&config, "[ntp]\nlisten = [\"nowhere\"]\nworkers = 999\n").expect("write");
    let out = authtimed()
        .arg("--config")
        .arg(&config)
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains("bad.toml:2:11: ntp.listen[0]") && err.contains("and 1 more"),
        "{err}"
    );
    let out = authtimed()
        .args(["--listen", "127.0.0.1"])
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn it_tells_systemd_it_is_ready_serves_and_stops_on_sigterm() {
    let dir = temp_dir("ready");
    let notify_path = dir.join("notify.sock");
    let notify = UnixDatagram::bind(&notify_path).expect("bind notify socket");
    // Writable by the user the daemon switches to, as systemd's is.
    std::fs::set_permissions(&notify_path, std::fs::Permissions::from_mode(0o777)).expect("chmod");
    notify
        .set_read_timeout(Some(Duration::from_secs(20)))
        .expect("timeout");
    let config = dir.join("authtime.toml");
    std::fs::write(
        &config,
        "[ntp]\nlisten = [\"127.0.0.1:0\"]\nworkers = 1\n\
         [clock]\nsource = \"static\"\nstratum = 2\nreference-id = \"192.0.2.1\"\n",
    )
    .expect("write");
    let child = authtimed()
        .arg("--config")
        .arg(&config)
        .args(identity_args())
        .env("NOTIFY_SOCKET", &notify_path)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("start authtimed");
    let mut guard = Guard(child);
    let mut buf = [0u8; 1024];
    // A signal (SIGCHLD of another test's child) may interrupt a wait here
    // and below: each is retried.
    let n = loop {
        match notify.recv(&mut buf) {
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            other => break other.expect("READY=1 within 20 s"),
        }
    };
    let state = String::from_utf8_lossy(&buf[..n]).into_owned();
    assert!(state.starts_with("READY=1\nSTATUS=clock: "), "{state}");
    assert!(state.contains("synchronized, stratum 2"), "{state}");

    // The address it says it serves on answers a client request.
    let stdout = guard.0.stdout.take().expect("piped");
    let addr: SocketAddr = BufReader::new(stdout)
        .lines()
        .map_while(Result::ok)
        .find_map(|l| {
            l.strip_prefix("listening on udp ")?
                .split_whitespace()
                .next()?
                .parse()
                .ok()
        })
        .expect("a listening line");
    let reply = ntp_exchange(addr);
    assert_eq!(reply[1], 2, "stratum 2");

    let pid = guard.0.id().to_string();
    let recv = |buf: &mut [u8]| loop {
        match notify.recv(buf) {
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            other => break other.expect("a notification within 20 s"),
        }
    };
    // SIGHUP: reloading, then ready again.
    let hup = Command::new("kill")
        .args(["-HUP", &pid])
        .status()
        .expect("kill");
    assert!(hup.success());
    let n = recv(&mut buf);
    assert_eq!(&buf[..n], b"RELOADING=1");
    let n = recv(&mut buf);
    assert_eq!(&buf[..n], b"READY=1");
    let killed = Command::new("kill")
        .args(["-TERM", &pid])
        .status()
        .expect("kill");
    assert!(killed.success());
    let deadline = Instant::now() + Duration::from_secs(10);
    let status = loop {
        if let Some(status) = guard.0.try_wait().expect("wait") {
            break status;
        }
        assert!(
            Instant::now() < deadline,
            "authtimed did not stop on SIGTERM"
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(status.success(), "{status}");
    let n = recv(&mut buf);
    assert_eq!(&buf[..n], b"STOPPING=1");
}
