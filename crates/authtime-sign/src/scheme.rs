//! The signature schemes authtime can sign bootstrap messages with: stable wire ids,
//! command-line names and sizes, all in one table.

use core::fmt;
use core::str::FromStr;

/// A signature scheme for TESLA bootstrap messages (the signed sync response of RFC 4082 §3.3).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Scheme {
    /// Ed25519 (RFC 8032 §5.1), pure mode, strict verification.
    Ed25519,
    /// ECDSA over P-256 with SHA-256 (FIPS 186-5), deterministic nonces (RFC 6979).
    EcdsaP256,
    /// ML-DSA-44 (FIPS 204), deterministic variant, empty context.
    MlDsa44,
    /// ML-DSA-65 (FIPS 204), deterministic variant, empty context.
    MlDsa65,
    /// SLH-DSA-SHA2-128s (FIPS 205), deterministic variant, empty context.
    SlhDsaSha2_128s,
    /// LMS_SHA256_M32_H10 with LMOTS_SHA256_N32_W4 (RFC 8554 §5): 1024 signatures per key, stateful.
    Lms,
}

/// Sizes in bytes of one scheme's encodings.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SchemeSizes {
    /// Encoded public key.
    pub public_key: usize,
    /// Encoded signature (every scheme here has fixed-size signatures).
    pub signature: usize,
    /// Encoded secret key as stored in a secret key file.
    pub secret_key: usize,
}

/// One row of the scheme table.
struct SchemeInfo {
    scheme: Scheme,
    id: u16,
    name: &'static str,
    sizes: SchemeSizes,
}

const fn sizes(public_key: usize, signature: usize, secret_key: usize) -> SchemeSizes {
    SchemeSizes {
        public_key,
        signature,
        secret_key,
    }
}

/// The only place ids, names and sizes are defined. Ids are authtime's own registry: never
/// reuse or renumber one, add new schemes at the end.
const TABLE: [SchemeInfo; 6] = [
    // pk: compressed point (RFC 8032 §5.1.5); sk: the 32-byte seed.
    SchemeInfo {
        scheme: Scheme::Ed25519,
        id: 1,
        name: "ed25519",
        sizes: sizes(32, 64, 32),
    },
    // pk: SEC1 compressed point; sig: r || s; sk: the scalar.
    SchemeInfo {
        scheme: Scheme::EcdsaP256,
        id: 2,
        name: "p256",
        sizes: sizes(33, 64, 32),
    },
    // sk: the 32-byte seed xi of ML-DSA.KeyGen_internal (FIPS 204 Algorithm 6).
    SchemeInfo {
        scheme: Scheme::MlDsa44,
        id: 3,
        name: "ml-dsa-44",
        sizes: sizes(1312, 2420, 32),
    },
    SchemeInfo {
        scheme: Scheme::MlDsa65,
        id: 4,
        name: "ml-dsa-65",
        sizes: sizes(1952, 3309, 32),
    },
    // sk: SK.seed || SK.prf || PK.seed || PK.root (FIPS 205 §9.1).
    SchemeInfo {
        scheme: Scheme::SlhDsaSha2_128s,
        id: 5,
        name: "slh-dsa-128s",
        sizes: sizes(32, 7856, 64),
    },
    // pk: u32 lms type || u32 ots type || I || T[1] (RFC 8554 §5.3);
    // sig: q || LM-OTS sig (4 + 32 + 67*32) || u32 type || 10 path nodes (RFC 8554 §5.4);
    // sk: u32 lms type || u32 ots type || q || I || SEED (lms-signature's format).
    SchemeInfo {
        scheme: Scheme::Lms,
        id: 6,
        name: "lms",
        sizes: sizes(56, 2508, 60),
    },
];

impl Scheme {
    /// Every scheme, in id order.
    pub const ALL: [Scheme; 6] = [
        Scheme::Ed25519,
        Scheme::EcdsaP256,
        Scheme::MlDsa44,
        Scheme::MlDsa65,
        Scheme::SlhDsaSha2_128s,
        Scheme::Lms,
    ];

    fn info(self) -> &'static SchemeInfo {
        // The table holds every variant (checked by a test), so the fallback is never taken.
        TABLE
            .iter()
            .find(|row| row.scheme == self)
            .unwrap_or(&TABLE[0])
    }

    /// The stable 16-bit id carried on the wire next to a signature.
    pub fn id(self) -> u16 {
        self.info().id
    }

    /// The scheme with this wire id, if any.
    pub fn from_id(id: u16) -> Option<Scheme> {
        TABLE.iter().find(|row| row.id == id).map(|row| row.scheme)
    }

    /// The name used on the command line and in key files (`ed25519`, `ml-dsa-44`, ...).
    pub fn name(self) -> &'static str {
        self.info().name
    }

    /// The scheme with this command-line name, if any (exact, lower case).
    pub fn from_name(name: &str) -> Option<Scheme> {
        TABLE
            .iter()
            .find(|row| row.name == name)
            .map(|row| row.scheme)
    }

    /// Sizes of the public key, signature and stored secret key.
    pub fn sizes(self) -> SchemeSizes {
        self.info().sizes
    }

    /// Whether signing changes the secret key (one-time keys that must never be reused).
    pub fn is_stateful(self) -> bool {
        matches!(self, Scheme::Lms)
    }

    /// How many signatures one key can make, `None` when unlimited in practice.
    pub fn max_signatures(self) -> Option<u64> {
        match self {
            Scheme::Lms => Some(crate::lms_key::LMS_LEAVES),
            _ => None,
        }
    }
}

impl fmt::Display for Scheme {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// An unknown scheme name given on the command line or in a key file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UnknownSchemeName(pub String);

impl fmt::Display for UnknownSchemeName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "unknown signature scheme {:?}, expected one of ", self.0)?;
        for (i, scheme) in Scheme::ALL.iter().enumerate() {
            let sep = if i == 0 { "" } else { ", " };
            write!(f, "{sep}{scheme}")?;
        }
        Ok(())
    }
}

impl std::error::Error for UnknownSchemeName {}

impl FromStr for Scheme {
    type Err = UnknownSchemeName;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Scheme::from_name(s).ok_or_else(|| UnknownSchemeName(s.to_owned()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_covers_every_scheme_once() {
        for scheme in Scheme::ALL {
            assert_eq!(TABLE.iter().filter(|row| row.scheme == scheme).count(), 1);
            assert_eq!(Scheme::from_id(scheme.id()), Some(scheme));
            assert_eq!(Scheme::from_name(scheme.name()), Some(scheme));
            assert_eq!(scheme.name().parse::<Scheme>(), Ok(scheme));
        }
        assert_eq!(TABLE.len(), Scheme::ALL.len());
    }

    #[test]
    fn ids_are_stable() {
        let ids: Vec<u16> = Scheme::ALL.iter().map(|s| s.id()).collect();
        assert_eq!(ids, [1, 2, 3, 4, 5, 6]);
        assert_eq!(Scheme::from_id(0), None);
        assert_eq!(Scheme::from_id(7), None);
    }

    #[test]
    fn unknown_names_are_rejected_with_the_list() {
        let err = "ML-DSA-44"
            .parse::<Scheme>()
            .expect_err("names are lower case");
        assert!(err.to_string().contains("ml-dsa-44"));
        assert!("".parse::<Scheme>().is_err());
    }
}
