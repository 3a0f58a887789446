//! Master keys in memcached (as Cloudflare's cfnts kept its keys): one item
//! holds the blob; compare-and-swap uses `add` (nothing stored yet) or
//! `gets` then `cas` (the text protocol's optimistic concurrency).
//!
//! memcached may evict items under memory pressure; a server that finds the
//! item gone keeps its keys and stores its ring again, so an eviction costs
//! nothing but a log line. Give memcached enough memory anyway.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use super::tcp::MAX_BULK;
use super::{MasterKeyStore, StoreError};

/// A blob kept as one memcached item.
#[derive(Debug, Clone)]
pub struct MemcachedStore {
    host: String,
    port: u16,
    key: String,
    timeout: Duration,
}

impl MemcachedStore {
    /// A store on `host:port` under `key` (at most 250 printable bytes, no
    /// spaces: the protocol's rule).
    ///
    /// # Errors
    /// [`StoreError::BadLocation`] for a key memcached would refuse.
    pub fn new(host: &str, port: u16, key: &str) -> Result<Self, StoreError> {
        if key.is_empty() || key.len() > 250 || !key.bytes().all(|b| b.is_ascii_graphic()) {
            return Err(StoreError::BadLocation(format!("memcached key {key:?}")));
        }
        Ok(Self {
            host: host.to_owned(),
            port,
            key: key.to_owned(),
            timeout: Duration::from_secs(1),
        })
    }

    /// Connect and I/O timeout (default 1 s).
    #[must_use]
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    fn connect(&self) -> Result<BufReader<TcpStream>, StoreError> {
        super::tcp::connect(&self.host, self.port, self.timeout, &self.describe())
    }

    /// `gets`: the value and its cas unique, or `None`.
    fn gets(&self, conn: &mut BufReader<TcpStream>) -> Result<Option<(Vec<u8>, u64)>, StoreError> {
        send(conn, format!("gets {}\r\n", self.key).as_bytes())?;
        parse_gets(conn, &self.key)
    }

    /// `add`: stores `new` only if no item exists.
    fn add(&self, conn: &mut BufReader<TcpStream>, new: &[u8]) -> Result<bool, StoreError> {
        let mut request = format!("add {} 0 0 {}\r\n", self.key, new.len()).into_bytes();
        request.extend_from_slice(new);
        request.extend_from_slice(b"\r\n");
        send(conn, &request)?;
        match read_line(conn)?.as_str() {
            "STORED" => Ok(true),
            "NOT_STORED" => Ok(false),
            other => Err(StoreError::Protocol(format!(
                "memcached answered {other:?}"
            ))),
        }
    }
}

fn send(conn: &mut BufReader<TcpStream>, bytes: &[u8]) -> Result<(), StoreError> {
    conn.get_mut()
        .write_all(bytes)
        .map_err(|e| StoreError::Unreachable(e.to_string()))
}

fn read_line<R: BufRead>(r: &mut R) -> Result<String, StoreError> {
    let mut line = Vec::new();
    let n = r
        .take(1024)
        .read_until(b'\n', &mut line)
        .map_err(|e| StoreError::Unreachable(e.to_string()))?;
    if n == 0 {
        return Err(StoreError::Unreachable("connection closed".into()));
    }
    if !line.ends_with(b"\r\n") {
        return Err(StoreError::Protocol(
            "reply line too long or unterminated".into(),
        ));
    }
    line.truncate(line.len() - 2);
    String::from_utf8(line).map_err(|_| StoreError::Protocol("reply is not UTF-8".into()))
}

/// Parses the answer to `gets key`.
fn parse_gets<R: BufRead>(r: &mut R, key: &str) -> Result<Option<(Vec<u8>, u64)>, StoreError> {
    let line = read_line(r)?;
    if line == "END" {
        return Ok(None);
    }
    let fields: Vec<&str> = line.split(' ').collect();
    let bad = || StoreError::Protocol(format!("unexpected gets reply {line:?}"));
    let [tag, name, _flags, len, unique] = fields.as_slice() else {
        return Err(bad());
    };
    if *tag != "VALUE" || *name != key {
        return Err(bad());
    }
    let len: usize = len.parse().map_err(|_| bad())?;
    let unique: u64 = unique.parse().map_err(|_| bad())?;
    if len > MAX_BULK {
        return Err(StoreError::Protocol("item too large".into()));
    }
    let mut body = vec![0; len + 2];
    r.read_exact(&mut body)
        .map_err(|e| StoreError::Unreachable(e.to_string()))?;
    if !body.ends_with(b"\r\n") {
        return Err(bad());
    }
    body.truncate(len);
    if read_line(r)? != "END" {
        return Err(bad());
    }
    Ok(Some((body, unique)))
}

impl MasterKeyStore for MemcachedStore {
    fn load(&self) -> Result<Option<Vec<u8>>, StoreError> {
        let mut conn = self.connect()?;
        Ok(self.gets(&mut conn)?.map(|(value, _)| value))
    }

    fn compare_and_swap(&self, expected: Option<&[u8]>, new: &[u8]) -> Result<bool, StoreError> {
        if new.len() > MAX_BULK {
            return Err(StoreError::Protocol("blob too large".into()));
        }
        let mut conn = self.connect()?;
        let Some(expected) = expected else {
            return self.add(&mut conn, new);
        };
        match self.gets(&mut conn)? {
            Some((current, unique)) if current == expected => {
                let mut request =
                    format!("cas {} 0 0 {} {unique}\r\n", self.key, new.len()).into_bytes();
                request.extend_from_slice(new);
                request.extend_from_slice(b"\r\n");
                send(&mut conn, &request)?;
                match read_line(&mut conn)?.as_str() {
                    "STORED" => Ok(true),
                    "EXISTS" | "NOT_FOUND" => Ok(false),
                    other => Err(StoreError::Protocol(format!(
                        "memcached answered {other:?}"
                    ))),
                }
            }
            _ => Ok(false),
        }
    }

    fn describe(&self) -> String {
        format!("memcached://{}:{}/{}", self.host, self.port, self.key)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_gets_replies() {
        let mut r = BufReader::new(&b"VALUE k 0 3 42\r\nabc\r\nEND\r\n"[..]);
        assert_eq!(parse_gets(&mut r, "k"), Ok(Some((b"abc".to_vec(), 42))));
        let mut r = BufReader::new(&b"END\r\n"[..]);
        assert_eq!(parse_gets(&mut r, "k"), Ok(None));
    }

    #[test]
    fn malformed_gets_replies_are_errors() {
        for bad in [
            &b""[..],
            b"VALUE other 0 3 1\r\nabc\r\nEND\r\n",
            b"VALUE k 0 x 1\r\nabc\r\nEND\r\n",
            b"VALUE k 0 5 1\r\nabc\r\nEND\r\n",
            b"VALUE k 0 3 1\r\nabc\r\nMORE\r\n",
            b"VALUE k 0 99999999 1\r\n",
            b"SERVER_ERROR out of memory\r\n",
        ] {
            assert!(
                parse_gets(&mut BufReader::new(bad), "k").is_err(),
                "{bad:?}"
            );
        }
    }

    #[test]
    fn refuses_keys_memcached_would_refuse() {
        assert!(MemcachedStore::new("127.0.0.1", 1, "a b").is_err());
        assert!(MemcachedStore::new("127.0.0.1", 1, "").is_err());
        assert!(MemcachedStore::new("127.0.0.1", 1, &"k".repeat(251)).is_err());
    }
}
