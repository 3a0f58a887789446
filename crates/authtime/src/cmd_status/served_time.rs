//! `authtime status --server`: what the running server's own metrics say
//! about the time it served: replies by mode, where their transmit
//! timestamps came from, the measured error of its basic-mode transmit
//! timestamps, stale and dropped requests, the interleaved table. Read from
//! the `[metrics]` endpoint of the configuration (plain HTTP on loopback or
//! the address given).

use std::io::{Read as _, Write as _};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, TcpStream};
use std::time::Duration;

use anyhow::{Context as _, anyhow};
use serde_json::{Value, json};

/// Largest metrics page read.
const MAX_PAGE: u64 = 4 << 20;

/// Samples of one metrics page: `(name with labels, value)`.
pub(super) struct Page {
    samples: Vec<(String, f64)>,
}

impl Page {
    /// Parses the Prometheus text format: comments skipped, every other line
    /// `name{labels} value`; lines that are not are ignored.
    pub(super) fn parse(text: &str) -> Self {
        let samples = text
            .lines()
            .filter(|l| !l.starts_with('#'))
            .filter_map(|l| {
                let (name, value) = l.rsplit_once(' ')?;
                Some((name.to_owned(), value.trim().parse().ok()?))
            })
            .collect();
        Self { samples }
    }

    /// Every sample, in page order.
    pub(super) fn samples(&self) -> &[(String, f64)] {
        &self.samples
    }

    pub(super) fn get(&self, sample: &str) -> Option<f64> {
        self.samples
            .iter()
            .find(|(n, _)| n == sample)
            .map(|(_, v)| *v)
    }

    fn count(&self, sample: &str) -> u64 {
        self.get(sample).map_or(0, |v| v as u64)
    }

    /// The buckets of histogram `name`: `(upper bound, cumulative count)`.
    fn buckets(&self, name: &str) -> Vec<(f64, u64)> {
        let prefix = format!("{name}_bucket{{le=\"");
        self.samples
            .iter()
            .filter_map(|(n, v)| {
                let le = n.strip_prefix(&prefix)?.strip_suffix("\"}")?;
                let bound = if le == "+Inf" {
                    f64::INFINITY
                } else {
                    le.parse().ok()?
                };
                Some((bound, *v as u64))
            })
            .collect()
    }
}

/// The bucket that holds quantile `q` of a histogram: its lower and upper
/// bound (a histogram says no more than that).
fn quantile_bounds(buckets: &[(f64, u64)], q: f64) -> Option<(f64, f64)> {
    let total = buckets.last()?.1;
    if total == 0 {
        return None;
    }
    let rank = (q * total as f64).ceil().max(1.0) as u64;
    let mut lower = f64::NEG_INFINITY;
    for &(bound, cumulative) in buckets {
        if cumulative >= rank {
            return Some((lower, bound));
        }
        lower = bound;
    }
    None
}

fn micros(seconds: f64) -> String {
    if seconds.is_infinite() {
        if seconds > 0.0 {
            "+inf".into()
        } else {
            "-inf".into()
        }
    } else {
        format!("{:.1}", seconds * 1e6)
    }
}

/// What is shown.
pub(super) struct ServedTime {
    pub(super) text: Vec<String>,
    pub(super) json: Value,
}

/// Summarizes `page`.
pub(super) fn summarize(page: &Page) -> ServedTime {
    let m = |s: &str| page.count(s);
    let basic = m("authtime_ntp_replies_total{mode=\"basic\"}");
    let interleaved = m("authtime_ntp_replies_total{mode=\"interleaved\"}");
    let tx = |source: &str| {
        m(&format!(
            "authtime_ntp_transmit_timestamps_total{{source=\"{source}\"}}"
        ))
    };
    let rx = |source: &str| {
        m(&format!(
            "authtime_ntp_receive_timestamps_total{{source=\"{source}\"}}"
        ))
    };
    let fallback = |reason: &str| {
        m(&format!(
            "authtime_ntp_interleaved_fallbacks_total{{reason=\"{reason}\"}}"
        ))
    };
    let stale = m("authtime_ntp_dropped_total{reason=\"stale\"}");
    let kernel_drops = m("authtime_ntp_kernel_receive_drops_total");
    let held = page
        .get("authtime_ntp_interleaved_timestamps_held")
        .map(|v| v as u64);
    let capacity = page
        .get("authtime_ntp_interleaved_timestamps_capacity")
        .map(|v| v as u64);
    let error_name = "authtime_ntp_transmit_timestamp_error_seconds";
    let error_count = m(&format!("{error_name}_count"));
    let error_sum = page.get(&format!("{error_name}_sum")).unwrap_or(0.0);
    let buckets = page.buckets(error_name);
    let median = quantile_bounds(&buckets, 0.5);
    let p99 = quantile_bounds(&buckets, 0.99);
    let total = basic + interleaved;
    let mut text = vec![format!(
        "replies:   {total} time replies: {basic} basic, {interleaved} interleaved{}",
        if total > 0 {
            format!(" ({:.1}%)", 100.0 * interleaved as f64 / total as f64)
        } else {
            String::new()
        }
    )];
    text.push(format!(
        "stamps:    transmit: {} daemon, {} kernel, {} hardware; receive: {} daemon, {} kernel, {} hardware",
        tx("daemon"),
        tx("kernel"),
        tx("hardware"),
        rx("daemon"),
        rx("kernel"),
        rx("hardware")
    ));
    text.push(if error_count == 0 {
        "T3 error:  no sample yet (ntp.accuracy-sample of the basic replies is measured)".into()
    } else {
        let bucket = |b: Option<(f64, f64)>| {
            b.map_or_else(
                || "?".into(),
                |(lo, hi)| format!("between {} and {} µs", micros(lo), micros(hi)),
            )
        };
        format!(
            "T3 error:  basic replies left {} µs after their transmit timestamp on average ({error_count} \
             sampled); median {}, 99th percentile {}",
            micros(error_sum / error_count as f64),
            bucket(median),
            bucket(p99)
        )
    });
    text.push(format!(
        "fallbacks: interleaved requests answered basic: {} not found, {} without a kernel timestamp",
        fallback("not_found"),
        fallback("no_kernel_timestamp")
    ));
    text.push(match (held, capacity) {
        (Some(h), Some(c)) => format!("table:     {h} of {c} interleaved transmit times held"),
        _ => "table:     interleaved mode is off".into(),
    });
    text.push(format!(
        "dropped:   {stale} stale (older than ntp.max-request-age), {kernel_drops} by the kernel (receive buffer full)"
    ));
    let bounds = |b: Option<(f64, f64)>| {
        b.map(|(lo, hi)| {
            json!({
                "above_seconds": if lo.is_finite() { json!(lo) } else { Value::Null },
                "at_most_seconds": if hi.is_finite() { json!(hi) } else { Value::Null },
            })
        })
    };
    let json = json!({
        "replies": { "basic": basic, "interleaved": interleaved },
        "transmit_timestamps": { "daemon": tx("daemon"), "kernel": tx("kernel"), "hardware": tx("hardware") },
        "receive_timestamps": { "daemon": rx("daemon"), "kernel": rx("kernel"), "hardware": rx("hardware") },
        "transmit_error": {
            "samples": error_count,
            "mean_seconds": (error_count > 0).then(|| error_sum / error_count as f64),
            "median": bounds(median),
            "p99": bounds(p99),
        },
        "interleaved_fallbacks": {
            "not_found": fallback("not_found"),
            "no_kernel_timestamp": fallback("no_kernel_timestamp"),
        },
        "interleaved_table": { "held": held, "capacity": capacity },
        "dropped": { "stale": stale, "kernel_receive_buffer": kernel_drops },
    });
    ServedTime { text, json }
}

/// Reads the metrics page at `addr` (a wildcard address means this host's
/// loopback).
///
/// # Errors
/// The endpoint cannot be reached or does not answer with a page.
pub(super) fn scrape(addr: SocketAddr) -> anyhow::Result<Page> {
    fetch(addr, "/metrics").map(|body| Page::parse(&body))
}

/// The body of `GET path` at the metrics endpoint `addr` (a wildcard
/// address means this host's loopback).
///
/// # Errors
/// The endpoint cannot be reached or does not answer 200.
pub(super) fn fetch(addr: SocketAddr, path: &str) -> anyhow::Result<String> {
    let addr = match addr.ip() {
        IpAddr::V4(ip) if ip.is_unspecified() => {
            SocketAddr::new(Ipv4Addr::LOCALHOST.into(), addr.port())
        }
        IpAddr::V6(ip) if ip.is_unspecified() => {
            SocketAddr::new(Ipv6Addr::LOCALHOST.into(), addr.port())
        }
        _ => addr,
    };
    let timeout = Duration::from_secs(2);
    let mut stream = TcpStream::connect_timeout(&addr, timeout)
        .with_context(|| format!("the metrics endpoint {addr} does not answer"))?;
    stream.set_read_timeout(Some(timeout))?;
    stream.set_write_timeout(Some(timeout))?;
    write!(
        stream,
        "GET {path} HTTP/1.0\r\nHost: {addr}\r\nConnection: close\r\n\r\n"
    )?;
    let mut body = String::new();
    stream
        .take(MAX_PAGE)
        .read_to_string(&mut body)
        .with_context(|| format!("reading {path} of {addr}"))?;
    let (head, page) = body
        .split_once("\r\n\r\n")
        .ok_or_else(|| anyhow!("{addr}: not an HTTP answer"))?;
    if !head.starts_with("HTTP/1.") || head.split_whitespace().nth(1).is_none_or(|c| c != "200") {
        return Err(anyhow!(
            "{addr}{path}: {}",
            head.lines().next().unwrap_or("no status line")
        ));
    }
    Ok(page.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    const PAGE: &str = "# HELP x y\n\
        authtime_ntp_replies_total{mode=\"basic\"} 30\n\
        authtime_ntp_replies_total{mode=\"interleaved\"} 70\n\
        authtime_ntp_transmit_timestamps_total{source=\"kernel\"} 70\n\
        authtime_ntp_transmit_timestamp_error_seconds_bucket{le=\"0.000001\"} 1\n\
        authtime_ntp_transmit_timestamp_error_seconds_bucket{le=\"0.000002\"} 6\n\
        authtime_ntp_transmit_timestamp_error_seconds_bucket{le=\"0.000005\"} 9\n\
        authtime_ntp_transmit_timestamp_error_seconds_bucket{le=\"+Inf\"} 10\n\
        authtime_ntp_transmit_timestamp_error_seconds_sum 0.00003\n\
        authtime_ntp_transmit_timestamp_error_seconds_count 10\n\
        authtime_ntp_interleaved_timestamps_held 5\n\
        authtime_ntp_interleaved_timestamps_capacity 65536\n\
        garbage line\n";

    #[test]
    fn the_summary_says_what_the_histogram_can_say() {
        let s = summarize(&Page::parse(PAGE));
        let text = s.text.join("\n");
        assert!(
            text.contains("100 time replies: 30 basic, 70 interleaved (70.0%)"),
            "{text}"
        );
        assert!(
            text.contains("3.0 µs after their transmit timestamp on average (10 sampled)"),
            "{text}"
        );
        assert!(text.contains("median between 1.0 and 2.0 µs"), "{text}");
        assert!(
            text.contains("99th percentile between 5.0 and +inf µs"),
            "{text}"
        );
        assert!(text.contains("5 of 65536"), "{text}");
        assert_eq!(s.json["transmit_error"]["samples"], 10);
        assert_eq!(
            s.json["transmit_error"]["p99"]["at_most_seconds"],
            Value::Null
        );
    }

    #[test]
    fn an_empty_page_shows_no_figures() {
        let s = summarize(&Page::parse(""));
        let text = s.text.join("\n");
        assert!(text.contains("no sample yet"), "{text}");
        assert!(text.contains("interleaved mode is off"), "{text}");
        assert_eq!(quantile_bounds(&[], 0.5), None);
        assert_eq!(quantile_bounds(&[(1.0, 0), (f64::INFINITY, 0)], 0.5), None);
    }
}
