//! `authtime keygen`: new random keys in a file chrony, ntpd and NTPsec read.

use anyhow::{Context as _, anyhow};
use authtime_keys::{
    KeyFileFormat, KeyType, create_key_file, generate_keys, random_bytes_needed, write_key_file,
};
use zeroize::Zeroizing;

use crate::{
    Outcome, Streams,
    cli::{KeyFormatArg, KeygenArgs},
};

/// The most keys one run writes.
const MAX_COUNT: u32 = 65_535;

/// Generates the keys and writes them to `--out` (mode 0600, never
/// overwritten) or to standard output.
///
/// # Errors
/// An unknown type, a count or id range the format cannot hold, no random
/// bytes, or a file that exists or cannot be written.
pub fn keygen(args: &KeygenArgs, streams: &mut Streams<'_>) -> anyhow::Result<Outcome> {
    let key_type = KeyType::ALL
        .into_iter()
        .find(|t| t.cli_name().eq_ignore_ascii_case(&args.key_type))
        .ok_or_else(|| {
            let names: Vec<&str> = KeyType::ALL.iter().map(|t| t.cli_name()).collect();
            anyhow!(
                "--type: unknown key type `{}` (one of {})",
                args.key_type,
                names.join(", ")
            )
        })?;
    if !(1..=MAX_COUNT).contains(&args.count) {
        return Err(anyhow!("--count {}: must be 1 to {MAX_COUNT}", args.count));
    }
    let format = match args.format {
        KeyFormatArg::Chrony => KeyFileFormat::Chrony,
        KeyFormatArg::Ntpd => KeyFileFormat::Ntpd,
    };
    let mut random = Zeroizing::new(vec![0u8; random_bytes_needed(key_type, args.count)]);
    getrandom::fill(&mut random).map_err(|e| anyhow!("no random bytes from the system: {e}"))?;
    let keys = generate_keys(key_type, args.first_id, args.count, &random)
        .map_err(|e| anyhow!("--first-id/--count: {e}"))?;
    let text = write_key_file(format, &keys).map_err(|e| anyhow!("{format} format: {e}"))?;
    match &args.out {
        None => streams.stdout.write_all(text.as_bytes())?,
        Some(path) => {
            create_key_file(path, &text).map_err(|e| {
                if e.kind() == std::io::ErrorKind::AlreadyExists {
                    anyhow!(
                        "{}: file exists (keygen never overwrites a key file)",
                        path.display()
                    )
                } else {
                    anyhow!(e).context(path.display().to_string())
                }
            })?;
            let last = args.first_id + (args.count - 1);
            writeln!(
                streams.stderr,
                "wrote {} {key_type} key{} (id {}{}) to {} in {format} format, mode 0600",
                args.count,
                if args.count == 1 { "" } else { "s" },
                args.first_id,
                if last == args.first_id {
                    String::new()
                } else {
                    format!(" to {last}")
                },
                path.display()
            )
            .context("stderr")?;
        }
    }
    Ok(Outcome::Success)
}
