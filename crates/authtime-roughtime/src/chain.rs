//! Asking several servers in order with chained nonces, the interval they
//! agree on, and malfeasance reports (draft-ietf-ntp-roughtime-19 §8).
//!
//! Sans-IO: the caller sends each request and brings back the response, and
//! gives the 32 random bytes each request needs. A server that does not
//! answer (or answers with something that does not verify) leaves the chain
//! as it was; the next request chains from the last verified response.
//!
//! Causal order (§8.1): response j was requested after response i (i < j)
//! and its nonce commits to i's response, so j's interval may not end before
//! i's begins: MIDP_i - RADI_i > MIDP_j + RADI_j proves that one of the two
//! servers lied, and the chain of requests and responses is the proof (§8.2).

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use serde::{Deserialize, Serialize};

use crate::ecosystem::decode_key;
use crate::error::Error;
use crate::request::{build_request, chained_nonce, parse_request, srv_value};
use crate::verify::{Verified, verify_response, verify_response_with};
use crate::version::{DRAFT_CONTEXTS, Version};

/// One verified exchange of the chain.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Link {
    /// The server's long-term key.
    pub public_key: [u8; 32],
    /// The random bytes hashed with the previous response into this nonce;
    /// `None` for the first link, whose nonce is the random bytes themselves.
    pub rand: Option<[u8; 32]>,
    /// The request packet sent.
    pub request: Vec<u8>,
    /// The response packet received.
    pub response: Vec<u8>,
    /// What the response proves.
    pub verified: Verified,
}

impl Link {
    /// [MIDP - RADI, MIDP + RADI], saturating.
    pub fn interval(&self) -> (u64, u64) {
        interval(&self.verified)
    }
}

/// A request built for the next link, waiting for its response.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pending {
    public_key: [u8; 32],
    rand: Option<[u8; 32]>,
    /// The packet to send.
    pub request: Vec<u8>,
}

/// The chain so far.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Chain {
    links: Vec<Link>,
}

impl Chain {
    /// An empty chain.
    pub fn new() -> Self {
        Self::default()
    }

    /// The request for the next server: offering `versions`, naming its key
    /// with SRV, with a nonce chained from the last verified response (or
    /// `rand` itself for the first link).
    pub fn request(
        &self,
        versions: &[Version],
        public_key: &[u8; 32],
        rand: [u8; 32],
    ) -> Result<Pending, Error> {
        let (nonce, rand) = match self.links.last() {
            Some(prev) => (chained_nonce(&prev.response, &rand), Some(rand)),
            None => (rand, None),
        };
        let request = build_request(versions, &nonce, Some(&srv_value(public_key)))?;
        Ok(Pending {
            public_key: *public_key,
            rand,
            request,
        })
    }

    /// Verifies `response` to `pending` and, if it verifies, appends the link.
    /// A response that does not verify leaves the chain unchanged.
    pub fn accept(&mut self, pending: &Pending, response: &[u8]) -> Result<&Link, Error> {
        let verified = verify_either(&pending.request, response, &pending.public_key)?;
        self.links.push(Link {
            public_key: pending.public_key,
            rand: pending.rand,
            request: pending.request.clone(),
            response: response.to_vec(),
            verified,
        });
        Ok(&self.links[self.links.len() - 1])
    }

    /// The verified links, in the order they were asked.
    pub fn links(&self) -> &[Link] {
        &self.links
    }

    /// The interval every link's interval contains, if they overlap.
    pub fn agreed_interval(&self) -> Option<(u64, u64)> {
        agreed_interval(self.links.iter().map(|l| l.interval()))
    }

    /// The first pair (i, j), i < j, out of causal order.
    pub fn malfeasance(&self) -> Option<(usize, usize)> {
        causal_violation(&self.links.iter().map(Link::interval).collect::<Vec<_>>())
    }

    /// The whole chain as a §8.2 report.
    pub fn report(&self) -> MalfeasanceReport {
        MalfeasanceReport {
            responses: self
                .links
                .iter()
                .map(|l| ReportEntry {
                    rand: l.rand.map(|r| STANDARD.encode(r)),
                    public_key: STANDARD.encode(l.public_key),
                    request: STANDARD.encode(&l.request),
                    response: STANDARD.encode(&l.response),
                })
                .collect(),
        }
    }
}

/// Verifies with the context strings of the version the response names,
/// and, for version 1, also with the drafts' strings: draft 19's own
/// Appendix B signs version 1 that way (see [`crate::version`]).
pub fn verify_either(request: &[u8], response: &[u8], key: &[u8; 32]) -> Result<Verified, Error> {
    match verify_response(request, response, key) {
        Err(Error::BadDelegationSignature) => {
            verify_response_with(request, response, key, |_| DRAFT_CONTEXTS)
        }
        other => other,
    }
}

/// [MIDP - RADI, MIDP + RADI], saturating.
pub fn interval(v: &Verified) -> (u64, u64) {
    let r = u64::from(v.radius);
    (v.midpoint.saturating_sub(r), v.midpoint.saturating_add(r))
}

/// The intersection of closed intervals; `None` when empty or when there are none.
pub fn agreed_interval(intervals: impl IntoIterator<Item = (u64, u64)>) -> Option<(u64, u64)> {
    let mut acc: Option<(u64, u64)> = None;
    for (lo, hi) in intervals {
        let (alo, ahi) = acc.unwrap_or((lo, hi));
        let next = (alo.max(lo), ahi.min(hi));
        if next.0 > next.1 {
            return None;
        }
        acc = Some(next);
    }
    acc
}

/// The first (i, j), i < j, where the earlier interval begins after the
/// later one ends (§8.1). A later interval wholly after an earlier one is
/// not a violation: time passes between requests.
pub fn causal_violation(intervals: &[(u64, u64)]) -> Option<(usize, usize)> {
    for (i, &(lo_i, _)) in intervals.iter().enumerate() {
        for (j, &(_, hi_j)) in intervals.iter().enumerate().skip(i + 1) {
            if lo_i > hi_j {
                return Some((i, j));
            }
        }
    }
    None
}

/// A malfeasance report (§8.2): the chain's requests and responses, with the
/// random bytes behind each chained nonce and each server's key.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MalfeasanceReport {
    /// The chain, in order.
    pub responses: Vec<ReportEntry>,
}

/// One exchange of a report, every field standard base64.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ReportEntry {
    /// Absent for the first exchange.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rand: Option<String>,
    /// The request packet.
    pub request: String,
    /// The response packet.
    pub response: String,
    /// The server's long-term Ed25519 key.
    pub public_key: String,
}

impl MalfeasanceReport {
    /// Parses a report's JSON.
    pub fn from_json(json: &[u8]) -> Result<Self, ReportError> {
        serde_json::from_slice(json).map_err(|e| ReportError::Json(e.to_string()))
    }

    /// The report as pretty-printed JSON.
    pub fn to_json(&self) -> String {
        // A struct of strings always serializes.
        serde_json::to_string_pretty(self).unwrap_or_default()
    }

    /// Checks the chain (every nonce chained from the previous response,
    /// every response verifying against its request and key) and returns the
    /// verified intervals and the first causal-order violation, if any.
    pub fn verify(&self) -> Result<ReportVerdict, ReportError> {
        if self.responses.is_empty() {
            return Err(ReportError::Empty);
        }
        let mut verified = Vec::with_capacity(self.responses.len());
        let mut previous: Option<Vec<u8>> = None;
        for (i, e) in self.responses.iter().enumerate() {
            let bad = |what| ReportError::BadEntry { index: i, what };
            let request = STANDARD.decode(&e.request).map_err(|_| bad("request"))?;
            let response = STANDARD.decode(&e.response).map_err(|_| bad("response"))?;
            let key = decode_key(&e.public_key).ok_or(bad("publicKey"))?;
            let nonce = parse_request(&request)
                .map_err(|err| ReportError::Protocol { index: i, err })?
                .nonce;
            if let Some(prev) = &previous {
                let rand = e.rand.as_deref().ok_or(bad("rand"))?;
                let rand: [u8; 32] = decode_key(rand).ok_or(bad("rand"))?;
                if chained_nonce(prev, &rand) != nonce {
                    return Err(ReportError::BrokenChain(i));
                }
            }
            let v = verify_either(&request, &response, &key)
                .map_err(|err| ReportError::Protocol { index: i, err })?;
            verified.push(v);
            previous = Some(response);
        }
        let intervals: Vec<(u64, u64)> = verified.iter().map(interval).collect();
        Ok(ReportVerdict {
            violation: causal_violation(&intervals),
            verified,
        })
    }
}

/// What a report that checks out shows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReportVerdict {
    /// Each exchange's verified time, in order.
    pub verified: Vec<Verified>,
    /// The first pair out of causal order; `None`: the report shows no malfeasance.
    pub violation: Option<(usize, usize)>,
}

/// Why a report does not check out.
#[non_exhaustive]
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReportError {
    /// Not JSON of the report's shape.
    Json(String),
    /// No responses.
    Empty,
    /// A field of entry `index` is not base64 of the right length, or `rand` is missing.
    BadEntry {
        /// The entry, from 0.
        index: usize,
        /// The field's name.
        what: &'static str,
    },
    /// Entry `index`'s nonce is not H(previous response || rand).
    BrokenChain(usize),
    /// Entry `index`'s request or response does not parse or verify.
    Protocol {
        /// The entry, from 0.
        index: usize,
        /// Why.
        err: Error,
    },
}

impl core::fmt::Display for ReportError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            Self::Json(e) => write!(f, "report is not valid JSON: {e}"),
            Self::Empty => f.write_str("report has no responses"),
            Self::BadEntry { index, what } => write!(f, "response {index}: bad or missing {what}"),
            Self::BrokenChain(i) => {
                write!(
                    f,
                    "response {i}: nonce is not chained from the previous response"
                )
            }
            Self::Protocol { index, err } => write!(f, "response {index}: {err}"),
        }
    }
}

impl std::error::Error for ReportError {}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::delegation::OnlineKey;
    use crate::server_batch::{BatchTime, respond_batch};
    use ed25519_dalek::SigningKey;

    const NOW: u64 = 1_764_000_000;

    struct TestServer {
        key: OnlineKey,
        public: [u8; 32],
        offset: i64,
    }

    fn server(seed: u8, offset: i64) -> TestServer {
        let long = SigningKey::from_bytes(&[seed; 32]);
        let public = long.verifying_key().to_bytes();
        let key = OnlineKey::delegate(
            &long,
            SigningKey::from_bytes(&[seed ^ 0x55; 32]),
            0,
            u64::MAX,
        )
        .unwrap();
        TestServer {
            key,
            public,
            offset,
        }
    }

    fn answer(s: &TestServer, request: &[u8]) -> Vec<u8> {
        let time = BatchTime {
            midpoint: NOW.saturating_add_signed(s.offset),
            radius: 5,
        };
        respond_batch(&[request], time, &s.key, &srv_value(&s.public)).unwrap()[0]
            .clone()
            .unwrap()
    }

    fn run(servers: &[TestServer]) -> Chain {
        let mut chain = Chain::new();
        for (i, s) in servers.iter().enumerate() {
            let pending = chain
                .request(&[Version::Rfc1], &s.public, [i as u8 + 1; 32])
                .unwrap();
            let response = answer(s, &pending.request);
            chain.accept(&pending, &response).unwrap();
        }
        chain
    }

    #[test]
    fn interval_math() {
        assert_eq!(agreed_interval([(0, 10), (5, 20), (8, 9)]), Some((8, 9)));
        assert_eq!(agreed_interval([(0, 10), (11, 20)]), None);
        assert_eq!(agreed_interval([(0, 10), (10, 20)]), Some((10, 10)));
        assert_eq!(agreed_interval(std::iter::empty()), None);
        let v = Verified {
            version: Version::Rfc1,
            midpoint: 3,
            radius: 5,
            delegation: (0, 9),
        };
        assert_eq!(interval(&v), (0, 8));
    }

    #[test]
    fn causal_order() {
        // Later intervals entirely after earlier ones: time passed, no violation.
        assert_eq!(causal_violation(&[(0, 10), (100, 110)]), None);
        // A later interval ending before an earlier one begins: a violation.
        assert_eq!(causal_violation(&[(100, 110), (0, 10)]), Some((0, 1)));
        assert_eq!(causal_violation(&[(0, 10), (5, 6), (0, 5)]), None);
        assert_eq!(
            causal_violation(&[(0, 10), (20, 30), (0, 15)]),
            Some((1, 2))
        );
    }

    #[test]
    fn honest_chain_agrees_and_its_report_shows_nothing() {
        let chain = run(&[server(1, 0), server(2, 1)]);
        assert_eq!(chain.agreed_interval(), Some((NOW - 4, NOW + 5)));
        assert_eq!(chain.malfeasance(), None);
        let report = chain.report();
        let back = MalfeasanceReport::from_json(report.to_json().as_bytes()).unwrap();
        assert_eq!(back, report);
        let verdict = back.verify().unwrap();
        assert_eq!(verdict.violation, None);
        assert_eq!(verdict.verified.len(), 2);
    }

    #[test]
    fn server_ten_minutes_ahead_first_is_malfeasance() {
        let chain = run(&[server(1, 600), server(2, 0)]);
        assert_eq!(chain.agreed_interval(), None);
        assert_eq!(chain.malfeasance(), Some((0, 1)));
        let report = MalfeasanceReport::from_json(chain.report().to_json().as_bytes()).unwrap();
        assert_eq!(report.verify().unwrap().violation, Some((0, 1)));
        // Swapping in another rand breaks the chain.
        let mut broken = report.clone();
        broken.responses[1].rand = Some(STANDARD.encode([9u8; 32]));
        assert_eq!(broken.verify(), Err(ReportError::BrokenChain(1)));
        // A response altered after the fact no longer verifies.
        let mut forged = report;
        forged.responses.swap(0, 1);
        assert!(forged.verify().is_err());
    }

    #[test]
    fn failed_response_leaves_the_chain_unchanged() {
        let a = server(1, 0);
        let mut chain = Chain::new();
        let pending = chain.request(&[Version::Rfc1], &a.public, [1; 32]).unwrap();
        let mut response = answer(&a, &pending.request);
        response[40] ^= 1;
        assert!(chain.accept(&pending, &response).is_err());
        assert!(chain.links().is_empty());
    }

    #[test]
    fn draft_19_appendix_b_report_verifies_and_shows_malfeasance() {
        // draft-ietf-ntp-roughtime-19, Appendix B (see verify.rs): the first
        // response is a day ahead of the two later ones.
        let json = include_bytes!("../testdata/draft-ietf-ntp-roughtime-19-appendix-b.json");
        let report = MalfeasanceReport::from_json(json).unwrap();
        let verdict = report.verify().unwrap();
        assert_eq!(verdict.violation, Some((0, 1)));
        let mids: Vec<u64> = verdict.verified.iter().map(|v| v.midpoint).collect();
        assert_eq!(mids, [1_773_685_571, 1_773_599_171, 1_773_599_171]);
        // It survives a round trip through our writer.
        let again = MalfeasanceReport::from_json(report.to_json().as_bytes()).unwrap();
        assert_eq!(again, report);
    }

    #[test]
    fn malformed_reports_are_errors() {
        for bad in [
            &b""[..],
            b"{}",
            b"{\"responses\": []}",
            b"{\"responses\": [{\"request\": \"!\", \"response\": \"\", \"publicKey\": \"\"}]}",
            b"{\"responses\": [], \"extra\": 1}",
        ] {
            let r = MalfeasanceReport::from_json(bad).and_then(|r| r.verify());
            assert!(r.is_err(), "{}", String::from_utf8_lossy(bad));
        }
    }
}
