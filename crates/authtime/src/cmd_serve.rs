//! `authtime serve`: the NTP server, until SIGTERM or SIGINT.

use anyhow::anyhow;
use authtime_server::config::file::{Overrides, settings_for_serve};

use crate::{Outcome, Streams, cli::ServeArgs};

/// Starts the server, says where it listens on standard output, and serves
/// until a stop signal. Logs go to the process's standard error. The same as
/// `authtimed`, which is the daemon operators install, except that it keeps
/// the identity it was started with (`authtimed` switches to an
/// unprivileged user after binding).
///
/// # Errors
/// An invalid configuration, unusable keys, an address that cannot be bound
/// (with a hint when port 123 needs privileges).
pub fn serve(args: &ServeArgs, streams: &mut Streams<'_>) -> anyhow::Result<Outcome> {
    let overrides = Overrides {
        listen: args.listen.clone(),
        keys: args.keys.clone(),
        metrics: args.metrics.clone(),
        workers: args.workers,
        ..Overrides::default()
    };
    let settings =
        settings_for_serve(args.config.as_deref(), &overrides).map_err(|e| anyhow!(e))?;
    authtime_server::daemon::foreground::init_logging(settings.log_level, settings.log_format);
    authtime_server::daemon::foreground::serve_in_foreground(
        &settings,
        authtime_server::daemon::foreground::Identity::Keep,
        streams.stdout,
    )
    .map_err(|e| anyhow!(e))?;
    Ok(Outcome::Success)
}
