//! Entry points for the fuzz targets (`fuzz/fuzz_targets/config_parsing.rs`)
//! and the tests that replay their corpora. Not a stable API.

use crate::ConfigFile;

/// Parses any bytes as a configuration file and validates what parses: a
/// clear error or settings, never a panic.
pub fn config_parsing(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(config) = ConfigFile::parse(text) {
        let _ = config.validate(Some(std::path::Path::new("/etc/authtime")));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn malformed_configurations_do_not_panic() {
        for text in [
            &b""[..],
            b"[ntp]\nlisten = [\"x\"]",
            b"[nts-ke]\naead = []\nhandshake-timeout = 1e309\n",
            b"[keystore]\nkind = \"redis\"\nurl = \"redis://:@:\"\npoll-interval = -0.0\n",
            b"[keystore]\nrotation-interval = 18446744073709551615\nold-keys = 4294967295\n",
            b"[rate-limit]\nrate = nan\ntable-size = 0\n",
            b"[roughtime]\nonline-key-lifetime = 18446744073709551615\nrate-limit = nan\ntcp-timeout = 1e309\nlong-term-key = \"\"\ndelegation = \"\"\n",
            b"\xff\xfe[ntp]",
        ] {
            config_parsing(text);
        }
    }
}
