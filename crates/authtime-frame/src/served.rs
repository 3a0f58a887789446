//! The (address, port) pairs the frame path answers for.

use std::net::{IpAddr, SocketAddr};

/// The endpoints whose UDP traffic is ours. An unspecified address
/// (`0.0.0.0` or `::`) stands for every address of its family, as when a
/// socket binds it; an IPv4 endpoint never matches IPv6 traffic or the
/// other way round.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Served {
    endpoints: Vec<SocketAddr>,
}

/// Whether a destination is served, and if not, how near it came.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Lookup {
    Served,
    OtherAddress,
    OtherPort,
}

impl Served {
    /// The given endpoints.
    #[must_use]
    pub fn new(endpoints: impl IntoIterator<Item = SocketAddr>) -> Self {
        Self {
            endpoints: endpoints.into_iter().collect(),
        }
    }

    /// Every address, IPv4 and IPv6, on each of `ports`.
    #[must_use]
    pub fn ports(ports: &[u16]) -> Self {
        let any: [IpAddr; 2] = [
            std::net::Ipv4Addr::UNSPECIFIED.into(),
            std::net::Ipv6Addr::UNSPECIFIED.into(),
        ];
        Self::new(
            ports
                .iter()
                .flat_map(|&port| any.map(|ip| SocketAddr::new(ip, port))),
        )
    }

    /// The endpoints, as given.
    #[must_use]
    pub fn endpoints(&self) -> &[SocketAddr] {
        &self.endpoints
    }

    /// Whether UDP to `destination` is ours.
    #[must_use]
    pub fn contains(&self, destination: SocketAddr) -> bool {
        self.lookup(destination) == Lookup::Served
    }

    pub(crate) fn lookup(&self, destination: SocketAddr) -> Lookup {
        let mut port_seen = false;
        for e in &self.endpoints {
            if e.port() != destination.port() || e.is_ipv4() != destination.is_ipv4() {
                continue;
            }
            if e.ip().is_unspecified() || e.ip() == destination.ip() {
                return Lookup::Served;
            }
            port_seen = true;
        }
        if port_seen {
            Lookup::OtherAddress
        } else {
            Lookup::OtherPort
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn addr(s: &str) -> SocketAddr {
        s.parse().expect("socket address")
    }

    #[test]
    fn unspecified_addresses_stand_for_their_family() {
        let served = Served::new([addr("0.0.0.0:123"), addr("[2001:db8::1]:4460")]);
        assert!(served.contains(addr("192.0.2.7:123")));
        assert_eq!(served.lookup(addr("[2001:db8::7]:123")), Lookup::OtherPort);
        assert!(served.contains(addr("[2001:db8::1]:4460")));
        assert_eq!(
            served.lookup(addr("[2001:db8::2]:4460")),
            Lookup::OtherAddress
        );
        assert_eq!(served.lookup(addr("192.0.2.1:4460")), Lookup::OtherPort);
    }

    #[test]
    fn ports_serve_both_families() {
        let served = Served::ports(&[123, 2002]);
        assert_eq!(served.endpoints().len(), 4);
        assert!(served.contains(addr("198.51.100.1:2002")));
        assert!(served.contains(addr("[fd00::1]:123")));
        assert!(!served.contains(addr("[fd00::1]:124")));
        assert!(!Served::default().contains(addr("192.0.2.1:123")));
    }
}
