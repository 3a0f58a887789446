//! Running the server as a foreground process, the way `authtimed` and
//! `authtime serve` do: start, say where it serves, tell systemd it is ready
//! (`Type=notify`), serve until SIGTERM or SIGINT.

use std::io::Write;

use crate::{Running, Settings, Signals, start};

/// Logs to standard error at `level` and below, one event a line, without
/// colour. A subscriber already set (commands run in-process by tests) is
/// kept.
pub fn init_logging(level: tracing::Level) {
    let _ = tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_max_level(level)
        .with_target(false)
        .with_ansi(false)
        .try_init();
}

/// Starts the server, prints what it serves on `out`, notifies systemd when
/// it runs under it, and serves until a stop signal.
///
/// # Errors
/// The signals cannot be caught, or the server cannot start (the message
/// says why, with a hint for port 123).
pub fn serve_in_foreground(settings: &Settings, out: &mut dyn Write) -> Result<(), String> {
    // Before the workers start, so that no signal finds the default handler.
    let signals = Signals::install().map_err(|e| format!("cannot catch signals: {e}"))?;
    let running = start(settings).map_err(|e| e.to_string())?;
    let summary = describe(settings, &running);
    for line in &summary {
        let _ = writeln!(out, "{line}");
    }
    let _ = out.flush();
    let status = summary.last().cloned().unwrap_or_default();
    match crate::systemd_notify::notify(&format!("READY=1\nSTATUS={status}")) {
        Ok(true) => tracing::info!("told systemd the server is ready"),
        Ok(false) => {}
        Err(e) => tracing::warn!(error = %e, "cannot notify systemd (NOTIFY_SOCKET)"),
    }
    running.serve_until_signalled(signals);
    Ok(())
}

/// The lines printed at start: addresses, keys, NTS, metrics, the clock.
fn describe(settings: &Settings, running: &Running) -> Vec<String> {
    let mut lines = Vec::new();
    let workers = running.workers_per_address();
    for addr in running.listen_addrs() {
        lines.push(format!(
            "listening on udp {addr} ({workers} worker{})",
            if workers == 1 { "" } else { "s" }
        ));
    }
    lines.push(match &settings.keys {
        Some(source) => format!("keys from {} (SIGHUP reloads them)", source.path.display()),
        None => "no symmetric keys: requests with a MAC are dropped".into(),
    });
    for addr in running.nts_ke_addrs() {
        lines.push(format!("NTS-KE on tcp {addr}"));
    }
    if let Some(keeper) = running.nts_keys() {
        lines.push(format!(
            "NTS: {} master keys from {}",
            keeper.current().keys().len(),
            keeper.describe()
        ));
    }
    if let Some(addr) = running.metrics_addr() {
        lines.push(format!("metrics on http://{addr}/metrics"));
    }
    let clock = running.clock();
    let a = clock.announce(crate::clock::now_unix());
    lines.push(format!(
        "clock: {}: {}",
        clock.description(),
        a.unsynchronized.map_or_else(
            || format!(
                "synchronized, stratum {}, reference id {}",
                a.stratum, a.reference_id
            ),
            |cause| format!("UNSYNCHRONIZED ({cause}); replies say so (leap 3, stratum 0)"),
        )
    ));
    lines
}
