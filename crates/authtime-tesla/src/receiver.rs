//! The TESLA receiver: safety check, bounded buffer, key verification, release.
//!
//! For each data or key-disclosure packet, [`Receiver::handle`]:
//! 1. computes `x`, the latest interval the sender can be in now (the clock bound);
//! 2. checks the disclosed key `K_{i-d}` against the newest authenticated key
//!    by applying `F` (at most `max_key_steps` times), and on success releases
//!    the buffered packets of the intervals it authenticates;
//! 3. buffers the packet's own payload if it is safe (`x < i + d`), plausible
//!    (`i <= x`: the sender cannot be past its own clock) and new; when the
//!    buffer is full, a buffered packet chosen at random is evicted to make
//!    room ([`Stats::evicted`]).
//!
//! A genuine key that, by the clock bound, the sender could not have disclosed
//! yet (`x < g + d`) proves the bound wrong: every safety decision made with it
//! is void, so the receiver refuses everything from then on until a new
//! bootstrap ([`Failure::ClockBoundViolated`]). Keys claiming to be that early
//! are only checked within [`EARLY_KEY_MAX_STEPS`] applications of `F`, so
//! forged ones cost little.
//!
//! Replays are found by hashed lookups (a buffered datagram byte for byte, a
//! delivered one by interval and tag), so each packet costs about one MAC
//! however many packets are held.
//!
//! # Eviction under a flood
//!
//! A first come, first served buffer lets an attacker who sends more forged
//! packets than the buffer holds, early in each interval, keep every genuine
//! packet out. Instead, a full buffer evicts a buffered packet chosen
//! uniformly at random for each newcomer: a genuine packet then survives `n`
//! later insertions into a full buffer of `B` packets with probability about
//! `(1 - 1/B)^n`, so pushing genuine packets out takes a flood proportional
//! to the buffer, not just arriving first. The choice must be unpredictable
//! to the attacker (one who knew it could aim its forgeries at the genuine
//! packets' slots): it comes from a seed given at construction
//! ([`Receiver::with_eviction_seed`]; a bootstrapped receiver seeds it from
//! the bootstrap nonce, [`Receiver::new_trusted`] from the standard library's
//! per-process random keys).

mod store;

use store::{EvictionRng, PacketBuffer, ReplayMemory};

use crate::codec::{Reader, WireError, put_u32, put_u64};
use crate::owf::{ChainKey, KEY_LEN, f};
use crate::params::{IntervalMac, Params};
use crate::time::{ClockBound, Schedule, Time, latest_sender_interval};
use crate::wire::{DataPacket, Kind, peek_kind};

/// Most applications of `F` spent on a key that arrives earlier than the clock
/// bound allows (to tell a clock-bound violation from a forgery).
pub const EARLY_KEY_MAX_STEPS: u32 = 64;

const STATE_VERSION: u8 = 2;

/// Counters in a version 1 state (without [`Stats::evicted`]).
const STATE_V1_COUNTERS: usize = 23;

/// Limits and allowances of a receiver.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReceiverConfig {
    /// Relative drift allowed between the two clocks, in ppm (default 100).
    pub drift_ppm: u32,
    /// Longest acceptable bootstrap round trip, in ns (default 5 s).
    pub max_round_trip_ns: u64,
    /// Most applications of `F` to verify one disclosed key (default 65 536):
    /// a key more than this many intervals past the last authenticated one is
    /// rejected, and after that long a loss the receiver needs a new bootstrap.
    pub max_key_steps: u32,
    /// Most packets held while their keys are pending (default 4096).
    pub buffer_max_packets: usize,
    /// Most bytes held while keys are pending (default 4 MiB).
    pub buffer_max_bytes: usize,
    /// Most fragments of a sync response (default 64).
    pub max_fragments: u8,
    /// Largest fragment datagram accepted, in bytes (default 1500).
    pub max_datagram: usize,
    /// Delivered packets remembered to report replays (default 4096).
    pub replay_memory: usize,
}

impl Default for ReceiverConfig {
    fn default() -> Self {
        Self {
            drift_ppm: 100,
            max_round_trip_ns: 5_000_000_000,
            max_key_steps: 65_536,
            buffer_max_packets: 4096,
            buffer_max_bytes: 4 << 20,
            max_fragments: 64,
            max_datagram: 1500,
            replay_memory: 4096,
        }
    }
}

/// A payload authenticated by TESLA.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Delivered {
    /// Interval the sender sent it in.
    pub interval: u32,
    /// The payload.
    pub payload: Vec<u8>,
}

/// Why a packet (or its key) was rejected.
#[non_exhaustive]
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Failure {
    /// The datagram does not decode.
    Malformed(WireError),
    /// A sync request or response fragment reached a running receiver.
    UnexpectedKind,
    /// The disclosed key is not on the chain.
    BadKey,
    /// The disclosed key is more than `max_key_steps` past the last authenticated key.
    KeyTooFar,
    /// The disclosed key or the packet belongs to a chain whose commitment is unknown.
    KeyUnreachable,
    /// The disclosed key claims an interval the sender cannot have disclosed
    /// yet, too far ahead to be worth checking.
    FutureKey,
    /// The packet claims an interval the sender cannot have reached yet.
    FutureInterval,
    /// The packet was delivered or is buffered already.
    Replay,
    /// The buffer is full.
    BufferFull,
    /// An authentic key arrived before the clock bound allows: the bound is
    /// wrong and the receiver stopped.
    ClockBoundViolated,
    /// The receiver stopped after a clock-bound violation; bootstrap again.
    Refused,
}

/// What became of a packet's own payload.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Own {
    /// Buffered until its key is disclosed.
    Buffered,
    /// Too late: dropped.
    Unsafe,
    /// A key disclosure without commitment: nothing to authenticate.
    NoPayload,
    /// Rejected for this reason.
    Rejected(Failure),
}

/// The outcome of one packet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Status {
    /// The key this packet disclosed was new and authentic and released
    /// buffered packets: `released` payloads (oldest interval first, in arrival order within one) passed
    /// their MAC, `mac_failures` did not. `own` is this packet's own fate.
    Authenticated {
        /// Authenticated payloads.
        released: Vec<Delivered>,
        /// Buffered packets whose MAC failed.
        mac_failures: u32,
        /// This packet's own payload.
        own: Own,
    },
    /// Buffered until its key is disclosed; nothing released.
    Waiting,
    /// A key disclosure that released nothing (its key, if new, was accepted).
    NoPayload,
    /// Arrived after its interval key may have been disclosed; nothing released.
    DroppedUnsafe,
    /// Rejected; nothing released.
    Failed(Failure),
}

/// Counters of a receiver.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Stats {
    /// Datagrams handled.
    pub packets: u64,
    /// Undecodable datagrams.
    pub malformed: u64,
    /// Sync datagrams given to a running receiver.
    pub unexpected_kind: u64,
    /// Payloads authenticated and released.
    pub delivered: u64,
    /// Buffered packets whose MAC failed.
    pub bad_mac: u64,
    /// Packets dropped by the safety condition.
    pub unsafe_dropped: u64,
    /// Packets claiming an interval beyond the sender's clock bound.
    pub future_interval: u64,
    /// Replays of buffered or delivered packets.
    pub replays: u64,
    /// Packets refused because the buffer could not hold them even empty.
    pub buffer_full: u64,
    /// Buffered packets evicted (chosen at random) to make room for newer ones.
    pub evicted: u64,
    /// Buffered packets dropped because their key never came (or their chain ended).
    pub expired: u64,
    /// New keys authenticated.
    pub keys_accepted: u64,
    /// Keys at or before the newest authenticated one (ignored).
    pub stale_keys: u64,
    /// Keys not on the chain.
    pub bad_keys: u64,
    /// Keys beyond `max_key_steps`.
    pub keys_too_far: u64,
    /// Keys of a chain whose commitment is unknown.
    pub keys_unreachable: u64,
    /// Keys too early to check.
    pub future_keys: u64,
    /// Moves to the next chain.
    pub chain_switches: u64,
    /// Next-chain commitments learned from authenticated packets.
    pub commitments_learned: u64,
    /// Authenticated packets carrying a different next-chain commitment.
    pub commitment_conflicts: u64,
    /// Clock-bound violations detected.
    pub clock_violations: u64,
    /// Packets refused after a violation.
    pub refused: u64,
    /// Packets held now.
    pub buffered_packets: u64,
    /// Bytes held now.
    pub buffered_bytes: u64,
}

impl Stats {
    fn fields_mut(&mut self) -> [&mut u64; 24] {
        [
            &mut self.packets,
            &mut self.malformed,
            &mut self.unexpected_kind,
            &mut self.delivered,
            &mut self.bad_mac,
            &mut self.unsafe_dropped,
            &mut self.future_interval,
            &mut self.replays,
            &mut self.buffer_full,
            &mut self.expired,
            &mut self.keys_accepted,
            &mut self.stale_keys,
            &mut self.bad_keys,
            &mut self.keys_too_far,
            &mut self.keys_unreachable,
            &mut self.future_keys,
            &mut self.chain_switches,
            &mut self.commitments_learned,
            &mut self.commitment_conflicts,
            &mut self.clock_violations,
            &mut self.refused,
            &mut self.buffered_packets,
            &mut self.buffered_bytes,
            &mut self.evicted,
        ]
    }
}

/// The newest authenticated key: `K_index` of `chain`.
struct Anchor {
    chain: u32,
    index: u32,
    key: ChainKey,
}

/// A bootstrapped TESLA receiver (see the module documentation).
pub struct Receiver {
    params: Params,
    schedule: Schedule,
    bound: ClockBound,
    config: ReceiverConfig,
    anchor: Anchor,
    /// The newest key of the chain before the anchor's: keys of that chain
    /// that arrive late (reordered around the switch) still release packets.
    previous: Option<Anchor>,
    next: Option<ChainKey>,
    buffer: PacketBuffer,
    delivered: ReplayMemory,
    eviction: EvictionRng,
    stats: Stats,
    refused: bool,
}

impl core::fmt::Debug for Receiver {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Receiver")
            .field("params", &self.params)
            .field("bound", &self.bound)
            .field("anchor", &(self.anchor.chain, self.anchor.index))
            .field("stats", &self.stats)
            .finish_non_exhaustive()
    }
}

impl Receiver {
    /// Starts a receiver from trusted bootstrap information: parameters, a
    /// clock bound, a commitment `(chain, index j, K_j)` and maybe the next
    /// chain's `K_0`. [`crate::SyncClient`] calls this after its checks; call it
    /// directly only with values authenticated some other way.
    ///
    /// Buffer evictions are seeded from the standard library's per-process
    /// random keys; see [`Receiver::with_eviction_seed`] for a seed of your own.
    #[must_use]
    pub fn new_trusted(
        params: Params,
        bound: ClockBound,
        config: ReceiverConfig,
        commitment: (u32, u32, ChainKey),
        next_commitment: Option<ChainKey>,
    ) -> Self {
        let (chain, index, key) = commitment;
        let delivered = ReplayMemory::new(config.replay_memory, usize::from(params.tag_len));
        Self {
            schedule: params.schedule(),
            params,
            bound,
            config,
            anchor: Anchor { chain, index, key },
            previous: None,
            next: next_commitment,
            buffer: PacketBuffer::new(),
            delivered,
            eviction: EvictionRng::unpredictable(),
            stats: Stats::default(),
            refused: false,
        }
    }

    pub(crate) fn start(
        params: Params,
        bound: ClockBound,
        config: ReceiverConfig,
        commitment: (u32, u32, ChainKey),
        next_commitment: Option<ChainKey>,
        _now: Time,
        nonce: &[u8],
    ) -> Self {
        Self::new_trusted(params, bound, config, commitment, next_commitment)
            .with_eviction_seed(nonce)
    }

    /// Seeds the random choice of the buffered packet evicted when the buffer
    /// is full. The seed must be unpredictable to an attacker: one who can
    /// predict the choices can aim its forgeries at the genuine packets. A
    /// receiver started by [`crate::SyncClient`] is seeded from the bootstrap
    /// nonce (random, from the caller's RNG); that nonce travels in clear in
    /// the sync request, so where an attacker may see the request, reseed
    /// with fresh random bytes. The same seed and the same datagrams give the
    /// same choices (reproducible tests).
    #[must_use]
    pub fn with_eviction_seed(mut self, seed: &[u8]) -> Self {
        self.eviction = EvictionRng::new(seed);
        self
    }

    /// The session parameters.
    #[must_use]
    pub fn params(&self) -> &Params {
        &self.params
    }

    /// The bound on the sender's clock.
    #[must_use]
    pub fn clock_bound(&self) -> &ClockBound {
        &self.bound
    }

    /// Counters.
    #[must_use]
    pub fn stats(&self) -> Stats {
        let mut s = self.stats;
        s.buffered_packets = self.buffer.len() as u64;
        s.buffered_bytes = self.buffer.bytes() as u64;
        s
    }

    /// Whether the receiver stopped after a clock-bound violation.
    #[must_use]
    pub fn is_refused(&self) -> bool {
        self.refused
    }

    /// The newest authenticated key's `(chain, index)`.
    #[must_use]
    pub fn newest_key(&self) -> (u32, u32) {
        (self.anchor.chain, self.anchor.index)
    }

    /// Whether the next chain's commitment is known.
    #[must_use]
    pub fn knows_next_chain(&self) -> bool {
        self.next.is_some()
    }

    /// Handles one datagram received at local time `now`.
    pub fn handle(&mut self, datagram: &[u8], now: Time) -> Status {
        self.stats.packets += 1;
        if self.refused {
            self.stats.refused += 1;
            return Status::Failed(Failure::Refused);
        }
        let packet = match peek_kind(datagram)
            .and_then(|_| DataPacket::parse(datagram, usize::from(self.params.tag_len)))
        {
            Ok(p) => p,
            Err(e) => {
                if matches!(
                    peek_kind(datagram),
                    Ok((Kind::SyncRequest | Kind::SyncResponseFragment, _))
                ) {
                    self.stats.unexpected_kind += 1;
                    return Status::Failed(Failure::UnexpectedKind);
                }
                self.stats.malformed += 1;
                return Status::Failed(Failure::Malformed(e));
            }
        };
        let x = latest_sender_interval(&self.schedule, &self.bound, now);
        self.expire(x);
        let (released, mac_failures) = match self.process_key(&packet, x) {
            Ok(r) => r,
            Err(failure) => return Status::Failed(failure),
        };
        let own = self.process_own(&packet, datagram, x);
        if !released.is_empty() || mac_failures > 0 {
            return Status::Authenticated {
                released,
                mac_failures,
                own,
            };
        }
        match own {
            Own::Buffered => Status::Waiting,
            Own::Unsafe => Status::DroppedUnsafe,
            Own::NoPayload => Status::NoPayload,
            Own::Rejected(f) => Status::Failed(f),
        }
    }

    /// Drops buffered packets whose key can no longer come within reach.
    fn expire(&mut self, x: i128) {
        let horizon =
            i128::from(self.params.disclosure_delay) + i128::from(self.config.max_key_steps);
        self.stats.expired += self.buffer.drop_before(x - horizon) as u64;
    }

    fn process_key(
        &mut self,
        packet: &DataPacket<'_>,
        x: i128,
    ) -> Result<(Vec<Delivered>, u32), Failure> {
        let p = &self.params;
        let Some(g) = packet.interval.checked_sub(p.disclosure_delay) else {
            return Ok((Vec::new(), 0));
        };
        let (chain, index) = (p.chain_of(g), p.key_index(g));
        let on_previous = self
            .previous
            .as_ref()
            .is_some_and(|a| a.chain == chain && a.index < index);
        if (chain, index) <= (self.anchor.chain, self.anchor.index) && !on_previous {
            // A key we hold already must match: a genuine packet carries the
            // genuine key, so a mismatch is a forgery, refused before it can
            // take a buffer slot (cheap: no `F`, only known keys compared).
            let known = [Some(&self.anchor), self.previous.as_ref()]
                .into_iter()
                .flatten()
                .find(|a| a.chain == chain && a.index == index);
            if let Some(a) = known
                && a.key != ChainKey::from_bytes(*packet.disclosed_key)
            {
                self.stats.bad_keys += 1;
                return Err(Failure::BadKey);
            }
            self.stats.stale_keys += 1;
            return Ok((Vec::new(), 0));
        }
        let (steps, target) = match &self.previous {
            Some(prev) if on_previous => (index - prev.index, &prev.key),
            _ if chain == self.anchor.chain => (index - self.anchor.index, &self.anchor.key),
            _ => match &self.next {
                Some(next) if chain == self.anchor.chain + 1 => (index, next),
                _ => {
                    self.stats.keys_unreachable += 1;
                    return Err(Failure::KeyUnreachable);
                }
            },
        };
        let early = x < i128::from(g) + i128::from(p.disclosure_delay);
        if early && steps > EARLY_KEY_MAX_STEPS {
            self.stats.future_keys += 1;
            return Err(Failure::FutureKey);
        }
        if steps > self.config.max_key_steps {
            self.stats.keys_too_far += 1;
            return Err(Failure::KeyTooFar);
        }
        // Walk down from K_index to the anchor, keeping the keys that buffered
        // packets of this chain need.
        let mut wanted: Vec<u32> = self
            .buffer
            .slots()
            .iter()
            .filter(|b| p.chain_of(b.interval) == chain && p.key_index(b.interval) <= index)
            .map(|b| p.key_index(b.interval))
            .collect();
        wanted.sort_unstable();
        wanted.dedup();
        let mut keys: Vec<(u32, ChainKey)> = Vec::with_capacity(wanted.len());
        let mut v = ChainKey::from_bytes(*packet.disclosed_key);
        let mut at = index;
        for _ in 0..steps {
            if wanted.binary_search(&at).is_ok() {
                keys.push((at, v.clone()));
            }
            v = f(&v);
            at -= 1;
        }
        if v != *target {
            self.stats.bad_keys += 1;
            return Err(Failure::BadKey);
        }
        if early {
            self.stats.clock_violations += 1;
            self.refused = true;
            self.drop_buffer();
            return Err(Failure::ClockBoundViolated);
        }
        self.stats.keys_accepted += 1;
        let anchor = Anchor {
            chain,
            index,
            key: ChainKey::from_bytes(*packet.disclosed_key),
        };
        if on_previous {
            self.previous = Some(anchor);
        } else {
            if chain != self.anchor.chain {
                self.stats.chain_switches += 1;
                self.next = None;
                self.previous = Some(core::mem::replace(&mut self.anchor, anchor));
            } else {
                self.anchor = anchor;
            }
        }
        Ok(self.release(chain, &keys))
    }

    fn drop_buffer(&mut self) {
        self.stats.expired += self.buffer.clear() as u64;
    }

    /// Verifies and releases the buffered packets of `chain` whose keys are in
    /// `keys`, drops packets of chains before the previous one (unverifiable
    /// now), and learns next-chain commitments from authenticated packets.
    fn release(&mut self, chain: u32, keys: &[(u32, ChainKey)]) -> (Vec<Delivered>, u32) {
        let p = self.params.clone();
        let oldest = self
            .previous
            .as_ref()
            .map_or(self.anchor.chain, |a| a.chain);
        let mut ready = Vec::new();
        for b in self.buffer.take_where(|b| {
            let c = p.chain_of(b.interval);
            c < oldest || (c == chain && keys.iter().any(|(j, _)| *j == p.key_index(b.interval)))
        }) {
            if p.chain_of(b.interval) < oldest {
                self.stats.expired += 1;
                self.buffer.recycle(b);
            } else {
                ready.push(b);
            }
        }
        ready.sort_by_key(|b| (b.interval, b.arrival));
        let mut released = Vec::new();
        let mut failures = 0;
        let mut mac: Option<(u32, IntervalMac)> = None;
        for b in ready {
            let j = p.key_index(b.interval);
            if mac.as_ref().is_none_or(|(at, _)| *at != j) {
                let Some((_, key)) = keys.iter().find(|(at, _)| *at == j) else {
                    continue;
                };
                match IntervalMac::new(&p, key) {
                    Ok(m) => mac = Some((j, m)),
                    Err(_) => continue,
                }
            }
            let Some((_, m)) = &mac else { continue };
            let Ok(packet) = DataPacket::parse(&b.bytes, usize::from(p.tag_len)) else {
                continue;
            };
            if !m.verify(packet.authenticated_bytes(), packet.tag) {
                failures += 1;
                self.stats.bad_mac += 1;
            } else {
                self.delivered.insert(b.interval, packet.tag);
                if let Some(c) = packet.next_commitment {
                    self.learn_commitment(b.interval, c);
                }
                if packet.kind == Kind::Data {
                    self.stats.delivered += 1;
                    released.push(Delivered {
                        interval: b.interval,
                        payload: packet.payload.to_vec(),
                    });
                }
            }
            self.buffer.recycle(b);
        }
        (released, failures)
    }

    fn learn_commitment(&mut self, interval: u32, commitment: &[u8; KEY_LEN]) {
        if !self.params.carries_next_commitment(interval)
            || self.params.chain_of(interval) != self.anchor.chain
        {
            return;
        }
        let key = ChainKey::from_bytes(*commitment);
        match &self.next {
            None => {
                self.next = Some(key);
                self.stats.commitments_learned += 1;
            }
            Some(known) if *known == key => {}
            Some(_) => self.stats.commitment_conflicts += 1,
        }
    }

    /// A copy of a delivered packet (same interval and tag: the delivered one
    /// was authentic), or of a buffered datagram byte for byte. Buffered
    /// packets are compared whole so that a forgery carrying a copied tag
    /// cannot get the genuine packet refused as its replay.
    /// Returns the datagram's fingerprint when it is not a replay.
    fn is_replay(&self, interval: u32, tag: &[u8], datagram: &[u8]) -> Result<u64, ()> {
        if self.delivered.contains(interval, tag) {
            return Err(());
        }
        let fingerprint = self.buffer.fingerprint(datagram);
        if self.buffer.contains(fingerprint, datagram) {
            return Err(());
        }
        Ok(fingerprint)
    }

    fn process_own(&mut self, packet: &DataPacket<'_>, datagram: &[u8], x: i128) -> Own {
        let p = &self.params;
        let i = packet.interval;
        if i128::from(i) > x {
            self.stats.future_interval += 1;
            return Own::Rejected(Failure::FutureInterval);
        }
        let Ok(fingerprint) = self.is_replay(i, packet.tag, datagram) else {
            self.stats.replays += 1;
            return Own::Rejected(Failure::Replay);
        };
        let (chain, index) = (p.chain_of(i), p.key_index(i));
        if x >= i128::from(i) + i128::from(p.disclosure_delay)
            || (chain, index) <= (self.anchor.chain, self.anchor.index)
        {
            self.stats.unsafe_dropped += 1;
            return Own::Unsafe;
        }
        if packet.kind == Kind::KeyDisclosure && packet.next_commitment.is_none() {
            return Own::NoPayload;
        }
        if chain > self.anchor.chain + 1 {
            self.stats.keys_unreachable += 1;
            return Own::Rejected(Failure::KeyUnreachable);
        }
        if self.config.buffer_max_packets == 0 || datagram.len() > self.config.buffer_max_bytes {
            self.stats.buffer_full += 1;
            return Own::Rejected(Failure::BufferFull);
        }
        // Full: evict packets chosen at random (see the module documentation).
        while self.buffer.len() >= self.config.buffer_max_packets
            || self.buffer.bytes() + datagram.len() > self.config.buffer_max_bytes
        {
            let victim = self.eviction.below(self.buffer.len());
            let evicted = self.buffer.remove(victim);
            self.buffer.recycle(evicted);
            self.stats.evicted += 1;
        }
        self.buffer.push(i, fingerprint, datagram);
        Own::Buffered
    }

    /// Serializes the receiver for a warm start: parameters, clock bound,
    /// limits, the newest authenticated key, the next commitment and the
    /// counters. Buffered packets are not saved (at most `d` intervals of
    /// payloads are lost across a restart). The local clock must be the same
    /// clock after the restart (a wall clock, not a boot-time counter): the
    /// bound relates the sender's clock to it.
    #[must_use]
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = vec![STATE_VERSION];
        self.params.encode(&mut out);
        self.bound.encode(&mut out);
        let c = &self.config;
        put_u32(&mut out, c.drift_ppm);
        put_u64(&mut out, c.max_round_trip_ns);
        put_u32(&mut out, c.max_key_steps);
        put_u64(&mut out, c.buffer_max_packets as u64);
        put_u64(&mut out, c.buffer_max_bytes as u64);
        out.push(c.max_fragments);
        put_u64(&mut out, c.max_datagram as u64);
        put_u64(&mut out, c.replay_memory as u64);
        put_u32(&mut out, self.anchor.chain);
        put_u32(&mut out, self.anchor.index);
        out.extend_from_slice(self.anchor.key.as_bytes());
        match &self.next {
            Some(k) => {
                out.push(1);
                out.extend_from_slice(k.as_bytes());
            }
            None => out.push(0),
        }
        match &self.previous {
            Some(a) => {
                out.push(1);
                put_u32(&mut out, a.chain);
                put_u32(&mut out, a.index);
                out.extend_from_slice(a.key.as_bytes());
            }
            None => out.push(0),
        }
        out.push(u8::from(self.refused));
        let mut stats = self.stats;
        for v in stats.fields_mut() {
            put_u64(&mut out, *v);
        }
        out
    }

    /// Restores a receiver saved by [`Receiver::to_bytes`].
    ///
    /// # Errors
    /// Undecodable or out-of-range state.
    pub fn from_bytes(bytes: &[u8]) -> Result<Self, WireError> {
        let mut r = Reader::new(bytes);
        let version = r.u8("receiver state version")?;
        if !(1..=STATE_VERSION).contains(&version) {
            return Err(WireError::InvalidField("receiver state version"));
        }
        let params = Params::decode(&mut r)?;
        let bound = ClockBound::decode(&mut r)?;
        let size = |v: u64| usize::try_from(v).map_err(|_| WireError::InvalidField("limit"));
        let config = ReceiverConfig {
            drift_ppm: r.u32("drift")?,
            max_round_trip_ns: r.u64("max round trip")?,
            max_key_steps: r.u32("max key steps")?,
            buffer_max_packets: size(r.u64("buffer packets")?)?,
            buffer_max_bytes: size(r.u64("buffer bytes")?)?,
            max_fragments: r.u8("max fragments")?,
            max_datagram: size(r.u64("max datagram")?)?,
            replay_memory: size(r.u64("replay memory")?)?,
        };
        let chain = r.u32("anchor chain")?;
        let index = r.u32("anchor index")?;
        if index > params.chain_len {
            return Err(WireError::InvalidField("anchor index"));
        }
        let key = ChainKey::from_bytes(r.array("anchor key")?);
        let next = if r.flag("next commitment flag")? {
            Some(ChainKey::from_bytes(r.array("next commitment")?))
        } else {
            None
        };
        let previous = if r.flag("previous anchor flag")? {
            Some(Anchor {
                chain: r.u32("previous chain")?,
                index: r.u32("previous index")?,
                key: ChainKey::from_bytes(r.array("previous key")?),
            })
        } else {
            None
        };
        let refused = r.flag("refused")?;
        let mut stats = Stats::default();
        let counters = if version == 1 {
            STATE_V1_COUNTERS
        } else {
            usize::MAX
        };
        for v in stats.fields_mut().into_iter().take(counters) {
            *v = r.u64("counter")?;
        }
        stats.buffered_packets = 0;
        stats.buffered_bytes = 0;
        r.finish()?;
        let mut rx = Self::new_trusted(params, bound, config, (chain, index, key), next);
        rx.stats = stats;
        rx.refused = refused;
        rx.previous = previous;
        Ok(rx)
    }
}

#[cfg(test)]
mod tests;
