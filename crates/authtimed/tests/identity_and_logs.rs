//! Who `authtimed` runs as, and how it logs.
//!
//! Started as root (CI runs as root; these tests skip with a message
//! elsewhere), it binds its socket, switches to an unprivileged user and
//! keeps no capability in any thread; it refuses to start when that user
//! does not exist, and stays root only with `--allow-root`. Its log lines are
//! text with timestamps, journald's `<N>`-prefixed lines without timestamps,
//! or one JSON object a line; `auto` picks journald's only when standard
//! error is the stream `JOURNAL_STREAM` names.

use std::io::{BufRead as _, BufReader, Read as _};
use std::net::SocketAddr;
use std::os::unix::fs::MetadataExt as _;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

mod support;
use support::{Guard, TempDir, authtimed, identity_args, ntp_exchange, running_as_root, temp_dir};

/// Starts the daemon on an ephemeral loopback port with a static clock,
/// and returns it with its first stdout lines up to the listening line.
/// The configuration's directory is removed when this returns: the daemon
/// reads the file once, before it listens.
fn start(name: &str, extra: &[&str], stderr: Stdio) -> (Guard, Vec<String>, SocketAddr) {
    let (_config_dir, config) = static_clock_config(name);
    let mut child = authtimed()
        .args([
            "--listen",
            "127.0.0.1:0",
            "--workers",
            "2",
            "--config",
            config.to_str().expect("utf-8 path"),
        ])
        .args(extra)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(stderr)
        .spawn()
        .expect("start authtimed");
    let stdout = child.stdout.take().expect("piped");
    let guard = Guard(child);
    let mut lines = Vec::new();
    let mut addr = None;
    for line in BufReader::new(stdout).lines().map_while(Result::ok) {
        if let Some(rest) = line.strip_prefix("listening on udp ") {
            addr = rest.split_whitespace().next().and_then(|a| a.parse().ok());
        }
        let last = line.starts_with("clock: ");
        lines.push(line);
        if last {
            break;
        }
    }
    let addr = addr.unwrap_or_else(|| panic!("no listening line in {lines:?}"));
    (guard, lines, addr)
}

/// A configuration with a static clock, in a directory of its own per test:
/// the directory (removed when dropped) and the file.
fn static_clock_config(name: &str) -> (TempDir, PathBuf) {
    let dir = temp_dir(name);
    let path = dir.join("authtimed.toml");
    std::fs::write(
        &path,
        "[clock]\nsource = \"static\"\nstratum = 2\nreference-id = \"192.0.2.1\"\n",
    )
    .expect("write");
    (dir, path)
}

/// One NTP exchange; the reply's stratum.
fn query(addr: SocketAddr) -> u8 {
    ntp_exchange(addr)[1]
}

/// The `Uid`, `Gid` and capability lines of every thread of `pid`.
fn thread_identities(pid: u32) -> Vec<String> {
    let mut found = Vec::new();
    let tasks = std::fs::read_dir(format!("/proc/{pid}/task")).expect("tasks");
    for task in tasks.flatten() {
        let Ok(status) = std::fs::read_to_string(task.path().join("status")) else {
            continue;
        };
        let wanted: Vec<&str> = status
            .lines()
            .filter(|l| {
                ["Uid:", "Gid:", "CapPrm:", "CapEff:", "CapAmb:", "Groups:"]
                    .iter()
                    .any(|k| l.starts_with(k))
            })
            .collect();
        found.push(wanted.join(" | "));
    }
    found
}

fn nobody_ids() -> (String, String) {
    let id = |flag: &str| {
        let out = Command::new("id")
            .args([flag, "nobody"])
            .output()
            .expect("id");
        String::from_utf8_lossy(&out.stdout).trim().to_owned()
    };
    (id("-u"), id("-g"))
}

#[test]
fn started_as_root_it_switches_user_and_keeps_no_capability() {
    if !running_as_root() {
        eprintln!("skipped: not running as root, so there is no switch to check");
        return;
    }
    let (guard, lines, addr) = start("switch", &["--user", "nobody"], Stdio::null());
    assert!(
        lines[0].starts_with("running as user nobody (")
            && lines[0].ends_with("without capabilities"),
        "{lines:?}"
    );
    assert_eq!(query(addr), 2);
    let (uid, gid) = nobody_ids();
    let threads = thread_identities(guard.0.id());
    // The main thread, two workers, the clock refresher at least.
    assert!(threads.len() >= 4, "{threads:?}");
    for thread in &threads {
        let zero = "\t0000000000000000";
        assert!(
            thread.contains(&format!("Uid:\t{uid}\t{uid}\t{uid}\t{uid}"))
                && thread.contains(&format!("Gid:\t{gid}\t{gid}\t{gid}\t{gid}"))
                && thread.contains(&format!("Groups:\t{gid}"))
                && thread.contains(&format!("CapPrm:{zero}"))
                && thread.contains(&format!("CapEff:{zero}"))
                && thread.contains(&format!("CapAmb:{zero}")),
            "a thread kept privileges: {thread}"
        );
    }
}

#[test]
fn started_as_root_it_refuses_a_missing_user_and_stays_root_only_when_told() {
    if !running_as_root() {
        // Not root: naming another user is refused instead.
        let out = authtimed()
            .args(["--listen", "127.0.0.1:0", "--user", "nobody"])
            .output()
            .expect("run");
        assert_eq!(out.status.code(), Some(1));
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("not started as root"), "{err}");
        return;
    }
    let out = authtimed()
        .args(["--listen", "127.0.0.1:0", "--user", "no-such-user-authtime"])
        .stdin(Stdio::null())
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let err = String::from_utf8_lossy(&out.stderr);
    let last = err.lines().last().unwrap_or_default();
    assert!(
        last.starts_with("authtimed: started as root, and the user `no-such-user-authtime`")
            && last.contains("--allow-root"),
        "{err}"
    );

    let (guard, lines, addr) = start(
        "allow-root",
        &["--allow-root", "--log-format", "text"],
        Stdio::null(),
    );
    assert_eq!(lines[0], "running as root (allow-root)");
    assert_eq!(query(addr), 2);
    let threads = thread_identities(guard.0.id());
    assert!(
        threads.iter().all(|t| t.contains("Uid:\t0\t0\t0\t0")),
        "{threads:?}"
    );
}

/// Stops the daemon and returns what it wrote on standard error.
fn stop_and_read_stderr(mut guard: Guard) -> String {
    let pid = guard.0.id().to_string();
    let killed = Command::new("kill")
        .args(["-TERM", &pid])
        .status()
        .expect("kill");
    assert!(killed.success());
    let deadline = Instant::now() + Duration::from_secs(10);
    while guard.0.try_wait().expect("wait").is_none() {
        assert!(Instant::now() < deadline, "no stop on SIGTERM");
        std::thread::sleep(Duration::from_millis(20));
    }
    let mut err = String::new();
    if let Some(mut pipe) = guard.0.stderr.take() {
        pipe.read_to_string(&mut err).expect("read stderr");
    }
    err
}

#[test]
fn json_logs_are_one_object_a_line() {
    let mut args = identity_args().to_vec();
    args.extend(["--log-format", "json"]);
    let (guard, _, addr) = start("json", &args, Stdio::piped());
    assert_eq!(query(addr), 2);
    let err = stop_and_read_stderr(guard);
    let events: Vec<serde_json::Value> = err
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}")))
        .collect();
    assert!(events.len() >= 2, "{err}");
    for event in &events {
        assert!(event["timestamp"].is_string(), "{event}");
        assert!(
            ["ERROR", "WARN", "INFO", "DEBUG", "TRACE"]
                .contains(&event["level"].as_str().unwrap_or("")),
            "{event}"
        );
        assert!(event["fields"]["message"].is_string(), "{event}");
    }
    assert!(
        events
            .iter()
            .any(|e| e["fields"]["message"] == "serving NTP"),
        "{err}"
    );
}

#[test]
fn the_environment_configures_it_as_the_container_image_does() {
    // The image sets AUTHTIMED_CONFIG and AUTHTIMED_LOG_FORMAT; an operator
    // adds AUTHTIMED_LISTEN (commas between addresses). A command-line
    // option wins over its variable.
    let (_config_dir, config) = static_clock_config("env");
    let mut child = authtimed()
        .args(identity_args())
        .env("AUTHTIMED_CONFIG", &config)
        .env("AUTHTIMED_LOG_FORMAT", "json")
        .env("AUTHTIMED_LISTEN", "127.0.0.1:0,127.0.0.1:0")
        .env("AUTHTIMED_WORKERS", "1")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start authtimed");
    let stdout = child.stdout.take().expect("piped");
    let guard = Guard(child);
    let listening: Vec<SocketAddr> = BufReader::new(stdout)
        .lines()
        .map_while(Result::ok)
        .take_while(|l| !l.starts_with("clock: "))
        .filter_map(|l| {
            l.strip_prefix("listening on udp ")
                .and_then(|rest| rest.split_whitespace().next()?.parse().ok())
        })
        .collect();
    assert_eq!(listening.len(), 2, "two addresses from AUTHTIMED_LISTEN");
    for addr in &listening {
        assert_eq!(query(*addr), 2, "the static clock of AUTHTIMED_CONFIG");
    }
    let err = stop_and_read_stderr(guard);
    assert!(
        err.lines().next().is_some_and(|l| l.starts_with('{')),
        "JSON from AUTHTIMED_LOG_FORMAT: {err}"
    );

    let overridden = authtimed()
        .env("AUTHTIMED_LOG_FORMAT", "json")
        .args(["--log-format", "bogus", "--config"])
        .arg(&config)
        .stdin(Stdio::null())
        .output()
        .expect("run authtimed");
    assert_eq!(
        overridden.status.code(),
        Some(2),
        "the option wins: {overridden:?}"
    );
}

#[test]
fn journald_lines_carry_the_priority_and_no_timestamp() {
    let mut args = identity_args().to_vec();
    args.extend(["--log-format", "journald"]);
    let (guard, _, addr) = start("journald", &args, Stdio::piped());
    assert_eq!(query(addr), 2);
    let err = stop_and_read_stderr(guard);
    assert!(err.lines().count() >= 2, "{err}");
    for line in err.lines() {
        let rest = ["<3>", "<4>", "<6>", "<7>"]
            .iter()
            .find_map(|p| line.strip_prefix(p))
            .unwrap_or_else(|| panic!("no priority prefix: {line}"));
        assert!(
            !rest.starts_with(|c: char| c.is_ascii_digit()),
            "a timestamp: {line}"
        );
        assert!(!rest.contains("INFO") && !rest.contains("WARN"), "{line}");
    }
    assert!(
        err.lines().any(|l| l.starts_with("<6>serving NTP")),
        "{err}"
    );
}

#[test]
fn auto_picks_journald_only_when_stderr_is_the_journal_stream() {
    let dir = temp_dir("journal-stream");
    for matching in [true, false] {
        let path = dir.join(format!("stderr-{matching}"));
        let file = std::fs::File::create(&path).expect("create");
        let meta = file.metadata().expect("meta");
        let stream = if matching {
            format!("{}:{}", meta.dev(), meta.ino())
        } else {
            format!("{}:{}", meta.dev(), meta.ino() + 1)
        };
        let mut command_args = identity_args().to_vec();
        command_args.extend(["--log-format", "auto"]);
        let (_config_dir, config) = static_clock_config(&format!("auto-{matching}"));
        let mut child = authtimed()
            .args(["--listen", "127.0.0.1:0", "--config"])
            .arg(&config)
            .args(&command_args)
            .env("JOURNAL_STREAM", &stream)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(file)
            .spawn()
            .expect("start");
        let stdout = child.stdout.take().expect("piped");
        let guard = Guard(child);
        let started = BufReader::new(stdout)
            .lines()
            .map_while(Result::ok)
            .any(|l| l.starts_with("clock: "));
        assert!(started);
        drop(stop_and_read_stderr(guard));
        let log = std::fs::read_to_string(&path).expect("read log");
        let first = log.lines().next().unwrap_or_default();
        let prefixed = ["<3>", "<4>", "<6>", "<7>"]
            .iter()
            .any(|p| first.starts_with(p));
        assert_eq!(prefixed, matching, "{stream}: {log}");
        if !matching {
            assert!(
                first.starts_with("20") && (first.contains(" INFO ") || first.contains(" WARN ")),
                "text format, timestamp first: {log}"
            );
        }
    }
}

#[test]
fn the_nts_key_store_is_given_to_the_user_and_an_unwritable_directory_is_refused() {
    if !running_as_root() {
        eprintln!("skipped: not running as root, so there is no switch to check");
        return;
    }
    let (uid, gid) = nobody_ids();
    let (uid, gid): (u32, u32) = (uid.parse().expect("uid"), gid.parse().expect("gid"));
    let dir = temp_dir("keystore");
    let state = dir.join("state");
    std::fs::create_dir(&state).expect("state dir");
    std::os::unix::fs::chown(&state, Some(uid), Some(gid)).expect("chown");
    for (store, usable) in [("state/master-keys", true), ("master-keys", false)] {
        let config = dir.join(format!("authtimed-{usable}.toml"));
        std::fs::write(
            &config,
            format!(
                "[ntp]\nlisten = [\"127.0.0.1:0\"]\nworkers = 1\n\
                 [clock]\nsource = \"static\"\nstratum = 2\nreference-id = \"192.0.2.1\"\n\
                 [keystore]\nkind = \"embedded\"\npath = \"{store}\"\n"
            ),
        )
        .expect("write");
        let mut child = authtimed()
            .arg("--config")
            .arg(&config)
            .args(["--user", "nobody"])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start");
        let stdout = child.stdout.take().expect("piped");
        let mut guard = Guard(child);
        let lines: Vec<String> = BufReader::new(stdout)
            .lines()
            .map_while(Result::ok)
            .take_while(|l| !l.starts_with("clock: "))
            .collect();
        if usable {
            assert!(lines[0].starts_with("running as user nobody"), "{lines:?}");
            for file in ["state/master-keys", "state/master-keys.lock"] {
                let meta = std::fs::metadata(dir.join(file)).expect(file);
                assert_eq!((meta.uid(), meta.gid()), (uid, gid), "{file}");
            }
            drop(stop_and_read_stderr(guard));
        } else {
            let deadline = Instant::now() + Duration::from_secs(10);
            let status = loop {
                if let Some(status) = guard.0.try_wait().expect("wait") {
                    break status;
                }
                assert!(Instant::now() < deadline, "it did not refuse: {lines:?}");
                std::thread::sleep(Duration::from_millis(20));
            };
            assert_eq!(status.code(), Some(1));
            let mut err = String::new();
            if let Some(mut pipe) = guard.0.stderr.take() {
                pipe.read_to_string(&mut err).expect("read");
            }
            assert!(
                err.contains("user `nobody` cannot write the directory"),
                "{err}"
            );
            // Refused before anything was written.
            assert!(!dir.join("master-keys").exists());
        }
    }
}
