//! Opening a store from a URL: `redis://[[user]:password@]host[:port][/db][?key=NAME]`
//! and the TLS and Sentinel forms `rediss://`, `redis+sentinel://`,
//! `rediss+sentinel://` (see `redis_url`), `memcached://host[:port][/NAME]`,
//! or `file:PATH` / a plain path for the embedded store.

use std::sync::Arc;

use super::{EmbeddedStore, MasterKeyStore, MemcachedStore, StoreError};

/// The key (Redis) or item (memcached) name used when the URL gives none.
pub const DEFAULT_KEY_NAME: &str = "authtime:nts:master-keys";

/// Opens the store `location` names. Nothing is contacted yet.
///
/// # Errors
/// [`StoreError::BadLocation`] when the URL is malformed.
pub fn open_store(location: &str) -> Result<Arc<dyn MasterKeyStore>, StoreError> {
    let bad = |why: &str| StoreError::BadLocation(format!("{why} in {}", redact(location)));
    if super::redis_url::is_redis_url(location) {
        let url = super::redis_url::parse_redis_url(location, DEFAULT_KEY_NAME, bad)?;
        return Ok(Arc::new(url.into_store()?));
    }
    if let Some(rest) = location.strip_prefix("memcached://") {
        let (hostport, key) = match rest.split_once('/') {
            Some((h, "")) => (h, DEFAULT_KEY_NAME),
            Some((h, k)) => (h, k),
            None => (rest, DEFAULT_KEY_NAME),
        };
        let (host, port) = host_port(hostport, 11211).ok_or_else(|| bad("bad host or port"))?;
        return Ok(Arc::new(MemcachedStore::new(&host, port, key)?));
    }
    let path = location.strip_prefix("file:").unwrap_or(location);
    if path.is_empty() || path.contains("://") {
        return Err(bad("unknown store kind"));
    }
    Ok(Arc::new(EmbeddedStore::new(path)))
}

/// Splits `host[:port]` or `[v6]:port`.
pub(super) fn host_port(s: &str, default_port: u16) -> Option<(String, u16)> {
    if let Some(rest) = s.strip_prefix('[') {
        let (host, after) = rest.split_once(']')?;
        let port = match after.strip_prefix(':') {
            Some(p) => p.parse().ok()?,
            None if after.is_empty() => default_port,
            None => return None,
        };
        return (!host.is_empty()).then(|| (host.to_owned(), port));
    }
    let (host, port) = match s.rsplit_once(':') {
        Some((h, p)) => (h, p.parse().ok()?),
        None => (s, default_port),
    };
    (!host.is_empty() && !host.contains(':')).then(|| (host.to_owned(), port))
}

/// The URL without its password, for error messages.
pub(super) fn redact(location: &str) -> String {
    match (location.find("://"), location.rfind('@')) {
        (Some(scheme), Some(at)) if at > scheme => {
            format!("{}***{}", &location[..scheme + 3], &location[at..])
        }
        _ => location.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_every_kind() {
        let r = open_store("redis://127.0.0.1:7000/2?key=ring").expect("redis");
        assert_eq!(r.describe(), "redis://127.0.0.1:7000/2/ring");
        let r = open_store("redis://:pw@localhost").expect("redis");
        assert_eq!(
            r.describe(),
            format!("redis://localhost:6379/0/{DEFAULT_KEY_NAME}")
        );
        assert!(!r.describe().contains("pw"));
        let m = open_store("memcached://[::1]:11300/k").expect("memcached");
        assert_eq!(m.describe(), "memcached://::1:11300/k");
        let f = open_store("/var/lib/authtime/nts-keys").expect("file");
        assert_eq!(f.describe(), "embedded:/var/lib/authtime/nts-keys");
        let f = open_store("file:keys").expect("file");
        assert_eq!(f.describe(), "embedded:keys");
    }

    #[test]
    fn rejects_malformed_urls_without_echoing_passwords() {
        for bad in [
            "redis://host:notaport",
            "redis://host/x",
            "redis://host?key=",
            "redis://:secret@:1",
            "memcached://host:99999",
            "memcached://host/a b",
            "ftp://x",
            "",
        ] {
            let e = open_store(bad).expect_err(bad);
            assert!(!e.to_string().contains("secret"), "{e}");
        }
    }
}
