//! The one error type of the MAC library.

use core::fmt;

/// Why a MAC operation was refused or failed.
///
/// Every variant but [`MacError::BadTag`] is a usage error that a caller can
/// report as-is; `BadTag` is the only answer a forged or corrupted message gets,
/// so that a verifier reveals nothing about *how* a tag was wrong.
#[non_exhaustive]
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MacError {
    /// No algorithm of the registry has this name.
    UnknownAlgorithm(String),
    /// The key does not have a length the algorithm accepts.
    KeyLength {
        /// Algorithm name.
        algorithm: String,
        /// Length of the key given, in bytes.
        got: usize,
        /// Lengths the algorithm accepts.
        expected: crate::KeyLength,
    },
    /// The algorithm needs a nonce and none was given.
    NonceRequired {
        /// Algorithm name.
        algorithm: String,
        /// Nonce length the algorithm needs, in bytes.
        len: usize,
    },
    /// A nonce was given to an algorithm that takes none.
    NonceNotAccepted {
        /// Algorithm name.
        algorithm: String,
    },
    /// The nonce does not have the algorithm's length.
    NonceLength {
        /// Algorithm name.
        algorithm: String,
        /// Length given, in bytes.
        got: usize,
        /// Length needed, in bytes.
        expected: usize,
    },
    /// The tag to verify does not have the algorithm's tag length.
    TagLength {
        /// Length given, in bytes.
        got: usize,
        /// Length expected, in bytes.
        expected: usize,
    },
    /// The tag does not authenticate the message.
    BadTag,
    /// A parameter of a composite algorithm (a partial MAC's rate, say) is out of range.
    InvalidParameter(String),
    /// A batch call got slices of different lengths.
    BatchLength {
        /// Number of inputs.
        inputs: usize,
        /// Number of output slots.
        outputs: usize,
    },
    /// A nonce sealer has used every nonce it may; the key must be replaced.
    NoncesExhausted,
    /// The operating system's random number generator failed.
    Entropy,
}

impl fmt::Display for MacError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::UnknownAlgorithm(name) => {
                write!(f, "unknown algorithm `{name}` (see `authtime mac list`)")
            }
            Self::KeyLength {
                algorithm,
                got,
                expected,
            } => {
                write!(f, "{algorithm} needs a key of {expected}, got {got} bytes")
            }
            Self::NonceRequired { algorithm, len } => {
                write!(
                    f,
                    "{algorithm} needs a {len}-byte nonce, and none was given"
                )
            }
            Self::NonceNotAccepted { algorithm } => write!(f, "{algorithm} takes no nonce"),
            Self::NonceLength {
                algorithm,
                got,
                expected,
            } => {
                write!(
                    f,
                    "{algorithm} needs a {expected}-byte nonce, got {got} bytes"
                )
            }
            Self::TagLength { got, expected } => {
                write!(f, "tag must be {expected} bytes, got {got}")
            }
            Self::BadTag => f.write_str("tag does not match"),
            Self::InvalidParameter(why) => f.write_str(why),
            Self::BatchLength { inputs, outputs } => {
                write!(f, "batch has {inputs} inputs but {outputs} output slots")
            }
            Self::NoncesExhausted => f.write_str("every nonce of this key has been used"),
            Self::Entropy => f.write_str("the system random number generator failed"),
        }
    }
}

impl std::error::Error for MacError {}
