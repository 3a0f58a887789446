//! Counting what the server does, through a trait the daemon implements
//! (Prometheus counters there, plain numbers in tests).

use std::collections::BTreeMap;

use crate::DropReason;

/// Events of [`crate::Server`], one method each. Every method has an empty
/// default, so an implementation counts only what it needs. For each datagram
/// the server reports, in this order:
///
/// 1. `received`;
/// 2. `rate_limited`, when the rate limiter refused it;
/// 3. `mac_failure`, when its MAC failed or named an unknown key;
/// 4. either `crypto_nak` (if the reply is one) and `answered`, when a reply
///    was written, or `dropped`, when none was.
pub trait ServerStats {
    /// A datagram arrived.
    fn received(&mut self) {}
    /// A reply was written; `authenticated` when it carries a MAC.
    fn answered(&mut self, authenticated: bool) {
        let _ = authenticated;
    }
    /// A datagram was dropped, for `reason`.
    fn dropped(&mut self, reason: &DropReason) {
        let _ = reason;
    }
    /// A MAC under `key_id` failed, or named a key the server does not have.
    fn mac_failure(&mut self, key_id: u32) {
        let _ = key_id;
    }
    /// The reply is a crypto-NAK.
    fn crypto_nak(&mut self) {}
    /// The rate limiter refused the request (with a RATE kiss or a drop).
    fn rate_limited(&mut self) {}
}

/// Counts nothing.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoStats;

impl ServerStats for NoStats {}

/// Plain counters of every event, for tests and simple deployments.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ServerCounters {
    /// Datagrams received.
    pub received: u64,
    /// Replies written without a MAC.
    pub answered_plain: u64,
    /// Replies written with a MAC.
    pub answered_authenticated: u64,
    /// Drops by [`DropReason::counter_name`].
    pub dropped: BTreeMap<&'static str, u64>,
    /// MAC failures by key id.
    pub mac_failures: BTreeMap<u32, u64>,
    /// Crypto-NAKs sent.
    pub crypto_naks: u64,
    /// Requests the rate limiter refused.
    pub rate_limited: u64,
}

impl ServerCounters {
    /// Drops counted under `counter_name`.
    #[must_use]
    pub fn drops(&self, counter_name: &str) -> u64 {
        self.dropped.get(counter_name).copied().unwrap_or(0)
    }
}

impl ServerStats for ServerCounters {
    fn received(&mut self) {
        self.received += 1;
    }
    fn answered(&mut self, authenticated: bool) {
        if authenticated {
            self.answered_authenticated += 1;
        } else {
            self.answered_plain += 1;
        }
    }
    fn dropped(&mut self, reason: &DropReason) {
        *self.dropped.entry(reason.counter_name()).or_default() += 1;
    }
    fn mac_failure(&mut self, key_id: u32) {
        *self.mac_failures.entry(key_id).or_default() += 1;
    }
    fn crypto_nak(&mut self) {
        self.crypto_naks += 1;
    }
    fn rate_limited(&mut self) {
        self.rate_limited += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counters_add_up() {
        let mut c = ServerCounters::default();
        c.received();
        c.answered(true);
        c.answered(false);
        ServerStats::dropped(&mut c, &DropReason::BadMac { key_id: 3 });
        c.mac_failure(3);
        c.crypto_nak();
        c.rate_limited();
        assert_eq!(c.received, 1);
        assert_eq!((c.answered_plain, c.answered_authenticated), (1, 1));
        assert_eq!(c.drops("bad_mac"), 1);
        assert_eq!(c.drops("unknown_key"), 0);
        assert_eq!(c.mac_failures.get(&3), Some(&1));
        assert_eq!((c.crypto_naks, c.rate_limited), (1, 1));
        let mut n = NoStats;
        n.received();
        n.dropped(&DropReason::RateLimited);
    }
}
