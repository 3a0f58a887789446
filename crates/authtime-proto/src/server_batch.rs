//! Many datagrams at once, as `recvmmsg` delivers them: the requests' MACs
//! are verified grouped per key so that `Mac::verify_many` sees whole batches
//! (the MAC library's multi-lane kernels), and everything else is shared with
//! [`Server::prepare`], so results equal preparing the datagrams one by one.
//!
//! The replies' own MACs are not computed here: they cover the transmit
//! timestamp, which is read for each reply just before it leaves
//! ([`PreparedReply::finish`]).
//!
//! Working memory is fixed arrays of [`MAX_BATCH`] entries on the stack; longer
//! batches are handled in chunks. Nothing here allocates.

use authtime_keys::{KeyEntry, KeySet};
use authtime_mac::{Mac, MacInput, Tag};
use authtime_wire::NtpTimestamp;

use crate::server::{CheckedRequest, ReplyKind, RequestAuth, truncated_matches};
use crate::{DropReason, PreparedReply, Server, ServerAction, ServerStats};

/// Datagrams handled together; longer batches are split. The daemon's NTP
/// worker receives 32 at a time; the working arrays are this long and filled
/// for every batch, so a larger bound would cost every small batch.
pub const MAX_BATCH: usize = 32;

/// One datagram of a batch: the request and its receive timestamp in, the
/// reply buffer and the action out.
#[derive(Debug)]
pub struct BatchItem<'r, 'o> {
    /// The request datagram.
    pub request: &'r [u8],
    /// When it arrived (the reply's receive timestamp).
    pub recv_ts: NtpTimestamp,
    /// Where the reply is written.
    pub out: &'o mut [u8],
    /// Set by [`Server::handle_batch`]: what to do with `out`.
    pub action: ServerAction,
}

impl<'r, 'o> BatchItem<'r, 'o> {
    /// An item for `request`, with its reply to go into `out`.
    pub fn new(request: &'r [u8], recv_ts: NtpTimestamp, out: &'o mut [u8]) -> Self {
        Self {
            request,
            recv_ts,
            out,
            action: ServerAction::Drop(DropReason::OutputTooSmall),
        }
    }
}

impl Server {
    /// Prepares the reply to every `(request, receive timestamp)` into the
    /// slot of `prepared` with the same index, as [`Server::prepare`] would,
    /// verifying the MACs grouped per key. Extra slots on either side are
    /// left alone.
    pub fn prepare_batch<'k>(
        &self,
        requests: &[(&[u8], NtpTimestamp)],
        keys: &'k KeySet,
        prepared: &mut [PreparedReply<'k>],
    ) {
        for (chunk, out) in requests
            .chunks(MAX_BATCH)
            .zip(prepared.chunks_mut(MAX_BATCH))
        {
            self.prepare_chunk(chunk, keys, out);
        }
    }

    fn prepare_chunk<'k>(
        &self,
        requests: &[(&[u8], NtpTimestamp)],
        keys: &'k KeySet,
        prepared: &mut [PreparedReply<'k>],
    ) {
        let n = requests.len().min(prepared.len()).min(MAX_BATCH);
        let mut checked: [Result<CheckedRequest<'_, 'k>, DropReason>; MAX_BATCH] =
            [Err(DropReason::OutputTooSmall); MAX_BATCH];
        for (slot, (request, _)) in checked.iter_mut().zip(&requests[..n]) {
            *slot = self.check_request(request, keys);
        }

        let mut verified = [false; MAX_BATCH];
        verify_grouped(&checked[..n], &mut verified[..n]);

        for i in 0..n {
            let (request, recv_ts) = requests[i];
            let plan = match &checked[i] {
                Err(reason) => crate::server::Plan::Drop(*reason),
                Ok(req) => self.plan(req, verified[i], ReplyKind::Time, recv_ts),
            };
            prepared[i] = PreparedReply::new(plan, request.len(), false);
        }
    }

    /// Handles every item as [`Server::handle`] would, with `tx_ts` as the
    /// transmit timestamp of every reply, and sets each item's `action`.
    /// Outputs, actions and counter events (in item order) are the same as
    /// calling [`Server::handle`] on each item in turn. For tests and tools:
    /// a server that sends replies one by one prepares the batch
    /// ([`Server::prepare_batch`]) and finishes each reply with its own
    /// transmit timestamp.
    pub fn handle_batch(
        &self,
        items: &mut [BatchItem<'_, '_>],
        tx_ts: NtpTimestamp,
        keys: &KeySet,
        stats: &mut impl ServerStats,
    ) {
        for chunk in items.chunks_mut(MAX_BATCH) {
            let mut requests: [(&[u8], NtpTimestamp); MAX_BATCH] =
                [(&[], NtpTimestamp::ZERO); MAX_BATCH];
            for (slot, item) in requests.iter_mut().zip(chunk.iter()) {
                *slot = (item.request, item.recv_ts);
            }
            let n = chunk.len();
            let mut prepared = [PreparedReply::empty(); MAX_BATCH];
            self.prepare_chunk(&requests[..n], keys, &mut prepared[..n]);
            for (item, reply) in chunk.iter_mut().zip(&prepared[..n]) {
                item.action = reply.finish(tx_ts, None, item.out, stats);
            }
        }
    }
}

/// The key of a request whose MAC is still to verify.
fn pending_key<'k>(checked: &Result<CheckedRequest<'_, 'k>, DropReason>) -> Option<&'k KeyEntry> {
    match checked {
        Ok(CheckedRequest {
            auth: RequestAuth::Mac { key, .. },
            ..
        }) => Some(key),
        _ => None,
    }
}

/// Indices `0..len` whose key is `Some`, sorted by key id, so that each key's
/// items are adjacent.
fn by_key<'a>(
    len: usize,
    key_of: impl Fn(usize) -> Option<&'a KeyEntry>,
    order: &mut [usize; MAX_BATCH],
) -> usize {
    let mut m = 0;
    for i in 0..len {
        if key_of(i).is_some() {
            order[m] = i;
            m += 1;
        }
    }
    order[..m].sort_unstable_by_key(|&i| key_of(i).map(KeyEntry::id));
    m
}

/// Calls `f` once per run of `order` with the same key.
fn for_each_key_group<'a>(
    order: &[usize],
    key_of: impl Fn(usize) -> Option<&'a KeyEntry>,
    mut f: impl FnMut(&'a KeyEntry, &[usize]),
) {
    let mut start = 0;
    while start < order.len() {
        let Some(key) = key_of(order[start]) else {
            start += 1;
            continue;
        };
        let end = order[start..]
            .iter()
            .position(|&i| key_of(i).map(KeyEntry::id) != Some(key.id()))
            .map_or(order.len(), |p| start + p);
        f(key, &order[start..end]);
        start = end;
    }
}

/// Verifies every pending MAC, one `verify_many` (or `compute_many`, for
/// digests truncated on the wire) per key.
fn verify_grouped(checked: &[Result<CheckedRequest<'_, '_>, DropReason>], verified: &mut [bool]) {
    let key_of = |i: usize| pending_key(&checked[i]);
    let mut order = [0usize; MAX_BATCH];
    let m = by_key(checked.len(), key_of, &mut order);
    for_each_key_group(&order[..m], key_of, |key, group| {
        let mut inputs = [MacInput::message(&[]); MAX_BATCH];
        let mut digests: [&[u8]; MAX_BATCH] = [&[]; MAX_BATCH];
        for (j, &i) in group.iter().enumerate() {
            if let Ok(CheckedRequest {
                auth:
                    RequestAuth::Mac {
                        authenticated,
                        digest,
                        ..
                    },
                ..
            }) = &checked[i]
            {
                inputs[j] = MacInput::message(authenticated);
                digests[j] = digest;
            }
        }
        let g = group.len();
        let mut ok = [false; MAX_BATCH];
        verify_many_truncated(key.mac(), &inputs[..g], &digests[..g], &mut ok[..g]);
        for (j, &i) in group.iter().enumerate() {
            verified[i] = ok[j];
        }
    });
}

/// `ok[i]` is whether `digests[i]` is the (possibly truncated) MAC of
/// `inputs[i]`. Full-length digests go through the library's `verify_many`;
/// truncated ones (SHA-256 keys in NTPv4) through `compute_many` and a
/// constant-time comparison of the prefix.
fn verify_many_truncated(
    mac: &dyn Mac,
    inputs: &[MacInput<'_>],
    digests: &[&[u8]],
    ok: &mut [bool],
) {
    let full_length = digests.iter().all(|d| d.len() == mac.tag_len());
    if full_length {
        if mac.verify_many(inputs, digests, ok).is_err() {
            ok.fill(false);
        }
        return;
    }
    let mut tags = [Tag::EMPTY; MAX_BATCH];
    let tags = &mut tags[..inputs.len()];
    if mac.compute_many(inputs, tags).is_err() {
        ok.fill(false);
        return;
    }
    for ((slot, tag), digest) in ok.iter_mut().zip(tags.iter()).zip(digests) {
        *slot = truncated_matches(tag, digest);
    }
}
