use super::*;
use std::net::{Ipv4Addr, Ipv6Addr};

const T0: u64 = 1_800_000_000; // a multiple of 3600
const KEY: [u8; 16] = [7; 16];

fn v4(i: u32) -> IpAddr {
    IpAddr::V4(Ipv4Addr::from(0x0a00_0000 + i))
}

#[test]
fn counts_clients_by_protocol_and_outcome_within_the_window() {
    assert_eq!(T0 % WINDOW_SECS, 0);
    let p = ClientPopulation::new(KEY, T0);
    let mut batch = Vec::new();
    for i in 0..300 {
        batch.push((v4(i), Protocol::Ntp, Outcome::Served));
    }
    for i in 200..250 {
        batch.push((v4(i), Protocol::Nts, Outcome::Served));
    }
    for i in 0..10 {
        batch.push((v4(i), Protocol::Ntp, Outcome::Limited));
        batch.push((v4(1000 + i), Protocol::NtsKe, Outcome::Refused));
    }
    batch.push((
        IpAddr::V6(Ipv6Addr::LOCALHOST),
        Protocol::Roughtime,
        Outcome::Served,
    ));
    p.record_batch(T0 + 10, &batch);
    let [Some(now), previous] = p.snapshot(T0 + 100) else {
        panic!("no current window")
    };
    assert!(previous.is_none());
    // Estimates: within 3 % (about 2 standard errors), exact for tiny sets.
    let close = |estimate: f64, exact: f64| (estimate - exact).abs() <= (exact * 0.03).max(0.5);
    assert!(close(now.by_protocol[0], 300.0), "{now:?}");
    assert!(close(now.by_protocol[1], 50.0), "{now:?}");
    assert!(close(now.by_protocol[2], 1.0), "{now:?}");
    assert!(close(now.by_protocol[3], 10.0), "{now:?}");
    assert!(close(now.any, 311.0), "{now:?}");
    assert!(
        close(now.limited, 10.0) && close(now.refused, 10.0),
        "{now:?}"
    );
    assert_eq!(now.tracked, 311);
    assert_eq!(now.seconds, 100);
    // Source 0 sent 2 requests (one limited), 200..250 two each, the rest one.
    let json = p.top_json(T0 + 100);
    assert!(
        json.starts_with("{\"window_seconds\":3600,\"current\":{"),
        "{json}"
    );
    assert!(json.contains("\"previous\":null"), "{json}");
    assert!(
        json.contains("{\"address\":\"10.0.0.0\",\"requests\":2,\"limited_or_refused\":1,\"protocols\":[\"ntp\"]}"),
        "{json}"
    );
    assert!(json.contains("\"protocols\":[\"ntp\",\"nts\"]"), "{json}");
    assert_eq!(json.matches("\"address\"").count(), TOP, "{json}");
    let only_v6 = ClientPopulation::new(KEY, T0);
    only_v6.record(
        T0,
        IpAddr::V6(Ipv6Addr::LOCALHOST),
        Protocol::Roughtime,
        Outcome::Served,
    );
    let json = only_v6.top_json(T0);
    assert!(
        json.contains("\"address\":\"::1\",\"requests\":1"),
        "{json}"
    );
    assert!(json.contains("\"protocols\":[\"roughtime\"]"), "{json}");
}

#[test]
fn windows_roll_on_the_hour_and_start_afresh_after_a_gap_or_a_step_back() {
    let p = ClientPopulation::new(KEY, T0);
    p.record(T0 + 5, v4(1), Protocol::Ntp, Outcome::Served);
    p.record(T0 + WINDOW_SECS + 5, v4(2), Protocol::Ntp, Outcome::Served);
    p.record(T0 + WINDOW_SECS + 6, v4(3), Protocol::Ntp, Outcome::Served);
    let [Some(now), Some(before)] = p.snapshot(T0 + WINDOW_SECS + 10) else {
        panic!("two windows")
    };
    assert_eq!(before.start, T0);
    assert_eq!(before.seconds, WINDOW_SECS);
    assert_eq!(before.tracked, 1);
    assert_eq!(now.start, T0 + WINDOW_SECS);
    assert_eq!(now.tracked, 2);
    // The next hour: the window with 2 becomes the previous one.
    let [Some(now), Some(before)] = p.snapshot(T0 + 2 * WINDOW_SECS) else {
        panic!("two windows")
    };
    assert_eq!((now.tracked, before.tracked), (0, 2));
    // Two hours later: nothing carried over.
    let [Some(now), before] = p.snapshot(T0 + 4 * WINDOW_SECS) else {
        panic!("a window")
    };
    assert!(before.is_none() && now.tracked == 0);
    // A step back: a fresh window at the earlier time.
    p.record(T0 + 4 * WINDOW_SECS, v4(9), Protocol::Ntp, Outcome::Served);
    let [Some(now), before] = p.snapshot(T0 + 7) else {
        panic!("a window")
    };
    assert!(before.is_none());
    assert_eq!((now.start, now.tracked), (T0, 0));
}

#[test]
fn request_rates_fall_into_their_buckets() {
    let p = ClientPopulation::new(KEY, T0);
    // Over the whole previous hour: source 1 sent 3600 requests (1/s),
    // source 2 sent 10 (one per 360 s), source 3 one.
    let mut batch = vec![(v4(1), Protocol::Ntp, Outcome::Served); 3600];
    batch.extend([(v4(2), Protocol::Ntp, Outcome::Served); 10]);
    batch.push((v4(3), Protocol::Ntp, Outcome::Served));
    p.record_batch(T0 + 1, &batch);
    let [_, Some(before)] = p.snapshot(T0 + WINDOW_SECS + 1) else {
        panic!("previous window")
    };
    let mut expected = [0u64; RATE_BUCKETS.len() + 1];
    expected[0] = 1; // 1/3600
    expected[1] = 1; // 10/3600 ≤ 1/256
    expected[5] = 1; // 1/s ≤ 1
    assert_eq!(before.rate_buckets, expected);
    let mut text = String::new();
    p.render(&mut text, T0 + WINDOW_SECS + 1);
    assert!(
        text.contains("authtime_clients_by_request_rate{window=\"previous\",le=\"1\"} 3\n"),
        "{text}"
    );
    assert!(
        text.contains("authtime_clients_by_request_rate{window=\"previous\",le=\"+Inf\"} 3\n"),
        "{text}"
    );
    assert!(
        text.contains("authtime_clients{protocol=\"ntp\",window=\"previous\"} 3\n"),
        "{text}"
    );
    assert!(
        text.contains("authtime_clients{protocol=\"any\",window=\"current\"} 0\n"),
        "{text}"
    );
    // One HELP and TYPE line per family, and no address anywhere.
    assert_eq!(text.matches("# TYPE authtime_clients gauge").count(), 1);
    assert!(!text.contains("10.0.0"), "{text}");
}

#[test]
fn more_sources_than_the_table_holds_are_estimated_and_counted_as_untracked() {
    let p = ClientPopulation::new(KEY, T0);
    let n = 3 * TABLE_SIZE as u32;
    let batch: Vec<_> = (0..n)
        .map(|i| (v4(i), Protocol::Ntp, Outcome::Served))
        .collect();
    p.record_batch(T0 + 1, &batch);
    let [Some(now), _] = p.snapshot(T0 + 2) else {
        panic!("a window")
    };
    assert!(now.tracked <= TABLE_SIZE);
    assert!(now.tracked > TABLE_SIZE * 9 / 10, "{}", now.tracked);
    assert_eq!(now.tracked as u64 + now.untracked_requests, u64::from(n));
    // The estimate still sees them all, within 5 % (3 standard errors).
    assert!((now.any / f64::from(n) - 1.0).abs() < 0.05, "{}", now.any);
}

#[test]
fn rates_count_from_the_start_of_the_server_in_its_first_window() {
    let p = ClientPopulation::new(KEY, T0 + 3000);
    p.record_batch(T0 + 3000, &[(v4(1), Protocol::Ntp, Outcome::Served); 600]);
    let [Some(now), _] = p.snapshot(T0 + 3600 - 1) else {
        panic!("a window")
    };
    // 600 requests in 599 s: just above 1/s, not 600/3599.
    assert_eq!(now.seconds, 599);
    assert_eq!(now.rate_buckets[6], 1, "{:?}", now.rate_buckets);
    // The next window counts from its start.
    let [Some(now), Some(before)] = p.snapshot(T0 + 3600 + 10) else {
        panic!("two windows")
    };
    assert_eq!((now.seconds, before.seconds), (10, 600));
}
