//! C2S and S2C key derivation through the TLS 1.3 exporter (RFC 8915 section 5.1,
//! RFC 8446 section 7.5).
//!
//! The exporter is a trait so the sans-IO cores can be driven by rustls in production
//! and by a fake in tests and fuzzing.

use std::fmt;

use zeroize::Zeroizing;

use crate::record::NEXT_PROTOCOL_NTPV4;

/// Exporter label of RFC 8915 section 5.1.
pub const EXPORTER_LABEL: &[u8] = b"EXPORTER-network-time-security";

/// Context byte for the client-to-server key.
const CONTEXT_C2S: u8 = 0x00;
/// Context byte for the server-to-client key.
const CONTEXT_S2C: u8 = 0x01;

/// The exporter failed (for instance the handshake is not complete).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ExportError(pub String);

impl fmt::Display for ExportError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "TLS key export failed: {}", self.0)
    }
}

impl std::error::Error for ExportError {}

/// A TLS 1.3 keying-material exporter.
pub trait KeyExporter {
    /// Fills `out` with keying material for `label` and `context`.
    fn export(&self, label: &[u8], context: &[u8], out: &mut [u8]) -> Result<(), ExportError>;
}

impl KeyExporter for rustls::ServerConnection {
    fn export(&self, label: &[u8], context: &[u8], out: &mut [u8]) -> Result<(), ExportError> {
        self.export_keying_material(out, label, Some(context))
            .map(|_| ())
            .map_err(|e| ExportError(e.to_string()))
    }
}

impl KeyExporter for rustls::ClientConnection {
    fn export(&self, label: &[u8], context: &[u8], out: &mut [u8]) -> Result<(), ExportError> {
        self.export_keying_material(out, label, Some(context))
            .map(|_| ())
            .map_err(|e| ExportError(e.to_string()))
    }
}

/// The 5-byte exporter context: protocol id (NTPv4 = 0) | AEAD id | 0x00 (C2S) or 0x01 (S2C).
pub fn exporter_context(aead_id: u16, server_to_client: bool) -> [u8; 5] {
    let p = NEXT_PROTOCOL_NTPV4.to_be_bytes();
    let a = aead_id.to_be_bytes();
    let dir = if server_to_client {
        CONTEXT_S2C
    } else {
        CONTEXT_C2S
    };
    [p[0], p[1], a[0], a[1], dir]
}

/// The two NTS session keys; zeroized on drop and hidden from `Debug`.
#[derive(Clone, PartialEq, Eq)]
pub struct SessionKeys {
    /// Client-to-server key.
    pub c2s: Zeroizing<Vec<u8>>,
    /// Server-to-client key.
    pub s2c: Zeroizing<Vec<u8>>,
}

impl fmt::Debug for SessionKeys {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SessionKeys")
            .field("c2s_len", &self.c2s.len())
            .field("s2c_len", &self.s2c.len())
            .finish()
    }
}

/// Exports C2S and S2C of `key_len` bytes each for the NTPv4 protocol and `aead_id`.
pub fn export_session_keys(
    exporter: &dyn KeyExporter,
    aead_id: u16,
    key_len: usize,
) -> Result<SessionKeys, ExportError> {
    let mut c2s = Zeroizing::new(vec![0u8; key_len]);
    let mut s2c = Zeroizing::new(vec![0u8; key_len]);
    exporter.export(EXPORTER_LABEL, &exporter_context(aead_id, false), &mut c2s)?;
    exporter.export(EXPORTER_LABEL, &exporter_context(aead_id, true), &mut s2c)?;
    Ok(SessionKeys { c2s, s2c })
}

/// A deterministic stand-in exporter for tests and fuzzing: output byte `i` is
/// `label.len() + sum(context) + i`, so different contexts give different keys.
#[doc(hidden)]
#[derive(Clone, Copy, Debug, Default)]
pub struct FakeExporter;

impl KeyExporter for FakeExporter {
    fn export(&self, label: &[u8], context: &[u8], out: &mut [u8]) -> Result<(), ExportError> {
        let seed = context
            .iter()
            .fold(label.len(), |acc, b| acc.wrapping_add(usize::from(*b)));
        for (i, b) in out.iter_mut().enumerate() {
            *b = (seed.wrapping_add(i) & 0xff) as u8;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn context_layout_follows_rfc_8915_section_5_1() {
        assert_eq!(exporter_context(15, false), [0, 0, 0, 15, 0]);
        assert_eq!(exporter_context(30, true), [0, 0, 0, 30, 1]);
    }

    #[test]
    fn c2s_and_s2c_differ_and_debug_hides_them() {
        let keys = export_session_keys(&FakeExporter, 15, 32).expect("fake never fails");
        assert_eq!(keys.c2s.len(), 32);
        assert_ne!(keys.c2s, keys.s2c);
        assert!(!format!("{keys:?}").contains('['));
    }
}
