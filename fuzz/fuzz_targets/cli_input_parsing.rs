//! The command line's parsers on arbitrary text: hex arguments, algorithm names
//! and whole argument vectors through clap, and the in-memory commands those
//! vectors name. Nothing may panic, and every error is one line.

#![no_main]

use authtime::{
    Streams,
    cli::{Cli, Command, MacCommand},
    error_line::error_line,
    hex_input::{HexArg, HexProblem, parse_hex},
    mac_name::parse_mac_name,
    rfc3339_input::parse_utc,
};
use clap::Parser as _;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    check_hex(&text);
    check_mac_name(&text);
    check_utc(&text);
    check_argv(&text, data);
});

fn check_hex(text: &str) {
    for arg in [HexArg::KEY, HexArg::NONCE, HexArg::TAG] {
        match parse_hex(arg, text) {
            Ok(bytes) => assert_eq!(hex::encode(bytes), text.to_ascii_lowercase()),
            Err(err) => {
                let line = err.to_string();
                assert!(line.starts_with(arg.flag) && !line.contains('\n'), "{line}");
                if let HexProblem::NotHexDigit { found, .. } = err.problem {
                    assert_eq!(
                        found.is_none(),
                        arg.secret,
                        "a key's characters are never shown"
                    );
                }
            }
        }
    }
}

fn check_mac_name(text: &str) {
    if let Ok(name) = parse_mac_name(text) {
        let mac = name
            .new_mac(&[0x42; 32][..key_len(&name)])
            .expect("a key of the right length");
        assert_eq!(name.nonce_len(), mac.nonce_len());
        assert_eq!(name.tag_len(), mac.tag_len());
    }
}

fn key_len(name: &authtime::mac_name::MacName) -> usize {
    let inner = match name {
        authtime::mac_name::MacName::Base(alg) => *alg,
        authtime::mac_name::MacName::Partial(spec) => spec.inner,
    };
    inner.info().key.typical()
}

/// Splits `text` into arguments (at spaces and newlines) and parses them as
/// `authtime`'s command line; commands that touch only standard streams run.
fn check_argv(text: &str, stdin: &[u8]) {
    let argv = std::iter::once("authtime").chain(text.split([' ', '\n']));
    let cli = match Cli::try_parse_from(argv) {
        Ok(cli) => cli,
        Err(err) => {
            let _ = err.render().to_string();
            assert!(matches!(err.exit_code(), 0 | 2), "{}", err.exit_code());
            return;
        }
    };
    // Never read files the fuzzer names (`--in /dev/zero` would hang), and never
    // run commands added later (servers, network clients) from here.
    let in_memory = match &cli.command {
        Command::Mac(MacCommand::List(_)) => true,
        Command::Mac(MacCommand::Tag(args)) => args.mac.input.is_none(),
        Command::Mac(MacCommand::Verify(args)) => args.mac.input.is_none(),
        Command::Hash(args) => args.input.is_none(),
        // Lab, benchmarks, servers and network clients are never run from here.
        _ => false,
    };
    if !in_memory {
        return;
    }
    let mut stdin = stdin;
    let (mut out, mut err) = (Vec::new(), Vec::new());
    let mut streams = Streams {
        stdin: &mut stdin,
        stdin_is_terminal: false,
        stdout: &mut out,
        stderr: &mut err,
    };
    if let Err(err) = authtime::run(&cli, &mut streams) {
        assert!(!error_line(&err).contains('\n'));
    }
}

/// `--assume-local-time`: seconds since 1970, or a one-line error.
fn check_utc(text: &str) {
    match parse_utc(text) {
        Ok(secs) => assert!(
            text.starts_with('@') || secs < 253_402_300_800 + 2 * 86_400,
            "{text}: {secs}"
        ),
        Err(e) => assert!(!e.to_string().contains('\n'), "{e}"),
    }
}
