//! `authtime hash`: MD5 or RFC 1810's K-way interleaved MD5 of a message, in hex.

use anyhow::Result;

use crate::{
    Outcome, Streams,
    cli::{HashAlgorithm, HashArgs},
    message_input::read_message,
};

impl HashAlgorithm {
    /// The digest of `message`.
    #[must_use]
    pub fn digest(self, message: &[u8]) -> [u8; 16] {
        match self {
            Self::Md5 => authtime_mac::md5(message),
            Self::Md5Kway4 => authtime_mac::md5_kway(4, message),
            Self::Md5Kway16 => authtime_mac::md5_kway(16, message),
        }
    }
}

/// Runs `authtime hash`.
///
/// # Errors
/// An unreadable message, a failed write.
pub fn hash(args: &HashArgs, streams: &mut Streams<'_>) -> Result<Outcome> {
    let message = read_message(args.input.as_deref(), streams)?;
    writeln!(streams.stdout, "{}", hex::encode(args.alg.digest(&message)))?;
    Ok(Outcome::Success)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn md5_rfc1321_test_suite_abc() {
        // RFC 1321 appendix A.5.
        assert_eq!(
            hex::encode(HashAlgorithm::Md5.digest(b"abc")),
            "900150983cd24fb0d6963f7d28e17f72"
        );
    }

    #[test]
    fn kway_digests_differ_from_md5_and_from_each_other() {
        let msg = [0x5a; 1000];
        let digests = [
            HashAlgorithm::Md5.digest(&msg),
            HashAlgorithm::Md5Kway4.digest(&msg),
            HashAlgorithm::Md5Kway16.digest(&msg),
        ];
        assert_ne!(digests[0], digests[1]);
        assert_ne!(digests[1], digests[2]);
        assert_eq!(digests[1], authtime_mac::md5_kway(4, &msg));
    }
}
