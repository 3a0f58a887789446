//! AES-SIV (RFC 5297) on RustCrypto's `aes`: the portable path of
//! [`crate::AesSiv`], for CPUs without AES-NI (and the reference the AES-NI
//! kernel, `crate::kernels::siv_x86`, is tested against besides the
//! `aes-siv` crate).
//!
//! Both AES keys are expanded once (encryption schedules only), with the CMAC
//! subkeys and CMAC(K1, 0^128), the constant start of every S2V. CTR runs
//! eight blocks per call to the cipher and S2V's independent CMAC chains run
//! side by side, so the AES rounds pipeline where the backend allows it.

use aes::cipher::{BlockCipherEncrypt, KeyInit};
use aes::{Aes128Enc, Aes256Enc, Block};
use subtle::ConstantTimeEq;
use zeroize::Zeroize;

/// Bytes of a block and of the synthetic IV.
const BLOCK: usize = 16;
/// Blocks of keystream made per call to the cipher.
const CTR_BATCH: usize = 8;
/// Most CMAC chains S2V runs side by side.
const LANES: usize = 4;

/// One CMAC chain of S2V: `blocks` blocks of `msg` absorbed into `x`, the
/// last one padded and keyed when `finish` (then `x` ends as the CMAC).
#[derive(Default)]
struct Lane<'a> {
    msg: &'a [u8],
    blocks: usize,
    finish: bool,
    x: u128,
}

/// Doubling in GF(2^128) (RFC 5297 section 2.3), without a branch on the
/// (secret) top bit.
fn dbl(x: u128) -> u128 {
    (x << 1) ^ (0x87 & 0u128.wrapping_sub(x >> 127))
}

/// `bytes` (at most 16) as a block, zero-filled.
fn partial_block(bytes: &[u8]) -> [u8; BLOCK] {
    let mut b = [0u8; BLOCK];
    if let Some(dst) = b.get_mut(..bytes.len()) {
        dst.copy_from_slice(bytes);
    }
    b
}

/// `bytes` (exactly 16) as a number.
fn block_value(bytes: &[u8]) -> u128 {
    u128::from_be_bytes(partial_block(bytes))
}

/// An AES-SIV key: AES-128 halves for AEAD_AES_SIV_CMAC_256, AES-256 halves
/// for AEAD_AES_SIV_CMAC_512.
#[derive(Clone)]
pub(crate) struct SivKey<C: BlockCipherEncrypt + KeyInit + Clone> {
    mac: C,
    ctr: C,
    sub1: u128,
    sub2: u128,
    zero_mac: u128,
}

/// AEAD_AES_SIV_CMAC_256.
pub(crate) type Siv256 = SivKey<Aes128Enc>;
/// AEAD_AES_SIV_CMAC_512.
pub(crate) type Siv512 = SivKey<Aes256Enc>;

impl<C: BlockCipherEncrypt<BlockSize = aes::cipher::consts::U16> + KeyInit + Clone> SivKey<C> {
    /// A key from `key` (K1 then K2, each half of it); `None` for a wrong length.
    pub(crate) fn new(key: &[u8]) -> Option<Self> {
        let half = key.len() / 2;
        if !key.len().is_multiple_of(2) {
            return None;
        }
        let (k1, k2) = key.split_at(half);
        let mac = C::new_from_slice(k1).ok()?;
        let ctr = C::new_from_slice(k2).ok()?;
        let l = encrypt(&mac, 0);
        let sub1 = dbl(l);
        let mut key = Self {
            mac,
            ctr,
            sub1,
            sub2: dbl(sub1),
            zero_mac: 0,
        };
        // CMAC of one complete zero block.
        key.zero_mac = encrypt(&key.mac, key.sub1);
        Some(key)
    }

    /// Block `k` of `lane`'s CMAC input: its last one padded and keyed
    /// with the subkey when the lane finishes.
    fn lane_block(&self, lane: &Lane<'_>, k: usize) -> u128 {
        let start = BLOCK * k;
        let bytes = lane
            .msg
            .get(start..lane.msg.len().min(start + BLOCK))
            .unwrap_or_default();
        if !(lane.finish && k + 1 == lane.blocks) {
            return block_value(bytes);
        }
        if bytes.len() == BLOCK {
            return block_value(bytes) ^ self.sub1;
        }
        let mut padded = partial_block(bytes);
        if let Some(b) = padded.get_mut(bytes.len()) {
            *b = 0x80;
        }
        let v = u128::from_be_bytes(padded) ^ self.sub2;
        padded.zeroize();
        v
    }

    /// Runs up to [`LANES`] CMAC chains side by side, one AES call per
    /// round for all of them, so their rounds pipeline.
    fn run_lanes(&self, lanes: &mut [Lane<'_>]) {
        let rounds = lanes.iter().map(|l| l.blocks).max().unwrap_or(0);
        let mut batch = [Block::default(); LANES];
        for k in 0..rounds {
            let mut n = 0;
            for lane in lanes.iter().filter(|l| k < l.blocks) {
                if let Some(slot) = batch.get_mut(n) {
                    *slot = Block::from((lane.x ^ self.lane_block(lane, k)).to_be_bytes());
                    n += 1;
                }
            }
            self.mac
                .encrypt_blocks(batch.get_mut(..n).unwrap_or_default());
            for (lane, out) in lanes.iter_mut().filter(|l| k < l.blocks).zip(&batch) {
                lane.x = u128::from_be_bytes(out.0);
            }
        }
        for b in &mut batch {
            b.as_mut_slice().zeroize();
        }
    }

    /// S2V(K1, headers..., plaintext) (RFC 5297 section 2.4). The CMACs of
    /// the headers and the plaintext's blocks before its last 16 bytes (the
    /// only ones S2V's running value touches) are computed side by side.
    fn s2v(&self, headers: &[&[u8]], plaintext: &[u8]) -> [u8; BLOCK] {
        let n = plaintext.len();
        let prefix_blocks = if n >= BLOCK { (n - BLOCK) / BLOCK } else { 0 };
        let mut plaintext_x = 0u128;
        let mut d = self.zero_mac;
        let mut groups = headers.chunks(LANES - 1);
        let mut first = true;
        loop {
            let group = groups.next().unwrap_or_default();
            if group.is_empty() && !first {
                break;
            }
            let mut lanes: [Lane<'_>; LANES] = Default::default();
            for (lane, h) in lanes.iter_mut().zip(group) {
                *lane = Lane {
                    msg: h,
                    blocks: h.len().div_ceil(BLOCK).max(1),
                    finish: true,
                    x: 0,
                };
            }
            if first && let Some(lane) = lanes.get_mut(group.len()) {
                *lane = Lane {
                    msg: plaintext,
                    blocks: prefix_blocks,
                    finish: false,
                    x: 0,
                };
            }
            self.run_lanes(&mut lanes);
            for lane in lanes.iter().take(group.len()) {
                d = dbl(d) ^ lane.x;
            }
            if first {
                plaintext_x = lanes.get(group.len()).map_or(0, |l| l.x);
                first = false;
            }
        }
        let v = if n >= BLOCK {
            // The rest (16 to 31 bytes) with D xored onto its last 16 bytes.
            let rest = plaintext.get(BLOCK * prefix_blocks..).unwrap_or_default();
            let mut buf = [0u8; 2 * BLOCK];
            if let Some(dst) = buf.get_mut(..rest.len()) {
                dst.copy_from_slice(rest);
            }
            let tail_at = rest.len() - BLOCK;
            let tail = block_value(buf.get(tail_at..tail_at + BLOCK).unwrap_or_default()) ^ d;
            if let Some(dst) = buf.get_mut(tail_at..tail_at + BLOCK) {
                dst.copy_from_slice(&tail.to_be_bytes());
            }
            let lane = Lane {
                msg: buf.get(..rest.len()).unwrap_or_default(),
                blocks: rest.len().div_ceil(BLOCK),
                finish: true,
                x: plaintext_x,
            };
            let mut lanes = [lane];
            self.run_lanes(&mut lanes);
            let [lane] = lanes;
            let v = lane.x;
            buf.zeroize();
            v
        } else {
            let mut padded = partial_block(plaintext);
            if let Some(b) = padded.get_mut(n) {
                *b = 0x80;
            }
            let v = encrypt(&self.mac, dbl(d) ^ u128::from_be_bytes(padded) ^ self.sub1);
            padded.zeroize();
            v
        };
        d.zeroize();
        plaintext_x.zeroize();
        v.to_be_bytes()
    }

    /// Xors the keystream CTR(K2, Q) onto `buf`, Q being `iv` with the top
    /// bits of its last two 32-bit words cleared.
    fn apply_ctr(&self, iv: &[u8; BLOCK], buf: &mut [u8]) {
        let mut q = *iv;
        q[8] &= 0x7f;
        q[12] &= 0x7f;
        let mut counter = u128::from_be_bytes(q);
        let mut stream = [Block::default(); CTR_BATCH];
        for chunk in buf.chunks_mut(BLOCK * CTR_BATCH) {
            let n = chunk.len().div_ceil(BLOCK);
            let blocks = stream.get_mut(..n).unwrap_or_default();
            for b in blocks.iter_mut() {
                *b = Block::from(counter.to_be_bytes());
                counter = counter.wrapping_add(1);
            }
            self.ctr.encrypt_blocks(blocks);
            for (piece, k) in chunk.chunks_mut(BLOCK).zip(blocks.iter()) {
                if piece.len() == BLOCK {
                    let v = block_value(piece) ^ u128::from_be_bytes(k.0);
                    piece.copy_from_slice(&v.to_be_bytes());
                } else {
                    for (byte, key) in piece.iter_mut().zip(k.iter()) {
                        *byte ^= key;
                    }
                }
            }
        }
        for b in &mut stream {
            b.as_mut_slice().zeroize();
        }
    }

    /// Encrypts `buf` in place; returns the synthetic IV (the tag).
    pub(crate) fn seal(&self, headers: &[&[u8]], buf: &mut [u8]) -> [u8; BLOCK] {
        let v = self.s2v(headers, buf);
        self.apply_ctr(&v, buf);
        v
    }

    /// Decrypts `buf` in place and checks `tag`; on a mismatch `buf` is
    /// zeroed and `false` returned.
    pub(crate) fn open(&self, headers: &[&[u8]], buf: &mut [u8], tag: &[u8; BLOCK]) -> bool {
        self.apply_ctr(tag, buf);
        let v = self.s2v(headers, buf);
        let ok = bool::from(v.ct_eq(tag));
        if !ok {
            buf.zeroize();
        }
        ok
    }
}

impl<C: BlockCipherEncrypt + KeyInit + Clone> Drop for SivKey<C> {
    fn drop(&mut self) {
        // The AES schedules zeroize themselves (the `aes` crate's `zeroize` feature).
        self.sub1.zeroize();
        self.sub2.zeroize();
        self.zero_mac.zeroize();
    }
}

fn encrypt<C: BlockCipherEncrypt<BlockSize = aes::cipher::consts::U16>>(c: &C, x: u128) -> u128 {
    let mut b = Block::from(x.to_be_bytes());
    c.encrypt_block(&mut b);
    let out = u128::from_be_bytes(b.into());
    b.as_mut_slice().zeroize();
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn doubling_reduces_by_the_field_polynomial() {
        assert_eq!(dbl(1), 2);
        assert_eq!(dbl(1 << 127), 0x87);
        assert_eq!(dbl((1 << 127) | 1), 0x85);
        assert_eq!(dbl(u128::MAX), (u128::MAX << 1) ^ 0x87);
    }
}
