//! Per-client rate limiting in bounded memory, with time as an input.
//!
//! Each client (an IPv4 address, or an IPv6 prefix, /64 by default) has a
//! token bucket: `rate` tokens per second up to `burst`, one per request.
//! Buckets live in a fixed table indexed by a keyed hash of the client, so
//! memory does not grow with the number of clients and an attacker who does
//! not know the hash key cannot aim collisions. A collision gives the newcomer
//! a fresh bucket: under a flood of spoofed sources the limiter forgets and
//! lets through rather than block real clients.
//!
//! A refused client gets a RATE Kiss-o'-Death at most once per
//! `kiss_interval`; other refused requests are dropped, so a spoofed flood
//! cannot turn the server into a reflector of kisses either.

use core::net::IpAddr;

use siphasher::sip::SipHasher13;

/// Limits of a [`RateLimiter`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RateLimitConfig {
    /// Sustained requests per second per client.
    pub rate: f64,
    /// Requests a client may send at once after being idle.
    pub burst: f64,
    /// Shortest time between two RATE kisses to one client, in nanoseconds.
    pub kiss_interval_ns: u64,
    /// Buckets in the table (rounded up to a power of two, at least 1).
    pub table_size: usize,
    /// Leading bits of an IPv6 address that identify a client.
    pub ipv6_prefix_len: u8,
}

impl Default for RateLimitConfig {
    /// One request per 2 s sustained with bursts of 16 (chrony's default
    /// `ratelimit interval 1 burst 16` is similar), one kiss per 4 s,
    /// 65536 buckets (3 MiB), IPv6 clients by /64.
    fn default() -> Self {
        Self {
            rate: 0.5,
            burst: 16.0,
            kiss_interval_ns: 4_000_000_000,
            table_size: 1 << 16,
            ipv6_prefix_len: 64,
        }
    }
}

/// The limiter's answer for one request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RateVerdict {
    /// Answer it.
    Allow,
    /// Answer with a RATE Kiss-o'-Death.
    Kiss,
    /// Drop it.
    Drop,
}

#[derive(Debug, Clone, Copy, Default)]
struct Bucket {
    /// The client, with a tag bit for the address family; 0 for an empty slot.
    client: u128,
    tokens: f64,
    last_ns: u64,
    last_kiss_ns: Option<u64>,
}

/// Token buckets per client in a fixed-size table.
#[derive(Debug, Clone)]
pub struct RateLimiter {
    config: RateLimitConfig,
    buckets: Vec<Bucket>,
    hasher: SipHasher13,
}

impl RateLimiter {
    /// A limiter with `config`; `hash_key` must be random and secret (it keeps
    /// attackers from choosing colliding addresses).
    #[must_use]
    pub fn new(config: RateLimitConfig, hash_key: [u8; 16]) -> Self {
        let size = config.table_size.clamp(1, 1 << 24).next_power_of_two();
        Self {
            config,
            buckets: vec![Bucket::default(); size],
            hasher: SipHasher13::new_with_key(&hash_key),
        }
    }

    /// Bytes of bucket memory, fixed at construction.
    #[must_use]
    pub fn memory_bytes(&self) -> usize {
        self.buckets.len() * core::mem::size_of::<Bucket>()
    }

    /// Accounts a request from `client` at `now_ns` (any monotonic clock in
    /// nanoseconds) and says what to do with it.
    pub fn check(&mut self, client: IpAddr, now_ns: u64) -> RateVerdict {
        let id = self.client_id(client);
        let index = (self.hasher.hash(&id.to_le_bytes()) as usize) & (self.buckets.len() - 1);
        let config = self.config;
        let Some(bucket) = self.buckets.get_mut(index) else {
            return RateVerdict::Allow;
        };
        if bucket.client != id {
            *bucket = Bucket {
                client: id,
                tokens: config.burst,
                last_ns: now_ns,
                last_kiss_ns: None,
            };
        }
        // A clock that went backwards adds nothing.
        let elapsed_s = now_ns.saturating_sub(bucket.last_ns) as f64 / 1e9;
        bucket.tokens = (bucket.tokens + elapsed_s * config.rate).min(config.burst);
        bucket.last_ns = bucket.last_ns.max(now_ns);
        if bucket.tokens >= 1.0 {
            bucket.tokens -= 1.0;
            return RateVerdict::Allow;
        }
        let kiss_due = bucket
            .last_kiss_ns
            .is_none_or(|last| now_ns.saturating_sub(last) >= config.kiss_interval_ns);
        if kiss_due {
            bucket.last_kiss_ns = Some(now_ns);
            RateVerdict::Kiss
        } else {
            RateVerdict::Drop
        }
    }

    /// The client's identity: the IPv4 address, or the IPv6 prefix, with the
    /// top bit telling the two apart (so that no client is 0, the empty slot).
    fn client_id(&self, client: IpAddr) -> u128 {
        const FAMILY_V4: u128 = 1 << 127;
        const FAMILY_V6: u128 = 1 << 126;
        match client {
            IpAddr::V4(v4) => FAMILY_V4 | u128::from(u32::from(v4)),
            IpAddr::V6(v6) => {
                let bits = u128::from(v6);
                let prefix = u32::from(self.config.ipv6_prefix_len.min(128));
                let masked = bits.checked_shr(128 - prefix).unwrap_or(0);
                // Shifted down so the tag bits above stay free.
                FAMILY_V6 | (masked & (FAMILY_V6 - 1))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use core::net::{Ipv4Addr, Ipv6Addr};

    const SEC: u64 = 1_000_000_000;

    fn limiter(table_size: usize) -> RateLimiter {
        RateLimiter::new(
            RateLimitConfig {
                rate: 1.0,
                burst: 3.0,
                kiss_interval_ns: 10 * SEC,
                table_size,
                ipv6_prefix_len: 64,
            },
            [7; 16],
        )
    }

    #[test]
    fn bursts_then_kisses_once_then_drops_then_recovers() {
        let mut l = limiter(1024);
        let a = IpAddr::V4(Ipv4Addr::new(192, 0, 2, 1));
        let t0 = 100 * SEC;
        let verdicts: Vec<RateVerdict> = (0..6).map(|_| l.check(a, t0)).collect();
        assert_eq!(
            verdicts,
            [
                RateVerdict::Allow,
                RateVerdict::Allow,
                RateVerdict::Allow,
                RateVerdict::Kiss,
                RateVerdict::Drop,
                RateVerdict::Drop
            ]
        );
        // One token per second comes back.
        assert_eq!(l.check(a, t0 + SEC), RateVerdict::Allow);
        assert_eq!(l.check(a, t0 + SEC), RateVerdict::Drop);
        assert_eq!(l.check(a, t0 + 11 * SEC), RateVerdict::Allow);
        // Another client is not affected.
        assert_eq!(
            l.check(IpAddr::V4(Ipv4Addr::new(192, 0, 2, 2)), t0),
            RateVerdict::Allow
        );
    }

    #[test]
    fn ipv6_clients_share_a_bucket_per_64_prefix() {
        let mut l = limiter(1024);
        let a: Ipv6Addr = "2001:db8:1:2::1".parse().expect("addr");
        let b: Ipv6Addr = "2001:db8:1:2::ffff".parse().expect("addr");
        let c: Ipv6Addr = "2001:db8:1:3::1".parse().expect("addr");
        for _ in 0..3 {
            assert_eq!(l.check(IpAddr::V6(a), 0), RateVerdict::Allow);
        }
        assert_eq!(l.check(IpAddr::V6(b), 0), RateVerdict::Kiss);
        assert_eq!(l.check(IpAddr::V6(c), 0), RateVerdict::Allow);
    }

    #[test]
    fn memory_is_fixed_and_backwards_time_is_harmless() {
        let mut l = limiter(1000);
        let before = l.memory_bytes();
        for i in 0..100_000u32 {
            l.check(IpAddr::V4(Ipv4Addr::from(i)), u64::from(i));
        }
        assert_eq!(l.memory_bytes(), before);
        assert_eq!(l.buckets.len(), 1024);
        let a = IpAddr::V4(Ipv4Addr::LOCALHOST);
        let mut tiny = limiter(1);
        for _ in 0..3 {
            assert_eq!(tiny.check(a, 50 * SEC), RateVerdict::Allow);
        }
        assert_eq!(tiny.check(a, 10 * SEC), RateVerdict::Kiss);
        assert_eq!(tiny.check(a, 0), RateVerdict::Drop);
    }
}
