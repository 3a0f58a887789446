//! Starting and stopping the server: keys, sockets, worker threads, the
//! metrics endpoint, and the signals that reload keys or stop it all.

#[expect(
    unsafe_code,
    reason = "capget, capset and prctl are FFI; each block has a SAFETY comment"
)]
mod capabilities;
pub mod foreground;
pub mod logging;
#[expect(
    unsafe_code,
    reason = "getpwnam_r, setgroups, setgid and setuid are FFI; each block has a SAFETY comment"
)]
pub mod privileges;
pub mod systemd_notify;
#[expect(
    unsafe_code,
    reason = "setpriority is FFI; each block has a SAFETY comment"
)]
pub(crate) mod thread_priority;
pub(crate) mod xdp;

use std::fmt;
use std::io;
use std::net::{SocketAddr, UdpSocket};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Instant;

use authtime_keys::{KeyFileError, KeyFileWarning};
use authtime_proto::Server;
use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};

use crate::admission::client_limiter::ClientLimiter;
use crate::clock::state::ClockState;
use crate::config::{NtsSettings, Settings};
use crate::metrics::Metrics;
use crate::metrics::clients::ClientPopulation;
use crate::metrics::http as metrics_http;
use crate::metrics::write_family;
use crate::ntp::key_store::KeyStore;
use crate::ntp::nts_reply::NtsShared;
use crate::ntp::sockets;
use crate::ntp::timestamps::SharedTimestamps;
use crate::ntp::worker::{self, Shared};
use crate::ntp::xdp_worker::{self, FrameCounters};
use crate::nts::keys::RingKeeper;
use crate::roughtime::xdp::XdpRoughtime;
use authtime_nts::{NtsServer, RotationPolicy};

/// Why the server did not start.
#[non_exhaustive]
#[derive(Debug)]
pub enum StartError {
    /// The key file cannot be read or has a malformed line.
    Keys(KeyFileError),
    /// A listen address cannot be bound.
    Bind {
        /// The address.
        addr: SocketAddr,
        /// The system's reason.
        source: io::Error,
    },
    /// The metrics address cannot be bound.
    Metrics {
        /// The address.
        addr: SocketAddr,
        /// The system's reason.
        source: io::Error,
    },
    /// No random bytes for the rate limiter's hash key, or no thread.
    System(io::Error),
    /// NTS cannot start: the key store location, the certificate, or an
    /// NTS-KE address.
    Nts(String),
    /// The clock source cannot be used (an unreadable leap-seconds list).
    Clock(String),
    /// Roughtime cannot start: a key file, the key store, or an address.
    Roughtime(String),
    /// The AF_XDP path (`[xdp]`) cannot be set up: the interface, a queue,
    /// a capability, or driver or kernel support is missing.
    Xdp(String),
}

impl StartError {
    /// Whether a listen address needed privileges this process lacks.
    #[must_use]
    pub fn is_permission_denied(&self) -> bool {
        matches!(self, Self::Bind { source, .. } if source.kind() == io::ErrorKind::PermissionDenied)
    }
}

const PORT_HINT: &str = "choose another port with --listen 127.0.0.1:11123 or with `listen` in \
                         the [ntp] section of the configuration file";

impl fmt::Display for StartError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Keys(e) => write!(f, "keys: {e}"),
            Self::Bind { addr, source } if source.kind() == io::ErrorKind::PermissionDenied => {
                write!(
                    f,
                    "cannot listen on {addr}: permission denied (ports below 1024 need root or \
                     CAP_NET_BIND_SERVICE); {PORT_HINT}"
                )
            }
            Self::Bind { addr, source } if source.kind() == io::ErrorKind::AddrInUse => write!(
                f,
                "cannot listen on {addr}: address in use (is another NTP server such as chronyd \
                 or ntpd running?); {PORT_HINT}"
            ),
            Self::Bind { addr, source } => write!(f, "cannot listen on {addr}: {source}"),
            Self::Metrics { addr, source } => {
                write!(f, "cannot serve metrics on {addr}: {source}")
            }
            Self::System(e) => write!(f, "cannot start: {e}"),
            Self::Nts(e) => write!(f, "NTS: {e}"),
            Self::Clock(e) => write!(f, "clock source: {e}"),
            Self::Roughtime(e) => write!(f, "Roughtime: {e}"),
            Self::Xdp(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for StartError {}

/// A running server. Dropping it stops it (see [`Running::shutdown`]).
#[derive(Debug)]
pub struct Running {
    listen: Vec<SocketAddr>,
    metrics_addr: Option<SocketAddr>,
    kernel_timestamps: bool,
    workers_per_address: usize,
    stop: Arc<AtomicBool>,
    threads: Vec<JoinHandle<()>>,
    keys: Arc<KeyStore>,
    metrics: Arc<Metrics>,
    nts_keys: Option<Arc<RingKeeper>>,
    nts_ke: Option<crate::nts::ke::RunningKe>,
    clock: Arc<ClockState>,
    /// Roughtime's addresses (UDP and TCP on each) and where its key comes from.
    roughtime: Option<(Vec<SocketAddr>, String)>,
    /// The AF_XDP path's program (detached when dropped, after the workers
    /// have stopped) and what it serves.
    xdp: Option<(authtime_xdp::Attachment, String)>,
}

/// Starts serving as `settings` say: loads the keys, binds every address
/// (skipping, with a warning, a default address whose family the machine
/// lacks), starts the workers and the metrics endpoint.
///
/// # Errors
/// Keys, an address or the metrics address that cannot be used.
pub fn start(settings: &Settings) -> Result<Running, StartError> {
    let (keys, warnings) = KeyStore::load(settings.keys.clone()).map_err(StartError::Keys)?;
    log_key_warnings(&warnings);
    let keys = Arc::new(keys);
    let metrics = Arc::new(Metrics::default());
    metrics
        .keys_loaded
        .store(keys.current().len() as u64, Ordering::Relaxed);

    let nts = match &settings.nts {
        Some(nts) => Some(start_ring_keeper(nts, &metrics)?),
        None => None,
    };

    let mut groups: Vec<(SocketAddr, Vec<UdpSocket>)> = Vec::new();
    let mut kernel_timestamps = true;
    let mut tx_stamps = true;
    let mut receive_buffer = usize::MAX;
    for &addr in &settings.listen {
        match sockets::bind_group(
            addr,
            settings.workers,
            settings.data_path.receive_buffer,
            true,
        ) {
            Ok((bound, sockets, support)) => {
                kernel_timestamps &= support.rx_stamps;
                tx_stamps &= support.tx_stamps;
                receive_buffer = receive_buffer.min(support.receive_buffer);
                groups.push((bound, sockets));
            }
            Err(e) if settings.listen_is_default && family_unavailable(&e) => {
                tracing::warn!(%addr, error = %e, "address family unavailable; not listening there");
            }
            Err(source) => return Err(StartError::Bind { addr, source }),
        }
    }
    if groups.is_empty() {
        return Err(StartError::System(io::Error::other(
            "no address to listen on",
        )));
    }
    // Before any thread starts, so that a path that cannot be set up stops
    // the start cleanly (its attachment, if made, detaches on the way out).
    let xdp_path = match &settings.xdp {
        Some(config) => {
            let bound: Vec<SocketAddr> = groups.iter().map(|(addr, _)| *addr).collect();
            let roughtime = settings
                .roughtime
                .as_ref()
                .map_or(&[][..], |rt| &rt.listen[..]);
            let mut path = xdp::set_up(config, &bound, roughtime).map_err(StartError::Xdp)?;
            // Still before any thread: what the set-up needed goes now.
            if !privileges::running_as_root() {
                let dropped = capabilities::drop_xdp_setup().map_err(StartError::Xdp)?;
                if !dropped.is_empty() {
                    path.description.push_str(&format!(
                        "; dropped {} after the set-up",
                        dropped.join(", ")
                    ));
                }
            }
            tracing::info!("{}", path.description);
            Some(path)
        }
        None => None,
    };

    let stop = Arc::new(AtomicBool::new(false));
    let limiter = match settings.rate_limit {
        Some(config) => {
            let mut hash_key = [0u8; 32];
            getrandom::fill(&mut hash_key).map_err(|e| StartError::System(io::Error::other(e)))?;
            Some(ClientLimiter::new(config, 4 * settings.workers, hash_key))
        }
        None => None,
    };
    // Last before the threads start: nothing below returns early without
    // `running`, whose drop stops the refresher.
    let (clock, refresher) =
        crate::clock::state::start_refresher(&settings.clock, Arc::clone(&stop))
            .map_err(StartError::Clock)?;
    {
        let watched = Arc::clone(&clock);
        metrics.add_renderer(move |out| crate::clock::state::render_metrics(&watched, out));
    }
    let (steps, step_watch) =
        crate::clock::step_watch::start(Arc::clone(&clock), Arc::clone(&stop))
            .map_err(StartError::Clock)?;
    metrics.add_renderer(move |out| steps.render(out));
    let timestamps = settings
        .data_path
        .interleaved_table
        .map(|size| Arc::new(SharedTimestamps::new(size)));
    if let Some(table) = &timestamps {
        let watched = Arc::clone(table);
        metrics.add_renderer(move |out| render_table(&watched, out));
    }
    // Who the clients are: kept only when someone can read it.
    if settings.metrics.is_some() {
        let mut key = [0u8; 16];
        getrandom::fill(&mut key).map_err(|e| StartError::System(io::Error::other(e)))?;
        let now = u64::try_from(crate::clock::now_unix().secs).unwrap_or(0);
        metrics.set_clients(Arc::new(ClientPopulation::new(key, now)));
    }
    let shared = Arc::new(Shared {
        server: Server::new(settings.server),
        clock: Arc::clone(&clock),
        keys: Arc::clone(&keys),
        limiter,
        access: settings.access.clone(),
        stop: Arc::clone(&stop),
        started: Instant::now(),
        nts: nts.as_ref().map(|keeper| NtsShared {
            server: NtsServer::new(),
            keeper: Arc::clone(keeper),
        }),
        timestamps: timestamps.clone(),
        max_request_age: settings.data_path.max_request_age,
        sample_every: settings.data_path.sample_every,
        tx_stamps,
        compensate: settings.data_path.compensate,
        clients: metrics.clients().cloned(),
    });
    let mut running = Running {
        clock: Arc::clone(&clock),
        listen: groups.iter().map(|(addr, _)| *addr).collect(),
        metrics_addr: None,
        kernel_timestamps,
        workers_per_address: settings.workers,
        stop: Arc::clone(&stop),
        threads: vec![refresher, step_watch],
        keys,
        metrics: Arc::clone(&metrics),
        nts_keys: nts.clone(),
        nts_ke: None,
        roughtime: None,
        xdp: None,
    };
    if let (Some(keeper), Some(config)) = (&nts, &settings.nts) {
        let (keeper, stop, interval) =
            (Arc::clone(keeper), Arc::clone(&stop), config.poll_interval);
        let thread = std::thread::Builder::new()
            .name("nts-keys".into())
            .spawn(move || keeper.run(interval, &stop))
            .map_err(StartError::System)?;
        running.threads.push(thread);
    }
    for (addr, sockets) in groups {
        for (i, socket) in sockets.into_iter().enumerate() {
            let shared = Arc::clone(&shared);
            let counters = metrics.add_worker();
            let thread = std::thread::Builder::new()
                .name(format!("ntp-{addr}-{i}"))
                .spawn(move || worker::run(&socket, &shared, &counters))
                .map_err(StartError::System)?;
            running.threads.push(thread);
        }
    }
    if let (Some(keeper), Some(ke)) = (&nts, settings.nts.as_ref().and_then(|n| n.ke.as_ref())) {
        let started = crate::nts::ke::start(
            ke,
            &running.listen,
            Arc::clone(keeper),
            &metrics,
            Arc::clone(&stop),
        )
        .map_err(StartError::Nts)?;
        tracing::info!(listen = ?started.local_addrs, "serving NTS-KE");
        running.nts_ke = Some(started);
    }
    let mut roughtime_shared = None;
    if let Some(rt) = &settings.roughtime {
        let ctx = crate::roughtime::service::Context {
            nts: settings.nts.as_ref(),
            clock: &clock,
            access: &settings.access,
            metrics: &metrics,
            stop: &stop,
        };
        let started = crate::roughtime::service::start(rt, &ctx).map_err(StartError::Roughtime)?;
        running.threads.extend(started.threads);
        running.roughtime = Some((started.addrs, started.keys.describe()));
        roughtime_shared = Some(started.shared);
    }
    // After Roughtime, whose state the AF_XDP workers share; the program
    // was attached before any thread started, and what arrived since waits
    // on the queues' rings.
    if let Some(path) = xdp_path {
        let served = Arc::new(path.served);
        let roughtime = match roughtime_shared {
            Some(shared) if !path.roughtime_ports.is_empty() => Some(Arc::new(XdpRoughtime {
                shared,
                ports: path.roughtime_ports,
            })),
            _ => None,
        };
        let mut queues = Vec::with_capacity(path.sockets.len());
        for mut xsk in path.sockets {
            let (shared, served) = (Arc::clone(&shared), Arc::clone(&served));
            let roughtime = roughtime.clone();
            let counters = metrics.add_worker();
            let frames = Arc::new(Mutex::new(FrameCounters::default()));
            queues.push((xsk.queue(), Arc::clone(&frames)));
            let thread = std::thread::Builder::new()
                .name(format!("xdp-{}", xsk.queue()))
                .spawn(move || {
                    xdp_worker::run(
                        &mut xsk,
                        &served,
                        &shared,
                        roughtime.as_deref(),
                        &counters,
                        &frames,
                    );
                })
                .map_err(StartError::System)?;
            running.threads.push(thread);
        }
        metrics.add_renderer(move |out| xdp_worker::render(&queues, out));
        running.xdp = Some((path.attachment, path.description));
    }
    if let Some(addr) = settings.metrics {
        let (bound, thread) = metrics_http::spawn(addr, Arc::clone(&metrics), Arc::clone(&stop))
            .map_err(|source| StartError::Metrics { addr, source })?;
        running.metrics_addr = Some(bound);
        running.threads.push(thread);
    }
    tracing::info!(
        listen = ?running.listen,
        workers_per_address = settings.workers,
        kernel_timestamps,
        kernel_transmit_timestamps = tx_stamps,
        receive_buffer,
        interleaved_table = %timestamps.as_ref().map_or_else(
            || "off".to_owned(),
            |t| format!("{} entries, {} KiB", t.capacity(), t.memory_bytes() / 1024)
        ),
        keys = running.keys.current().len(),
        metrics = %running
            .metrics_addr
            .map_or_else(|| "off".to_owned(), |a| a.to_string()),
        "serving NTP"
    );
    Ok(running)
}

/// The interleaved table's size, for operators: how full it is.
fn render_table(table: &SharedTimestamps, out: &mut String) {
    crate::metrics::write_family(
        out,
        "authtime_ntp_interleaved_timestamps_held",
        "gauge",
        "Transmit times saved for interleaved clients and not yet asked for.",
        &[(String::new(), table.held() as u64)],
    );
    crate::metrics::write_family(
        out,
        "authtime_ntp_interleaved_timestamps_capacity",
        "gauge",
        "Transmit times the interleaved table holds at most (ntp.interleaved-table-size).",
        &[(String::new(), table.capacity() as u64)],
    );
}

/// Opens the master-key store, loads or creates the ring, and exports the
/// keeper's counters.
fn start_ring_keeper(
    nts: &NtsSettings,
    metrics: &Arc<Metrics>,
) -> Result<Arc<RingKeeper>, StartError> {
    let store = crate::nts::keys::open_key_store(nts).map_err(StartError::Nts)?;
    let policy = RotationPolicy {
        interval_secs: nts.rotation_interval,
        old_keys: nts.old_keys,
    };
    let keeper = RingKeeper::start_with(store, policy, nts.cookie_aead)
        .map_err(|e| StartError::Nts(e.to_string()))?;
    if keeper.current().keys().is_empty() {
        return Err(StartError::Nts("no NTS master key could be made".into()));
    }
    let ring = keeper.current();
    tracing::info!(
        store = %keeper.describe(),
        keys = ring.keys().len(),
        cookie_aead = ring.keys().last().map_or("none", |k| k.algorithm().name()),
        "NTS master keys ready"
    );
    let watched = Arc::clone(&keeper);
    metrics.add_renderer(move |out| {
        let m = &watched.metrics;
        let get =
            |a: &std::sync::atomic::AtomicU64| vec![(String::new(), a.load(Ordering::Relaxed))];
        write_family(
            out,
            "authtime_nts_master_keys",
            "gauge",
            "NTS cookie master keys held.",
            &get(&m.keys),
        );
        let ring = watched.current();
        let by_aead: Vec<(String, u64)> = authtime_nts::key_ring::MASTER_KEY_ALGORITHMS
            .iter()
            .map(|alg| {
                let held = ring.keys().iter().filter(|k| k.algorithm() == *alg).count();
                (crate::metrics::label_set("aead", alg.name()), held as u64)
            })
            .collect();
        write_family(
            out,
            "authtime_nts_master_keys_by_aead",
            "gauge",
            "NTS cookie master keys held, by the AEAD their cookies are sealed with.",
            &by_aead,
        );
        write_family(
            out,
            "authtime_nts_key_ring_changes_total",
            "counter",
            "Times the master-key ring in force changed (rotations here or by a peer).",
            &get(&m.ring_changes),
        );
        write_family(
            out,
            "authtime_nts_key_rotations_total",
            "counter",
            "Master-key rotations this server wrote to the key store.",
            &get(&m.rotations_published),
        );
        write_family(
            out,
            "authtime_nts_keystore_errors_total",
            "counter",
            "Key store operations that failed.",
            &get(&m.store_errors),
        );
        write_family(
            out,
            "authtime_nts_keystore_stale_rings_refused_total",
            "counter",
            "Times the key store held an earlier state of the master keys in force (a restored \
             snapshot, a replica promoted before it had the last writes), refused and \
             overwritten.",
            &get(&m.stale_rings_refused),
        );
        write_family(
            out,
            "authtime_nts_keystore_down",
            "gauge",
            "1 while the key store cannot be read, or cannot be written and lacks keys held \
             (the keys held are used).",
            &get(&m.store_down),
        );
    });
    Ok(keeper)
}

fn family_unavailable(e: &io::Error) -> bool {
    e.kind() == io::ErrorKind::AddrNotAvailable
        || e.raw_os_error() == Some(libc::EAFNOSUPPORT)
        || e.raw_os_error() == Some(libc::EADDRNOTAVAIL)
}

fn log_key_warnings(warnings: &[KeyFileWarning]) {
    for w in warnings {
        tracing::warn!("{w}");
    }
}

impl Running {
    /// The addresses served (ports resolved when 0 was asked for).
    #[must_use]
    pub fn listen_addrs(&self) -> &[SocketAddr] {
        &self.listen
    }

    /// The metrics endpoint, if any.
    #[must_use]
    pub fn metrics_addr(&self) -> Option<SocketAddr> {
        self.metrics_addr
    }

    /// Whether every socket got kernel receive timestamps (otherwise the
    /// clock is read right after each batch is received).
    #[must_use]
    pub fn kernel_timestamps(&self) -> bool {
        self.kernel_timestamps
    }

    /// Worker threads (and sockets) per listen address.
    #[must_use]
    pub fn workers_per_address(&self) -> usize {
        self.workers_per_address
    }

    /// The state of the clock served and its source.
    #[must_use]
    pub fn clock(&self) -> &ClockState {
        &self.clock
    }

    /// The counters.
    #[must_use]
    pub fn metrics(&self) -> &Metrics {
        &self.metrics
    }

    /// The NTS-KE addresses served (ports resolved), empty without NTS-KE.
    #[must_use]
    pub fn nts_ke_addrs(&self) -> &[SocketAddr] {
        self.nts_ke.as_ref().map_or(&[], |ke| &ke.local_addrs)
    }

    /// The Roughtime addresses (UDP and TCP on each, ports resolved), empty
    /// without Roughtime.
    #[must_use]
    pub fn roughtime_addrs(&self) -> &[SocketAddr] {
        self.roughtime.as_ref().map_or(&[], |(addrs, _)| addrs)
    }

    /// Where the Roughtime online key comes from, when Roughtime is served.
    #[must_use]
    pub fn roughtime_keys(&self) -> Option<&str> {
        self.roughtime.as_ref().map(|(_, keys)| keys.as_str())
    }

    /// What the AF_XDP path serves, when `[xdp]` is set.
    #[must_use]
    pub fn xdp_description(&self) -> Option<&str> {
        self.xdp
            .as_ref()
            .map(|(_, description)| description.as_str())
    }

    /// The NTS master keys, when NTS is configured.
    #[must_use]
    pub fn nts_keys(&self) -> Option<&Arc<RingKeeper>> {
        self.nts_keys.as_ref()
    }

    /// Reads the key file again; on success the workers use the new keys from
    /// their next batch, on failure the old keys stay. Logs either way.
    ///
    /// # Errors
    /// The file cannot be read or has a malformed line.
    pub fn reload_keys(&self) -> Result<usize, KeyFileError> {
        match self.keys.reload() {
            Ok((count, warnings)) => {
                log_key_warnings(&warnings);
                self.metrics.reloads_ok.fetch_add(1, Ordering::Relaxed);
                self.metrics
                    .keys_loaded
                    .store(count as u64, Ordering::Relaxed);
                tracing::info!(keys = count, "keys reloaded");
                Ok(count)
            }
            Err(e) => {
                self.metrics.reloads_failed.fetch_add(1, Ordering::Relaxed);
                tracing::error!("key reload failed, keeping the old keys: {e}");
                Err(e)
            }
        }
    }

    /// Serves until SIGTERM or SIGINT, reloading keys on SIGHUP, then stops
    /// the workers and returns.
    pub fn serve_until_signalled(self, mut signals: Signals) {
        for signal in signals.0.forever() {
            match signal {
                SIGHUP => {
                    let _ = crate::daemon::systemd_notify::notify("RELOADING=1");
                    if let Some(ke) = &self.nts_ke {
                        match ke.handle.reload() {
                            Ok(()) => tracing::info!("NTS-KE certificate reloaded"),
                            Err(e) => tracing::error!(
                                "NTS-KE certificate reload failed, keeping the old one: {e}"
                            ),
                        }
                        if let Some(balancer) = &ke.balancer {
                            // Logged and counted per backend inside.
                            let _ = balancer.reload_all();
                        }
                    }
                    if self.keys.source().is_none() {
                        tracing::info!("SIGHUP: no key file configured, nothing to reload");
                    } else {
                        let _ = self.reload_keys();
                    }
                    let _ = crate::daemon::systemd_notify::notify("READY=1");
                }
                _ => {
                    tracing::info!(signal, "stopping");
                    let _ = crate::daemon::systemd_notify::notify("STOPPING=1");
                    break;
                }
            }
        }
        self.shutdown();
    }

    /// Stops the workers and the metrics endpoint and waits for them (each
    /// notices within its receive timeout, 100 ms).
    pub fn shutdown(mut self) {
        self.stop_and_join();
        tracing::info!("stopped");
    }

    fn stop_and_join(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        for thread in self.threads.drain(..) {
            let _ = thread.join();
        }
        if let Some(ke) = self.nts_ke.take() {
            ke.handle.shutdown();
            let _ = ke.thread.join();
        }
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        self.stop_and_join();
    }
}

/// SIGTERM, SIGINT and SIGHUP, caught from the moment [`Signals::install`]
/// returns (install them before starting, so that none is missed).
pub struct Signals(signal_hook::iterator::Signals);

impl fmt::Debug for Signals {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Signals(TERM, INT, HUP)")
    }
}

impl Signals {
    /// Catches the signals.
    ///
    /// # Errors
    /// The handlers cannot be installed.
    pub fn install() -> io::Result<Self> {
        signal_hook::iterator::Signals::new([SIGTERM, SIGINT, SIGHUP]).map(Self)
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use authtime_keys::{KeyFileFormat, KeyMaterial, KeyType, write_key_file};
    use authtime_proto::{AuthStatus, ClientConfig, build_request};

    use super::*;
    use crate::ConfigFile;
    use crate::clock;

    #[test]
    fn serves_authenticated_time_reloads_and_stops() {
        let dir = std::env::temp_dir().join(format!("authtime-daemon-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("dir");
        let key_file = dir.join("chrony.keys");
        let keys = [KeyMaterial::new(7, KeyType::Aes128Cmac, &[7; 16])];
        let text = write_key_file(KeyFileFormat::Chrony, &keys).expect("text");
        std::fs::write(&key_file, text.as_bytes()).expect("write");
        let settings = ConfigFile::parse(&format!(
            "[ntp]\nlisten = [\"127.0.0.1:0\"]\nkeys = \"{}\"\nworkers = 2\n\
             [clock]\nsource = \"static\"\nstratum = 2\nreference-id = \"192.0.2.1\"\n",
            key_file.display()
        ))
        .expect("parses")
        .validate(None)
        .expect("valid");
        let running = start(&settings).expect("starts");
        let addr = running.listen_addrs()[0];
        assert_ne!(addr.port(), 0);

        let client = UdpSocket::bind("127.0.0.1:0").expect("bind");
        client
            .set_read_timeout(Some(Duration::from_secs(2)))
            .expect("timeout");
        let client_keys = authtime_keys::KeySet::new(&keys).expect("keys");
        let key = client_keys.get(7);
        let mut request = [0u8; 128];
        let (len, pending) =
            build_request(&ClientConfig::default(), clock::now(), key, &mut request).expect("req");
        client.send_to(&request[..len], addr).expect("send");
        let mut reply = [0u8; 128];
        let (n, _) = client.recv_from(&mut reply).expect("reply");
        let sample = pending
            .process_response(&reply[..n], clock::now())
            .expect("valid sample");
        assert_eq!(
            sample.auth,
            AuthStatus::SymmetricKey {
                key_id: 7,
                key_type: KeyType::Aes128Cmac
            }
        );
        assert!(
            sample.offset.abs() < 1.0 && sample.delay < 1.0,
            "{sample:?}"
        );
        assert_eq!(running.metrics().total().answered_authenticated, 1);

        std::fs::write(&key_file, "bad line\n").expect("write");
        assert!(running.reload_keys().is_err());
        assert_eq!(running.metrics().reloads_failed.load(Ordering::Relaxed), 1);
        running.shutdown();
        let _ = std::fs::remove_dir_all(&dir);
    }
}
