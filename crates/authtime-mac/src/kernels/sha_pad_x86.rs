//! The last one or two blocks of a SHA-1 or SHA-256 input, padded (FIPS 180-4
//! section 5.1.1) directly in message-word registers.
//!
//! Padding through a stack buffer costs a zeroing, a variable-length copy and,
//! worse, loads that straddle the narrower stores of the copy and the `0x80`
//! byte, which the store-to-load forwarding of the core cannot serve: each such
//! block then waits for the stores to retire. Here the full 16-byte chunks are
//! loaded from the message, the partial one is shifted into place with one
//! `PSHUFB` from the 16 bytes that end the input, and `0x80` and the length are
//! ORed in.

use core::arch::x86_64::{
    __m128i, _mm_loadu_si128, _mm_or_si128, _mm_set_epi32, _mm_setzero_si128, _mm_shuffle_epi8,
};

/// How a hash loads its message words: SHA-256 byte-swaps each 32-bit word (W0
/// in lane 0), SHA-1 reverses all 16 bytes (W0 in lane 3).
#[derive(Clone, Copy)]
pub(super) enum Order {
    Sha256,
    Sha1,
}

impl Order {
    /// The message byte (0..16 within the chunk) that register byte `j` holds.
    const fn source(self, j: usize) -> usize {
        match self {
            Self::Sha256 => (j & !3) | (3 - (j & 3)),
            Self::Sha1 => 15 - j,
        }
    }

    /// `PSHUFB` mask loading a full chunk in this order.
    const fn full(self) -> [u8; 16] {
        let mut mask = [0u8; 16];
        let mut j = 0;
        while j < 16 {
            mask[j] = self.source(j) as u8;
            j += 1;
        }
        mask
    }

    /// For each `p` in 0..16: the mask that takes the last `p` bytes of a 16-byte
    /// window to chunk bytes 0..p (in this order) and zeroes the rest, and the
    /// `0x80` at chunk byte `p`.
    const fn partial(self) -> [[[u8; 16]; 16]; 2] {
        let mut shift = [[0u8; 16]; 16];
        let mut pad = [[0u8; 16]; 16];
        let mut p = 0;
        while p < 16 {
            let mut j = 0;
            while j < 16 {
                let q = self.source(j);
                shift[p][j] = if q < p { (16 - p + q) as u8 } else { 0x80 };
                pad[p][j] = if q == p { 0x80 } else { 0 };
                j += 1;
            }
            p += 1;
        }
        [shift, pad]
    }
}

static FULL: [[u8; 16]; 2] = [Order::Sha256.full(), Order::Sha1.full()];
static PARTIAL: [[[[u8; 16]; 16]; 2]; 2] = [Order::Sha256.partial(), Order::Sha1.partial()];

#[inline]
#[target_feature(enable = "sse2")]
fn load(bytes: &[u8; 16]) -> __m128i {
    // SAFETY: `bytes` is 16 readable bytes; `loadu` takes any alignment.
    unsafe { _mm_loadu_si128(bytes.as_ptr().cast()) }
}

/// A full 16-byte chunk as message words in `order`.
#[inline]
#[target_feature(enable = "sse2,ssse3")]
pub(super) fn chunk_words(chunk: &[u8; 16], order: Order) -> __m128i {
    _mm_shuffle_epi8(load(chunk), load(&FULL[order as usize]))
}

/// The padded tail: `rem` (the input's bytes after its last full block, fewer
/// than 64), `0x80`, zeros and the bit length of `total` bytes, as one or two
/// blocks of message words, and how many. `end16` holds the 16 bytes that end
/// the whole input (zeros in front when it is shorter).
#[inline]
#[target_feature(enable = "sse2,ssse3")]
pub(super) fn tail_words(
    rem: &[u8],
    end16: &[u8; 16],
    total: u64,
    order: Order,
) -> ([[__m128i; 4]; 2], usize) {
    let n = rem.len();
    let [shift, pad] = &PARTIAL[order as usize];
    let partial = _mm_or_si128(
        _mm_shuffle_epi8(load(end16), load(&shift[n % 16])),
        load(&pad[n % 16]),
    );
    // Every index below is a constant once the loop is unrolled, so the chunks
    // stay in registers (a variable index would put them on the stack).
    let mut w = [[_mm_setzero_si128(); 4]; 2];
    for k in 0..8 {
        w[k / 4][k % 4] = match rem.get(16 * k..16 * k + 16) {
            Some(chunk) => chunk_words(chunk.try_into().expect("16 bytes"), order),
            None if 16 * k <= n => partial,
            None => _mm_setzero_si128(),
        };
    }
    let bits = total.wrapping_mul(8);
    let (hi, lo) = ((bits >> 32) as u32 as i32, bits as u32 as i32);
    let length = match order {
        Order::Sha256 => _mm_set_epi32(lo, hi, 0, 0),
        Order::Sha1 => _mm_set_epi32(0, 0, hi, lo),
    };
    if n < 56 {
        w[0][3] = _mm_or_si128(w[0][3], length);
        (w, 1)
    } else {
        w[1][3] = _mm_or_si128(w[1][3], length);
        (w, 2)
    }
}
