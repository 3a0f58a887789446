//! `[nts-ke-balancer]`: the NTS-KE server as a key-exchange load balancer (KELB) of
//! draft-ietf-ntp-nts-keyexchange-pool-00. Present (with `[nts-ke]`), NTS-KE clients
//! get cookies made by pool members (`[[nts-ke-balancer.backend]]`) instead of local
//! ones.
//!
//! Token files are secrets: they are read when the server starts, on SIGHUP and when
//! they change (`authtime_ntske::pool_token_file::read_pool_token_file`, which refuses a
//! file its group or others can access, as a pool member's token files; the reload is
//! `crate::nts::ke_balancer::CredentialReloader`).

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;

use crate::config::{NTS_KE_PORT, Problem, seconds};

/// `[nts-ke-balancer]` as written.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields, default)]
pub struct NtsBalancerSection {
    /// Seconds between health checks (Support queries) of each backend.
    pub check_interval: f64,
    /// Seconds allowed for each step with a backend.
    pub timeout: f64,
    /// The pool members.
    pub backend: Vec<BackendSection>,
}

impl Default for NtsBalancerSection {
    fn default() -> Self {
        Self {
            check_interval: 10.0,
            timeout: 1.0,
            backend: Vec::new(),
        }
    }
}

/// `[[nts-ke-balancer.backend]]` as written.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct BackendSection {
    /// NTP server name given to clients when the backend sends none; what NTP Server
    /// Deny records match.
    pub name: String,
    /// The backend's NTS-KE address, `host:port` (port 4460 when left out).
    pub address: String,
    /// Name its certificate must hold; default: the host of `address`.
    pub tls_name: Option<String>,
    /// PEM file of the CA (or certificate) to trust; default: the public roots. Read
    /// at start, re-read on SIGHUP and when it changes (checked every `[nts-ke]`
    /// certificate-check-interval); a failed reload keeps the previous one.
    pub ca_file: Option<PathBuf>,
    /// File with the pool authentication token this backend accepts (mode 0600). Read
    /// at start, re-read on SIGHUP and when it changes (checked every `[nts-ke]`
    /// certificate-check-interval); a failed reload (for example a file others can
    /// read) keeps the previous token, the backend's token and CA together.
    pub token_file: PathBuf,
    /// Share of the clients.
    #[serde(default = "one")]
    pub weight: u32,
    /// NTP port given to clients when the backend sends none.
    pub ntp_port: Option<u16>,
}

fn one() -> u32 {
    1
}

/// One validated backend.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BackendSettings {
    /// Name given to clients and matched by NTP Server Deny.
    pub name: String,
    /// Host (name or IP address, no brackets).
    pub host: String,
    /// NTS-KE port.
    pub port: u16,
    /// Name checked in its certificate.
    pub tls_name: String,
    /// CA file, `None` for the public roots (read at start, on SIGHUP and on change).
    pub ca_file: Option<PathBuf>,
    /// Token file (read at start, on SIGHUP and on change).
    pub token_file: PathBuf,
    /// Weight, at least 1.
    pub weight: u32,
    /// NTP port announced when the backend sends none.
    pub ntp_port: Option<u16>,
}

/// A validated `[nts-ke-balancer]`.
#[derive(Debug, Clone, PartialEq)]
pub struct BalancerSettings {
    /// Health check interval.
    pub check_interval: Duration,
    /// Limit on each step with a backend.
    pub timeout: Duration,
    /// The backends, in file order.
    pub backends: Vec<BackendSettings>,
}

/// Splits `host:port`, `[v6]:port`, `host` or a bare IPv6 literal.
fn split_address(text: &str) -> Result<(String, u16), String> {
    let bad = || {
        format!(
            "`{text}` is not host:port (for example ntp1.example.net:4460, 192.0.2.1:4460 or \
             [2001:db8::1]:4460)"
        )
    };
    let text = text.trim();
    if text.is_empty() {
        return Err(bad());
    }
    if let Some(rest) = text.strip_prefix('[') {
        let (host, tail) = rest.split_once(']').ok_or_else(bad)?;
        let port = match tail {
            "" => NTS_KE_PORT,
            t => t
                .strip_prefix(':')
                .and_then(|p| p.parse().ok())
                .ok_or_else(bad)?,
        };
        host.parse::<std::net::Ipv6Addr>().map_err(|_| bad())?;
        return Ok((host.to_owned(), port));
    }
    if text.parse::<std::net::Ipv6Addr>().is_ok() {
        return Ok((text.to_owned(), NTS_KE_PORT));
    }
    let (host, port) = match text.rsplit_once(':') {
        Some((h, p)) => (h, p.parse::<u16>().map_err(|_| bad())?),
        None => (text, NTS_KE_PORT),
    };
    if host.is_empty()
        || !host
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b".-_".contains(&b))
    {
        return Err(bad());
    }
    Ok((host.to_owned(), port))
}

impl NtsBalancerSection {
    /// Checks the section; `relative` resolves file names against the configuration's
    /// directory.
    pub(crate) fn validate(
        &self,
        relative: &dyn Fn(&Path) -> PathBuf,
        problems: &mut Vec<Problem>,
    ) -> Option<BalancerSettings> {
        let before = problems.len();
        let mut secs = |key: &str, value: f64, min: f64, max: f64| {
            seconds(value, min, max)
                .map_err(|m| problems.push(Problem::new(format!("nts-ke-balancer.{key}"), m)))
                .unwrap_or_default()
        };
        let check_interval = secs("check-interval", self.check_interval, 0.1, 86_400.0);
        let timeout = secs("timeout", self.timeout, 0.05, 60.0);
        if self.backend.is_empty() {
            problems.push(Problem::new(
                "nts-ke-balancer.backend",
                "no backend: add a [[nts-ke-balancer.backend]] with name, address and token-file",
            ));
        }
        let mut backends: Vec<BackendSettings> = Vec::new();
        for (i, b) in self.backend.iter().enumerate() {
            let at = |key: &str| format!("nts-ke-balancer.backend[{i}].{key}");
            let name = b.name.trim();
            if name.is_empty()
                || name.len() > 253
                || name.starts_with('[')
                || !name.bytes().all(|c| c.is_ascii_graphic())
            {
                problems.push(Problem::new(
                    at("name"),
                    format!("`{name}` is not a host name or an IP address (no brackets, no port)"),
                ));
            } else if backends.iter().any(|o| o.name.eq_ignore_ascii_case(name)) {
                problems.push(Problem::new(
                    at("name"),
                    format!("`{name}` names another backend too"),
                ));
            }
            let (host, port) = split_address(&b.address)
                .map_err(|m| problems.push(Problem::new(at("address"), m)))
                .unwrap_or_default();
            if port == 0 && !host.is_empty() {
                problems.push(Problem::new(at("address"), "port 0 cannot be reached"));
            }
            let tls_name = b.tls_name.clone().unwrap_or_else(|| host.clone());
            if b.tls_name.is_some()
                && authtime_ntske::pool_client_io::tls_server_name(&tls_name).is_err()
            {
                problems.push(Problem::new(
                    at("tls-name"),
                    format!("`{tls_name}` is not a DNS name or an IP address"),
                ));
            }
            if b.token_file.as_os_str().is_empty() {
                problems.push(Problem::new(
                    at("token-file"),
                    "each backend needs `token-file` (the file with its pool token)",
                ));
            }
            if b.ca_file.as_ref().is_some_and(|p| p.as_os_str().is_empty()) {
                problems.push(Problem::new(at("ca-file"), "the file name is empty"));
            }
            if b.weight == 0 || b.weight > 1_000_000 {
                problems.push(Problem::new(
                    at("weight"),
                    format!("{} must be 1 to 1000000", b.weight),
                ));
            }
            if b.ntp_port == Some(0) {
                problems.push(Problem::new(at("ntp-port"), "port 0 cannot be announced"));
            }
            backends.push(BackendSettings {
                name: name.to_owned(),
                host,
                port,
                tls_name,
                ca_file: b.ca_file.as_deref().map(relative),
                token_file: relative(&b.token_file),
                weight: b.weight,
                ntp_port: b.ntp_port,
            });
        }
        (problems.len() == before).then_some(BalancerSettings {
            check_interval,
            timeout,
            backends,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::ConfigFile;

    const BASE: &str = "[nts-ke]\ncertificate-chain = \"c.pem\"\nprivate-key = \"k.pem\"\n";

    fn validate(extra: &str) -> Result<Option<BalancerSettings>, Vec<Problem>> {
        let file = ConfigFile::parse(&format!("{BASE}{extra}")).expect("parses");
        file.validate(Some(Path::new("/etc/authtime")))
            .map(|s| s.nts.and_then(|n| n.ke).and_then(|ke| ke.balancer))
    }

    fn paths(extra: &str) -> Vec<String> {
        validate(extra)
            .expect_err("invalid")
            .into_iter()
            .map(|p| p.path)
            .collect()
    }

    #[test]
    fn backends_are_read_with_defaults() {
        let s = validate(
            "[nts-ke-balancer]\n\
             [[nts-ke-balancer.backend]]\nname = \"ntp1.example.net\"\n\
             address = \"ke1.example.net:4461\"\ntoken-file = \"tok1\"\n\
             [[nts-ke-balancer.backend]]\nname = \"192.0.2.7\"\naddress = \"[2001:db8::1]\"\n\
             tls-name = \"ke2.example.net\"\nca-file = \"/ca.pem\"\ntoken-file = \"tok2\"\n\
             weight = 3\nntp-port = 11123\n",
        )
        .expect("valid")
        .expect("balancer");
        assert_eq!(s.check_interval, Duration::from_secs(10));
        assert_eq!(s.timeout, Duration::from_secs(1));
        let [a, b] = &s.backends[..] else {
            panic!("{s:?}")
        };
        assert_eq!((a.host.as_str(), a.port), ("ke1.example.net", 4461));
        assert_eq!(a.tls_name, "ke1.example.net");
        assert_eq!(a.token_file, Path::new("/etc/authtime/tok1"));
        assert_eq!((a.weight, a.ca_file.as_ref()), (1, None));
        assert_eq!((b.host.as_str(), b.port), ("2001:db8::1", 4460));
        assert_eq!(b.tls_name, "ke2.example.net");
        assert_eq!((b.weight, b.ntp_port), (3, Some(11123)));
        assert_eq!(validate("").expect("valid"), None);
    }

    #[test]
    fn bad_backends_are_reported_with_their_paths() {
        assert_eq!(paths("[nts-ke-balancer]\n"), ["nts-ke-balancer.backend"]);
        let problems = paths(
            "[nts-ke-balancer]\ncheck-interval = 0.0\n\
             [[nts-ke-balancer.backend]]\nname = \"a\"\naddress = \"a:x\"\ntoken-file = \"t\"\nweight = 0\n\
             [[nts-ke-balancer.backend]]\nname = \"A\"\naddress = \"b:1\"\ntoken-file = \"\"\nntp-port = 0\n",
        );
        assert_eq!(
            problems,
            [
                "nts-ke-balancer.check-interval",
                "nts-ke-balancer.backend[0].address",
                "nts-ke-balancer.backend[0].weight",
                "nts-ke-balancer.backend[1].name",
                "nts-ke-balancer.backend[1].token-file",
                "nts-ke-balancer.backend[1].ntp-port",
            ]
        );
    }

    #[test]
    fn a_balancer_needs_nts_ke() {
        let file = ConfigFile::parse(
            "[nts-ke-balancer]\n[[nts-ke-balancer.backend]]\nname = \"a\"\naddress = \"a:1\"\ntoken-file = \"t\"\n",
        )
        .expect("parses");
        let problems = file.validate(None).expect_err("invalid");
        assert!(
            problems
                .iter()
                .any(|p| p.path == "nts-ke-balancer" && p.message.contains("[nts-ke]")),
            "{problems:?}"
        );
    }

    #[test]
    fn a_balancer_is_not_a_pool_member() {
        let file = ConfigFile::parse(&format!(
            "{BASE}pool-token-files = [\"t\"]\n[nts-ke-balancer]\n[[nts-ke-balancer.backend]]\n\
             name = \"a\"\naddress = \"a:1\"\ntoken-file = \"t\"\n"
        ))
        .expect("parses");
        let problems = file.validate(None).expect_err("invalid");
        assert!(
            problems
                .iter()
                .any(|p| p.path == "nts-ke-balancer" && p.message.contains("pool-token-files")),
            "{problems:?}"
        );
    }

    #[test]
    fn addresses_split_into_host_and_port() {
        assert_eq!(
            split_address("h.example:1").expect("valid"),
            ("h.example".into(), 1)
        );
        assert_eq!(
            split_address("h.example").expect("valid"),
            ("h.example".into(), 4460)
        );
        assert_eq!(split_address("::1").expect("valid"), ("::1".into(), 4460));
        assert_eq!(split_address("[::1]:5").expect("valid"), ("::1".into(), 5));
        for bad in ["", "[::1", "[x]:1", "h:", "h:99999", "a b:1", "[::1]x"] {
            assert!(split_address(bad).is_err(), "{bad}");
        }
    }
}
