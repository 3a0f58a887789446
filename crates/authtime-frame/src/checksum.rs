//! The Internet checksum (RFC 1071): the ones' complement of the ones'
//! complement sum of 16-bit big-endian words, as IPv4 headers and UDP use it.
//!
//! Written by hand: it is a few lines, and the crates that have one carry a
//! whole packet stack with them. Eight bytes are added at a time into a u64
//! with end-around carry, then folded to 16 bits: 2^64 - 1 is a multiple of
//! 2^16 - 1, so the 64-bit ones' complement sum folds to the 16-bit one
//! (RFC 1071 section 2(C), "parallel summation").

/// A running ones' complement sum over pieces of a message, in order.
///
/// Pieces may have any length: a piece that starts at an odd offset of the
/// message is added byte-swapped (RFC 1071 section 2(B)), so the result is
/// the same as for the pieces joined.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Checksum {
    sum: u64,
    odd: bool,
}

impl Checksum {
    /// An empty sum.
    #[must_use]
    pub const fn new() -> Self {
        Self { sum: 0, odd: false }
    }

    /// Adds the next piece of the message.
    pub fn add(&mut self, bytes: &[u8]) {
        let mut piece = fold(sum_words(bytes));
        if self.odd {
            piece = piece.swap_bytes();
        }
        self.sum = add_carry(self.sum, u64::from(piece));
        self.odd ^= bytes.len() % 2 == 1;
    }

    /// Adds one big-endian 16-bit word (a length or a protocol number in a
    /// pseudo-header) at the next even offset of the message.
    pub fn add_u16(&mut self, word: u16) {
        self.add(&word.to_be_bytes());
    }

    /// The ones' complement sum so far, folded to 16 bits.
    #[must_use]
    pub fn sum(&self) -> u16 {
        fold(self.sum)
    }

    /// The checksum: the ones' complement of the sum.
    #[must_use]
    pub fn finish(&self) -> u16 {
        !self.sum()
    }
}

/// The Internet checksum of `bytes` (a zero byte pads an odd length).
#[must_use]
pub fn internet_checksum(bytes: &[u8]) -> u16 {
    !fold(sum_words(bytes))
}

/// Whether `bytes`, checksum field included, sum to 0xffff: the check a
/// receiver makes (RFC 1071 section 1, step 3).
#[must_use]
pub fn verifies(bytes: &[u8]) -> bool {
    fold(sum_words(bytes)) == 0xffff
}

fn add_carry(a: u64, b: u64) -> u64 {
    let (sum, carry) = a.overflowing_add(b);
    sum + u64::from(carry)
}

/// The ones' complement sum of `bytes` as big-endian words, in 64 bits.
fn sum_words(bytes: &[u8]) -> u64 {
    let mut sum = 0u64;
    let mut chunks = bytes.chunks_exact(8);
    for chunk in &mut chunks {
        let mut word = [0u8; 8];
        word.copy_from_slice(chunk);
        sum = add_carry(sum, u64::from_be_bytes(word));
    }
    // The tail (0 to 7 bytes) padded with zeros on the right is one more
    // big-endian 64-bit word at the same alignment.
    let tail = chunks.remainder();
    let mut word = [0u8; 8];
    word[..tail.len()].copy_from_slice(tail);
    add_carry(sum, u64::from_be_bytes(word))
}

/// Folds a 64-bit ones' complement sum to 16 bits with end-around carry.
fn fold(sum: u64) -> u16 {
    let sum = (sum & 0xffff_ffff) + (sum >> 32);
    let sum = (sum & 0xffff_ffff) + (sum >> 32);
    let sum = (sum & 0xffff) + (sum >> 16);
    let sum = (sum & 0xffff) + (sum >> 16);
    // At most 0xffff after two 16-bit folds of a 33-bit value.
    sum as u16
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The textbook loop: 16 bits at a time into a u32, folded at the end.
    fn reference_sum(bytes: &[u8]) -> u16 {
        let mut sum = 0u32;
        for pair in bytes.chunks(2) {
            let hi = u32::from(pair[0]) << 8;
            let lo = pair.get(1).map_or(0, |&b| u32::from(b));
            sum += hi | lo;
            sum = (sum & 0xffff) + (sum >> 16);
        }
        sum as u16
    }

    struct Rng(u64);
    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0
        }
    }

    /// RFC 1071 section 3, "Numerical Examples": the bytes 00 01 f2 03 f4 f5
    /// f6 f7 sum to ddf2, so their checksum is 220d.
    #[test]
    fn checksum_rfc1071_section_3_example() {
        let bytes = [0x00, 0x01, 0xf2, 0x03, 0xf4, 0xf5, 0xf6, 0xf7];
        let mut c = Checksum::new();
        c.add(&bytes);
        assert_eq!(c.sum(), 0xddf2);
        assert_eq!(internet_checksum(&bytes), 0x220d);
        let mut with_checksum = bytes.to_vec();
        with_checksum.extend_from_slice(&0x220du16.to_be_bytes());
        assert!(verifies(&with_checksum));
    }

    /// The IPv4 header of the example on Wikipedia's "IPv4 header checksum"
    /// page (192.168.0.1 to 192.168.0.199, UDP): its checksum is b861.
    #[test]
    fn checksum_ipv4_header_wikipedia_example() {
        let header = [
            0x45, 0x00, 0x00, 0x73, 0x00, 0x00, 0x40, 0x00, 0x40, 0x11, 0x00, 0x00, 0xc0, 0xa8,
            0x00, 0x01, 0xc0, 0xa8, 0x00, 0xc7,
        ];
        assert_eq!(internet_checksum(&header), 0xb861);
    }

    #[test]
    fn word_at_a_time_equals_the_textbook_loop_on_random_pieces() {
        let mut rng = Rng(0x5eed_c0de_1071);
        for _ in 0..2000 {
            let len = (rng.next() % 1600) as usize;
            let bytes: Vec<u8> = (0..len).map(|_| rng.next() as u8).collect();
            let want = reference_sum(&bytes);
            // All-ones sums may come out as 0xffff or 0x0000 depending on
            // the order of additions; both are "negative zero" and equal.
            let same = |got: u16| got == want || (got | want == 0xffff && got & want == 0);
            assert!(same(fold(sum_words(&bytes))), "len {len}");
            // Split in up to four pieces of arbitrary (odd) lengths.
            let mut c = Checksum::new();
            let mut rest = &bytes[..];
            for _ in 0..3 {
                let cut = (rng.next() as usize) % (rest.len() + 1);
                c.add(&rest[..cut]);
                rest = &rest[cut..];
            }
            c.add(rest);
            assert!(same(c.sum()), "len {len}, pieces");
        }
    }

    #[test]
    fn all_ones_and_empty_inputs() {
        assert_eq!(internet_checksum(&[]), 0xffff);
        assert_eq!(internet_checksum(&[0xff; 64]), 0);
        assert!(verifies(&[0xff, 0xff]));
        let mut c = Checksum::new();
        c.add_u16(0x1234);
        c.add(&[0xab]);
        c.add(&[0xcd]);
        assert_eq!(c.sum(), reference_sum(&[0x12, 0x34, 0xab, 0xcd]));
    }
}
