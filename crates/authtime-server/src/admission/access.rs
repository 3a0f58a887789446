//! Allow and deny lists of client networks.

use std::net::IpAddr;

use ipnet::IpNet;

/// Which clients are answered: those in no denied network and, when the
/// allow list is not empty, in an allowed one. A deny entry wins over an allow
/// entry, whatever their prefix lengths.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AccessList {
    allow: Vec<IpNet>,
    deny: Vec<IpNet>,
}

impl AccessList {
    /// A list from parsed networks.
    #[must_use]
    pub fn new(allow: Vec<IpNet>, deny: Vec<IpNet>) -> Self {
        Self { allow, deny }
    }

    /// Whether every client is allowed (no lists), so callers can skip the check.
    #[must_use]
    pub fn is_open(&self) -> bool {
        self.allow.is_empty() && self.deny.is_empty()
    }

    /// Whether `client` is answered. IPv4-mapped IPv6 addresses are checked
    /// as the IPv4 address they carry.
    #[must_use]
    pub fn allows(&self, client: IpAddr) -> bool {
        let client = client.to_canonical();
        if self.deny.iter().any(|net| net.contains(&client)) {
            return false;
        }
        self.allow.is_empty() || self.allow.iter().any(|net| net.contains(&client))
    }
}

/// Parses a network in CIDR notation (`192.0.2.0/24`, `2001:db8::/32`) or a
/// single address (a /32 or /128).
///
/// # Errors
/// A message quoting the text.
pub fn parse_network(text: &str) -> Result<IpNet, String> {
    let text = text.trim();
    if let Ok(addr) = text.parse::<IpAddr>() {
        return Ok(IpNet::from(addr));
    }
    let net: IpNet = text.parse().map_err(|_| {
        format!("`{text}` is not a network (for example 192.0.2.0/24, 2001:db8::/32 or 127.0.0.1)")
    })?;
    if net.network() != net.addr() {
        return Err(format!(
            "`{text}` has host bits set; the network is {}",
            net.trunc()
        ));
    }
    Ok(net)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn list(allow: &[&str], deny: &[&str]) -> AccessList {
        let parse = |l: &[&str]| l.iter().map(|t| parse_network(t).expect(t)).collect();
        AccessList::new(parse(allow), parse(deny))
    }

    fn ip(text: &str) -> IpAddr {
        text.parse().expect("address")
    }

    #[test]
    fn empty_lists_allow_everyone() {
        let open = AccessList::default();
        assert!(open.is_open());
        assert!(open.allows(ip("192.0.2.1")) && open.allows(ip("::1")));
    }

    #[test]
    fn deny_wins_and_allow_lists_restrict() {
        let l = list(&["192.0.2.0/24", "2001:db8::/32"], &["192.0.2.128/25"]);
        assert!(l.allows(ip("192.0.2.1")));
        assert!(!l.allows(ip("192.0.2.200")));
        assert!(!l.allows(ip("198.51.100.1")));
        assert!(l.allows(ip("2001:db8::1")));
        assert!(
            l.allows(ip("::ffff:192.0.2.1")),
            "mapped addresses count as IPv4"
        );
        let deny_only = list(&[], &["127.0.0.1"]);
        assert!(!deny_only.allows(ip("127.0.0.1")) && deny_only.allows(ip("127.0.0.2")));
    }

    #[test]
    fn bad_networks_are_explained() {
        assert!(parse_network("10.0.0.0/33").is_err());
        assert!(
            parse_network("10.0.0.1/8")
                .expect_err("host bits")
                .contains("10.0.0.0/8")
        );
        assert!(parse_network("x").is_err());
    }
}
