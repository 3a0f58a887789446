//! `authtime nts cert`: a certificate and key for an NTS-KE server on a
//! private network or in a test: a new CA and a leaf it signs (the default),
//! or one self-signed leaf. Clients trust the CA file (`authtime query --nts
//! --ca`, chrony's `ntstrustedcerts`). Keys are ECDSA P-256 (rcgen).

use std::io::Write as _;
use std::os::unix::fs::OpenOptionsExt as _;
use std::path::Path;

use anyhow::{Context as _, anyhow};
use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, KeyPair,
    KeyUsagePurpose,
};
use time::{Duration, OffsetDateTime};

use crate::cli::NtsCertArgs;
use crate::{Outcome, Streams};

/// Writes `<prefix>-ca.pem`, `<prefix>-chain.pem` and `<prefix>-key.pem`
/// (mode 0600) into `--out-dir`; never overwrites.
///
/// # Errors
/// Bad names, a validity out of range, files that exist or cannot be written.
pub fn cert(args: &NtsCertArgs, streams: &mut Streams<'_>) -> anyhow::Result<Outcome> {
    if !(1..=36_500).contains(&args.days) {
        return Err(anyhow!("--days {}: must be 1 to 36500", args.days));
    }
    let mut names: Vec<String> = args.name.clone();
    names.extend(args.ip.iter().map(ToString::to_string));
    if names.is_empty() {
        names.push("localhost".into());
    }
    let now = OffsetDateTime::now_utc();
    let not_after = now + Duration::days(i64::from(args.days));
    let leaf_key = KeyPair::generate().context("new key")?;
    let mut leaf =
        CertificateParams::new(names.clone()).map_err(|e| anyhow!("--name/--ip: {e}"))?;
    leaf.distinguished_name
        .push(DnType::CommonName, names[0].clone());
    leaf.not_before = now - Duration::hours(1);
    leaf.not_after = not_after;
    leaf.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
    leaf.key_usages = vec![KeyUsagePurpose::DigitalSignature];

    let dir = &args.out_dir;
    let prefix = &args.prefix;
    let (chain, ca) = if args.self_signed {
        leaf.is_ca = IsCa::ExplicitNoCa;
        let cert = leaf.self_signed(&leaf_key).context("sign")?;
        (cert.pem(), cert.pem())
    } else {
        let ca_key = KeyPair::generate().context("new key")?;
        let mut ca = CertificateParams::new(Vec::<String>::new()).context("CA")?;
        ca.distinguished_name.push(
            DnType::CommonName,
            format!("authtime NTS CA for {}", names[0]),
        );
        ca.is_ca = IsCa::Ca(BasicConstraints::Constrained(0));
        ca.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
        ca.not_before = now - Duration::hours(1);
        ca.not_after = not_after;
        let ca_cert = ca.self_signed(&ca_key).context("sign CA")?;
        let leaf_cert = leaf
            .signed_by(&leaf_key, &ca_cert, &ca_key)
            .context("sign")?;
        (
            format!("{}{}", leaf_cert.pem(), ca_cert.pem()),
            ca_cert.pem(),
        )
    };
    let ca_path = dir.join(format!("{prefix}-ca.pem"));
    let chain_path = dir.join(format!("{prefix}-chain.pem"));
    let key_path = dir.join(format!("{prefix}-key.pem"));
    for path in [&ca_path, &chain_path, &key_path] {
        if path.exists() {
            return Err(anyhow!(
                "{}: file exists (nts cert never overwrites)",
                path.display()
            ));
        }
    }
    write_new(&key_path, &leaf_key.serialize_pem(), 0o600)?;
    write_new(&chain_path, &chain, 0o644)?;
    write_new(&ca_path, &ca, 0o644)?;
    writeln!(
        streams.stderr,
        "wrote {} (certificate chain), {} (private key, mode 0600) and {} (what clients trust) \
         for {}, valid {} days",
        chain_path.display(),
        key_path.display(),
        ca_path.display(),
        names.join(", "),
        args.days
    )?;
    Ok(Outcome::Success)
}

fn write_new(path: &Path, text: &str, mode: u32) -> anyhow::Result<()> {
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(mode)
        .open(path)
        .with_context(|| path.display().to_string())?;
    file.write_all(text.as_bytes())
        .and_then(|()| file.sync_all())
        .with_context(|| path.display().to_string())
}
