//! `authtimed`: the server daemon. It serves NTP (plain and with symmetric
//! keys), NTS-KE and NTS-protected NTP, with metrics and the key stores, as
//! `authtime-server` implements them; it links none of the tools, the lab,
//! the plotting or OpenSSL (`authtime` is the user's tool). It logs to
//! standard error, tells systemd when it is ready (`Type=notify`), reloads
//! keys and certificates on SIGHUP and stops on SIGTERM or SIGINT.
//!
//! Started as root, it switches to an unprivileged user once its sockets are
//! bound (`authtime_server::daemon::privileges`).
//!
//! Exit codes: 0 stopped by a signal, 2 bad usage or configuration, 1 the
//! server could not start (an address in use, port 123 without privileges,
//! unreadable keys, no user to switch to).

use std::io::Write as _;
use std::process::ExitCode;

use authtime_server::config::file::{Overrides, settings_for_serve};
use authtimed::args::Args;
use clap::Parser;

fn main() -> ExitCode {
    let args = Args::try_parse().unwrap_or_else(|err| err.exit());
    let overrides = Overrides {
        listen: args.listen,
        keys: args.keys,
        metrics: args.metrics,
        workers: args.workers,
        log_format: args.log_format,
        user: args.user,
        group: args.group,
        allow_root: args.allow_root,
    };
    let settings = match settings_for_serve(args.config.as_deref(), &overrides) {
        Ok(settings) => settings,
        Err(e) => {
            let _ = writeln!(std::io::stderr(), "authtimed: {}", escape_controls(&e));
            return ExitCode::from(2);
        }
    };
    authtime_server::daemon::foreground::init_logging(settings.log_level, settings.log_format);
    match authtime_server::daemon::foreground::serve_in_foreground(
        &settings,
        authtime_server::daemon::foreground::Identity::Switch,
        &mut std::io::stdout(),
    ) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            let _ = writeln!(std::io::stderr(), "authtimed: {}", escape_controls(&e));
            ExitCode::from(1)
        }
    }
}

/// `text` with control characters escaped, so that a file name or a value
/// from the configuration cannot write to the terminal.
fn escape_controls(text: &str) -> String {
    text.chars()
        .flat_map(|c| {
            if c.is_control() {
                c.escape_default().collect::<Vec<_>>()
            } else {
                vec![c]
            }
        })
        .collect()
}
