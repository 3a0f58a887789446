//! The per-client rate limiter shared by every worker.
//!
//! `SO_REUSEPORT` spreads one client's requests over the workers by source
//! port, so per-worker limiters would let a client that changes ports through
//! at N times its rate. The proto crate's [`RateLimiter`] is split into
//! shards, each behind a mutex and picked by a keyed hash of the client, so two
//! workers rarely wait for one another.

use std::net::IpAddr;
use std::sync::Mutex;

use authtime_proto::{RateLimitConfig, RateLimiter, RateVerdict};
use siphasher::sip::SipHasher13;

/// Token buckets for every client, shared by the workers.
#[derive(Debug)]
pub struct ClientLimiter {
    shards: Box<[Mutex<RateLimiter>]>,
    hasher: SipHasher13,
    ipv6_prefix_len: u8,
}

impl ClientLimiter {
    /// A limiter of `config` in `shards` shards (rounded up to a power of
    /// two); the bucket table is divided among them. `hash_key` must be random
    /// and secret.
    #[must_use]
    pub fn new(config: RateLimitConfig, shards: usize, hash_key: [u8; 32]) -> Self {
        let count = shards.clamp(1, 1024).next_power_of_two();
        let (shard_key, table_key) = hash_key.split_at(16);
        let mut table_key_16 = [0u8; 16];
        table_key_16.copy_from_slice(table_key);
        let per_shard = RateLimitConfig {
            table_size: (config.table_size / count).max(1),
            ..config
        };
        Self {
            shards: (0..count)
                .map(|_| Mutex::new(RateLimiter::new(per_shard, table_key_16)))
                .collect(),
            hasher: SipHasher13::new_with_key(shard_key.try_into().unwrap_or(&[0; 16])),
            ipv6_prefix_len: config.ipv6_prefix_len,
        }
    }

    /// Accounts a request from `client` at `now_ns` (monotonic nanoseconds).
    pub fn check(&self, client: IpAddr, now_ns: u64) -> RateVerdict {
        let client = client.to_canonical();
        let shard =
            (self.hasher.hash(&self.shard_bytes(client)) as usize) & (self.shards.len() - 1);
        match self.shards.get(shard).map(Mutex::lock) {
            Some(Ok(mut limiter)) => limiter.check(client, now_ns),
            // A worker panicked while holding the lock: answer rather than
            // stop serving.
            _ => RateVerdict::Allow,
        }
    }

    /// The bytes that identify the client's shard: its IPv4 address, or its
    /// IPv6 prefix (so that every address of one client shares a bucket).
    fn shard_bytes(&self, client: IpAddr) -> [u8; 17] {
        let mut bytes = [0u8; 17];
        match client {
            IpAddr::V4(v4) => bytes[..4].copy_from_slice(&v4.octets()),
            IpAddr::V6(v6) => {
                let prefix = u32::from(self.ipv6_prefix_len.min(128));
                let mask = u128::MAX.checked_shl(128 - prefix).unwrap_or(0);
                bytes[..16].copy_from_slice(&(u128::from(v6) & mask).to_be_bytes());
                bytes[16] = 6;
            }
        }
        bytes
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_client_is_limited_whatever_its_shard_and_others_are_not() {
        let config = RateLimitConfig {
            rate: 1.0,
            burst: 2.0,
            kiss_interval_ns: 1_000_000_000,
            table_size: 1024,
            ipv6_prefix_len: 64,
        };
        let limiter = ClientLimiter::new(config, 8, [9; 32]);
        let a: IpAddr = "192.0.2.1".parse().expect("addr");
        let verdicts: Vec<_> = (0..4).map(|_| limiter.check(a, 0)).collect();
        assert_eq!(
            verdicts,
            [
                RateVerdict::Allow,
                RateVerdict::Allow,
                RateVerdict::Kiss,
                RateVerdict::Drop
            ]
        );
        // The mapped form of the same client shares its bucket.
        let mapped: IpAddr = "::ffff:192.0.2.1".parse().expect("addr");
        assert_eq!(limiter.check(mapped, 0), RateVerdict::Drop);
        for i in 0..50u8 {
            let other = IpAddr::from([198, 51, 100, i]);
            assert_eq!(limiter.check(other, 0), RateVerdict::Allow);
        }
        // Two addresses of one /64 are one client.
        let b: IpAddr = "2001:db8::1".parse().expect("addr");
        let c: IpAddr = "2001:db8::2".parse().expect("addr");
        assert_eq!(limiter.check(b, 0), RateVerdict::Allow);
        assert_eq!(limiter.check(c, 0), RateVerdict::Allow);
        assert_eq!(limiter.check(b, 0), RateVerdict::Kiss);
    }
}
