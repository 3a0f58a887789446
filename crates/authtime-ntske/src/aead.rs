//! AEAD algorithm identifiers used by NTS (RFC 8915 section 5.1, IANA "AEAD Algorithms").
//!
//! This crate only negotiates algorithms and exports keys of the right length; the
//! algorithms themselves live with the cookie and packet code.

/// AES-SIV-CMAC-256 (RFC 5297), the algorithm every NTS server MUST support.
pub const AES_SIV_CMAC_256: u16 = 15;
/// AES-SIV-CMAC-384 (RFC 5297).
pub const AES_SIV_CMAC_384: u16 = 16;
/// AES-SIV-CMAC-512 (RFC 5297).
pub const AES_SIV_CMAC_512: u16 = 17;
/// AES-128-GCM-SIV (RFC 8452).
pub const AES_128_GCM_SIV: u16 = 30;
/// AES-256-GCM-SIV (RFC 8452).
pub const AES_256_GCM_SIV: u16 = 31;

/// Key length in bytes of an AEAD algorithm, `None` for an id this crate does not know.
///
/// This is the length of C2S and S2C exported for the algorithm (RFC 8915 section 5.1).
pub fn key_len(aead_id: u16) -> Option<usize> {
    match aead_id {
        AES_SIV_CMAC_256 => Some(32),
        AES_SIV_CMAC_384 => Some(48),
        AES_SIV_CMAC_512 => Some(64),
        AES_128_GCM_SIV => Some(16),
        AES_256_GCM_SIV => Some(32),
        _ => None,
    }
}

/// Name of an AEAD algorithm for logs and metrics.
pub fn name(aead_id: u16) -> Option<&'static str> {
    match aead_id {
        AES_SIV_CMAC_256 => Some("AEAD_AES_SIV_CMAC_256"),
        AES_SIV_CMAC_384 => Some("AEAD_AES_SIV_CMAC_384"),
        AES_SIV_CMAC_512 => Some("AEAD_AES_SIV_CMAC_512"),
        AES_128_GCM_SIV => Some("AEAD_AES_128_GCM_SIV"),
        AES_256_GCM_SIV => Some("AEAD_AES_256_GCM_SIV"),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_lengths_match_rfc_5297_and_8452() {
        assert_eq!(key_len(15), Some(32));
        assert_eq!(key_len(17), Some(64));
        assert_eq!(key_len(30), Some(16));
        assert_eq!(key_len(0), None);
        assert_eq!(name(15), Some("AEAD_AES_SIV_CMAC_256"));
    }
}
