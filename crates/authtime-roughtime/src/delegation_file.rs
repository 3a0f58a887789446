//! Text forms of Roughtime keys, sans-IO (the daemon and the `authtime`
//! command read and write the files):
//!
//! - the long-term key: the 32-byte Ed25519 seed in hex on one line;
//! - a delegation: an online key with its two certificates (one per
//!   version, see [`crate::version`]) and the long-term public key that
//!   signed them, as `name value` lines after a header line. The same text is
//!   the blob the daemon keeps in its key store, so that a fleet shares one
//!   online key.
//!
//! Both hold secrets (the seeds); callers keep the files private.

use ed25519_dalek::SigningKey;

use crate::delegation::OnlineKey;
use crate::error::Error;

/// The first line of a delegation text.
pub const DELEGATION_HEADER: &str = "# authtime roughtime delegation v1";

/// Why a key text was refused. Never quotes the text (it holds secrets).
#[non_exhaustive]
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KeyTextError {
    /// Not 64 hex digits on one line.
    BadSeed,
    /// The header line is missing or names another format.
    BadHeader,
    /// A line is not `name value`, a name repeats or is unknown, or a value
    /// does not decode; the value is the line's name.
    BadLine(String),
    /// A line is missing; the value is its name.
    Missing(&'static str),
    /// The certificates do not verify for the key and window given.
    Certificate(Error),
}

impl core::fmt::Display for KeyTextError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            Self::BadSeed => f.write_str("not a 32-byte Ed25519 seed in hex on one line"),
            Self::BadHeader => write!(f, "the first line is not `{DELEGATION_HEADER}`"),
            Self::BadLine(name) => write!(f, "bad or repeated line `{name}`"),
            Self::Missing(name) => write!(f, "no `{name}` line"),
            Self::Certificate(e) => write!(f, "certificate: {e}"),
        }
    }
}

impl std::error::Error for KeyTextError {}

/// Parses a long-term seed: 64 hex digits, surrounding white space ignored.
///
/// # Errors
/// [`KeyTextError::BadSeed`].
pub fn parse_seed(text: &str) -> Result<SigningKey, KeyTextError> {
    let mut seed = [0u8; 32];
    hex::decode_to_slice(text.trim(), &mut seed).map_err(|_| KeyTextError::BadSeed)?;
    Ok(SigningKey::from_bytes(&seed))
}

/// The text of a long-term seed file.
pub fn seed_text(key: &SigningKey) -> String {
    format!("{}\n", hex::encode(key.to_bytes()))
}

/// A delegation: the online key and the long-term public key it was made under.
#[derive(Debug)]
pub struct Delegation {
    /// The long-term public key that signed the certificates.
    pub long_term_public: [u8; 32],
    /// The online key with its certificates.
    pub key: OnlineKey,
}

/// The text of `key`, delegated by `long_term_public`.
pub fn delegation_text(long_term_public: &[u8; 32], key: &OnlineKey) -> String {
    use crate::version::Version;
    let (mint, maxt) = key.window();
    format!(
        "{DELEGATION_HEADER}\nlong-term-public-key {}\nonline-key {}\nmint {mint}\nmaxt {maxt}\n\
         cert-rfc {}\ncert-draft {}\n",
        hex::encode(long_term_public),
        hex::encode(key.seed()),
        hex::encode(key.cert(Version::Rfc1)),
        hex::encode(key.cert(Version::Draft12)),
    )
}

/// Parses and checks a delegation text: every certificate must verify under
/// the long-term public key it names.
///
/// # Errors
/// A malformed text or certificates that do not verify.
pub fn parse_delegation(text: &str) -> Result<Delegation, KeyTextError> {
    let mut lines = text.lines().map(str::trim).filter(|l| !l.is_empty());
    if lines.next() != Some(DELEGATION_HEADER) {
        return Err(KeyTextError::BadHeader);
    }
    const NAMES: [&str; 6] = [
        "long-term-public-key",
        "online-key",
        "mint",
        "maxt",
        "cert-rfc",
        "cert-draft",
    ];
    let mut values: [Option<&str>; 6] = [None; 6];
    for line in lines {
        let (name, value) = line
            .split_once(' ')
            .ok_or_else(|| KeyTextError::BadLine(short(line)))?;
        let slot = NAMES
            .iter()
            .position(|n| *n == name)
            .and_then(|i| values.get_mut(i))
            .filter(|v| v.is_none())
            .ok_or_else(|| KeyTextError::BadLine(short(name)))?;
        *slot = Some(value.trim());
    }
    let get = |i: usize| values[i].ok_or(KeyTextError::Missing(NAMES[i]));
    let array = |i: usize| -> Result<[u8; 32], KeyTextError> {
        let mut out = [0u8; 32];
        hex::decode_to_slice(get(i)?, &mut out)
            .map_err(|_| KeyTextError::BadLine(NAMES[i].into()))?;
        Ok(out)
    };
    let number = |i: usize| -> Result<u64, KeyTextError> {
        get(i)?
            .parse()
            .map_err(|_| KeyTextError::BadLine(NAMES[i].into()))
    };
    let bytes = |i: usize| -> Result<Vec<u8>, KeyTextError> {
        hex::decode(get(i)?).map_err(|_| KeyTextError::BadLine(NAMES[i].into()))
    };
    let long_term_public = array(0)?;
    let online = SigningKey::from_bytes(&array(1)?);
    let key = OnlineKey::from_parts(
        &long_term_public,
        online,
        number(2)?,
        number(3)?,
        bytes(5)?,
        bytes(4)?,
    )
    .map_err(KeyTextError::Certificate)?;
    Ok(Delegation {
        long_term_public,
        key,
    })
}

/// A name from the input, cut short and stripped of anything but name characters.
fn short(name: &str) -> String {
    name.chars()
        .take(24)
        .filter(|c| c.is_ascii_alphanumeric() || *c == '-')
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::version::Version;

    fn delegation() -> (SigningKey, OnlineKey) {
        let long_term = SigningKey::from_bytes(&[3; 32]);
        let online = SigningKey::from_bytes(&[4; 32]);
        let key = OnlineKey::delegate(&long_term, online, 100, 200).unwrap();
        (long_term, key)
    }

    #[test]
    fn a_delegation_round_trips_and_verifies() {
        let (long_term, key) = delegation();
        let public = long_term.verifying_key().to_bytes();
        let text = delegation_text(&public, &key);
        let back = parse_delegation(&text).unwrap();
        assert_eq!(back.long_term_public, public);
        assert_eq!(back.key.window(), (100, 200));
        assert_eq!(back.key.seed(), key.seed());
        for v in [Version::Draft12, Version::Rfc1] {
            assert_eq!(back.key.cert(v), key.cert(v));
        }
    }

    #[test]
    fn tampered_or_malformed_delegations_are_refused() {
        let (long_term, key) = delegation();
        let public = long_term.verifying_key().to_bytes();
        let text = delegation_text(&public, &key);
        let cases = [
            (text.replace("maxt 200", "maxt 201"), "window"),
            (
                text.replacen(&hex::encode(public), &hex::encode([9u8; 32]), 1),
                "key",
            ),
            (text.replace(DELEGATION_HEADER, "# other"), "header"),
            (text.replace("mint 100\n", ""), "missing"),
            (format!("{text}mint 100\n"), "repeated"),
            (format!("{text}junk\n"), "junk"),
            (text.replace("cert-rfc ", "cert-rfc zz"), "hex"),
            (String::new(), "empty"),
        ];
        for (bad, why) in cases {
            assert!(parse_delegation(&bad).is_err(), "{why}");
        }
        // Swapped certificates carry the other version's context string.
        let rfc = hex::encode(key.cert(Version::Rfc1));
        let draft = hex::encode(key.cert(Version::Draft12));
        let swapped = text
            .replace(&rfc, "RFC")
            .replace(&draft, &rfc)
            .replace("RFC", &draft);
        assert!(matches!(
            parse_delegation(&swapped),
            Err(KeyTextError::Certificate(_))
        ));
    }

    #[test]
    fn seeds_round_trip_and_bad_ones_are_refused() {
        let key = SigningKey::from_bytes(&[7; 32]);
        let back = parse_seed(&seed_text(&key)).unwrap();
        assert_eq!(back.to_bytes(), key.to_bytes());
        for bad in ["", "00", &"0".repeat(63), &"g".repeat(64), &"0".repeat(66)] {
            assert_eq!(parse_seed(bad).unwrap_err(), KeyTextError::BadSeed);
        }
    }
}
