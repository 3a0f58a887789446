//! Per-client limits on NTS-KE connections, in bounded memory, with time as an input.
//!
//! Each client (an IPv4 address, or an IPv6 prefix, /64 by default) has a token
//! bucket for handshakes (`rate` per second up to `burst`, one per accepted
//! connection) and a count of its connections open now, capped at
//! `max_connections`. The server asks [`ClientLimiter::admit`] right after
//! `accept()`, before any TLS work, and hands the [`ClientTicket`] back through
//! [`ClientLimiter::release`] when the connection ends.
//!
//! Clients live in a fixed table of 4-way sets indexed by a keyed hash of the
//! client (the caller's [`BuildHasher`]: a random one in the server, so that an
//! attacker cannot aim collisions). A newcomer takes an empty way, else the
//! least recently seen client without open connections, else, when all four
//! hold open connections, the least recently seen one: that client is forgotten
//! (its bucket and count start over, and its tickets no longer count). A full
//! table thus errs on letting through, like the NTP rate limiter; connections
//! open at once are bounded anyway by the server's global cap.
//!
//! A pool member's load balancers are not clients: every pool client's NTS-KE reaches
//! the member from the balancer's few addresses. A source that presented a valid pool
//! token is [`ClientLimiter::trust`]ed for [`TRUST_NS`] (renewed by each authenticated
//! request); while trusted, its connections skip the bucket and the connection cap
//! (the server's global cap still holds). At most [`MAX_TRUSTED`] sources are trusted at
//! once, the one whose trust ends first making way for a newcomer.
//!
//! Reads no clock and opens no socket: the caller passes the peer address and a
//! monotonic `now` in nanoseconds.

use std::collections::hash_map::RandomState;
use std::hash::BuildHasher;
use std::net::IpAddr;

/// Ways per set of the table.
const WAYS: usize = 4;

/// How long a source stays trusted after its last authenticated pool request: an hour.
pub const TRUST_NS: u64 = 3_600 * 1_000_000_000;
/// Sources trusted at once (a pool's load balancers are a handful of addresses).
pub const MAX_TRUSTED: usize = 64;
/// The slot of a trusted source's tickets: none (releasing one changes nothing).
const TRUSTED_SLOT: usize = usize::MAX;
/// Largest table accepted (entries); about 48 bytes each.
pub const MAX_TABLE_SIZE: usize = 1 << 24;

/// Limits of a [`ClientLimiter`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ClientLimitConfig {
    /// Sustained handshakes (accepted connections) per second per client.
    pub rate: f64,
    /// Handshakes a client may start at once after being idle.
    pub burst: f64,
    /// Connections one client may hold open at once.
    pub max_connections: u32,
    /// Clients remembered (rounded up to a power of two, at least 4).
    pub table_size: usize,
    /// Leading bits of an IPv6 address that identify a client.
    pub ipv6_prefix_len: u8,
}

impl Default for ClientLimitConfig {
    /// One handshake per 5 s sustained with bursts of 16 (an honest client does
    /// one now and then, and a NAT may hide a few), 8 connections open at once,
    /// 16384 clients remembered (768 KiB), IPv6 clients by /64.
    fn default() -> Self {
        Self {
            rate: 0.2,
            burst: 16.0,
            max_connections: 8,
            table_size: 1 << 14,
            ipv6_prefix_len: 64,
        }
    }
}

/// What to do with a new connection.
#[derive(Debug, PartialEq, Eq)]
pub enum Admission {
    /// Serve it; give the ticket back with [`ClientLimiter::release`] when it ends.
    Accepted(ClientTicket),
    /// Close it: the client's handshake bucket is empty.
    RateLimited,
    /// Close it: the client holds `max_connections` connections already.
    TooManyFromSource,
}

/// An accepted connection's place in the table, to be released when it ends.
#[derive(Debug, PartialEq, Eq)]
#[must_use = "a ticket not released keeps counting as an open connection"]
pub struct ClientTicket {
    slot: usize,
    client: u128,
}

#[derive(Debug, Clone, Copy, Default)]
struct Slot {
    /// The client, with a tag bit for the address family; 0 for an empty slot.
    client: u128,
    tokens: f64,
    last_ns: u64,
    open: u32,
}

/// Handshake buckets and open-connection counts per client in a fixed table.
#[derive(Debug, Clone)]
pub struct ClientLimiter<S = RandomState> {
    config: ClientLimitConfig,
    slots: Vec<Slot>,
    hasher: S,
    /// Trusted sources (client id) and when their trust ends.
    trusted: Vec<(u128, u64)>,
}

impl<S: BuildHasher> ClientLimiter<S> {
    /// A limiter of `config`; `hasher` should be randomly keyed
    /// ([`RandomState::new`]) so that collisions cannot be aimed.
    #[must_use]
    pub fn new(config: ClientLimitConfig, hasher: S) -> Self {
        let size = config
            .table_size
            .clamp(WAYS, MAX_TABLE_SIZE)
            .next_power_of_two();
        Self {
            config,
            slots: vec![Slot::default(); size],
            hasher,
            trusted: Vec::new(),
        }
    }

    /// Bytes of table memory, fixed at construction.
    #[must_use]
    pub fn memory_bytes(&self) -> usize {
        self.slots.len() * std::mem::size_of::<Slot>()
    }

    /// Accounts a new connection from `peer` at `now_ns` (any monotonic clock in
    /// nanoseconds). A refused connection costs the client nothing.
    pub fn admit(&mut self, peer: IpAddr, now_ns: u64) -> Admission {
        let client = self.client_id(peer.to_canonical());
        if self.is_trusted(client, now_ns) {
            return Admission::Accepted(ClientTicket {
                slot: TRUSTED_SLOT,
                client,
            });
        }
        let config = self.config;
        let index = self.slot_for(client, now_ns);
        let slot = &mut self.slots[index];
        // A clock that went backwards adds nothing.
        let elapsed_s = now_ns.saturating_sub(slot.last_ns) as f64 / 1e9;
        slot.tokens = (slot.tokens + elapsed_s * config.rate).min(config.burst);
        slot.last_ns = slot.last_ns.max(now_ns);
        if slot.tokens < 1.0 {
            return Admission::RateLimited;
        }
        if slot.open >= config.max_connections {
            return Admission::TooManyFromSource;
        }
        slot.tokens -= 1.0;
        slot.open += 1;
        Admission::Accepted(ClientTicket {
            slot: index,
            client,
        })
    }

    /// Ends an accepted connection. A ticket whose client was forgotten since
    /// changes nothing.
    pub fn release(&mut self, ticket: ClientTicket) {
        if let Some(slot) = self.slots.get_mut(ticket.slot)
            && slot.client == ticket.client
        {
            slot.open = slot.open.saturating_sub(1);
        }
    }

    /// Trusts `peer` (its address, or its IPv6 prefix) for [`TRUST_NS`] from `now_ns`:
    /// the server calls this when the peer presented a valid pool token. When
    /// [`MAX_TRUSTED`] sources are trusted already, the one whose trust ends first is
    /// dropped.
    pub fn trust(&mut self, peer: IpAddr, now_ns: u64) {
        let client = self.client_id(peer.to_canonical());
        let until = now_ns.saturating_add(TRUST_NS);
        self.trusted.retain(|&(_, end)| end > now_ns);
        if let Some(entry) = self.trusted.iter_mut().find(|(c, _)| *c == client) {
            entry.1 = until;
            return;
        }
        if self.trusted.len() >= MAX_TRUSTED
            && let Some(first_to_end) = (0..self.trusted.len()).min_by_key(|&i| self.trusted[i].1)
        {
            self.trusted.swap_remove(first_to_end);
        }
        self.trusted.push((client, until));
    }

    /// Whether `peer` is trusted at `now_ns`.
    #[must_use]
    pub fn is_trusted_peer(&self, peer: IpAddr, now_ns: u64) -> bool {
        self.is_trusted(self.client_id(peer.to_canonical()), now_ns)
    }

    fn is_trusted(&self, client: u128, now_ns: u64) -> bool {
        self.trusted
            .iter()
            .any(|&(c, end)| c == client && end > now_ns)
    }

    /// Connections `peer` holds open, as far as the table remembers.
    #[must_use]
    pub fn open_connections(&self, peer: IpAddr) -> u32 {
        let client = self.client_id(peer.to_canonical());
        let base = self.set_base(client);
        self.slots[base..base + WAYS]
            .iter()
            .find(|s| s.client == client)
            .map_or(0, |s| s.open)
    }

    fn set_base(&self, client: u128) -> usize {
        let sets = self.slots.len() / WAYS;
        (self.hasher.hash_one(client) as usize & (sets - 1)) * WAYS
    }

    /// The slot of `client`, claimed for it (with a full bucket) if it had none.
    fn slot_for(&mut self, client: u128, now_ns: u64) -> usize {
        let base = self.set_base(client);
        let set = &self.slots[base..base + WAYS];
        if let Some(way) = set.iter().position(|s| s.client == client) {
            return base + way;
        }
        // Empty first, then idle by age, then busy by age.
        let way = (0..WAYS)
            .min_by_key(|&w| {
                let s = &set[w];
                (s.client != 0, s.open > 0, s.last_ns)
            })
            .unwrap_or(0);
        self.slots[base + way] = Slot {
            client,
            tokens: self.config.burst,
            last_ns: now_ns,
            open: 0,
        };
        base + way
    }

    /// The client's identity: the IPv4 address, or the IPv6 prefix, with the
    /// top bits telling the two apart (so that no client is 0, the empty slot).
    fn client_id(&self, peer: IpAddr) -> u128 {
        const FAMILY_V4: u128 = 1 << 127;
        const FAMILY_V6: u128 = 1 << 126;
        match peer {
            IpAddr::V4(v4) => FAMILY_V4 | u128::from(u32::from(v4)),
            IpAddr::V6(v6) => {
                let prefix = u32::from(self.config.ipv6_prefix_len.min(128));
                let masked = u128::from(v6).checked_shr(128 - prefix).unwrap_or(0);
                FAMILY_V6 | (masked & (FAMILY_V6 - 1))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::hash::{BuildHasherDefault, DefaultHasher};
    use std::net::Ipv4Addr;

    const SEC: u64 = 1_000_000_000;

    type Fixed = BuildHasherDefault<DefaultHasher>;

    fn limiter(
        rate: f64,
        burst: f64,
        max_connections: u32,
        table_size: usize,
    ) -> ClientLimiter<Fixed> {
        ClientLimiter::new(
            ClientLimitConfig {
                rate,
                burst,
                max_connections,
                table_size,
                ipv6_prefix_len: 64,
            },
            Fixed::default(),
        )
    }

    fn ip(text: &str) -> IpAddr {
        text.parse().expect("address")
    }

    fn accept(l: &mut ClientLimiter<Fixed>, peer: IpAddr, now: u64) -> ClientTicket {
        match l.admit(peer, now) {
            Admission::Accepted(t) => t,
            other => panic!("{peer} at {now}: {other:?}"),
        }
    }

    #[test]
    fn a_trusted_load_balancer_skips_the_bucket_and_the_cap_until_its_trust_ends() {
        let mut l = limiter(0.2, 2.0, 2, 64);
        let kelb = ip("192.0.2.9");
        let other = ip("192.0.2.10");
        let t0 = 10 * SEC;
        let held: Vec<_> = (0..2).map(|_| accept(&mut l, kelb, t0)).collect();
        assert_eq!(l.admit(kelb, t0), Admission::RateLimited);
        l.trust(kelb, t0);
        assert!(l.is_trusted_peer(kelb, t0) && !l.is_trusted_peer(other, t0));
        // Far over the bucket and the cap: all admitted, none counted.
        let many: Vec<_> = (0..100).map(|_| accept(&mut l, kelb, t0 + SEC)).collect();
        for t in many {
            l.release(t);
        }
        assert_eq!(l.open_connections(kelb), 2);
        // Another source is limited as before.
        for _ in 0..2 {
            let t = accept(&mut l, other, t0);
            l.release(t);
        }
        assert_eq!(l.admit(other, t0), Admission::RateLimited);
        // Trust ends an hour after the last authenticated request, renewed by each.
        l.trust(kelb, t0 + TRUST_NS / 2);
        assert!(l.is_trusted_peer(kelb, t0 + TRUST_NS));
        assert!(!l.is_trusted_peer(kelb, t0 + TRUST_NS / 2 + TRUST_NS));
        // Then it is a client again: its two held connections fill its cap.
        assert_eq!(
            l.admit(kelb, t0 + 2 * TRUST_NS),
            Admission::TooManyFromSource
        );
        for t in held {
            l.release(t);
        }
        let t = accept(&mut l, kelb, t0 + 2 * TRUST_NS);
        l.release(t);
    }

    #[test]
    fn trust_is_bounded_and_the_first_to_end_makes_way() {
        let mut l = limiter(0.2, 2.0, 2, 64);
        for i in 0..MAX_TRUSTED as u64 {
            let peer = IpAddr::V4(Ipv4Addr::from(0xc000_0200 + i as u32));
            l.trust(peer, i * SEC);
        }
        let first = IpAddr::V4(Ipv4Addr::from(0xc000_0200));
        let second = IpAddr::V4(Ipv4Addr::from(0xc000_0201));
        let newcomer = ip("198.51.100.1");
        l.trust(newcomer, 100 * SEC);
        assert!(!l.is_trusted_peer(first, 100 * SEC));
        assert!(l.is_trusted_peer(second, 100 * SEC));
        assert!(l.is_trusted_peer(newcomer, 100 * SEC));
    }

    #[test]
    fn the_burst_is_spent_then_the_rate_refills_it() {
        let mut l = limiter(2.0, 3.0, 100, 64);
        let a = ip("192.0.2.1");
        let t0 = 50 * SEC;
        for _ in 0..3 {
            let t = accept(&mut l, a, t0);
            l.release(t);
        }
        assert_eq!(l.admit(a, t0), Admission::RateLimited);
        // Refusals cost nothing: half a second later one token is back.
        assert_eq!(l.admit(a, t0 + SEC / 4), Admission::RateLimited);
        let t = accept(&mut l, a, t0 + SEC / 2);
        l.release(t);
        assert_eq!(l.admit(a, t0 + SEC / 2), Admission::RateLimited);
        // Idle for long: the bucket refills to the burst, not beyond.
        let later = t0 + 100 * SEC;
        for _ in 0..3 {
            let t = accept(&mut l, a, later);
            l.release(t);
        }
        assert_eq!(l.admit(a, later), Admission::RateLimited);
        // Other clients are not affected, and time going backwards adds nothing.
        let t = accept(&mut l, ip("192.0.2.2"), t0);
        l.release(t);
        assert_eq!(l.admit(a, t0), Admission::RateLimited);
    }

    #[test]
    fn open_connections_per_client_are_capped_and_released() {
        let mut l = limiter(1000.0, 1000.0, 2, 64);
        let a = ip("198.51.100.7");
        let first = accept(&mut l, a, 0);
        let second = accept(&mut l, a, 0);
        assert_eq!(l.admit(a, 0), Admission::TooManyFromSource);
        assert_eq!(l.open_connections(a), 2);
        let other = accept(&mut l, ip("198.51.100.8"), 0);
        l.release(other);
        l.release(first);
        let third = accept(&mut l, a, 0);
        assert_eq!(l.admit(a, 0), Admission::TooManyFromSource);
        l.release(second);
        l.release(third);
        assert_eq!(l.open_connections(a), 0);
    }

    #[test]
    fn ipv6_clients_are_grouped_by_prefix_and_mapped_ipv4_is_ipv4() {
        let mut l = limiter(1.0, 2.0, 100, 64);
        let _ = accept(&mut l, ip("2001:db8:1:2::1"), 0);
        let _ = accept(&mut l, ip("2001:db8:1:2:ffff::9"), 0);
        assert_eq!(l.admit(ip("2001:db8:1:2::3"), 0), Admission::RateLimited);
        let _ = accept(&mut l, ip("2001:db8:1:3::1"), 0);
        let _ = accept(&mut l, ip("192.0.2.9"), 0);
        let _ = accept(&mut l, ip("::ffff:192.0.2.9"), 0);
        assert_eq!(l.admit(ip("192.0.2.9"), 0), Admission::RateLimited);
        // A /48 grouping puts the two /64s together.
        let mut wide = ClientLimiter::new(
            ClientLimitConfig {
                ipv6_prefix_len: 48,
                ..l.config
            },
            Fixed::default(),
        );
        let _ = accept(&mut wide, ip("2001:db8:1:2::1"), 0);
        let _ = accept(&mut wide, ip("2001:db8:1:3::1"), 0);
        assert_eq!(wide.admit(ip("2001:db8:1:4::1"), 0), Admission::RateLimited);
    }

    #[test]
    fn a_full_table_keeps_its_size_and_forgets_rather_than_blocks() {
        let mut l = limiter(0.001, 1.0, 1, 4);
        assert_eq!(l.slots.len(), 4, "one set of four ways");
        let before = l.memory_bytes();
        // Four clients with an open connection each fill the only set.
        let held: Vec<ClientTicket> = (1..=4u8)
            .map(|i| accept(&mut l, IpAddr::from([10, 0, 0, i]), u64::from(i)))
            .collect();
        // A fifth takes the way of the least recently seen one (10.0.0.1),
        // which is forgotten: its old ticket no longer counts, and it comes
        // back with a fresh bucket.
        let fifth = accept(&mut l, ip("10.0.0.5"), 10);
        assert_eq!(l.open_connections(ip("10.0.0.1")), 0);
        let mut held = held.into_iter();
        l.release(held.next().expect("ticket of 10.0.0.1"));
        assert_eq!(l.open_connections(ip("10.0.0.5")), 1);
        // An idle client goes before a busy one, however recent.
        l.release(fifth);
        let _ = accept(&mut l, ip("10.0.0.6"), 20);
        assert_eq!(l.open_connections(ip("10.0.0.2")), 1, "busy 10.0.0.2 kept");
        assert_eq!(l.admit(ip("10.0.0.2"), 20), Admission::RateLimited);
        // Many more clients: the memory does not move.
        for i in 0..100_000u32 {
            let _ = l.admit(IpAddr::V4(Ipv4Addr::from(i)), u64::from(i));
        }
        assert_eq!(l.memory_bytes(), before);
        let big = limiter(1.0, 1.0, 1, 1000);
        assert_eq!(big.slots.len(), 1024);
    }
}
