//! Algorithm names on the command line: a base algorithm of the registry
//! (`aes128-cmac`, any case) or a partial MAC (`partial:<inner>:<rate>`, the
//! `partial:` prefix in any case).

use authtime_mac::{Algorithm, Mac, MacError, PartialMac, PartialSpec};

const PARTIAL_PREFIX: &str = "partial:";

/// A parsed `--alg` value.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum MacName {
    /// One of [`Algorithm::ALL`].
    Base(Algorithm),
    /// A partial MAC over an inner algorithm.
    Partial(PartialSpec),
}

impl MacName {
    /// Sets the algorithm up with `key`.
    ///
    /// # Errors
    /// [`MacError::KeyLength`] when the key length is not one the algorithm
    /// (for a partial MAC, its inner algorithm) accepts.
    pub fn new_mac(&self, key: &[u8]) -> Result<Box<dyn Mac>, MacError> {
        match *self {
            Self::Base(alg) => alg.new_mac(key),
            Self::Partial(spec) => Ok(Box::new(PartialMac::new(spec, key)?)),
        }
    }

    /// Nonce length in bytes, 0 when the algorithm takes none.
    #[must_use]
    pub fn nonce_len(&self) -> usize {
        match self {
            Self::Base(alg) => alg.info().nonce_len,
            Self::Partial(spec) => spec.nonce_len(),
        }
    }

    /// Tag length in bytes.
    #[must_use]
    pub fn tag_len(&self) -> usize {
        match self {
            Self::Base(alg) => alg.info().tag_len,
            Self::Partial(spec) => spec.inner.info().tag_len,
        }
    }
}

/// Parses an `--alg` value.
///
/// # Errors
/// [`MacError::UnknownAlgorithm`] for a name (or a partial MAC's inner name)
/// that is not in the registry, [`MacError::InvalidParameter`] for a malformed
/// partial-MAC name or a rate outside (0, 1].
pub fn parse_mac_name(name: &str) -> Result<MacName, MacError> {
    // The library spells the prefix in lower case only; base names are
    // case-insensitive, so the prefix is too.
    let lowered;
    let name = match name.get(..PARTIAL_PREFIX.len()) {
        Some(prefix) if prefix.eq_ignore_ascii_case(PARTIAL_PREFIX) => {
            lowered = format!("{PARTIAL_PREFIX}{}", &name[PARTIAL_PREFIX.len()..]);
            lowered.as_str()
        }
        _ if name.eq_ignore_ascii_case("partial") => "partial",
        _ => name,
    };
    match PartialSpec::parse(name)? {
        Some(spec) => Ok(MacName::Partial(spec)),
        None => Algorithm::from_name(name).map(MacName::Base),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base_names_in_any_case() {
        for alg in Algorithm::ALL {
            assert_eq!(parse_mac_name(alg.name()), Ok(MacName::Base(alg)));
            assert_eq!(
                parse_mac_name(&alg.name().to_uppercase()),
                Ok(MacName::Base(alg))
            );
        }
    }

    #[test]
    fn partial_names_and_their_sizes() {
        let Ok(MacName::Partial(spec)) = parse_mac_name("PARTIAL:Aes128-Cmac:0.25") else {
            panic!("not a partial MAC");
        };
        assert_eq!(spec.inner, Algorithm::Aes128Cmac);
        let cmac = MacName::Partial(spec);
        assert_eq!((cmac.nonce_len(), cmac.tag_len()), (8, 16));
        let gmac = parse_mac_name("partial:aes128-gmac:1").expect("parses");
        assert_eq!((gmac.nonce_len(), gmac.tag_len()), (12, 16));
        let mac = cmac.new_mac(&[7; 16]).expect("key fits");
        assert_eq!(mac.name(), "partial:aes128-cmac:0.25");
        assert!(matches!(
            cmac.new_mac(&[7; 15]),
            Err(MacError::KeyLength { .. })
        ));
    }

    #[test]
    fn bad_names_are_refused() {
        assert_eq!(
            parse_mac_name("md4"),
            Err(MacError::UnknownAlgorithm("md4".into()))
        );
        assert!(matches!(
            parse_mac_name("partial:md4:0.5"),
            Err(MacError::UnknownAlgorithm(_))
        ));
        for bad in [
            "partial",
            "Partial",
            "partial:",
            "partial:aes128-cmac",
            "partial:aes128-cmac:0",
            "partial:aes128-cmac:2",
            "partial:aes128-cmac:NaN",
        ] {
            assert!(
                matches!(parse_mac_name(bad), Err(MacError::InvalidParameter(_))),
                "{bad}"
            );
        }
        // A multi-byte character where the prefix would end is not a panic.
        assert!(parse_mac_name("partialé").is_err());
        assert!(parse_mac_name("").is_err());
    }
}
