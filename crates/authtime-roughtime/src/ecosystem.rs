//! Server lists in the "ecosystem" JSON format Roughtime deployments publish
//! (Cloudflare's `roughtime/ecosystem.json`):
//!
//! ```json
//! {"servers": [{"name": "...", "version": "IETF-Roughtime",
//!   "publicKeyType": "ed25519", "publicKey": "<base64>",
//!   "addresses": [{"protocol": "udp", "address": "host:port"}]}]}
//! ```
//!
//! Parsing is strict: unknown fields, unknown versions, key types other than
//! Ed25519, keys that are not 32 bytes of standard base64, and addresses that
//! are not UDP `host:port` are refused with the server's name in the error.
//! Servers of Google's pre-IETF protocol (`"version": "Google-Roughtime"`,
//! listed in Cloudflare's own file) are kept with no version to offer, so a
//! caller can say it skips them. Nothing is resolved here: addresses stay
//! strings.

use core::fmt;

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use serde::Deserialize;

use crate::version::Version;

/// One usable server from the list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Server {
    /// The list's `name`, unique within the list.
    pub name: String,
    /// The versions to offer it, in the request's VER; empty for a
    /// `Google-Roughtime` server, which this crate cannot ask.
    pub versions: Vec<Version>,
    /// The long-term Ed25519 public key.
    pub public_key: [u8; 32],
    /// Its UDP addresses (`host:port`), in list order; at least one.
    pub addresses: Vec<String>,
}

/// Why a server list was refused.
#[non_exhaustive]
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EcosystemError {
    /// Not JSON of the expected shape (serde's message: unknown or missing field, wrong type).
    Json(String),
    /// `servers` is empty.
    NoServers,
    /// A server's `name` is empty or repeats an earlier one.
    BadName(String),
    /// `publicKeyType` is not `ed25519`.
    UnsupportedKeyType {
        /// The server's name.
        server: String,
        /// The key type given.
        key_type: String,
    },
    /// `publicKey` is not standard base64 of 32 bytes.
    BadPublicKey(String),
    /// `version` is none of `IETF-Roughtime`, `Google-Roughtime`, `1`, `draft`.
    UnsupportedVersion {
        /// The server's name.
        server: String,
        /// The version given.
        version: String,
    },
    /// An address's `protocol` is not `udp`, or its `address` is not `host:port`.
    BadAddress {
        /// The server's name.
        server: String,
        /// The protocol and address given.
        address: String,
    },
    /// The server lists no address.
    NoAddress(String),
}

impl fmt::Display for EcosystemError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Json(e) => write!(f, "server list is not valid ecosystem JSON: {e}"),
            Self::NoServers => f.write_str("server list has no servers"),
            Self::BadName(n) => write!(f, "server name {n:?} is empty or repeated"),
            Self::UnsupportedKeyType { server, key_type } => {
                write!(f, "server {server:?}: key type {key_type:?} is not ed25519")
            }
            Self::BadPublicKey(s) => {
                write!(f, "server {s:?}: publicKey is not base64 of 32 bytes")
            }
            Self::UnsupportedVersion { server, version } => {
                write!(f, "server {server:?}: unsupported version {version:?}")
            }
            Self::BadAddress { server, address } => {
                write!(
                    f,
                    "server {server:?}: address {address:?} is not udp host:port"
                )
            }
            Self::NoAddress(s) => write!(f, "server {s:?} lists no address"),
        }
    }
}

impl std::error::Error for EcosystemError {}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ListJson {
    servers: Vec<ServerJson>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct ServerJson {
    name: String,
    version: Option<String>,
    public_key_type: String,
    public_key: String,
    addresses: Vec<AddressJson>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct AddressJson {
    protocol: String,
    address: String,
}

/// Parses and validates an ecosystem server list.
pub fn parse_ecosystem(json: &[u8]) -> Result<Vec<Server>, EcosystemError> {
    let list: ListJson =
        serde_json::from_slice(json).map_err(|e| EcosystemError::Json(e.to_string()))?;
    if list.servers.is_empty() {
        return Err(EcosystemError::NoServers);
    }
    let mut out: Vec<Server> = Vec::with_capacity(list.servers.len());
    for s in list.servers {
        if s.name.is_empty() || out.iter().any(|o| o.name == s.name) {
            return Err(EcosystemError::BadName(s.name));
        }
        if !s.public_key_type.eq_ignore_ascii_case("ed25519") {
            return Err(EcosystemError::UnsupportedKeyType {
                server: s.name,
                key_type: s.public_key_type,
            });
        }
        let public_key = decode_key(&s.public_key)
            .ok_or_else(|| EcosystemError::BadPublicKey(s.name.clone()))?;
        let versions = match parse_version(s.version.as_deref()) {
            Some(v) => v,
            None => {
                return Err(EcosystemError::UnsupportedVersion {
                    server: s.name,
                    version: s.version.unwrap_or_default(),
                });
            }
        };
        if s.addresses.is_empty() {
            return Err(EcosystemError::NoAddress(s.name));
        }
        let mut addresses = Vec::with_capacity(s.addresses.len());
        for a in s.addresses {
            if a.protocol != "udp" || !is_host_port(&a.address) {
                return Err(EcosystemError::BadAddress {
                    server: s.name,
                    address: format!("{} {}", a.protocol, a.address),
                });
            }
            addresses.push(a.address);
        }
        out.push(Server {
            name: s.name,
            versions,
            public_key,
            addresses,
        });
    }
    Ok(out)
}

/// A 32-byte key in standard base64 (padded), as the lists and reports write them.
pub fn decode_key(text: &str) -> Option<[u8; 32]> {
    STANDARD.decode(text).ok()?.try_into().ok()
}

/// The versions to offer for a list's `version` string: the IETF protocol
/// (or no version given) offers both wire versions and lets the server pick;
/// `Google-Roughtime` (no VER, 64-byte nonces) is not spoken here: nothing to offer.
fn parse_version(version: Option<&str>) -> Option<Vec<Version>> {
    match version {
        None | Some("IETF-Roughtime") => Some(vec![Version::Draft12, Version::Rfc1]),
        Some("Google-Roughtime") => Some(Vec::new()),
        Some("1") => Some(vec![Version::Rfc1]),
        Some("draft") => Some(vec![Version::Draft12]),
        Some(_) => None,
    }
}

/// `host:port` with a non-empty host (a bracketed IPv6 literal allowed) and a
/// non-zero port.
pub fn is_host_port(address: &str) -> bool {
    let Some((host, port)) = address.rsplit_once(':') else {
        return false;
    };
    let host_ok = match host.strip_prefix('[') {
        Some(v6) => v6
            .strip_suffix(']')
            .is_some_and(|h| h.parse::<std::net::Ipv6Addr>().is_ok()),
        None => {
            !host.is_empty()
                && host
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'.' || b == b'-' || b == b'_')
        }
    };
    host_ok && port.parse::<u16>().is_ok_and(|p| p != 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    const CLOUDFLARE_STYLE: &str = r#"{"servers": [
      {"name": "Cloudflare-Roughtime-2", "version": "IETF-Roughtime",
       "publicKeyType": "ed25519",
       "publicKey": "0GD7c3yP8xEc4Zl2zeuN2SlLvDVVocjsPSL8/Rl/7zg=",
       "addresses": [{"protocol": "udp", "address": "roughtime.cloudflare.com:2003"}]},
      {"name": "local6", "publicKeyType": "ed25519",
       "publicKey": "AW5uAoTSTDfG5NfY1bTh08GUnOqlRb+HVhbJ3ODJvsE=",
       "addresses": [{"protocol": "udp", "address": "[::1]:2002"}]}]}"#;

    #[test]
    fn cloudflare_style_list_parses() {
        let list = parse_ecosystem(CLOUDFLARE_STYLE.as_bytes()).unwrap();
        assert_eq!(list.len(), 2);
        assert_eq!(list[0].name, "Cloudflare-Roughtime-2");
        assert_eq!(list[0].versions, [Version::Draft12, Version::Rfc1]);
        assert_eq!(list[0].addresses, ["roughtime.cloudflare.com:2003"]);
        assert_eq!(list[1].addresses, ["[::1]:2002"]);
    }

    #[test]
    fn malformed_lists_are_refused_with_the_cause() {
        let good = CLOUDFLARE_STYLE;
        let cases: &[(&str, &str)] = &[
            (
                "\"ed25519\",\n       \"publicKey\": \"0GD7",
                "\"rsa\",\n       \"publicKey\": \"0GD7",
            ),
            (
                "0GD7c3yP8xEc4Zl2zeuN2SlLvDVVocjsPSL8/Rl/7zg=",
                "0GD7c3yP8xEc4Zl2",
            ),
            ("\"IETF-Roughtime\"", "\"Roughtime-1.0\""),
            (
                "\"udp\", \"address\": \"roughtime",
                "\"tcp\", \"address\": \"roughtime",
            ),
            (":2003", ""),
            ("\"local6\"", "\"Cloudflare-Roughtime-2\""),
            ("\"version\"", "\"versoin\""),
        ];
        for (from, to) in cases {
            assert!(good.contains(from), "{from}");
            let bad = good.replacen(from, to, 1);
            let err = parse_ecosystem(bad.as_bytes()).unwrap_err();
            assert!(!err.to_string().is_empty());
        }
        assert_eq!(
            parse_ecosystem(br#"{"servers": []}"#),
            Err(EcosystemError::NoServers)
        );
        assert!(matches!(
            parse_ecosystem(b"{\"servers\": [{]}"),
            Err(EcosystemError::Json(_))
        ));
        for n in 0..good.len() {
            let _ = parse_ecosystem(&good.as_bytes()[..n]);
        }
    }

    #[test]
    fn cloudflare_ecosystem_json_parses_with_google_servers_kept_unaskable() {
        // The shape of cloudflare/roughtime's ecosystem.json (commit 39613b3):
        // one IETF server and two still listed as Google-Roughtime.
        let json = r#"{"servers": [
          {"name": "Cloudflare-Roughtime-2", "version": "IETF-Roughtime", "publicKeyType": "ed25519",
           "publicKey": "0GD7c3yP8xEc4Zl2zeuN2SlLvDVVocjsPSL8/Rl/7zg=",
           "addresses": [{"protocol": "udp", "address": "roughtime.cloudflare.com:2003"}]},
          {"name": "int08h-Roughtime", "version": "Google-Roughtime", "publicKeyType": "ed25519",
           "publicKey": "AW5uAoTSTDfG5NfY1bTh08GUnOqlRb+HVhbJ3ODJvsE=",
           "addresses": [{"protocol": "udp", "address": "roughtime.int08h.com:2002"}]}]}"#;
        let list = parse_ecosystem(json.as_bytes()).unwrap();
        assert_eq!(list.len(), 2);
        assert_eq!(list[0].versions.len(), 2);
        assert!(list[1].versions.is_empty());
    }

    #[test]
    fn host_port_forms() {
        assert!(is_host_port("a.example:2002"));
        assert!(is_host_port("127.0.0.1:1"));
        assert!(is_host_port("[::1]:2002"));
        for bad in [
            "a.example",
            ":2002",
            "a:0",
            "a:70000",
            "[::1:2",
            "a b:1",
            "::1:2002",
        ] {
            assert!(!is_host_port(bad), "{bad}");
        }
    }
}
