//! The `authtime-lab` command: the lab's report (`run`), the MAC benchmark
//! (`bench mac`) and the load generators (`load ntp`, `load nts-ke`,
//! `load nts`, `load roughtime`), on top of the `authtime-lab` library.
//!
//! These were `authtime lab`, `authtime bench` and `authtime load`; they live
//! in a binary of their own so that `authtime` (the everyday tool) and
//! `authtimed` (the daemon) link no OpenSSL peer, plotting or generator code.
//! This crate parses arguments and prints; the measuring is the library's.
//! The lab's ntp and nts sections still run `authtime` (`serve`, `nts cert`)
//! as a separate process, found beside this executable.
//!
//! `main.rs` only parses the arguments, calls [`run`] and turns its result into
//! an exit code ([`exit_code`]); commands write to [`Streams`], never to the
//! process's own handles.

use std::io::Write;

pub mod cli;
pub mod cmd_bench;
pub mod cmd_load;
pub mod cmd_load_roughtime;
pub mod cmd_run;
pub mod error_line;

/// The exit codes of `authtime-lab`, the same for every command.
pub mod exit_code {
    /// The command did what was asked.
    pub const SUCCESS: u8 = 0;
    /// Bad usage or bad input (an unknown section or algorithm, an address
    /// without a port, an unreadable key file), or a run that failed. clap's
    /// own usage errors exit with 2 as well.
    pub const USAGE: u8 = 2;
}

/// The output streams a command uses, so tests can give it buffers instead.
pub struct Streams<'a> {
    /// Results: reports, tables, JSON.
    pub stdout: &'a mut dyn Write,
    /// Progress and notes for the person at the terminal.
    pub stderr: &'a mut dyn Write,
}

/// Runs the command `cli` describes.
///
/// # Errors
/// Anything that stops the command: bad arguments, a measurement that failed,
/// a failed write. `main` prints it on one line and exits with
/// [`exit_code::USAGE`].
pub fn run(cli: &cli::Cli, streams: &mut Streams<'_>) -> anyhow::Result<()> {
    use cli::{BenchCommand, Command, LoadCommand};
    match &cli.command {
        Command::Run(args) => cmd_run::run(args, streams),
        Command::Bench(BenchCommand::Mac(args)) => cmd_bench::bench_mac(args, streams),
        Command::Load(LoadCommand::Ntp(args)) => cmd_load::load_ntp(args, streams),
        Command::Load(LoadCommand::NtsKe(args)) => cmd_load::load_nts_ke(args, streams),
        Command::Load(LoadCommand::Nts(args)) => cmd_load::load_nts(args, streams),
        Command::Load(LoadCommand::Roughtime(args)) => {
            crate::cmd_load_roughtime::load_roughtime(args, streams)
        }
    }
}
