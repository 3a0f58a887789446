//! The NTS requests of one receive batch answered together: the server's
//! AES work for up to [`MAX_BATCH`] requests at once, in two phases.
//!
//! [`NtsServer::prepare_batch`] does everything the transmit timestamp does
//! not cover, for all the requests at once: the cookies open side by side
//! under the master keys, then each request is authenticated under its
//! session's C2S key while its fresh cookie is sealed, all of them side by
//! side too (`authtime_mac::AesSiv::run_batch`: one request's AES-SIV is a
//! few short serial CMAC chains that leave the AES units mostly idle, and
//! the chains of different requests fill them). [`NtsServer::finish`] then
//! writes each reply in turn: the header (read from the clock just before),
//! and the seal under S2C over it, exactly as [`NtsServer::respond_late`]
//! does for a request on its own.
//!
//! The batch takes the requests of the common shape: an AES-SIV session,
//! no placeholder, at most [`REQUEST_BODY_MAX`] bytes of encrypted fields.
//! Any other request is left to [`NtsServer::respond_late`] by `finish`, so
//! every request gets the same answer, reply, NAK or drop, either way.

use core::fmt;
use core::ops::Range;

use authtime_mac::{AesSiv, SivKeyRef, SivOp, wipe};
use authtime_wire::{Header, Mode};

use crate::aead::{AeadAlgorithm, AeadKey, MAX_KEY_LEN, TAG_LEN};
use crate::cookie::{
    COOKIE_NONCE_LEN, CookieError, KEY_ID_LEN, MAX_COOKIE_LEN, MAX_PLAINTEXT_LEN,
    PLAINTEXT_HEADER_LEN,
};
use crate::extension::{Authenticator, NtsPacket};
use crate::key_ring::{KeyRing, MasterKey};
use crate::server::{
    HeaderFor, NakReason, NtsDrop, NtsServer, Reply, ReplyLayout, ServerAction,
    count_encrypted_placeholders, finish_reply, write_nak,
};

/// Most requests one call of [`NtsServer::prepare_batch`] takes.
pub const MAX_BATCH: usize = 8;
/// Most bytes of encrypted fields (after the tag) a request may carry to be
/// answered in a batch; NTS clients send none.
pub const REQUEST_BODY_MAX: usize = 64;

/// What [`NtsServer::prepare_batch`] did for one request, for
/// [`NtsServer::finish`]. Holds the session's S2C key until then: wiped on
/// drop, never printed.
#[derive(Default)]
pub struct PreparedNts {
    step: Step,
}

#[derive(Default)]
enum Step {
    /// Not in a batch: `finish` answers it on its own.
    #[default]
    Alone,
    /// Send nothing.
    Drop(NtsDrop),
    /// An NTS NAK echoing the UID at `uid` in the request.
    Nak {
        reason: NakReason,
        uid: Range<usize>,
    },
    /// The cookies are sealed in the output buffer; the header and the seal
    /// under S2C remain.
    Reply {
        s2c: [u8; MAX_KEY_LEN],
        algorithm: AeadAlgorithm,
        uid: Range<usize>,
        layout: ReplyLayout,
    },
}

impl PreparedNts {
    /// Whether the batch answered the request itself ([`NtsServer::finish`]
    /// only completes it), rather than leaving it to
    /// [`NtsServer::respond_late`].
    #[must_use]
    pub fn is_batched(&self) -> bool {
        !matches!(self.step, Step::Alone)
    }
}

impl Drop for PreparedNts {
    fn drop(&mut self) {
        if let Step::Reply { s2c, .. } = &mut self.step {
            wipe(s2c);
        }
    }
}

impl fmt::Debug for PreparedNts {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let step = match &self.step {
            Step::Alone => "alone",
            Step::Drop(_) => "drop",
            Step::Nak { .. } => "nak",
            Step::Reply { .. } => "reply",
        };
        f.debug_struct("PreparedNts")
            .field("step", &step)
            .finish_non_exhaustive()
    }
}

/// What happens to a request that leaves the batch early.
enum Early {
    Alone,
    Drop(NtsDrop),
    Nak(NakReason, Range<usize>),
}

impl From<Early> for Step {
    fn from(e: Early) -> Self {
        match e {
            Early::Alone => Step::Alone,
            Early::Drop(d) => Step::Drop(d),
            Early::Nak(reason, uid) => Step::Nak { reason, uid },
        }
    }
}

/// A request that passed the checks that need no key.
struct Checked<'r, 'k> {
    uid: Range<usize>,
    auth: Authenticator<'r>,
    associated_data: &'r [u8],
    cookie_id: u32,
    cookie_nonce: &'r [u8],
    cookie_tag: [u8; TAG_LEN],
    cookie_body: &'r [u8],
    opener: &'k AesSiv,
}

/// The session a cookie held.
struct Session {
    algorithm: AeadAlgorithm,
    c2s: [u8; MAX_KEY_LEN],
    s2c: [u8; MAX_KEY_LEN],
}

impl Drop for Session {
    fn drop(&mut self) {
        wipe(&mut self.c2s);
        wipe(&mut self.s2c);
    }
}

impl Session {
    fn key_len(&self) -> usize {
        self.algorithm.key_len()
    }
}

/// Where `part` (a subslice of `whole`) lies in it.
fn range_in(whole: &[u8], part: &[u8]) -> Range<usize> {
    let start = part.as_ptr().addr().wrapping_sub(whole.as_ptr().addr());
    start..start + part.len()
}

/// `bytes` (exactly 16) as a tag.
fn tag_of(bytes: &[u8]) -> Option<[u8; TAG_LEN]> {
    bytes.try_into().ok()
}

impl NtsServer {
    /// Phase one for `requests` (at most [`MAX_BATCH`]; the rest are left
    /// alone): writes into `outs[i]` (which must be at least as long as
    /// `requests[i]`, and is the buffer [`NtsServer::finish`] completes)
    /// the authenticator's layout and the sealed cookies of request `i`'s
    /// reply, and says in `prepared[i]` what remains. `rng` fills nonces.
    pub fn prepare_batch(
        &self,
        requests: &[&[u8]],
        ring: &KeyRing,
        now_unix_secs: u64,
        rng: &mut impl FnMut(&mut [u8]),
        outs: &mut [&mut [u8]],
        prepared: &mut [PreparedNts],
    ) {
        let n = requests
            .len()
            .min(outs.len())
            .min(prepared.len())
            .min(MAX_BATCH);
        let mut checked: [Option<Checked<'_, '_>>; MAX_BATCH] = Default::default();
        for i in 0..n {
            prepared[i].step = Step::Alone;
            match self.check_for_batch(requests[i], ring, now_unix_secs, outs[i].len()) {
                Ok(c) => checked[i] = Some(c),
                Err(early) => prepared[i].step = early.into(),
            }
        }

        // The cookies, side by side under their master keys.
        let mut sessions: [Option<Session>; MAX_BATCH] = Default::default();
        {
            let mut plain = [[0u8; MAX_PLAINTEXT_LEN]; MAX_BATCH];
            let mut opened = [false; MAX_BATCH];
            let headers: [[&[u8]; 2]; MAX_BATCH] = core::array::from_fn(|i| {
                [
                    &[][..],
                    checked[i].as_ref().map_or(&[][..], |c| c.cookie_nonce),
                ]
            });
            let mut ops: [SivOp<'_>; MAX_BATCH] = Default::default();
            for (((op, c), (buf, ok)), h) in ops
                .iter_mut()
                .zip(&checked)
                .zip(plain.iter_mut().zip(opened.iter_mut()))
                .zip(&headers)
            {
                if let Some(c) = c
                    && let Some(body) = buf.get_mut(..c.cookie_body.len())
                {
                    body.copy_from_slice(c.cookie_body);
                    *op = SivOp::Open {
                        key: SivKeyRef::Expanded(c.opener),
                        headers: h,
                        buf: body,
                        tag: c.cookie_tag,
                        verified: ok,
                    };
                }
            }
            let ran = AesSiv::run_batch(&mut ops);
            // The operations' borrows of `opened` and `plain` end here.
            let _ = ops;
            if ran.is_err() {
                return;
            }
            for i in 0..n {
                let Some(c) = &checked[i] else { continue };
                let body = plain[i].get(..c.cookie_body.len()).unwrap_or_default();
                match session_of(opened[i], body, c.cookie_id) {
                    Ok(Some(s)) => sessions[i] = Some(s),
                    Ok(None) => checked[i] = None,
                    Err(e) => {
                        prepared[i].step = Step::Nak {
                            reason: NakReason::from_cookie_error(e),
                            uid: c.uid.clone(),
                        };
                        checked[i] = None;
                    }
                }
            }
            wipe(plain.as_flattened_mut());
        }

        // The reply layouts and the fresh cookies' plaintexts.
        let sealer = ring.sealing_key(now_unix_secs);
        let mut layouts: [Option<ReplyLayout>; MAX_BATCH] = [None; MAX_BATCH];
        for i in 0..n {
            let (Some(c), Some(s)) = (&checked[i], &sessions[i]) else {
                continue;
            };
            let out = &mut *outs[i];
            match self.lay_out_reply(requests[i], c, s, sealer, rng, out) {
                Ok(layout) => layouts[i] = Some(layout),
                Err(early) => {
                    prepared[i].step = early.into();
                    checked[i] = None;
                }
            }
        }

        // Each request authenticated while its cookie is sealed.
        let mut request_plain = [[0u8; REQUEST_BODY_MAX]; MAX_BATCH];
        let mut authentic = [false; MAX_BATCH];
        {
            let mut slots: [Option<CookieSlot<'_>>; MAX_BATCH] = Default::default();
            for ((slot, out), layout) in slots.iter_mut().zip(outs.iter_mut()).zip(&layouts) {
                if let Some(layout) = layout {
                    *slot = cookie_slot(out, layout);
                }
            }
            let request_headers: [[&[u8]; 2]; MAX_BATCH] = core::array::from_fn(|i| {
                checked[i]
                    .as_ref()
                    .map_or([&[][..]; 2], |c| [c.associated_data, c.auth.nonce])
            });
            let mut cookie_headers: [[&[u8]; 2]; MAX_BATCH] = [[&[][..]; 2]; MAX_BATCH];
            let mut seals: [Option<(&mut [u8; TAG_LEN], &mut [u8])>; MAX_BATCH] =
                Default::default();
            for ((h, seal), slot) in cookie_headers
                .iter_mut()
                .zip(seals.iter_mut())
                .zip(slots.iter_mut())
            {
                if let Some((nonce, tag, body)) = slot.take() {
                    h[1] = nonce;
                    *seal = Some((tag, body));
                }
            }
            let mut ops: [SivOp<'_>; 2 * MAX_BATCH] = Default::default();
            let (open_ops, seal_ops) = ops.split_at_mut(MAX_BATCH);
            let sealer_siv = sealer.and_then(|k| k.key().expanded_siv());
            for (i, ((((open_op, seal_op), scratch), ok), seal)) in open_ops
                .iter_mut()
                .zip(seal_ops.iter_mut())
                .zip(request_plain.iter_mut())
                .zip(authentic.iter_mut())
                .zip(seals.iter_mut())
                .enumerate()
                .take(n)
            {
                let (Some(c), Some(s), Some((tag, body)), Some(sealer)) =
                    (&checked[i], &sessions[i], seal.take(), sealer_siv)
                else {
                    continue;
                };
                let ciphertext = c.auth.ciphertext;
                let body_len = ciphertext.len().saturating_sub(TAG_LEN);
                let (Some(req_tag), Some(req_body), Some(scratch)) = (
                    ciphertext.get(..TAG_LEN).and_then(tag_of),
                    ciphertext.get(TAG_LEN..),
                    scratch.get_mut(..body_len),
                ) else {
                    continue;
                };
                scratch.copy_from_slice(req_body);
                let c2s = s.c2s.get(..s.key_len()).unwrap_or_default();
                *open_op = SivOp::Open {
                    key: SivKeyRef::Bytes(c2s),
                    headers: &request_headers[i],
                    buf: scratch,
                    tag: req_tag,
                    verified: ok,
                };
                *seal_op = SivOp::Seal {
                    key: SivKeyRef::Expanded(sealer),
                    headers: &cookie_headers[i],
                    buf: body,
                    tag,
                };
            }
            if AesSiv::run_batch(&mut ops).is_err() {
                return;
            }
        }

        for i in 0..n {
            let (Some(c), Some(s), Some(layout)) = (&checked[i], &sessions[i], layouts[i]) else {
                continue;
            };
            let body_len = c.auth.ciphertext.len() - TAG_LEN;
            let plaintext = request_plain[i].get(..body_len).unwrap_or_default();
            let cookie_len = c.cookie_body.len() + KEY_ID_LEN + COOKIE_NONCE_LEN + TAG_LEN;
            prepared[i].step = if !authentic[i] {
                Step::Nak {
                    reason: NakReason::Unauthenticated,
                    uid: c.uid.clone(),
                }
            } else {
                match count_encrypted_placeholders(plaintext, cookie_len) {
                    Err(e) => Step::Drop(e),
                    // More cookies wanted: answered on its own.
                    Ok(1..) => Step::Alone,
                    Ok(0) => {
                        let mut s2c = [0u8; MAX_KEY_LEN];
                        s2c.copy_from_slice(&s.s2c);
                        Step::Reply {
                            s2c,
                            algorithm: s.algorithm,
                            uid: c.uid.clone(),
                            layout,
                        }
                    }
                }
            };
        }
        wipe(request_plain.as_flattened_mut());
    }

    /// Phase two for one request of [`NtsServer::prepare_batch`]: completes
    /// `out` (the same buffer) into the reply or NAK, asking for the header
    /// last as [`NtsServer::respond_late`] does; a request the batch left
    /// alone is answered here by `respond_late` itself.
    ///
    /// # Errors
    /// An [`NtsDrop`]: send nothing, count it.
    #[allow(
        clippy::too_many_arguments,
        reason = "respond_late's arguments, and what the batch prepared"
    )]
    pub fn finish(
        &self,
        request: &[u8],
        prepared: &PreparedNts,
        ring: &KeyRing,
        now_unix_secs: u64,
        rng: &mut impl FnMut(&mut [u8]),
        out: &mut [u8],
        reply_header: impl FnOnce(HeaderFor) -> Header,
    ) -> Result<ServerAction, NtsDrop> {
        match &prepared.step {
            Step::Alone => self.respond_late(request, ring, now_unix_secs, rng, out, reply_header),
            Step::Drop(e) => Err(*e),
            Step::Nak { reason, uid } => {
                let uid = request.get(uid.clone()).ok_or(NtsDrop::BufferTooSmall)?;
                write_nak(&reply_header(HeaderFor::Nak), uid, *reason, out)
            }
            Step::Reply {
                s2c,
                algorithm,
                uid,
                layout,
            } => {
                let uid = request.get(uid.clone()).ok_or(NtsDrop::BufferTooSmall)?;
                let key_bytes = s2c.get(..algorithm.key_len()).unwrap_or_default();
                let key =
                    AeadKey::new(*algorithm, key_bytes).map_err(|_| NtsDrop::BufferTooSmall)?;
                finish_reply(&reply_header(HeaderFor::Reply), uid, &key, layout, out)
            }
        }
    }

    /// The checks [`NtsServer::respond_late`] makes before it needs a key,
    /// in its order; `Err` is what to do with a request that fails one, or
    /// [`Early::Alone`] for one the batch does not take.
    fn check_for_batch<'r, 'k>(
        &self,
        request: &'r [u8],
        ring: &'k KeyRing,
        now_unix_secs: u64,
        out_len: usize,
    ) -> Result<Checked<'r, 'k>, Early> {
        let packet = NtsPacket::parse(request).map_err(|e| Early::Drop(e.into()))?;
        let header = packet.header();
        if header.version != 4 || header.mode != Mode::Client {
            return Err(Early::Drop(NtsDrop::NotClientRequest));
        }
        let auth = *packet
            .authenticator()
            .ok_or(Early::Drop(NtsDrop::MissingAuthenticator))?;
        let fields = self.check_plaintext_fields(&packet).map_err(Early::Drop)?;
        if out_len < request.len() {
            return Err(Early::Drop(NtsDrop::BufferTooSmall));
        }
        let uid = range_in(request, fields.unique_id);
        let body_len = auth.ciphertext.len().checked_sub(TAG_LEN);
        if fields.placeholders > 0 || body_len.is_none_or(|n| n > REQUEST_BODY_MAX) {
            return Err(Early::Alone);
        }
        let cookie = fields.cookie;
        let nak = |e: CookieError| Early::Nak(NakReason::from_cookie_error(e), uid.clone());
        let len = cookie.len();
        if !(KEY_ID_LEN + COOKIE_NONCE_LEN + TAG_LEN..=MAX_COOKIE_LEN).contains(&len) {
            return Err(nak(CookieError::BadLength { len }));
        }
        let (id, rest) = cookie.split_at(KEY_ID_LEN);
        let (cookie_nonce, sealed) = rest.split_at(COOKIE_NONCE_LEN);
        let (tag, cookie_body) = sealed.split_at(TAG_LEN);
        let cookie_id = u32::from_be_bytes(id.try_into().map_err(|_| Early::Alone)?);
        let master: &'k MasterKey = ring
            .opening_key(cookie_id, now_unix_secs)
            .ok_or_else(|| nak(CookieError::UnknownKey { id: cookie_id }))?;
        let opener = master.key().expanded_siv().ok_or(Early::Alone)?;
        Ok(Checked {
            uid,
            auth,
            associated_data: packet.associated_data(),
            cookie_id,
            cookie_nonce,
            cookie_tag: tag_of(tag).ok_or(Early::Alone)?,
            cookie_body,
            opener,
        })
    }

    /// The checks between the cookie and the request's authentication, in
    /// [`NtsServer::respond_late`]'s order, then the reply's layout in `out`
    /// and its cookie's plaintext (not yet sealed).
    fn lay_out_reply(
        &self,
        request: &[u8],
        c: &Checked<'_, '_>,
        s: &Session,
        sealer: Option<&MasterKey>,
        rng: &mut impl FnMut(&mut [u8]),
        out: &mut [u8],
    ) -> Result<ReplyLayout, Early> {
        let algorithm = s.algorithm;
        if !algorithm.accepts_nonce_len(c.auth.nonce.len()) {
            return Err(Early::Drop(NtsDrop::NonceLength));
        }
        if !c
            .auth
            .meets_padding_rule(algorithm.required_padded_nonce_len())
        {
            return Err(Early::Drop(NtsDrop::NoncePadding));
        }
        let sealer = sealer.ok_or(Early::Drop(NtsDrop::NoMasterKey))?;
        if sealer.key().expanded_siv().is_none() {
            return Err(Early::Alone);
        }
        let uid = request.get(c.uid.clone()).unwrap_or_default();
        let reply = Reply {
            unique_id: uid,
            algorithm,
            wanted_cookies: 1,
            max_len: request.len(),
        };
        let layout = reply.lay_out(rng, out).map_err(Early::Drop)?;
        // The cookie (RFC 8915 section 6, see `crate::cookie`): key id,
        // nonce, then room for the tag and the plaintext to seal.
        let cookie = out
            .get_mut(layout.cookies_start + 4..layout.cookies_start + layout.cookie_field_len)
            .ok_or(Early::Drop(NtsDrop::BufferTooSmall))?;
        let (id, rest) = cookie.split_at_mut(KEY_ID_LEN);
        id.copy_from_slice(&sealer.id().to_be_bytes());
        let (nonce, rest) = rest.split_at_mut(COOKIE_NONCE_LEN);
        rng(nonce);
        let body = rest
            .get_mut(TAG_LEN..)
            .ok_or(Early::Drop(NtsDrop::BufferTooSmall))?;
        let k = s.key_len();
        let mut w = 0;
        for part in [
            &algorithm.id().to_be_bytes()[..],
            &[0, 0],
            s.s2c.get(..k).unwrap_or_default(),
            s.c2s.get(..k).unwrap_or_default(),
        ] {
            if let Some(dst) = body.get_mut(w..w + part.len()) {
                dst.copy_from_slice(part);
            }
            w += part.len();
        }
        Ok(layout)
    }
}

/// The session in a cookie's plaintext, as `crate::cookie` lays it out;
/// `Ok(None)` for a session the batch does not take (AES-128-GCM-SIV).
fn session_of(opened: bool, plaintext: &[u8], id: u32) -> Result<Option<Session>, CookieError> {
    if !opened {
        return Err(CookieError::Undecryptable { id });
    }
    let invalid = CookieError::InvalidContent { id };
    let [a, b, 0, 0, keys @ ..] = plaintext else {
        return Err(invalid);
    };
    let algorithm = AeadAlgorithm::from_id(u16::from_be_bytes([*a, *b])).ok_or(invalid)?;
    if keys.len() != 2 * algorithm.key_len() || plaintext.len() < PLAINTEXT_HEADER_LEN {
        return Err(invalid);
    }
    if algorithm == AeadAlgorithm::Aes128GcmSiv {
        return Ok(None);
    }
    let (s2c, c2s) = keys.split_at(algorithm.key_len());
    let mut session = Session {
        algorithm,
        c2s: [0; MAX_KEY_LEN],
        s2c: [0; MAX_KEY_LEN],
    };
    session.c2s[..c2s.len()].copy_from_slice(c2s);
    session.s2c[..s2c.len()].copy_from_slice(s2c);
    Ok(Some(session))
}

/// A fresh cookie's nonce, tag and plaintext, in the reply.
type CookieSlot<'o> = (&'o [u8], &'o mut [u8; TAG_LEN], &'o mut [u8]);

/// The fresh cookie's nonce, tag and plaintext in the reply `out` laid out
/// as `layout` says.
fn cookie_slot<'o>(out: &'o mut [u8], layout: &ReplyLayout) -> Option<CookieSlot<'o>> {
    let cookie =
        out.get_mut(layout.cookies_start + 4..layout.cookies_start + layout.cookie_field_len)?;
    let (_, rest) = cookie.split_at_mut(KEY_ID_LEN);
    let (nonce, rest) = rest.split_at_mut(COOKIE_NONCE_LEN);
    let (tag, body) = rest.split_at_mut(TAG_LEN);
    Some((&*nonce, tag.try_into().ok()?, body))
}
