//! Sans-IO backend selection of the NTS-KE load balancer (KELB) of
//! draft-ietf-ntp-nts-keyexchange-pool-00.
//!
//! The client's request is read as an ordinary RFC 8915 request (the same checks and
//! error codes as [`crate::server_core`]; an unknown critical record is Error 0), and
//! its NTP Server Deny records (13) are collected. A backend is then chosen by smooth
//! weighted round-robin (nginx's: deterministic, spreads each backend's turns
//! evenly) among the backends that are up, not denied by name, not already tried for
//! this request, speak NTPv4 and share an AEAD with the client; the AEAD is the
//! client's first that the backend supports, with the AES-128-GCM-SIV rule of
//! `choose_aead` (chrony).

use crate::pool_client::Support;
use crate::pool_record::{MAX_TEXT_LEN, PoolRecord};
use crate::record::{NEXT_PROTOCOL_NTPV4, Record};
use crate::server_core::{Request, RequestError, choose_aead, parse_request};

/// Most NTP Server Deny records kept from one request; more are ignored.
pub const MAX_DENIED: usize = 16;

/// A client's request, checked.
pub struct ClientRequest {
    request: Request,
    denied: Vec<String>,
}

impl std::fmt::Debug for ClientRequest {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClientRequest")
            .field("protocols", &self.request.protocols)
            .field("aeads", &self.request.aeads)
            .field("denied", &self.denied)
            .finish()
    }
}

impl ClientRequest {
    /// Whether the client offered NTPv4.
    pub fn offers_ntpv4(&self) -> bool {
        self.request.protocols.contains(&NEXT_PROTOCOL_NTPV4)
    }

    /// The AEADs the client offered, in its order.
    pub fn aeads(&self) -> &[u16] {
        self.request.aeads.as_deref().unwrap_or_default()
    }

    /// The server names the client does not want (NTP Server Deny).
    pub fn denied(&self) -> &[String] {
        &self.denied
    }

    fn denies(&self, name: &str) -> bool {
        self.denied.iter().any(|d| d.eq_ignore_ascii_case(name))
    }
}

/// Reads a client's request. Errors are those of the local server, with the same
/// Error codes; a malformed NTP Server Deny record (not critical) is ignored.
pub fn parse_client_request(records: &[Record]) -> Result<ClientRequest, RequestError> {
    let request = parse_request(records)?;
    if request.protocols.contains(&NEXT_PROTOCOL_NTPV4) {
        match &request.aeads {
            Some(a) if a.is_empty() => return Err(RequestError::EmptyAeadList),
            Some(_) => {}
            None => return Err(RequestError::AeadAlgorithmCount(0)),
        }
    }
    let denied = records
        .iter()
        .filter_map(|r| match &PoolRecord::from_record(r) {
            Some(Ok(PoolRecord::NtpServerDeny(name))) if name.len() <= MAX_TEXT_LEN => {
                Some(name.clone())
            }
            _ => None,
        })
        .take(MAX_DENIED)
        .collect();
    Ok(ClientRequest { request, denied })
}

/// What the balancer knows of one backend.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BackendStatus {
    /// Its name (the NTP server name clients get, and what NTP Server Deny matches).
    pub name: String,
    /// Its share of the clients, at least 1.
    pub weight: u32,
    /// Whether its last health check (or connection) succeeded.
    pub up: bool,
    /// AEADs it supports with the key lengths of RFC 8915, from its last Support answer.
    pub aeads: Vec<u16>,
    /// Whether it announced NTPv4.
    pub ntpv4: bool,
}

/// The balancer's decision for one request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Selection {
    /// Send the client to backend `index` with `aead_id`; `confirm_compliant`: answer
    /// with chrony's compliant-128gcm record.
    Backend {
        /// Index in the backend list.
        index: usize,
        /// The AEAD to export keys for.
        aead_id: u16,
        /// Whether to confirm chrony's compliant-128gcm record.
        confirm_compliant: bool,
    },
    /// The client did not offer NTPv4: answer with an empty Next Protocol record.
    NoCommonProtocol,
    /// Backends are available, but none supports any of the client's AEADs: answer
    /// with an empty AEAD record.
    NoCommonAead,
    /// No backend is up (or all are denied or tried): Internal Server Error.
    NoBackend,
}

/// The backends and the round-robin state.
#[derive(Clone, Debug)]
pub struct BalancerCore {
    backends: Vec<BackendStatus>,
    /// AEADs the balancer may choose; empty: any a backend supports.
    allowed_aeads: Vec<u16>,
    /// Smooth weighted round-robin: each backend's current weight.
    current: Vec<i64>,
}

impl BalancerCore {
    /// Backends named and weighted (a weight of 0 counts as 1), all down until a
    /// health check says otherwise.
    pub fn new(backends: impl IntoIterator<Item = (String, u32)>) -> Self {
        let backends: Vec<BackendStatus> = backends
            .into_iter()
            .map(|(name, weight)| BackendStatus {
                name,
                weight: weight.max(1),
                up: false,
                aeads: Vec::new(),
                ntpv4: false,
            })
            .collect();
        let current = vec![0; backends.len()];
        Self {
            backends,
            allowed_aeads: Vec::new(),
            current,
        }
    }

    /// Chooses only among `aeads` (the server's own AEAD setting), whatever the
    /// backends support; empty allows every AEAD a backend supports.
    pub fn with_allowed_aeads(mut self, aeads: Vec<u16>) -> Self {
        self.allowed_aeads = aeads;
        self
    }

    /// The backends, in configuration order.
    pub fn backends(&self) -> &[BackendStatus] {
        &self.backends
    }

    /// Records a health check: `Some(support)` for a good answer, `None` for a failure.
    pub fn record_check(&mut self, index: usize, support: Option<&Support>) {
        let Some(b) = self.backends.get_mut(index) else {
            return;
        };
        match support {
            Some(s) => {
                b.up = true;
                b.aeads = s.usable_aeads();
                if !self.allowed_aeads.is_empty() {
                    b.aeads.retain(|id| self.allowed_aeads.contains(id));
                }
                b.ntpv4 = s.protocols.contains(&NEXT_PROTOCOL_NTPV4);
            }
            None => b.up = false,
        }
    }

    /// Marks a backend down (its connection failed) until its next good check.
    pub fn mark_down(&mut self, index: usize) {
        if let Some(b) = self.backends.get_mut(index) {
            b.up = false;
        }
    }

    /// Chooses a backend for `request`, skipping the indexes in `tried`.
    pub fn select(&mut self, request: &ClientRequest, tried: &[usize]) -> Selection {
        if !request.offers_ntpv4() {
            return Selection::NoCommonProtocol;
        }
        let candidates: Vec<usize> = (0..self.backends.len())
            .filter(|i| {
                let b = &self.backends[*i];
                b.up && b.ntpv4 && !tried.contains(i) && !request.denies(&b.name)
            })
            .collect();
        if candidates.is_empty() {
            return Selection::NoBackend;
        }
        let eligible: Vec<(usize, u16, bool)> = candidates
            .iter()
            .filter_map(|&i| {
                choose_aead(&request.request, &self.backends[i].aeads)
                    .map(|(aead, confirm)| (i, aead, confirm))
            })
            .collect();
        if eligible.is_empty() {
            return Selection::NoCommonAead;
        }
        let total: i64 = eligible
            .iter()
            .map(|(i, ..)| i64::from(self.backends[*i].weight))
            .sum();
        let mut best: Option<(usize, u16, bool)> = None;
        for &(i, aead, confirm) in &eligible {
            self.current[i] += i64::from(self.backends[i].weight);
            if best.is_none_or(|(b, ..)| self.current[i] > self.current[b]) {
                best = Some((i, aead, confirm));
            }
        }
        let Some((index, aead_id, confirm_compliant)) = best else {
            return Selection::NoBackend;
        };
        self.current[index] -= total;
        Selection::Backend {
            index,
            aead_id,
            confirm_compliant,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pool_record::AlgorithmDescription;
    use crate::record::error_code;

    fn support(aeads: &[u16]) -> Support {
        Support {
            protocols: vec![0],
            algorithms: aeads
                .iter()
                .map(|&aead_id| AlgorithmDescription {
                    aead_id,
                    key_len: crate::aead::key_len(aead_id).expect("valid") as u16,
                })
                .collect(),
            keep_alive: false,
        }
    }

    fn core(weights: &[u32]) -> BalancerCore {
        let mut core = BalancerCore::new(
            weights
                .iter()
                .enumerate()
                .map(|(i, w)| (format!("b{i}.example"), *w)),
        );
        for i in 0..weights.len() {
            core.record_check(i, Some(&support(&[15, 17])));
        }
        core
    }

    fn request(aeads: &[u16], denied: &[&str]) -> ClientRequest {
        let mut records = vec![
            Record::NextProtocol(vec![0]),
            Record::AeadAlgorithm(aeads.to_vec()),
        ];
        for d in denied {
            records.push(PoolRecord::NtpServerDeny((*d).to_owned()).to_record());
        }
        records.push(Record::EndOfMessage);
        parse_client_request(&records).expect("valid")
    }

    fn index(s: Selection) -> usize {
        match s {
            Selection::Backend { index, .. } => index,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn weights_share_the_clients_smoothly() {
        let mut core = core(&[3, 1]);
        let req = request(&[15], &[]);
        let picks: Vec<usize> = (0..8).map(|_| index(core.select(&req, &[]))).collect();
        assert_eq!(picks.iter().filter(|i| **i == 0).count(), 6);
        assert_eq!(picks.iter().filter(|i| **i == 1).count(), 2);
        // Smooth: never the light backend twice in a row.
        assert!(picks.windows(2).all(|w| w != [1, 1]));
    }

    #[test]
    fn down_denied_and_tried_backends_are_skipped() {
        let mut core = core(&[1, 1, 1]);
        core.mark_down(0);
        let req = request(&[15], &["B1.EXAMPLE"]);
        assert_eq!(req.denied(), ["B1.EXAMPLE"]);
        for _ in 0..5 {
            assert_eq!(index(core.select(&req, &[])), 2);
        }
        assert_eq!(core.select(&req, &[2]), Selection::NoBackend);
        core.record_check(0, Some(&support(&[15])));
        assert_eq!(index(core.select(&req, &[2])), 0);
        core.record_check(0, None);
        core.record_check(2, None);
        assert_eq!(core.select(&req, &[]), Selection::NoBackend);
    }

    #[test]
    fn the_aead_is_the_clients_first_the_backend_supports() {
        let mut core = core(&[1, 1]);
        core.record_check(1, Some(&support(&[17])));
        let req = request(&[16, 17, 15], &[]);
        let mut seen = Vec::new();
        for _ in 0..2 {
            match core.select(&req, &[]) {
                Selection::Backend { index, aead_id, .. } => seen.push((index, aead_id)),
                other => panic!("{other:?}"),
            }
        }
        seen.sort_unstable();
        assert_eq!(seen, [(0, 17), (1, 17)]);
        // Only backend 0 has AEAD 15.
        let only_15 = request(&[15], &[]);
        for _ in 0..3 {
            assert_eq!(index(core.select(&only_15, &[])), 0);
        }
        assert_eq!(
            core.select(&request(&[31], &[]), &[]),
            Selection::NoCommonAead
        );
    }

    #[test]
    fn only_allowed_aeads_are_chosen() {
        let mut core = BalancerCore::new([("a".to_owned(), 1)]).with_allowed_aeads(vec![15]);
        core.record_check(0, Some(&support(&[17, 15])));
        assert_eq!(core.backends()[0].aeads, [15]);
        assert_eq!(
            core.select(&request(&[17, 15], &[]), &[]),
            Selection::Backend {
                index: 0,
                aead_id: 15,
                confirm_compliant: false
            }
        );
        assert_eq!(
            core.select(&request(&[17], &[]), &[]),
            Selection::NoCommonAead
        );
    }

    #[test]
    fn aead_30_follows_the_chrony_rule() {
        let mut core = core(&[1]);
        core.record_check(0, Some(&support(&[30, 15])));
        assert_eq!(
            core.select(&request(&[30, 15], &[]), &[]),
            Selection::Backend {
                index: 0,
                aead_id: 15,
                confirm_compliant: false
            }
        );
    }

    #[test]
    fn requests_are_checked_like_the_local_servers() {
        let unknown = [
            Record::NextProtocol(vec![0]),
            Record::AeadAlgorithm(vec![15]),
            PoolRecord::FixedKey {
                c2s: vec![1; 32],
                s2c: vec![2; 32],
            }
            .to_record(),
            Record::EndOfMessage,
        ];
        let e = parse_client_request(&unknown).expect_err("an error");
        assert_eq!(e.error_code(), error_code::UNRECOGNIZED_CRITICAL_RECORD);
        let no_aead = [Record::NextProtocol(vec![0]), Record::EndOfMessage];
        assert_eq!(
            parse_client_request(&no_aead)
                .expect_err("an error")
                .error_code(),
            error_code::BAD_REQUEST
        );
        let other_protocol = [Record::NextProtocol(vec![0x8001]), Record::EndOfMessage];
        let req = parse_client_request(&other_protocol).expect("valid");
        assert_eq!(core(&[1]).select(&req, &[]), Selection::NoCommonProtocol);
    }

    #[test]
    fn backends_without_ntpv4_or_checks_are_not_chosen() {
        let mut core = BalancerCore::new([("a".to_owned(), 0), ("b".to_owned(), 2)]);
        assert_eq!(core.backends()[0].weight, 1);
        let req = request(&[15], &[]);
        assert_eq!(core.select(&req, &[]), Selection::NoBackend);
        let mut no_ntp = support(&[15]);
        no_ntp.protocols = vec![0x8001];
        core.record_check(0, Some(&no_ntp));
        core.record_check(1, Some(&support(&[15])));
        for _ in 0..3 {
            assert_eq!(index(core.select(&req, &[])), 1);
        }
    }
}
