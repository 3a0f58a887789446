//! The Redis store's URLs:
//!
//! - `redis://[[USER]:PASSWORD@]HOST[:PORT][/DB][?key=NAME]`
//! - `rediss://…` the same over TLS, with `&ca=/ABSOLUTE/ca.pem` to trust
//!   that CA instead of the system's trust store;
//! - `redis+sentinel://[[USER]:PASSWORD@]HOST[:PORT][,HOST[:PORT]…]/MASTER[/DB][?key=NAME]`
//!   (sentinel port 26379 by default), and `rediss+sentinel://…` with TLS
//!   to the sentinels and the master (and `ca=`).
//!
//! USER and PASSWORD are percent-decoded, as in other Redis clients' URLs,
//! so that `@`, `:`, `/` or `?` in a password can be written `%40`, `%3A`,
//! `%2F`, `%3F`. They are the data node's credentials; the sentinels are
//! asked without any. Parsing reads no file: [`RedisUrl::into_store`] reads
//! the CA file.

use percent_encoding::percent_decode_str;

use super::url::host_port;
use super::{RedisStore, StoreError};

/// A parsed Redis store URL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct RedisUrl {
    pub(crate) tls: bool,
    /// One node for a direct URL; the sentinels for a Sentinel URL.
    pub(crate) nodes: Vec<(String, u16)>,
    /// The master's name in Sentinel, `None` for a direct URL.
    pub(crate) master: Option<String>,
    pub(crate) username: Option<String>,
    pub(crate) password: Option<String>,
    pub(crate) db: u32,
    pub(crate) key: String,
    pub(crate) ca: Option<String>,
}

/// Whether `location` is one of the Redis store's URLs.
pub(crate) fn is_redis_url(location: &str) -> bool {
    [
        "redis://",
        "rediss://",
        "redis+sentinel://",
        "rediss+sentinel://",
    ]
    .iter()
    .any(|scheme| location.starts_with(scheme))
}

/// Parses a Redis store URL; `bad` turns a reason into the error (it names
/// the URL without its password).
pub(crate) fn parse_redis_url(
    location: &str,
    default_key: &str,
    bad: impl Fn(&str) -> StoreError,
) -> Result<RedisUrl, StoreError> {
    let (scheme, rest) = location.split_once("://").ok_or_else(|| bad("no scheme"))?;
    let (tls, sentinel) = match scheme {
        "redis" => (false, false),
        "rediss" => (true, false),
        "redis+sentinel" => (false, true),
        "rediss+sentinel" => (true, true),
        _ => return Err(bad("unknown scheme")),
    };
    let (main, query) = rest.split_once('?').unwrap_or((rest, ""));
    let (auth, hostpath) = match main.rsplit_once('@') {
        Some((a, r)) => (Some(a), r),
        None => (None, main),
    };
    let (username, password) = match auth {
        None => (None, None),
        Some(auth) => {
            let (user, password) = auth
                .split_once(':')
                .ok_or_else(|| bad("a user name needs a password (USER:PASSWORD@)"))?;
            let decode = |s: &str| {
                percent_decode_str(s)
                    .decode_utf8()
                    .map(|s| s.into_owned())
                    .map_err(|_| bad("credentials are not UTF-8"))
            };
            let user = (!user.is_empty()).then(|| decode(user)).transpose()?;
            (user, Some(decode(password)?))
        }
    };
    let (hosts, path) = hostpath.split_once('/').unwrap_or((hostpath, ""));
    let (master, db) = if sentinel {
        let (master, db) = path.split_once('/').unwrap_or((path, ""));
        if master.is_empty() {
            return Err(bad(
                "no master name (redis+sentinel://HOST[:PORT],…/MASTER)",
            ));
        }
        (Some(master.to_owned()), db)
    } else {
        (None, path)
    };
    let db = match db {
        "" => 0,
        d => d.parse().map_err(|_| bad("bad database number"))?,
    };
    let nodes = if sentinel {
        hosts
            .split(',')
            .map(|h| host_port(h, 26379))
            .collect::<Option<Vec<_>>>()
            .ok_or_else(|| bad("bad sentinel host or port"))?
    } else {
        vec![host_port(hosts, 6379).ok_or_else(|| bad("bad host or port"))?]
    };
    let (mut key, mut ca) = (None, None);
    for pair in query.split('&').filter(|p| !p.is_empty()) {
        match pair.split_once('=') {
            Some(("key", "")) => return Err(bad("empty key name")),
            Some(("key", k)) if key.is_none() => key = Some(k.to_owned()),
            Some(("ca", path)) if ca.is_none() => {
                if !tls {
                    return Err(bad("ca= needs rediss:// or rediss+sentinel://"));
                }
                if !path.starts_with('/') {
                    return Err(bad("ca= needs an absolute path"));
                }
                ca = Some(path.to_owned());
            }
            _ => return Err(bad("unknown or repeated query parameter (key=, ca=)")),
        }
    }
    Ok(RedisUrl {
        tls,
        nodes,
        master,
        username,
        password,
        db,
        key: key.unwrap_or_else(|| default_key.to_owned()),
        ca,
    })
}

/// [`parse_redis_url`] with the errors `open_store` gives (the URL shown
/// without its password), and the default key name; for the fuzz harness.
pub(crate) fn parse_redacted(location: &str) -> Result<RedisUrl, StoreError> {
    parse_redis_url(location, super::DEFAULT_KEY_NAME, |why| {
        StoreError::BadLocation(format!("{why} in {}", super::url::redact(location)))
    })
}

impl RedisUrl {
    /// The store this URL names; reads the CA file, if any.
    pub(crate) fn into_store(self) -> Result<RedisStore, StoreError> {
        let mut store = match self.master {
            Some(master) => RedisStore::sentinel(self.nodes, &master, self.db, &self.key),
            None => {
                let (host, port) = &self.nodes[0];
                RedisStore::new(host, *port, self.db, &self.key)
            }
        }
        .with_username(self.username)
        .with_password(self.password);
        if self.tls {
            let ca = match &self.ca {
                None => None,
                Some(path) => Some(read_ca(path)?),
            };
            store = store.with_tls(ca);
        }
        Ok(store)
    }
}

/// The PEM file at `path`, checked to hold at least one certificate.
fn read_ca(path: &str) -> Result<Vec<u8>, StoreError> {
    use rustls::pki_types::{CertificateDer, pem::PemObject};
    let pem =
        std::fs::read(path).map_err(|e| StoreError::BadLocation(format!("CA file {path}: {e}")))?;
    let certs = CertificateDer::pem_slice_iter(&pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| StoreError::BadLocation(format!("CA file {path}: {e}")))?;
    if certs.is_empty() {
        return Err(StoreError::BadLocation(format!(
            "CA file {path}: no PEM certificate"
        )));
    }
    Ok(pem)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(url: &str) -> Result<RedisUrl, StoreError> {
        parse_redis_url(url, "dflt", |why| StoreError::BadLocation(why.into()))
    }

    #[test]
    fn parses_direct_tls_and_sentinel_forms() {
        let u = parse("redis://h").expect("plain");
        assert_eq!(
            (u.tls, u.nodes, u.master, u.db, u.key.as_str()),
            (false, vec![("h".into(), 6379)], None, 0, "dflt")
        );
        let u =
            parse("rediss://authtime:p%40ss%3Aw%2Fd@h:6380/3?key=k&ca=/etc/ca.pem").expect("tls");
        assert!(u.tls);
        assert_eq!(u.username.as_deref(), Some("authtime"));
        assert_eq!(u.password.as_deref(), Some("p@ss:w/d"));
        assert_eq!(
            (u.db, u.key.as_str(), u.ca.as_deref()),
            (3, "k", Some("/etc/ca.pem"))
        );
        let u = parse("redis://:pw@h").expect("password only");
        assert_eq!((u.username, u.password.as_deref()), (None, Some("pw")));
        let u = parse("redis+sentinel://a,b:26380,[::1]/mymaster/2?key=k").expect("sentinel");
        assert_eq!(
            u.nodes,
            vec![
                ("a".into(), 26379),
                ("b".into(), 26380),
                ("::1".into(), 26379)
            ]
        );
        assert_eq!((u.master.as_deref(), u.db), (Some("mymaster"), 2));
        let u = parse("rediss+sentinel://u:p@a/m?ca=/ca.pem").expect("tls sentinel");
        assert!(u.tls && u.master.is_some() && u.ca.is_some());
    }

    #[test]
    fn rejects_malformed_forms() {
        for bad in [
            "redis://h?ca=/ca.pem",
            "rediss://h?ca=relative.pem",
            "rediss://h?key=a&key=b",
            "rediss://h?kee=a",
            "redis://user@h",
            "redis+sentinel://h",
            "redis+sentinel://h/",
            "redis+sentinel://h,/m",
            "redis+sentinel://h/m/x",
            "redis://h/1/2",
            "redis://:%ff@h",
        ] {
            assert!(parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn errors_never_show_the_password() {
        for bad in [
            "rediss://u:secret@h?ca=rel.pem",
            "redis+sentinel://u:secret@h",
            "rediss+sentinel://u:secret@h/m?ca=/nonexistent.pem",
            "redis://u:secret@h/x",
        ] {
            let e = crate::store::open_store(bad).expect_err(bad);
            assert!(!e.to_string().contains("secret"), "{e}");
        }
    }

    #[test]
    fn a_missing_or_empty_ca_file_is_a_clear_error() {
        let e = parse("rediss://h?ca=/nonexistent/ca.pem")
            .expect("parses")
            .into_store()
            .expect_err("no file");
        assert!(e.to_string().contains("/nonexistent/ca.pem"), "{e}");
    }
}
