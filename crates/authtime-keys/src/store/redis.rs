//! Master keys in Redis, through the `redis` crate's synchronous client: one
//! string key holds the blob; compare-and-swap runs as a Lua script, which
//! Redis executes atomically.
//!
//! Every operation opens a fresh connection (TCP or TLS, then `AUTH` and
//! `SELECT`) bounded by the timeout: the daemon touches the store every few
//! seconds at most, and a fresh connection means a restarted Redis or a new
//! master needs no reconnect logic.
//!
//! With Sentinel, each operation first asks the sentinels, in turn, for the
//! master's address (`SENTINEL get-master-addr-by-name`), then checks with
//! `ROLE` that the node it reached is a master, as the Sentinel client
//! guidelines ask. A failover is therefore followed by the next operation
//! after the sentinels have switched. The lookup is written here rather than
//! taken from `redis::sentinel` because that module connects without a
//! timeout, and every step of this store must be bounded in time.

use std::sync::Once;
use std::time::Duration;

use redis::{Client, ConnectionAddr, IntoConnectionInfo, RedisConnectionInfo, RedisError, Value};

use super::tcp::MAX_BULK;
use super::{MasterKeyStore, StoreError};

/// Replaces KEYS[1] by ARGV[3] if it is absent (ARGV[1] = "0") or equal to
/// ARGV[2] (ARGV[1] = "1"); returns 1 when it did.
const CAS_SCRIPT: &str = "local cur = redis.call('GET', KEYS[1]) \
if ARGV[1] == '0' then if cur then return 0 end \
elseif cur ~= ARGV[2] then return 0 end \
redis.call('SET', KEYS[1], ARGV[3]) return 1";

/// Where the data node is: named directly, or found through sentinels.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Target {
    Direct {
        host: String,
        port: u16,
    },
    Sentinel {
        sentinels: Vec<(String, u16)>,
        master: String,
    },
}

/// A blob kept under one key of a Redis server.
#[derive(Clone)]
pub struct RedisStore {
    target: Target,
    /// `Some` for TLS; the inner value is the PEM of the CA certificates to
    /// trust instead of the system's.
    tls: Option<Option<Vec<u8>>>,
    username: Option<String>,
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
        Self::with_target(
            Target::Direct {
                host: host.to_owned(),
                port,
            },
            db,
            key,
        )
    }

    /// A store on the master that the sentinels at `sentinels` know as
    /// `master`, database `db`, under `key`.
    #[must_use]
    pub fn sentinel(sentinels: Vec<(String, u16)>, master: &str, db: u32, key: &str) -> Self {
        Self::with_target(
            Target::Sentinel {
                sentinels,
                master: master.to_owned(),
            },
            db,
            key,
        )
    }

    fn with_target(target: Target, db: u32, key: &str) -> Self {
        Self {
            target,
            tls: None,
            username: None,
            password: None,
            db,
            key: key.to_owned(),
            timeout: Duration::from_secs(1),
        }
    }

    /// Authenticates with `AUTH password` on every connection to the data
    /// node (the `default` user unless [`Self::with_username`] names one).
    #[must_use]
    pub fn with_password(mut self, password: Option<String>) -> Self {
        self.password = password;
        self
    }

    /// Authenticates as this ACL user (`AUTH username password`).
    #[must_use]
    pub fn with_username(mut self, username: Option<String>) -> Self {
        self.username = username;
        self
    }

    /// Speaks TLS to every node (sentinels too), trusting the certificates
    /// of `ca_pem` (PEM) or, when `None`, the system's trust store.
    #[must_use]
    pub fn with_tls(mut self, ca_pem: Option<Vec<u8>>) -> Self {
        self.tls = Some(ca_pem);
        self
    }

    /// Connect and I/O timeout of each step (default 1 s).
    #[must_use]
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// A connection to `host:port`; `data` adds the credentials and the
    /// database (sentinels get neither).
    fn open(&self, host: &str, port: u16, data: bool) -> Result<redis::Connection, StoreError> {
        let fail = |e: RedisError| self.error(e);
        let addr = match self.tls {
            None => ConnectionAddr::Tcp(host.to_owned(), port),
            Some(_) => ConnectionAddr::TcpTls {
                host: host.to_owned(),
                port,
                insecure: false,
                tls_params: None,
            },
        };
        // The store needs no CLIENT SETINFO, and a minimal ACL user may not run it.
        let mut settings = RedisConnectionInfo::default().set_skip_set_lib_name();
        if data {
            settings = settings.set_db(i64::from(self.db));
            if let Some(user) = &self.username {
                settings = settings.set_username(user);
            }
            if let Some(password) = &self.password {
                settings = settings.set_password(password);
            }
        }
        let info = addr
            .into_connection_info()
            .map_err(fail)?
            .set_redis_settings(settings);
        let client = match &self.tls {
            Some(Some(ca)) => {
                install_crypto_provider();
                let certs = redis::TlsCertificates {
                    client_tls: None,
                    root_cert: Some(ca.clone()),
                };
                Client::build_with_tls(info, certs)
            }
            Some(None) => {
                install_crypto_provider();
                Client::open(info)
            }
            None => Client::open(info),
        }
        .map_err(fail)?;
        let conn = client
            .get_connection_with_timeout(self.timeout)
            .map_err(fail)?;
        conn.set_read_timeout(Some(self.timeout)).map_err(fail)?;
        conn.set_write_timeout(Some(self.timeout)).map_err(fail)?;
        Ok(conn)
    }

    /// A connection to the master, found through the sentinels if need be.
    fn connect(&self) -> Result<redis::Connection, StoreError> {
        match &self.target {
            Target::Direct { host, port } => self.open(host, *port, true),
            Target::Sentinel { sentinels, master } => {
                let (host, port) = self.ask_sentinels(sentinels, master)?;
                let mut conn = self.open(&host, port, true)?;
                let role: Vec<Value> = redis::cmd("ROLE")
                    .query(&mut conn)
                    .map_err(|e| self.error(e))?;
                match role.first() {
                    Some(Value::BulkString(role)) if role == b"master" => Ok(conn),
                    _ => Err(StoreError::Unreachable(format!(
                        "{}: {host}:{port}, named master by the sentinels, is not a master (yet)",
                        self.describe()
                    ))),
                }
            }
        }
    }

    /// The master's address from the first sentinel that knows it.
    fn ask_sentinels(
        &self,
        sentinels: &[(String, u16)],
        master: &str,
    ) -> Result<(String, u16), StoreError> {
        let mut last = StoreError::Unreachable(format!("{}: no sentinel", self.describe()));
        for (host, port) in sentinels {
            let reply = self.open(host, *port, false).and_then(|mut conn| {
                redis::cmd("SENTINEL")
                    .arg("get-master-addr-by-name")
                    .arg(master)
                    .query::<Option<(String, u16)>>(&mut conn)
                    .map_err(|e| self.error(e))
            });
            match reply {
                Ok(Some(addr)) => return Ok(addr),
                Ok(None) => {
                    last = StoreError::Protocol(format!(
                        "{}: sentinel {host}:{port} knows no master named {master:?}",
                        self.describe()
                    ));
                }
                Err(e) => last = e,
            }
        }
        Err(last)
    }

    /// Sorts a client error into unreachable (try again later) and protocol
    /// (the server refused: wrong password, missing ACL permission, bad
    /// certificate). The messages never hold the password: the `redis`
    /// crate redacts it, and the server does not echo it.
    fn error(&self, e: RedisError) -> StoreError {
        let what = format!("{}: {e}", self.describe());
        let tls = e.to_string().contains("certificate");
        if (e.is_io_error() || e.is_timeout() || e.is_connection_refusal()) && !tls {
            StoreError::Unreachable(what)
        } else {
            StoreError::Protocol(what)
        }
    }
}

/// The `redis` crate builds its rustls configuration with the process-wide
/// default provider: make it aws-lc-rs, as NTS-KE's, unless the program
/// already chose one. (NTS-KE names its provider in every configuration and
/// does not depend on this default.)
fn install_crypto_provider() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let _ = rustls::crypto::aws_lc_rs::default_provider().install_default();
    });
}

impl MasterKeyStore for RedisStore {
    fn load(&self) -> Result<Option<Vec<u8>>, StoreError> {
        let mut conn = self.connect()?;
        let value: Option<Vec<u8>> = redis::cmd("GET")
            .arg(&self.key)
            .query(&mut conn)
            .map_err(|e| self.error(e))?;
        match value {
            Some(v) if v.len() > MAX_BULK => Err(StoreError::Protocol(format!(
                "{}: stored blob of {} bytes is too large",
                self.describe(),
                v.len()
            ))),
            other => Ok(other),
        }
    }

    fn compare_and_swap(&self, expected: Option<&[u8]>, new: &[u8]) -> Result<bool, StoreError> {
        if new.len() > MAX_BULK {
            return Err(StoreError::Protocol("blob too large".into()));
        }
        let mut conn = self.connect()?;
        let (flag, old): (&[u8], &[u8]) = match expected {
            None => (b"0", b""),
            Some(old) => (b"1", old),
        };
        let swapped: i64 = redis::cmd("EVAL")
            .arg(CAS_SCRIPT)
            .arg(1)
            .arg(&self.key)
            .arg(flag)
            .arg(old)
            .arg(new)
            .query(&mut conn)
            .map_err(|e| self.error(e))?;
        match swapped {
            1 => Ok(true),
            0 => Ok(false),
            other => Err(StoreError::Protocol(format!(
                "{}: unexpected script reply {other}",
                self.describe()
            ))),
        }
    }

    fn describe(&self) -> String {
        let scheme = if self.tls.is_some() {
            "rediss"
        } else {
            "redis"
        };
        match &self.target {
            Target::Direct { host, port } => {
                format!("{scheme}://{host}:{port}/{}/{}", self.db, self.key)
            }
            Target::Sentinel { sentinels, master } => {
                let nodes: Vec<String> =
                    sentinels.iter().map(|(h, p)| format!("{h}:{p}")).collect();
                format!(
                    "{scheme}+sentinel://{}/{master}/{}/{}",
                    nodes.join(","),
                    self.db,
                    self.key
                )
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn describes_without_credentials() {
        let s = RedisStore::new("h", 1, 2, "k")
            .with_username(Some("u".into()))
            .with_password(Some("secret".into()))
            .with_tls(None);
        assert_eq!(s.describe(), "rediss://h:1/2/k");
        assert!(!format!("{s:?}").contains("secret"));
        let s = RedisStore::sentinel(vec![("a".into(), 1), ("b".into(), 2)], "m", 0, "k");
        assert_eq!(s.describe(), "redis+sentinel://a:1,b:2/m/0/k");
    }

    #[test]
    fn an_unreachable_sentinel_is_an_error_within_the_timeouts() {
        let s = RedisStore::sentinel(vec![("127.0.0.1".into(), 1)], "m", 0, "k")
            .with_password(Some("secret".into()));
        let e = s.load().expect_err("nothing listens on port 1");
        assert!(matches!(e, StoreError::Unreachable(_)), "{e}");
        assert!(!e.to_string().contains("secret"));
    }
}
