//! What the NTS server does with a request: reply, NAK, or drop with a
//! reason (RFC 8915 section 5.7).

use core::fmt;

use crate::cookie::CookieError;
use crate::extension::EfError;

/// A datagram written into the caller's buffer: send `out[..len]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ServerAction {
    /// The protected reply: the UID echoed and an authenticator under S2C
    /// holding `cookies` fresh cookies.
    Reply {
        /// Length of the reply.
        len: usize,
        /// Fresh cookies it carries (1 + placeholders, fewer only if the
        /// request was too short to allow them).
        cookies: usize,
    },
    /// An NTS NAK: a Kiss-o'-Death with code NTSN, stratum 0, the UID echoed,
    /// no cookie and no authenticator (RFC 8915 section 5.7).
    Nak {
        /// Length of the NAK.
        len: usize,
        /// Why, for counters.
        reason: NakReason,
    },
}

/// Why the server answered with an NTS NAK (RFC 8915 section 5.7: the cookie
/// could not be validated or the request could not be authenticated).
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NakReason {
    /// The cookie names a key the ring does not hold or no longer accepts.
    UnknownKey {
        /// The key id.
        id: u32,
    },
    /// The cookie does not decrypt, has a length we never issue, or holds an
    /// invalid session.
    BadCookie,
    /// The authenticator does not verify under the cookie's C2S key.
    Unauthenticated,
}

impl NakReason {
    /// Short stable name for counters.
    #[must_use]
    pub const fn name(&self) -> &'static str {
        match self {
            Self::UnknownKey { .. } => "nak_unknown_key",
            Self::BadCookie => "nak_bad_cookie",
            Self::Unauthenticated => "nak_unauthenticated",
        }
    }

    pub(crate) fn from_cookie_error(e: CookieError) -> Self {
        match e {
            CookieError::UnknownKey { id } => Self::UnknownKey { id },
            _ => Self::BadCookie,
        }
    }
}

/// Why a request gets no answer at all. Every variant is a silent drop; the
/// name is a counter label. Nothing a peer sends here should be logged above
/// debug level.
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NtsDrop {
    /// Not an NTP packet with well-formed extension fields.
    Malformed(EfError),
    /// Not an NTPv4 client (mode 3) request.
    NotClientRequest,
    /// No NTS authenticator: not an NTS request.
    MissingAuthenticator,
    /// No Unique Identifier before the authenticator.
    MissingUniqueId,
    /// More than one Unique Identifier.
    DuplicateUniqueId,
    /// A Unique Identifier shorter than 32 bytes (RFC 8915 section 5.3).
    UniqueIdTooShort,
    /// No cookie before the authenticator (section 5.7: exactly one).
    MissingCookie,
    /// More than one cookie.
    MultipleCookies,
    /// A cookie inside the encrypted fields (section 5.4: never encrypted).
    EncryptedCookie,
    /// More placeholders than the server serves.
    TooManyPlaceholders,
    /// A placeholder whose body length differs from the cookie's (section 5.5).
    PlaceholderLength,
    /// A nonce length the session's AEAD does not take.
    NonceLength,
    /// The client skipped the additional padding a short nonce requires
    /// (section 5.6: servers MUST discard such requests).
    NoncePadding,
    /// The decrypted extension fields are malformed.
    InnerFieldsMalformed,
    /// The ring is empty: nothing to seal fresh cookies under (local fault).
    NoMasterKey,
    /// The output buffer is shorter than the request (caller bug).
    BufferTooSmall,
    /// Even one fresh cookie would make the reply longer than the request.
    ReplyTooLarge,
}

impl NtsDrop {
    /// Short stable name for counters.
    #[must_use]
    pub const fn name(&self) -> &'static str {
        match self {
            Self::Malformed(e) => e.name(),
            Self::NotClientRequest => "nts_not_client_request",
            Self::MissingAuthenticator => "nts_missing_authenticator",
            Self::MissingUniqueId => "nts_missing_unique_id",
            Self::DuplicateUniqueId => "nts_duplicate_unique_id",
            Self::UniqueIdTooShort => "nts_unique_id_too_short",
            Self::MissingCookie => "nts_missing_cookie",
            Self::MultipleCookies => "nts_multiple_cookies",
            Self::EncryptedCookie => "nts_encrypted_cookie",
            Self::TooManyPlaceholders => "nts_too_many_placeholders",
            Self::PlaceholderLength => "nts_placeholder_length",
            Self::NonceLength => "nts_nonce_length",
            Self::NoncePadding => "nts_nonce_padding",
            Self::InnerFieldsMalformed => "nts_inner_fields_malformed",
            Self::NoMasterKey => "nts_no_master_key",
            Self::BufferTooSmall => "nts_buffer_too_small",
            Self::ReplyTooLarge => "nts_reply_too_large",
        }
    }
}

impl fmt::Display for NtsDrop {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl core::error::Error for NtsDrop {}

impl From<EfError> for NtsDrop {
    fn from(e: EfError) -> Self {
        Self::Malformed(e)
    }
}
