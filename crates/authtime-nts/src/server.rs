//! The server side of NTS-protected NTP (RFC 8915 section 5.7).
//!
//! [`NtsServer::respond`] takes a request, the reply header the caller
//! already planned (timestamps, stratum, reference id), the key ring, the
//! time and an RNG, and writes into the caller's buffer either the protected
//! reply or an NTS NAK; anything else is an [`NtsDrop`] with a reason.
//!
//! Rules enforced, in order: a well-formed NTPv4 client packet; an
//! authenticator, with everything after it discarded; exactly one Unique
//! Identifier of at least 32 bytes and exactly one cookie before it; at most
//! seven placeholders, each as long as the cookie; then the cookie must open
//! (else NAK), the nonce must suit the session's AEAD and carry the padding
//! section 5.6 requires (else drop), and the authenticator must verify under
//! C2S with the header and the fields before it as associated data (else
//! NAK). The reply echoes the UID and carries one authenticator under S2C
//! whose plaintext holds 1 + (placeholders) fresh cookies, and is never
//! longer than the request.
//!
//! No allocation: the ciphertext is verified in the output buffer, which the
//! reply then overwrites.

use authtime_wire::{ExtensionField, HEADER_LEN, Header, KissCode, Mode, ReferenceId, Writer};

use crate::aead::{AeadAlgorithm, AeadKey, TAG_LEN};
use crate::cookie::{SessionKeys, cookie_len, open_cookie, seal_cookie};
use crate::extension::{
    Authenticator, EF_AUTHENTICATOR, EF_COOKIE, EF_COOKIE_PLACEHOLDER, EF_UNIQUE_IDENTIFIER,
    MIN_UNIQUE_ID_LEN, NtsPacket, inner_fields,
};
use crate::key_ring::KeyRing;

pub use crate::server_outcome::{NakReason, NtsDrop, ServerAction};

/// Most placeholders a request may carry: 1 + 7 cookies keep a reply under
/// 1280 bytes (RFC 8915 section 5.7).
pub const MAX_PLACEHOLDERS: usize = 7;

/// The NTS request handler. Holds only configuration; the key ring is passed
/// per call so that a rotation needs no lock here.
#[derive(Debug, Clone)]
pub struct NtsServer {
    max_placeholders: usize,
}

impl Default for NtsServer {
    fn default() -> Self {
        Self::new()
    }
}

/// The checked plaintext fields of a request (not yet authenticated).
pub(crate) struct RequestFields<'a> {
    pub(crate) unique_id: &'a [u8],
    pub(crate) cookie: &'a [u8],
    pub(crate) placeholders: usize,
}

impl NtsServer {
    /// A server that honours up to [`MAX_PLACEHOLDERS`] placeholders.
    #[must_use]
    pub fn new() -> Self {
        Self {
            max_placeholders: MAX_PLACEHOLDERS,
        }
    }

    /// Lowers the number of placeholders accepted (capped at
    /// [`MAX_PLACEHOLDERS`]); requests with more are dropped.
    #[must_use]
    pub fn with_max_placeholders(mut self, max: usize) -> Self {
        self.max_placeholders = max.min(MAX_PLACEHOLDERS);
        self
    }

    /// Handles one NTS request and writes the reply or NAK into `out`, which
    /// must be at least as long as `request`. `reply_header` is the header to
    /// send (mode 4, timestamps filled in); `now_unix_secs` picks the master
    /// keys; `rng` fills nonces. The same as [`NtsServer::respond_late`] with
    /// a header known in advance.
    ///
    /// # Errors
    /// An [`NtsDrop`]: send nothing, count it.
    pub fn respond(
        &self,
        request: &[u8],
        reply_header: &Header,
        ring: &KeyRing,
        now_unix_secs: u64,
        rng: &mut impl FnMut(&mut [u8]),
        out: &mut [u8],
    ) -> Result<ServerAction, NtsDrop> {
        self.respond_late(request, ring, now_unix_secs, rng, out, |_| *reply_header)
    }

    /// Handles one NTS request as [`NtsServer::respond`] does, but asks for
    /// the reply header last: `reply_header` is called once, after the
    /// cookie is opened, the request authenticated and the fresh cookies
    /// sealed, and just before the header is written and the reply sealed
    /// under it (the header is associated data of the reply's AEAD). A
    /// server reads its clock there, so that the transmit timestamp is as
    /// close as it can be to the moment the reply leaves. It says whether
    /// the header is for a protected reply or an NTS NAK. It is not called
    /// for a request that is dropped.
    ///
    /// # Errors
    /// An [`NtsDrop`]: send nothing, count it.
    pub fn respond_late(
        &self,
        request: &[u8],
        ring: &KeyRing,
        now_unix_secs: u64,
        rng: &mut impl FnMut(&mut [u8]),
        out: &mut [u8],
        reply_header: impl FnOnce(HeaderFor) -> Header,
    ) -> Result<ServerAction, NtsDrop> {
        let packet = NtsPacket::parse(request)?;
        let header = packet.header();
        if header.version != 4 || header.mode != Mode::Client {
            return Err(NtsDrop::NotClientRequest);
        }
        let auth = *packet
            .authenticator()
            .ok_or(NtsDrop::MissingAuthenticator)?;
        let fields = self.check_plaintext_fields(&packet)?;
        if out.len() < request.len() {
            return Err(NtsDrop::BufferTooSmall);
        }
        let keys = match open_cookie(ring, now_unix_secs, fields.cookie) {
            Ok(keys) => keys,
            Err(e) => {
                let reason = NakReason::from_cookie_error(e);
                return write_nak(&reply_header(HeaderFor::Nak), fields.unique_id, reason, out);
            }
        };
        let algorithm = keys.algorithm();
        if !algorithm.accepts_nonce_len(auth.nonce.len()) {
            return Err(NtsDrop::NonceLength);
        }
        if !auth.meets_padding_rule(algorithm.required_padded_nonce_len()) {
            return Err(NtsDrop::NoncePadding);
        }
        let scratch = out
            .get_mut(..auth.ciphertext.len())
            .ok_or(NtsDrop::BufferTooSmall)?;
        scratch.copy_from_slice(auth.ciphertext);
        let Ok(plaintext_len) =
            keys.c2s()
                .open_in_place(auth.nonce, packet.associated_data(), scratch)
        else {
            return write_nak(
                &reply_header(HeaderFor::Nak),
                fields.unique_id,
                NakReason::Unauthenticated,
                out,
            );
        };
        let plaintext = scratch.get(..plaintext_len).unwrap_or_default();
        let encrypted_placeholders = count_encrypted_placeholders(plaintext, fields.cookie.len())?;
        let placeholders = fields.placeholders + encrypted_placeholders;
        if placeholders > self.max_placeholders {
            return Err(NtsDrop::TooManyPlaceholders);
        }
        let reply = Reply {
            unique_id: fields.unique_id,
            algorithm,
            wanted_cookies: 1 + placeholders,
            max_len: request.len(),
        };
        reply.write(&keys, ring, now_unix_secs, rng, out, reply_header)
    }

    pub(crate) fn check_plaintext_fields<'a>(
        &self,
        packet: &NtsPacket<'a>,
    ) -> Result<RequestFields<'a>, NtsDrop> {
        let mut unique_id = None;
        let mut cookie: Option<&[u8]> = None;
        let (mut unique_ids, mut cookies) = (0usize, 0usize);
        let mut placeholders = 0usize;
        let mut placeholder_len = None;
        let mut placeholders_equal = true;
        for field in packet.plaintext_fields() {
            match field.field_type {
                EF_UNIQUE_IDENTIFIER => {
                    unique_ids += 1;
                    unique_id = Some(field.value);
                }
                EF_COOKIE => {
                    cookies += 1;
                    cookie = Some(field.value);
                }
                EF_COOKIE_PLACEHOLDER => {
                    placeholders += 1;
                    if placeholders > self.max_placeholders {
                        return Err(NtsDrop::TooManyPlaceholders);
                    }
                    let len = field.value.len();
                    placeholders_equal &= *placeholder_len.get_or_insert(len) == len;
                }
                // Unknown fields are authenticated and otherwise ignored
                // (RFC 7822 section 7.5).
                _ => {}
            }
        }
        if unique_ids > 1 {
            return Err(NtsDrop::DuplicateUniqueId);
        }
        if cookies > 1 {
            return Err(NtsDrop::MultipleCookies);
        }
        let unique_id = unique_id.ok_or(NtsDrop::MissingUniqueId)?;
        if unique_id.len() < MIN_UNIQUE_ID_LEN {
            return Err(NtsDrop::UniqueIdTooShort);
        }
        let cookie = cookie.ok_or(NtsDrop::MissingCookie)?;
        if !placeholders_equal || placeholder_len.is_some_and(|len| len != cookie.len()) {
            return Err(NtsDrop::PlaceholderLength);
        }
        Ok(RequestFields {
            unique_id,
            cookie,
            placeholders,
        })
    }
}

/// Placeholders inside the decrypted fields (RFC 8915 section 5.5 allows them
/// there); a cookie there is refused (section 5.4).
pub(crate) fn count_encrypted_placeholders(
    plaintext: &[u8],
    cookie_len: usize,
) -> Result<usize, NtsDrop> {
    let mut count = 0;
    for field in inner_fields(plaintext) {
        let field = field.map_err(|_| NtsDrop::InnerFieldsMalformed)?;
        match field.field_type {
            EF_COOKIE => return Err(NtsDrop::EncryptedCookie),
            EF_COOKIE_PLACEHOLDER if field.value.len() != cookie_len => {
                return Err(NtsDrop::PlaceholderLength);
            }
            EF_COOKIE_PLACEHOLDER => count += 1,
            _ => {}
        }
    }
    Ok(count)
}

/// The NTS NAK of RFC 8915 section 5.7: the planned header turned into a
/// Kiss-o'-Death NTSN, with the UID and nothing else.
pub(crate) fn write_nak(
    reply_header: &Header,
    unique_id: &[u8],
    reason: NakReason,
    out: &mut [u8],
) -> Result<ServerAction, NtsDrop> {
    let mut header = *reply_header;
    header.stratum = 0;
    header.reference_id = ReferenceId::from(KissCode::NTSN);
    let len = write_header_and_uid(&header, unique_id, out)?;
    Ok(ServerAction::Nak { len, reason })
}

/// Writes `header` and the Unique Identifier field echoing `unique_id` at
/// the start of `out`; returns their length.
fn write_header_and_uid(
    header: &Header,
    unique_id: &[u8],
    out: &mut [u8],
) -> Result<usize, NtsDrop> {
    let mut w = Writer::new(out);
    header.encode(&mut w).map_err(|_| NtsDrop::BufferTooSmall)?;
    ExtensionField {
        field_type: EF_UNIQUE_IDENTIFIER,
        value: unique_id,
    }
    .encode(&mut w)
    .map_err(|_| NtsDrop::BufferTooSmall)?;
    Ok(w.len())
}

/// What the header that [`NtsServer::respond_late`] asks for is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HeaderFor {
    /// A protected time reply.
    Reply,
    /// An NTS NAK (a Kiss-o'-Death NTSN): stratum and reference id are
    /// overwritten, the timestamps sent as given.
    Nak,
}

/// A protected reply to write.
pub(crate) struct Reply<'a> {
    pub(crate) unique_id: &'a [u8],
    pub(crate) algorithm: AeadAlgorithm,
    pub(crate) wanted_cookies: usize,
    pub(crate) max_len: usize,
}

/// Where [`Reply::lay_out`] put things in the output buffer.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ReplyLayout {
    /// Cookies the reply carries.
    pub(crate) cookies: usize,
    /// Length of the reply.
    pub(crate) len: usize,
    /// Where the authenticator field starts (after the header and the UID).
    pub(crate) auth_start: usize,
    /// Where the first cookie field starts.
    pub(crate) cookies_start: usize,
    /// Bytes of each cookie field.
    pub(crate) cookie_field_len: usize,
    /// Bytes of plaintext under S2C (the cookie fields).
    pub(crate) plaintext_len: usize,
    /// The reply's nonce, also written into the buffer.
    pub(crate) nonce: [u8; 16],
    pub(crate) nonce_len: usize,
}

impl Reply<'_> {
    fn len_with(&self, cookies: usize) -> usize {
        let ciphertext_len = cookies * (4 + cookie_len(self.algorithm)) + TAG_LEN;
        HEADER_LEN
            + 4
            + self.unique_id.len()
            + 4
            + Authenticator::body_len(self.algorithm.nonce_len(), ciphertext_len)
    }

    /// Fixes how many cookies fit, writes the authenticator's field header,
    /// a fresh nonce and the cookie fields' headers into `out`, and says
    /// where everything is. The cookies themselves, the NTP header and the
    /// UID are written later.
    pub(crate) fn lay_out(
        &self,
        rng: &mut impl FnMut(&mut [u8]),
        out: &mut [u8],
    ) -> Result<ReplyLayout, NtsDrop> {
        let mut cookies = self.wanted_cookies;
        while cookies > 1 && self.len_with(cookies) > self.max_len {
            cookies -= 1;
        }
        let len = self.len_with(cookies);
        if len > self.max_len {
            return Err(NtsDrop::ReplyTooLarge);
        }
        let out = out.get_mut(..len).ok_or(NtsDrop::BufferTooSmall)?;
        let auth_start = HEADER_LEN + 4 + self.unique_id.len();
        let field = out.get_mut(auth_start..).ok_or(NtsDrop::BufferTooSmall)?;
        let nonce_len = self.algorithm.nonce_len();
        let cookie_field_len = 4 + cookie_len(self.algorithm);
        let plaintext_len = cookies * cookie_field_len;
        let too_large = |_| NtsDrop::ReplyTooLarge;
        let field_len = u16::try_from(field.len()).map_err(too_large)?;
        let nonce_len_u16 = u16::try_from(nonce_len).map_err(too_large)?;
        let ciphertext_len = u16::try_from(plaintext_len + TAG_LEN).map_err(too_large)?;
        let ef_len = u16::try_from(cookie_field_len).map_err(too_large)?;
        let (field_header, body) = field.split_at_mut(8);
        let mut fw = Writer::new(field_header);
        for v in [EF_AUTHENTICATOR, field_len, nonce_len_u16, ciphertext_len] {
            fw.put_u16(v).map_err(|_| NtsDrop::BufferTooSmall)?;
        }
        let (nonce_slot, ciphertext) = body.split_at_mut(nonce_len);
        let mut nonce = [0u8; 16];
        let fresh = nonce.get_mut(..nonce_len).ok_or(NtsDrop::BufferTooSmall)?;
        rng(fresh);
        nonce_slot.copy_from_slice(fresh);
        for slot in ciphertext
            .get_mut(..plaintext_len)
            .ok_or(NtsDrop::BufferTooSmall)?
            .chunks_exact_mut(cookie_field_len)
        {
            let mut hw = Writer::new(slot);
            hw.put_u16(EF_COOKIE).map_err(|_| NtsDrop::BufferTooSmall)?;
            hw.put_u16(ef_len).map_err(|_| NtsDrop::BufferTooSmall)?;
        }
        Ok(ReplyLayout {
            cookies,
            len,
            auth_start,
            cookies_start: auth_start + 8 + nonce_len,
            cookie_field_len,
            plaintext_len,
            nonce,
            nonce_len,
        })
    }

    /// Writes the reply: the fresh cookies are sealed in place first, then
    /// the header is asked for, written, and the whole authenticator sealed
    /// under it.
    fn write(
        &self,
        keys: &SessionKeys,
        ring: &KeyRing,
        now_unix_secs: u64,
        rng: &mut impl FnMut(&mut [u8]),
        out: &mut [u8],
        reply_header: impl FnOnce(HeaderFor) -> Header,
    ) -> Result<ServerAction, NtsDrop> {
        let master = ring
            .sealing_key(now_unix_secs)
            .ok_or(NtsDrop::NoMasterKey)?;
        let layout = self.lay_out(rng, out)?;
        let cookie_area = out
            .get_mut(layout.cookies_start..layout.cookies_start + layout.plaintext_len)
            .ok_or(NtsDrop::BufferTooSmall)?;
        for slot in cookie_area.chunks_exact_mut(layout.cookie_field_len) {
            let cookie = slot.get_mut(4..).ok_or(NtsDrop::BufferTooSmall)?;
            seal_cookie(master, keys, rng, cookie).map_err(|_| NtsDrop::BufferTooSmall)?;
        }
        // Everything the transmit timestamp does not cover is done: now the
        // header, then the seal over it.
        finish_reply(
            &reply_header(HeaderFor::Reply),
            self.unique_id,
            keys.s2c(),
            &layout,
            out,
        )
    }
}

/// Writes the header and the UID before the authenticator that
/// [`Reply::lay_out`] placed, and seals the cookie fields under `s2c` with
/// both as associated data.
pub(crate) fn finish_reply(
    header: &Header,
    unique_id: &[u8],
    s2c: &AeadKey,
    layout: &ReplyLayout,
    out: &mut [u8],
) -> Result<ServerAction, NtsDrop> {
    let out = out.get_mut(..layout.len).ok_or(NtsDrop::BufferTooSmall)?;
    let (associated_data, field) = out.split_at_mut(layout.auth_start);
    write_header_and_uid(header, unique_id, associated_data)?;
    let ciphertext = field
        .get_mut(8 + layout.nonce_len..)
        .ok_or(NtsDrop::BufferTooSmall)?;
    let nonce = layout
        .nonce
        .get(..layout.nonce_len)
        .ok_or(NtsDrop::BufferTooSmall)?;
    s2c.seal_in_place(nonce, associated_data, ciphertext, layout.plaintext_len)
        .map_err(|_| NtsDrop::BufferTooSmall)?;
    Ok(ServerAction::Reply {
        len: layout.len,
        cookies: layout.cookies,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ef(field_type: u16, body_len: usize) -> Vec<u8> {
        let mut v = field_type.to_be_bytes().to_vec();
        v.extend_from_slice(&u16::try_from(body_len + 4).expect("len").to_be_bytes());
        v.resize(4 + body_len, 0);
        v
    }

    #[test]
    fn encrypted_placeholders_are_counted_and_checked() {
        let mut plain = ef(EF_COOKIE_PLACEHOLDER, 104);
        plain.extend(ef(0x1234, 0));
        plain.extend(ef(EF_COOKIE_PLACEHOLDER, 104));
        assert_eq!(count_encrypted_placeholders(&plain, 104), Ok(2));
        assert_eq!(
            count_encrypted_placeholders(&plain, 100),
            Err(NtsDrop::PlaceholderLength)
        );
        assert_eq!(
            count_encrypted_placeholders(&ef(EF_COOKIE, 104), 104),
            Err(NtsDrop::EncryptedCookie)
        );
        assert_eq!(
            count_encrypted_placeholders(&[0, 0, 0], 104),
            Err(NtsDrop::InnerFieldsMalformed)
        );
        assert_eq!(count_encrypted_placeholders(&[], 104), Ok(0));
    }

    #[test]
    fn placeholder_limit_is_capped_at_seven() {
        assert_eq!(
            NtsServer::new().with_max_placeholders(20).max_placeholders,
            7
        );
        assert_eq!(
            NtsServer::new().with_max_placeholders(2).max_placeholders,
            2
        );
    }
}
