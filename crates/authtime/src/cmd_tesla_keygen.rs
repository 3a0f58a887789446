//! `authtime tesla keygen`: a signature key pair for TESLA bootstraps, written
//! with `authtime-sign`'s key files.

use std::fs::OpenOptions;
use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{Context as _, anyhow};
use authtime_sign::{Scheme, SigningKey};
use serde_json::json;

use crate::{Outcome, Streams, cli_tesla::TeslaKeygenArgs};

/// Generates a key pair and writes both files, never overwriting either.
///
/// # Errors
/// An unknown scheme, an existing file, no random bytes, a failed write.
pub fn keygen(args: &TeslaKeygenArgs, streams: &mut Streams<'_>) -> anyhow::Result<Outcome> {
    let scheme = Scheme::from_name(&args.scheme).ok_or_else(|| {
        let names: Vec<&str> = Scheme::ALL.iter().map(|s| s.name()).collect();
        anyhow!(
            "--scheme: unknown scheme `{}` (one of {})",
            args.scheme,
            names.join(", ")
        )
    })?;
    let public_path = args.public.clone().unwrap_or_else(|| {
        let mut name = args.out.clone().into_os_string();
        name.push(".pub");
        PathBuf::from(name)
    });
    if public_path == args.out {
        return Err(anyhow!("--pub: must differ from --out"));
    }
    // Reserve both names first: the key files are then written atomically over
    // our own empty placeholders, so an existing file is never replaced.
    reserve(&args.out)?;
    if let Err(e) = reserve(&public_path) {
        let _ = std::fs::remove_file(&args.out);
        return Err(e);
    }
    let result = generate_and_write(scheme, &args.out, &public_path);
    let (generate_ms, write_ms) = match result {
        Ok(times) => times,
        Err(e) => {
            let _ = std::fs::remove_file(&args.out);
            let _ = std::fs::remove_file(&public_path);
            return Err(e);
        }
    };
    let sizes = scheme.sizes();
    if args.json {
        let object = json!({
            "scheme": scheme.name(),
            "scheme_id": scheme.id(),
            "secret_key_file": args.out.display().to_string(),
            "public_key_file": public_path.display().to_string(),
            "public_key_bytes": sizes.public_key,
            "secret_key_bytes": sizes.secret_key,
            "signature_bytes": sizes.signature,
            "max_signatures": scheme.max_signatures(),
            "generate_ms": generate_ms,
            "write_ms": write_ms,
        });
        writeln!(streams.stdout, "{object}")?;
    }
    writeln!(
        streams.stderr,
        "wrote {} secret key {} (mode 0600, {} bytes) and public key {} ({} bytes); \
         signatures {} bytes{}; generated in {generate_ms:.1} ms, written in {write_ms:.1} ms",
        scheme.name(),
        args.out.display(),
        sizes.secret_key,
        public_path.display(),
        sizes.public_key,
        sizes.signature,
        scheme
            .max_signatures()
            .map(|n| format!(", at most {n} of them"))
            .unwrap_or_default(),
    )
    .context("stderr")?;
    Ok(Outcome::Success)
}

/// Creates `path` empty, failing when it exists.
fn reserve(path: &Path) -> anyhow::Result<()> {
    let mut options = OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    options.open(path).map(drop).map_err(|e| {
        if e.kind() == std::io::ErrorKind::AlreadyExists {
            anyhow!(
                "{}: file exists (keygen never overwrites a key file)",
                path.display()
            )
        } else {
            anyhow!(e).context(path.display().to_string())
        }
    })
}

/// Returns the milliseconds spent generating and writing.
fn generate_and_write(scheme: Scheme, secret: &Path, public: &Path) -> anyhow::Result<(f64, f64)> {
    let mut seed = zeroize::Zeroizing::new([0u8; 32]);
    getrandom::fill(&mut *seed).map_err(|e| anyhow!("no random bytes from the system: {e}"))?;
    let start = Instant::now();
    let mut key = SigningKey::generate_from_seed(scheme, *seed);
    let generate_ms = start.elapsed().as_secs_f64() * 1e3;
    let start = Instant::now();
    key.write_key_file(secret)
        .map_err(|e| anyhow!("{}: {e}", secret.display()))?;
    key.verifying_key()
        .write_key_file(public)
        .map_err(|e| anyhow!("{}: {e}", public.display()))?;
    Ok((generate_ms, start.elapsed().as_secs_f64() * 1e3))
}
