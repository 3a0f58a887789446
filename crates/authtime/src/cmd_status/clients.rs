//! `authtime status --server`: who the running server's clients are, from
//! its metrics page (`authtime_clients*`, estimates without addresses) and
//! its `/clients` page (the top talkers, with addresses).

use serde_json::{Value, json};

use super::served_time::Page;

/// Protocols in the order shown.
const PROTOCOLS: [&str; 4] = ["ntp", "nts", "roughtime", "nts-ke"];
/// Top talkers printed as text (the JSON has all the server gives).
const TOP_TEXT: usize = 5;

/// What is shown.
pub(super) struct Clients {
    pub(super) text: Vec<String>,
    pub(super) json: Value,
}

/// Summarizes `page` and the `/clients` body `top` (JSON, when read).
pub(super) fn summarize(page: &Page, top: Option<&Value>) -> Clients {
    let mut text = Vec::new();
    let mut windows = serde_json::Map::new();
    for window in ["current", "previous"] {
        let get = |metric: &str, extra: &str| {
            page.get(&format!("{metric}{{{extra}window=\"{window}\"}}"))
        };
        let Some(any) = get("authtime_clients", "protocol=\"any\",") else {
            continue;
        };
        let by: Vec<(&str, f64)> = PROTOCOLS
            .iter()
            .map(|p| {
                (
                    *p,
                    get("authtime_clients", &format!("protocol=\"{p}\",")).unwrap_or(0.0),
                )
            })
            .collect();
        let limited = get("authtime_clients_limited", "").unwrap_or(0.0);
        let refused = get("authtime_clients_refused", "").unwrap_or(0.0);
        let untracked = get("authtime_clients_untracked_requests", "").unwrap_or(0.0);
        let info = top.and_then(|t| t.get(window)).filter(|v| !v.is_null());
        let seconds = info.and_then(|i| i["seconds"].as_u64());
        let label = match (window, seconds) {
            ("current", Some(s)) => format!("this window ({s} s so far)"),
            ("current", None) => "this window".to_owned(),
            (_, _) => "previous window".to_owned(),
        };
        text.push(format!(
            "clients:   {label}: ~{any:.0} distinct ({}); ~{limited:.0} rate limited, \
             ~{refused:.0} refused{}",
            by.iter()
                .map(|(p, n)| format!("{p} ~{n:.0}"))
                .collect::<Vec<_>>()
                .join(", "),
            if untracked > 0.0 {
                format!("; {untracked:.0} requests from sources beyond the table")
            } else {
                String::new()
            }
        ));
        let rates = rate_buckets(page, window);
        if rates.iter().any(|(_, n)| *n > 0) {
            let mut previous = 0;
            let parts: Vec<String> = rates
                .iter()
                .filter_map(|(bound, cumulative)| {
                    let n = cumulative - previous;
                    previous = *cumulative;
                    (n > 0).then(|| format!("{n} ≤ {}", rate_text(*bound)))
                })
                .collect();
            text.push(format!("rates:     {label}: {}", parts.join(", ")));
        }
        let talkers: Vec<Value> = info
            .and_then(|i| i["top"].as_array())
            .cloned()
            .unwrap_or_default();
        for (i, t) in talkers.iter().take(TOP_TEXT).enumerate() {
            let protocols: Vec<&str> = t["protocols"]
                .as_array()
                .map(|a| a.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            let requests = t["requests"].as_u64().unwrap_or(0);
            text.push(format!(
                "{}{} {requests} request{} ({} limited or refused; {})",
                if i == 0 { "top:       " } else { "           " },
                t["address"].as_str().unwrap_or("?"),
                if requests == 1 { "" } else { "s" },
                t["limited_or_refused"].as_u64().unwrap_or(0),
                protocols.join(", ")
            ));
        }
        windows.insert(
            window.to_owned(),
            json!({
                "start": info.and_then(|i| i["start"].as_u64()),
                "seconds": seconds,
                "distinct": any,
                "by_protocol": by.iter().map(|(p, n)| ((*p).to_owned(), json!(n))).collect::<serde_json::Map<_, _>>(),
                "limited": limited,
                "refused": refused,
                "untracked_requests": untracked,
                "rate_buckets": rates.iter().map(|(b, n)| json!({
                    "at_most_per_second": if b.is_finite() { json!(b) } else { Value::Null },
                    "clients": n,
                })).collect::<Vec<_>>(),
                "top": talkers,
            }),
        );
    }
    if text.is_empty() {
        text.push("clients:   not counted (a server before 2026-11-27, or no figures yet)".into());
    }
    Clients {
        text,
        json: json!({
            "estimate_standard_error": "about 1.1-1.8 %",
            "window_seconds": top.and_then(|t| t["window_seconds"].as_u64()),
            "windows": windows,
        }),
    }
}

/// The cumulative rate buckets of `window`: (upper bound per second, clients).
fn rate_buckets(page: &Page, window: &str) -> Vec<(f64, u64)> {
    let mut out: Vec<(f64, u64)> = page
        .samples()
        .iter()
        .filter_map(|(name, v)| {
            let rest = name
                .strip_prefix("authtime_clients_by_request_rate{window=\"")?
                .strip_prefix(window)?
                .strip_prefix("\",le=\"")?
                .strip_suffix("\"}")?;
            let bound = if rest == "+Inf" {
                f64::INFINITY
            } else {
                rest.parse().ok()?
            };
            Some((bound, *v as u64))
        })
        .collect();
    out.sort_by(|a, b| a.0.total_cmp(&b.0));
    out
}

fn rate_text(per_second: f64) -> String {
    if per_second.is_infinite() {
        "more".into()
    } else if per_second >= 1.0 {
        format!("{per_second}/s")
    } else {
        format!("1/{:.0} s", 1.0 / per_second)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const PAGE: &str = "authtime_clients{protocol=\"ntp\",window=\"current\"} 300\n\
        authtime_clients{protocol=\"nts\",window=\"current\"} 50\n\
        authtime_clients{protocol=\"roughtime\",window=\"current\"} 0\n\
        authtime_clients{protocol=\"nts-ke\",window=\"current\"} 10\n\
        authtime_clients{protocol=\"any\",window=\"current\"} 312\n\
        authtime_clients_limited{window=\"current\"} 10\n\
        authtime_clients_refused{window=\"current\"} 2\n\
        authtime_clients_untracked_requests{window=\"current\"} 0\n\
        authtime_clients_by_request_rate{window=\"current\",le=\"0.0009765625\"} 0\n\
        authtime_clients_by_request_rate{window=\"current\",le=\"0.25\"} 300\n\
        authtime_clients_by_request_rate{window=\"current\",le=\"+Inf\"} 311\n";

    #[test]
    fn the_summary_gives_estimates_rates_and_top_talkers() {
        let top: Value = serde_json::from_str(
            "{\"window_seconds\":3600,\"current\":{\"start\":0,\"seconds\":120,\"clients\":312,\
             \"tracked\":311,\"untracked_requests\":0,\"top\":[{\"address\":\"192.0.2.1\",\
             \"requests\":99,\"limited_or_refused\":9,\"protocols\":[\"ntp\"]}]},\"previous\":null}",
        )
        .expect("json");
        let c = summarize(&Page::parse(PAGE), Some(&top));
        let text = c.text.join("\n");
        assert!(
            text.contains("this window (120 s so far): ~312 distinct (ntp ~300, nts ~50, roughtime ~0, nts-ke ~10); ~10 rate limited, ~2 refused"),
            "{text}"
        );
        assert!(text.contains("300 ≤ 1/4 s, 11 ≤ more"), "{text}");
        assert!(
            text.contains("top:       192.0.2.1 99 requests (9 limited or refused; ntp)"),
            "{text}"
        );
        assert!(!text.contains("previous window"), "{text}");
        assert_eq!(c.json["windows"]["current"]["distinct"], 312.0);
        assert_eq!(c.json["windows"]["current"]["top"][0]["requests"], 99);
        assert_eq!(c.json["window_seconds"], 3600);
    }

    #[test]
    fn an_older_server_is_named_as_such() {
        let c = summarize(&Page::parse("authtime_ntp_received_total 5\n"), None);
        assert!(c.text[0].contains("not counted"), "{:?}", c.text);
    }
}
