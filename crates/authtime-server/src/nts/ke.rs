//! The daemon's NTS-KE server: [`authtime_ntske::KeServer`] on a tokio
//! runtime of its own threads, issuing cookies sealed under the master key
//! in force, with its counters and its d_SKE histogram in the metrics.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;

use authtime_nts::{AeadAlgorithm, SessionKeys, seal_cookie};
use authtime_ntske::{
    CookieIssueError, CookieIssuer, KeResponder, KeServer, KeServerConfig, KeServerHandle,
    ServerCoreConfig,
    metrics::{
        KEY_EXCHANGE_GROUPS, KeMetricsSnapshot, POOL_OUTCOMES, POOL_REQUEST_KINDS,
        bucket_upper_bound_us,
    },
};

use crate::config::NtsKeSettings;
use crate::metrics::clients::{Outcome, Protocol};
use crate::metrics::{Metrics, label_set, write_family};
use crate::nts::keys::{RingKeeper, unix_now};

/// Seals cookies under the ring's current key.
#[derive(Debug)]
struct RingCookies {
    keeper: Arc<RingKeeper>,
}

impl CookieIssuer for RingCookies {
    fn issue(
        &self,
        aead_id: u16,
        c2s: &[u8],
        s2c: &[u8],
        count: usize,
    ) -> Result<Vec<Vec<u8>>, CookieIssueError> {
        let algorithm = AeadAlgorithm::from_id(aead_id)
            .ok_or_else(|| CookieIssueError(format!("AEAD {aead_id} not supported")))?;
        let keys = SessionKeys::new(algorithm, c2s, s2c)
            .map_err(|e| CookieIssueError(format!("session keys: {e}")))?;
        let ring = self.keeper.current();
        let master = ring
            .sealing_key(unix_now())
            .ok_or_else(|| CookieIssueError("no master key".into()))?;
        let mut rng = |buf: &mut [u8]| {
            if getrandom::fill(buf).is_err() {
                buf.fill(0);
            }
        };
        (0..count)
            .map(|_| {
                let mut cookie = vec![0u8; authtime_nts::cookie::MAX_COOKIE_LEN];
                let len = seal_cookie(master, &keys, &mut rng, &mut cookie)
                    .map_err(|e| CookieIssueError(e.to_string()))?;
                cookie.truncate(len);
                Ok(cookie)
            })
            .collect()
    }
}

/// A running NTS-KE server.
#[derive(Debug)]
pub(crate) struct RunningKe {
    pub(crate) local_addrs: Vec<SocketAddr>,
    pub(crate) handle: KeServerHandle,
    pub(crate) thread: JoinHandle<()>,
    /// As a pool load balancer: the reload of the backends' token and CA files.
    pub(crate) balancer: Option<Arc<crate::nts::ke_balancer::CredentialReloader>>,
}

/// Binds every NTS-KE address and starts serving on `settings.workers`
/// threads; the metrics endpoint gets the server's counters.
///
/// # Errors
/// The certificate or key cannot be loaded, an address cannot be bound, or
/// the runtime cannot start: the message says which.
pub(crate) fn start(
    settings: &NtsKeSettings,
    ntp_addrs: &[SocketAddr],
    keeper: Arc<RingKeeper>,
    metrics: &Metrics,
    stop: Arc<AtomicBool>,
) -> Result<RunningKe, String> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(settings.workers)
        .thread_name("nts-ke")
        .on_thread_start(|| {
            // Time requests first: see thread_priority.rs. A refusal only
            // costs NTP latency under a handshake burst.
            if let Err(e) = crate::daemon::thread_priority::set_current_thread_nice(
                crate::daemon::thread_priority::NTS_KE_NICE,
            ) {
                tracing::debug!("cannot lower the NTS-KE thread's priority: {e}");
            }
        })
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start the NTS-KE runtime: {e}"))?;
    let mut config = KeServerConfig::new(
        settings.listen.clone(),
        settings.certificate_chain.clone(),
        settings.private_key.clone(),
    );
    config.max_connections = settings.max_connections;
    config.client_limits = settings.client_limits;
    config.handshake_timeout = settings.handshake_timeout;
    config.session_timeout = settings.session_timeout;
    config.reload_poll_interval = settings.certificate_check_interval;
    config.pool_token_files = settings.pool_token_files.clone();
    if let Some(clients) = metrics.clients().cloned() {
        config.connection_observer = Some(authtime_ntske::ConnectionObserver(Arc::new(
            move |ip, verdict| {
                let outcome = match verdict {
                    authtime_ntske::ConnectionVerdict::Accepted => Outcome::Served,
                    authtime_ntske::ConnectionVerdict::Limited => Outcome::Limited,
                    authtime_ntske::ConnectionVerdict::Refused => Outcome::Refused,
                };
                let now = u64::try_from(crate::clock::now_unix().secs).unwrap_or(0);
                clients.record(now, ip, Protocol::NtsKe, outcome);
            },
        )));
    }
    config.core = ServerCoreConfig {
        aead_algorithms: settings.aead_ids.clone(),
        ntp_server: settings.ntp_server.clone(),
        ntp_port: settings.ntp_port.or_else(|| {
            ntp_addrs
                .first()
                .map(SocketAddr::port)
                .filter(|p| *p != crate::config::NTP_PORT)
        }),
        ..ServerCoreConfig::default()
    };
    let mut reloader = None;
    let server = match &settings.balancer {
        None => {
            let issuer = Arc::new(RingCookies { keeper });
            runtime.block_on(KeServer::bind(config, issuer))
        }
        Some(balancer_settings) => {
            let balancer = crate::nts::ke_balancer::build(balancer_settings, &settings.aead_ids)?;
            // One round of health checks before serving, so that the first clients
            // find the backends up (each check is bounded by the balancer's timeout).
            runtime.block_on(balancer.check_all());
            let watched = Arc::clone(&balancer);
            metrics.add_renderer(move |out| {
                crate::nts::ke_balancer::render(out, &watched.metrics());
            });
            // Token and CA files: re-read on SIGHUP (see daemon) and, like the
            // certificate, when they change (checked every certificate-check-interval).
            let files = Arc::new(crate::nts::ke_balancer::CredentialReloader::new(
                Arc::clone(&balancer),
                balancer_settings,
            ));
            if let Some(interval) = settings.certificate_check_interval {
                let files = Arc::clone(&files);
                runtime.spawn(async move {
                    loop {
                        tokio::time::sleep(interval).await;
                        files.reload_if_changed();
                    }
                });
            }
            reloader = Some(files);
            runtime.block_on(KeServer::bind_responder(
                config,
                KeResponder::Balancer(balancer),
            ))
        }
    }
    .map_err(|e| e.to_string())?;
    let local_addrs = server.local_addrs().to_vec();
    let handle = server.handle();
    let watched = handle.clone();
    metrics.add_renderer(move |out| render(out, &watched.metrics(), watched.active_connections()));
    let stopper = handle.clone();
    let thread = std::thread::Builder::new()
        .name("nts-ke-main".into())
        .spawn(move || {
            runtime.block_on(async move {
                let serving = tokio::spawn(server.run());
                while !stop.load(Ordering::Relaxed) {
                    tokio::time::sleep(std::time::Duration::from_millis(100)).await;
                }
                stopper.shutdown();
                let _ = serving.await;
            });
        })
        .map_err(|e| format!("cannot start the NTS-KE thread: {e}"))?;
    Ok(RunningKe {
        local_addrs,
        handle,
        thread,
        balancer: reloader,
    })
}

/// The NTS-KE families of the Prometheus exposition.
fn render(out: &mut String, m: &KeMetricsSnapshot, active: usize) {
    let outcomes = [
        ("ok", m.handshakes_ok),
        ("tls_error", m.tls_errors),
        ("timeout", m.timeouts),
        ("bad_request", m.bad_requests),
        ("refused_at_cap", m.refused_at_cap),
        ("rate_limited", m.rate_limited),
        ("too_many_from_source", m.too_many_from_source),
        ("internal_error", m.internal_errors),
        ("no_common_algorithm", m.no_common_algorithm),
    ];
    let samples: Vec<_> = outcomes
        .iter()
        .map(|(name, n)| (label_set("outcome", name), *n))
        .collect();
    write_family(
        out,
        "authtime_ntske_sessions_total",
        "counter",
        "NTS-KE connections by outcome (refused_at_cap, rate_limited, too_many_from_source: closed at once, before TLS, for the connection cap, the client's handshake rate or its open connections).",
        &samples,
    );
    let groups: Vec<_> = KEY_EXCHANGE_GROUPS
        .iter()
        .zip(m.key_exchange_groups)
        .map(|(group, n)| (label_set("group", group), n))
        .collect();
    write_family(
        out,
        "authtime_ntske_key_exchange_groups_total",
        "counter",
        "Completed NTS-KE TLS handshakes by negotiated key exchange group (X25519MLKEM768: hybrid post-quantum; X25519, secp256r1, secp384r1: classical, for clients without it).",
        &groups,
    );
    write_family(
        out,
        "authtime_ntske_cookies_issued_total",
        "counter",
        "Cookies sent in NTS-KE responses.",
        &[(String::new(), m.cookies_issued)],
    );
    write_family(
        out,
        "authtime_ntske_certificate_reload_failures_total",
        "counter",
        "Certificate reloads that failed (the previous certificate stays).",
        &[(String::new(), m.reload_failures)],
    );
    // Absent while the chain's validity could not be read (never for a chain
    // rustls accepted in the tests; see authtime_ntske::cert_expiry).
    if m.certificate_not_after > 0 {
        write_family(
            out,
            "authtime_ntske_certificate_expiry_timestamp_seconds",
            "gauge",
            "When the certificate chain in use stops being valid: its earliest notAfter, in seconds since the Unix epoch (updated on every reload).",
            &[(String::new(), m.certificate_not_after)],
        );
    }
    let mut pool = Vec::with_capacity(POOL_REQUEST_KINDS.len() * POOL_OUTCOMES.len());
    for kind in POOL_REQUEST_KINDS {
        for outcome in POOL_OUTCOMES {
            pool.push((
                format!(
                    "{{kind=\"{}\",outcome=\"{}\"}}",
                    kind.label(),
                    outcome.label()
                ),
                m.pool_requests_of(kind, outcome),
            ));
        }
    }
    write_family(
        out,
        "authtime_ntske_pool_requests_total",
        "counter",
        "NTS-KE requests with NTS pool queries (pool-token-files), by kind (fixed_key, support) and outcome (ok; bad_request: authenticated but malformed; not_authorized: no valid token, answered Error 0; internal_error).",
        &pool,
    );
    write_family(
        out,
        "authtime_ntske_pool_keep_alive_requests_total",
        "counter",
        "NTS-KE requests read on connections a pool load balancer kept alive (the first request of each connection not counted).",
        &[(String::new(), m.pool_keep_alive_requests)],
    );
    write_family(
        out,
        "authtime_ntske_pool_token_reload_failures_total",
        "counter",
        "Pool token file reloads that failed (the previous tokens stay).",
        &[(String::new(), m.pool_token_reload_failures)],
    );
    write_family(
        out,
        "authtime_ntske_active_connections",
        "gauge",
        "NTS-KE connections being served.",
        &[(String::new(), active as u64)],
    );
    // d_SKE: request received to response ready, as a Prometheus histogram
    // (cumulative buckets, seconds).
    let name = "authtime_ntske_response_seconds";
    let _ = std::fmt::Write::write_fmt(
        out,
        format_args!(
            "# HELP {name} NTS-KE request received to response ready (d_SKE of the NTS paper).\n\
             # TYPE {name} histogram\n"
        ),
    );
    let mut cumulative = 0;
    for (i, n) in m.latency_buckets.iter().enumerate() {
        cumulative += n;
        let le = if i + 1 == m.latency_buckets.len() {
            "+Inf".to_owned()
        } else {
            format!("{}", bucket_upper_bound_us(i) as f64 / 1e6)
        };
        let _ = std::fmt::Write::write_fmt(
            out,
            format_args!("{name}_bucket{{le=\"{le}\"}} {cumulative}\n"),
        );
    }
    let _ = std::fmt::Write::write_fmt(
        out,
        format_args!(
            "{name}_sum {}\n{name}_count {}\n",
            m.latency_sum_us as f64 / 1e6,
            m.latency_count
        ),
    );
}
