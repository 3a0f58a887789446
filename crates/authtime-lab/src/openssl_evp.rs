//! The peer, one packet at a time: OpenSSL 3's EVP API called per packet, as a
//! server linked to OpenSSL would call it (the method of
//! shared/reference/mac-perf-anchors.md section 3, `evpmac.c`).
//!
//! Per packet: `EVP_MAC_init` (reusing the key schedule), update, final; GMAC
//! gets a new IV and Poly1305 a new one-time key (from EVP ChaCha20) per packet;
//! the legacy digests run `EVP_DigestInit/Update/Final` over key ‖ message.
//! Every harness checks its tag against authtime's before it is timed.

#![allow(
    unsafe_code,
    reason = "FFI to OpenSSL's EVP_MAC API, which the openssl crate does not wrap"
)]

use std::ffi::{CStr, c_char};

use openssl::{
    cipher::Cipher,
    cipher_ctx::CipherCtx,
    hash::{Hasher, MessageDigest},
};
use openssl_sys as ffi;

// Two OSSL_PARAM constructors of libcrypto 3 that openssl-sys does not declare.
unsafe extern "C" {
    fn OSSL_PARAM_construct_utf8_string(
        key: *const c_char,
        buf: *mut c_char,
        bsize: usize,
    ) -> ffi::OSSL_PARAM;
    fn OSSL_PARAM_construct_size_t(key: *const c_char, buf: *mut usize) -> ffi::OSSL_PARAM;
}

/// What OpenSSL computes for one of authtime's algorithms.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Digest(&'static str),
    Hmac(&'static CStr, usize),
    Cmac(&'static CStr),
    Gmac,
    Poly1305ChaCha20,
    SipHash,
    Blake2sMac,
}

fn kind_of(name: &str) -> Option<(Kind, &'static str)> {
    Some(match name {
        "md5-legacy" => (Kind::Digest("md5"), "EVP_Digest MD5(key||msg)"),
        "sha1-legacy" => (Kind::Digest("sha1"), "EVP_Digest SHA1(key||msg)"),
        "hmac-md5" => (Kind::Hmac(c"MD5", 16), "EVP_MAC HMAC-MD5"),
        "hmac-sha1" => (Kind::Hmac(c"SHA1", 20), "EVP_MAC HMAC-SHA1"),
        "hmac-sha224" => (Kind::Hmac(c"SHA224", 28), "EVP_MAC HMAC-SHA224"),
        "hmac-sha224-128" => (Kind::Hmac(c"SHA224", 16), "EVP_MAC HMAC-SHA224 (truncated)"),
        "hmac-sha256" => (Kind::Hmac(c"SHA256", 32), "EVP_MAC HMAC-SHA256"),
        "hmac-sha256-128" => (Kind::Hmac(c"SHA256", 16), "EVP_MAC HMAC-SHA256 (truncated)"),
        "aes128-cmac" => (Kind::Cmac(c"AES-128-CBC"), "EVP_MAC CMAC AES-128"),
        "aes256-cmac" => (Kind::Cmac(c"AES-256-CBC"), "EVP_MAC CMAC AES-256"),
        "aes128-gmac" => (Kind::Gmac, "EVP_MAC GMAC AES-128-GCM, new IV per packet"),
        "poly1305-chacha20" => (
            Kind::Poly1305ChaCha20,
            "EVP ChaCha20 one-time key + EVP_MAC Poly1305",
        ),
        "siphash24" => (Kind::SipHash, "EVP_MAC SIPHASH-2-4, 8-byte tag"),
        "blake3-keyed" => (
            Kind::Blake2sMac,
            "EVP_MAC BLAKE2SMAC (nearest: OpenSSL has no BLAKE3)",
        ),
        _ => return None,
    })
}

/// One algorithm set up in OpenSSL with a key.
pub struct EvpMac {
    kind: Kind,
    /// What the harness runs, for the report.
    pub label: &'static str,
    key: Vec<u8>,
    mac: *mut ffi::EVP_MAC,
    ctx: *mut ffi::EVP_MAC_CTX,
    digest: Option<Hasher>,
    chacha: Option<CipherCtx>,
}

impl std::fmt::Debug for EvpMac {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EvpMac")
            .field("label", &self.label)
            .finish_non_exhaustive()
    }
}

impl Drop for EvpMac {
    fn drop(&mut self) {
        // SAFETY: both pointers came from EVP_MAC_CTX_new/EVP_MAC_fetch (or are null,
        // which the free functions accept) and are freed exactly once here.
        unsafe {
            ffi::EVP_MAC_CTX_free(self.ctx);
            ffi::EVP_MAC_free(self.mac);
        }
    }
}

fn ok(rc: i32, what: &str) -> Result<(), String> {
    if rc == 1 {
        Ok(())
    } else {
        Err(format!(
            "OpenSSL {what} failed: {}",
            openssl::error::ErrorStack::get()
        ))
    }
}

impl EvpMac {
    /// Sets up the OpenSSL equivalent of authtime algorithm `name` with `key`.
    /// `None` when OpenSSL has no equivalent.
    ///
    /// # Errors
    /// OpenSSL's error when a fetch or init fails.
    pub fn new(name: &str, key: &[u8]) -> Result<Option<Self>, String> {
        let Some((kind, label)) = kind_of(name) else {
            return Ok(None);
        };
        let mut this = Self {
            kind,
            label,
            key: key.to_vec(),
            mac: std::ptr::null_mut(),
            ctx: std::ptr::null_mut(),
            digest: None,
            chacha: None,
        };
        let alg: &CStr = match kind {
            Kind::Digest(d) => {
                let md = if d == "md5" {
                    MessageDigest::md5()
                } else {
                    MessageDigest::sha1()
                };
                this.digest = Some(Hasher::new(md).map_err(|e| e.to_string())?);
                return Ok(Some(this));
            }
            Kind::Hmac(..) => c"HMAC",
            Kind::Cmac(_) => c"CMAC",
            Kind::Gmac => c"GMAC",
            Kind::Poly1305ChaCha20 => c"POLY1305",
            Kind::SipHash => c"SIPHASH",
            Kind::Blake2sMac => c"BLAKE2SMAC",
        };
        // SAFETY: `alg` is a NUL-terminated string; a null libctx and properties mean defaults.
        this.mac =
            unsafe { ffi::EVP_MAC_fetch(std::ptr::null_mut(), alg.as_ptr(), std::ptr::null()) };
        if this.mac.is_null() {
            return Err(format!("OpenSSL has no {alg:?} MAC"));
        }
        // SAFETY: `this.mac` is a valid fetched EVP_MAC.
        this.ctx = unsafe { ffi::EVP_MAC_CTX_new(this.mac) };
        if this.ctx.is_null() {
            return Err("EVP_MAC_CTX_new failed".into());
        }
        let mut size8: usize = 8;
        let mut params: Vec<ffi::OSSL_PARAM> = Vec::new();
        // SAFETY: the names are static NUL-terminated strings; the values outlive the
        // EVP_MAC_init call below, which copies what it needs.
        unsafe {
            match kind {
                Kind::Hmac(digest, _) => params.push(OSSL_PARAM_construct_utf8_string(
                    c"digest".as_ptr(),
                    digest.as_ptr().cast_mut(),
                    0,
                )),
                Kind::Cmac(cipher) => params.push(OSSL_PARAM_construct_utf8_string(
                    c"cipher".as_ptr(),
                    cipher.as_ptr().cast_mut(),
                    0,
                )),
                Kind::Gmac => params.push(OSSL_PARAM_construct_utf8_string(
                    c"cipher".as_ptr(),
                    c"AES-128-GCM".as_ptr().cast_mut(),
                    0,
                )),
                Kind::SipHash => params.push(OSSL_PARAM_construct_size_t(
                    c"size".as_ptr(),
                    &raw mut size8,
                )),
                _ => {}
            }
            params.push(ffi::OSSL_PARAM_construct_end());
        }
        match kind {
            Kind::Poly1305ChaCha20 => {
                let mut chacha = CipherCtx::new().map_err(|e| e.to_string())?;
                chacha
                    .encrypt_init(Some(Cipher::chacha20()), Some(key), None)
                    .map_err(|e| e.to_string())?;
                this.chacha = Some(chacha);
            }
            _ => {
                // SAFETY: ctx is valid; key and params are valid for the call.
                ok(
                    unsafe {
                        ffi::EVP_MAC_init(this.ctx, key.as_ptr(), key.len(), params.as_ptr())
                    },
                    "EVP_MAC_init",
                )?;
            }
        }
        Ok(Some(this))
    }

    /// Computes the tag of `msg` (with `nonce` for GMAC and Poly1305) into `out`;
    /// returns the tag length.
    ///
    /// # Errors
    /// OpenSSL's error.
    pub fn tag(&mut self, nonce: &[u8], msg: &[u8], out: &mut [u8; 64]) -> Result<usize, String> {
        match self.kind {
            Kind::Digest(_) => {
                let h = self.digest.as_mut().ok_or("no digest")?;
                h.update(&self.key).map_err(|e| e.to_string())?;
                h.update(msg).map_err(|e| e.to_string())?;
                let d = h.finish().map_err(|e| e.to_string())?;
                out[..d.len()].copy_from_slice(&d);
                Ok(d.len())
            }
            Kind::Poly1305ChaCha20 => {
                let mut iv = [0u8; 16];
                iv[4..].copy_from_slice(nonce);
                let chacha = self.chacha.as_mut().ok_or("no chacha")?;
                chacha
                    .encrypt_init(None, None, Some(&iv))
                    .map_err(|e| e.to_string())?;
                let mut otk = [0u8; 32 + 16];
                chacha
                    .cipher_update(&[0u8; 32], Some(&mut otk))
                    .map_err(|e| e.to_string())?;
                // SAFETY: ctx valid; the 32-byte one-time key is valid for the call.
                ok(
                    unsafe { ffi::EVP_MAC_init(self.ctx, otk.as_ptr(), 32, std::ptr::null()) },
                    "EVP_MAC_init",
                )?;
                self.update_final(msg, out)
            }
            Kind::Gmac => {
                // SAFETY: the name is static; `nonce` outlives the EVP_MAC_init call.
                let params = unsafe {
                    [
                        ffi::OSSL_PARAM_construct_octet_string(
                            c"iv".as_ptr(),
                            nonce.as_ptr().cast_mut().cast(),
                            nonce.len(),
                        ),
                        ffi::OSSL_PARAM_construct_end(),
                    ]
                };
                // SAFETY: ctx valid; a null key reuses the key schedule; params valid for the call.
                ok(
                    unsafe { ffi::EVP_MAC_init(self.ctx, std::ptr::null(), 0, params.as_ptr()) },
                    "EVP_MAC_init",
                )?;
                self.update_final(msg, out)
            }
            _ => {
                // SAFETY: ctx valid; a null key and params reuse the key schedule.
                ok(
                    unsafe { ffi::EVP_MAC_init(self.ctx, std::ptr::null(), 0, std::ptr::null()) },
                    "EVP_MAC_init",
                )?;
                let len = self.update_final(msg, out)?;
                Ok(match self.kind {
                    Kind::Hmac(_, truncated) => truncated.min(len),
                    _ => len,
                })
            }
        }
    }

    fn update_final(&mut self, msg: &[u8], out: &mut [u8; 64]) -> Result<usize, String> {
        let mut len: usize = 0;
        // SAFETY: ctx valid and initialised; msg and out are valid for their lengths.
        unsafe {
            ok(
                ffi::EVP_MAC_update(self.ctx, msg.as_ptr(), msg.len()),
                "EVP_MAC_update",
            )?;
            ok(
                ffi::EVP_MAC_final(self.ctx, out.as_mut_ptr(), &raw mut len, out.len()),
                "EVP_MAC_final",
            )?;
        }
        Ok(len)
    }

    /// Whether OpenSSL computes exactly authtime's algorithm (false for the
    /// BLAKE2s stand-in for BLAKE3).
    #[must_use]
    pub fn is_exact(&self) -> bool {
        self.kind != Kind::Blake2sMac
    }
}

/// Name of the OpenSSL equivalent of an authtime algorithm, if any.
#[must_use]
pub fn label_of(name: &str) -> Option<&'static str> {
    kind_of(name).map(|(_, l)| l)
}

#[cfg(test)]
mod tests {
    use super::*;
    use authtime_mac::Algorithm;

    #[test]
    fn every_algorithm_matches_openssl_per_packet() {
        for alg in Algorithm::ALL {
            let info = alg.info();
            let key: Vec<u8> = (0..info.key.typical()).map(|i| (i * 7 + 1) as u8).collect();
            let nonce: Vec<u8> = (0..info.nonce_len).map(|i| i as u8).collect();
            let mut evp = EvpMac::new(info.name, &key)
                .expect("openssl")
                .expect("every algorithm has a peer");
            let ours = alg.new_mac(&key).expect("key");
            for len in [0usize, 1, 48, 68, 200] {
                let msg: Vec<u8> = (0..len).map(|i| (i * 13) as u8).collect();
                let mut out = [0u8; 64];
                let n = evp.tag(&nonce, &msg, &mut out).expect("tag");
                let tag = ours.compute(&nonce, &msg).expect("tag");
                if evp.is_exact() {
                    assert_eq!(&out[..n], tag.as_bytes(), "{} at {len} bytes", info.name);
                } else {
                    assert_eq!(n, 32);
                }
            }
        }
    }
}
