//! The master-key stores against the real servers: a Redis and a memcached
//! started by the test on loopback, on ports the kernel picked.

use std::net::{TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use authtime_keys::store::{MasterKeyStore, StoreError, open_store};

/// A server process killed when dropped.
struct Server {
    child: Child,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A scratch directory removed when dropped: when the test ends, and when
/// it fails (the panic unwinds through it).
struct ScratchDir(std::path::PathBuf);

impl Drop for ScratchDir {
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

fn wait_until_listening(port: u16) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(
            Instant::now() < deadline,
            "server on port {port} did not start"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn start(program: &str, args: &[String], port: u16) -> Server {
    let child = Command::new(program)
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap_or_else(|e| {
            panic!("cannot start {program} ({e}); ./test.sh installs it with apt-get")
        });
    let server = Server { child };
    wait_until_listening(port);
    server
}

fn redis_on(port: u16) -> Server {
    let args = [
        "--port",
        &port.to_string(),
        "--bind",
        "127.0.0.1",
        "--save",
        "",
        "--appendonly",
        "no",
    ]
    .map(String::from);
    start("redis-server", &args, port)
}

fn memcached_on(port: u16) -> Server {
    let mut args: Vec<String> = [
        "-l",
        "127.0.0.1",
        "-p",
        &port.to_string(),
        "-U",
        "0",
        "-m",
        "16",
    ]
    .map(String::from)
    .to_vec();
    // memcached refuses to run as root unless told which user to be.
    if is_root() {
        args.extend(["-u".to_owned(), "root".to_owned()]);
    }
    start("memcached", &args, port)
}

fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .map(|o| o.stdout.starts_with(b"0\n"))
        .unwrap_or(false)
}

fn check_compare_and_swap(store: &dyn MasterKeyStore) {
    assert_eq!(store.load().expect("load"), None);
    assert!(!store.compare_and_swap(Some(b"x"), b"a").expect("cas"));
    assert!(store.compare_and_swap(None, b"a").expect("cas"));
    assert!(!store.compare_and_swap(None, b"b").expect("cas"));
    assert!(!store.compare_and_swap(Some(b"b"), b"c").expect("cas"));
    // Binary content with protocol delimiters inside survives.
    let blob: Vec<u8> = (0..5000u32)
        .map(|i| (i * 7 + 13) as u8)
        .chain(*b"\r\nEND\r\n")
        .collect();
    assert!(store.compare_and_swap(Some(b"a"), &blob).expect("cas"));
    assert_eq!(store.load().expect("load"), Some(blob));
}

/// Eight writers race to replace the same value: exactly one wins.
fn check_one_winner(store: &Arc<dyn MasterKeyStore>) {
    let before = store.load().expect("load");
    let barrier = Arc::new(Barrier::new(8));
    let handles: Vec<_> = (0..8u8)
        .map(|i| {
            let (store, barrier, before) =
                (Arc::clone(store), Arc::clone(&barrier), before.clone());
            std::thread::spawn(move || {
                barrier.wait();
                store
                    .compare_and_swap(before.as_deref(), &[i; 40])
                    .expect("cas")
            })
        })
        .collect();
    let wins: Vec<bool> = handles
        .into_iter()
        .map(|h| h.join().expect("thread"))
        .collect();
    assert_eq!(wins.iter().filter(|w| **w).count(), 1, "{wins:?}");
    let winner = wins.iter().position(|w| *w).expect("a winner") as u8;
    assert_eq!(store.load().expect("load"), Some(vec![winner; 40]));
}

#[test]
fn redis_store_swaps_atomically_and_survives_a_restart() {
    let port = free_port();
    let redis = redis_on(port);
    let store = open_store(&format!("redis://127.0.0.1:{port}?key=test-ring")).expect("url");
    check_compare_and_swap(store.as_ref());
    check_one_winner(&store);
    let kept = store.load().expect("load");

    drop(redis);
    assert!(matches!(store.load(), Err(StoreError::Unreachable(_))));
    assert!(matches!(
        store.compare_and_swap(None, b"z"),
        Err(StoreError::Unreachable(_))
    ));

    // A fresh Redis (no persistence): empty again, and usable at once.
    let _redis = redis_on(port);
    assert_eq!(store.load().expect("load after restart"), None);
    assert!(
        store
            .compare_and_swap(None, kept.as_deref().expect("kept"))
            .expect("cas")
    );
}

#[test]
fn redis_store_uses_the_database_and_password_it_is_given() {
    let port = free_port();
    let args = [
        "--port",
        &port.to_string(),
        "--bind",
        "127.0.0.1",
        "--save",
        "",
        "--requirepass",
        "s3cret",
    ]
    .map(String::from);
    let _redis = start("redis-server", &args, port);
    let wrong = open_store(&format!("redis://:nope@127.0.0.1:{port}")).expect("url");
    let e = wrong.load().expect_err("wrong password");
    assert!(matches!(e, StoreError::Protocol(_)), "{e}");
    assert!(!e.to_string().contains("nope"));
    let db1 = open_store(&format!("redis://:s3cret@127.0.0.1:{port}/1")).expect("url");
    let db0 = open_store(&format!("redis://:s3cret@127.0.0.1:{port}/0")).expect("url");
    assert!(db1.compare_and_swap(None, b"one").expect("cas"));
    assert_eq!(db0.load().expect("load"), None);
    assert_eq!(db1.load().expect("load"), Some(b"one".to_vec()));
}

#[test]
fn memcached_store_swaps_atomically() {
    let port = free_port();
    let memcached = memcached_on(port);
    let store = open_store(&format!("memcached://127.0.0.1:{port}/test-ring")).expect("url");
    check_compare_and_swap(store.as_ref());
    check_one_winner(&store);
    drop(memcached);
    assert!(matches!(store.load(), Err(StoreError::Unreachable(_))));
}

#[test]
fn embedded_store_has_one_winner_too() {
    let dir = ScratchDir(
        std::env::temp_dir().join(format!("authtime-store-race-{}", std::process::id())),
    );
    let _ = std::fs::remove_dir_all(&dir.0);
    std::fs::create_dir_all(&dir.0).expect("dir");
    let store = open_store(dir.0.join("ring").to_str().expect("utf-8")).expect("path");
    check_compare_and_swap(store.as_ref());
    check_one_winner(&store);
}

#[test]
fn an_unreachable_server_is_an_error_within_the_timeout() {
    let port = free_port();
    let start = Instant::now();
    let store = open_store(&format!("redis://127.0.0.1:{port}")).expect("url");
    assert!(matches!(store.load(), Err(StoreError::Unreachable(_))));
    assert!(start.elapsed() < Duration::from_secs(3));
}
