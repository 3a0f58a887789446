//! The `authtime` binary: parses the arguments, runs the command, and turns the
//! result into an exit code (0 success, 1 rejected, 2 bad usage or input,
//! 3 no answer from a network peer, 4 Roughtime malfeasance).

use std::io::{self, IsTerminal};
use std::process::ExitCode;

use authtime::{
    Streams,
    cli::Cli,
    error_line::{error_line, escape_controls},
    exit_code,
};
use clap::Parser;

fn main() -> ExitCode {
    // clap prints its own usage errors (exit 2) and --help/--version (exit 0).
    let cli = Cli::try_parse().unwrap_or_else(|err| err.exit());

    // The handles lock per write, not for the whole command: a daemon's
    // threads log to standard error while the main thread waits for signals.
    let mut stdin = io::stdin();
    let mut stdout = io::stdout();
    let mut stderr = io::stderr();
    let mut streams = Streams {
        stdin_is_terminal: stdin.is_terminal(),
        stdin: &mut stdin,
        stdout: &mut stdout,
        stderr: &mut stderr,
    };
    let result = authtime::run(&cli, &mut streams).and_then(|outcome| {
        streams.stdout.flush()?;
        Ok(outcome)
    });

    let code = match result {
        Ok(authtime::Outcome::Success) => exit_code::SUCCESS,
        Ok(
            ref outcome @ (authtime::Outcome::Rejected(ref reason)
            | authtime::Outcome::NoAnswer(ref reason)
            | authtime::Outcome::Malfeasance(ref reason)
            | authtime::Outcome::NoQuorum(ref reason)),
        ) => {
            let _ = writeln!(streams.stderr, "authtime: {}", escape_controls(reason));
            outcome.exit_code()
        }
        // A reader that went away (`authtime mac list | head -1`) is not an error
        // worth a message.
        Err(err) if is_broken_pipe(&err) => exit_code::SUCCESS,
        Err(err) => {
            let _ = writeln!(streams.stderr, "authtime: {}", error_line(&err));
            exit_code::USAGE
        }
    };
    ExitCode::from(code)
}

fn is_broken_pipe(err: &anyhow::Error) -> bool {
    err.chain().any(|cause| {
        cause
            .downcast_ref::<io::Error>()
            .is_some_and(|e| e.kind() == io::ErrorKind::BrokenPipe)
    })
}
