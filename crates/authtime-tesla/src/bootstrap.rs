//! Bootstrap (RFC 4082 section 3.3, RFC 5776): the signed sync response, its
//! fragmentation into datagrams, and the receiver's side of the exchange.
//!
//! The receiver sends a nonce ([`SyncClient::new`]); the sender answers with a
//! [`SyncResponse`] (its clock, the schedule, the MAC, a key of the current
//! chain as commitment) signed over its exact serialized bytes, in
//! [`fragment`]s of at most `max_datagram` bytes. The receiver reassembles
//! the fragments ([`Reassembler`]), checks the signature, the nonce and the
//! parameters, derives its bound on the sender's clock and starts a
//! [`Receiver`]; any failed check leaves it without a receiver.
//!
//! Signatures are behind two traits so that any scheme can be plugged in:
//! Ed25519, ECDSA P-256, ML-DSA, SLH-DSA or LMS adapters live with the caller.

use core::fmt;

use crate::codec::{Reader, WireError, put_u16, put_u32, put_u64};
use crate::owf::{ChainKey, KEY_LEN};
use crate::params::{ParamError, Params, mac_from_wire};
use crate::receiver::{Receiver, ReceiverConfig};
use crate::time::{ClockBound, Time};
use crate::wire::{
    FRAGMENT_HEADER_LEN, FRAGMENT_TAG_LEN, Fragment, MAX_NONCE_LEN, MIN_NONCE_LEN, SyncRequest,
};

/// Signs sync responses (the sender's long-term key).
pub trait BootstrapSigner {
    /// Identifier of the scheme, carried in the signed response.
    fn scheme_id(&self) -> u16;
    /// Signs `msg`.
    ///
    /// # Errors
    /// Whatever the scheme reports (an exhausted stateful key, say).
    fn sign(&mut self, msg: &[u8]) -> Result<Vec<u8>, SignError>;
}

/// Verifies sync responses (the receiver's trusted copy of the sender's key).
pub trait BootstrapVerifier {
    /// Identifier of the scheme the key belongs to.
    fn scheme_id(&self) -> u16;
    /// Whether `sig` is a valid signature of `msg`.
    fn verify(&self, msg: &[u8], sig: &[u8]) -> bool;
}

/// A signer's failure, described by the signer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SignError(pub String);

impl fmt::Display for SignError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "signing failed: {}", self.0)
    }
}

impl std::error::Error for SignError {}

/// Prefix of every signed message, so that a signature over a sync response
/// cannot be taken for a signature in another protocol using the same key.
pub const SIGNING_CONTEXT: &[u8] = b"authtime-tesla sync response v1\0";
/// Longest signature accepted (SLH-DSA-SHA2-256f is 49 856 bytes).
pub const MAX_SIGNATURE_LEN: usize = 50_000;
/// Default largest datagram for fragments.
pub const DEFAULT_MAX_DATAGRAM: usize = 1200;
/// Smallest `max_datagram` that [`fragment`] accepts.
pub const MIN_DATAGRAM: usize = 64;

const RESPONSE_VERSION: u8 = 1;

/// Why a bootstrap did not produce a receiver.
#[non_exhaustive]
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BootstrapError {
    /// A datagram or the response did not decode.
    Wire(WireError),
    /// A fragment answers another receiver's request (its nonce tag differs).
    NotOurs,
    /// Fragments contradict each other (reassembly restarted).
    FragmentConflict,
    /// More fragments or bytes than the configured bound.
    TooLarge,
    /// The response names another signature scheme than the verifier's.
    SchemeMismatch {
        /// Scheme in the response.
        got: u16,
        /// Scheme of the verifier.
        expected: u16,
    },
    /// The signature does not verify.
    BadSignature,
    /// The response echoes another nonce.
    NonceMismatch,
    /// The parameters are out of range.
    Params(ParamError),
    /// The response contradicts itself (the field is named).
    Inconsistent(&'static str),
    /// The local clock read less at the response than at the request.
    ClockWentBackwards,
    /// The round trip exceeded the configured maximum.
    RoundTripTooLong(u64),
    /// The clock uncertainty is at least `d` intervals: every packet would be
    /// unsafe on arrival.
    UncertaintyTooLarge,
    /// The signed sender time is later than the given clock bound allows.
    ClockBoundViolated,
    /// The nonce length is outside `MIN_NONCE_LEN ..= MAX_NONCE_LEN`.
    NonceLength(usize),
    /// The signer failed.
    Sign(SignError),
    /// The response does not fit in 255 fragments of this size.
    DatagramTooSmall(usize),
}

impl fmt::Display for BootstrapError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Wire(e) => write!(f, "malformed bootstrap message: {e}"),
            Self::NotOurs => f.write_str("fragment of another receiver's response"),
            Self::FragmentConflict => f.write_str("conflicting fragments"),
            Self::TooLarge => f.write_str("response larger than allowed"),
            Self::SchemeMismatch { got, expected } => {
                write!(f, "signature scheme {got}, expected {expected}")
            }
            Self::BadSignature => f.write_str("signature does not verify"),
            Self::NonceMismatch => f.write_str("response to another nonce"),
            Self::Params(e) => write!(f, "parameters refused: {e}"),
            Self::Inconsistent(what) => write!(f, "inconsistent response: {what}"),
            Self::ClockWentBackwards => f.write_str("local clock went backwards"),
            Self::RoundTripTooLong(ns) => write!(f, "round trip of {ns} ns too long"),
            Self::UncertaintyTooLarge => f.write_str(
                "clock uncertainty of d intervals or more: every packet would be unsafe",
            ),
            Self::ClockBoundViolated => f.write_str("sender clock beyond the given bound"),
            Self::NonceLength(n) => write!(f, "nonce of {n} bytes"),
            Self::Sign(e) => e.fmt(f),
            Self::DatagramTooSmall(n) => write!(f, "datagrams of {n} bytes are too small"),
        }
    }
}

impl std::error::Error for BootstrapError {}

impl From<WireError> for BootstrapError {
    fn from(e: WireError) -> Self {
        Self::Wire(e)
    }
}

/// The sender's signed bootstrap information (RFC 4082 section 3.3,
/// RFC 5776 section 3.2).
///
/// Body layout, big-endian, signed as `SIGNING_CONTEXT || body`:
///
/// | bytes | field |
/// |---|---|
/// | 1 | version (1) |
/// | 2 | signature scheme id |
/// | 1 + n | nonce length, nonce |
/// | 8 | sender time (ns) |
/// | 8 | `T_0` (ns, sender clock) |
/// | 8 | `T_int` (ns) |
/// | 4 | current interval |
/// | 4 | disclosure delay `d` |
/// | 4 | chain length `N` |
/// | 4 | rollover lead |
/// | 1 + m | MAC name length, MAC name (ASCII, `authtime mac list`) |
/// | 1 | tag length |
/// | 4 + 4 + 32 | commitment: chain, index `j`, key `K_j` |
/// | 1 (+ 32) | next chain's `K_0` present (0/1), key |
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SyncResponse {
    /// Signature scheme.
    pub scheme_id: u16,
    /// The request's nonce.
    pub nonce: Vec<u8>,
    /// The sender's clock when it answered.
    pub sender_time: Time,
    /// Session parameters.
    pub params: Params,
    /// The interval `sender_time` falls in.
    pub current_interval: u32,
    /// Chain of the commitment (the current chain).
    pub commitment_chain: u32,
    /// Index `j` of the commitment `K_j` in its chain (0 for `K_0`).
    pub commitment_index: u32,
    /// The commitment: a key already disclosed, or `K_0`.
    pub commitment: ChainKey,
    /// `K_0` of the next chain, when the sender already has it.
    pub next_commitment: Option<ChainKey>,
}

impl SyncResponse {
    /// The exact bytes that are signed (after [`SIGNING_CONTEXT`]).
    #[must_use]
    pub fn encode_body(&self) -> Vec<u8> {
        let p = &self.params;
        let mut out = vec![RESPONSE_VERSION];
        put_u16(&mut out, self.scheme_id);
        out.push(self.nonce.len() as u8);
        out.extend_from_slice(&self.nonce);
        put_u64(&mut out, self.sender_time.0);
        put_u64(&mut out, p.t0.0);
        put_u64(&mut out, p.interval_ns);
        put_u32(&mut out, self.current_interval);
        put_u32(&mut out, p.disclosure_delay);
        put_u32(&mut out, p.chain_len);
        put_u32(&mut out, p.rollover_lead);
        let name = p.mac.name().as_bytes();
        out.push(name.len() as u8);
        out.extend_from_slice(name);
        out.push(p.tag_len);
        put_u32(&mut out, self.commitment_chain);
        put_u32(&mut out, self.commitment_index);
        out.extend_from_slice(self.commitment.as_bytes());
        match &self.next_commitment {
            Some(k) => {
                out.push(1);
                out.extend_from_slice(k.as_bytes());
            }
            None => out.push(0),
        }
        out
    }

    /// Decodes a body; trailing bytes and unknown MAC names are errors.
    ///
    /// # Errors
    /// Any [`WireError`]; never panics.
    pub fn decode_body(body: &[u8]) -> Result<Self, WireError> {
        let mut r = Reader::new(body);
        if r.u8("response version")? != RESPONSE_VERSION {
            return Err(WireError::InvalidField("response version"));
        }
        let scheme_id = r.u16("scheme id")?;
        let nonce_len = usize::from(r.u8("nonce length")?);
        let nonce = r.bytes(nonce_len, "nonce")?.to_vec();
        let sender_time = Time(r.u64("sender time")?);
        let t0 = Time(r.u64("T_0")?);
        let interval_ns = r.u64("T_int")?;
        let current_interval = r.u32("current interval")?;
        let disclosure_delay = r.u32("delay")?;
        let chain_len = r.u32("chain length")?;
        let rollover_lead = r.u32("rollover lead")?;
        let name_len = usize::from(r.u8("MAC name length")?);
        let mac = mac_from_wire(r.bytes(name_len, "MAC name")?)?;
        let tag_len = r.u8("tag length")?;
        let commitment_chain = r.u32("commitment chain")?;
        let commitment_index = r.u32("commitment index")?;
        let commitment = ChainKey::from_bytes(r.array::<KEY_LEN>("commitment")?);
        let next_commitment = if r.flag("next commitment flag")? {
            Some(ChainKey::from_bytes(r.array::<KEY_LEN>("next commitment")?))
        } else {
            None
        };
        r.finish()?;
        Ok(Self {
            scheme_id,
            nonce,
            sender_time,
            params: Params {
                t0,
                interval_ns,
                disclosure_delay,
                chain_len,
                mac,
                tag_len,
                rollover_lead,
            },
            current_interval,
            commitment_chain,
            commitment_index,
            commitment,
            next_commitment,
        })
    }

    /// Signs the response and splits it into datagrams of at most `max_datagram` bytes.
    ///
    /// # Errors
    /// The signer's error, or a datagram size too small for the response.
    pub fn sign_and_fragment(
        &self,
        signer: &mut dyn BootstrapSigner,
        max_datagram: usize,
    ) -> Result<Vec<Vec<u8>>, BootstrapError> {
        let body = self.encode_body();
        let sig = signer
            .sign(&signed_message(&body))
            .map_err(BootstrapError::Sign)?;
        if sig.len() > MAX_SIGNATURE_LEN {
            return Err(BootstrapError::TooLarge);
        }
        let mut blob = Vec::with_capacity(2 + body.len() + sig.len());
        put_u16(&mut blob, body.len() as u16);
        blob.extend_from_slice(&body);
        blob.extend_from_slice(&sig);
        fragment(&blob, &fragment_tag(&self.nonce), max_datagram)
    }
}

/// The first [`FRAGMENT_TAG_LEN`] bytes of a nonce (zero-padded if shorter).
#[must_use]
pub fn fragment_tag(nonce: &[u8]) -> [u8; FRAGMENT_TAG_LEN] {
    let mut tag = [0u8; FRAGMENT_TAG_LEN];
    let n = nonce.len().min(FRAGMENT_TAG_LEN);
    tag[..n].copy_from_slice(&nonce[..n]);
    tag
}

/// `SIGNING_CONTEXT || body`.
#[must_use]
pub fn signed_message(body: &[u8]) -> Vec<u8> {
    let mut m = Vec::with_capacity(SIGNING_CONTEXT.len() + body.len());
    m.extend_from_slice(SIGNING_CONTEXT);
    m.extend_from_slice(body);
    m
}

/// Splits a signed response (`body length u16 | body | signature`) into
/// fragments: all chunks but the last have the same length.
///
/// # Errors
/// [`BootstrapError::DatagramTooSmall`] below [`MIN_DATAGRAM`] or when more
/// than 255 fragments would be needed.
pub fn fragment(
    blob: &[u8],
    tag: &[u8; FRAGMENT_TAG_LEN],
    max_datagram: usize,
) -> Result<Vec<Vec<u8>>, BootstrapError> {
    if max_datagram < MIN_DATAGRAM {
        return Err(BootstrapError::DatagramTooSmall(max_datagram));
    }
    let chunk = max_datagram - FRAGMENT_HEADER_LEN;
    let count = blob.len().div_ceil(chunk).max(1);
    let count = u8::try_from(count).map_err(|_| BootstrapError::DatagramTooSmall(max_datagram))?;
    Ok(blob
        .chunks(chunk)
        .enumerate()
        .map(|(i, c)| Fragment::encode(tag, i as u8, count, c))
        .collect())
}

/// Counters of a [`Reassembler`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ReassemblyStats {
    /// Fragments stored.
    pub fragments: u64,
    /// Exact duplicates ignored.
    pub duplicates: u64,
    /// Fragments of other receivers' responses.
    pub foreign: u64,
    /// Undecodable datagrams.
    pub malformed: u64,
    /// Contradictions that restarted the reassembly.
    pub conflicts: u64,
}

/// Collects the fragments of one response, in any order, with bounded memory:
/// at most `max_fragments` fragments of at most `max_datagram` bytes each.
/// Duplicates are ignored; a fragment that contradicts the ones held (another
/// count, another chunk length, other bytes at the same index) restarts it.
#[derive(Debug, Clone)]
pub struct Reassembler {
    tag: [u8; FRAGMENT_TAG_LEN],
    max_fragments: u8,
    max_bytes: usize,
    count: u8,
    chunk_len: Option<usize>,
    chunks: Vec<Option<Vec<u8>>>,
    bytes: usize,
    /// Counters.
    pub stats: ReassemblyStats,
}

impl Reassembler {
    /// A reassembler for the response to the nonce whose prefix is `tag`.
    #[must_use]
    pub fn new(tag: [u8; FRAGMENT_TAG_LEN], max_fragments: u8, max_bytes: usize) -> Self {
        Self {
            tag,
            max_fragments,
            max_bytes,
            count: 0,
            chunk_len: None,
            chunks: Vec::new(),
            bytes: 0,
            stats: ReassemblyStats::default(),
        }
    }

    fn reset(&mut self) {
        self.count = 0;
        self.chunk_len = None;
        self.chunks.clear();
        self.bytes = 0;
    }

    /// Takes one datagram; returns the whole response once every fragment is in.
    ///
    /// # Errors
    /// Malformed and foreign fragments (ignored), bounds exceeded and conflicts
    /// (reassembly restarted).
    pub fn push(&mut self, datagram: &[u8]) -> Result<Option<Vec<u8>>, BootstrapError> {
        let f = match Fragment::parse(datagram) {
            Ok(f) => f,
            Err(e) => {
                self.stats.malformed += 1;
                return Err(e.into());
            }
        };
        if *f.tag != self.tag {
            self.stats.foreign += 1;
            return Err(BootstrapError::NotOurs);
        }
        if f.count > self.max_fragments || f.chunk.len() > self.max_bytes {
            self.stats.malformed += 1;
            return Err(BootstrapError::TooLarge);
        }
        if self.count == 0 {
            self.count = f.count;
            self.chunks = vec![None; usize::from(f.count)];
        }
        let index = usize::from(f.index);
        let last = f.index + 1 == f.count;
        let fits = f.count == self.count
            && match (last, self.chunk_len) {
                (false, Some(l)) => f.chunk.len() == l,
                (false, None) => self.last_chunk_len().is_none_or(|n| n <= f.chunk.len()),
                (true, Some(l)) => f.chunk.len() <= l,
                (true, None) => true,
            };
        let duplicate = match &self.chunks.get(index) {
            Some(Some(held)) => Some(held.as_slice() == f.chunk),
            _ => None,
        };
        match (fits, duplicate) {
            (true, Some(true)) => {
                self.stats.duplicates += 1;
                return Ok(None);
            }
            (true, None) => {}
            _ => {
                self.stats.conflicts += 1;
                self.reset();
                return Err(BootstrapError::FragmentConflict);
            }
        }
        if self.bytes + f.chunk.len() > self.max_bytes {
            self.stats.conflicts += 1;
            self.reset();
            return Err(BootstrapError::TooLarge);
        }
        if !last {
            self.chunk_len = Some(f.chunk.len());
        }
        self.bytes += f.chunk.len();
        self.chunks[index] = Some(f.chunk.to_vec());
        self.stats.fragments += 1;
        if self.chunks.iter().all(Option::is_some) {
            let blob = self.chunks.iter().flatten().flatten().copied().collect();
            self.reset();
            return Ok(Some(blob));
        }
        Ok(None)
    }

    fn last_chunk_len(&self) -> Option<usize> {
        self.chunks.last().and_then(|c| c.as_ref().map(Vec::len))
    }
}

/// Splits a reassembled response into body and signature.
pub(crate) fn split_blob(blob: &[u8]) -> Result<(&[u8], &[u8]), WireError> {
    let mut r = Reader::new(blob);
    let len = usize::from(r.u16("body length")?);
    let body = r.bytes(len, "body")?;
    let sig = r.rest();
    if sig.len() > MAX_SIGNATURE_LEN {
        return Err(WireError::InvalidField("signature length"));
    }
    Ok((body, sig))
}

/// The receiver's side of the bootstrap: one outstanding request.
#[derive(Debug, Clone)]
pub struct SyncClient {
    nonce: Vec<u8>,
    sent_at: Time,
    config: ReceiverConfig,
    reassembler: Reassembler,
}

impl SyncClient {
    /// Prepares a request with `nonce` (16 to 64 random bytes from the caller's
    /// RNG) sent at local time `now`; returns the client and the datagram to send.
    ///
    /// # Errors
    /// [`BootstrapError::NonceLength`].
    pub fn new(
        nonce: &[u8],
        now: Time,
        config: ReceiverConfig,
    ) -> Result<(Self, Vec<u8>), BootstrapError> {
        if !(MIN_NONCE_LEN..=MAX_NONCE_LEN).contains(&nonce.len()) {
            return Err(BootstrapError::NonceLength(nonce.len()));
        }
        let tag = fragment_tag(nonce);
        let max_bytes = usize::from(config.max_fragments) * config.max_datagram;
        let client = Self {
            nonce: nonce.to_vec(),
            sent_at: now,
            reassembler: Reassembler::new(tag, config.max_fragments, max_bytes),
            config,
        };
        let request = SyncRequest::encode(nonce);
        Ok((client, request))
    }

    /// Local time the request was sent.
    #[must_use]
    pub fn sent_at(&self) -> Time {
        self.sent_at
    }

    /// Reassembly counters.
    #[must_use]
    pub fn reassembly_stats(&self) -> ReassemblyStats {
        self.reassembler.stats
    }

    /// Takes one datagram of the response, received at local time `now`. With
    /// direct time synchronisation the clock bound is
    /// `sender_time <= local_time + (t_s - t_r) + drift` (see
    /// [`ClockBound::direct`]). Returns the started receiver once the whole
    /// response is in and every check passed.
    ///
    /// After an error the client keeps listening: a forged or broken response
    /// does not stop a genuine one from completing later.
    ///
    /// # Errors
    /// See [`BootstrapError`]; none of them starts a receiver.
    pub fn handle(
        &mut self,
        datagram: &[u8],
        now: Time,
        verifier: &dyn BootstrapVerifier,
    ) -> Result<Option<Receiver>, BootstrapError> {
        let Some(blob) = self.reassembler.push(datagram)? else {
            return Ok(None);
        };
        let response = self.verify(&blob, verifier)?;
        if now < self.sent_at {
            return Err(BootstrapError::ClockWentBackwards);
        }
        let rtt = now.0 - self.sent_at.0;
        if rtt > self.config.max_round_trip_ns {
            return Err(BootstrapError::RoundTripTooLong(rtt));
        }
        let p = &response.params;
        if u128::from(rtt) >= u128::from(p.disclosure_delay) * u128::from(p.interval_ns) {
            return Err(BootstrapError::UncertaintyTooLarge);
        }
        let bound = ClockBound::direct(self.sent_at, response.sender_time, self.config.drift_ppm);
        self.start(response, bound, now).map(Some)
    }

    /// As [`SyncClient::handle`], with a clock bound from indirect time
    /// synchronisation ([`ClockBound::indirect`]) instead of the round trip.
    ///
    /// # Errors
    /// See [`BootstrapError`]; none of them starts a receiver.
    pub fn handle_indirect(
        &mut self,
        datagram: &[u8],
        now: Time,
        verifier: &dyn BootstrapVerifier,
        bound: ClockBound,
    ) -> Result<Option<Receiver>, BootstrapError> {
        let Some(blob) = self.reassembler.push(datagram)? else {
            return Ok(None);
        };
        let response = self.verify(&blob, verifier)?;
        if i128::from(response.sender_time.0) > bound.sender_time_upper_bound(now) {
            return Err(BootstrapError::ClockBoundViolated);
        }
        self.start(response, bound, now).map(Some)
    }

    /// Checks a reassembled response: scheme, signature, nonce, parameters and
    /// their consistency.
    ///
    /// # Errors
    /// See [`BootstrapError`].
    pub fn verify(
        &self,
        blob: &[u8],
        verifier: &dyn BootstrapVerifier,
    ) -> Result<SyncResponse, BootstrapError> {
        let (body, sig) = split_blob(blob)?;
        let response = SyncResponse::decode_body(body)?;
        if response.scheme_id != verifier.scheme_id() {
            return Err(BootstrapError::SchemeMismatch {
                got: response.scheme_id,
                expected: verifier.scheme_id(),
            });
        }
        if !verifier.verify(&signed_message(body), sig) {
            return Err(BootstrapError::BadSignature);
        }
        if response.nonce != self.nonce {
            return Err(BootstrapError::NonceMismatch);
        }
        check_response(&response)?;
        Ok(response)
    }

    fn start(
        &self,
        response: SyncResponse,
        bound: ClockBound,
        now: Time,
    ) -> Result<Receiver, BootstrapError> {
        Ok(Receiver::start(
            response.params,
            bound,
            self.config.clone(),
            (
                response.commitment_chain,
                response.commitment_index,
                response.commitment,
            ),
            response.next_commitment,
            now,
            &self.nonce,
        ))
    }
}

/// The consistency checks of a signed response.
fn check_response(r: &SyncResponse) -> Result<(), BootstrapError> {
    let p = &r.params;
    p.validate().map_err(BootstrapError::Params)?;
    if p.schedule().interval_at(r.sender_time) != Some(r.current_interval) {
        return Err(BootstrapError::Inconsistent("current interval"));
    }
    if r.commitment_chain != p.chain_of(r.current_interval) {
        return Err(BootstrapError::Inconsistent("commitment chain"));
    }
    if r.commitment_index > p.chain_len {
        return Err(BootstrapError::Inconsistent("commitment index"));
    }
    if r.commitment_index > 0 {
        let Some(i) = p.interval_of(r.commitment_chain, r.commitment_index) else {
            return Err(BootstrapError::Inconsistent("commitment index"));
        };
        if u64::from(i) + u64::from(p.disclosure_delay) > u64::from(r.current_interval) {
            return Err(BootstrapError::Inconsistent("commitment not disclosed yet"));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests;
