//! The TESLA sender: interval keys from pebbled chains, packets, key
//! disclosures, bootstrap responses, and chains of chains.
//!
//! Chain `c` serves the intervals `c*N .. c*N + N - 1` (key `K_j` serves the
//! interval with index `j - 1` in the chain). Its primary key is derived from
//! the sender's 32-byte master secret, `K^c_N = HMAC-SHA-256(master,
//! "authtime-tesla chain seed" || c)`, so the master secret (from the caller's
//! RNG) is the only randomness the sender needs.
//!
//! Two cursors walk the chains: one at the current interval `i` (the MAC key),
//! one `d` intervals behind (the disclosed key); each holds a [`Traversal`],
//! so the sender keeps `O(log N)` keys. The next chain is built while the
//! current one runs: a [`TraversalBuilder`] gets a share of its `N` hashes at
//! every new interval, enough to finish before the rollover lead, when packets
//! start carrying the next chain's commitment `K^{c+1}_0`.

use core::fmt;

use hmac::{Hmac, KeyInit, Mac as _};
use sha2::Sha256;

use crate::bootstrap::{BootstrapError, BootstrapSigner, DEFAULT_MAX_DATAGRAM, SyncResponse};
use crate::codec::{Reader, WireError, put_u32, put_u64};
use crate::owf::{ChainKey, KEY_LEN, TeslaF};
use crate::params::{IntervalMac, ParamError, Params};
use crate::time::Time;
use crate::traversal::{Traversal, TraversalBuilder, TraversalError};
use crate::wire::{Kind, SyncRequest, write_data_head};

const SEED_LABEL: &[u8] = b"authtime-tesla chain seed";
const STATE_VERSION: u8 = 1;

/// Why the sender could not produce a packet.
#[non_exhaustive]
#[derive(Debug, Clone, PartialEq)]
pub enum SenderError {
    /// The parameters are out of range.
    Params(ParamError),
    /// The time is before `T_0`.
    NotStarted,
    /// The time is after the last `u32` interval.
    ScheduleEnded,
    /// The clock is in an interval before one already used: sending now could
    /// MAC with a key that is already public.
    ClockWentBackwards {
        /// Interval of the time given.
        interval: u32,
        /// Latest interval used so far.
        latest: u32,
    },
    /// The sync request does not decode.
    Request(WireError),
    /// Signing or fragmenting the sync response failed.
    Bootstrap(BootstrapError),
    /// The MAC could not be keyed.
    Mac(authtime_mac::MacError),
    /// A saved state does not decode.
    State(WireError),
    /// A saved traversal does not restore.
    Traversal(TraversalError),
}

impl fmt::Display for SenderError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Params(e) => write!(f, "parameters: {e}"),
            Self::NotStarted => f.write_str("before T_0"),
            Self::ScheduleEnded => f.write_str("after the last interval"),
            Self::ClockWentBackwards { interval, latest } => {
                write!(
                    f,
                    "clock in interval {interval}, interval {latest} already used"
                )
            }
            Self::Request(e) => write!(f, "sync request: {e}"),
            Self::Bootstrap(e) => write!(f, "sync response: {e}"),
            Self::Mac(e) => write!(f, "MAC: {e}"),
            Self::State(e) => write!(f, "sender state: {e}"),
            Self::Traversal(e) => write!(f, "sender state: {e}"),
        }
    }
}

impl std::error::Error for SenderError {}

impl From<WireError> for SenderError {
    fn from(e: WireError) -> Self {
        Self::State(e)
    }
}

impl From<TraversalError> for SenderError {
    fn from(e: TraversalError) -> Self {
        Self::Traversal(e)
    }
}

/// One chain being walked: its traversal, its commitment `K_0`, and the last
/// key taken.
#[derive(Clone)]
struct Cursor {
    chain: u32,
    traversal: Traversal<TeslaF>,
    commitment: ChainKey,
    current: Option<(u32, ChainKey)>,
}

impl Cursor {
    fn new(chain: u32, traversal: Traversal<TeslaF>, commitment: ChainKey) -> Self {
        Self {
            chain,
            traversal,
            commitment,
            current: None,
        }
    }

    /// `K_index` of this chain; `index` never decreases between calls.
    fn key(&mut self, index: u32) -> &ChainKey {
        let taken = self.current.as_ref().map_or(0, |(j, _)| *j);
        if taken < index {
            self.traversal.skip(u64::from(index - taken - 1));
            let key = self
                .traversal
                .next()
                .unwrap_or_else(|| ChainKey::from_bytes([0; KEY_LEN]));
            self.current = Some((index, key));
        }
        match &self.current {
            Some((_, k)) => k,
            None => &self.commitment,
        }
    }

    fn encode(&self, out: &mut Vec<u8>) {
        put_u32(out, self.chain);
        out.extend_from_slice(self.commitment.as_bytes());
        match &self.current {
            Some((j, k)) => {
                out.push(1);
                put_u32(out, *j);
                out.extend_from_slice(k.as_bytes());
            }
            None => out.push(0),
        }
        put_bytes(out, &self.traversal.to_bytes());
    }

    fn decode(r: &mut Reader<'_>) -> Result<Self, SenderError> {
        let chain = r.u32("cursor chain")?;
        let commitment = ChainKey::from_bytes(r.array("cursor commitment")?);
        let current = if r.flag("cursor key flag")? {
            Some((
                r.u32("cursor index")?,
                ChainKey::from_bytes(r.array("cursor key")?),
            ))
        } else {
            None
        };
        let traversal = Traversal::from_bytes(TeslaF, get_bytes(r)?)?;
        Ok(Self {
            chain,
            traversal,
            commitment,
            current,
        })
    }
}

fn put_bytes(out: &mut Vec<u8>, bytes: &[u8]) {
    put_u32(out, bytes.len() as u32);
    out.extend_from_slice(bytes);
}

fn get_bytes<'a>(r: &mut Reader<'a>) -> Result<&'a [u8], WireError> {
    let len = r.u32("length")? as usize;
    r.bytes(len, "bytes")
}

/// The chain after the current one: being built, or ready.
enum NextChain {
    Building(TraversalBuilder<TeslaF>),
    Ready(Traversal<TeslaF>, ChainKey),
}

/// A TESLA sender (see the module documentation). Sans-IO: every call takes
/// the sender's current time.
pub struct Sender {
    params: Params,
    max_datagram: usize,
    master: ChainKey,
    lead: Cursor,
    lag: Cursor,
    next: NextChain,
    lag_stash: Option<(u32, Traversal<TeslaF>, ChainKey)>,
    latest: Option<u32>,
    worked: Option<u32>,
}

impl fmt::Debug for Sender {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Sender")
            .field("params", &self.params)
            .field("chain", &self.lead.chain)
            .field("latest", &self.latest)
            .finish_non_exhaustive()
    }
}

fn chain_seed(master: &ChainKey, chain: u32) -> ChainKey {
    let mut mac = <Hmac<Sha256> as KeyInit>::new_from_slice(master.as_bytes())
        .expect("HMAC takes keys of any length");
    mac.update(SEED_LABEL);
    mac.update(&chain.to_be_bytes());
    let mut seed = [0u8; KEY_LEN];
    seed.copy_from_slice(&mac.finalize().into_bytes()[..KEY_LEN]);
    ChainKey::from_bytes(seed)
}

impl Sender {
    /// A sender with `params` and a 32-byte `master` secret from the caller's
    /// RNG, starting at sender time `now`: builds the chain of the current
    /// interval (one pass of `N` hashes) and starts building the next one.
    ///
    /// # Errors
    /// [`SenderError::Params`].
    pub fn new(params: Params, master: [u8; KEY_LEN], now: Time) -> Result<Self, SenderError> {
        params.validate().map_err(SenderError::Params)?;
        let master = ChainKey::from_bytes(master);
        let first = params
            .schedule()
            .interval_at(now)
            .map_or(0, |i| params.chain_of(i));
        let lead = build_cursor(&master, &params, first);
        let lag = lead.clone();
        let next = start_next(&master, &params, first);
        Ok(Self {
            params,
            max_datagram: DEFAULT_MAX_DATAGRAM,
            master,
            lead,
            lag,
            next,
            lag_stash: None,
            latest: None,
            worked: None,
        })
    }

    /// Sets the largest datagram of sync response fragments (default 1200).
    pub fn set_max_datagram(&mut self, bytes: usize) {
        self.max_datagram = bytes;
    }

    /// The session parameters.
    #[must_use]
    pub fn params(&self) -> &Params {
        &self.params
    }

    /// Keys held by the sender's traversals (pebbles and cursors).
    #[must_use]
    pub fn stored_keys(&self) -> usize {
        let stash = self
            .lag_stash
            .as_ref()
            .map_or(0, |(_, t, _)| t.stored_values());
        let next = match &self.next {
            NextChain::Ready(t, _) => t.stored_values(),
            NextChain::Building(_) => 0,
        };
        self.lead.traversal.stored_values() + self.lag.traversal.stored_values() + stash + next
    }

    /// A data packet with `payload`, MAC'd under interval `i`'s key (`i` from
    /// `now`), disclosing `K_{i-d}`.
    ///
    /// # Errors
    /// A time outside the schedule or before an interval already used.
    pub fn packet(&mut self, payload: &[u8], now: Time) -> Result<Vec<u8>, SenderError> {
        self.build(Kind::Data, payload, now)
    }

    /// A key-disclosure packet: no payload, `K_{i-d}` and (during the rollover
    /// lead) the next commitment, MAC'd like data. Send one per interval when
    /// no data flows so that receivers keep getting keys.
    ///
    /// # Errors
    /// As [`Sender::packet`].
    pub fn key_disclosure(&mut self, now: Time) -> Result<Vec<u8>, SenderError> {
        self.build(Kind::KeyDisclosure, &[], now)
    }

    fn build(&mut self, kind: Kind, payload: &[u8], now: Time) -> Result<Vec<u8>, SenderError> {
        let i = self.interval(now)?;
        let keys = self.keys_for(i);
        let mut out = Vec::with_capacity(payload.len() + self.params.overhead(true));
        write_data_head(
            &mut out,
            kind,
            payload,
            i,
            keys.next_commitment.as_ref().map(ChainKey::as_bytes),
            keys.disclosed.as_bytes(),
        );
        let mac = IntervalMac::new(&self.params, &keys.mac_key).map_err(SenderError::Mac)?;
        let tag = mac.tag(&out).map_err(SenderError::Mac)?;
        out.extend_from_slice(&tag);
        Ok(out)
    }

    /// The signed sync response to a request received at sender time `now`, in
    /// datagrams of at most the configured size.
    ///
    /// # Errors
    /// An undecodable request, a time outside the schedule, or a signer error.
    pub fn sync_response(
        &mut self,
        request: &[u8],
        now: Time,
        signer: &mut dyn BootstrapSigner,
    ) -> Result<Vec<Vec<u8>>, SenderError> {
        self.unsigned_sync_response(request, now, signer.scheme_id())?
            .sign_and_fragment(signer, self.max_datagram)
            .map_err(SenderError::Bootstrap)
    }

    /// The sync response [`Sender::sync_response`] would sign, without the
    /// signature: for senders that sign on another thread, so that a slow
    /// signature (SLH-DSA takes a fraction of a second) does not hold up the
    /// stream. `now` is taken before signing, which keeps the receiver's
    /// clock bound valid however long signing takes. Sign and fragment it
    /// with [`SyncResponse::sign_and_fragment`] and
    /// [`Sender::max_datagram`].
    ///
    /// # Errors
    /// An undecodable request or a time outside the schedule.
    pub fn unsigned_sync_response(
        &mut self,
        request: &[u8],
        now: Time,
        scheme_id: u16,
    ) -> Result<SyncResponse, SenderError> {
        let request = SyncRequest::parse(request).map_err(SenderError::Request)?;
        let i = self.interval(now)?;
        let keys = self.keys_for(i);
        let p = &self.params;
        let chain = p.chain_of(i);
        let (index, commitment) = match i.checked_sub(p.disclosure_delay) {
            Some(g) if p.chain_of(g) == chain => (p.key_index(g), keys.disclosed),
            _ => (0, self.lead.commitment.clone()),
        };
        let next_commitment = match &self.next {
            NextChain::Ready(_, c) => Some(c.clone()),
            NextChain::Building(_) => None,
        };
        Ok(SyncResponse {
            scheme_id,
            nonce: request.nonce.to_vec(),
            sender_time: now,
            params: self.params.clone(),
            current_interval: i,
            commitment_chain: chain,
            commitment_index: index,
            commitment,
            next_commitment,
        })
    }

    /// Largest datagram of a fragmented sync response.
    #[must_use]
    pub fn max_datagram(&self) -> usize {
        self.max_datagram
    }

    fn interval(&self, now: Time) -> Result<u32, SenderError> {
        let schedule = self.params.schedule();
        let Some(i) = schedule.interval_at(now) else {
            return Err(if now < self.params.t0 {
                SenderError::NotStarted
            } else {
                SenderError::ScheduleEnded
            });
        };
        if let Some(latest) = self.latest
            && i < latest
        {
            return Err(SenderError::ClockWentBackwards {
                interval: i,
                latest,
            });
        }
        Ok(i)
    }

    /// Advances both cursors to interval `i` and returns its keys.
    fn keys_for(&mut self, i: u32) -> IntervalKeys {
        self.latest = Some(i);
        let chain = self.params.chain_of(i);
        self.move_lead_to(chain);
        self.build_next_chain(i);
        let mac_key = self.lead.key(self.params.key_index(i)).clone();
        let disclosed = match i.checked_sub(self.params.disclosure_delay) {
            Some(g) => {
                self.move_lag_to(self.params.chain_of(g));
                self.lag.key(self.params.key_index(g)).clone()
            }
            None => ChainKey::from_bytes([0; KEY_LEN]),
        };
        let next_commitment = if self.params.carries_next_commitment(i) {
            Some(self.next_commitment())
        } else {
            None
        };
        IntervalKeys {
            mac_key,
            disclosed,
            next_commitment,
        }
    }

    fn next_commitment(&mut self) -> ChainKey {
        let placeholder = NextChain::Ready(
            Traversal::new(TeslaF, ChainKey::from_bytes([0; KEY_LEN]), 1)
                .map(|(t, _)| t)
                .unwrap_or_else(|_| unreachable!("length 1 is valid")),
            ChainKey::from_bytes([0; KEY_LEN]),
        );
        let ready = match core::mem::replace(&mut self.next, placeholder) {
            NextChain::Building(b) => {
                let (t, c) = b.finish();
                NextChain::Ready(t, c)
            }
            ready => ready,
        };
        self.next = ready;
        match &self.next {
            NextChain::Ready(_, c) => c.clone(),
            NextChain::Building(_) => unreachable!("just finished"),
        }
    }

    /// Spreads the next chain's setup over the intervals before the rollover lead.
    fn build_next_chain(&mut self, i: u32) {
        if self.worked == Some(i) {
            return;
        }
        self.worked = Some(i);
        let NextChain::Building(builder) = &mut self.next else {
            return;
        };
        let p = &self.params;
        let deadline_index = p.chain_len - p.rollover_lead + 1;
        let deadline = p
            .interval_of(self.lead.chain, deadline_index)
            .unwrap_or(u32::MAX);
        let left = u64::from(deadline.saturating_sub(i));
        let remaining = builder.remaining_work();
        builder.work(if left == 0 {
            remaining
        } else {
            remaining.div_ceil(left)
        });
    }

    fn move_lead_to(&mut self, chain: u32) {
        if chain == self.lead.chain {
            return;
        }
        let cursor = if chain == self.lead.chain + 1 {
            self.next_commitment();
            let placeholder = NextChain::Building(
                TraversalBuilder::new(TeslaF, ChainKey::from_bytes([0; KEY_LEN]), 1)
                    .unwrap_or_else(|_| unreachable!("length 1 is valid")),
            );
            match core::mem::replace(&mut self.next, placeholder) {
                NextChain::Ready(t, c) => Cursor::new(chain, t, c),
                NextChain::Building(_) => unreachable!("finished above"),
            }
        } else {
            build_cursor(&self.master, &self.params, chain)
        };
        self.lag_stash = Some((chain, cursor.traversal.clone(), cursor.commitment.clone()));
        self.lead = cursor;
        self.next = start_next(&self.master, &self.params, chain);
        self.worked = None;
    }

    fn move_lag_to(&mut self, chain: u32) {
        if chain == self.lag.chain {
            return;
        }
        self.lag = match self.lag_stash.take() {
            Some((c, t, k)) if c == chain => Cursor::new(chain, t, k),
            _ if chain == self.lead.chain => {
                Cursor::new(chain, self.lead_fresh(), self.lead.commitment.clone())
            }
            _ => build_cursor(&self.master, &self.params, chain),
        };
    }

    fn lead_fresh(&self) -> Traversal<TeslaF> {
        Traversal::new(
            TeslaF,
            chain_seed(&self.master, self.lead.chain),
            u64::from(self.params.chain_len),
        )
        .map(|(t, _)| t)
        .unwrap_or_else(|_| unreachable!("validated chain length"))
    }

    /// Serializes the sender for a warm restart. **Contains the master secret
    /// and undisclosed keys**: store it like a private key. After a restart the
    /// sender refuses intervals before the latest one used.
    #[must_use]
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = vec![STATE_VERSION];
        self.params.encode(&mut out);
        put_u64(&mut out, self.max_datagram as u64);
        out.extend_from_slice(self.master.as_bytes());
        for v in [self.latest, self.worked] {
            match v {
                Some(i) => {
                    out.push(1);
                    put_u32(&mut out, i);
                }
                None => out.push(0),
            }
        }
        self.lead.encode(&mut out);
        self.lag.encode(&mut out);
        match &self.next {
            NextChain::Building(b) => {
                out.push(0);
                put_bytes(&mut out, &b.to_bytes());
            }
            NextChain::Ready(t, c) => {
                out.push(1);
                put_bytes(&mut out, &t.to_bytes());
                out.extend_from_slice(c.as_bytes());
            }
        }
        match &self.lag_stash {
            Some((chain, t, c)) => {
                out.push(1);
                put_u32(&mut out, *chain);
                put_bytes(&mut out, &t.to_bytes());
                out.extend_from_slice(c.as_bytes());
            }
            None => out.push(0),
        }
        out
    }

    /// Restores a sender saved by [`Sender::to_bytes`].
    ///
    /// # Errors
    /// Undecodable state or parameters out of range.
    pub fn from_bytes(bytes: &[u8]) -> Result<Self, SenderError> {
        let mut r = Reader::new(bytes);
        if r.u8("sender state version")? != STATE_VERSION {
            return Err(WireError::InvalidField("sender state version").into());
        }
        let params = Params::decode(&mut r)?;
        let max_datagram = usize::try_from(r.u64("max datagram")?)
            .map_err(|_| WireError::InvalidField("max datagram"))?;
        let master = ChainKey::from_bytes(r.array("master")?);
        let mut opt = || -> Result<Option<u32>, WireError> {
            Ok(if r.flag("interval flag")? {
                Some(r.u32("interval")?)
            } else {
                None
            })
        };
        let latest = opt()?;
        let worked = opt()?;
        let lead = Cursor::decode(&mut r)?;
        let lag = Cursor::decode(&mut r)?;
        let next = if r.flag("next chain flag")? {
            let t = Traversal::from_bytes(TeslaF, get_bytes(&mut r)?)?;
            NextChain::Ready(t, ChainKey::from_bytes(r.array("next commitment")?))
        } else {
            NextChain::Building(TraversalBuilder::from_bytes(TeslaF, get_bytes(&mut r)?)?)
        };
        let lag_stash = if r.flag("stash flag")? {
            let chain = r.u32("stash chain")?;
            let t = Traversal::from_bytes(TeslaF, get_bytes(&mut r)?)?;
            Some((chain, t, ChainKey::from_bytes(r.array("stash commitment")?)))
        } else {
            None
        };
        r.finish()?;
        let n = u64::from(params.chain_len);
        if lead.traversal.len() != n || lag.traversal.len() != n {
            return Err(WireError::InvalidField("chain length").into());
        }
        Ok(Self {
            params,
            max_datagram,
            master,
            lead,
            lag,
            next,
            lag_stash,
            latest,
            worked,
        })
    }
}

struct IntervalKeys {
    mac_key: ChainKey,
    disclosed: ChainKey,
    next_commitment: Option<ChainKey>,
}

fn build_cursor(master: &ChainKey, params: &Params, chain: u32) -> Cursor {
    let (t, c) = Traversal::new(
        TeslaF,
        chain_seed(master, chain),
        u64::from(params.chain_len),
    )
    .unwrap_or_else(|_| unreachable!("validated chain length"));
    Cursor::new(chain, t, c)
}

fn start_next(master: &ChainKey, params: &Params, chain: u32) -> NextChain {
    let seed = chain_seed(master, chain.wrapping_add(1));
    NextChain::Building(
        TraversalBuilder::new(TeslaF, seed, u64::from(params.chain_len))
            .unwrap_or_else(|_| unreachable!("validated chain length")),
    )
}

#[cfg(test)]
mod tests;
