//! Many datagrams at once, as `recvmmsg` delivers them: the MAC work is grouped
//! per key so that `Mac::verify_many` and `Mac::compute_many` see whole batches
//! (the MAC library's multi-lane kernels), and everything else is shared with
//! [`Server::handle`], so results equal handling the datagrams one by one.
//!
//! Working memory is fixed arrays of [`MAX_BATCH`] entries on the stack; longer
//! batches are handled in chunks. Nothing here allocates.

use authtime_keys::{KeyEntry, KeySet};
use authtime_mac::{Mac, MacInput, Tag};
use authtime_wire::{HEADER_LEN, NtpTimestamp};

use crate::server::{
    CheckedRequest, Plan, PlannedTrailer, ReplyKind, RequestAuth, encode_header, report,
    truncated_matches, write_planned,
};
use crate::{DropReason, Server, ServerAction, ServerStats};

/// Datagrams handled together; longer batches are split (`recvmmsg` batches
/// are typically 32 or 64).
pub const MAX_BATCH: usize = 64;

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
    /// Handles every item as [`Server::handle`] would, with `tx_ts` as the
    /// transmit timestamp of every reply, and sets each item's `action`.
    /// Outputs, actions and counter events (in item order) are the same as
    /// calling [`Server::handle`] on each item in turn.
    pub fn handle_batch(
        &self,
        items: &mut [BatchItem<'_, '_>],
        tx_ts: NtpTimestamp,
        keys: &KeySet,
        stats: &mut impl ServerStats,
    ) {
        for chunk in items.chunks_mut(MAX_BATCH) {
            self.handle_chunk(chunk, tx_ts, keys, stats);
        }
    }

    fn handle_chunk(
        &self,
        items: &mut [BatchItem<'_, '_>],
        tx_ts: NtpTimestamp,
        keys: &KeySet,
        stats: &mut impl ServerStats,
    ) {
        let n = items.len().min(MAX_BATCH);
        let mut checked: [Result<CheckedRequest<'_>, DropReason>; MAX_BATCH] =
            [Err(DropReason::OutputTooSmall); MAX_BATCH];
        for (slot, item) in checked.iter_mut().zip(items.iter()) {
            *slot = self.check_request(item.request, keys);
        }

        let mut verified = [false; MAX_BATCH];
        verify_grouped(&checked[..n], &mut verified[..n]);

        let mut plans: [Plan<'_>; MAX_BATCH] = [Plan::Drop(DropReason::OutputTooSmall); MAX_BATCH];
        for i in 0..n {
            plans[i] = match &checked[i] {
                Err(reason) => Plan::Drop(*reason),
                Ok(req) => self.plan(req, verified[i], ReplyKind::Time, items[i].recv_ts, tx_ts),
            };
        }

        let mut tags: [Option<Tag>; MAX_BATCH] = [None; MAX_BATCH];
        tag_replies_grouped(&plans[..n], &mut tags[..n]);

        for i in 0..n {
            let item = &mut items[i];
            let outcome = write_planned(
                &plans[i],
                tags[i].as_ref(),
                item.request.len(),
                false,
                item.out,
            );
            report(stats, &outcome);
            item.action = outcome.action;
        }
    }
}

/// The key of a request whose MAC is still to verify.
fn pending_key<'a>(checked: &Result<CheckedRequest<'a>, DropReason>) -> Option<&'a KeyEntry> {
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
fn verify_grouped(checked: &[Result<CheckedRequest<'_>, DropReason>], verified: &mut [bool]) {
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

/// Computes the MAC of every reply that needs one, one `compute_many` per key.
fn tag_replies_grouped(plans: &[Plan<'_>], tags: &mut [Option<Tag>]) {
    let key_of = |i: usize| match plans[i] {
        Plan::Reply {
            trailer: PlannedTrailer::Mac(key),
            ..
        } => Some(key),
        _ => None,
    };
    let mut headers = [[0u8; HEADER_LEN]; MAX_BATCH];
    for (i, plan) in plans.iter().enumerate() {
        if let Plan::Reply { header, .. } = plan {
            headers[i] = encode_header(header);
        }
    }
    let mut order = [0usize; MAX_BATCH];
    let m = by_key(plans.len(), key_of, &mut order);
    for_each_key_group(&order[..m], key_of, |key, group| {
        let mut inputs = [MacInput::message(&[]); MAX_BATCH];
        for (j, &i) in group.iter().enumerate() {
            inputs[j] = MacInput::message(&headers[i]);
        }
        let g = group.len();
        let mut out = [Tag::EMPTY; MAX_BATCH];
        let computed = key.mac().compute_many(&inputs[..g], &mut out[..g]).is_ok();
        for (j, &i) in group.iter().enumerate() {
            tags[i] = computed.then_some(out[j]);
        }
    });
}
