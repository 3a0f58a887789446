//! `authtime nts kek`: a new key-encryption key file for a fleet's sealed
//! master-key store (`[keystore] key-encryption-key`). 32 bytes from the
//! operating system's random source, written by
//! `authtime_keys::store::create_kek_file` (mode 0600, never overwriting).

use anyhow::{Context as _, anyhow};

use crate::cli::NtsKekArgs;
use crate::{Outcome, Streams};

/// Writes the key file and prints its id.
///
/// # Errors
/// The file exists or cannot be written, or no random bytes.
pub fn kek(args: &NtsKekArgs, streams: &mut Streams<'_>) -> anyhow::Result<Outcome> {
    let mut random = zeroize::Zeroizing::new([0u8; authtime_keys::store::KEK_LEN]);
    getrandom::fill(&mut random[..]).map_err(|e| anyhow!("no random bytes: {e}"))?;
    let key = authtime_keys::store::create_kek_file(&args.out, *random)?;
    writeln!(streams.stdout, "{}", key.id()).context("stdout")?;
    writeln!(
        streams.stderr,
        "wrote {} (mode 0600), key-encryption key {}: copy it to every server of the fleet \
         like a TLS private key",
        args.out.display(),
        key.id()
    )
    .context("stderr")?;
    Ok(Outcome::Success)
}

#[cfg(test)]
mod tests {
    use super::*;
    use authtime_scratch::ScratchDir;

    #[test]
    fn writes_a_private_file_once_and_prints_its_id() {
        let dir = ScratchDir::new("cmd-kek");
        let args = NtsKekArgs {
            out: dir.path("kek"),
        };
        let (mut out, mut err) = (Vec::new(), Vec::new());
        let mut streams = Streams {
            stdin: &mut std::io::empty(),
            stdin_is_terminal: false,
            stdout: &mut out,
            stderr: &mut err,
        };
        assert_eq!(kek(&args, &mut streams).expect("made"), Outcome::Success);
        let read = authtime_keys::store::read_kek_file(&args.out).expect("reads back");
        assert_eq!(
            String::from_utf8(out).expect("utf8").trim(),
            read.id().to_string()
        );
        let mut streams = Streams {
            stdin: &mut std::io::empty(),
            stdin_is_terminal: false,
            stdout: &mut Vec::new(),
            stderr: &mut Vec::new(),
        };
        let e = kek(&args, &mut streams).expect_err("never overwrites");
        assert!(e.to_string().contains("never overwritten"), "{e}");
    }
}
