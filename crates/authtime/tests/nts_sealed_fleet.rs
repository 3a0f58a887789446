//! A fleet whose NTS master keys are sealed under a key-encryption key
//! (`[keystore] key-encryption-key`), against a real Redis and memcached
//! started by the tests on loopback: two servers share the sealed keys; a
//! raw read of the store shows no key material; a server with the wrong KEK
//! or none refuses to start and leaves the store as it was; the KEK is
//! changed across the running fleet as docs/security.md says.

mod ntp_support;
use ntp_support::nts_cert;
use ntp_support::stores::{assert_no_key_material, free_tcp_port, memcached, redis};

use std::io::{BufRead as _, BufReader, Read as _, Write as _};
use std::net::TcpStream;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use authtime_keys::store::{KeyEncryptionKey, open_blob, read_kek_file, sealed_header};
use ntp_support::{Serve, TempDir, authtime, authtime_bin, free_udp_port, text_of};

/// What a Redis `GET key` returns, read with a raw RESP request (what
/// `redis-cli GET` or anyone on the network would see).
fn redis_get(port: u16, key: &str) -> Option<Vec<u8>> {
    let mut conn = TcpStream::connect(("127.0.0.1", port)).expect("connect");
    conn.set_read_timeout(Some(Duration::from_secs(2)))
        .expect("timeout");
    write!(conn, "*2\r\n$3\r\nGET\r\n${}\r\n{key}\r\n", key.len()).expect("send");
    let mut reader = BufReader::new(conn);
    let mut line = String::new();
    reader.read_line(&mut line).expect("reply");
    let len: i64 = line
        .trim_end()
        .strip_prefix('$')
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("unexpected reply {line:?}"));
    let len = usize::try_from(len).ok()?;
    let mut body = vec![0; len + 2];
    reader.read_exact(&mut body).expect("body");
    body.truncate(len);
    Some(body)
}

/// What memcached holds under `key`, read with a raw `get`.
fn memcached_get(port: u16, key: &str) -> Option<Vec<u8>> {
    let mut conn = TcpStream::connect(("127.0.0.1", port)).expect("connect");
    conn.set_read_timeout(Some(Duration::from_secs(2)))
        .expect("timeout");
    write!(conn, "get {key}\r\n").expect("send");
    let mut reader = BufReader::new(conn);
    let mut line = String::new();
    reader.read_line(&mut line).expect("reply");
    if line == "END\r\n" {
        return None;
    }
    let len: usize = line
        .split_whitespace()
        .nth(3)
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("unexpected reply {line:?}"));
    let mut body = vec![0; len + 2];
    reader.read_exact(&mut body).expect("body");
    body.truncate(len);
    Some(body)
}

/// `authtime nts kek --out DIR/name`; returns the key as read back.
fn make_kek(dir: &TempDir, name: &str) -> KeyEncryptionKey {
    let path = dir.path(name);
    let out = authtime(&["nts", "kek", "--out", &path.display().to_string()]);
    assert!(out.status.success(), "{}", text_of(&out));
    let kek = read_kek_file(&path).expect("a KEK file");
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        kek.id().to_string()
    );
    kek
}

/// The `[keystore]` of a Redis fleet sealed under `current`, also opening `accepted`.
fn sealed_keystore(url: &str, rotation_s: u64, current: &str, accepted: &[&str]) -> String {
    let accepted: Vec<String> = accepted.iter().map(|a| format!("\"{a}\"")).collect();
    format!(
        "[keystore]\nkind = \"{}\"\nurl = \"{url}\"\nrotation-interval = {rotation_s}\n\
         old-keys = 1\npoll-interval = 0.2\nkey-encryption-key = \"{current}\"\n\
         accepted-key-encryption-keys = [{}]\n",
        url.split_once("://").map_or("redis", |(kind, _)| kind),
        accepted.join(", ")
    )
}

fn ntp_server(dir: &TempDir, name: &str, keystore: &str) -> Serve {
    ntp_server_on(dir, name, keystore, 0)
}

/// An NTP member on `port` (0: any), so that a restarted one keeps its address.
fn ntp_server_on(dir: &TempDir, name: &str, keystore: &str, port: u16) -> Serve {
    Serve::start_named(
        dir,
        name,
        &format!("[ntp]\nlisten = [\"127.0.0.1:{port}\"]\nworkers = 1\n{keystore}"),
    )
}

fn ke_server(dir: &TempDir, name: &str, keystore: &str, ntp_port: u16) -> Serve {
    let body = format!(
        "[ntp]\nlisten = [\"127.0.0.1:0\"]\nworkers = 1\n\
         [nts-ke]\nlisten = [\"127.0.0.1:0\"]\ncertificate-chain = \"nts-chain.pem\"\n\
         private-key = \"nts-key.pem\"\nntp-server = \"127.0.0.1\"\nntp-port = {ntp_port}\n\
         workers = 1\n{keystore}"
    );
    let serve = Serve::start_named(dir, name, &body);
    assert!(serve.nts_ke.is_some(), "{}", serve.log_text());
    serve
}

/// NTS-KE through `ke`, then `count` NTS exchanges with the fleet's NTP
/// server, every one answered.
fn query_ok(dir: &TempDir, ke: &Serve, count: u32) {
    let target = format!("localhost:{}", ke.nts_ke.expect("ke").port());
    let ca = dir.path("nts-ca.pem").display().to_string();
    let count = count.to_string();
    let out = authtime(&[
        "query",
        "--nts",
        &target,
        "--ca",
        &ca,
        "--json",
        "--timeout",
        "1",
        "--count",
        &count,
        "--interval",
        "0",
    ]);
    assert!(
        out.status.success(),
        "{}\nke log:\n{}",
        text_of(&out),
        ke.log_text()
    );
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(json["replies"][0]["auth"], "nts", "{json}");
}

/// Runs `authtime serve` on `config_body`, expecting it to refuse to start:
/// returns its standard error.
fn refused_start(dir: &TempDir, name: &str, config_body: &str) -> String {
    let config = dir.path(&format!("{name}.toml"));
    std::fs::write(&config, config_body).expect("config");
    let mut child = Command::new(authtime_bin())
        .arg("serve")
        .arg("--config")
        .arg(&config)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start authtime serve");
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        if let Some(status) = child.try_wait().expect("wait") {
            let mut err = String::new();
            child
                .stderr
                .take()
                .expect("piped")
                .read_to_string(&mut err)
                .expect("stderr");
            assert!(!status.success(), "{name} started: {err}");
            return err;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("{name} did not refuse to start");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn kek_of_stored(stored: &[u8]) -> String {
    sealed_header(stored).expect("sealed").kek.to_string()
}

#[test]
fn two_servers_share_sealed_keys_through_redis_which_holds_no_key_material() {
    let dir = TempDir::new("nts-sealed-redis");
    nts_cert(&dir, "nts", &["--ip", "127.0.0.1"]);
    let kek = make_kek(&dir, "kek");
    let port = free_tcp_port();
    let _redis = redis(port);
    let keystore = sealed_keystore(
        &format!("redis://127.0.0.1:{port}?key=fleet"),
        86_400,
        "kek",
        &[],
    );
    let ntp = ntp_server(&dir, "ntp", &keystore);
    let ke = ke_server(&dir, "ke", &keystore, ntp.addr.port());
    query_ok(&dir, &ke, 2);
    assert_eq!(
        ntp.metric("authtime_nts_answered_total"),
        2,
        "{}",
        ntp.log_text()
    );
    let stored = redis_get(port, "fleet").expect("stored");
    assert!(stored.starts_with(b"ATSK"), "sealed");
    assert_eq!(kek_of_stored(&stored), kek.id().to_string());
    assert_no_key_material(&stored, &kek, "fleet");
    // Moved to another key name, the blob no longer opens.
    assert!(open_blob(std::slice::from_ref(&kek), "other", &stored).is_err());
}

#[test]
fn a_server_with_the_wrong_kek_or_none_refuses_to_start_and_the_store_is_unchanged() {
    let dir = TempDir::new("nts-sealed-wrong");
    let good = make_kek(&dir, "kek");
    let wrong = make_kek(&dir, "wrong-kek");
    let port = free_tcp_port();
    let _redis = redis(port);
    let url = format!("redis://127.0.0.1:{port}?key=fleet");
    let first = ntp_server(&dir, "first", &sealed_keystore(&url, 2, "kek", &[]));
    let before = redis_get(port, "fleet").expect("stored");

    let err = refused_start(
        &dir,
        "wrong",
        &format!(
            "[ntp]\nlisten = [\"127.0.0.1:0\"]\n{}",
            sealed_keystore(&url, 2, "wrong-kek", &[])
        ),
    );
    assert!(
        err.contains(&good.id().to_string()),
        "names the blob's KEK: {err}"
    );
    assert!(
        err.contains(&wrong.id().to_string()),
        "names the configured KEK: {err}"
    );
    let err = refused_start(
        &dir,
        "none",
        &format!(
            "[ntp]\nlisten = [\"127.0.0.1:0\"]\n[keystore]\nkind = \"redis\"\nurl = \"{url}\"\n"
        ),
    );
    assert!(err.contains("none is configured"), "{err}");
    // The running server rotates every 2 s: stop it, then compare.
    drop(first);
    let after = redis_get(port, "fleet").expect("stored");
    assert_eq!(kek_of_stored(&after), good.id().to_string());
    let refused_again = refused_start(
        &dir,
        "wrong-again",
        &format!(
            "[ntp]\nlisten = [\"127.0.0.1:0\"]\n{}",
            sealed_keystore(&url, 2, "wrong-kek", &[])
        ),
    );
    assert!(refused_again.contains("not configured"), "{refused_again}");
    assert_eq!(
        redis_get(port, "fleet").expect("stored"),
        after,
        "unchanged"
    );
    assert!(
        sealed_header(&after).expect("sealed").version
            >= sealed_header(&before).expect("sealed").version
    );

    // A loosely protected KEK file is refused too.
    let loose = dir.path("loose-kek");
    std::fs::copy(dir.path("kek"), &loose).expect("copy");
    std::fs::set_permissions(&loose, std::os::unix::fs::PermissionsExt::from_mode(0o644))
        .expect("chmod");
    let err = refused_start(
        &dir,
        "loose",
        &format!(
            "[ntp]\nlisten = [\"127.0.0.1:0\"]\n{}",
            sealed_keystore(&url, 2, "loose-kek", &[])
        ),
    );
    assert!(err.contains("chmod 600"), "{err}");
    assert_eq!(
        redis_get(port, "fleet").expect("stored"),
        after,
        "unchanged"
    );
}

/// docs/security.md, "Changing the key-encryption key": two servers, the
/// fleet answering NTS at every step.
#[test]
fn the_kek_is_changed_across_a_running_fleet() {
    let dir = TempDir::new("nts-sealed-rotation");
    nts_cert(&dir, "nts", &["--ip", "127.0.0.1"]);
    let old = make_kek(&dir, "kek-old");
    let new = make_kek(&dir, "kek-new");
    let port = free_tcp_port();
    let _redis = redis(port);
    let url = format!("redis://127.0.0.1:{port}?key=fleet");
    let stored_kek = || kek_of_stored(&redis_get(port, "fleet").expect("stored"));
    let wait_for_kek = |id: String| {
        let deadline = Instant::now() + Duration::from_secs(15);
        while stored_kek() != id {
            assert!(Instant::now() < deadline, "never sealed under {id}");
            std::thread::sleep(Duration::from_millis(100));
        }
    };
    // Two-second rotations, so that the re-sealing rotation comes soon.
    let keystore = |current: &str, accepted: &[&str]| sealed_keystore(&url, 2, current, accepted);
    let ntp_port = free_udp_port();

    // Before: everyone on the old KEK.
    let ntp = ntp_server_on(&dir, "ntp-0", &keystore("kek-old", &[]), ntp_port);
    let ke = ke_server(&dir, "ke-0", &keystore("kek-old", &[]), ntp.addr.port());
    query_ok(&dir, &ke, 1);
    assert_eq!(stored_kek(), old.id().to_string());

    // 1. The new KEK is distributed as accepted, server by server.
    let ntp = {
        drop(ntp);
        ntp_server_on(&dir, "ntp-1", &keystore("kek-old", &["kek-new"]), ntp_port)
    };
    let ke = {
        drop(ke);
        ke_server(
            &dir,
            "ke-1",
            &keystore("kek-old", &["kek-new"]),
            ntp.addr.port(),
        )
    };
    query_ok(&dir, &ke, 1);
    assert_eq!(
        stored_kek(),
        old.id().to_string(),
        "still written with the old KEK"
    );

    // 2. The new KEK becomes current, server by server, the old one still
    // accepted. While the servers differ, each rotation is sealed under its
    // writer's current KEK (the server that wins the race), which both open.
    let ntp = {
        drop(ntp);
        ntp_server_on(&dir, "ntp-2", &keystore("kek-new", &["kek-old"]), ntp_port)
    };
    query_ok(&dir, &ke, 1);
    let ke = {
        drop(ke);
        ke_server(
            &dir,
            "ke-2",
            &keystore("kek-new", &["kek-old"]),
            ntp.addr.port(),
        )
    };
    query_ok(&dir, &ke, 1);
    // Every server writes with the new KEK: the next rotation re-seals.
    wait_for_kek(new.id().to_string());
    query_ok(&dir, &ke, 1);

    // 3. The old KEK is removed everywhere.
    let ntp = {
        drop(ntp);
        ntp_server_on(&dir, "ntp-3", &keystore("kek-new", &[]), ntp_port)
    };
    let ke = {
        drop(ke);
        ke_server(&dir, "ke-3", &keystore("kek-new", &[]), ntp.addr.port())
    };
    query_ok(&dir, &ke, 2);
    for serve in [&ntp, &ke] {
        assert_eq!(
            serve.metric("authtime_nts_keystore_down"),
            0,
            "{}",
            serve.log_text()
        );
    }
    assert_eq!(
        ntp.metric("authtime_nts_naks_total{reason=\"nak_unknown_key\"}"),
        0
    );
    // A server left on the old KEK alone is refused.
    let err = refused_start(
        &dir,
        "stale",
        &format!(
            "[ntp]\nlisten = [\"127.0.0.1:0\"]\n{}",
            keystore("kek-old", &[])
        ),
    );
    assert!(err.contains(&new.id().to_string()), "{err}");
    assert_no_key_material(&redis_get(port, "fleet").expect("stored"), &new, "fleet");
}

#[test]
fn a_fleet_shares_sealed_keys_through_memcached() {
    let dir = TempDir::new("nts-sealed-memcached");
    nts_cert(&dir, "nts", &["--ip", "127.0.0.1"]);
    let kek = make_kek(&dir, "kek");
    let port = free_tcp_port();
    let _memcached = memcached(port);
    let keystore = sealed_keystore(
        &format!("memcached://127.0.0.1:{port}/fleet"),
        86_400,
        "kek",
        &[],
    );
    let ntp = ntp_server(&dir, "ntp", &keystore);
    let ke = ke_server(&dir, "ke", &keystore, ntp.addr.port());
    query_ok(&dir, &ke, 2);
    assert_eq!(
        ntp.metric("authtime_nts_answered_total"),
        2,
        "{}",
        ntp.log_text()
    );
    let stored = memcached_get(port, "fleet").expect("stored");
    assert_eq!(kek_of_stored(&stored), kek.id().to_string());
    assert_no_key_material(&stored, &kek, "fleet");
}
