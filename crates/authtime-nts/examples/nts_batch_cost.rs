//! Where an NTS exchange's server work goes, in process: the thread CPU time
//! of `prepare_batch` + `finish` over batches of 8 chrony-shaped requests
//! (AES-SIV-CMAC-256 sessions, one cookie, no placeholder). Not a test and
//! not a comparison with a peer: a tool to profile with (`perf record`).
//!
//!   cargo run --release -p authtime-nts --example nts_batch_cost [ROUNDS]

use std::time::Instant;

use authtime_nts::aead::AeadAlgorithm;
use authtime_nts::client::build_request;
use authtime_nts::cookie::{SessionKeys, seal_cookie};
use authtime_nts::key_ring::{CookieAead, KeyRing, RotationPolicy};
use authtime_nts::server::{HeaderFor, NtsServer};
use authtime_nts::{MAX_BATCH, PreparedNts};
use authtime_wire::{Header, Mode, NtpTimestamp};

const NOW: u64 = 20_000 * 86_400;

/// Not a secure generator: the daemon's nonces come from its `RandomPool`.
fn fill(state: &mut u64, buf: &mut [u8]) {
    for chunk in buf.chunks_mut(8) {
        *state ^= *state << 13;
        *state ^= *state >> 7;
        *state ^= *state << 17;
        chunk.copy_from_slice(&state.to_le_bytes()[..chunk.len()]);
    }
}

fn main() {
    let rounds: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(200_000);
    let mut s = 0x1234_5678_9abc_def1_u64;
    let ring = KeyRing::new(RotationPolicy::default())
        .plan_with(
            NOW,
            &mut |b: &mut [u8]| fill(&mut s, b),
            CookieAead::Fixed(AeadAlgorithm::AesSivCmac256),
        )
        .expect("ring");
    let requests: Vec<Vec<u8>> = (0..MAX_BATCH)
        .map(|_| {
            let mut c2s = [0u8; 32];
            let mut s2c = [0u8; 32];
            fill(&mut s, &mut c2s);
            fill(&mut s, &mut s2c);
            let keys = SessionKeys::new(AeadAlgorithm::AesSivCmac256, &c2s, &s2c).expect("keys");
            let mut cookie = vec![0u8; 256];
            let n = seal_cookie(
                ring.sealing_key(NOW).expect("key"),
                &keys,
                &mut |b: &mut [u8]| fill(&mut s, b),
                &mut cookie,
            )
            .expect("cookie");
            cookie.truncate(n);
            let mut request = vec![0u8; 1280];
            let pending = build_request(
                &Header::new(Mode::Client),
                &keys,
                &cookie,
                0,
                &mut |b: &mut [u8]| fill(&mut s, b),
                &mut request,
            )
            .expect("request");
            request.truncate(pending.len());
            request
        })
        .collect();
    let refs: Vec<&[u8]> = requests.iter().map(Vec::as_slice).collect();
    let server = NtsServer::new();
    let mut bufs = vec![[0u8; 1280]; MAX_BATCH];
    let header = |_: HeaderFor| {
        let mut h = Header::new(Mode::Server);
        h.transmit_ts = NtpTimestamp::from_bits(0x5555_6666_7777_8888);
        h
    };
    let start = Instant::now();
    let mut replies = 0usize;
    for _ in 0..rounds {
        let mut prepared: [PreparedNts; MAX_BATCH] = Default::default();
        {
            let mut outs: Vec<&mut [u8]> = bufs.iter_mut().map(|b| &mut b[..]).collect();
            server.prepare_batch(
                &refs,
                &ring,
                NOW,
                &mut |b: &mut [u8]| fill(&mut s, b),
                &mut outs,
                &mut prepared,
            );
        }
        for (k, request) in refs.iter().enumerate() {
            if server
                .finish(
                    request,
                    &prepared[k],
                    &ring,
                    NOW,
                    &mut |b: &mut [u8]| fill(&mut s, b),
                    &mut bufs[k],
                    header,
                )
                .is_ok()
            {
                replies += 1;
            }
        }
    }
    let per = start.elapsed().as_secs_f64() / (rounds * MAX_BATCH) as f64;
    println!(
        "{replies} replies, {:.3} us per exchange (wall, batches of {MAX_BATCH})",
        per * 1e6
    );
}
