//! AES-SIV (RFC 5297): AEAD_AES_SIV_CMAC_256 and AEAD_AES_SIV_CMAC_512, the
//! AEADs of NTS (RFC 8915), with a key expanded once and used for many
//! packets.
//!
//! With AES-NI the hand-written kernel of `crate::kernels::siv_x86` runs;
//! without it, or when the [`Isa`] given forbids it, a path over RustCrypto's
//! `aes` (`crate::siv_portable`). Both are checked against the RFC 5297
//! vectors and, on random inputs, against the `aes-siv` crate.
//!
//! This type takes S2V's header vector as it is: the NTS conventions (the
//! nonce as the last header, the tag in front of the ciphertext) belong to
//! the caller.

use core::fmt;

#[cfg(target_arch = "x86_64")]
use crate::kernels::siv_many_x86::{self, Job, MAX_JOBS, RawSlots};
#[cfg(target_arch = "x86_64")]
use crate::kernels::siv_x86::SivX86;
use crate::siv_portable::{Siv256, Siv512};
use crate::{Isa, MacError};

/// Bytes of the synthetic IV, which is also the tag.
pub const SIV_TAG_LEN: usize = 16;

/// The implementation chosen for one key, once, when it is set up.
#[derive(Clone)]
#[allow(
    clippy::large_enum_variant,
    reason = "kept inline on purpose: an NTS server makes two session keys per exchange and a box would allocate"
)]
enum Engine {
    #[cfg(target_arch = "x86_64")]
    X86(SivX86),
    Portable256(Siv256),
    Portable512(Siv512),
}

/// An AES-SIV key, expanded. Zeroized on drop; `Debug` shows only its size.
#[derive(Clone)]
pub struct AesSiv {
    engine: Engine,
    key_len: usize,
}

impl AesSiv {
    /// Expands `key`: K1 then K2, 32 bytes (AEAD_AES_SIV_CMAC_256) or 64
    /// (AEAD_AES_SIV_CMAC_512). The kernel is chosen from [`Isa::current`].
    ///
    /// # Errors
    /// [`MacError::KeyLength`] for another length.
    pub fn new(key: &[u8]) -> Result<Self, MacError> {
        Self::new_with_isa(key, Isa::current())
    }

    /// As [`AesSiv::new`], with the AES-NI kernel only when `isa` allows it.
    ///
    /// # Errors
    /// [`MacError::KeyLength`] for a key of neither 32 nor 64 bytes.
    pub fn new_with_isa(key: &[u8], isa: Isa) -> Result<Self, MacError> {
        let key_len = key.len();
        // The nearer of the two sizes is the one the caller meant.
        let (name, want) = if key_len > 48 {
            ("AEAD_AES_SIV_CMAC_512", 64)
        } else {
            ("AEAD_AES_SIV_CMAC_256", 32)
        };
        let bad_len = || MacError::KeyLength {
            algorithm: name.to_owned(),
            got: key_len,
            expected: crate::KeyLength::Exact(want),
        };
        if !matches!(key_len, 32 | 64) {
            return Err(bad_len());
        }
        #[cfg(target_arch = "x86_64")]
        if isa.aesni
            && let Some(kernel) = SivX86::new(key)
        {
            return Ok(Self {
                engine: Engine::X86(kernel),
                key_len,
            });
        }
        #[cfg(not(target_arch = "x86_64"))]
        let _ = isa;
        let engine = if key_len == 32 {
            Siv256::new(key).map(Engine::Portable256)
        } else {
            Siv512::new(key).map(Engine::Portable512)
        };
        Ok(Self {
            engine: engine.ok_or_else(bad_len)?,
            key_len,
        })
    }

    /// Length of the key it was made from (32 or 64).
    #[must_use]
    pub fn key_len(&self) -> usize {
        self.key_len
    }

    /// Whether the AES-NI kernel runs for this key.
    #[must_use]
    pub fn uses_aesni(&self) -> bool {
        match self.engine {
            #[cfg(target_arch = "x86_64")]
            Engine::X86(_) => true,
            _ => false,
        }
    }

    /// Encrypts `buf` in place, authenticating the header vector `headers`
    /// (S2V's components before the plaintext, RFC 5297 section 2.4), and
    /// returns the synthetic IV, which is the tag.
    #[must_use]
    pub fn seal(&self, headers: &[&[u8]], buf: &mut [u8]) -> [u8; SIV_TAG_LEN] {
        match &self.engine {
            #[cfg(target_arch = "x86_64")]
            Engine::X86(k) => k.seal(headers, buf),
            Engine::Portable256(k) => k.seal(headers, buf),
            Engine::Portable512(k) => k.seal(headers, buf),
        }
    }

    /// Decrypts `buf` in place and checks `tag` in constant time.
    ///
    /// # Errors
    /// [`MacError::BadTag`]: wrong key, headers or a tampered ciphertext;
    /// `buf` is then zeroed, so no unauthenticated plaintext is left.
    pub fn open(
        &self,
        headers: &[&[u8]],
        buf: &mut [u8],
        tag: &[u8; SIV_TAG_LEN],
    ) -> Result<(), MacError> {
        let ok = match &self.engine {
            #[cfg(target_arch = "x86_64")]
            Engine::X86(k) => k.open(headers, buf, tag),
            Engine::Portable256(k) => k.open(headers, buf, tag),
            Engine::Portable512(k) => k.open(headers, buf, tag),
        };
        if ok { Ok(()) } else { Err(MacError::BadTag) }
    }
}

/// One-shot use of a key that serves for one operation only (an NTS session
/// key on a server): the key is expanded in the frame that uses it and wiped
/// after, with nothing moved or allocated.
impl AesSiv {
    /// [`AesSiv::seal`] under `key` (32 or 64 bytes), expanded for this call.
    ///
    /// # Errors
    /// [`MacError::KeyLength`].
    pub fn seal_once(
        key: &[u8],
        headers: &[&[u8]],
        buf: &mut [u8],
    ) -> Result<[u8; SIV_TAG_LEN], MacError> {
        #[cfg(target_arch = "x86_64")]
        if Isa::current().aesni
            && let Some(tag) = SivX86::with_key(key, |k| k.seal(headers, buf))
        {
            return Ok(tag);
        }
        Ok(Self::new_with_isa(key, Isa::PORTABLE)?.seal(headers, buf))
    }

    /// [`AesSiv::open`] under `key` (32 or 64 bytes), expanded for this call.
    ///
    /// # Errors
    /// [`MacError::KeyLength`], [`MacError::BadTag`] (then `buf` is zeroed).
    pub fn open_once(
        key: &[u8],
        headers: &[&[u8]],
        buf: &mut [u8],
        tag: &[u8; SIV_TAG_LEN],
    ) -> Result<(), MacError> {
        #[cfg(target_arch = "x86_64")]
        if Isa::current().aesni
            && let Some(ok) = SivX86::with_key(key, |k| k.open(headers, buf, tag))
        {
            return if ok { Ok(()) } else { Err(MacError::BadTag) };
        }
        Self::new_with_isa(key, Isa::PORTABLE)?.open(headers, buf, tag)
    }
}

/// The key of one operation of [`AesSiv::run_batch`].
#[derive(Clone, Copy)]
pub enum SivKeyRef<'a> {
    /// A key expanded once for many operations.
    Expanded(&'a AesSiv),
    /// Key bytes (32 or 64), expanded for this batch only and wiped after.
    Bytes(&'a [u8]),
}

impl fmt::Debug for SivKeyRef<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Expanded(k) => k.fmt(f),
            Self::Bytes(b) => write!(f, "SivKeyRef::Bytes({} bytes)", b.len()),
        }
    }
}

/// One operation of [`AesSiv::run_batch`].
#[derive(Debug, Default)]
pub enum SivOp<'a> {
    /// Nothing (a free slot of a fixed-size batch).
    #[default]
    Skip,
    /// [`AesSiv::seal`]: `buf` is encrypted in place and the tag written to `tag`.
    Seal {
        /// The key.
        key: SivKeyRef<'a>,
        /// S2V's header vector.
        headers: &'a [&'a [u8]],
        /// Plaintext in, ciphertext out.
        buf: &'a mut [u8],
        /// The synthetic IV, out.
        tag: &'a mut [u8; SIV_TAG_LEN],
    },
    /// [`AesSiv::open`]: `buf` is decrypted in place and checked against
    /// `tag`; `verified` says whether it matched (else `buf` is zeroed).
    Open {
        /// The key.
        key: SivKeyRef<'a>,
        /// S2V's header vector.
        headers: &'a [&'a [u8]],
        /// Ciphertext in, plaintext out (zeroed on a mismatch).
        buf: &'a mut [u8],
        /// The tag received.
        tag: [u8; SIV_TAG_LEN],
        /// Out: whether the tag matched.
        verified: &'a mut bool,
    },
}

impl<'a> SivOp<'a> {
    fn key(&self) -> Option<SivKeyRef<'a>> {
        match self {
            Self::Seal { key, .. } | Self::Open { key, .. } => Some(*key),
            Self::Skip => None,
        }
    }
}

/// Many operations at once.
impl AesSiv {
    /// Runs every operation of `ops`, each under its own key, with the same
    /// results as running them one by one. With AES-NI the CMAC chains of all
    /// their S2Vs run side by side (`crate::kernels::siv_many_x86`), so that
    /// independent operations (an NTS request's and its fresh cookies', or a
    /// receive batch's) overlap their AES latencies.
    ///
    /// # Errors
    /// [`MacError::KeyLength`] for a key of neither 32 nor 64 bytes: then no
    /// operation is run. A failed open is not an error: see `verified`.
    pub fn run_batch(ops: &mut [SivOp<'_>]) -> Result<(), MacError> {
        for op in ops.iter() {
            if let Some(SivKeyRef::Bytes(b)) = op.key()
                && !matches!(b.len(), 32 | 64)
            {
                return Err(Self::new(b).err().unwrap_or(MacError::BadTag));
            }
        }
        // Free slots last (each operation carries its own outputs, so the
        // order does not matter), then only the operations.
        ops.sort_unstable_by_key(|op| matches!(op, SivOp::Skip));
        let used = ops
            .iter()
            .take_while(|op| !matches!(op, SivOp::Skip))
            .count();
        let ops = &mut ops[..used];
        #[cfg(target_arch = "x86_64")]
        if Isa::current().aesni {
            for chunk in ops.chunks_mut(MAX_JOBS) {
                if !batch_x86(chunk) {
                    for op in chunk.iter_mut() {
                        run_one(op)?;
                    }
                }
            }
            return Ok(());
        }
        for op in ops.iter_mut() {
            run_one(op)?;
        }
        Ok(())
    }
}

/// One operation on its own.
fn run_one(op: &mut SivOp<'_>) -> Result<(), MacError> {
    match op {
        SivOp::Skip => {}
        SivOp::Seal {
            key,
            headers,
            buf,
            tag,
        } => {
            **tag = match key {
                SivKeyRef::Expanded(k) => k.seal(headers, buf),
                SivKeyRef::Bytes(b) => AesSiv::seal_once(b, headers, buf)?,
            };
        }
        SivOp::Open {
            key,
            headers,
            buf,
            tag,
            verified,
        } => {
            let result = match key {
                SivKeyRef::Expanded(k) => k.open(headers, buf, tag),
                SivKeyRef::Bytes(b) => AesSiv::open_once(b, headers, buf, tag),
            };
            **verified = match result {
                Ok(()) => true,
                Err(MacError::BadTag) => false,
                Err(e) => return Err(e),
            };
        }
    }
    Ok(())
}

/// The batch on the AES-NI kernels; `false` (nothing done) when one key is
/// on the portable path, the batch is too large or mixes round counts.
#[cfg(target_arch = "x86_64")]
fn batch_x86(ops: &mut [SivOp<'_>]) -> bool {
    use zeroize::Zeroize;

    if ops.is_empty() || ops.len() > MAX_JOBS {
        return ops.is_empty();
    }
    // Raw keys are expanded side by side into slots of their own.
    let mut raw = [&[][..]; MAX_JOBS];
    let mut raw_of = [usize::MAX; MAX_JOBS];
    let mut raw_count = 0;
    for (op, at) in ops.iter().zip(raw_of.iter_mut()) {
        if let Some(SivKeyRef::Bytes(b)) = op.key() {
            raw[raw_count] = b;
            *at = raw_count;
            raw_count += 1;
        }
    }
    let mut slots = RawSlots::new(raw_count);
    if !SivX86::fill_many(slots.used(), &raw[..raw_count]) {
        return false;
    }
    let slots = &slots;
    let mut keys: [Option<&SivX86>; MAX_JOBS] = [None; MAX_JOBS];
    for ((slot, op), at) in keys.iter_mut().zip(ops.iter()).zip(raw_of) {
        *slot = match op.key() {
            Some(SivKeyRef::Expanded(AesSiv {
                engine: Engine::X86(k),
                ..
            })) => Some(k),
            Some(SivKeyRef::Bytes(_)) => slots.get(at),
            Some(SivKeyRef::Expanded(_)) | None => None,
        };
    }
    let Some(keys) = KeyList::new(keys, ops.len()) else {
        return false;
    };
    let shapes: [Job<'_>; MAX_JOBS] = core::array::from_fn(|i| Job {
        key: keys.get(i),
        headers: match ops.get(i) {
            Some(SivOp::Seal { headers, .. } | SivOp::Open { headers, .. }) => headers,
            Some(SivOp::Skip) | None => &[],
        },
        plaintext: &[],
    });
    if !siv_many_x86::fits(&shapes[..ops.len()]) {
        return false;
    }
    // Opens decrypt first: S2V runs over the plaintext.
    for (i, op) in ops.iter_mut().enumerate() {
        if let SivOp::Open { buf, tag, .. } = op {
            keys.get(i).ctr(tag, buf);
        }
    }
    let mut v = [[0u8; SIV_TAG_LEN]; MAX_JOBS];
    let jobs: [Job<'_>; MAX_JOBS] = core::array::from_fn(|i| match ops.get(i) {
        Some(SivOp::Seal { headers, buf, .. } | SivOp::Open { headers, buf, .. }) => Job {
            key: keys.get(i),
            headers,
            plaintext: buf,
        },
        Some(SivOp::Skip) | None => shapes[i],
    });
    // Cannot fail: `fits` said yes for these keys and header counts.
    let done = siv_many_x86::s2v_many(&jobs[..ops.len()], &mut v);
    if !done {
        // Undo the decryptions so that the caller's fallback starts over.
        for (i, op) in ops.iter_mut().enumerate() {
            if let SivOp::Open { buf, tag, .. } = op {
                keys.get(i).ctr(tag, buf);
            }
        }
        return false;
    }
    for (i, op) in ops.iter_mut().enumerate() {
        match op {
            SivOp::Seal { buf, tag, .. } => {
                **tag = v[i];
                keys.get(i).ctr(&v[i], buf);
            }
            SivOp::Open {
                buf, tag, verified, ..
            } => {
                **verified = siv_many_x86::tags_equal(&v[i], tag);
                if !**verified {
                    buf.zeroize();
                }
            }
            SivOp::Skip => {}
        }
    }
    crate::wipe(v.as_flattened_mut());
    true
}

/// The keys of a batch, in order (at most [`MAX_JOBS`], at least one).
#[cfg(target_arch = "x86_64")]
struct KeyList<'k> {
    keys: [Option<&'k SivX86>; MAX_JOBS],
    first: &'k SivX86,
}

#[cfg(target_arch = "x86_64")]
impl<'k> KeyList<'k> {
    /// The list, when each of the first `n` keys (`n >= 1`) is there.
    fn new(keys: [Option<&'k SivX86>; MAX_JOBS], n: usize) -> Option<Self> {
        let first = keys[0]?;
        keys[..n]
            .iter()
            .all(Option::is_some)
            .then_some(Self { keys, first })
    }

    /// Key `i`, or the first for an index past the end.
    fn get(&self, i: usize) -> &'k SivX86 {
        self.keys.get(i).copied().flatten().unwrap_or(self.first)
    }
}

impl fmt::Debug for AesSiv {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AesSiv")
            .field("key_len", &self.key_len)
            .field("aesni", &self.uses_aesni())
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hex(s: &str) -> Vec<u8> {
        let s: String = s.split_whitespace().collect();
        (0..s.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&s[i..i + 2], 16).expect("hex"))
            .collect()
    }

    /// Every engine this CPU can run: AES-NI (when present) and portable.
    fn engines(key: &[u8]) -> Vec<AesSiv> {
        let mut all = vec![AesSiv::new_with_isa(key, Isa::PORTABLE).expect("key")];
        let native = AesSiv::new_with_isa(key, Isa::detect()).expect("key");
        if native.uses_aesni() {
            all.push(native);
        }
        all
    }

    /// RFC 5297 appendix A.1, "Deterministic Authenticated Encryption
    /// Example": one header, a 14-byte plaintext (the short S2V path).
    #[test]
    fn aes_siv_rfc5297_appendix_a1() {
        let key = hex("fffefdfcfbfaf9f8f7f6f5f4f3f2f1f0f0f1f2f3f4f5f6f7f8f9fafbfcfdfeff");
        let ad = hex("101112131415161718191a1b1c1d1e1f2021222324252627");
        let plaintext = hex("112233445566778899aabbccddee");
        for siv in engines(&key) {
            let mut buf = plaintext.clone();
            let tag = siv.seal(&[&ad], &mut buf);
            assert_eq!(
                tag.to_vec(),
                hex("85632d07c6e8f37f950acd320a2ecc93"),
                "{siv:?}"
            );
            assert_eq!(buf, hex("40c02b9690c4dc04daef7f6afe5c"), "{siv:?}");
            siv.open(&[&ad], &mut buf, &tag).expect("open");
            assert_eq!(buf, plaintext);
        }
    }

    /// RFC 5297 appendix A.2, "Nonce-Based Authenticated Encryption
    /// Example": two AD components and the nonce.
    #[test]
    fn aes_siv_rfc5297_appendix_a2() {
        let key = hex("7f7e7d7c7b7a79787776757473727170404142434445464748494a4b4c4d4e4f");
        let ad1 =
            hex("00112233445566778899aabbccddeeffdeaddadadeaddadaffeeddccbbaa99887766554433221100");
        let ad2 = hex("102030405060708090a0");
        let nonce = hex("09f911029d74e35bd84156c5635688c0");
        let plaintext = hex(
            "7468697320697320736f6d6520706c61696e7465787420746f20656e6372797074207573696e67205349562d414553",
        );
        for siv in engines(&key) {
            let headers: [&[u8]; 3] = [&ad1, &ad2, &nonce];
            let mut buf = plaintext.clone();
            let tag = siv.seal(&headers, &mut buf);
            assert_eq!(tag.to_vec(), hex("7bdb6e3b432667eb06f4d14bff2fbd0f"));
            assert_eq!(
                buf,
                hex(
                    "cb900f2fddbe404326601965c889bf17dba77ceb094fa663b7a3f748ba8af829ea64ad544a272e9c485b62a3fd5c0d"
                )
            );
            siv.open(&headers, &mut buf, &tag).expect("open");
            assert_eq!(buf, plaintext);
            buf[3] ^= 1;
            assert_eq!(siv.open(&headers, &mut buf, &tag), Err(MacError::BadTag));
            assert!(buf.iter().all(|&b| b == 0));
        }
    }

    /// Every engine agrees with the `aes-siv` crate for both key sizes on
    /// plaintexts of 0 to 200 bytes and more (short S2V, whole and partial
    /// blocks, more than one CTR pass), with 0 to 5 headers of 0 to 70 bytes
    /// (empty ones included), and opens what it sealed.
    #[test]
    fn aes_siv_agrees_with_the_aes_siv_crate() {
        use aes_siv::KeyInit as _;
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        let mut fill = |b: &mut [u8]| {
            for v in b {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                *v = x as u8;
            }
        };
        for key_len in [32, 64] {
            for len in (0..=200).chain([16 * 8, 16 * 8 + 1, 16 * 16, 1000, 1500]) {
                let mut raw = vec![0u8; key_len];
                fill(&mut raw);
                let mut headers = vec![];
                for h in 0..len % 6 {
                    let mut v = vec![0u8; (len * 7 + h * 13) % 71];
                    fill(&mut v);
                    headers.push(v);
                }
                let headers: Vec<&[u8]> = headers.iter().map(Vec::as_slice).collect();
                let mut plaintext = vec![0u8; len];
                fill(&mut plaintext);
                let mut theirs = plaintext.clone();
                let tag = if key_len == 32 {
                    aes_siv::siv::Aes128Siv::new_from_slice(&raw)
                        .expect("key")
                        .encrypt_inout_detached(&headers, theirs.as_mut_slice().into())
                } else {
                    aes_siv::siv::Aes256Siv::new_from_slice(&raw)
                        .expect("key")
                        .encrypt_inout_detached(&headers, theirs.as_mut_slice().into())
                }
                .expect("aes-siv");
                let mut once = plaintext.clone();
                let once_tag = AesSiv::seal_once(&raw, &headers, &mut once).expect("key");
                assert_eq!(&once_tag[..], tag.as_slice(), "one-shot len {len}");
                assert_eq!(once, theirs, "one-shot len {len}");
                AesSiv::open_once(&raw, &headers, &mut once, &once_tag).expect("open");
                assert_eq!(once, plaintext);
                once.copy_from_slice(&theirs);
                once_tag_flip(&raw, &headers, &mut once, once_tag);
                for siv in engines(&raw) {
                    let mut ours = plaintext.clone();
                    let our_tag = siv.seal(&headers, &mut ours);
                    assert_eq!(&our_tag[..], tag.as_slice(), "{siv:?} len {len}");
                    assert_eq!(ours, theirs, "{siv:?} len {len}");
                    siv.open(&headers, &mut ours, &our_tag).expect("open");
                    assert_eq!(ours, plaintext);
                    let mut bad_tag = our_tag;
                    bad_tag[len % 16] ^= 0x40;
                    let mut sealed = theirs.clone();
                    assert_eq!(
                        siv.open(&headers, &mut sealed, &bad_tag),
                        Err(MacError::BadTag)
                    );
                    assert!(sealed.iter().all(|&b| b == 0));
                }
            }
        }
    }

    /// A one-shot open with a wrong tag fails and leaves no plaintext.
    fn once_tag_flip(key: &[u8], headers: &[&[u8]], sealed: &mut [u8], mut tag: [u8; 16]) {
        tag[0] ^= 1;
        assert_eq!(
            AesSiv::open_once(key, headers, sealed, &tag),
            Err(MacError::BadTag)
        );
        assert!(sealed.iter().all(|&b| b == 0));
    }

    /// A batch gives what the same operations give one by one: random mixes
    /// of seals and opens (some with a wrong tag), expanded and raw keys of
    /// both sizes (mixed sizes take the one-by-one path), 0 to 4 headers,
    /// plaintexts of 0 to 300 bytes, batches of 1 to 20 (past the kernel's
    /// 16).
    #[test]
    fn a_batch_agrees_with_one_by_one() {
        let mut x = 0x2545_f491_4f6c_dd1du64;
        let mut next = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        for round in 0..300 {
            let count = 1 + (next() % 20) as usize;
            let same_size = round % 3 != 0;
            let mut raw_keys = vec![];
            let mut headers = vec![];
            let mut plaintexts = vec![];
            let mut tampered = vec![];
            for _ in 0..count {
                let len = if same_size || next() % 2 == 0 { 32 } else { 64 };
                raw_keys.push((0..len).map(|_| next() as u8).collect::<Vec<u8>>());
                let h: Vec<Vec<u8>> = (0..next() % 5)
                    .map(|_| (0..next() % 80).map(|_| next() as u8).collect())
                    .collect();
                headers.push(h);
                plaintexts.push((0..next() % 301).map(|_| next() as u8).collect::<Vec<u8>>());
                tampered.push(next() % 4 == 0);
            }
            let expanded: Vec<AesSiv> = raw_keys
                .iter()
                .map(|k| AesSiv::new(k).expect("key"))
                .collect();
            let header_refs: Vec<Vec<&[u8]>> = headers
                .iter()
                .map(|h| h.iter().map(Vec::as_slice).collect())
                .collect();
            // What one by one gives: sealed texts and tags.
            let mut sealed = plaintexts.clone();
            let tags: Vec<[u8; 16]> = sealed
                .iter_mut()
                .zip(&expanded)
                .zip(&header_refs)
                .map(|((buf, k), h)| k.seal(h, buf))
                .collect();
            // Even ops seal the plaintext, odd ones open the sealed text.
            let mut bufs: Vec<Vec<u8>> = (0..count)
                .map(|i| {
                    if i % 2 == 0 {
                        plaintexts[i].clone()
                    } else {
                        sealed[i].clone()
                    }
                })
                .collect();
            let mut out_tags = vec![[0u8; 16]; count];
            let mut verified = vec![false; count];
            let mut ops: Vec<SivOp<'_>> = vec![];
            for (i, ((buf, out_tag), ok)) in bufs
                .iter_mut()
                .zip(out_tags.iter_mut())
                .zip(verified.iter_mut())
                .enumerate()
            {
                let key = if next() % 2 == 0 {
                    SivKeyRef::Expanded(&expanded[i])
                } else {
                    SivKeyRef::Bytes(&raw_keys[i])
                };
                if i % 2 == 0 {
                    ops.push(SivOp::Seal {
                        key,
                        headers: &header_refs[i],
                        buf,
                        tag: out_tag,
                    });
                } else {
                    let mut tag = tags[i];
                    if tampered[i] {
                        tag[7] ^= 1;
                    }
                    ops.push(SivOp::Open {
                        key,
                        headers: &header_refs[i],
                        buf,
                        tag,
                        verified: ok,
                    });
                }
            }
            AesSiv::run_batch(&mut ops).expect("batch");
            drop(ops);
            for i in 0..count {
                if i % 2 == 0 {
                    assert_eq!(out_tags[i], tags[i], "round {round} op {i}");
                    assert_eq!(bufs[i], sealed[i], "round {round} op {i}");
                } else if tampered[i] {
                    assert!(!verified[i], "round {round} op {i}");
                    assert!(bufs[i].iter().all(|&b| b == 0));
                } else {
                    assert!(verified[i], "round {round} op {i}");
                    assert_eq!(bufs[i], plaintexts[i], "round {round} op {i}");
                }
            }
        }
        let mut buf = [0u8; 4];
        let mut tag = [0u8; 16];
        let mut bad = [SivOp::Seal {
            key: SivKeyRef::Bytes(&[0; 20]),
            headers: &[],
            buf: &mut buf,
            tag: &mut tag,
        }];
        assert!(matches!(
            AesSiv::run_batch(&mut bad),
            Err(MacError::KeyLength { got: 20, .. })
        ));
        assert!(AesSiv::run_batch(&mut []).is_ok());
    }

    #[test]
    fn wrong_key_lengths_are_refused_and_debug_hides_the_key() {
        assert!(AesSiv::seal_once(&[0; 16], &[], &mut []).is_err());
        assert!(AesSiv::open_once(&[0; 48], &[], &mut [], &[0; 16]).is_err());
        for len in [0, 16, 31, 33, 48, 63, 65] {
            assert!(matches!(
                AesSiv::new(&vec![1; len]),
                Err(MacError::KeyLength { got, .. }) if got == len
            ));
        }
        let siv = AesSiv::new(&[0xab; 32]).expect("key");
        let shown = format!("{siv:?}");
        assert!(!shown.contains("171") && !shown.contains("ab"), "{shown}");
        assert_eq!(siv.key_len(), 32);
    }
}
