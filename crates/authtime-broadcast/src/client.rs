//! The broadcast client's decisions, sans-IO: which authenticated packets
//! give time, and what time.
//!
//! # What a sample means
//!
//! A broadcast packet sent at sender time `tx` and received at local time `a`
//! proves `offset = sender - local >= tx - a` (the sender's clock had reached
//! `tx` before the packet could arrive). A delayed packet gives a *lower*,
//! still true, bound. The bootstrap (direct time synchronisation) gave the
//! other side: `offset <= t_s - t_R` plus drift ([`ClockBound`]), and
//! `offset >= t_s - t_r` (`t_r` the arrival of the response).
//!
//! The client keeps the largest of the last [`ClientConfig::window`]
//! accepted samples (a minimum-delay filter) as its estimate, so its error is
//! at most `upper bound - estimate`, which it reports.
//!
//! # The delay attack (Teichel, Sibold, Milius, ICISS 2016)
//!
//! In TESLA-protected one-way time, the safety condition is evaluated on the
//! receiver's clock, and the receiver's clock is what the protocol sets. An
//! attacker who delays packets (within the safety margin) makes the receiver
//! move its clock back; a clock that is behind judges later packets safe
//! that are not, so the attacker can delay more, step by step, until packets
//! whose keys are already public pass the check and can be forged.
//!
//! What this client does about it:
//! - The safety condition runs on a local monotonic clock that the protocol
//!   never sets, against the bound from the signed bootstrap (plus drift):
//!   the feedback loop the attack needs does not exist.
//! - A sample above the bootstrap's upper bound is refused
//!   ([`Rejection::AboveBound`]): it contradicts the signed bootstrap.
//! - A sample that moves the estimate by more than
//!   [`ClientConfig::max_step_ns`] is refused ([`Rejection::StepTooLarge`]):
//!   a bound on the accepted offset change.
//! - Delays only lower samples, and the estimate is the largest recent
//!   sample, so an attacker must delay *every* packet of a window to move the
//!   estimate, and then only by what the TESLA safety margin lets through
//!   (about `d * T_int` plus the bootstrap round trip): the reported
//!   uncertainty covers it.
//! - Re-bootstrapping (a fresh direct sync) renews the bound, and a unicast
//!   NTS exchange can cross-check it; both are the caller's to schedule.

use std::collections::{HashMap, VecDeque};

use authtime_tesla::{ClockBound, Delivered, Own, Receiver, Status, Time};
use authtime_wire::{NtpTimestamp, UnixTime};

use crate::wire::{self, Unverified};

/// Limits of the client.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ClientConfig {
    /// Largest change of the estimate one sample may cause (default 50 ms).
    pub max_step_ns: u64,
    /// Samples the minimum-delay filter looks at (default 8).
    pub window: usize,
    /// Arrival times kept for packets awaiting their key (default 4096).
    pub max_pending: usize,
}

impl Default for ClientConfig {
    fn default() -> Self {
        Self {
            max_step_ns: 50_000_000,
            window: 8,
            max_pending: 4096,
        }
    }
}

/// What the bootstrap established.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Bootstrap {
    /// The bound on the sender's clock (its `offset_ns` is the upper bound on
    /// `sender - local` at `reference`).
    pub bound: ClockBound,
    /// Lower bound on `sender - local` (the signed sender time minus the
    /// response's arrival).
    pub lower_offset_ns: i64,
}

/// Why an authenticated sample gave no time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rejection {
    /// The sample is above the bootstrap's upper bound on the offset.
    AboveBound,
    /// The sample differs from the estimate by more than the allowed step.
    StepTooLarge,
    /// The arrival time of the packet was not remembered.
    NoArrival,
    /// The authenticated header says the sender's clock is unsynchronized
    /// (leap indicator 3, stratum 0, or stratum 16 and above).
    Unsynchronized,
}

/// One authenticated broadcast packet and what the client made of it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sample {
    /// `tx - arrival`, a lower bound on `sender - local`, in ns.
    pub offset_ns: i64,
    /// Accepted, or why not.
    pub verdict: Result<(), Rejection>,
}

/// Counters.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ClientStats {
    /// Datagrams that were not TESLA broadcast packets.
    pub undecodable: u64,
    /// Authenticated samples accepted.
    pub accepted: u64,
    /// Authenticated samples above the bootstrap bound.
    pub above_bound: u64,
    /// Authenticated samples refused by the step limit.
    pub step_too_large: u64,
    /// Packets dropped by the TESLA safety condition.
    pub unsafe_dropped: u64,
    /// Packets that failed TESLA authentication (bad MAC or key, replay).
    pub failed: u64,
    /// Authenticated samples from a sender that says it is unsynchronized.
    pub unsynchronized: u64,
}

/// The client: a bootstrapped TESLA receiver plus the time logic.
#[derive(Debug)]
pub struct BroadcastClient {
    receiver: Receiver,
    bootstrap: Bootstrap,
    config: ClientConfig,
    arrivals: HashMap<(u32, [u8; 8]), Time>,
    order: VecDeque<(u32, [u8; 8])>,
    window: VecDeque<i64>,
    estimate: Option<i64>,
    reference_unix_secs: i64,
    stats: ClientStats,
}

impl BroadcastClient {
    /// A client from a bootstrapped receiver. `sender_unix_secs` is the signed
    /// sender time of the bootstrap in Unix seconds (it resolves NTP eras).
    #[must_use]
    pub fn new(
        receiver: Receiver,
        bootstrap: Bootstrap,
        config: ClientConfig,
        sender_unix_secs: i64,
    ) -> Self {
        Self {
            receiver,
            bootstrap,
            config,
            arrivals: HashMap::new(),
            order: VecDeque::new(),
            window: VecDeque::new(),
            estimate: None,
            reference_unix_secs: sender_unix_secs,
            stats: ClientStats::default(),
        }
    }

    /// The current estimate of `sender - local` in ns, if any sample was accepted.
    #[must_use]
    pub fn offset_ns(&self) -> Option<i64> {
        self.estimate
    }

    /// Upper bound on the offset at local time `local` (bootstrap bound plus drift).
    #[must_use]
    pub fn upper_bound_ns(&self, local: Time) -> i64 {
        let hi = self.bootstrap.bound.sender_time_upper_bound(local) - i128::from(local.0);
        i64::try_from(hi).unwrap_or(i64::MAX)
    }

    /// How far the estimate may be from the truth at `local`: upper bound minus estimate.
    #[must_use]
    pub fn uncertainty_ns(&self, local: Time) -> Option<u64> {
        self.estimate
            .map(|e| self.upper_bound_ns(local).saturating_sub(e).unsigned_abs())
    }

    /// Counters.
    #[must_use]
    pub fn stats(&self) -> ClientStats {
        self.stats
    }

    /// The TESLA receiver.
    #[must_use]
    pub fn receiver(&self) -> &Receiver {
        &self.receiver
    }

    /// Handles one datagram received at local (monotonic) time `now`; returns
    /// the samples of the packets it authenticated.
    pub fn handle(&mut self, datagram: &[u8], now: Time) -> Vec<Sample> {
        let tag_len = usize::from(self.receiver.params().tag_len);
        let Ok(Unverified {
            header,
            tesla_packet,
        }) = wire::decode(datagram, tag_len)
        else {
            self.stats.undecodable += 1;
            return Vec::new();
        };
        let status = self.receiver.handle(&tesla_packet, now);
        let (released, own) = match status {
            Status::Authenticated {
                released,
                mac_failures,
                own,
            } => {
                self.stats.failed += u64::from(mac_failures);
                (released, own)
            }
            Status::Waiting => (Vec::new(), Own::Buffered),
            Status::NoPayload => (Vec::new(), Own::NoPayload),
            Status::DroppedUnsafe => (Vec::new(), Own::Unsafe),
            Status::Failed(f) => (Vec::new(), Own::Rejected(f)),
        };
        match own {
            Own::Buffered => {
                // The copy the receiver buffered is the one it will release;
                // a later buffered copy (a forgery's twin) overwrites, which
                // can only lower the sample.
                self.remember(
                    header.transmit_ts,
                    tesla_packet_interval(&tesla_packet),
                    now,
                );
            }
            Own::Unsafe => self.stats.unsafe_dropped += 1,
            Own::Rejected(_) => self.stats.failed += 1,
            Own::NoPayload => {}
        }
        released.iter().map(|d| self.sample(d)).collect()
    }

    fn remember(&mut self, tx: NtpTimestamp, interval: u32, now: Time) {
        let key = (interval, tx.to_bits().to_be_bytes());
        if self.arrivals.insert(key, now).is_none() {
            self.order.push_back(key);
        }
        while self.order.len() > self.config.max_pending {
            if let Some(old) = self.order.pop_front() {
                self.arrivals.remove(&old);
            }
        }
    }

    fn sample(&mut self, delivered: &Delivered) -> Sample {
        let tx_bits = delivered
            .payload
            .get(40..48)
            .and_then(|b| <[u8; 8]>::try_from(b).ok())
            .unwrap_or_default();
        let key = (delivered.interval, tx_bits);
        let Some(arrival) = self.arrivals.remove(&key) else {
            return Sample {
                offset_ns: 0,
                verdict: Err(Rejection::NoArrival),
            };
        };
        let tx = NtpTimestamp::from_bits(u64::from_be_bytes(tx_bits));
        let tx_ns: UnixTime = tx.to_unix_near(self.reference_unix_secs);
        let offset = i64::try_from(tx_ns.as_nanos() - i128::from(arrival.0)).unwrap_or(i64::MIN);
        let leap = delivered.payload.first().map_or(3, |b| b >> 6);
        let stratum = delivered.payload.get(1).copied().unwrap_or(0);
        let verdict = if leap == 3 || stratum == 0 || stratum >= 16 {
            Err(Rejection::Unsynchronized)
        } else {
            self.judge(offset, arrival)
        };
        match verdict {
            Ok(()) => {
                self.stats.accepted += 1;
                self.window.push_back(offset);
                while self.window.len() > self.config.window.max(1) {
                    self.window.pop_front();
                }
                self.estimate = self.window.iter().copied().max();
            }
            Err(Rejection::AboveBound) => self.stats.above_bound += 1,
            Err(Rejection::StepTooLarge) => self.stats.step_too_large += 1,
            Err(Rejection::Unsynchronized) => self.stats.unsynchronized += 1,
            Err(Rejection::NoArrival) => {}
        }
        Sample {
            offset_ns: offset,
            verdict,
        }
    }

    fn judge(&self, offset: i64, arrival: Time) -> Result<(), Rejection> {
        if offset > self.upper_bound_ns(arrival) {
            return Err(Rejection::AboveBound);
        }
        let reference = self.estimate.unwrap_or(self.bootstrap.lower_offset_ns);
        if offset.abs_diff(reference) > self.config.max_step_ns {
            return Err(Rejection::StepTooLarge);
        }
        Ok(())
    }
}

fn tesla_packet_interval(tesla_packet: &[u8]) -> u32 {
    // header byte | NTP header (48) | i (4) | ...
    tesla_packet
        .get(49..53)
        .and_then(|b| <[u8; 4]>::try_from(b).ok())
        .map_or(0, u32::from_be_bytes)
}
