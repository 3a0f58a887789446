//! New random keys, from random bytes the caller supplies (the daemon and the
//! `keygen` command take them from the operating system; tests pass fixed ones).

use core::fmt;

use crate::{KeyMaterial, KeyType};

/// Why keys could not be generated.
#[non_exhaustive]
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KeyGenError {
    /// Fewer random bytes than [`random_bytes_needed`].
    NotEnoughRandomBytes {
        /// Bytes needed.
        needed: usize,
        /// Bytes given.
        got: usize,
    },
    /// Key ids must start at 1 and stay within `u32`.
    IdRange {
        /// The first id asked for.
        first_id: u32,
        /// The number of keys asked for.
        count: u32,
    },
}

impl fmt::Display for KeyGenError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::NotEnoughRandomBytes { needed, got } => {
                write!(f, "{needed} random bytes needed, {got} given")
            }
            Self::IdRange { first_id, count } => write!(
                f,
                "{count} keys from id {first_id} do not fit in key ids 1..=4294967295"
            ),
        }
    }
}

impl std::error::Error for KeyGenError {}

/// Random bytes [`generate_keys`] needs for `count` keys of `key_type`.
#[must_use]
pub fn random_bytes_needed(key_type: KeyType, count: u32) -> usize {
    key_type
        .generated_key_len()
        .saturating_mul(usize::try_from(count).unwrap_or(usize::MAX))
}

/// `count` keys of `key_type` with ids `first_id`, `first_id + 1`, …, each
/// [`KeyType::generated_key_len`] bytes taken in order from `random` (which
/// must come from a cryptographically secure generator).
///
/// # Errors
/// Too few random bytes, or ids outside 1..=2^32−1.
pub fn generate_keys(
    key_type: KeyType,
    first_id: u32,
    count: u32,
    random: &[u8],
) -> Result<Vec<KeyMaterial>, KeyGenError> {
    if first_id == 0 || first_id.checked_add(count.saturating_sub(1)).is_none() {
        return Err(KeyGenError::IdRange { first_id, count });
    }
    let needed = random_bytes_needed(key_type, count);
    if random.len() < needed {
        return Err(KeyGenError::NotEnoughRandomBytes {
            needed,
            got: random.len(),
        });
    }
    Ok(random[..needed]
        .chunks_exact(key_type.generated_key_len())
        .zip(0..count)
        // The id range was checked above.
        .map(|(secret, i)| KeyMaterial::new(first_id + i, key_type, secret))
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_take_consecutive_random_bytes_and_ids() {
        let random: Vec<u8> = (0..64).collect();
        let keys = generate_keys(KeyType::Aes128Cmac, 10, 3, &random).expect("keys");
        assert_eq!(keys.len(), 3);
        assert_eq!(keys[2].id(), 12);
        assert_eq!(keys[1].secret().expose(), &random[16..32]);
    }

    #[test]
    fn refuses_short_randomness_and_bad_ids() {
        assert_eq!(
            generate_keys(KeyType::Sha1, 1, 2, &[0; 39]).map(|k| k.len()),
            Err(KeyGenError::NotEnoughRandomBytes {
                needed: 40,
                got: 39
            })
        );
        assert!(generate_keys(KeyType::Md5, 0, 1, &[0; 20]).is_err());
        assert!(generate_keys(KeyType::Md5, u32::MAX, 2, &[0; 40]).is_err());
        assert_eq!(
            generate_keys(KeyType::Md5, u32::MAX, 1, &[0; 20]).map(|k| k.len()),
            Ok(1)
        );
        assert_eq!(
            generate_keys(KeyType::Md5, 1, 0, &[]).map(|k| k.len()),
            Ok(0)
        );
        assert_eq!(random_bytes_needed(KeyType::Sha256, 4), 128);
    }
}
