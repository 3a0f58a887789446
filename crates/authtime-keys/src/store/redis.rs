//! Master keys in Redis: one string key holds the blob; compare-and-swap
//! runs as a Lua script, which Redis executes atomically.
//!
//! Every operation opens a fresh TCP connection with short timeouts: the
//! daemon touches the store every few seconds at most, and a fresh
//! connection means a restarted Redis needs no reconnect logic.

use std::io::BufReader;
use std::net::TcpStream;
use std::time::Duration;

use super::resp::{self, Reply};
use super::{MasterKeyStore, StoreError};

/// Replaces KEYS[1] by ARGV[3] if it is absent (ARGV[1] = "0") or equal to
/// ARGV[2] (ARGV[1] = "1"); returns 1 when it did.
const CAS_SCRIPT: &str = "local cur = redis.call('GET', KEYS[1]) \
if ARGV[1] == '0' then if cur then return 0 end \
elseif cur ~= ARGV[2] then return 0 end \
redis.call('SET', KEYS[1], ARGV[3]) return 1";

/// A blob kept under one key of a Redis server.
#[derive(Clone)]
pub struct RedisStore {
    host: String,
    port: u16,
    password: Option<String>,
    db: u32,
    key: String,
    timeout: Duration,
}

impl std::fmt::Debug for RedisStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.describe())
    }
}

impl RedisStore {
    /// A store on `host:port`, database `db`, under `key`.
    #[must_use]
    pub fn new(host: &str, port: u16, db: u32, key: &str) -> Self {
        Self {
            host: host.to_owned(),
            port,
            password: None,
            db,
            key: key.to_owned(),
            timeout: Duration::from_secs(1),
        }
    }

    /// Authenticates with `AUTH password` on every connection.
    #[must_use]
    pub fn with_password(mut self, password: Option<String>) -> Self {
        self.password = password;
        self
    }

    /// Connect and I/O timeout (default 1 s).
    #[must_use]
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    fn connect(&self) -> Result<BufReader<TcpStream>, StoreError> {
        let mut conn = super::tcp::connect(&self.host, self.port, self.timeout, &self.describe())?;
        if let Some(password) = &self.password {
            expect_ok(resp::call(&mut conn, &[b"AUTH", password.as_bytes()])?)?;
        }
        if self.db != 0 {
            let db = self.db.to_string();
            expect_ok(resp::call(&mut conn, &[b"SELECT", db.as_bytes()])?)?;
        }
        Ok(conn)
    }
}

fn expect_ok(reply: Reply) -> Result<(), StoreError> {
    match reply {
        Reply::Simple(s) if s == "OK" => Ok(()),
        Reply::Error(e) => Err(StoreError::Protocol(e)),
        other => Err(StoreError::Protocol(format!("unexpected reply {other:?}"))),
    }
}

impl MasterKeyStore for RedisStore {
    fn load(&self) -> Result<Option<Vec<u8>>, StoreError> {
        let mut conn = self.connect()?;
        match resp::call(&mut conn, &[b"GET", self.key.as_bytes()])? {
            Reply::Bulk(value) => Ok(value),
            Reply::Error(e) => Err(StoreError::Protocol(e)),
            other => Err(StoreError::Protocol(format!("unexpected reply {other:?}"))),
        }
    }

    fn compare_and_swap(&self, expected: Option<&[u8]>, new: &[u8]) -> Result<bool, StoreError> {
        if new.len() > resp::MAX_BULK {
            return Err(StoreError::Protocol("blob too large".into()));
        }
        let mut conn = self.connect()?;
        let (flag, old): (&[u8], &[u8]) = match expected {
            None => (b"0", b""),
            Some(old) => (b"1", old),
        };
        let reply = resp::call(
            &mut conn,
            &[
                b"EVAL",
                CAS_SCRIPT.as_bytes(),
                b"1",
                self.key.as_bytes(),
                flag,
                old,
                new,
            ],
        )?;
        match reply {
            Reply::Integer(1) => Ok(true),
            Reply::Integer(0) => Ok(false),
            Reply::Error(e) => Err(StoreError::Protocol(e)),
            other => Err(StoreError::Protocol(format!("unexpected reply {other:?}"))),
        }
    }

    fn describe(&self) -> String {
        format!(
            "redis://{}:{}/{}/{}",
            self.host, self.port, self.db, self.key
        )
    }
}
