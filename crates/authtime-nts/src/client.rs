//! The client side of NTS-protected NTP (RFC 8915 section 5.7).
//!
//! [`build_request`] writes a request: the caller's header, a fresh 32-byte
//! Unique Identifier, one cookie, `placeholders` placeholders of the cookie's
//! length, and an authenticator under C2S whose nonce meets the padding rule
//! of section 5.6. [`check_response`] accepts a reply only when its UID is
//! the one sent and its authenticator verifies under S2C, and then returns
//! the header and the fresh cookies from the encrypted part. An NTS NAK
//! (Kiss-o'-Death NTSN) carries no authenticator; it is reported only when it
//! echoes the UID (section 5.7). Matching the origin timestamp and computing
//! time are the NTP layer's job.

use core::fmt;

use authtime_wire::{ExtensionField, Header, KissCode, Mode, ReferenceId, WireError, Writer};
use subtle::ConstantTimeEq;

use crate::aead::{AeadError, TAG_LEN};
use crate::cookie::SessionKeys;
use crate::extension::{
    Authenticator, EF_AUTHENTICATOR, EF_COOKIE, EF_COOKIE_PLACEHOLDER, EF_UNIQUE_IDENTIFIER,
    EfError, NtsPacket, inner_fields, padded4,
};
use crate::server::MAX_PLACEHOLDERS;

/// Bytes of Unique Identifier the client sends (RFC 8915 section 5.3 minimum).
pub const UNIQUE_ID_LEN: usize = 32;

/// Longest cookie a client stores or sends; longer ones in a reply are
/// ignored (as chrony's `NKE_MAX_COOKIE_LENGTH`).
pub const MAX_CLIENT_COOKIE_LEN: usize = 256;

/// A request in flight: what [`check_response`] needs to match its reply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PendingRequest {
    len: usize,
    unique_id: [u8; UNIQUE_ID_LEN],
}

impl PendingRequest {
    /// Length of the request written.
    #[must_use]
    pub fn len(&self) -> usize {
        self.len
    }

    /// Never true: a request has at least its header.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        false
    }

    /// The Unique Identifier sent.
    #[must_use]
    pub fn unique_id(&self) -> &[u8; UNIQUE_ID_LEN] {
        &self.unique_id
    }
}

/// What a checked reply says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ClientOutcome {
    /// An authenticated reply: use `header` for the time computation and
    /// store the fresh `cookies` (each a cookie body, opaque).
    Time {
        /// The reply's NTP header.
        header: Header,
        /// The fresh cookies from the encrypted part.
        cookies: Vec<Vec<u8>>,
    },
    /// An NTS NAK whose UID matched: keep the cookies, redo NTS-KE at the
    /// next poll (RFC 8915 section 5.7).
    Nak {
        /// The NAK's header (stratum 0, reference id NTSN).
        header: Header,
        /// Whether it came with a valid authenticator (servers normally
        /// send it without).
        authenticated: bool,
    },
}

/// Why a request could not be built or a reply was dropped. Reaction to a
/// reply error: drop it silently and keep waiting for the right reply.
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClientError {
    /// A cookie that is empty or longer than [`MAX_CLIENT_COOKIE_LEN`].
    CookieLength {
        /// Its length.
        len: usize,
    },
    /// More than seven placeholders asked for.
    TooManyPlaceholders,
    /// The request does not fit the output buffer.
    BufferTooSmall,
    /// The reply is not a well-formed NTS packet.
    Malformed(EfError),
    /// Not a server (mode 4) reply.
    NotServerReply,
    /// No Unique Identifier, or a different one (not our request).
    UniqueIdMismatch,
    /// No authenticator and not an NTS NAK: unprotected replies are dropped.
    Unauthenticated,
    /// The authenticator does not verify under S2C.
    AuthenticationFailed,
    /// The decrypted fields are malformed.
    InnerFieldsMalformed,
}

impl ClientError {
    /// Short stable name for counters.
    #[must_use]
    pub const fn name(&self) -> &'static str {
        match self {
            Self::CookieLength { .. } => "nts_client_cookie_length",
            Self::TooManyPlaceholders => "nts_client_too_many_placeholders",
            Self::BufferTooSmall => "nts_client_buffer_too_small",
            Self::Malformed(e) => e.name(),
            Self::NotServerReply => "nts_client_not_server_reply",
            Self::UniqueIdMismatch => "nts_client_unique_id_mismatch",
            Self::Unauthenticated => "nts_client_unauthenticated",
            Self::AuthenticationFailed => "nts_client_authentication_failed",
            Self::InnerFieldsMalformed => "nts_client_inner_fields_malformed",
        }
    }
}

impl fmt::Display for ClientError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl core::error::Error for ClientError {}

impl From<WireError> for ClientError {
    fn from(_: WireError) -> Self {
        Self::BufferTooSmall
    }
}

impl From<AeadError> for ClientError {
    fn from(_: AeadError) -> Self {
        Self::BufferTooSmall
    }
}

/// Writes an NTS request into `out` and returns what is needed to check the
/// reply. `header` is the client header (mode 3, transmit timestamp set).
///
/// # Errors
/// [`ClientError::CookieLength`], [`ClientError::TooManyPlaceholders`],
/// [`ClientError::BufferTooSmall`].
pub fn build_request(
    header: &Header,
    keys: &SessionKeys,
    cookie: &[u8],
    placeholders: usize,
    rng: &mut impl FnMut(&mut [u8]),
    out: &mut [u8],
) -> Result<PendingRequest, ClientError> {
    if cookie.is_empty() || cookie.len() > MAX_CLIENT_COOKIE_LEN {
        return Err(ClientError::CookieLength { len: cookie.len() });
    }
    if placeholders > MAX_PLACEHOLDERS {
        return Err(ClientError::TooManyPlaceholders);
    }
    // A cookie body is padded to the 4-byte boundary and to the 12 bytes an
    // outer field needs; placeholders get the same body length.
    let mut body = [0u8; MAX_CLIENT_COOKIE_LEN];
    let body_len = padded4(cookie.len()).max(12);
    body.get_mut(..cookie.len())
        .ok_or(ClientError::BufferTooSmall)?
        .copy_from_slice(cookie);
    let cookie_body = body.get(..body_len).ok_or(ClientError::BufferTooSmall)?;
    let zeros = [0u8; MAX_CLIENT_COOKIE_LEN];
    let placeholder_body = zeros.get(..body_len).ok_or(ClientError::BufferTooSmall)?;

    let mut unique_id = [0u8; UNIQUE_ID_LEN];
    rng(&mut unique_id);
    let mut w = Writer::new(out);
    header.encode(&mut w)?;
    for (field_type, value) in [
        (EF_UNIQUE_IDENTIFIER, &unique_id[..]),
        (EF_COOKIE, cookie_body),
    ]
    .into_iter()
    .chain((0..placeholders).map(|_| (EF_COOKIE_PLACEHOLDER, placeholder_body)))
    {
        ExtensionField { field_type, value }.encode(&mut w)?;
    }
    let auth_start = w.len();

    // Nonce of N_REQ bytes: no additional padding needed (section 5.6).
    let algorithm = keys.algorithm();
    let nonce_len = algorithm.nonce_len();
    let body_len = Authenticator::body_len(nonce_len, TAG_LEN);
    let field_len = 4 + body_len;
    let end = auth_start + field_len;
    let (associated_data, field) = out
        .get_mut(..end)
        .ok_or(ClientError::BufferTooSmall)?
        .split_at_mut(auth_start);
    let (field_header, rest) = field.split_at_mut(8);
    let mut fw = Writer::new(field_header);
    for v in [
        EF_AUTHENTICATOR,
        field_len as u16,
        nonce_len as u16,
        TAG_LEN as u16,
    ] {
        fw.put_u16(v)?;
    }
    let (nonce, ciphertext) = rest.split_at_mut(nonce_len);
    rng(nonce);
    keys.c2s()
        .seal_in_place(nonce, associated_data, ciphertext, 0)?;
    Ok(PendingRequest {
        len: end,
        unique_id,
    })
}

/// Checks a reply to `pending` and extracts the time header and cookies.
///
/// # Errors
/// A [`ClientError`]: drop the reply.
pub fn check_response(
    response: &[u8],
    pending: &PendingRequest,
    keys: &SessionKeys,
) -> Result<ClientOutcome, ClientError> {
    let packet = NtsPacket::parse(response).map_err(ClientError::Malformed)?;
    let header = *packet.header();
    if header.mode != Mode::Server {
        return Err(ClientError::NotServerReply);
    }
    let mut uid_matches = false;
    let mut uid_count = 0;
    for field in packet.plaintext_fields() {
        if field.field_type == EF_UNIQUE_IDENTIFIER {
            uid_count += 1;
            uid_matches = bool::from(field.value.ct_eq(&pending.unique_id[..]));
        }
    }
    if uid_count != 1 || !uid_matches {
        return Err(ClientError::UniqueIdMismatch);
    }
    let is_nak = header.stratum == 0 && header.reference_id == ReferenceId::from(KissCode::NTSN);
    let Some(auth) = packet.authenticator() else {
        if is_nak {
            return Ok(ClientOutcome::Nak {
                header,
                authenticated: false,
            });
        }
        return Err(ClientError::Unauthenticated);
    };
    let mut plaintext = auth.ciphertext.to_vec();
    let n = keys
        .s2c()
        .open_in_place(auth.nonce, packet.associated_data(), &mut plaintext)
        .map_err(|_| ClientError::AuthenticationFailed)?;
    plaintext.truncate(n);
    if is_nak {
        return Ok(ClientOutcome::Nak {
            header,
            authenticated: true,
        });
    }
    let mut cookies = Vec::new();
    for field in inner_fields(&plaintext) {
        let field = field.map_err(|_| ClientError::InnerFieldsMalformed)?;
        // Zero-length and oversized cookies are ignored, not stored (the
        // ntpd-rs 1.5.0 client DoS); so are cookies beyond eight.
        let usable = (1..=MAX_CLIENT_COOKIE_LEN).contains(&field.value.len());
        if field.field_type == EF_COOKIE && usable && cookies.len() <= MAX_PLACEHOLDERS {
            cookies.push(field.value.to_vec());
        }
    }
    Ok(ClientOutcome::Time { header, cookies })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::aead::AeadAlgorithm;

    fn keys() -> SessionKeys {
        SessionKeys::new(AeadAlgorithm::AesSivCmac256, &[1; 32], &[2; 32]).expect("keys")
    }

    #[test]
    fn request_arguments_are_checked() {
        let mut out = [0u8; 2048];
        let header = Header::new(Mode::Client);
        let mut rng = |b: &mut [u8]| b.fill(3);
        for len in [0, MAX_CLIENT_COOKIE_LEN + 1] {
            assert_eq!(
                build_request(&header, &keys(), &vec![1; len], 0, &mut rng, &mut out),
                Err(ClientError::CookieLength { len })
            );
        }
        assert_eq!(
            build_request(&header, &keys(), &[1; 100], 8, &mut rng, &mut out),
            Err(ClientError::TooManyPlaceholders)
        );
        assert_eq!(
            build_request(&header, &keys(), &[1; 100], 0, &mut rng, &mut out[..100]),
            Err(ClientError::BufferTooSmall)
        );
    }

    #[test]
    fn odd_and_tiny_cookies_are_padded_and_placeholders_match() {
        let mut out = [0u8; 2048];
        let header = Header::new(Mode::Client);
        let mut rng = |b: &mut [u8]| b.fill(3);
        for (cookie_len, body_len) in [(1usize, 12usize), (13, 16), (101, 104)] {
            let pending = build_request(
                &header,
                &keys(),
                &vec![9; cookie_len],
                2,
                &mut rng,
                &mut out,
            )
            .expect("request");
            let packet = NtsPacket::parse(&out[..pending.len()]).expect("parse");
            let lens: Vec<(u16, usize)> = packet
                .plaintext_fields()
                .map(|f| (f.field_type, f.value.len()))
                .collect();
            assert_eq!(
                lens,
                [
                    (EF_UNIQUE_IDENTIFIER, UNIQUE_ID_LEN),
                    (EF_COOKIE, body_len),
                    (EF_COOKIE_PLACEHOLDER, body_len),
                    (EF_COOKIE_PLACEHOLDER, body_len),
                ]
            );
            assert_eq!(pending.unique_id(), &[3; UNIQUE_ID_LEN]);
            let auth = packet.authenticator().expect("authenticator");
            assert_eq!(auth.nonce.len(), 16);
            assert!(auth.meets_padding_rule(16));
            assert_eq!(packet.discarded_len(), 0);
        }
    }
}
