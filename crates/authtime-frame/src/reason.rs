//! Why a frame is not answered: passed to the kernel, or dropped. Each
//! reason has a stable label (`as_str`) for metrics; a label never changes
//! meaning once released, and new reasons get new labels.

/// Why a frame goes to the kernel untouched: it is not ours, or it may be
/// someone else's and the kernel knows what to do with it (docs/xdp.md,
/// "Frames").
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PassReason {
    /// The frame ends before the header that would tell whether it is ours
    /// (the UDP destination port); the kernel drops what it cannot use.
    Short,
    /// An 802.1Q or 802.1ad tag: replies would need the tag, and the frame
    /// path serves untagged traffic only.
    Vlan,
    /// Neither IPv4 nor IPv6 (ARP, LLDP, ...).
    NotIp,
    /// The IP version does not match the ethertype, or an IPv4 header length
    /// below 20 bytes: a header the kernel rejects itself.
    BadIpHeader,
    /// IPv4 options (header length above 20 bytes): the kernel applies its
    /// policy to them (source routes) and answers through the socket.
    IpOptions,
    /// An IPv4 fragment (more-fragments flag or a nonzero offset), or an
    /// IPv6 fragment header: only the kernel reassembles.
    Fragment,
    /// An IPv6 extension header other than a fragment header before UDP.
    Ipv6Extension,
    /// An IP protocol other than UDP (ICMP, TCP, ...).
    NotUdp,
    /// UDP to a port that is not served.
    OtherPort,
    /// UDP to a served port on an address that is not served.
    OtherAddress,
    /// A destination a reply could not come from: a multicast or broadcast
    /// IP or MAC address, an unspecified, loopback or IPv4-mapped address.
    BadDestination,
}

impl PassReason {
    /// Every reason, for metrics that show each label from the start.
    pub const ALL: [Self; 11] = [
        Self::Short,
        Self::Vlan,
        Self::NotIp,
        Self::BadIpHeader,
        Self::IpOptions,
        Self::Fragment,
        Self::Ipv6Extension,
        Self::NotUdp,
        Self::OtherPort,
        Self::OtherAddress,
        Self::BadDestination,
    ];

    /// The metric label.
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Short => "short",
            Self::Vlan => "vlan",
            Self::NotIp => "not_ip",
            Self::BadIpHeader => "bad_ip_header",
            Self::IpOptions => "ip_options",
            Self::Fragment => "fragment",
            Self::Ipv6Extension => "ipv6_extension",
            Self::NotUdp => "not_udp",
            Self::OtherPort => "other_port",
            Self::OtherAddress => "other_address",
            Self::BadDestination => "bad_destination",
        }
    }
}

/// Why a UDP frame to a served address and port is dropped without a reply.
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DropReason {
    /// The frame ends before the UDP header does, or before the length the
    /// IP header gives.
    Short,
    /// Length fields that contradict each other: an IP length shorter than
    /// its headers, or a UDP length other than the IP payload's.
    BadLength,
    /// The IPv4 header checksum does not verify.
    BadIpChecksum,
    /// The UDP checksum does not verify.
    BadUdpChecksum,
    /// A zero (absent) UDP checksum over IPv6, which RFC 8200 section 8.1
    /// forbids.
    MissingUdpChecksum,
    /// A source MAC address that is multicast, broadcast or all zeros.
    BadSourceMac,
    /// A source IP address that is never answered: unspecified, multicast,
    /// broadcast, loopback or IPv4-mapped.
    BadSourceAddress,
    /// UDP source port 0: there is no port to reply to.
    SourcePortZero,
}

impl DropReason {
    /// Every reason, for metrics that show each label from the start.
    pub const ALL: [Self; 8] = [
        Self::Short,
        Self::BadLength,
        Self::BadIpChecksum,
        Self::BadUdpChecksum,
        Self::MissingUdpChecksum,
        Self::BadSourceMac,
        Self::BadSourceAddress,
        Self::SourcePortZero,
    ];

    /// The metric label.
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Short => "short",
            Self::BadLength => "bad_length",
            Self::BadIpChecksum => "bad_ip_checksum",
            Self::BadUdpChecksum => "bad_udp_checksum",
            Self::MissingUdpChecksum => "missing_udp_checksum",
            Self::BadSourceMac => "bad_source_mac",
            Self::BadSourceAddress => "bad_source_address",
            Self::SourcePortZero => "source_port_zero",
        }
    }
}

impl core::fmt::Display for PassReason {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl core::fmt::Display for DropReason {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `ALL` lists every variant: adding one without listing it fails to
    /// compile here (the matches are exhaustive) or fails this test.
    #[test]
    fn all_lists_every_reason_once() {
        let pass_index = |r: PassReason| match r {
            PassReason::Short => 0,
            PassReason::Vlan => 1,
            PassReason::NotIp => 2,
            PassReason::BadIpHeader => 3,
            PassReason::IpOptions => 4,
            PassReason::Fragment => 5,
            PassReason::Ipv6Extension => 6,
            PassReason::NotUdp => 7,
            PassReason::OtherPort => 8,
            PassReason::OtherAddress => 9,
            PassReason::BadDestination => 10,
        };
        let drop_index = |r: DropReason| match r {
            DropReason::Short => 0,
            DropReason::BadLength => 1,
            DropReason::BadIpChecksum => 2,
            DropReason::BadUdpChecksum => 3,
            DropReason::MissingUdpChecksum => 4,
            DropReason::BadSourceMac => 5,
            DropReason::BadSourceAddress => 6,
            DropReason::SourcePortZero => 7,
        };
        for (i, r) in PassReason::ALL.into_iter().enumerate() {
            assert_eq!(pass_index(r), i, "{r}");
        }
        for (i, r) in DropReason::ALL.into_iter().enumerate() {
            assert_eq!(drop_index(r), i, "{r}");
        }
    }

    /// Labels are metric label values: snake case ASCII, one per reason.
    #[test]
    fn labels_are_distinct_snake_case() {
        let pass = PassReason::ALL.map(PassReason::as_str);
        let drop = DropReason::ALL.map(DropReason::as_str);
        for labels in [&pass[..], &drop[..]] {
            let mut sorted = labels.to_vec();
            sorted.sort_unstable();
            sorted.dedup();
            assert_eq!(sorted.len(), labels.len(), "{labels:?}");
            for l in labels {
                assert!(
                    l.bytes()
                        .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_'),
                    "{l}"
                );
            }
        }
        assert_eq!(DropReason::BadUdpChecksum.to_string(), "bad_udp_checksum");
    }
}
