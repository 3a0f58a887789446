//! The daemon's NTS-KE load balancer: [`authtime_ntske::Balancer`] built from
//! `[nts-ke-balancer]` (token files read here, CA files loaded), and its metrics.

use std::sync::Arc;

use authtime_ntske::balancer::{BackendConfig, BalancerMetricsSnapshot};
use authtime_ntske::pool_client::PoolToken;
use authtime_ntske::pool_client_io::{BackendEndpoint, tls_server_name};
use authtime_ntske::tls_config::client_config;
use authtime_ntske::{Balancer, BalancerConfig};

use crate::config::nts_balancer::{BalancerSettings, read_token_file};
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
        let token = read_token_file(&b.token_file).map_err(what)?;
        let token = PoolToken::new(&token)
            .map_err(|e| what(format!("pool token file {}: {e}", b.token_file.display())))?;
        let tls = client_config(b.ca_file.as_deref()).map_err(|e| what(e.to_string()))?;
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
}

#[cfg(test)]
mod tests {
    use super::*;
    use authtime_ntske::balancer::BackendMetricsSnapshot;

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
        ] {
            assert!(out.lines().any(|l| l == line), "{line} not in\n{out}");
        }
    }
}
