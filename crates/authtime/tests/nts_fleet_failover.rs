//! An NTS fleet whose master keys live in a replicated Redis behind
//! Sentinel, all started by the test on loopback: TLS everywhere (a CA made
//! by `authtime nts cert`), the servers logged in as an ACL user allowed only
//! the store's commands on its keys, a master, a replica and one sentinel,
//! and the master keys sealed under a key-encryption key (`authtime nts
//! kek`), so that what Redis holds and replicates shows no key material.
//! The master is killed (SIGKILL); the sentinel promotes the replica; the
//! fleet answers every NTS request made with cookies the client holds, and
//! then rotates its keys through the new master.

mod ntp_support;
use ntp_support::nts_cert;
use ntp_support::stores::{assert_no_key_material, free_tcp_port};

use std::net::TcpStream;
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use authtime_keys::store::{read_kek_file, sealed_header};
use ntp_support::{ChildGuard, Serve, TempDir, authtime, text_of};

/// The ACL rule docs/nts.md gives for the store's user.
const ACL_RULE: &str = "on ~authtime:nts:* resetchannels -@all +get +set +eval +role";
const PASSWORD: &str = "fleet-pw";

fn wait_for(what: &str, limit: Duration, mut done: impl FnMut() -> bool) -> Duration {
    let started = Instant::now();
    while !done() {
        assert!(started.elapsed() < limit, "{what}: not within {limit:?}");
        std::thread::sleep(Duration::from_millis(50));
    }
    started.elapsed()
}

/// The TLS options every Redis process of the test takes.
fn tls_args(dir: &TempDir, port: u16) -> Vec<String> {
    let file = |name: &str| dir.path(name).display().to_string();
    [
        "--port".into(),
        "0".into(),
        "--tls-port".into(),
        port.to_string(),
        "--bind".into(),
        "127.0.0.1".into(),
        "--tls-cert-file".into(),
        file("redis-chain.pem"),
        "--tls-key-file".into(),
        file("redis-key.pem"),
        "--tls-ca-cert-file".into(),
        file("redis-ca.pem"),
        "--tls-auth-clients".into(),
        "no".into(),
        "--tls-replication".into(),
        "yes".into(),
    ]
    .to_vec()
}

/// A Redis data node (master, or replica of `master`) with the ACL user;
/// the default user stays for replication and the sentinel.
fn data_node(dir: &TempDir, port: u16, master: Option<u16>) -> ChildGuard {
    let mut args = tls_args(dir, port);
    args.extend(["--save", "", "--appendonly", "no"].map(String::from));
    args.extend(["--user".to_owned(), "authtime".to_owned()]);
    args.extend(ACL_RULE.split(' ').map(String::from));
    args.push(format!(">{PASSWORD}"));
    if let Some(master) = master {
        args.extend([
            "--replicaof".to_owned(),
            "127.0.0.1".to_owned(),
            master.to_string(),
        ]);
    }
    spawn(dir, &args, port, "redis-server")
}

fn sentinel(dir: &TempDir, port: u16, master: u16) -> ChildGuard {
    let mut conf = String::new();
    for pair in tls_args(dir, port).chunks(2) {
        conf.push_str(&format!(
            "{} {}\n",
            pair[0].trim_start_matches("--"),
            pair[1]
        ));
    }
    conf.push_str(&format!(
        "sentinel monitor authtime 127.0.0.1 {master} 1\n\
         sentinel down-after-milliseconds authtime 500\n\
         sentinel failover-timeout authtime 5000\n"
    ));
    let path = dir.path("sentinel.conf");
    std::fs::write(&path, conf).expect("sentinel.conf");
    let args = [path.display().to_string(), "--sentinel".to_owned()];
    spawn(dir, &args, port, "redis-sentinel")
}

fn spawn(dir: &TempDir, args: &[String], port: u16, name: &str) -> ChildGuard {
    let child = Command::new("redis-server")
        .args(args)
        .current_dir(&dir.0)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start redis-server ({e}); ./test.sh installs it"));
    let guard = ChildGuard {
        child,
        name: name.into(),
    };
    wait_for(&format!("{name} listens"), Duration::from_secs(10), || {
        TcpStream::connect(("127.0.0.1", port)).is_ok()
    });
    guard
}

/// `redis-cli` over TLS to `port` as the default user; its standard output.
fn cli(dir: &TempDir, port: u16, args: &[&str]) -> Vec<u8> {
    let ca = dir.path("redis-ca.pem").display().to_string();
    Command::new("redis-cli")
        .args([
            "--tls",
            "--cacert",
            &ca,
            "-h",
            "127.0.0.1",
            "-p",
            &port.to_string(),
        ])
        .args(args)
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output()
        .map(|o| o.stdout)
        .unwrap_or_default()
}

fn store_config(dir: &TempDir, sentinel_port: u16) -> String {
    let ca = dir.path("redis-ca.pem").display().to_string();
    let kek = dir.path("kek").display().to_string();
    format!(
        "[keystore]\nkind = \"redis\"\n\
         url = \"rediss+sentinel://authtime:{PASSWORD}@127.0.0.1:{sentinel_port}/authtime?key=authtime:nts:fleet&ca={ca}\"\n\
         rotation-interval = 8\nold-keys = 2\npoll-interval = 0.2\n\
         key-encryption-key = \"{kek}\"\n"
    )
}

/// What `redis-cli GET` printed, without the line feed it adds.
fn stored(cli_output: &[u8]) -> &[u8] {
    cli_output.strip_suffix(b"\n").unwrap_or(cli_output)
}

/// The stored blob is sealed under `kek` for `key`, and no 16-byte run of
/// the plaintext ring occurs in it.
fn assert_sealed_without_key_material(stored: &[u8], kek: &Path, key: &str) {
    let kek = read_kek_file(kek).expect("the KEK file");
    let header = sealed_header(stored).expect("a sealed blob");
    assert_eq!(header.kek.to_string(), kek.id().to_string());
    assert_no_key_material(stored, &kek, key);
}

/// `authtime query --nts` through `ke` with the cookie jar `jar`.
fn query(dir: &TempDir, ke: &Serve, jar: &str) -> Output {
    let target = format!("localhost:{}", ke.nts_ke.expect("ke").port());
    let ca = dir.path("nts-ca.pem").display().to_string();
    authtime(&[
        "query",
        "--nts",
        &target,
        "--ca",
        &ca,
        "--json",
        "--timeout",
        "1",
        "--cookie-store",
        jar,
    ])
}

/// Whether `out` is a successful NTS answer from held cookies (no NTS-KE).
fn answered_from_held_cookies(out: &Output) -> bool {
    out.status.success()
        && serde_json::from_slice::<serde_json::Value>(&out.stdout).is_ok_and(|json| {
            json["replies"][0]["auth"] == "nts" && json["nts"]["ke_exchanges"] == 0
        })
}

#[test]
fn a_sentinel_failover_costs_held_cookies_nothing_and_rotation_goes_on() {
    let dir = TempDir::new("nts-fleet-failover");
    nts_cert(&dir, "nts", &["--ip", "127.0.0.1"]);
    nts_cert(&dir, "redis", &["--ip", "127.0.0.1"]);
    let kek = dir.path("kek");
    let made = authtime(&["nts", "kek", "--out", &kek.display().to_string()]);
    assert!(made.status.success(), "{}", text_of(&made));
    let (master_port, replica_port, sentinel_port) =
        (free_tcp_port(), free_tcp_port(), free_tcp_port());
    let mut master = Some(data_node(&dir, master_port, None));
    let _replica = data_node(&dir, replica_port, Some(master_port));
    let _sentinel = sentinel(&dir, sentinel_port, master_port);
    wait_for(
        "the sentinel knows the replica",
        Duration::from_secs(30),
        || {
            !cli(&dir, sentinel_port, &["SENTINEL", "replicas", "authtime"])
                .trim_ascii()
                .is_empty()
        },
    );

    let store = store_config(&dir, sentinel_port);
    let ntp = Serve::start_named(
        &dir,
        "ntp",
        &format!("[ntp]\nlisten = [\"127.0.0.1:0\"]\nworkers = 1\n{store}"),
    );
    let ke = Serve::start_named(
        &dir,
        "ke",
        &format!(
            "[ntp]\nlisten = [\"127.0.0.1:0\"]\nworkers = 1\n\
             [nts-ke]\nlisten = [\"127.0.0.1:0\"]\ncertificate-chain = \"nts-chain.pem\"\n\
             private-key = \"nts-key.pem\"\nntp-server = \"127.0.0.1\"\nntp-port = {}\n\
             workers = 1\nclient-limit = false\n{store}",
            ntp.addr.port()
        ),
    );
    let jar = dir.path("cookies").display().to_string();
    let first = query(&dir, &ke, &jar);
    assert!(
        first.status.success(),
        "{}\n{}",
        text_of(&first),
        ke.log_text()
    );

    // The ring is on the master and, replicated, on the replica (read
    // again on each try: a rotation may replace it meanwhile).
    let key = "authtime:nts:fleet";
    let mut before = Vec::new();
    wait_for("the replica has the ring", Duration::from_secs(20), || {
        before = cli(&dir, master_port, &["GET", key]);
        before.len() > 16 && cli(&dir, replica_port, &["GET", key]) == before
    });
    assert_sealed_without_key_material(stored(&before), &kek, key);
    let changes = "authtime_nts_key_ring_changes_total";
    let rotations = |s: &Serve| s.metric("authtime_nts_key_rotations_total");
    let rotations_before = rotations(&ntp) + rotations(&ke);

    // SIGKILL the master. Until the fleet reads and writes through the
    // promoted replica, held cookies keep being answered.
    drop(master.take());
    let killed = Instant::now();
    let (mut answered, mut failed) = (0, Vec::new());
    let mut promoted_after = None;
    while killed.elapsed() < Duration::from_secs(30) {
        let out = query(&dir, &ke, &jar);
        if answered_from_held_cookies(&out) {
            answered += 1;
        } else {
            failed.push(text_of(&out));
        }
        let role = cli(&dir, replica_port, &["ROLE"]);
        if promoted_after.is_none() && role.starts_with(b"master") {
            promoted_after = Some(killed.elapsed());
        }
        if promoted_after.is_some()
            && ntp.metric("authtime_nts_keystore_down") == 0
            && ke.metric("authtime_nts_keystore_down") == 0
            && answered >= 5
        {
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let promoted_after = promoted_after.expect("the sentinel promoted the replica");
    eprintln!(
        "replica promoted {promoted_after:?} after the kill; {answered} NTS queries \
         with held cookies answered, {} failed, in {:?}",
        failed.len(),
        killed.elapsed()
    );
    assert!(failed.is_empty(), "{failed:?}");

    // A rotation after the failover, written through the new master and
    // adopted by both servers.
    let (ntp_changes, ke_changes) = (ntp.metric(changes), ke.metric(changes));
    wait_for(
        "a rotation through the new master",
        Duration::from_secs(30),
        || {
            rotations(&ntp) + rotations(&ke) > rotations_before
                && ntp.metric(changes) > ntp_changes
                && ke.metric(changes) > ke_changes
        },
    );
    let after = cli(&dir, replica_port, &["GET", key]);
    assert!(
        after.len() > 16 && after != before,
        "the new master holds the new ring"
    );
    assert_sealed_without_key_material(stored(&after), &kek, key);
    let last = query(&dir, &ke, &jar);
    assert!(answered_from_held_cookies(&last), "{}", text_of(&last));
    eprintln!(
        "rotated through the new master {:?} after the kill",
        killed.elapsed()
    );
    for serve in [&ntp, &ke] {
        assert_eq!(
            serve.metric("authtime_nts_naks_total{reason=\"nak_unknown_key\"}")
                + serve.metric("authtime_nts_naks_total{reason=\"nak_bad_cookie\"}"),
            0,
            "{}",
            serve.log_text()
        );
    }
}
