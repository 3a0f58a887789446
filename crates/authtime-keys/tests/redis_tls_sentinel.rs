//! The Redis store against real servers started by the test on loopback:
//! TLS with a CA the test makes and an ACL user allowed only what the store
//! needs; and a master, a replica and a sentinel, where the master is killed
//! and the same store object follows the promoted replica.

use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use authtime_keys::store::{MasterKeyStore, StoreError, open_store};
use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, KeyPair};

/// The ACL rule the docs give for the store's user (plus the password).
const ACL_RULE: &str = "on ~authtime:nts:* resetchannels -@all +get +set +eval +role";

/// A server process killed (SIGKILL) when dropped.
struct Server {
    child: Child,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A directory removed when dropped.
struct TempDir(PathBuf);

impl TempDir {
    fn new(name: &str) -> Self {
        let dir = std::env::temp_dir().join(format!("authtime-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("temp dir");
        Self(dir)
    }

    fn write(&self, name: &str, text: &str) -> String {
        let path = self.0.join(name);
        std::fs::write(&path, text).expect("write");
        path.display().to_string()
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free loopback port")
}

fn start(args: &[String], port: u16, dir: &Path) -> Server {
    let child = Command::new("redis-server")
        .args(args)
        .current_dir(dir)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start redis-server ({e}); ./test.sh installs it"));
    let server = Server { child };
    let deadline = Instant::now() + Duration::from_secs(10);
    while TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(
            Instant::now() < deadline,
            "redis-server on port {port} did not start"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    server
}

fn plain_args(port: u16) -> Vec<String> {
    [
        "--port",
        &port.to_string(),
        "--bind",
        "127.0.0.1",
        "--save",
        "",
        "--appendonly",
        "no",
    ]
    .map(String::from)
    .to_vec()
}

/// PEM of a CA, and of a certificate for 127.0.0.1 it signs with its key.
fn ca_and_server() -> (String, String, String) {
    let ca_key = KeyPair::generate().expect("key");
    let mut ca_params = CertificateParams::new(Vec::<String>::new()).expect("params");
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca_params
        .distinguished_name
        .push(DnType::CommonName, "authtime redis test CA");
    let ca = ca_params.self_signed(&ca_key).expect("CA");
    let key = KeyPair::generate().expect("key");
    let cert = CertificateParams::new(vec!["127.0.0.1".to_owned()])
        .expect("params")
        .signed_by(&key, &ca, &ca_key)
        .expect("server certificate");
    (ca.pem(), cert.pem(), key.serialize_pem())
}

fn check_compare_and_swap(store: &dyn MasterKeyStore) {
    assert_eq!(store.load().expect("load"), None);
    assert!(store.compare_and_swap(None, b"a").expect("cas"));
    assert!(!store.compare_and_swap(None, b"b").expect("cas"));
    assert!(!store.compare_and_swap(Some(b"b"), b"c").expect("cas"));
    let blob: Vec<u8> = (0..5000u32).map(|i| (i * 7 + 13) as u8).collect();
    assert!(store.compare_and_swap(Some(b"a"), &blob).expect("cas"));
    assert_eq!(store.load().expect("load"), Some(blob));
}

#[test]
fn rediss_with_a_ca_file_and_an_acl_user() {
    let dir = TempDir::new("redis-tls");
    let (ca, cert, key) = ca_and_server();
    let (other_ca, _, _) = ca_and_server();
    let ca_file = dir.write("ca.pem", &ca);
    let other_ca_file = dir.write("other-ca.pem", &other_ca);
    let port = free_port();
    let mut args = plain_args(0);
    args.extend(
        [
            "--tls-port",
            &port.to_string(),
            "--tls-cert-file",
            &dir.write("server.pem", &cert),
            "--tls-key-file",
            &dir.write("server-key.pem", &key),
            "--tls-ca-cert-file",
            &ca_file,
            "--tls-auth-clients",
            "no",
            "--user",
            "default",
            "off",
            "--user",
            "authtime",
        ]
        .map(String::from),
    );
    args.extend(ACL_RULE.split(' ').map(String::from));
    args.push(">s3cret-pw".into());
    let _redis = start(&args, port, &dir.0);

    let url = |user: &str, key: &str, ca: &str| {
        format!("rediss://{user}@127.0.0.1:{port}?key=authtime:nts:{key}&ca={ca}")
    };
    let store = open_store(&url("authtime:s3cret-pw", "ring", &ca_file)).expect("url");
    assert!(!store.describe().contains("s3cret"), "{}", store.describe());
    check_compare_and_swap(store.as_ref());

    // The ACL allows the store's keys only.
    let e = open_store(&format!(
        "rediss://authtime:s3cret-pw@127.0.0.1:{port}?key=elsewhere&ca={ca_file}"
    ))
    .expect("url")
    .load()
    .expect_err("a key outside the ACL pattern");
    assert!(
        matches!(e, StoreError::Protocol(_)) && e.to_string().contains("no permissions"),
        "{e}"
    );

    let e = open_store(&url("authtime:wrong-pw", "ring", &ca_file))
        .expect("url")
        .load()
        .expect_err("wrong password");
    assert!(matches!(e, StoreError::Protocol(_)), "{e}");
    assert!(!e.to_string().contains("wrong-pw"), "{e}");
    assert!(e.to_string().contains("authentication failed"), "{e}");

    let e = open_store(&url("authtime:s3cret-pw", "ring", &other_ca_file))
        .expect("url")
        .load()
        .expect_err("a CA that did not sign the server's certificate");
    assert!(matches!(e, StoreError::Protocol(_)), "{e}");
    assert!(e.to_string().contains("certificate"), "{e}");
    assert!(!e.to_string().contains("s3cret"), "{e}");

    // Plain TCP to the TLS port fails within the timeout, as unreachable.
    let started = Instant::now();
    let e = open_store(&format!("redis://authtime:s3cret-pw@127.0.0.1:{port}"))
        .expect("url")
        .load()
        .expect_err("no TLS");
    assert!(started.elapsed() < Duration::from_secs(3), "{e}");
}

/// `ROLE`'s first word on the node at `port`.
fn role(port: u16) -> Option<String> {
    let client = redis::Client::open(format!("redis://127.0.0.1:{port}")).ok()?;
    let mut conn = client
        .get_connection_with_timeout(Duration::from_millis(500))
        .ok()?;
    let role: Vec<redis::Value> = redis::cmd("ROLE").query(&mut conn).ok()?;
    match role.first() {
        Some(redis::Value::BulkString(b)) => String::from_utf8(b.clone()).ok(),
        _ => None,
    }
}

fn query_replicas(sentinel: u16) -> usize {
    let Ok(client) = redis::Client::open(format!("redis://127.0.0.1:{sentinel}")) else {
        return 0;
    };
    let Ok(mut conn) = client.get_connection_with_timeout(Duration::from_millis(500)) else {
        return 0;
    };
    redis::cmd("SENTINEL")
        .arg("replicas")
        .arg("authtime")
        .query::<Vec<redis::Value>>(&mut conn)
        .map(|v| v.len())
        .unwrap_or(0)
}

fn wait_for(what: &str, limit: Duration, mut done: impl FnMut() -> bool) -> Duration {
    let started = Instant::now();
    while !done() {
        assert!(started.elapsed() < limit, "{what}: not within {limit:?}");
        std::thread::sleep(Duration::from_millis(50));
    }
    started.elapsed()
}

#[test]
fn sentinel_finds_the_master_and_the_store_follows_a_failover() {
    let dir = TempDir::new("redis-sentinel");
    let (master_port, replica_port, sentinel_port) = (free_port(), free_port(), free_port());
    let mut master = Some(start(&plain_args(master_port), master_port, &dir.0));
    let mut replica_args = plain_args(replica_port);
    replica_args.extend(["--replicaof", "127.0.0.1", &master_port.to_string()].map(String::from));
    let _replica = start(&replica_args, replica_port, &dir.0);
    let conf = dir.write(
        "sentinel.conf",
        &format!(
            "port {sentinel_port}\nbind 127.0.0.1\ndaemonize no\n\
             sentinel monitor authtime 127.0.0.1 {master_port} 1\n\
             sentinel down-after-milliseconds authtime 500\n\
             sentinel failover-timeout authtime 5000\n"
        ),
    );
    let _sentinel = start(&[conf, "--sentinel".into()], sentinel_port, &dir.0);
    // The sentinel learns of the replica from the master's INFO.
    wait_for(
        "sentinel knows the replica",
        Duration::from_secs(30),
        || query_replicas(sentinel_port) == 1,
    );

    let store = open_store(&format!(
        "redis+sentinel://127.0.0.1:{},127.0.0.1:{sentinel_port}/authtime?key=authtime:nts:ring",
        free_port()
    ))
    .expect("url");
    check_compare_and_swap(store.as_ref());
    let held = store.load().expect("load").expect("a blob");
    // Replication is asynchronous: wait until the replica has the blob.
    let replica = open_store(&format!(
        "redis://127.0.0.1:{replica_port}?key=authtime:nts:ring"
    ))
    .expect("url");
    wait_for("the replica has the blob", Duration::from_secs(10), || {
        replica.load().ok().flatten().as_deref() == Some(held.as_slice())
    });

    // SIGKILL the master; the same store object reaches the promoted replica.
    drop(master.take());
    let took = wait_for(
        "the store reaches the new master",
        Duration::from_secs(30),
        || store.load().is_ok(),
    );
    eprintln!("failover followed after {took:?}");
    assert_eq!(role(replica_port).as_deref(), Some("master"));
    assert_eq!(store.load().expect("load"), Some(held.clone()));
    assert!(
        store
            .compare_and_swap(Some(&held), b"rotated")
            .expect("cas")
    );
    assert_eq!(replica.load().expect("load"), Some(b"rotated".to_vec()));
}
