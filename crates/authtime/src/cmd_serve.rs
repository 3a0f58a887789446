//! `authtime serve`: the NTP server, until SIGTERM or SIGINT.

use anyhow::{Context as _, anyhow};
use authtime_server::config::parse_socket_addr;
use authtime_server::{KeySource, Settings, Signals};

use crate::cmd_config::read_settings;
use crate::{Outcome, Streams, cli::ServeArgs};

/// Starts the server, says where it listens on standard output, and serves
/// until a stop signal. Logs go to the process's standard error.
///
/// # Errors
/// An invalid configuration, unusable keys, an address that cannot be bound
/// (with a hint when port 123 needs privileges).
pub fn serve(args: &ServeArgs, streams: &mut Streams<'_>) -> anyhow::Result<Outcome> {
    let settings = settings(args)?;
    // Logs are for the operator; the subscriber may already be set when
    // commands run in-process (tests), which is fine.
    let _ = tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_max_level(settings.log_level)
        .with_target(false)
        .with_ansi(false)
        .try_init();
    // Before the workers start, so that no signal finds the default handler.
    let signals = Signals::install().context("cannot catch signals")?;
    let running = authtime_server::start(&settings).map_err(|e| anyhow!(e))?;
    for addr in running.listen_addrs() {
        writeln!(
            streams.stdout,
            "listening on udp {addr} ({} worker{})",
            running.workers_per_address(),
            if running.workers_per_address() == 1 {
                ""
            } else {
                "s"
            }
        )?;
    }
    match &settings.keys {
        Some(source) => writeln!(
            streams.stdout,
            "keys from {} (SIGHUP reloads them)",
            source.path.display()
        )?,
        None => writeln!(
            streams.stdout,
            "no symmetric keys: requests with a MAC are dropped"
        )?,
    }
    for addr in running.nts_ke_addrs() {
        writeln!(streams.stdout, "NTS-KE on tcp {addr}")?;
    }
    if let Some(keeper) = running.nts_keys() {
        writeln!(
            streams.stdout,
            "NTS: {} master keys from {}",
            keeper.current().keys().len(),
            keeper.describe()
        )?;
    }
    let clock = running.clock();
    let announced = clock.announce(authtime_server::clock::now_unix());
    writeln!(
        streams.stdout,
        "clock: {}: {}",
        clock.description(),
        announced.unsynchronized.map_or_else(
            || format!(
                "synchronized, stratum {}, reference id {}",
                announced.stratum, announced.reference_id
            ),
            |cause| format!("UNSYNCHRONIZED ({cause}); replies say so (leap 3, stratum 0)"),
        )
    )?;
    if let Some(addr) = running.metrics_addr() {
        writeln!(streams.stdout, "metrics on http://{addr}/metrics")?;
    }
    streams.stdout.flush()?;
    running.serve_until_signalled(signals);
    Ok(Outcome::Success)
}

/// The configuration file's settings (or the defaults) with the command
/// line's values in place of the file's.
fn settings(args: &ServeArgs) -> anyhow::Result<Settings> {
    let mut settings = match &args.config {
        None => Settings::default(),
        Some(path) => read_settings(path)?.map_err(|problems| {
            let more = problems.lines.len() - 1;
            let first = problems.lines.first().cloned().unwrap_or_default();
            if more == 0 {
                anyhow!("{first}")
            } else {
                anyhow!(
                    "{first} (and {more} more: see authtime config check {})",
                    path.display()
                )
            }
        })?,
    };
    if !args.listen.is_empty() {
        settings.listen = args
            .listen
            .iter()
            .map(|text| parse_socket_addr(text).map_err(|e| anyhow!("--listen: {e}")))
            .collect::<Result<_, _>>()?;
        settings.listen_is_default = false;
    }
    if let Some(path) = &args.keys {
        settings.keys = Some(KeySource {
            path: path.clone(),
            format: settings.keys.as_ref().and_then(|k| k.format),
        });
    }
    if let Some(text) = &args.metrics {
        settings.metrics = Some(parse_socket_addr(text).map_err(|e| anyhow!("--metrics: {e}"))?);
    }
    if let Some(n) = args.workers {
        settings.workers = match n {
            0 => std::thread::available_parallelism().map_or(1, usize::from),
            n if n > authtime_server::config::MAX_WORKERS => {
                return Err(anyhow!(
                    "--workers {n}: at most {}",
                    authtime_server::config::MAX_WORKERS
                ));
            }
            n => n,
        };
    }
    Ok(settings)
}
