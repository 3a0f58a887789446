//! `authtime mac tag` and `authtime mac verify`: one message, one tag.
//!
//! Every argument is checked (algorithm, key, nonce, tag length) before the
//! message is read, so a mistake is reported at once instead of after waiting
//! for standard input. Errors name the flag at fault and never show the key.

use anyhow::{Result, anyhow};
use authtime_mac::{Mac, MacError};
use zeroize::Zeroizing;

use crate::{
    Outcome, Streams,
    cli::{MacInputArgs, TagArgs, VerifyArgs},
    hex_input::{HexArg, parse_hex},
    mac_name::parse_mac_name,
    message_input::read_message,
};

/// Runs `authtime mac tag`: prints the tag in lowercase hex.
///
/// # Errors
/// Bad arguments or an unreadable message, named by flag.
pub fn tag(args: &TagArgs, streams: &mut Streams<'_>) -> Result<Outcome> {
    let keyed = KeyedMac::from_args(&args.mac)?;
    let message = read_message(args.mac.input.as_deref(), streams)?;
    let tag = keyed
        .mac
        .compute(&keyed.nonce, &message)
        .map_err(flag_error)?;
    writeln!(streams.stdout, "{}", hex::encode(tag.as_bytes()))?;
    Ok(Outcome::Success)
}

/// Runs `authtime mac verify`: [`Outcome::Success`] when the tag matches,
/// [`Outcome::Rejected`] when it does not.
///
/// # Errors
/// Bad arguments (including a tag of the wrong length) or an unreadable message.
pub fn verify(args: &VerifyArgs, streams: &mut Streams<'_>) -> Result<Outcome> {
    let keyed = KeyedMac::from_args(&args.mac)?;
    let tag = parse_hex(HexArg::TAG, &args.tag)?;
    if tag.len() != keyed.mac.tag_len() {
        return Err(flag_error(MacError::TagLength {
            got: tag.len(),
            expected: keyed.mac.tag_len(),
        }));
    }
    let message = read_message(args.mac.input.as_deref(), streams)?;
    match keyed.mac.verify(&keyed.nonce, &message, &tag) {
        Ok(()) => {
            // Only a note: a closed standard error must not turn a match into
            // a failure.
            let _ = writeln!(streams.stderr, "tag ok");
            Ok(Outcome::Success)
        }
        Err(MacError::BadTag) => Ok(Outcome::Rejected(MacError::BadTag.to_string())),
        Err(other) => Err(flag_error(other)),
    }
}

/// An algorithm set up with its key, and the nonce to use with it.
struct KeyedMac {
    mac: Box<dyn Mac>,
    nonce: Vec<u8>,
}

impl KeyedMac {
    /// Parses and checks `--alg`, `--key` and `--nonce`.
    fn from_args(args: &MacInputArgs) -> Result<Self> {
        let name = parse_mac_name(&args.alg).map_err(flag_error)?;
        let key = Zeroizing::new(parse_hex(HexArg::KEY, args.key.expose())?);
        let mac = name.new_mac(&key).map_err(flag_error)?;
        let nonce = match &args.nonce {
            Some(text) => parse_hex(HexArg::NONCE, text)?,
            None => Vec::new(),
        };
        check_nonce(&*mac, &nonce).map_err(flag_error)?;
        Ok(Self { mac, nonce })
    }
}

/// The nonce rules `Mac::compute` applies, checked before the message is read.
fn check_nonce(mac: &dyn Mac, nonce: &[u8]) -> Result<(), MacError> {
    let algorithm = || mac.name().to_owned();
    match (mac.nonce_len(), nonce.len()) {
        (0, 0) => Ok(()),
        (0, _) => Err(MacError::NonceNotAccepted {
            algorithm: algorithm(),
        }),
        (len, 0) => Err(MacError::NonceRequired {
            algorithm: algorithm(),
            len,
        }),
        (expected, got) if got != expected => Err(MacError::NonceLength {
            algorithm: algorithm(),
            got,
            expected,
        }),
        _ => Ok(()),
    }
}

/// A library error as a message that starts with the flag at fault.
fn flag_error(err: MacError) -> anyhow::Error {
    match &err {
        // Someone who swapped --alg and --key would see the key echoed.
        MacError::UnknownAlgorithm(name) if looks_like_a_key(name) => anyhow!(
            "--alg: unknown algorithm (not shown: it holds a long hex string; was the key given as --alg?)"
        ),
        MacError::UnknownAlgorithm(_) | MacError::InvalidParameter(_) => anyhow!("--alg: {err}"),
        MacError::KeyLength { .. } => anyhow!("--key has the wrong length: {err}"),
        MacError::NonceRequired { .. } => anyhow!("--nonce is missing: {err}"),
        MacError::NonceNotAccepted { .. } => anyhow!("--nonce is not accepted: {err}"),
        MacError::NonceLength { .. } => anyhow!("--nonce has the wrong length: {err}"),
        MacError::TagLength { .. } => anyhow!("--tag has the wrong length: {err}"),
        _ => anyhow!(err),
    }
}

/// Whether an unknown algorithm name could hold a key: a run of 16 or more hex
/// digits, which no algorithm name has.
fn looks_like_a_key(name: &str) -> bool {
    name.split(|c: char| !c.is_ascii_hexdigit())
        .any(|run| run.len() >= 16)
}

#[cfg(test)]
mod tests {
    use clap::Parser as _;

    use super::*;
    use crate::cli::Cli;

    /// Runs `authtime <args>` in-process with `stdin`; (result, stdout, stderr).
    fn run(args: &[&str], stdin: &[u8]) -> (Result<Outcome>, String, String) {
        let cli = Cli::try_parse_from(std::iter::once("authtime").chain(args.iter().copied()))
            .expect("valid arguments");
        let mut stdin = stdin;
        let (mut out, mut err) = (Vec::new(), Vec::new());
        let mut streams = Streams {
            stdin: &mut stdin,
            stdin_is_terminal: false,
            stdout: &mut out,
            stderr: &mut err,
        };
        let result = crate::run(&cli, &mut streams);
        let text = |b: Vec<u8>| String::from_utf8(b).expect("utf-8");
        (result, text(out), text(err))
    }

    const CMAC_KEY: &str = "2b7e151628aed2a6abf7158809cf4f3c";
    const CMAC_MSG: &[u8] = &[
        0x6b, 0xc1, 0xbe, 0xe2, 0x2e, 0x40, 0x9f, 0x96, 0xe9, 0x3d, 0x7e, 0x11, 0x73, 0x93, 0x17,
        0x2a,
    ];

    #[test]
    fn cmac_rfc4493_example_2_tag_and_verify() {
        // RFC 4493 section 4, example 2.
        let (result, out, _) = run(
            &["mac", "tag", "--alg", "aes128-cmac", "--key", CMAC_KEY],
            CMAC_MSG,
        );
        assert_eq!(result.expect("ok"), Outcome::Success);
        assert_eq!(out, "070a16b46b4d4144f79bdd9dd04a287c\n");
        let verify = |tag| {
            run(
                &[
                    "mac",
                    "verify",
                    "--alg",
                    "aes128-cmac",
                    "--key",
                    CMAC_KEY,
                    "--tag",
                    tag,
                ],
                CMAC_MSG,
            )
        };
        let (result, out, err) = verify("070A16B46B4D4144F79BDD9DD04A287C");
        assert_eq!(result.expect("ok"), Outcome::Success);
        assert_eq!((out.as_str(), err.as_str()), ("", "tag ok\n"));
        let (result, out, _) = verify("070a16b46b4d4144f79bdd9dd04a287d");
        assert_eq!(
            result.expect("ran"),
            Outcome::Rejected("tag does not match".into())
        );
        assert_eq!(out, "");
    }

    #[test]
    fn usage_errors_name_the_flag_and_hide_the_key() {
        let cases: &[(&[&str], &str)] = &[
            (
                &["--alg", "md4", "--key", CMAC_KEY],
                "--alg: unknown algorithm `md4`",
            ),
            (
                &["--alg", CMAC_KEY, "--key", CMAC_KEY],
                "was the key given as --alg?",
            ),
            (
                &["--alg", "aes128-cmac", "--key", "2b7e"],
                "--key has the wrong length: aes128-cmac needs a key of 16 bytes, got 2 bytes",
            ),
            (
                &["--alg", "aes128-gmac", "--key", CMAC_KEY],
                "--nonce is missing: aes128-gmac needs a 12-byte nonce",
            ),
            (
                &["--alg", "aes128-cmac", "--key", CMAC_KEY, "--nonce", "00"],
                "--nonce is not accepted: aes128-cmac takes no nonce",
            ),
            (
                &[
                    "--alg",
                    "partial:aes128-cmac:0.5",
                    "--key",
                    CMAC_KEY,
                    "--nonce",
                    "00",
                ],
                "--nonce has the wrong length",
            ),
            (
                &["--alg", "partial:aes128-cmac:7", "--key", CMAC_KEY],
                "--alg: sampling rate 7 is not in (0, 1]",
            ),
        ];
        for (args, want) in cases {
            let mut full = vec!["mac", "tag"];
            full.extend_from_slice(args);
            let (result, out, _) = run(&full, b"never read");
            let msg = format!("{:#}", result.expect_err("refused"));
            assert!(msg.contains(want), "{args:?}: {msg}");
            assert!(!msg.contains(CMAC_KEY) && !msg.contains("2b7e"), "{msg}");
            assert_eq!(out, "");
        }
        let (result, _, _) = run(
            &[
                "mac",
                "verify",
                "--alg",
                "aes128-cmac",
                "--key",
                CMAC_KEY,
                "--tag",
                "00",
            ],
            b"",
        );
        let msg = format!("{:#}", result.expect_err("refused"));
        assert_eq!(
            msg,
            "--tag has the wrong length: tag must be 16 bytes, got 1"
        );
    }

    #[test]
    fn check_nonce_agrees_with_compute() {
        for name in [
            "hmac-sha1",
            "aes128-gmac",
            "partial:siphash24:0.5",
            "partial:poly1305-chacha20:0.5",
        ] {
            let parsed = parse_mac_name(name).expect("name");
            let mac = parsed
                .new_mac(&[1; 32][..parsed_key_len(name)])
                .expect("key");
            for len in [0, 1, 8, 12, 13] {
                let nonce = vec![0; len];
                assert_eq!(
                    check_nonce(&*mac, &nonce).err(),
                    mac.compute(&nonce, b"m").err(),
                    "{name} with a {len}-byte nonce"
                );
            }
        }
    }

    fn parsed_key_len(name: &str) -> usize {
        if name.contains("poly1305") { 32 } else { 16 }
    }
}
