//! Interop with the real chronyd (Debian package `chrony`, installed by
//! ./test.sh), on loopback and high ports, both directions, with MD5, SHA1 and
//! AES128 keys from `authtime keygen`:
//!
//! - chronyd as a client (`-Q`: measure, never touch the clock) syncs from
//!   `authtime serve` and accepts its authenticated samples; with other key
//!   bytes on the server it gets no sample (dropped, as chrony drops) or only
//!   crypto-NAKs, which it refuses.
//! - `authtime query` against a chronyd server (`-x`: never touches the
//!   clock; `local stratum 8`) gets authenticated samples; with a wrong key it
//!   exits 1 and says why.
//!
//! Each chronyd runs with its own configuration, pid file and no command
//! socket in a temporary directory, and is killed when its test ends.

mod ntp_support;

use ntp_support::{
    Serve, TempDir, authtime, chronyd_private_lines, chronyd_server, keygen, run_chronyd_client,
    text, text_of, write_private,
};

/// The key ids of the shared key file: one per key type.
const KEYS: [(&str, u32); 3] = [("md5", 1), ("sha1", 2), ("aes128", 3)];

/// How `chronyd -Q` ended.
struct ClientRun {
    success: bool,
    log: String,
}

/// Runs `chronyd -Q` against `authtime serve` at `port` with key `key_id` of
/// `key_file`, polling every 1/16 s, for at most `limit_s` seconds.
fn chronyd_client(
    dir: &TempDir,
    port: u16,
    key_file: &std::path::Path,
    key_id: u32,
    limit_s: u32,
) -> ClientRun {
    let conf = dir.path(&format!("client-{key_id}.conf"));
    std::fs::write(
        &conf,
        format!(
            "server 127.0.0.1 port {port} key {key_id} iburst minpoll -4 maxpoll -4\n\
             keyfile {}\n{}",
            key_file.display(),
            chronyd_private_lines(dir)
        ),
    )
    .expect("conf");
    let log_path = dir.path(&format!("client-{key_id}.log"));
    let (success, log) = run_chronyd_client(&conf, &[], &log_path, limit_s);
    ClientRun { success, log }
}

fn serve_config(key_file: &std::path::Path, auth_failure: &str) -> String {
    format!(
        "[ntp]\nlisten = [\"127.0.0.1:0\"]\nkeys = \"{}\"\nkey-format = \"chrony\"\n\
         auth-failure = \"{auth_failure}\"\nworkers = 2\n",
        key_file.display()
    )
}

#[test]
fn chronyd_syncs_from_authtime_serve_with_md5_sha1_and_aes128_keys() {
    let dir = TempDir::new("chrony-client");
    let key_file = keygen(&dir, "chrony.keys", "chrony", &KEYS);
    let serve = Serve::start(&dir, &serve_config(&key_file, "drop"));
    for (key_type, key_id) in KEYS {
        let run = chronyd_client(&dir, serve.addr.port(), &key_file, key_id, 5);
        assert!(
            run.success && run.log.contains("System clock wrong by"),
            "{key_type}: chronyd did not accept authtime's samples:\n{}\nserver log:\n{}",
            run.log,
            serve.log_text()
        );
    }
    let metrics = serve.scrape();
    let answered = ntp_support::metric(&metrics, "authtime_ntp_answered_total{auth=\"mac\"}");
    assert!(answered >= 3, "{metrics}");
    assert_eq!(
        ntp_support::metric(&metrics, "authtime_ntp_answered_total{auth=\"none\"}"),
        0,
        "chronyd sent only authenticated requests"
    );
    ntp_support::interop::proven(ntp_support::interop::Row {
        peer: &ntp_support::chronyd_version(),
        direction: ntp_support::interop::Direction::PeerToAuthtime,
        feature: "symmetric key",
        result: "MD5, SHA1, AES128 (CMAC)",
        test: "ntp_chrony::chronyd_syncs_from_authtime_serve_with_md5_sha1_and_aes128_keys",
    });
}

#[test]
fn chronyd_gets_no_sample_when_the_server_has_other_key_bytes() {
    let dir = TempDir::new("chrony-client-wrong");
    let client_keys = keygen(&dir, "client.keys", "chrony", &KEYS);
    // The same ids and types, other bytes.
    let server_keys = keygen(&dir, "server.keys", "chrony", &KEYS);
    for (policy, counter) in [
        ("drop", "authtime_ntp_dropped_total{reason=\"bad_mac\"}"),
        ("crypto-nak", "authtime_ntp_crypto_naks_total"),
    ] {
        let serve = Serve::start(&dir, &serve_config(&server_keys, policy));
        let run = chronyd_client(&dir, serve.addr.port(), &client_keys, 3, 2);
        assert!(
            !run.success && !run.log.contains("System clock wrong by"),
            "{policy}: chronyd accepted a sample under a wrong key:\n{}",
            run.log
        );
        assert!(serve.metric(counter) > 0, "{policy}: {}", serve.scrape());
        assert!(serve.metric("authtime_ntp_mac_failures_total{key_id=\"3\"}") > 0);
        assert_eq!(serve.metric("authtime_ntp_answered_total{auth=\"mac\"}"), 0);
    }
}

#[test]
fn authtime_query_gets_authenticated_samples_from_chronyd() {
    let dir = TempDir::new("chrony-server");
    let key_file = keygen(&dir, "chrony.keys", "chrony", &KEYS);
    let (_chronyd, target) = chronyd_server(&dir, &key_file);
    let key_path = key_file.to_string_lossy().into_owned();
    for (key_type, key_id) in KEYS {
        let id = key_id.to_string();
        let out = authtime(&[
            "query",
            &target,
            "--key-file",
            &key_path,
            "--key-id",
            &id,
            "--count",
            "2",
            "--interval",
            "0.1",
            "--json",
        ]);
        assert!(out.status.success(), "{key_type}: {}", text_of(&out));
        let json: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
        for reply in json["replies"].as_array().expect("replies") {
            assert_eq!(reply["authenticated"], true, "{reply}");
            assert_eq!(reply["key_id"], key_id, "{reply}");
            assert_eq!(reply["stratum"], 8, "chronyd serves its `local stratum`");
            // A round trip on loopback, with room for a busy machine.
            assert!(reply["delay"].as_f64().is_some_and(|d| d < 1.0), "{reply}");
        }
        // The text form says how the reply was authenticated.
        let out = authtime(&["query", &target, "--key-file", &key_path, "--key-id", &id]);
        let line = text(&out.stdout);
        let want = format!("authenticated: key {key_id} {}", key_type.to_uppercase());
        assert!(out.status.success() && line.contains(&want), "{line}");
    }
    ntp_support::interop::proven(ntp_support::interop::Row {
        peer: &ntp_support::chronyd_version(),
        direction: ntp_support::interop::Direction::AuthtimeToPeer,
        feature: "symmetric key",
        result: "MD5, SHA1, AES128 (CMAC)",
        test: "ntp_chrony::authtime_query_gets_authenticated_samples_from_chronyd",
    });
}

#[test]
fn authtime_query_reports_a_wrong_key_to_chronyd() {
    let dir = TempDir::new("chrony-server-wrong");
    let key_file = keygen(&dir, "chrony.keys", "chrony", &KEYS);
    let (_chronyd, target) = chronyd_server(&dir, &key_file);
    // Key 3 with other bytes: chronyd drops the request; the plain probe shows
    // that the server is there, so the key is what it refuses.
    let wrong = dir.path("wrong.keys");
    write_private(&wrong, "3 AES128 HEX:000102030405060708090A0B0C0D0E0F\n");
    let wrong_path = wrong.to_string_lossy().into_owned();
    let out = authtime(&[
        "query",
        &target,
        "--key-file",
        &wrong_path,
        "--key-id",
        "3",
        "--timeout",
        "0.5",
    ]);
    assert_eq!(out.status.code(), Some(1), "{}", text_of(&out));
    let stderr = text(&out.stderr);
    assert!(stderr.contains("does not accept key 3"), "{stderr}");
    // A key id chronyd does not have at all: the same verdict.
    write_private(
        &wrong,
        "77 SHA1 HEX:000102030405060708090A0B0C0D0E0F10111213\n",
    );
    let out = authtime(&[
        "query",
        &target,
        "--key-file",
        &wrong_path,
        "--key-id",
        "77",
        "--timeout",
        "0.5",
    ]);
    assert_eq!(out.status.code(), Some(1), "{}", text_of(&out));
}
