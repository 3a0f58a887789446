//! `authtime serve` answering bursts of NTS requests: requests that arrive
//! together are worked on together (the receive batch's cookies opened and
//! requests authenticated side by side), and each still gets its own
//! answer: a reply the client accepts, or the NAK a tampered request earns.

mod hostile_support;
mod ntp_support;

use std::collections::HashMap;
use std::net::{SocketAddr, UdpSocket};
use std::time::{Duration, Instant};

use authtime_nts::{ClientOutcome, PendingRequest, check_response};
use hostile_support::{Rng, nts_config, nts_request, session};
use ntp_support::{Serve, TempDir, metric, nts_cert};

/// What a request of the burst should get.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Expect {
    Time,
    Nak,
}

#[test]
fn a_burst_of_nts_requests_is_answered_request_by_request() {
    let dir = TempDir::new("nts-burst");
    nts_cert(&dir, "nts", &[]);
    let serve = Serve::start(
        &dir,
        // One client sends every burst: its rate limit would refuse most.
        &nts_config(
            "",
            "",
            "[keystore]\npath = \"keys\"\n[rate-limit]\nenabled = false\n",
        ),
    );
    let s = session(&dir, &serve, &dir.path("nts-ca.pem"));
    let to = SocketAddr::new([127, 0, 0, 1].into(), serve.addr.port());
    let socket = UdpSocket::bind("127.0.0.1:0").expect("bind");
    let mut rng = Rng::new(11);
    let (mut time, mut naks) = (0, 0);
    // A burst lands in one receive batch only when the worker is not
    // already awake; a few bursts make that all but certain.
    for burst in 0..20 {
        let mut pending: HashMap<[u8; 32], (PendingRequest, Expect)> = HashMap::new();
        let mut datagrams = vec![];
        for i in 0..24 {
            let cookie = &s.cookies[i % s.cookies.len()];
            // Mostly plain requests, one with placeholders (answered on its
            // own), and tampered ones: a flipped bit in the authenticator's
            // tag, or in the cookie.
            let placeholders = usize::from(i == 5) * 2;
            let (mut request, p) = nts_request(&s.keys, cookie, placeholders, &mut rng);
            let expect = match i % 6 {
                3 => {
                    let at = request.len() - 3;
                    request[at] ^= 0x10;
                    Expect::Nak
                }
                4 => {
                    // Byte 48 + 36 starts the cookie field; skip its header
                    // and the key id.
                    request[48 + 36 + 4 + 4 + 9] ^= 0x01;
                    Expect::Nak
                }
                _ => Expect::Time,
            };
            pending.insert(*p.unique_id(), (p, expect));
            datagrams.push(request);
        }
        for d in &datagrams {
            socket.send_to(d, to).expect("send");
        }
        let deadline = Instant::now() + Duration::from_secs(5);
        let mut buf = [0u8; 2048];
        while !pending.is_empty() && Instant::now() < deadline {
            socket
                .set_read_timeout(Some(Duration::from_millis(200)))
                .expect("timeout");
            let Ok(n) = socket.recv(&mut buf) else {
                continue;
            };
            let uid = pending.iter().find_map(|(uid, (p, expect))| {
                check_response(&buf[..n], p, &s.keys)
                    .ok()
                    .map(|outcome| (*uid, outcome, *expect))
            });
            let Some((uid, outcome, expect)) = uid else {
                panic!("burst {burst}: a reply no request of the burst accepts");
            };
            match outcome {
                ClientOutcome::Time { cookies, .. } => {
                    assert_eq!(
                        expect,
                        Expect::Time,
                        "burst {burst}: a tampered request got time"
                    );
                    assert!(!cookies.is_empty());
                    time += 1;
                }
                ClientOutcome::Nak { .. } => {
                    assert_eq!(
                        expect,
                        Expect::Nak,
                        "burst {burst}: a valid request got a NAK"
                    );
                    naks += 1;
                }
            }
            pending.remove(&uid);
        }
        assert!(
            pending.is_empty(),
            "burst {burst}: {} requests unanswered: {:?}\n{}",
            pending.len(),
            pending.values().map(|(_, e)| *e).collect::<Vec<_>>(),
            serve.scrape()
        );
        let metrics = serve.scrape();
        if metric(&metrics, "authtime_nts_batched_total") > 0 && burst >= 2 {
            break;
        }
    }
    let metrics = serve.scrape();
    let batched = metric(&metrics, "authtime_nts_batched_total");
    assert!(
        batched > 0,
        "no request was answered in a batch:\n{metrics}"
    );
    assert_eq!(
        metric(&metrics, "authtime_nts_answered_total"),
        time + 1,
        "the session's own query, then the bursts' replies"
    );
    assert!(naks > 0 && time > 0);
}
