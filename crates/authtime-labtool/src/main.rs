//! The `authtime-lab` binary: parses the arguments, runs the command, and
//! turns the result into an exit code (0 success, 2 bad usage, bad input or a
//! failed run).

use std::io;
use std::process::ExitCode;

use authtime_labtool::{Streams, cli::Cli, error_line::error_line, exit_code};
use clap::Parser;

fn main() -> ExitCode {
    // clap prints its own usage errors (exit 2) and --help/--version (exit 0).
    let cli = Cli::try_parse().unwrap_or_else(|err| err.exit());

    // The handles lock per write: the lab's progress lines and its results
    // may come from different threads.
    let mut stdout = io::stdout();
    let mut stderr = io::stderr();
    let mut streams = Streams {
        stdout: &mut stdout,
        stderr: &mut stderr,
    };
    let result = authtime_labtool::run(&cli, &mut streams).and_then(|()| {
        streams.stdout.flush()?;
        Ok(())
    });

    let code = match result {
        Ok(()) => exit_code::SUCCESS,
        // A reader that went away (`authtime-lab bench mac | head -3`) is not
        // an error worth a message.
        Err(err) if is_broken_pipe(&err) => exit_code::SUCCESS,
        Err(err) => {
            let _ = writeln!(streams.stderr, "authtime-lab: {}", error_line(&err));
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
