//! Section `nts`, TLS key exchange groups (issue 20): what the hybrid
//! post-quantum group costs an NTS-KE handshake. One authtime server, and
//! the same open-loop NTS-KE load offering either authtime's client groups
//! (X25519MLKEM768 first, which the server then negotiates) or X25519 alone
//! (a client without post-quantum key exchange), alternating group by group
//! in the same run so that both see the same machine. Per group: client-side
//! d_CKE and its handshake part, the server's CPU per handshake (its process
//! CPU time over the steps), the generator's CPU per handshake (this
//! process's), and the server's own count of the group negotiated
//! (`authtime_ntske_key_exchange_groups_total`), which checks the offer did
//! what it says.

use std::time::Duration;

use serde::Serialize;

use crate::{
    load_nts::{Generator, KeyExchangeOffer, Mode, NtsLoadOptions},
    load_nts_stats::Percentiles,
    report::Table,
    section_nts_server::{Certificates, NtsServer, scrape},
};

/// Sizes of the group comparison.
#[derive(Debug, Clone, Serialize)]
pub struct GroupPlan {
    /// NTS-KE sessions per second.
    pub rate: f64,
    /// Length of one step (one group, one round).
    pub step: Duration,
    /// Steps per group, alternating with the other group's.
    pub rounds: usize,
    /// Timeout of one session.
    pub timeout: Duration,
}

impl GroupPlan {
    /// The plan of `--quick` or of a full run.
    #[must_use]
    pub fn new(quick: bool) -> Self {
        Self {
            rate: 200.0,
            step: Duration::from_secs(if quick { 2 } else { 5 }),
            rounds: if quick { 3 } else { 5 },
            timeout: Duration::from_secs(2),
        }
    }

    /// A second or so, for tests: the figures mean nothing.
    #[must_use]
    pub fn smoke() -> Self {
        Self {
            rate: 40.0,
            step: Duration::from_millis(300),
            rounds: 1,
            timeout: Duration::from_secs(1),
        }
    }
}

/// One group's steps, pooled.
#[derive(Debug, Clone, Serialize)]
pub struct GroupRun {
    /// What the client offered.
    pub offer: KeyExchangeOffer,
    /// Sessions scheduled over all steps.
    pub scheduled: u64,
    /// Sessions that got keys and cookies.
    pub ok: u64,
    /// Sessions that failed.
    pub errors: u64,
    /// Connect to keys ready, over every successful session.
    pub d_cke: Percentiles,
    /// Median over the steps of the median TCP connect and TLS handshake part, µs.
    pub handshake_p50_us: f64,
    /// Server CPU per successful session, µs (`None`: not readable).
    pub server_cpu_us: Option<f64>,
    /// Generator CPU per successful session, µs.
    pub generator_cpu_us: f64,
    /// Handshakes the server counted under the offered group's name.
    pub negotiated: Option<u64>,
}

/// The server's count of handshakes that negotiated `group`.
fn negotiated(server: &NtsServer, group: &str) -> Option<u64> {
    let text = scrape(server.metrics?).ok()?;
    let sample = format!("authtime_ntske_key_exchange_groups_total{{group=\"{group}\"}} ");
    text.lines()
        .find_map(|l| l.strip_prefix(&sample)?.trim().parse().ok())
}

#[derive(Default)]
struct Pooled {
    scheduled: u64,
    ok: u64,
    errors: u64,
    samples: Vec<u32>,
    handshake_p50s: Vec<f64>,
    server_cpu_s: Option<f64>,
    generator_cpu_s: f64,
    negotiated: Option<u64>,
}

/// Runs the comparison against `server` (authtime, freshly started).
///
/// # Errors
/// A generator that cannot be made, or a server that died.
pub fn measure(
    server: &mut NtsServer,
    certs: &Certificates,
    plan: &GroupPlan,
) -> Result<Vec<GroupRun>, String> {
    let offers = KeyExchangeOffer::ALL;
    let mut pooled: Vec<Pooled> = offers.iter().map(|_| Pooled::default()).collect();
    for _ in 0..plan.rounds {
        for (offer, pool) in offers.iter().zip(&mut pooled) {
            server.check_alive()?;
            crate::section_nts::settle(server);
            let mut generator = Generator::new(NtsLoadOptions {
                ke_host: "localhost".into(),
                ke_port: server.ke.port(),
                ca: Some(certs.ca.clone()),
                ntp_target: None,
                mode: Mode::Ke,
                rate: plan.rate,
                duration: plan.step,
                timeout: plan.timeout,
                connections_max: 1000,
                sockets: 1,
                threads: 1,
                tls_resumption: false,
                key_exchange: *offer,
            })?;
            let (cpu0, counted0) = (server.cpu_seconds(), negotiated(server, offer.group_name()));
            let generator0 = crate::cpu_time::process_cpu_time();
            let step = generator.step(plan.rate, plan.step, true)?;
            pool.generator_cpu_s +=
                (crate::cpu_time::process_cpu_time().saturating_sub(generator0)).as_secs_f64();
            let (cpu1, counted1) = (server.cpu_seconds(), negotiated(server, offer.group_name()));
            server.check_alive()?;
            pool.server_cpu_s = match (pool.server_cpu_s, cpu0.zip(cpu1)) {
                (sum, Some((a, b))) => Some(sum.unwrap_or(0.0) + (b - a)),
                _ => None,
            };
            pool.negotiated = match (pool.negotiated, counted0.zip(counted1)) {
                (sum, Some((a, b))) => Some(sum.unwrap_or(0) + (b - a)),
                _ => None,
            };
            pool.scheduled += step.scheduled;
            pool.ok += step.ke_ok;
            pool.errors += step.ke_errors.total();
            pool.handshake_p50s.push(step.ke_handshake.p50_us);
            pool.samples.extend_from_slice(&step.d_cke.samples_us);
        }
    }
    Ok(offers
        .iter()
        .zip(pooled)
        .map(|(offer, p)| {
            let per = |seconds: f64| seconds * 1e6 / p.ok.max(1) as f64;
            GroupRun {
                offer: *offer,
                scheduled: p.scheduled,
                ok: p.ok,
                errors: p.errors,
                d_cke: Percentiles::of(p.samples, false),
                handshake_p50_us: median(p.handshake_p50s),
                server_cpu_us: p.server_cpu_s.map(per),
                generator_cpu_us: per(p.generator_cpu_s),
                negotiated: p.negotiated,
            }
        })
        .collect())
}

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values.get(values.len() / 2).copied().unwrap_or(0.0)
}

/// The report's table: a row per group.
#[must_use]
pub fn table(runs: &[GroupRun], plan: &GroupPlan) -> Table {
    let mut t = Table::new(
        "NTS-KE TLS key exchange groups (issue 20)",
        &[
            "group",
            "client offers",
            "sessions ok",
            "negotiated (server count)",
            "d_CKE p50",
            "d_CKE p99",
            "handshake p50",
            "server CPU / session",
            "generator CPU / session",
        ],
    );
    let us = |v: f64| format!("{v:.0} µs");
    for r in runs {
        t.row(vec![
            r.offer.group_name().into(),
            match r.offer {
                KeyExchangeOffer::X25519Mlkem768 => {
                    "X25519MLKEM768, X25519, secp256r1, secp384r1".into()
                }
                KeyExchangeOffer::X25519 => "X25519".into(),
            },
            format!("{}/{}", r.ok, r.scheduled),
            r.negotiated.map_or("no metrics".into(), |n| n.to_string()),
            us(r.d_cke.p50_us),
            us(r.d_cke.p99_us),
            us(r.handshake_p50_us),
            r.server_cpu_us.map_or("n/a".into(), us),
            us(r.generator_cpu_us),
        ]);
    }
    t.note = format!(
        "Method: one `authtime serve` (1 NTS-KE worker, CA-signed P-256 leaf), an open-loop NTS-KE load of {:.0} sessions/s, \
         {} step(s) of {:.1} s per group, the groups alternating step by step in the same run; every session a full TLS 1.3 \
         handshake (no resumption), the chain check remembered, every signature verified. authtime's client offers \
         X25519MLKEM768 first and sends its X25519 share alongside; the other client offers X25519 alone. d_CKE: TCP connect \
         to keys ready, client-side, percentiles by nearest rank over all steps; handshake: its connect and TLS part (median \
         of the steps' medians). CPU per session: process CPU time over the steps (the server's, and this generator's) \
         divided by the successful sessions. The server's count is `authtime_ntske_key_exchange_groups_total{{group=...}}` \
         over the steps.",
        plan.rate,
        plan.rounds,
        plan.step.as_secs_f64()
    );
    t
}
