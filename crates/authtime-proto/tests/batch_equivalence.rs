//! `Server::handle_batch` must give exactly what `Server::handle` gives one
//! datagram at a time: the same bytes, the same actions, the same counter
//! events in the same order.

use authtime_keys::{KeyMaterial, KeySet, KeyType};
use authtime_proto::{
    AuthFailurePolicy, BatchItem, ClientConfig, DropReason, MAX_BATCH, Server, ServerAction,
    ServerConfig, ServerStats, build_request,
};
use authtime_wire::NtpTimestamp;

/// Every event, in order.
#[derive(Debug, Default, PartialEq)]
struct EventLog(Vec<String>);

impl ServerStats for EventLog {
    fn received(&mut self) {
        self.0.push("received".into());
    }
    fn answered(&mut self, authenticated: bool) {
        self.0.push(format!("answered {authenticated}"));
    }
    fn dropped(&mut self, reason: &DropReason) {
        self.0.push(format!("dropped {reason:?}"));
    }
    fn mac_failure(&mut self, key_id: u32) {
        self.0.push(format!("mac_failure {key_id}"));
    }
    fn crypto_nak(&mut self) {
        self.0.push("crypto_nak".into());
    }
    fn rate_limited(&mut self) {
        self.0.push("rate_limited".into());
    }
}

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

fn keys() -> KeySet {
    KeySet::new(&[
        KeyMaterial::new(1, KeyType::Md5, &[1; 16]),
        KeyMaterial::new(2, KeyType::Sha1, &[2; 20]),
        KeyMaterial::new(3, KeyType::Aes128Cmac, &[3; 16]),
        KeyMaterial::new(4, KeyType::Sha256, &[4; 32]),
        KeyMaterial::new(5, KeyType::Aes256Cmac, &[5; 32]),
        KeyMaterial::new(70_000, KeyType::Sha1, &[6; 40]),
    ])
    .expect("keys")
}

/// A mix of good requests under every key and version, corrupted ones,
/// unknown keys, other modes, and junk.
fn random_request(rng: &mut Rng, keys: &KeySet) -> Vec<u8> {
    let key_ids = [
        None,
        Some(1),
        Some(2),
        Some(3),
        Some(4),
        Some(5),
        Some(70_000),
        Some(9),
    ];
    let key_id = key_ids[rng.below(key_ids.len() as u64) as usize];
    let version = [4, 4, 4, 3, 2][rng.below(5) as usize];
    let config = ClientConfig {
        version,
        ..ClientConfig::default()
    };
    let tx = NtpTimestamp::from_bits(rng.next());
    let mut buf = [0u8; 128];
    // Key 9 does not exist: sign with key 1 and rename.
    let signing = key_id.map(|id| if id == 9 { 1 } else { id });
    let (n, _) =
        build_request(&config, tx, signing.and_then(|id| keys.get(id)), &mut buf).expect("request");
    let mut req = buf[..n].to_vec();
    if key_id == Some(9) {
        req[48..52].copy_from_slice(&9u32.to_be_bytes());
    }
    match rng.below(10) {
        0 => {
            let i = rng.below(req.len() as u64) as usize;
            req[i] ^= 1 << rng.below(8);
        }
        1 => req.truncate(rng.below(req.len() as u64) as usize),
        2 => req[0] = (req[0] & !7) | 4,
        3 => req = (0..rng.below(100)).map(|_| rng.next() as u8).collect(),
        _ => {}
    }
    req
}

fn compare(server: &Server, keys: &KeySet, requests: &[Vec<u8>]) {
    let tx = NtpTimestamp::from_parts(3_900_000_123, 77);
    let recv = |i: usize| NtpTimestamp::from_parts(3_900_000_123, i as u32 * 1000);

    let mut single_log = EventLog::default();
    let mut singles = Vec::new();
    for (i, req) in requests.iter().enumerate() {
        let mut out = [0u8; 256];
        let action = server.handle(req, recv(i), tx, keys, &mut out, &mut single_log);
        singles.push((action, out));
    }

    let mut outs = vec![[0u8; 256]; requests.len()];
    let mut items: Vec<BatchItem<'_, '_>> = requests
        .iter()
        .zip(outs.iter_mut())
        .enumerate()
        .map(|(i, (req, out))| BatchItem::new(req, recv(i), out))
        .collect();
    let mut batch_log = EventLog::default();
    server.handle_batch(&mut items, tx, keys, &mut batch_log);

    assert_eq!(batch_log, single_log);
    for (i, (item, (action, out))) in items.iter().zip(&singles).enumerate() {
        assert_eq!(item.action, *action, "request {i}");
        if let ServerAction::Send(len) = action {
            assert_eq!(item.out[..*len], out[..*len], "request {i}");
        }
    }
}

#[test]
fn batches_equal_one_by_one_for_random_mixes() {
    let keys = keys();
    let mut rng = Rng(0x0123_4567_89ab_cdef);
    for policy in [AuthFailurePolicy::Drop, AuthFailurePolicy::CryptoNak] {
        let server = Server::new(ServerConfig {
            auth_failure: policy,
            ..ServerConfig::default()
        });
        for round in 0..200 {
            let len = [1, 2, 7, 32, 63, 64, 65, 150][round % 8];
            let requests: Vec<Vec<u8>> =
                (0..len).map(|_| random_request(&mut rng, &keys)).collect();
            compare(&server, &keys, &requests);
        }
    }
}

#[test]
fn a_full_batch_under_one_key_is_one_group() {
    let keys = keys();
    let server = Server::default();
    let mut buf = [0u8; 128];
    let requests: Vec<Vec<u8>> = (0..2 * MAX_BATCH as u64 + 5)
        .map(|i| {
            let (n, _) = build_request(
                &ClientConfig::default(),
                NtpTimestamp::from_bits(i),
                keys.get(3),
                &mut buf,
            )
            .expect("request");
            buf[..n].to_vec()
        })
        .collect();
    compare(&server, &keys, &requests);
}

#[test]
fn empty_batch_does_nothing() {
    let mut log = EventLog::default();
    Server::default().handle_batch(&mut [], NtpTimestamp::ZERO, &keys(), &mut log);
    assert!(log.0.is_empty());
}
