//! CPU features the kernels use, detected once per process, and the switch that
//! turns them off to force the portable paths.
//!
//! The environment variable `AUTHTIME_ISA` restricts what is used: a comma list
//! of `portable` (no instruction-set extension at all), `no-aesni`, `no-vaes`,
//! `no-pclmul`, `no-sha`, `no-avx2`, `no-avx512`. It is read once. Tests and the
//! lab pass an [`Isa`] explicitly instead ([`crate::Algorithm::new_mac_with_isa`]).

use std::sync::OnceLock;

/// The instruction-set extensions a kernel may use.
#[allow(clippy::struct_excessive_bools, reason = "one flag per CPU feature")]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Isa {
    /// AES-NI (`aes`).
    pub aesni: bool,
    /// Carry-less multiply (`pclmulqdq`).
    pub pclmul: bool,
    /// Vector AES on 256-bit registers (`vaes` with `avx2`).
    pub vaes: bool,
    /// AVX2.
    pub avx2: bool,
    /// SHA extensions (`sha`, with `sse4.1`).
    pub sha: bool,
    /// AVX-512 foundation and byte/word (`avx512f`, `avx512bw`, `avx512vl`).
    pub avx512: bool,
}

impl Isa {
    /// No extension: every algorithm takes its portable path.
    pub const PORTABLE: Isa = Isa {
        aesni: false,
        pclmul: false,
        vaes: false,
        avx2: false,
        sha: false,
        avx512: false,
    };

    /// What this CPU has, ignoring `AUTHTIME_ISA`.
    #[must_use]
    pub fn detect() -> Isa {
        #[cfg(target_arch = "x86_64")]
        {
            use std::arch::is_x86_feature_detected as has;
            let avx2 = has!("avx2");
            Isa {
                aesni: has!("aes") && has!("sse4.1"),
                pclmul: has!("pclmulqdq"),
                vaes: has!("vaes") && avx2 && has!("aes"),
                avx2,
                sha: has!("sha") && has!("sse4.1") && has!("ssse3"),
                avx512: has!("avx512f") && has!("avx512bw") && has!("avx512vl"),
            }
        }
        #[cfg(not(target_arch = "x86_64"))]
        {
            Isa::PORTABLE
        }
    }

    /// [`Isa::detect`] restricted by the comma list `spec` (see the module docs).
    ///
    /// # Errors
    /// The first word of `spec` that is not a known restriction.
    pub fn restricted(self, spec: &str) -> Result<Isa, String> {
        let mut isa = self;
        for word in spec.split(',').map(str::trim).filter(|w| !w.is_empty()) {
            match word {
                "portable" => isa = Isa::PORTABLE,
                "no-aesni" => {
                    isa.aesni = false;
                    isa.vaes = false;
                }
                "no-vaes" => isa.vaes = false,
                "no-pclmul" => isa.pclmul = false,
                "no-sha" => isa.sha = false,
                "no-avx2" => {
                    isa.avx2 = false;
                    isa.vaes = false;
                }
                "no-avx512" => isa.avx512 = false,
                other => return Err(format!("unknown AUTHTIME_ISA restriction `{other}`")),
            }
        }
        Ok(isa)
    }

    /// The features in use by default: detected once, restricted by `AUTHTIME_ISA`
    /// (an unknown restriction there forces the portable paths, the safe side).
    #[must_use]
    pub fn current() -> Isa {
        static CURRENT: OnceLock<Isa> = OnceLock::new();
        *CURRENT.get_or_init(|| {
            let detected = Isa::detect();
            match std::env::var("AUTHTIME_ISA") {
                Ok(spec) => detected.restricted(&spec).unwrap_or(Isa::PORTABLE),
                Err(_) => detected,
            }
        })
    }

    /// Names of the features enabled, for reports (`aesni vaes sha ...`).
    #[must_use]
    pub fn describe(&self) -> String {
        let flags = [
            (self.aesni, "aesni"),
            (self.pclmul, "pclmul"),
            (self.vaes, "vaes"),
            (self.avx2, "avx2"),
            (self.sha, "sha"),
            (self.avx512, "avx512"),
        ];
        let on: Vec<&str> = flags
            .iter()
            .filter(|(on, _)| *on)
            .map(|(_, n)| *n)
            .collect();
        if on.is_empty() {
            "portable".to_owned()
        } else {
            on.join(" ")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn restrictions_only_remove_features() {
        let all = Isa {
            aesni: true,
            pclmul: true,
            vaes: true,
            avx2: true,
            sha: true,
            avx512: true,
        };
        assert_eq!(all.restricted("portable"), Ok(Isa::PORTABLE));
        let r = all.restricted("no-aesni, no-sha").expect("valid");
        assert!(!r.aesni && !r.vaes && !r.sha && r.avx2 && r.pclmul);
        assert!(all.restricted("no-such").is_err());
        assert_eq!(Isa::PORTABLE.describe(), "portable");
        let detected = Isa::detect();
        assert_eq!(detected.restricted("").expect("empty"), detected);
    }
}
