//! Shared helpers of the integration tests.

#![allow(dead_code, unreachable_pub)]

pub mod certs;

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use authtime_ntske::{CookieIssueError, CookieIssuer, KeServer, KeServerConfig, KeServerHandle};

/// A fresh directory under the system temp dir, removed on drop.
pub struct TempDir(pub PathBuf);

impl TempDir {
    pub fn new(tag: &str) -> Self {
        static N: AtomicUsize = AtomicUsize::new(0);
        let dir = std::env::temp_dir().join(format!(
            "authtime-ntske-{tag}-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("temp dir");
        Self(dir)
    }

    pub fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// AEAD id, C2S and S2C as the issuer saw them.
pub type SeenKeys = (u16, Vec<u8>, Vec<u8>);

/// Issues cookies `aead | index | c2s | s2c` and remembers the keys it saw.
#[derive(Default)]
pub struct RecordingIssuer {
    pub seen: Mutex<Vec<SeenKeys>>,
}

impl CookieIssuer for RecordingIssuer {
    fn issue(
        &self,
        aead_id: u16,
        c2s: &[u8],
        s2c: &[u8],
        count: usize,
    ) -> Result<Vec<Vec<u8>>, CookieIssueError> {
        if let Ok(mut seen) = self.seen.lock() {
            seen.push((aead_id, c2s.to_vec(), s2c.to_vec()));
        }
        Ok((0..count)
            .map(|i| {
                let mut c = aead_id.to_be_bytes().to_vec();
                c.push(i as u8);
                c.extend_from_slice(c2s);
                c.extend_from_slice(s2c);
                c
            })
            .collect())
    }
}

/// A running server and what the tests need of it.
pub struct Running {
    pub addr: SocketAddr,
    pub handle: KeServerHandle,
    pub issuer: Arc<RecordingIssuer>,
    pub task: tokio::task::JoinHandle<()>,
}

impl Running {
    pub async fn stop(self) {
        self.handle.shutdown();
        tokio::time::timeout(Duration::from_secs(5), self.task)
            .await
            .expect("server stops")
            .expect("server task");
    }
}

/// Server config on 127.0.0.1:0 with the certificate files in `dir`.
pub fn config(dir: &Path) -> KeServerConfig {
    let mut c = KeServerConfig::new(
        vec!["127.0.0.1:0".parse().expect("addr")],
        dir.join("chain.pem"),
        dir.join("key.pem"),
    );
    c.reload_poll_interval = None;
    c
}

pub async fn start(config: KeServerConfig) -> Running {
    let issuer = Arc::new(RecordingIssuer::default());
    let server = KeServer::bind(config, issuer.clone()).await.expect("bind");
    let addr = server.local_addrs()[0];
    let handle = server.handle();
    let task = tokio::spawn(server.run());
    Running {
        addr,
        handle,
        issuer,
        task,
    }
}

/// Polls `f` every 20 ms for up to `limit`.
pub async fn eventually(limit: Duration, mut f: impl FnMut() -> bool) -> bool {
    let end = tokio::time::Instant::now() + limit;
    while tokio::time::Instant::now() < end {
        if f() {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    f()
}
