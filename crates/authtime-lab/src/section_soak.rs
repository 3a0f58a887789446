//! Section `soak` (issue 29): the real `authtime serve` with NTP (plain and
//! symmetric-key MACs), NTS-KE and NTS, and Roughtime on loopback, its NTS
//! master keys in a real Redis started here with a short rotation interval,
//! under steady load of every protocol, through a schedule of faults
//! (SIGHUP, certificate replacement, malformed packets of every kind, an
//! NTS-KE reconnect flood, more clients than the rate limiter's table holds,
//! Redis stopped and started again). It samples the daemon's RSS, open file
//! descriptors, threads and every `authtime_*` counter, and ends with a
//! verdict ([`verdict`]) that a leak, a panic, an error counter that no
//! injected fault explains or a lost valid cookie turns into FAIL.
//!
//! Every process started here is killed when its guard is dropped; every
//! loop is bounded in count and time; all traffic stays on 127.0.0.0/8.

use crate::{
    Progress,
    load_ntp::{self, LoadOptions},
    load_nts::{Generator, KeyExchangeOffer, Mode, NtsLoadOptions},
    load_roughtime::{self, RoughtimeLoadOptions, Version},
    plot::{Plot, Series},
    report::{Section, Table},
    section_nts_server::{Scratch, free_tcp_port},
};
use std::{
    fs,
    sync::{
        Arc, Mutex,
        atomic::{AtomicBool, Ordering},
    },
    time::{Duration, Instant},
};

use crate::soak_processes::*;
pub use crate::soak_verdict::*;

/// What a soak run does.
#[derive(Debug, Clone)]
pub struct SoakOptions {
    /// Whole run.
    pub duration: Duration,
    /// Seconds between samples.
    pub sample_every: Duration,
    /// The part of the run before the flatness baseline is taken.
    pub warmup: Duration,
    /// Length of one cycle of the fault schedule (repeated until 85 % of the run).
    pub cycle: Duration,
    /// NTS master-key rotation interval, seconds (30 old keys are kept:
    /// cookies live 30 intervals, longer than the oldest cookie the NTS load
    /// generator's FIFO pool of up to 4096 hands out at these rates).
    pub rotation_s: u64,
    /// Requests per second of each steady load.
    pub rate: f64,
    /// Seconds after a fault ends during which its effects still count as its own.
    pub grace: Duration,
}

impl SoakOptions {
    /// `--quick`: about two and a half minutes; otherwise `duration` (one hour by default).
    #[must_use]
    pub fn new(quick: bool, duration: Option<Duration>) -> Self {
        if quick {
            let duration = duration.unwrap_or(Duration::from_secs(150));
            Self {
                duration,
                sample_every: Duration::from_secs(2),
                warmup: duration / 5,
                cycle: duration.mul_f64(0.6),
                rotation_s: 10,
                rate: 20.0,
                grace: Duration::from_secs(6),
            }
        } else {
            let duration = duration.unwrap_or(Duration::from_secs(3600));
            Self {
                duration,
                sample_every: Duration::from_secs(5),
                warmup: Duration::from_secs(120).min(duration / 5),
                cycle: Duration::from_secs(300).min(duration.mul_f64(0.6)),
                rotation_s: 30,
                rate: 50.0,
                grace: Duration::from_secs(10),
            }
        }
    }
}

/// Runs the soak and returns its section (the verdict in its findings and data).
///
/// # Errors
/// When the daemon, Redis or the files cannot be set up.
#[allow(clippy::too_many_lines, reason = "one straight schedule")]
pub fn run(opts: &SoakOptions, progress: &mut Progress<'_>) -> Result<Section, String> {
    let dir = Scratch::new()?;
    let d = dir.path("");
    let dstr = d.display().to_string();
    progress.step("soak: keys, certificates, Redis", 0, 3);
    for prefix in ["a", "b"] {
        authtime(&[
            "nts",
            "cert",
            "--name",
            "localhost",
            "--ip",
            "127.0.0.1",
            "--prefix",
            prefix,
            "--out-dir",
            &dstr,
        ])?;
    }
    let both_ca = dir.path("ca-both.pem");
    let ca_text = [
        fs::read_to_string(dir.path("a-ca.pem")).map_err(|e| e.to_string())?,
        fs::read_to_string(dir.path("b-ca.pem")).map_err(|e| e.to_string())?,
    ]
    .concat();
    fs::write(&both_ca, ca_text).map_err(|e| e.to_string())?;
    replace_file(&dir.path("a-chain.pem"), &dir.path("chain.pem"))?;
    replace_file(&dir.path("a-key.pem"), &dir.path("key.pem"))?;
    let keygen = authtime(&[
        "roughtime",
        "keygen",
        "--out",
        &dir.path("lt.key").display().to_string(),
    ])?;
    let public = keygen
        .lines()
        .find_map(|l| l.strip_prefix("public key (hex): "))
        .ok_or("no Roughtime public key")?;
    let public_key = load_roughtime::parse_public_key(public)?;
    let mac_key = [0x5au8; 16];
    let hex: String = mac_key.iter().map(|b| format!("{b:02x}")).collect();
    fs::write(dir.path("ntp.keys"), format!("1 AES128 HEX:{hex}\n")).map_err(|e| e.to_string())?;
    let key_path = dir.path("ntp.keys");
    authtime_keys::KeySet::load(&key_path, None).map_err(|e| format!("ntp.keys: {e}"))?;

    let mut redis = RedisSet::start(
        &dir.path(""),
        [free_tcp_port()?, free_tcp_port()?],
        free_tcp_port()?,
    )?;
    let config = dir.path("serve.toml");
    fs::write(
        &config,
        format!(
            "[ntp]\nlisten = [\"127.0.0.1:0\"]\nworkers = 1\nkeys = \"{d}ntp.keys\"\n\
             interleaved-table-size = 64\n\
             [rate-limit]\nenabled = true\nrate = 10000\nburst = 10000\ntable-size = 64\n\
             {}\
             [nts-ke]\nlisten = [\"127.0.0.1:0\"]\ncertificate-chain = \"{d}chain.pem\"\n\
             private-key = \"{d}key.pem\"\nworkers = 1\nmax-connections = 128\n\
             client-rate = 50\nclient-burst = 200\nclient-table-size = 64\n\
             [keystore]\nkind = \"redis\"\nurl = \"{}\"\n\
             rotation-interval = {}\nold-keys = 30\npoll-interval = 0.5\n\
             [roughtime]\nlisten = [\"127.0.0.1:0\"]\nlong-term-key = \"{d}lt.key\"\n\
             online-key-lifetime = 60\nrate-limit = 0\n\
             [metrics]\nlisten = \"127.0.0.1:0\"\n",
            crate::section_ntp::LAB_CLOCK,
            redis.url("soak"),
            opts.rotation_s,
            d = d.display().to_string().trim_end_matches('/').to_owned() + "/",
        ),
    )
    .map_err(|e| e.to_string())?;
    progress.step("soak: starting authtime serve", 1, 3);
    let mut daemon = start_daemon(&config, &dir.path("serve.log"))?;
    // The keys as they are at the start, for the outage that restores them.
    let first_ring = Instant::now() + Duration::from_secs(10);
    while !redis.holds("soak") && Instant::now() < first_ring {
        std::thread::sleep(Duration::from_millis(100));
    }
    redis.take_snapshot()?;
    let pid = daemon.guard.0.id();

    let started = Instant::now();
    let t = move || started.elapsed().as_secs_f64();
    let stop = Arc::new(AtomicBool::new(false));
    let chunks: Arc<Mutex<Vec<LoadChunk>>> = Arc::new(Mutex::new(Vec::new()));
    let chunk_len = Duration::from_secs(5);
    let end = opts.duration;
    let mut loaders = Vec::new();
    // Plain NTP and NTP with MACs.
    for (name, with_key) in [("ntp", false), ("ntp-mac", true)] {
        let (stop, chunks, target, rate, key_path) = (
            stop.clone(),
            chunks.clone(),
            daemon.ntp,
            opts.rate,
            key_path.clone(),
        );
        loaders.push(std::thread::spawn(move || {
            let keys = authtime_keys::KeySet::load(&key_path, None)
                .ok()
                .map(|k| k.0);
            let key = keys.as_ref().and_then(|k| k.get(1));
            while !stop.load(Ordering::Relaxed) && started.elapsed() + chunk_len <= end {
                let t0 = t();
                let mut o = LoadOptions::new(target, rate, chunk_len);
                o.drain = Duration::from_millis(500);
                let r = load_ntp::run(&o, if with_key { key } else { None });
                let c = match r {
                    Ok(r) => LoadChunk {
                        load: name,
                        start_s: t0,
                        end_s: t(),
                        sent: r.sent,
                        answered: r.received.saturating_sub(r.kisses + r.crypto_naks),
                        cookie_failures: 0,
                        error: None,
                        ke: None,
                    },
                    Err(e) => LoadChunk::failed(name, t0, t(), e),
                };
                chunks.lock().expect("chunks").push(c);
            }
        }));
    }
    // NTS: cookies from NTS-KE, one key exchange every 20 exchanges.
    {
        let (stop, chunks, ke, rate, ca) = (
            stop.clone(),
            chunks.clone(),
            daemon.ke,
            opts.rate,
            both_ca.clone(),
        );
        loaders.push(std::thread::spawn(move || {
            let nts_opts = NtsLoadOptions {
                ke_host: "localhost".into(),
                ke_port: ke.port(),
                ca: Some(ca),
                ntp_target: None,
                mode: Mode::Nts { ntp_per_ke: 20 },
                rate,
                duration: chunk_len,
                timeout: Duration::from_secs(1),
                connections_max: 16,
                sockets: 1,
                threads: 1,
                tls_resumption: false,
                key_exchange: KeyExchangeOffer::X25519Mlkem768,
            };
            let mut generator = None;
            while !stop.load(Ordering::Relaxed) && started.elapsed() + chunk_len <= end {
                let t0 = t();
                if generator.is_none() {
                    match Generator::new(nts_opts.clone()) {
                        Ok(g) => generator = Some(g),
                        Err(e) => {
                            chunks.lock().expect("chunks").push(LoadChunk::failed(
                                "nts",
                                t0,
                                t(),
                                e,
                            ));
                            std::thread::sleep(Duration::from_secs(1));
                            continue;
                        }
                    }
                }
                let Some(g) = generator.as_mut() else { break };
                let c = match g.step(rate, chunk_len, false) {
                    Ok(r) => LoadChunk {
                        load: "nts",
                        start_s: t0,
                        end_s: t(),
                        sent: r.scheduled,
                        answered: r.ntp_ok,
                        cookie_failures: r.ntp_errors.nak + r.ntp_errors.bad_auth,
                        error: None,
                        ke: Some((r.ke_ok, r.ke_errors.breakdown())),
                    },
                    Err(e) => {
                        generator = None;
                        LoadChunk::failed("nts", t0, t(), e)
                    }
                };
                chunks.lock().expect("chunks").push(c);
            }
        }));
    }
    // Roughtime: a bounded number of requests per chunk, one outstanding.
    {
        let (stop, chunks, target, rate) =
            (stop.clone(), chunks.clone(), daemon.roughtime, opts.rate);
        loaders.push(std::thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) && started.elapsed() + chunk_len <= end {
                let t0 = t();
                let o = RoughtimeLoadOptions {
                    target,
                    public_key,
                    versions: vec![Version::Draft12, Version::Rfc1],
                    window: 1,
                    duration: chunk_len,
                    max_requests: (rate * chunk_len.as_secs_f64()) as u64,
                    verify_every: 10,
                    pool: 64,
                };
                let c = match load_roughtime::run(&o) {
                    Ok(r) => LoadChunk {
                        load: "roughtime",
                        start_s: t0,
                        end_s: t(),
                        sent: r.sent,
                        answered: r.received,
                        cookie_failures: r.verify_failed,
                        error: None,
                        ke: None,
                    },
                    Err(e) => LoadChunk::failed("roughtime", t0, t(), e),
                };
                chunks.lock().expect("chunks").push(c);
                let left = (t0 + chunk_len.as_secs_f64() - t()).max(0.0);
                std::thread::sleep(Duration::from_secs_f64(left));
            }
        }));
    }

    // The schedule.
    let mut schedule = Vec::new();
    let quiet_from = end.as_secs_f64() * 0.85;
    for k in 0..1000u32 {
        let base = opts.warmup.as_secs_f64() + f64::from(k) * opts.cycle.as_secs_f64();
        if base >= quiet_from {
            break;
        }
        for (offset, kind) in FaultKind::CYCLE {
            let at = base + offset * opts.cycle.as_secs_f64();
            if at < quiet_from {
                schedule.push((at, kind));
            }
        }
    }
    progress.step(
        &format!(
            "soak: {} s of load, {} faults, samples every {} s",
            end.as_secs(),
            schedule.len(),
            opts.sample_every.as_secs()
        ),
        2,
        3,
    );
    let mut faults = Vec::new();
    let mut samples = Vec::new();
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15 ^ u64::from(pid));
    let mut next_sample = 0.0;
    let mut next_fault = 0;
    let mut alive = true;
    while started.elapsed() < end {
        if matches!(daemon.guard.0.try_wait(), Ok(Some(_))) {
            alive = false;
            break;
        }
        let now = t();
        if now >= next_sample {
            if let Some((rss_kib, fds, threads, run_wait_ms)) = proc_sample(pid) {
                samples.push(Sample {
                    t_s: now,
                    rss_kib,
                    fds,
                    threads,
                    run_wait_ms,
                    counters: scrape(daemon.metrics),
                });
            }
            next_sample = now + opts.sample_every.as_secs_f64();
        }
        if let Some(&(at, kind)) = schedule.get(next_fault)
            && now >= at
        {
            next_fault += 1;
            let start_s = t();
            let detail = match kind {
                FaultKind::Sighup => format!("SIGHUP sent: {}", sighup(pid)),
                FaultKind::CertReplace => {
                    // Alternate between the two CAs' leaves.
                    let from = if faults
                        .iter()
                        .filter(|f: &&Fault| f.kind == FaultKind::CertReplace)
                        .count()
                        % 2
                        == 0
                    {
                        "b"
                    } else {
                        "a"
                    };
                    let r = replace_file(
                        &dir.path(&format!("{from}-chain.pem")),
                        &dir.path("chain.pem"),
                    )
                    .and_then(|()| {
                        replace_file(&dir.path(&format!("{from}-key.pem")), &dir.path("key.pem"))
                    });
                    format!(
                        "chain and key replaced by CA {from}'s ({}), SIGHUP sent: {}",
                        if r.is_ok() { "ok" } else { "failed" },
                        sighup(pid)
                    )
                }
                FaultKind::Malformed => malformed(&daemon, &mut rng),
                FaultKind::KeFlood => ke_flood(&daemon),
                FaultKind::ManyClients => many_clients(&daemon),
                // The first outage restores an earlier snapshot, the next
                // one starts empty, and so on.
                FaultKind::RedisRestart => redis.outage(
                    faults
                        .iter()
                        .filter(|f: &&Fault| f.kind == FaultKind::RedisRestart)
                        .count()
                        % 2
                        == 0,
                ),
                FaultKind::RedisFailover => redis.failover(),
            };
            faults.push(Fault {
                kind,
                start_s,
                end_s: t(),
                detail,
            });
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    stop.store(true, Ordering::Relaxed);
    for l in loaders {
        let _ = l.join();
    }
    if alive && let Some((rss_kib, fds, threads, run_wait_ms)) = proc_sample(pid) {
        samples.push(Sample {
            t_s: t(),
            rss_kib,
            fds,
            threads,
            run_wait_ms,
            counters: scrape(daemon.metrics),
        });
    }
    alive = alive && matches!(daemon.guard.0.try_wait(), Ok(None));
    let log = fs::read_to_string(&daemon.log).unwrap_or_default();
    let panicked = log.contains("panicked");
    let loads = chunks.lock().expect("chunks").clone();
    let rules = Rules::DEFAULT;
    let v = verdict(
        &rules,
        opts.warmup.as_secs_f64(),
        opts.grace.as_secs_f64(),
        &samples,
        &faults,
        &loads,
        panicked,
        alive,
    );
    drop(daemon);
    drop(redis);
    let mut section = section(opts, &rules, &samples, &faults, &loads, &v);
    // The daemon's log goes with the report: the scratch directory does not stay.
    let lines: Vec<&str> = log.lines().collect();
    section.data["daemon_log_tail"] =
        serde_json::json!(lines[lines.len().saturating_sub(300)..].join("\n"));
    Ok(section)
}

fn section(
    opts: &SoakOptions,
    rules: &Rules,
    samples: &[Sample],
    faults: &[Fault],
    loads: &[LoadChunk],
    v: &Verdict,
) -> Section {
    let mut flat = Table::new(
        "Daemon resources: after warm-up and at the end",
        &[
            "measure",
            "first sample",
            "after warm-up",
            "end",
            "allowed end",
        ],
    );
    let first = samples.first();
    let fmt = |x: Option<u64>| x.map_or("-".to_owned(), |x| x.to_string());
    if let (Some(b), Some(e)) = (v.baseline, v.end) {
        let allowed_rss = b.0 + ((b.0 as f64 * rules.rss_share) as u64).max(rules.rss_kib);
        flat.row(vec![
            "RSS (KiB)".into(),
            fmt(first.map(|s| s.rss_kib)),
            b.0.to_string(),
            e.0.to_string(),
            allowed_rss.to_string(),
        ]);
        flat.row(vec![
            "open fds".into(),
            fmt(first.map(|s| s.fds)),
            b.1.to_string(),
            e.1.to_string(),
            (b.1 + rules.fds).to_string(),
        ]);
        flat.row(vec![
            "threads".into(),
            fmt(first.map(|s| s.threads)),
            b.2.to_string(),
            e.2.to_string(),
            (b.2 + rules.threads).to_string(),
        ]);
    }
    let mut ft = Table::new("Faults injected", &["at (s)", "took (s)", "fault", "what"]);
    for f in faults {
        ft.row(vec![
            format!("{:.1}", f.start_s),
            format!("{:.1}", f.end_s - f.start_s),
            f.kind.name().into(),
            f.detail.clone(),
        ]);
    }
    let mut ct = Table::new(
        "Error counters that moved, and the faults that explain them",
        &["series", "increase", "explained by", "unexplained"],
    );
    for a in &v.counters {
        ct.row(vec![
            format!("`{}`", a.series),
            format!("{}", a.total),
            a.explained_by.join(", "),
            if a.unexplained > 0.0 {
                format!("**{}**", a.unexplained)
            } else {
                "0".into()
            },
        ]);
    }
    let mut lt = Table::new(
        "Load: answers, all chunks and outside the fault windows",
        &[
            "load",
            "sent",
            "answered",
            "answer rate (/s)",
            "sent outside faults",
            "answered outside faults",
            "lost or refused valid cookies outside faults",
        ],
    );
    let secs = opts.duration.as_secs_f64().max(1.0);
    for (load, sent_o, ans_o, cookies) in &v.loads_outside {
        let (sent, ans) = loads
            .iter()
            .filter(|c| c.load == load)
            .fold((0, 0), |(s, a), c| (s + c.sent, a + c.answered));
        lt.row(vec![
            load.clone(),
            sent.to_string(),
            ans.to_string(),
            format!("{:.1}", ans as f64 / secs),
            sent_o.to_string(),
            ans_o.to_string(),
            cookies.to_string(),
        ]);
    }
    let series = |name: &str, f: &dyn Fn(&Sample) -> f64| Series {
        name: name.into(),
        points: samples.iter().map(|s| (s.t_s, f(s))).collect(),
    };
    let plots = vec![
        Plot {
            stem: "soak-rss".into(),
            title: "authtime serve: RSS over the soak".into(),
            x_label: "seconds".into(),
            y_label: "RSS (MiB)".into(),
            log_x: false,
            log_y: false,
            series: vec![series("RSS", &|s| s.rss_kib as f64 / 1024.0)],
        },
        Plot {
            stem: "soak-fds-threads".into(),
            title: "authtime serve: open fds and threads over the soak".into(),
            x_label: "seconds".into(),
            y_label: "count".into(),
            log_x: false,
            log_y: false,
            series: vec![
                series("open fds", &|s| s.fds as f64),
                series("threads", &|s| s.threads as f64),
            ],
        },
    ];
    let mut findings = vec![format!(
        "Verdict: {}{}",
        if v.pass { "PASS" } else { "FAIL" },
        if v.reasons.is_empty() {
            String::new()
        } else {
            format!(" ({})", v.reasons.join("; "))
        }
    )];
    if let (Some(b), Some(e)) = (v.baseline, v.end) {
        findings.push(format!(
            "After warm-up ({:.0} s): RSS {} KiB, {} fds, {} threads; at the end: RSS {} KiB, {} fds, {} threads.",
            opts.warmup.as_secs_f64(),
            b.0,
            b.1,
            b.2,
            e.0,
            e.1,
            e.2
        ));
    }
    // How long the host kept the daemon waiting for a CPU: the intervals
    // with the most run-queue wait (context for `stale` drops and late
    // answers, which a host that starves the daemon causes).
    let mut waits: Vec<(f64, f64)> = samples
        .windows(2)
        .map(|w| (w[1].t_s, w[1].run_wait_ms - w[0].run_wait_ms))
        .collect();
    waits.sort_by(|a, b| b.1.total_cmp(&a.1));
    if !waits.is_empty() {
        let total = samples.last().map_or(0.0, |s| s.run_wait_ms)
            - samples.first().map_or(0.0, |s| s.run_wait_ms);
        findings.push(format!(
            "The daemon's threads waited {total:.0} ms in all for a CPU (run queue, \
             /proc/PID/task/*/schedstat); most in one sample interval: {}.",
            waits
                .iter()
                .take(3)
                .map(|(t, ms)| format!("{ms:.1} ms (interval ending at {t:.0} s)"))
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    findings.push(format!("Rules: {}", rules.describe()));
    Section {
        id: "soak".into(),
        title: "Soak and faults: authtime serve under steady load and a schedule of faults".into(),
        seed: "Issue 29".into(),
        method: format!(
            "{} s run, warm-up {} s, samples every {} s, fault cycle {} s (SIGHUP, certificate \
             replacement, malformed packets, NTS-KE reconnect flood, clients beyond the tables, \
             Redis master and replica stopped and restarted, a Redis Sentinel failover), the last 15 % quiet; NTS master keys in Redis rotated \
             every {} s; steady loads of {} requests/s each: plain NTP, NTP with an AES-CMAC key, \
             NTS (one NTS-KE session per 20 exchanges) and Roughtime; fault windows last from 1 s \
             before a fault to {} s after it.",
            opts.duration.as_secs(),
            opts.warmup.as_secs(),
            opts.sample_every.as_secs(),
            opts.cycle.as_secs(),
            opts.rotation_s,
            opts.rate,
            opts.grace.as_secs()
        ),
        tables: vec![flat, ft, ct, lt],
        plots,
        findings,
        data: serde_json::json!({
            "pass": v.pass,
            "reasons": v.reasons,
            "rules": rules,
            "baseline": v.baseline,
            "end": v.end,
            "faults": faults,
            "counters": v.counters,
            "loads": loads,
            "samples": samples,
        }),
    }
}
