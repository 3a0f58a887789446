//! The alert rules (`dist/prometheus/authtime-alerts.yml`) and the Grafana
//! dashboard (`dist/grafana/authtime.json`) against the real thing: a real
//! `authtime serve` with NTP, NTS-KE, NTS and Roughtime on loopback, under
//! load from this test and from `authtime query` / `authtime roughtime query`,
//! scraped every second by a real Prometheus (the Debian package's binary,
//! started here with its own configuration, storage and high port). The test
//! checks that:
//!
//! - every metric name the rules and the dashboard use is one the daemon
//!   exports (a renamed metric fails here, not silently in production);
//! - Prometheus loads the rules and evaluates every one without error, and the
//!   alerts that fire are exactly those the run calls for (the NTS-KE
//!   certificate made here expires in 5 days: `AuthtimeCertificateExpiring`
//!   fires, `AuthtimeCertificateExpiringSoon` waits out its hour);
//! - every panel query of the dashboard, with its variables substituted,
//!   returns data (a finite sample), except those in
//!   [`EMPTY_UNTIL_AN_EVENT`] and those on [`ONLY_WITH_XDP`] metrics, and
//!   every template variable has values.
//!
//! The AF_XDP metrics exist only with `[xdp]`, which needs root, a veth pair
//! and network namespaces (`tests/xdp_serve.rs`); here their names, and the
//! socket events the rules and panels select, are checked against the
//! daemon's source instead, and their queries only have to evaluate.
//!
//! Grafana itself is not run (not packaged in Debian 12): its part is the
//! substitution of `$job`, `$instance` and `$__rate_interval`, done here.
//! Every wait is bounded.

mod ntp_support;

use std::collections::BTreeSet;
use std::io::{Read as _, Write as _};
use std::net::{SocketAddr, TcpListener, TcpStream, UdpSocket};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use ntp_support::{ChildGuard, Serve, TempDir, authtime, keygen, nts_cert, text, text_of};
use serde_json::Value;

/// The scrape job name the rules expect (`job="authtime"`).
const JOB: &str = "authtime";
/// What the test puts for Grafana's `$__rate_interval`: 4 scrape intervals
/// and more, as Grafana would choose for a 1 s scrape.
const RATE_INTERVAL: &str = "15s";
/// How long the load runs before the queries (and during them).
const LOAD_BEFORE_QUERIES: Duration = Duration::from_secs(12);

/// Dashboard queries allowed to return nothing, with the reason: each needs
/// an event this test does not cause. (The test does cause a malformed
/// datagram, a dropped NTS request, a MAC failure and an alert, the events
/// behind the other series that appear only once counted.)
const EMPTY_UNTIL_AN_EVENT: &[(&str, &str)] = &[(
    r#"authtime_clients{job="$job",instance=~"$instance",window="previous",protocol="any"}"#,
    "the previous hourly window exists once the server has seen a full hour change \
     (docs/clients.md); the test runs for seconds",
)];

/// Metrics the daemon exports only with `[xdp]`, and the file that writes
/// them (`render` in the AF_XDP worker), where each name must appear quoted.
const ONLY_WITH_XDP: &[&str] = &[
    "authtime_xdp_frames_total",
    "authtime_xdp_socket_events_total",
];
const XDP_METRICS_SOURCE: &str = "crates/authtime-server/src/ntp/xdp_worker.rs";
/// The `event` label values of `authtime_xdp_socket_events_total` (the
/// kernel's `XDP_STATISTICS`, the daemon's refused descriptors and what
/// became of the transmit timestamps asked for), each written as
/// `("event", ...)` in [`XDP_METRICS_SOURCE`].
const XDP_SOCKET_EVENTS: &[&str] = &[
    "rx_dropped",
    "rx_invalid_descs",
    "tx_invalid_descs",
    "rx_ring_full",
    "fill_ring_empty",
    "tx_ring_empty",
    "refused_descs",
    "tx_timestamps",
    "tx_timestamps_late",
    "tx_timestamps_missing",
];

fn repo_file(relative: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .join(relative)
}

/// The prometheus binary; fails the test (with what to do) when missing.
fn prometheus_bin() -> PathBuf {
    ["/usr/bin/prometheus", "/usr/local/bin/prometheus"]
        .iter()
        .map(PathBuf::from)
        .find(|p| p.exists())
        .unwrap_or_else(|| {
            panic!(
                "prometheus is not installed: this test needs the Debian package \
                 `prometheus`; run ./test.sh, which installs it"
            )
        })
}

/// `GET path` over HTTP/1.0; the status code and the body.
fn http_get(addr: SocketAddr, path: &str) -> Option<(u16, String)> {
    let mut s = TcpStream::connect_timeout(&addr, Duration::from_secs(2)).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(10))).ok()?;
    s.write_all(format!("GET {path} HTTP/1.0\r\nHost: {addr}\r\n\r\n").as_bytes())
        .ok()?;
    let mut out = String::new();
    s.read_to_string(&mut out).ok()?;
    let (head, body) = out.split_once("\r\n\r\n")?;
    let code = head.split_whitespace().nth(1)?.parse().ok()?;
    Some((code, body.to_owned()))
}

fn url_encode(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                char::from(b).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// A Prometheus started for this test, killed on drop.
struct Prometheus {
    _process: ChildGuard,
    addr: SocketAddr,
    log: PathBuf,
}

impl Prometheus {
    /// Starts Prometheus scraping `target` every second, with the rules file
    /// evaluated every second, and waits until it is ready.
    fn start(dir: &TempDir, target: SocketAddr) -> Self {
        let rules = repo_file("dist/prometheus/authtime-alerts.yml")
            .canonicalize()
            .expect("rules file");
        let config = dir.path("prometheus.yml");
        std::fs::write(
            &config,
            format!(
                "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n\
                 rule_files:\n  - {}\n\
                 scrape_configs:\n  - job_name: {JOB}\n    static_configs:\n      - targets: [\"{target}\"]\n",
                rules.display()
            ),
        )
        .expect("prometheus.yml");
        // A port free a moment ago: Prometheus cannot be told to take port 0
        // and say which it got. A lost race fails at the readiness wait, with
        // the log.
        let port = TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("a free port")
            .port();
        let addr: SocketAddr = format!("127.0.0.1:{port}").parse().expect("addr");
        let log = dir.path("prometheus.log");
        let child = Command::new(prometheus_bin())
            .arg(format!("--config.file={}", config.display()))
            .arg(format!(
                "--storage.tsdb.path={}",
                dir.path("tsdb").display()
            ))
            .arg(format!("--web.listen-address={addr}"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&log).expect("log"))
            .spawn()
            .expect("start prometheus");
        let prometheus = Self {
            _process: ChildGuard {
                child,
                name: "prometheus".into(),
            },
            addr,
            log,
        };
        let deadline = Instant::now() + Duration::from_secs(30);
        while http_get(addr, "/-/ready").map(|r| r.0) != Some(200) {
            assert!(
                Instant::now() < deadline,
                "prometheus not ready in 30 s: {}",
                prometheus.log_text()
            );
            std::thread::sleep(Duration::from_millis(100));
        }
        prometheus
    }

    fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// `GET /api/v1/<path>`, the JSON answer's `data` (panics on an error).
    fn api(&self, path: &str) -> Value {
        let (code, body) = http_get(self.addr, &format!("/api/v1/{path}"))
            .unwrap_or_else(|| panic!("no answer to {path}: {}", self.log_text()));
        let json: Value = serde_json::from_str(&body).unwrap_or_else(|e| panic!("{e}: {body}"));
        assert!(
            code == 200 && json["status"] == "success",
            "{path}: {code} {body}"
        );
        json["data"].clone()
    }

    /// The result vector of the instant query `expr`, or the error.
    fn query(&self, expr: &str) -> Result<Vec<Value>, String> {
        let path = format!("/api/v1/query?query={}", url_encode(expr));
        let (code, body) = http_get(self.addr, &path).ok_or("no answer")?;
        let json: Value = serde_json::from_str(&body).map_err(|e| format!("{e}: {body}"))?;
        if code != 200 || json["status"] != "success" {
            return Err(format!("{code} {body}"));
        }
        match &json["data"]["result"] {
            Value::Array(samples) => Ok(samples.clone()),
            // A scalar (`time()` alone): one sample.
            other => Ok(vec![serde_json::json!({ "value": other })]),
        }
    }
}

/// Whether one of `samples` holds a finite number (not NaN, not ±Inf).
fn has_finite_sample(samples: &[Value]) -> bool {
    samples.iter().any(|s| {
        s["value"][1]
            .as_str()
            .and_then(|v| v.parse::<f64>().ok())
            .is_some_and(f64::is_finite)
    })
}

/// Every `authtime_*` metric name in `text`.
fn metric_names(text: &str) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    let bytes = text.as_bytes();
    let mut at = 0;
    while let Some(found) = text[at..].find("authtime_") {
        let start = at + found;
        let preceded =
            start > 0 && (bytes[start - 1].is_ascii_alphanumeric() || bytes[start - 1] == b'_');
        let end = text[start..]
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .map_or(text.len(), |n| start + n);
        if !preceded {
            names.insert(text[start..end].to_owned());
        }
        at = end;
    }
    names
}

/// The sample names a scrape can hold: each family's name, and for a
/// histogram its `_bucket`, `_sum` and `_count`.
fn exported_names(scrape: &str) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    for line in scrape.lines() {
        let Some(rest) = line.strip_prefix("# TYPE ") else {
            continue;
        };
        let mut parts = rest.split_whitespace();
        let (Some(name), Some(kind)) = (parts.next(), parts.next()) else {
            continue;
        };
        names.insert(name.to_owned());
        if kind == "histogram" {
            for suffix in ["_bucket", "_sum", "_count"] {
                names.insert(format!("{name}{suffix}"));
            }
        }
    }
    names
}

/// Whether `expr` uses metrics, and only metrics, of [`ONLY_WITH_XDP`].
fn only_xdp_metrics(expr: &str) -> bool {
    let names = metric_names(expr);
    !names.is_empty() && names.iter().all(|n| ONLY_WITH_XDP.contains(&n.as_str()))
}

/// The AF_XDP metrics, absent from this daemon without `[xdp]`: not
/// exported here (else the list is stale), written by the daemon's source,
/// used by both the rules and the dashboard, and every socket event they
/// select is one the source writes.
fn check_xdp_names(exported: &BTreeSet<String>, rules: &str, dashboard: &str) {
    let source = std::fs::read_to_string(repo_file(XDP_METRICS_SOURCE)).expect("xdp source");
    for name in ONLY_WITH_XDP {
        assert!(
            !exported.contains(*name),
            "{name} exported without [xdp]: remove it from ONLY_WITH_XDP"
        );
        assert!(
            source.contains(&format!("\"{name}\"")),
            "{name} is not written by {XDP_METRICS_SOURCE}: renamed?"
        );
        for (what, text) in [("rules", rules), ("dashboard", dashboard)] {
            assert!(text.contains(name), "the {what} do not use {name}");
        }
    }
    for event in XDP_SOCKET_EVENTS {
        assert!(
            source.contains(&format!("(\"{event}\", ")),
            "socket event {event} is not written by {XDP_METRICS_SOURCE}: renamed?"
        );
    }
    // Every event a rule or a panel selects (`event="..."`, `event=~"a|b"`)
    // is one of them.
    for text in [rules, dashboard] {
        for selector in text.split("event=").skip(1) {
            let selector = selector.trim_start_matches('~').trim_start_matches('\\');
            let Some(values) = selector
                .strip_prefix('"')
                .and_then(|v| v.split(['"', '\\']).next())
            else {
                continue;
            };
            for event in values.split('|') {
                assert!(
                    XDP_SOCKET_EVENTS.contains(&event),
                    "unknown socket event {event:?} in event={values}"
                );
            }
        }
    }
}

/// Grafana's substitutions for the test's job and every instance.
fn substitute(expr: &str) -> String {
    expr.replace("$__rate_interval", RATE_INTERVAL)
        .replace("$job", JOB)
        .replace("$instance", ".*")
}

/// Every (panel title, query) of the dashboard, rows' nested panels included.
fn dashboard_queries(dashboard: &Value) -> Vec<(String, String)> {
    fn walk(panels: &Value, out: &mut Vec<(String, String)>) {
        for panel in panels.as_array().into_iter().flatten() {
            let title = panel["title"].as_str().unwrap_or("?").to_owned();
            for target in panel["targets"].as_array().into_iter().flatten() {
                let expr = target["expr"].as_str().expect("a target without expr");
                out.push((title.clone(), expr.to_owned()));
            }
            walk(&panel["panels"], out);
        }
    }
    let mut out = Vec::new();
    walk(&dashboard["panels"], &mut out);
    out
}

/// A client request: NTPv4, mode 3, a transmit timestamp that varies.
fn ntp_request(n: u64) -> [u8; 48] {
    let mut p = [0u8; 48];
    p[0] = 0x23;
    p[40..48].copy_from_slice(&(0xe000_0000_0000_0000u64 | n).to_be_bytes());
    p
}

/// Load sent from this process until `stop`: a flood from 127.0.0.2 (plain
/// requests and requests with an NTS Unique Identifier field, about 280/s
/// where a machine of 2 busy cores allows, two thirds of it over the rate
/// limit), and from 127.0.0.3 a few datagrams too short to be NTP and
/// requests with a wrong MAC under key 1. Other addresses than 127.0.0.1, so
/// that the rate limit (per address) leaves the command clients alone.
fn raw_load(ntp: SocketAddr, stop: Arc<AtomicBool>) -> std::thread::JoinHandle<()> {
    std::thread::spawn(move || {
        let flood = UdpSocket::bind("127.0.0.2:0").expect("bind 127.0.0.2");
        let odd = UdpSocket::bind("127.0.0.3:0").expect("bind 127.0.0.3");
        let deadline = Instant::now() + Duration::from_secs(120);
        let mut n = 0u64;
        while !stop.load(Ordering::Relaxed) && Instant::now() < deadline {
            n += 1;
            let _ = flood.send_to(&ntp_request(n), ntp);
            if n.is_multiple_of(4) {
                let mut nts = ntp_request(n).to_vec();
                nts.extend_from_slice(&[0x01, 0x04, 0x00, 0x24]);
                nts.extend_from_slice(&[0x5a; 32]);
                let _ = flood.send_to(&nts, ntp);
            }
            if n.is_multiple_of(50) {
                let _ = odd.send_to(&[0x23; 20], ntp);
                let mut mac = ntp_request(n).to_vec();
                mac.extend_from_slice(&1u32.to_be_bytes());
                mac.extend_from_slice(&[0u8; 16]);
                let _ = odd.send_to(&mac, ntp);
            }
            std::thread::sleep(Duration::from_millis(2));
        }
    })
}

/// Clients run through the `authtime` command until `stop`: NTS (NTS-KE and
/// three NTS exchanges each), NTP with a valid MAC, and Roughtime over UDP.
fn command_load(
    dir: &TempDir,
    serve: &Serve,
    roughtime_key: String,
    stop: Arc<AtomicBool>,
) -> std::thread::JoinHandle<Vec<String>> {
    let ke = format!("localhost:{}", serve.nts_ke.expect("NTS-KE").port());
    let ca = dir.path("mon-ca.pem").display().to_string();
    let keys = dir.path("ntp.keys").display().to_string();
    let ntp = serve.addr.to_string();
    let roughtime = serve.roughtime.expect("Roughtime").to_string();
    std::thread::spawn(move || {
        let mut failures = Vec::new();
        let deadline = Instant::now() + Duration::from_secs(120);
        while !stop.load(Ordering::Relaxed) && Instant::now() < deadline {
            for args in [
                vec![
                    "query",
                    "--nts",
                    &ke,
                    "--ca",
                    &ca,
                    "--count",
                    "3",
                    "--timeout",
                    "5",
                ],
                vec![
                    "query",
                    &ntp,
                    "--key-file",
                    &keys,
                    "--key-id",
                    "1",
                    "--timeout",
                    "5",
                ],
                vec![
                    "roughtime",
                    "query",
                    "--server",
                    &roughtime,
                    "--public-key",
                    &roughtime_key,
                    "--timeout-ms",
                    "2000",
                ],
            ] {
                let out = authtime(&args);
                if !out.status.success() {
                    failures.push(format!("{args:?}: {}", text_of(&out)));
                }
            }
        }
        failures
    })
}

/// The base64 public key of a Roughtime long-term key made in `dir`.
fn roughtime_keygen(dir: &TempDir) -> String {
    let out = authtime(&[
        "roughtime",
        "keygen",
        "--out",
        &dir.path("lt.key").display().to_string(),
    ]);
    assert!(out.status.success(), "{}", text_of(&out));
    text(&out.stdout)
        .lines()
        .find_map(|l| l.strip_prefix("public key (base64): "))
        .expect("public key")
        .trim()
        .to_owned()
}

#[test]
fn alert_rules_and_dashboard_queries_work_on_a_real_daemon_under_load() {
    let dir = TempDir::new("monitoring");
    // A certificate that expires in 5 days: under both thresholds (21 and 7
    // days), so the page fires at once and the warning waits out its hour.
    nts_cert(&dir, "mon", &["--days", "5"]);
    keygen(&dir, "ntp.keys", "chrony", &[("aes128", 1)]);
    let roughtime_key = roughtime_keygen(&dir);
    let serve = Serve::start(
        &dir,
        "[ntp]\nlisten = [\"127.0.0.1:0\"]\nworkers = 1\nkeys = \"ntp.keys\"\naccuracy-sample = 1.0\n\
         [rate-limit]\nrate = 100\nburst = 200\n\
         [nts-ke]\nlisten = [\"127.0.0.1:0\"]\ncertificate-chain = \"mon-chain.pem\"\n\
         private-key = \"mon-key.pem\"\nworkers = 1\n\
         [keystore]\npath = \"keys\"\n\
         [roughtime]\nlisten = [\"127.0.0.1:0\"]\nlong-term-key = \"lt.key\"\nrate-limit = 0\n",
    );
    let prometheus = Prometheus::start(&dir, serve.metrics);

    let stop = Arc::new(AtomicBool::new(false));
    let raw = raw_load(serve.addr, Arc::clone(&stop));
    let commands = command_load(&dir, &serve, roughtime_key, Arc::clone(&stop));
    std::thread::sleep(LOAD_BEFORE_QUERIES);

    // The names: every authtime_* in the rules and the dashboard is exported.
    let rules_text =
        std::fs::read_to_string(repo_file("dist/prometheus/authtime-alerts.yml")).expect("rules");
    let dashboard_text =
        std::fs::read_to_string(repo_file("dist/grafana/authtime.json")).expect("dashboard");
    let exported = exported_names(&serve.scrape());
    for (what, text) in [("rules", &rules_text), ("dashboard", &dashboard_text)] {
        let unknown: Vec<_> = metric_names(text)
            .into_iter()
            .filter(|n| !exported.contains(n) && !ONLY_WITH_XDP.contains(&n.as_str()))
            .collect();
        assert!(
            unknown.is_empty(),
            "the {what} use metrics the daemon does not export: {unknown:?}"
        );
    }
    check_xdp_names(&exported, &rules_text, &dashboard_text);

    // The dashboard's variables have values, and every panel query returns data.
    let dashboard: Value = serde_json::from_str(&dashboard_text).expect("dashboard JSON");
    for variable in dashboard["templating"]["list"]
        .as_array()
        .expect("variables")
    {
        let Some(query) = variable["query"]["query"].as_str() else {
            continue;
        };
        let inner = query
            .strip_prefix("label_values(")
            .and_then(|q| q.strip_suffix(')'))
            .expect("label_values(metric, label)");
        let (metric, label) = inner.rsplit_once(',').expect("metric, label");
        let expr = format!("group by ({}) ({})", label.trim(), substitute(metric));
        let samples = prometheus.query(&expr).expect("variable query");
        assert!(
            !samples.is_empty(),
            "variable {}: no values",
            variable["name"]
        );
    }
    let queries = dashboard_queries(&dashboard);
    assert!(queries.len() > 50, "{} queries", queries.len());
    let mut empty = Vec::new();
    for (title, expr) in &queries {
        let expr_now = substitute(expr);
        assert!(
            !expr_now.contains('$'),
            "unsubstituted variable in {expr_now}"
        );
        match prometheus.query(&expr_now) {
            // Evaluated without error; nothing to show without [xdp].
            Ok(samples) if only_xdp_metrics(expr) => {
                assert!(samples.is_empty(), "{title}: {expr_now}: {samples:?}");
            }
            Ok(samples) if has_finite_sample(&samples) => {}
            Ok(samples) => empty.push((title.clone(), expr.clone(), format!("{samples:?}"))),
            Err(e) => panic!("{title}: {expr_now}: {e}"),
        }
    }
    // Under load: the traffic panels show it, not just zeros.
    for title in [
        "NTP requests and replies",
        "Malformed datagrams by codec error",
        "MAC failures by key id",
        "NTS replies and NAKs",
        "NTS-KE time",
        "Roughtime requests and responses",
        "authtime alerts firing",
    ] {
        let positive = queries.iter().filter(|(t, _)| t == title).any(|(_, expr)| {
            prometheus.query(&substitute(expr)).is_ok_and(|samples| {
                samples.iter().any(|s| {
                    s["value"][1]
                        .as_str()
                        .and_then(|v| v.parse::<f64>().ok())
                        .is_some_and(|v| v > 0.0)
                })
            })
        });
        assert!(positive, "panel {title:?} shows no load");
    }
    let unexpected: Vec<_> = empty
        .iter()
        .filter(|(_, expr, _)| !EMPTY_UNTIL_AN_EVENT.iter().any(|(e, _)| e == expr))
        .collect();
    assert!(
        unexpected.is_empty(),
        "panel queries without data: {unexpected:#?}"
    );
    for (expr, _) in EMPTY_UNTIL_AN_EVENT {
        assert!(
            queries.iter().any(|(_, e)| e == expr),
            "allowlisted query no longer in the dashboard: {expr}"
        );
    }

    stop.store(true, Ordering::Relaxed);
    raw.join().expect("raw load");
    let failures = commands.join().expect("command load");
    assert!(failures.is_empty(), "clients failed: {failures:#?}");

    // The rules: all loaded and evaluated without error.
    let expected_rules = rules_text.matches("- alert:").count();
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let groups = prometheus.api("rules");
        let rules: Vec<&Value> = groups["groups"]
            .as_array()
            .expect("groups")
            .iter()
            .flat_map(|g| g["rules"].as_array().expect("rules").iter())
            .collect();
        assert_eq!(rules.len(), expected_rules, "rules loaded");
        let bad: Vec<_> = rules
            .iter()
            .filter(|r| r["health"] != "ok")
            .map(|r| format!("{} {} {}", r["name"], r["health"], r["lastError"]))
            .collect();
        if bad.is_empty() {
            break;
        }
        assert!(Instant::now() < deadline, "rules not evaluated: {bad:#?}");
        std::thread::sleep(Duration::from_millis(200));
    }

    // The alerts: the 10-day certificate, and nothing else, fires.
    let alerts = prometheus.api("alerts");
    let state_of = |state: &str| -> BTreeSet<String> {
        alerts["alerts"]
            .as_array()
            .expect("alerts")
            .iter()
            .filter(|a| a["state"] == state)
            .map(|a| a["labels"]["alertname"].as_str().unwrap_or("?").to_owned())
            .collect()
    };
    assert_eq!(
        state_of("firing"),
        BTreeSet::from(["AuthtimeCertificateExpiring".to_owned()]),
        "{alerts:#}"
    );
    assert!(
        state_of("pending").contains("AuthtimeCertificateExpiringSoon"),
        "{alerts:#}"
    );
}
