//! `authtime serve` as an NTS pool member (`[nts-ke] pool-token-files`): a
//! load balancer's Fixed Key Request over a raw rustls connection, then the
//! returned cookie used in an NTS-protected NTP request sealed with the fixed
//! keys, answered by the server; a token file others can read stops the start;
//! a rewritten token file (SIGHUP) changes which token is accepted.

mod hostile_support;
mod ntp_support;

use std::io::{Read as _, Write as _};
use std::net::{SocketAddr, TcpStream, UdpSocket};
use std::os::unix::fs::PermissionsExt as _;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use authtime_nts::{AeadAlgorithm, SessionKeys};
use authtime_ntske::message::decode_message;
use authtime_ntske::pool_record::PoolRecord;
use authtime_ntske::record::encode_records;
use authtime_ntske::tls_config::client_config;
use authtime_ntske::{MessageLimits, Record};
use hostile_support::{Exchange, Rng, exchange, nts_config};
use ntp_support::{Serve, TempDir, authtime_bin, nts_cert, wait_bounded, write_private};

const TOKEN: &str = "kelb-token-for-the-daemon-test";

fn member_config() -> String {
    nts_config(
        "",
        "pool-token-files = [\"pool-token\"]\nclient-limit = false\ncertificate-check-interval = 0",
        "[keystore]\npath = \"master-keys\"\n",
    )
}

/// One NTS-KE request over TLS (rustls, ALPN ntske/1, the test CA); the
/// records of the response, read until the server closes.
fn ke_request(addr: SocketAddr, ca: &Path, request: &[u8]) -> Vec<Record> {
    let config = client_config(Some(ca)).expect("client config");
    let name = rustls::pki_types::ServerName::try_from("localhost").expect("name");
    let connection = rustls::ClientConnection::new(Arc::clone(&config), name).expect("tls");
    let tcp = TcpStream::connect_timeout(&addr, Duration::from_secs(2)).expect("connect");
    tcp.set_read_timeout(Some(Duration::from_secs(5)))
        .expect("timeout");
    let mut tls = rustls::StreamOwned::new(connection, tcp);
    tls.write_all(request).expect("write");
    tls.flush().expect("flush");
    let mut response = Vec::new();
    tls.read_to_end(&mut response)
        .expect("read to the server's close");
    decode_message(&response, MessageLimits::RESPONSE).expect("one message")
}

fn fixed_key_request(token: &str, c2s: &[u8], s2c: &[u8]) -> Vec<u8> {
    encode_records(&[
        PoolRecord::Authentication(token.into()).to_record(),
        Record::NextProtocol(vec![0]),
        Record::AeadAlgorithm(vec![15]),
        PoolRecord::FixedKey {
            c2s: c2s.to_vec(),
            s2c: s2c.to_vec(),
        }
        .to_record(),
        Record::EndOfMessage,
    ])
    .expect("encodable")
}

fn cookies(records: &[Record]) -> Vec<Vec<u8>> {
    records
        .iter()
        .filter_map(|r| match r {
            Record::NewCookie(c) => Some(c.clone()),
            _ => None,
        })
        .collect()
}

#[test]
fn cookies_for_fixed_keys_are_answered_under_those_keys() {
    let dir = TempDir::new("nts-pool-member");
    nts_cert(&dir, "nts", &[]);
    write_private(&dir.path("pool-token"), &format!("{TOKEN}\n"));
    let serve = Serve::start(&dir, &member_config());
    let ke = serve.nts_ke.expect("NTS-KE");
    let ca = dir.path("nts-ca.pem");

    let (c2s, s2c) = ([0x5au8; 32], [0xa5u8; 32]);
    let answer = ke_request(ke, &ca, &fixed_key_request(TOKEN, &c2s, &s2c));
    assert_eq!(answer[0], Record::NextProtocol(vec![0]));
    assert_eq!(answer[1], Record::AeadAlgorithm(vec![15]));
    let jar = cookies(&answer);
    assert_eq!(jar.len(), 8, "{answer:?}");

    // The cookie, with the keys the "load balancer" chose, in real NTS NTP.
    let keys = SessionKeys::new(AeadAlgorithm::AesSivCmac256, &c2s, &s2c).expect("keys");
    let socket = UdpSocket::bind("127.0.0.1:0").expect("udp");
    let mut rng = Rng::new(7);
    match exchange(
        &socket,
        serve.addr,
        &keys,
        &jar[0],
        0,
        &mut rng,
        Duration::from_secs(3),
    ) {
        Exchange::Time(fresh) => assert_eq!(fresh.len(), 1, "a fresh cookie in the reply"),
        Exchange::Nak => panic!("NTS NAK for a fixed-key cookie"),
        Exchange::Lost => panic!("no authenticated answer: {}", serve.log_text()),
    }
    // Other keys cannot use that cookie: the server cannot authenticate it.
    let wrong = SessionKeys::new(AeadAlgorithm::AesSivCmac256, &[1; 32], &s2c).expect("keys");
    assert!(!matches!(
        exchange(
            &socket,
            serve.addr,
            &wrong,
            &jar[1],
            0,
            &mut rng,
            Duration::from_millis(500)
        ),
        Exchange::Time(_)
    ));
    assert_eq!(
        serve.wait_metric(
            "authtime_ntske_pool_requests_total{kind=\"fixed_key\",outcome=\"ok\"}",
            1
        ),
        1
    );

    // A wrong token: Error 0, as from a server that is no pool member.
    let refused = ke_request(ke, &ca, &fixed_key_request("not-the-token", &c2s, &s2c));
    assert_eq!(refused, vec![Record::Error(0), Record::EndOfMessage]);
    assert_eq!(
        serve.wait_metric(
            "authtime_ntske_pool_requests_total{kind=\"fixed_key\",outcome=\"not_authorized\"}",
            1
        ),
        1
    );
    assert!(
        !serve.log_text().contains(TOKEN),
        "the token never reaches the log"
    );
    assert!(!serve.scrape().contains(TOKEN));
}

#[test]
fn a_rewritten_token_file_changes_the_accepted_token_on_sighup() {
    let dir = TempDir::new("nts-pool-reload");
    nts_cert(&dir, "nts", &[]);
    write_private(&dir.path("pool-token"), TOKEN);
    let serve = Serve::start(&dir, &member_config());
    let ke = serve.nts_ke.expect("NTS-KE");
    let ca = dir.path("nts-ca.pem");
    let served = |token: &str| {
        let answer = ke_request(ke, &ca, &fixed_key_request(token, &[3; 32], &[4; 32]));
        cookies(&answer).len() == 8
    };
    assert!(served(TOKEN));
    assert!(!served("rotated-token"));

    write_private(&dir.path("pool-token"), "rotated-token\n");
    serve.process.signal("HUP");
    let deadline = Instant::now() + Duration::from_secs(5);
    while !served("rotated-token") {
        assert!(Instant::now() < deadline, "{}", serve.log_text());
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(!served(TOKEN));
    assert!(serve.log_text().contains("NTS pool tokens reloaded"));
    assert!(!serve.log_text().contains("rotated-token"));
}

#[test]
fn a_token_file_others_can_read_stops_the_start() {
    let dir = TempDir::new("nts-pool-mode");
    nts_cert(&dir, "nts", &[]);
    let token = dir.path("pool-token");
    std::fs::write(&token, TOKEN).expect("write");
    std::fs::set_permissions(&token, std::fs::Permissions::from_mode(0o644)).expect("chmod");
    let config = dir.path("serve.toml");
    std::fs::write(
        &config,
        format!("{}\n{}", member_config(), ntp_support::LAB_CLOCK),
    )
    .expect("config");
    let log = dir.path("serve.log");
    let mut child = Command::new(authtime_bin())
        .args(["serve", "--config"])
        .arg(&config)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&log).expect("log"))
        .spawn()
        .expect("start authtime serve");
    let status = wait_bounded(&mut child, Duration::from_secs(10));
    let text = std::fs::read_to_string(&log).unwrap_or_default();
    let Some(status) = status else {
        let _ = child.kill();
        let _ = child.wait();
        panic!("authtime serve started with a 0644 token file: {text}");
    };
    assert!(!status.success(), "{text}");
    assert!(
        text.contains(&token.display().to_string())
            && text.contains("0644")
            && text.contains("chmod 600"),
        "{text}"
    );
    assert!(!text.contains(TOKEN), "{text}");
}
