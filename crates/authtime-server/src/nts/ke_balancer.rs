//! The daemon's NTS-KE load balancer: [`authtime_ntske::Balancer`] built from
//! `[nts-ke-balancer]` (token files read here, CA files loaded), the reload of those
//! files ([`CredentialReloader`]: on SIGHUP, and when one changes), and its metrics.

use std::os::unix::fs::MetadataExt as _;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

use authtime_ntske::balancer::{BackendConfig, BalancerMetricsSnapshot};
use authtime_ntske::pool_client::PoolToken;
use authtime_ntske::pool_client_io::{BackendEndpoint, tls_server_name};
use authtime_ntske::pool_token_file::read_pool_token_file;
use authtime_ntske::tls_config::{ClientTlsConfig, client_config};
use authtime_ntske::{Balancer, BalancerConfig};

use crate::config::nts_balancer::{BackendSettings, BalancerSettings};
use crate::metrics::write_family;

/// The balancer of `settings`: tokens read (private files only), CA files loaded.
///
/// # Errors
/// A token or CA file cannot be used; the message names the file and the backend.
pub(crate) fn build(
    settings: &BalancerSettings,
    aead_algorithms: &[u16],
) -> Result<Arc<Balancer>, String> {
    let mut backends = Vec::with_capacity(settings.backends.len());
    for b in &settings.backends {
        let what = |e: String| format!("[nts-ke-balancer] backend {}: {e}", b.name);
        let (token, tls) = credentials(b).map_err(what)?;
        let tls_name = tls_server_name(&b.tls_name).map_err(what)?;
        backends.push(BackendConfig {
            name: b.name.clone(),
            endpoint: BackendEndpoint {
                host: b.host.clone(),
                port: b.port,
                tls_name,
                tls,
            },
            token,
            weight: b.weight,
            ntp_port: b.ntp_port,
        });
    }
    Balancer::new(BalancerConfig {
        backends,
        check_interval: settings.check_interval,
        timeout: settings.timeout,
        aead_algorithms: aead_algorithms.to_vec(),
    })
    .map(Arc::new)
    .map_err(|e| format!("[nts-ke-balancer]: {e}"))
}

/// A backend's token (its file private, one word) and TLS client configuration (its
/// CA file, or the public roots), both or neither.
///
/// # Errors
/// The file that cannot be used and why, never the token.
fn credentials(b: &BackendSettings) -> Result<(PoolToken, ClientTlsConfig), String> {
    let token = read_pool_token_file(&b.token_file).map_err(|e| e.to_string())?;
    let tls = client_config(b.ca_file.as_deref()).map_err(|e| match &b.ca_file {
        Some(path) => format!("CA file {}: {e}", path.display()),
        None => e.to_string(),
    })?;
    Ok((token, tls))
}

/// What tells a file was replaced or changed: modification time, size and mode
/// (`None` when it cannot be examined).
type Stamp = Option<(SystemTime, u64, u32)>;

fn stamp(path: &Path) -> Stamp {
    let m = std::fs::metadata(path).ok()?;
    Some((m.modified().ok()?, m.len(), m.mode()))
}

/// Stamps of a backend's token file and CA file (if any).
fn stamps(b: &BackendSettings) -> (Stamp, Option<Stamp>) {
    (stamp(&b.token_file), b.ca_file.as_deref().map(stamp))
}

/// Re-reads the backends' token and CA files into a running balancer, each backend
/// all or nothing: one whose new token or CA cannot be used keeps its previous ones;
/// the failure is logged (backend and file, never the token) and counted
/// (`authtime_kelb_reload_failures_total`).
#[derive(Debug)]
pub(crate) struct CredentialReloader {
    balancer: Arc<Balancer>,
    backends: Vec<BackendSettings>,
    /// Per backend, the stamps at its last load attempt.
    seen: Mutex<Vec<(Stamp, Option<Stamp>)>>,
}

impl CredentialReloader {
    /// A reloader of `settings`' files into `balancer` (built from them just now).
    pub(crate) fn new(balancer: Arc<Balancer>, settings: &BalancerSettings) -> Self {
        Self {
            balancer,
            seen: Mutex::new(settings.backends.iter().map(stamps).collect()),
            backends: settings.backends.clone(),
        }
    }

    /// Reloads every backend (SIGHUP). Returns how many backends failed.
    pub(crate) fn reload_all(&self) -> usize {
        (0..self.backends.len())
            .filter(|&i| !self.reload_backend(i))
            .count()
    }

    /// Reloads the backends whose token or CA file changed since the last attempt
    /// (skipping one with a file missing for now, as in the middle of a replacement).
    pub(crate) fn reload_if_changed(&self) {
        for (i, b) in self.backends.iter().enumerate() {
            let now = stamps(b);
            let changed = match self.seen.lock() {
                Ok(seen) => seen.get(i).is_some_and(|s| *s != now),
                Err(_) => false,
            };
            if changed && now.0.is_some() && now.1.is_none_or(|ca| ca.is_some()) {
                let _ = self.reload_backend(i);
            }
        }
    }

    /// Loads backend `i`'s files and swaps them in; false (logged and counted) when
    /// they cannot be used and the previous ones stay.
    fn reload_backend(&self, i: usize) -> bool {
        let Some(b) = self.backends.get(i) else {
            return false;
        };
        if let Ok(mut seen) = self.seen.lock()
            && let Some(s) = seen.get_mut(i)
        {
            *s = stamps(b);
        }
        let result = credentials(b).and_then(|(token, tls)| {
            self.balancer
                .replace_credentials(&b.name, token, tls)
                .map_err(|e| e.to_string())
        });
        match result {
            Ok(()) => {
                tracing::info!(backend = %b.name, "NTS-KE backend token and CA reloaded");
                true
            }
            Err(e) => {
                self.balancer.record_reload_failure();
                tracing::error!(
                    backend = %b.name,
                    "NTS-KE backend reload failed, keeping its previous token and CA: {e}"
                );
                false
            }
        }
    }
}

/// A label value with `\` and `"` escaped (backend names are host names, but the
/// configuration does not forbid either).
fn escaped(value: &str) -> String {
    value.replace('\\', "\\\\").replace('"', "\\\"")
}

/// The `authtime_kelb_` families.
pub(crate) fn render(out: &mut String, m: &BalancerMetricsSnapshot) {
    let mut requests = Vec::new();
    for b in &m.backends {
        let name = escaped(&b.name);
        for (outcome, n) in [
            ("ok", b.ok),
            ("backend_error", b.backend_error),
            ("connect_failed", b.connect_failed),
        ] {
            requests.push((format!("{{backend=\"{name}\",outcome=\"{outcome}\"}}"), n));
        }
    }
    requests.push((
        "{backend=\"\",outcome=\"no_backend\"}".to_owned(),
        m.no_backend,
    ));
    write_family(
        out,
        "authtime_kelb_requests_total",
        "counter",
        "NTS-KE requests the load balancer sent to a backend, by backend and outcome (ok: the \
         client got the backend's cookies; backend_error: the backend failed (or outlasted \
         the session timeout) after the client's keys were sent, the client got Internal \
         Server Error; connect_failed: \
         connecting to the backend failed, another was tried; no_backend: no backend was \
         up, the client got Internal Server Error).",
        &requests,
    );
    let labelled = |f: &dyn Fn(&authtime_ntske::balancer::BackendMetricsSnapshot) -> u64| {
        m.backends
            .iter()
            .map(|b| (format!("{{backend=\"{}\"}}", escaped(&b.name)), f(b)))
            .collect::<Vec<_>>()
    };
    write_family(
        out,
        "authtime_kelb_backend_up",
        "gauge",
        "1 when the backend's last health check (or connection) succeeded.",
        &labelled(&|b| u64::from(b.up)),
    );
    write_family(
        out,
        "authtime_kelb_backend_check_failures_total",
        "counter",
        "Health checks (Support queries) of the backend that failed.",
        &labelled(&|b| b.check_failures),
    );
    write_family(
        out,
        "authtime_kelb_reload_failures_total",
        "counter",
        "Reloads of a backend's token or CA file (on SIGHUP or a change) that failed; the \
         backend kept its previous token and CA.",
        &[(String::new(), m.reload_failures)],
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use authtime_ntske::balancer::BackendMetricsSnapshot;

    #[test]
    fn reloads_refuse_open_token_files_and_count_each_failed_backend() {
        use std::os::unix::fs::PermissionsExt as _;
        let dir = std::env::temp_dir().join(format!("authtime-kelb-reload-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("dir");
        let token_file = dir.join("token");
        std::fs::write(&token_file, "old-s3cret\n").expect("write");
        std::fs::set_permissions(&token_file, std::fs::Permissions::from_mode(0o600))
            .expect("chmod");
        let settings = BalancerSettings {
            check_interval: std::time::Duration::from_secs(10),
            timeout: std::time::Duration::from_secs(1),
            backends: vec![BackendSettings {
                name: "ntp1.example.net".into(),
                host: "127.0.0.1".into(),
                port: 4460,
                tls_name: "ke1.example.net".into(),
                ca_file: None,
                token_file: token_file.clone(),
                weight: 1,
                ntp_port: None,
            }],
        };
        let balancer = build(&settings, &[]).expect("builds");
        let reloader = CredentialReloader::new(Arc::clone(&balancer), &settings);
        assert_eq!(reloader.reload_all(), 0);
        reloader.reload_if_changed();
        assert_eq!(balancer.metrics().reload_failures, 0);
        // Readable by others: refused, counted once, not retried until it changes.
        std::fs::set_permissions(&token_file, std::fs::Permissions::from_mode(0o644))
            .expect("chmod");
        reloader.reload_if_changed();
        reloader.reload_if_changed();
        assert_eq!(balancer.metrics().reload_failures, 1);
        assert_eq!(reloader.reload_all(), 1);
        assert_eq!(balancer.metrics().reload_failures, 2);
        std::fs::write(&token_file, "new-s3cret\n").expect("write");
        std::fs::set_permissions(&token_file, std::fs::Permissions::from_mode(0o600))
            .expect("chmod");
        reloader.reload_if_changed();
        assert_eq!(balancer.metrics().reload_failures, 2);
        let shown = format!("{reloader:?} {balancer:?}");
        assert!(!shown.contains("s3cret"), "{shown}");
        std::fs::remove_dir_all(&dir).expect("cleanup");
    }

    #[test]
    fn families_have_a_sample_per_backend_and_outcome() {
        let m = BalancerMetricsSnapshot {
            backends: vec![BackendMetricsSnapshot {
                name: "a\"b".into(),
                up: true,
                ok: 3,
                backend_error: 1,
                connect_failed: 2,
                check_failures: 4,
            }],
            no_backend: 5,
            reload_failures: 6,
        };
        let mut out = String::new();
        render(&mut out, &m);
        for line in [
            "authtime_kelb_requests_total{backend=\"a\\\"b\",outcome=\"ok\"} 3",
            "authtime_kelb_requests_total{backend=\"a\\\"b\",outcome=\"backend_error\"} 1",
            "authtime_kelb_requests_total{backend=\"a\\\"b\",outcome=\"connect_failed\"} 2",
            "authtime_kelb_requests_total{backend=\"\",outcome=\"no_backend\"} 5",
            "authtime_kelb_backend_up{backend=\"a\\\"b\"} 1",
            "authtime_kelb_backend_check_failures_total{backend=\"a\\\"b\"} 4",
            "authtime_kelb_reload_failures_total 6",
        ] {
            assert!(out.lines().any(|l| l == line), "{line} not in\n{out}");
        }
    }
}
