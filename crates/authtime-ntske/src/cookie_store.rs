//! The NTS client's cookie store: the session keys, the AEAD, the NTP server
//! and the unused cookies of one NTS-KE server, kept between runs (RFC 8915
//! section 6: clients SHOULD keep at least one unused cookie with its keys).
//! The file holds secret keys: it is written through a temporary file with
//! mode 0600 and renamed into place.
//!
//! The format is a JSON object (version 1, keys and cookies in hex). This
//! module reads and writes files; it does no key exchange (see
//! [`crate::client_session`]).

use std::fmt;
use std::io::Write as _;
use std::os::unix::fs::OpenOptionsExt as _;
use std::path::Path;

use serde::{Deserialize, Serialize};
use zeroize::Zeroize as _;

/// Cookies kept at most (RFC 8915: servers send 8).
const MAX_COOKIES: usize = 8;
/// Longest cookie accepted from the file.
const MAX_COOKIE_LEN: usize = 1024;
/// Longest session key accepted from the file.
const MAX_KEY_LEN: usize = 64;

/// One NTS session: what NTS-KE gave, minus the cookies already used.
#[derive(Clone)]
pub struct CookieJar {
    /// `host:port` of the NTS-KE server.
    pub ke_server: String,
    /// The AEAD's IANA id.
    pub aead_id: u16,
    /// Client-to-server key.
    pub c2s: Vec<u8>,
    /// Server-to-client key.
    pub s2c: Vec<u8>,
    /// The NTP server to ask.
    pub ntp_server: String,
    /// Its port.
    pub ntp_port: u16,
    /// Unused cookies.
    pub cookies: Vec<Vec<u8>>,
}

impl fmt::Debug for CookieJar {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CookieJar")
            .field("ke_server", &self.ke_server)
            .field("aead_id", &self.aead_id)
            .field("cookies", &self.cookies.len())
            .finish_non_exhaustive()
    }
}

impl Drop for CookieJar {
    fn drop(&mut self) {
        self.c2s.zeroize();
        self.s2c.zeroize();
    }
}

/// Why a cookie store could not be read or written. The path is not part of
/// the message: the caller names the file as its user knows it.
#[non_exhaustive]
#[derive(Debug)]
pub enum CookieStoreError {
    /// The file (or its temporary) cannot be read or written.
    Io(std::io::Error),
    /// The file is not JSON of the expected shape.
    NotAStore(String),
    /// The file's format version is not 1.
    UnsupportedVersion(u32),
    /// A key or cookie is not hex or has an impossible length.
    BadField(&'static str),
}

impl fmt::Display for CookieStoreError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Io(e) => write!(f, "{e}"),
            Self::NotAStore(e) => write!(f, "not a cookie store ({e})"),
            Self::UnsupportedVersion(v) => write!(f, "version {v} is not supported"),
            Self::BadField(name) => write!(f, "bad {name}"),
        }
    }
}

impl std::error::Error for CookieStoreError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Io(e) => Some(e),
            _ => None,
        }
    }
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct JarFile {
    version: u32,
    ke_server: String,
    aead_id: u16,
    c2s: String,
    s2c: String,
    ntp_server: String,
    ntp_port: u16,
    cookies: Vec<String>,
}

/// Reads the store at `path` if it exists and belongs to `ke_server`; a
/// store for another server is ignored (and replaced when saved).
///
/// # Errors
/// An unreadable or malformed file (never overwritten silently).
pub fn load_jar(path: &Path, ke_server: &str) -> Result<Option<CookieJar>, CookieStoreError> {
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(CookieStoreError::Io(e)),
    };
    let file: JarFile =
        serde_json::from_str(&text).map_err(|e| CookieStoreError::NotAStore(e.to_string()))?;
    if file.version != 1 {
        return Err(CookieStoreError::UnsupportedVersion(file.version));
    }
    if file.ke_server != ke_server {
        return Ok(None);
    }
    let hex_field = |name: &'static str, value: &str, max: usize| {
        hex::decode(value)
            .ok()
            .filter(|b| !b.is_empty() && b.len() <= max)
            .ok_or(CookieStoreError::BadField(name))
    };
    let jar = CookieJar {
        ke_server: file.ke_server,
        aead_id: file.aead_id,
        c2s: hex_field("c2s key", &file.c2s, MAX_KEY_LEN)?,
        s2c: hex_field("s2c key", &file.s2c, MAX_KEY_LEN)?,
        ntp_server: file.ntp_server,
        ntp_port: file.ntp_port,
        cookies: file
            .cookies
            .iter()
            .take(MAX_COOKIES)
            .map(|c| hex_field("cookie", c, MAX_COOKIE_LEN))
            .collect::<Result<_, _>>()?,
    };
    Ok(Some(jar))
}

/// Writes `jar` to `path` atomically with mode 0600.
///
/// # Errors
/// The file or its temporary cannot be written.
pub fn save_jar(path: &Path, jar: &CookieJar) -> Result<(), CookieStoreError> {
    let file = JarFile {
        version: 1,
        ke_server: jar.ke_server.clone(),
        aead_id: jar.aead_id,
        c2s: hex::encode(&jar.c2s),
        s2c: hex::encode(&jar.s2c),
        ntp_server: jar.ntp_server.clone(),
        ntp_port: jar.ntp_port,
        cookies: jar.cookies.iter().map(hex::encode).collect(),
    };
    let mut text = serde_json::to_string_pretty(&file)
        .map_err(|e| CookieStoreError::NotAStore(e.to_string()))?;
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(".tmp");
    let result = (|| {
        let mut out = std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(0o600)
            .open(&tmp)?;
        out.write_all(text.as_bytes())?;
        out.sync_all()?;
        std::fs::rename(&tmp, path)
    })();
    text.zeroize();
    result.map_err(|e| {
        // A full disk leaves a partial temporary: the store itself is
        // untouched, and no half-written copy of the keys stays behind.
        let _ = std::fs::remove_file(&tmp);
        CookieStoreError::Io(e)
    })
}

/// Removes the store at `path` (a session that is no longer any use, whose
/// replacement could not be made); a missing file is not an error.
///
/// # Errors
/// The file exists but cannot be removed.
pub fn forget_jar(path: &Path) -> Result<(), CookieStoreError> {
    match std::fs::remove_file(path) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(CookieStoreError::Io(e)),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use authtime_scratch::ScratchDir;

    #[test]
    fn a_jar_survives_a_round_trip_and_other_servers_are_ignored() {
        let dir = ScratchDir::new("jar");
        let path = dir.path("cookies");
        let jar = CookieJar {
            ke_server: "a:1".into(),
            aead_id: 15,
            c2s: vec![1; 32],
            s2c: vec![2; 32],
            ntp_server: "127.0.0.1".into(),
            ntp_port: 123,
            cookies: vec![vec![3; 104], vec![4; 104]],
        };
        save_jar(&path, &jar).expect("save");
        use std::os::unix::fs::PermissionsExt as _;
        let mode = std::fs::metadata(&path).expect("meta").permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
        let back = load_jar(&path, "a:1").expect("load").expect("jar");
        assert_eq!(back.cookies, jar.cookies);
        assert_eq!(back.c2s, jar.c2s);
        assert!(load_jar(&path, "b:1").expect("load").is_none());
        forget_jar(&path).expect("removed");
        assert!(load_jar(&path, "a:1").expect("load").is_none());
        forget_jar(&path).expect("nothing to remove");
        std::fs::write(&path, "{\"version\": 1}").expect("write");
        assert!(load_jar(&path, "a:1").is_err());
        std::fs::write(&path, "garbage").expect("write");
        assert!(load_jar(&path, "a:1").is_err());
    }

    #[test]
    fn a_missing_path_is_not_a_store() {
        assert!(
            load_jar(Path::new("/nonexistent/authtime.cookies"), "x:1")
                .expect("ok")
                .is_none()
        );
    }
}
