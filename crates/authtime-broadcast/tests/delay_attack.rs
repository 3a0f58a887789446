//! The client against a delaying attacker, on a simulated clock (sans-IO):
//! delays within the TESLA safety margin only lower the samples and stay
//! inside the reported uncertainty; longer delays make packets unsafe; the
//! step limit refuses large moves. Also the packet layout round trip.

use authtime_broadcast::{
    Bootstrap, BroadcastClient, ClientConfig, Rejection,
    wire::{self, EF_TESLA},
};
use authtime_sign::{Scheme, SigningKey};
use authtime_tesla::{Params, ReceiverConfig, Sender, SyncClient, Time, mac_by_name};
use authtime_tesla_dtls::{SchemeSigner, SchemeVerifier};
use authtime_wire::{Header, LeapIndicator, Mode, NtpTimestamp, Packet};

const MS: u64 = 1_000_000;
const T0: u64 = 1_700_000_000_000_000_000;
/// sender - local.
const OFFSET: u64 = 5_000 * MS;
const INTERVAL: u64 = 10 * MS;
const DELAY: u32 = 3;

struct World {
    sender: Sender,
    client: BroadcastClient,
    /// Sender time.
    now: u64,
}

fn world(config: ClientConfig) -> World {
    let params = Params {
        t0: Time(T0),
        interval_ns: INTERVAL,
        disclosure_delay: DELAY,
        chain_len: 1024,
        mac: mac_by_name("hmac-sha256").expect("mac"),
        tag_len: 16,
        rollover_lead: 8,
    };
    let start = T0 + 20 * INTERVAL;
    let mut sender = Sender::new(params, [7; 32], Time(start)).expect("sender");
    let key = SigningKey::generate_from_seed(Scheme::Ed25519, [1; 32]);
    let verifier = SchemeVerifier(key.verifying_key());
    let mut signer = SchemeSigner(key);
    // Request leaves at local L, answered 1 ms later (sender time), back 1 ms after.
    let local = start - OFFSET;
    let (mut sync, request) =
        SyncClient::new(&[9; 32], Time(local), ReceiverConfig::default()).expect("sync");
    let frags = sender
        .sync_response(&request, Time(start + MS), &mut signer)
        .expect("response");
    let mut receiver = None;
    for f in frags {
        receiver = sync
            .handle(&f, Time(local + 2 * MS), &verifier)
            .expect("bootstrap");
    }
    let receiver = receiver.expect("receiver");
    let bound = *receiver.clock_bound();
    let lower = (start + MS) as i64 - (local + 2 * MS) as i64;
    World {
        sender,
        client: BroadcastClient::new(
            receiver,
            Bootstrap {
                bound,
                lower_offset_ns: lower,
            },
            config,
            (T0 / 1_000_000_000) as i64,
        ),
        now: start + 2 * MS,
    }
}

/// A broadcast packet of a synchronized stratum-2 sender.
fn datagram(sender: &mut Sender, now: u64) -> Vec<u8> {
    datagram_with(sender, now, LeapIndicator::NoWarning, 2)
}

fn datagram_with(sender: &mut Sender, now: u64, leap: LeapIndicator, stratum: u8) -> Vec<u8> {
    let mut h = Header::new(Mode::Broadcast);
    h.leap = leap;
    h.stratum = stratum;
    h.transmit_ts =
        NtpTimestamp::from_unix((now / 1_000_000_000) as i64, (now % 1_000_000_000) as u32);
    let payload = wire::header_bytes(&h).expect("header");
    wire::encode(&sender.packet(&payload, Time(now)).expect("packet")).expect("encode")
}

/// Sends one packet per interval for `count` intervals, each delivered after
/// `delay` ns; returns (accepted, rejected) samples.
fn run(w: &mut World, count: u32, delay: u64) -> (usize, Vec<Rejection>) {
    let mut accepted = 0;
    let mut rejected = Vec::new();
    for _ in 0..count {
        w.now += INTERVAL;
        let d = datagram(&mut w.sender, w.now);
        let arrival = w.now - OFFSET + delay;
        for s in w.client.handle(&d, Time(arrival)) {
            match s.verdict {
                Ok(()) => accepted += 1,
                Err(r) => rejected.push(r),
            }
        }
    }
    (accepted, rejected)
}

fn error_within_uncertainty(w: &World) {
    let local = w.now - OFFSET;
    let estimate = w.client.offset_ns().expect("estimate");
    let error = OFFSET as i64 - estimate;
    let uncertainty = w.client.uncertainty_ns(Time(local)).expect("uncertainty");
    assert!(error >= 0, "samples are lower bounds: {error}");
    assert!(
        error as u64 <= uncertainty,
        "error {error} > uncertainty {uncertainty}"
    );
}

#[test]
fn layout_round_trips_and_is_a_valid_ntp_packet() {
    let mut w = world(ClientConfig::default());
    let d = datagram(&mut w.sender, w.now + INTERVAL);
    assert_eq!(d.len(), 108);
    let p = Packet::decode(&d).expect("NTP packet");
    assert_eq!(p.header().mode, Mode::Broadcast);
    assert_eq!(
        p.extension_fields().iter().next().map(|f| f.field_type),
        Some(EF_TESLA)
    );
    let u = wire::decode(&d, 16).expect("decode");
    assert_eq!(&u.tesla_packet[1..49], &d[..48]);
}

#[test]
fn a_sender_that_says_it_is_unsynchronized_gives_no_time() {
    let mut w = world(ClientConfig::default());
    for (leap, stratum) in [
        (LeapIndicator::Unsynchronized, 0),
        (LeapIndicator::Unsynchronized, 2),
        (LeapIndicator::NoWarning, 0),
        (LeapIndicator::NoWarning, 16),
    ] {
        let mut rejected = Vec::new();
        for _ in 0..6 {
            w.now += INTERVAL;
            let d = datagram_with(&mut w.sender, w.now, leap, stratum);
            for s in w.client.handle(&d, Time(w.now - OFFSET + MS)) {
                assert_eq!(
                    s.verdict,
                    Err(Rejection::Unsynchronized),
                    "{leap:?} {stratum}"
                );
                rejected.push(s);
            }
        }
        assert!(
            !rejected.is_empty(),
            "{leap:?} {stratum}: authenticated packets were released"
        );
    }
    assert_eq!(w.client.stats().accepted, 0);
    assert!(w.client.stats().unsynchronized >= 4);
    assert_eq!(
        w.client.offset_ns(),
        None,
        "no estimate from an unsynchronized sender"
    );
}

#[test]
fn honest_packets_give_time_within_the_uncertainty() {
    let mut w = world(ClientConfig::default());
    let (accepted, rejected) = run(&mut w, 40, MS);
    assert!(accepted >= 35, "{accepted} {rejected:?}");
    assert!(rejected.is_empty());
    error_within_uncertainty(&w);
    let error = OFFSET as i64 - w.client.offset_ns().expect("estimate");
    assert!(error <= MS as i64 + 1, "{error}");
}

#[test]
fn delays_inside_the_margin_stay_inside_the_uncertainty() {
    let mut w = world(ClientConfig::default());
    run(&mut w, 20, MS);
    // The attacker now holds every packet back by 15 ms (< d * T_int).
    let (accepted, _) = run(&mut w, 40, 15 * MS);
    assert!(accepted > 0);
    error_within_uncertainty(&w);
}

#[test]
fn delays_beyond_the_margin_are_unsafe_and_give_no_time() {
    let mut w = world(ClientConfig::default());
    run(&mut w, 20, MS);
    let before = w.client.stats();
    let (accepted, _) = run(&mut w, 40, 45 * MS);
    let after = w.client.stats();
    assert!(
        after.unsafe_dropped >= before.unsafe_dropped + 35,
        "{after:?}"
    );
    assert!(accepted <= 3, "only packets already buffered: {accepted}");
    error_within_uncertainty(&w);
}

#[test]
fn the_step_limit_refuses_a_large_move() {
    let mut w = world(ClientConfig {
        max_step_ns: 5 * MS,
        ..ClientConfig::default()
    });
    run(&mut w, 20, MS);
    let estimate = w.client.offset_ns();
    let (_, rejected) = run(&mut w, 30, 15 * MS);
    assert!(
        rejected
            .iter()
            .filter(|r| **r == Rejection::StepTooLarge)
            .count()
            >= 20
    );
    assert_eq!(w.client.offset_ns(), estimate);
}
