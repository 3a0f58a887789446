//! `[roughtime]`: the Roughtime server (RFC 10049 version 1 and the drafts'
//! 0x8000000c). Absent = Roughtime is not served.
//!
//! The long-term key is either here (`long-term-key`: the daemon makes and
//! rotates online keys itself and keeps the current one in the key store) or
//! offline (`delegation`: an online key and its certificates made by
//! `authtime roughtime delegate`). The radius comes from the clock state,
//! never from this section: `max-radius` only says when to stop answering.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use authtime_proto::RateLimitConfig;
use serde::Deserialize;

use crate::config::{Problem, parse_socket_addr};

/// Roughtime's customary port.
pub const ROUGHTIME_PORT: u16 = 2002;

/// `[roughtime]` as written.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields, default)]
pub struct RoughtimeSection {
    /// Addresses served on UDP and TCP.
    pub listen: Vec<String>,
    /// File with the long-term Ed25519 seed (hex), made by `authtime roughtime keygen`.
    pub long_term_key: Option<PathBuf>,
    /// File with an online key and its certificates, made by `authtime roughtime delegate`.
    pub delegation: Option<PathBuf>,
    /// Seconds an online key made here is valid (MAXT - now when it is made).
    pub online_key_lifetime: u64,
    /// Requests per second per client; 0 = no limit.
    pub rate_limit: f64,
    /// Requests a client may send at once after being idle.
    pub rate_limit_burst: f64,
    /// The largest radius (seconds) the server answers with; a larger
    /// uncertainty means no answer.
    pub max_radius: u32,
    /// TCP connections open at once.
    pub max_connections: usize,
    /// Seconds a TCP client has to send each request.
    pub tcp_timeout: f64,
    /// Worker threads per UDP address.
    pub workers: usize,
}

impl Default for RoughtimeSection {
    fn default() -> Self {
        Self {
            listen: vec![
                format!("0.0.0.0:{ROUGHTIME_PORT}"),
                format!("[::]:{ROUGHTIME_PORT}"),
            ],
            long_term_key: None,
            delegation: None,
            online_key_lifetime: 86_400,
            rate_limit: 4.0,
            rate_limit_burst: 16.0,
            max_radius: 10,
            max_connections: 64,
            tcp_timeout: 2.0,
            workers: 1,
        }
    }
}

/// Where the online key comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RoughtimeKeySource {
    /// The long-term seed file: online keys are made and rotated here.
    LongTerm(PathBuf),
    /// A delegation file made offline.
    Delegation(PathBuf),
}

/// A validated `[roughtime]` section.
#[derive(Debug, Clone, PartialEq)]
pub struct RoughtimeSettings {
    /// Addresses served on UDP and TCP.
    pub listen: Vec<SocketAddr>,
    /// Whether `listen` is the default (an address family the machine lacks is skipped).
    pub listen_is_default: bool,
    /// The keys.
    pub keys: RoughtimeKeySource,
    /// Validity of online keys made here, seconds.
    pub online_key_lifetime: u64,
    /// Per-client limits; `None` = off.
    pub rate_limit: Option<RateLimitConfig>,
    /// Largest radius answered with, seconds.
    pub max_radius: u32,
    /// TCP connection cap.
    pub max_connections: usize,
    /// TCP read timeout per request.
    pub tcp_timeout: Duration,
    /// UDP workers per address.
    pub workers: usize,
}

impl RoughtimeSection {
    /// Checks the section; `relative` resolves file names against the
    /// configuration file's directory.
    pub(crate) fn validate(
        &self,
        relative: &dyn Fn(&Path) -> PathBuf,
        problems: &mut Vec<Problem>,
    ) -> Option<RoughtimeSettings> {
        let before = problems.len();
        let mut problem = |path: &str, message: String| {
            problems.push(Problem::new(format!("roughtime.{path}"), message));
        };
        if self.listen.is_empty() {
            problem("listen", "no address to listen on".into());
        }
        let mut listen = Vec::new();
        for (i, text) in self.listen.iter().enumerate() {
            match parse_socket_addr(text) {
                Ok(addr) if listen.contains(&addr) => {
                    problem(&format!("listen[{i}]"), format!("{addr} is listed twice"));
                }
                Ok(addr) => listen.push(addr),
                Err(m) => problem(&format!("listen[{i}]"), m),
            }
        }
        let file = |p: &PathBuf| (!p.as_os_str().is_empty()).then(|| relative(p));
        let keys = match (&self.long_term_key, &self.delegation) {
            (Some(p), None) => file(p).map(RoughtimeKeySource::LongTerm).or_else(|| {
                problem("long-term-key", "the file name is empty".into());
                None
            }),
            (None, Some(p)) => file(p).map(RoughtimeKeySource::Delegation).or_else(|| {
                problem("delegation", "the file name is empty".into());
                None
            }),
            (Some(_), Some(_)) => {
                problem(
                    "delegation",
                    "give `long-term-key` or `delegation`, not both".into(),
                );
                None
            }
            (None, None) => {
                problem(
                    "long-term-key",
                    "Roughtime needs `long-term-key = \"FILE\"` (made by `authtime roughtime \
                     keygen`) or `delegation = \"FILE\"` (made by `authtime roughtime delegate`)"
                        .into(),
                );
                None
            }
        };
        if !(4..=366 * 86_400).contains(&self.online_key_lifetime) {
            problem(
                "online-key-lifetime",
                format!(
                    "{} s must be 4 to 31622400 (a day is usual)",
                    self.online_key_lifetime
                ),
            );
        }
        if self.delegation.is_some() && self.online_key_lifetime != 86_400 {
            problem(
                "online-key-lifetime",
                "a delegation made offline has its own validity (set it with `authtime \
                 roughtime delegate --valid-for`)"
                    .into(),
            );
        }
        if !(self.rate_limit.is_finite() && self.rate_limit >= 0.0) {
            problem(
                "rate-limit",
                format!(
                    "{} requests per second must be 0 (no limit) or more",
                    self.rate_limit
                ),
            );
        }
        if !(self.rate_limit_burst.is_finite() && self.rate_limit_burst >= 1.0) {
            problem(
                "rate-limit-burst",
                format!("a burst of {} must be at least 1", self.rate_limit_burst),
            );
        }
        if !(1..=86_400).contains(&self.max_radius) {
            problem(
                "max-radius",
                format!(
                    "{} s must be 1 to 86400 (the radius itself follows the clock state)",
                    self.max_radius
                ),
            );
        }
        if !(1..=100_000).contains(&self.max_connections) {
            problem(
                "max-connections",
                format!("{} must be 1 to 100000", self.max_connections),
            );
        }
        if !(self.tcp_timeout.is_finite() && (0.05..=60.0).contains(&self.tcp_timeout)) {
            problem(
                "tcp-timeout",
                format!("{} s must be 0.05 to 60", self.tcp_timeout),
            );
        }
        if !(1..=crate::config::MAX_WORKERS).contains(&self.workers) {
            problem(
                "workers",
                format!(
                    "{} must be 1 to {}",
                    self.workers,
                    crate::config::MAX_WORKERS
                ),
            );
        }
        if problems.len() > before {
            return None;
        }
        let rate_limit = (self.rate_limit > 0.0).then(|| RateLimitConfig {
            rate: self.rate_limit,
            burst: self.rate_limit_burst,
            ..RateLimitConfig::default()
        });
        Some(RoughtimeSettings {
            listen_is_default: self.listen == Self::default().listen,
            listen,
            keys: keys?,
            online_key_lifetime: self.online_key_lifetime,
            rate_limit,
            max_radius: self.max_radius,
            max_connections: self.max_connections,
            tcp_timeout: Duration::from_secs_f64(self.tcp_timeout),
            workers: self.workers,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ConfigFile;

    fn validate(section: &str) -> Result<RoughtimeSettings, Vec<Problem>> {
        let text = format!("[roughtime]\n{section}");
        let settings = ConfigFile::parse(&text)
            .map_err(|e| vec![Problem::new("toml", e.to_string())])?
            .validate(Some(Path::new("/etc/authtime")))?;
        Ok(settings.roughtime.expect("a [roughtime] section"))
    }

    fn paths(section: &str) -> Vec<String> {
        let mut p: Vec<String> = validate(section)
            .expect_err("invalid")
            .into_iter()
            .map(|p| p.path)
            .collect();
        p.sort();
        p
    }

    #[test]
    fn defaults_and_relative_files() {
        let s = validate("long-term-key = \"rt.key\"\n").expect("valid");
        assert_eq!(
            s.keys,
            RoughtimeKeySource::LongTerm(PathBuf::from("/etc/authtime/rt.key"))
        );
        assert!(s.listen_is_default);
        assert!(s.listen.iter().all(|a| a.port() == ROUGHTIME_PORT));
        assert_eq!((s.online_key_lifetime, s.max_radius), (86_400, 10));
        assert!(s.rate_limit.is_some());
        let s = validate(
            "listen = [\"127.0.0.1:12002\"]\ndelegation = \"/var/lib/d\"\nrate-limit = 0\n",
        )
        .expect("valid");
        assert_eq!(
            s.keys,
            RoughtimeKeySource::Delegation(PathBuf::from("/var/lib/d"))
        );
        assert!(!s.listen_is_default && s.rate_limit.is_none());
    }

    #[test]
    fn no_section_means_no_roughtime() {
        let settings = ConfigFile::parse("").expect("parses").validate(None);
        assert!(settings.expect("valid").roughtime.is_none());
    }

    #[test]
    fn malformed_sections_name_each_key() {
        assert_eq!(paths(""), ["roughtime.long-term-key"]);
        assert_eq!(
            paths("long-term-key = \"a\"\ndelegation = \"b\"\n"),
            ["roughtime.delegation"]
        );
        assert_eq!(paths("long-term-key = \"\"\n"), ["roughtime.long-term-key"]);
        assert_eq!(
            paths(
                "long-term-key = \"k\"\nlisten = [\"nope\", \"127.0.0.1:1\", \"127.0.0.1:1\"]\n\
                 online-key-lifetime = 1\nrate-limit = -1\nrate-limit-burst = 0.5\n\
                 max-radius = 0\nmax-connections = 0\ntcp-timeout = 0\nworkers = 0\n"
            ),
            [
                "roughtime.listen[0]",
                "roughtime.listen[2]",
                "roughtime.max-connections",
                "roughtime.max-radius",
                "roughtime.online-key-lifetime",
                "roughtime.rate-limit",
                "roughtime.rate-limit-burst",
                "roughtime.tcp-timeout",
                "roughtime.workers",
            ]
        );
        assert_eq!(
            paths("delegation = \"d\"\nonline-key-lifetime = 60\n"),
            ["roughtime.online-key-lifetime"]
        );
        assert_eq!(
            paths("listen = []\ndelegation = \"d\"\n"),
            ["roughtime.listen"]
        );
        assert!(ConfigFile::parse("[roughtime]\nradius = 1\n").is_err());
    }
}
