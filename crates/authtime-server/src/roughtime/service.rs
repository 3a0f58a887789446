//! Starting the Roughtime server: the online key keeper, one reuse-port
//! group of UDP sockets and one TCP listener per address, and the metrics.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::admission::access::AccessList;
use crate::admission::client_limiter::ClientLimiter;
use crate::clock::state::ClockState;
use crate::config::NtsSettings;
use crate::config::roughtime::RoughtimeSettings;
use crate::metrics::Metrics;
use crate::ntp::sockets;

/// Receive buffer of each Roughtime UDP socket, bytes as the kernel counts
/// them: room for a few hundred 1 KB requests, so that a busy worker's next
/// batch fills (one signature per batch).
const RECEIVE_BUFFER: usize = 416 * 1024;
use crate::nts::keys::unix_now;
use crate::roughtime::keys::{RoughtimeKeys, open_roughtime_store};
use crate::roughtime::metrics::RoughtimeMetrics;
use crate::roughtime::tcp as roughtime_tcp;
use crate::roughtime::worker::{self as roughtime_worker, RoughtimeShared};

/// A running Roughtime server.
#[derive(Debug)]
pub(crate) struct RunningRoughtime {
    /// The addresses served (UDP and TCP on each).
    pub(crate) addrs: Vec<SocketAddr>,
    /// The keys, for the start-up lines.
    pub(crate) keys: Arc<RoughtimeKeys>,
    /// What the workers share, for the AF_XDP workers too.
    pub(crate) shared: Arc<RoughtimeShared>,
    pub(crate) threads: Vec<JoinHandle<()>>,
}

/// Everything [`start`] needs from the daemon.
pub(crate) struct Context<'a> {
    pub(crate) nts: Option<&'a NtsSettings>,
    pub(crate) clock: &'a Arc<ClockState>,
    pub(crate) access: &'a AccessList,
    pub(crate) metrics: &'a Metrics,
    pub(crate) stop: &'a Arc<AtomicBool>,
}

/// Starts serving Roughtime as `settings` say.
///
/// # Errors
/// A key file that cannot be read, a key store that cannot be opened, an
/// address that cannot be bound, or no thread.
pub(crate) fn start(
    settings: &RoughtimeSettings,
    ctx: &Context<'_>,
) -> Result<RunningRoughtime, String> {
    let metrics = Arc::new(RoughtimeMetrics::default());
    let store = match ctx.nts {
        Some(nts)
            if matches!(
                settings.keys,
                crate::config::roughtime::RoughtimeKeySource::LongTerm(_)
            ) =>
        {
            Some(open_roughtime_store(nts)?)
        }
        _ => None,
    };
    let poll = ctx
        .nts
        .map_or(Duration::from_secs(5), |nts| nts.poll_interval);
    let keys = RoughtimeKeys::start(settings, store, Arc::clone(&metrics))?;
    {
        let watched = Arc::clone(&metrics);
        ctx.metrics
            .add_renderer(move |out| watched.render(out, unix_now()));
    }
    let limiter = match settings.rate_limit {
        Some(config) => {
            let mut hash_key = [0u8; 32];
            getrandom::fill(&mut hash_key).map_err(|e| format!("no random bytes: {e}"))?;
            Some(ClientLimiter::new(config, 4 * settings.workers, hash_key))
        }
        None => None,
    };
    let shared = Arc::new(RoughtimeShared {
        keys: Arc::clone(&keys),
        clock: Arc::clone(ctx.clock),
        limiter,
        access: ctx.access.clone(),
        max_radius: settings.max_radius,
        metrics,
        stop: Arc::clone(ctx.stop),
        started: Instant::now(),
        clients: ctx.metrics.clients().cloned(),
    });
    let mut running = RunningRoughtime {
        addrs: Vec::new(),
        keys: Arc::clone(&keys),
        shared: Arc::clone(&shared),
        threads: Vec::new(),
    };
    {
        let (keys, stop) = (Arc::clone(&keys), Arc::clone(ctx.stop));
        let thread = std::thread::Builder::new()
            .name("roughtime-keys".into())
            .spawn(move || keys.run(poll, &stop))
            .map_err(|e| e.to_string())?;
        running.threads.push(thread);
    }
    'addrs: for &addr in &settings.listen {
        // TCP on the port UDP got (port 0 picks one for both). With port 0
        // the TCP port may be taken while the UDP one was free (another
        // program's connection): a few more ports are tried then.
        let mut tries = 0;
        let (bound, udp, listener) = loop {
            let (bound, udp, _) =
                match sockets::bind_group(addr, settings.workers, RECEIVE_BUFFER, false) {
                    Ok(group) => group,
                    Err(e) if settings.listen_is_default && family_unavailable(&e) => {
                        tracing::warn!(
                            %addr, error = %e, "address family unavailable; no Roughtime there"
                        );
                        continue 'addrs;
                    }
                    Err(e) => return Err(format!("cannot serve Roughtime on udp {addr}: {e}")),
                };
            match roughtime_tcp::bind(bound) {
                Ok(listener) => break (bound, udp, listener),
                Err(e)
                    if addr.port() == 0
                        && e.kind() == std::io::ErrorKind::AddrInUse
                        && tries < 8 =>
                {
                    tries += 1;
                }
                Err(e) => return Err(format!("cannot serve Roughtime on tcp {bound}: {e}")),
            }
        };
        for (i, socket) in udp.into_iter().enumerate() {
            let shared = Arc::clone(&shared);
            let thread = std::thread::Builder::new()
                .name(format!("roughtime-{bound}-{i}"))
                .spawn(move || roughtime_worker::run(&socket, &shared))
                .map_err(|e| e.to_string())?;
            running.threads.push(thread);
        }
        let thread = roughtime_tcp::spawn_acceptor(
            listener,
            Arc::clone(&shared),
            settings.max_connections,
            settings.tcp_timeout,
        )
        .map_err(|e| e.to_string())?;
        running.threads.push(thread);
        running.addrs.push(bound);
    }
    if running.addrs.is_empty() {
        return Err("no address to serve Roughtime on".into());
    }
    tracing::info!(
        listen = ?running.addrs,
        keys = %keys.describe(),
        "serving Roughtime"
    );
    Ok(running)
}

fn family_unavailable(e: &std::io::Error) -> bool {
    e.kind() == std::io::ErrorKind::AddrNotAvailable
        || e.raw_os_error() == Some(libc::EAFNOSUPPORT)
        || e.raw_os_error() == Some(libc::EADDRNOTAVAIL)
}
