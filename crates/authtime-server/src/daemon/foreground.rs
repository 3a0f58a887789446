//! Running the server as a foreground process, the way `authtimed` and
//! `authtime serve` do: start, say where it serves, tell systemd it is ready
//! (`Type=notify`), serve until SIGTERM or SIGINT.

use std::io::Write;

use crate::{Running, Settings, Signals, start};

pub use crate::daemon::logging::init_logging;

/// Whether to switch to the configured user once the sockets are bound.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Identity {
    /// `authtimed`: switch as `[daemon]` says (see [`crate::daemon::privileges`]).
    Switch,
    /// `authtime serve`: keep the identity it was started with.
    Keep,
}

/// Starts the server, prints what it serves on `out`, notifies systemd when
/// it runs under it, and serves until a stop signal.
///
/// # Errors
/// The signals cannot be caught, or the server cannot start (the message
/// says why, with a hint for port 123).
pub fn serve_in_foreground(
    settings: &Settings,
    identity: Identity,
    out: &mut dyn Write,
) -> Result<(), String> {
    // Before the workers start, so that no signal finds the default handler.
    let signals = Signals::install().map_err(|e| format!("cannot catch signals: {e}"))?;
    let plan = match identity {
        Identity::Switch => {
            let (written, read) = files_used(settings);
            Some(settings.run_as.plan(&written, &read)?)
        }
        Identity::Keep => None,
    };
    let running = start(settings).map_err(|e| e.to_string())?;
    let mut summary = describe(settings, &running);
    match plan {
        Some(plan) => {
            // On error `running` is dropped, which stops every thread.
            let switch = plan.apply()?;
            summary.insert(0, describe_switch(&switch));
        }
        None => {
            if crate::daemon::privileges::running_as_root() {
                summary.insert(
                    0,
                    "running as root (authtimed would switch to an unprivileged user)".into(),
                );
            }
        }
    }
    for line in &summary {
        let _ = writeln!(out, "{line}");
    }
    let _ = out.flush();
    let status = summary.last().cloned().unwrap_or_default();
    match crate::daemon::systemd_notify::notify(&format!("READY=1\nSTATUS={status}")) {
        Ok(true) => tracing::info!("told systemd the server is ready"),
        Ok(false) => {}
        Err(e) => tracing::warn!(error = %e, "cannot notify systemd (NOTIFY_SOCKET)"),
    }
    running.serve_until_signalled(signals);
    Ok(())
}

/// The files the server writes (given to the new user) and reads again
/// later (checked for readability).
fn files_used(settings: &Settings) -> (Vec<std::path::PathBuf>, Vec<std::path::PathBuf>) {
    let mut written = Vec::new();
    let mut read = Vec::new();
    if let Some(keys) = &settings.keys {
        read.push(keys.path.clone());
    }
    if let Some(nts) = &settings.nts {
        if !nts.store_location.contains("://") {
            let path = std::path::PathBuf::from(&nts.store_location);
            let mut lock = path.clone().into_os_string();
            lock.push(".lock");
            written.push(path);
            written.push(lock.into());
        }
        if let Some(ke) = &nts.ke {
            read.push(ke.certificate_chain.clone());
            read.push(ke.private_key.clone());
        }
    }
    (written, read)
}

/// The first line printed: who the server runs as.
fn describe_switch(switch: &crate::daemon::privileges::Switch) -> String {
    use crate::daemon::privileges::Switch;
    match switch {
        Switch::Switched {
            user,
            uid,
            group,
            gid,
        } => format!("running as user {user} ({uid}), group {group} ({gid}), without capabilities"),
        Switch::StayedRoot => "running as root (allow-root)".into(),
        Switch::NotRoot { uid } => format!("running as uid {uid}"),
    }
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
    let ke = settings.nts.as_ref().and_then(|n| n.ke.as_ref());
    if let Some(balancer) = ke.and_then(|ke| ke.balancer.as_ref()) {
        let backends: Vec<String> = balancer
            .backends
            .iter()
            .map(|b| format!("{} ({}:{}, weight {})", b.name, b.host, b.port, b.weight))
            .collect();
        lines.push(format!(
            "NTS-KE load balancer: cookies from {} backend{}: {}",
            backends.len(),
            if backends.len() == 1 { "" } else { "s" },
            backends.join(", ")
        ));
    }
    if let Some(ke) = ke.filter(|ke| !ke.pool_token_files.is_empty()) {
        lines.push(format!(
            "NTS pool member: Fixed Key Requests accepted with the tokens of {} file{} (SIGHUP reloads them)",
            ke.pool_token_files.len(),
            if ke.pool_token_files.len() == 1 { "" } else { "s" }
        ));
    }
    if let Some(keeper) = running.nts_keys() {
        lines.push(format!(
            "NTS: {} master keys from {}",
            keeper.current().keys().len(),
            keeper.describe()
        ));
    }
    for addr in running.roughtime_addrs() {
        lines.push(format!("Roughtime on udp and tcp {addr}"));
    }
    if let Some(keys) = running.roughtime_keys() {
        lines.push(format!("Roughtime online key: {keys}"));
    }
    if let Some(xdp) = running.xdp_description() {
        lines.push(xdp.to_owned());
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
