//! NTS-protected NTP in the worker (RFC 8915 section 5): which datagrams are
//! NTS requests, and answering one through [`NtsServer::respond_late`] with
//! the master keys in force, or the requests of a receive batch together
//! ([`NtsBatch`], then [`NtsServer::finish`] for each). The reply header (with its transmit timestamp)
//! is built by the caller's closure, which `respond_late` calls after the
//! cookie is opened, the request authenticated and the fresh cookies sealed,
//! just before the reply is sealed under that header.

use std::sync::Arc;

use authtime_nts::{
    HeaderFor, KeyRing, MAX_BATCH, NtsServer, PreparedNts, ServerAction as NtsAction,
};
use authtime_packet_io::DATAGRAM_LEN;
use authtime_proto::ServerAction;
use authtime_wire::Header;

use crate::metrics::WorkerCounters;
use crate::nts::keys::RingKeeper;

/// What the workers share for NTS.
#[derive(Debug)]
pub(crate) struct NtsShared {
    pub(crate) server: NtsServer,
    pub(crate) keeper: Arc<RingKeeper>,
}

/// NTS extension field types (RFC 8915 section 5.7 / IANA): Unique
/// Identifier, NTS Cookie, Cookie Placeholder, Authenticator.
const NTS_FIELD_TYPES: [u16; 4] = [0x0104, 0x0204, 0x0304, 0x0404];

/// Whether `datagram` carries an NTS extension field, looking only at the
/// extension field headers (at most one step per 4 bytes of input).
#[must_use]
pub(crate) fn is_nts_request(datagram: &[u8]) -> bool {
    let mut at = 48;
    while let Some(field) = datagram.get(at..at + 4) {
        let field_type = u16::from_be_bytes([field[0], field[1]]);
        let len = usize::from(u16::from_be_bytes([field[2], field[3]]));
        if NTS_FIELD_TYPES.contains(&field_type) {
            return true;
        }
        if len < 16 || !len.is_multiple_of(4) {
            return false;
        }
        at += len;
    }
    false
}

/// Random bytes for nonces and cookies, taken from the kernel 4 KiB at a
/// time rather than one system call per packet.
#[derive(Debug)]
pub(crate) struct RandomPool {
    buf: Box<[u8; 4096]>,
    used: usize,
}

impl RandomPool {
    pub(crate) fn new() -> Self {
        Self {
            buf: Box::new([0; 4096]),
            used: 4096,
        }
    }

    pub(crate) fn fill(&mut self, mut dst: &mut [u8]) {
        while !dst.is_empty() {
            if self.used == self.buf.len() {
                if getrandom::fill(&mut self.buf[..]).is_err() {
                    // Never seen on Linux; refuse to hand out reused bytes.
                    tracing::error!("no random bytes from the kernel");
                    self.buf.fill(0);
                }
                self.used = 0;
            }
            let n = dst.len().min(self.buf.len() - self.used);
            dst[..n].copy_from_slice(&self.buf[self.used..self.used + n]);
            // Bytes handed out are wiped from the pool.
            self.buf[self.used..self.used + n].fill(0);
            self.used += n;
            dst = &mut dst[n..];
        }
    }
}

/// What [`answer`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct NtsOutcome {
    /// Send the first bytes of the output, or nothing.
    pub(crate) action: ServerAction,
    /// The output is a protected time reply (not a NAK).
    pub(crate) time_reply: bool,
}

/// The NTS requests of one receive batch, prepared together in chunks of
/// [`MAX_BATCH`] ([`NtsServer::prepare_batch`]): their cookies opened, the
/// requests authenticated and the fresh cookies sealed, side by side. Each
/// is then finished in turn, header last, by [`answer`].
#[derive(Debug)]
pub(crate) struct NtsBatch {
    outs: Box<[[u8; DATAGRAM_LEN]; MAX_BATCH]>,
    prepared: [PreparedNts; MAX_BATCH],
    /// Requests of the chunk prepared last.
    len: usize,
    /// The chunk's preparation time per request, for the histogram.
    share_ns: u64,
}

/// One request's part of a prepared chunk, for [`answer`].
#[derive(Debug, Clone, Copy)]
pub(crate) struct Prepared<'a> {
    pub(crate) step: &'a PreparedNts,
    /// The reply as far as the batch wrote it.
    pub(crate) partial: &'a [u8],
    /// Nanoseconds of the batch's work that go to this request.
    pub(crate) share_ns: u64,
}

impl NtsBatch {
    pub(crate) fn new() -> Self {
        Self {
            outs: Box::new([[0; DATAGRAM_LEN]; MAX_BATCH]),
            prepared: Default::default(),
            len: 0,
            share_ns: 0,
        }
    }

    /// Prepares `requests` (at most [`MAX_BATCH`]; a chunk of one is left to
    /// [`answer`] on its own, which is cheaper).
    pub(crate) fn prepare(
        &mut self,
        nts: &NtsShared,
        ring: &KeyRing,
        requests: &[&[u8]],
        now_unix_secs: u64,
        random: &mut RandomPool,
    ) {
        self.len = requests.len().min(MAX_BATCH);
        if self.len < 2 {
            self.len = 0;
            return;
        }
        let started = std::time::Instant::now();
        let mut outs: [&mut [u8]; MAX_BATCH] = Default::default();
        for (o, buf) in outs.iter_mut().zip(self.outs.iter_mut()) {
            *o = &mut buf[..];
        }
        nts.server.prepare_batch(
            &requests[..self.len],
            ring,
            now_unix_secs,
            &mut |b: &mut [u8]| random.fill(b),
            &mut outs[..self.len],
            &mut self.prepared[..self.len],
        );
        let took = u64::try_from(started.elapsed().as_nanos()).unwrap_or(u64::MAX);
        self.share_ns = took / self.len as u64;
    }

    /// Request `i` of the chunk prepared last, if it was prepared.
    pub(crate) fn get(&self, i: usize) -> Option<Prepared<'_>> {
        if i >= self.len {
            return None;
        }
        Some(Prepared {
            step: self.prepared.get(i)?,
            partial: self.outs.get(i)?,
            share_ns: self.share_ns,
        })
    }
}

/// Answers one NTS request whose NTP header is `request_header`: a
/// protected reply, an NTS NAK, or a drop, each counted. `out` must be at
/// least as long as `request`. `reply_header` builds the reply's header at
/// the last moment (see the module doc). `ring`: the master keys in force,
/// fetched once per receive batch. `prepared`: what a batch already did for
/// it ([`NtsBatch`]); else it is answered on its own.
#[expect(
    clippy::too_many_arguments,
    reason = "the request, what a batch prepared, and what is counted"
)]
pub(crate) fn answer(
    nts: &NtsShared,
    ring: &KeyRing,
    request: &[u8],
    prepared: Option<Prepared<'_>>,
    now_unix_secs: u64,
    random: &mut RandomPool,
    out: &mut [u8],
    counters: &mut WorkerCounters,
    reply_header: impl FnOnce(HeaderFor) -> Header,
) -> NtsOutcome {
    counters.received += 1;
    let mut rng = |buf: &mut [u8]| random.fill(buf);
    let started = std::time::Instant::now();
    let (result, share_ns) = match prepared {
        Some(p) => {
            counters.nts_batched += u64::from(p.step.is_batched());
            // The batch wrote the reply's cookies into its own buffer.
            let n = p.partial.len().min(out.len()).min(request.len());
            out[..n].copy_from_slice(&p.partial[..n]);
            let r = nts.server.finish(
                request,
                p.step,
                ring,
                now_unix_secs,
                &mut rng,
                out,
                reply_header,
            );
            (r, p.share_ns)
        }
        None => (
            nts.server
                .respond_late(request, ring, now_unix_secs, &mut rng, out, reply_header),
            0,
        ),
    };
    let took = u64::try_from(started.elapsed().as_nanos()).unwrap_or(u64::MAX);
    let took = took.saturating_add(share_ns);
    match result {
        Ok(NtsAction::Reply { len, cookies }) => {
            counters.nts_time.record(took, 1);
            counters.nts_answered += 1;
            counters.nts_cookies_issued += cookies as u64;
            NtsOutcome {
                action: ServerAction::Send(len),
                time_reply: true,
            }
        }
        Ok(NtsAction::Nak { len, reason }) => {
            counters.nts_naks.add(reason.name(), 1);
            NtsOutcome {
                action: ServerAction::Send(len),
                time_reply: false,
            }
        }
        Err(reason) => {
            counters.nts_dropped.add(reason.name(), 1);
            NtsOutcome {
                action: ServerAction::Drop(authtime_proto::DropReason::Nts),
                time_reply: false,
            }
        }
    }
}

/// Counts an NTS request whose NTP header does not decode.
pub(crate) fn count_malformed(counters: &mut WorkerCounters) {
    counters.received += 1;
    counters.nts_dropped.add("malformed", 1);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nts_fields_are_found_and_garbage_is_not_followed() {
        let mut packet = vec![0x23; 48];
        assert!(!is_nts_request(&packet));
        // A 16-byte unknown field, then a UID field.
        packet.extend_from_slice(&[0x12, 0x34, 0, 16]);
        packet.extend_from_slice(&[0; 12]);
        assert!(!is_nts_request(&packet));
        packet.extend_from_slice(&[0x01, 0x04, 0, 36]);
        packet.extend_from_slice(&[0; 32]);
        assert!(is_nts_request(&packet));
        // A zero length stops the walk.
        let mut looping = vec![0x23; 48];
        looping.extend_from_slice(&[0x12, 0x34, 0, 0, 0x01, 0x04, 0, 16]);
        assert!(!is_nts_request(&looping));
        assert!(!is_nts_request(&[]));
    }

    #[test]
    fn the_pool_never_hands_out_the_same_bytes_twice() {
        let mut pool = RandomPool::new();
        let mut seen = std::collections::HashSet::new();
        for _ in 0..1000 {
            let mut nonce = [0u8; 16];
            pool.fill(&mut nonce);
            assert!(seen.insert(nonce));
        }
        let mut big = vec![0u8; 10_000];
        pool.fill(&mut big);
        assert!(big.iter().any(|b| *b != 0));
    }
}
