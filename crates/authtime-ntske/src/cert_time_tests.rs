//! A CA and a leaf with fixed validity periods (made with rcgen), checked by
//! [`FixedTimeVerifier`] at instants and over intervals; the `now` rustls
//! would pass in is the year 2000 in every call, and is ignored.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use super::*;
use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, KeyPair, date_time_ymd};

/// 2025-01-01T00:00:00Z, the leaf's notBefore.
const LEAF_NOT_BEFORE: u64 = 1_735_689_600;
/// 2027-01-01T00:00:00Z, the leaf's notAfter.
const LEAF_NOT_AFTER: u64 = 1_798_761_600;
const DAY: u64 = 86_400;

struct TestChain {
    roots: Arc<rustls::RootCertStore>,
    leaf: CertificateDer<'static>,
}

/// A CA valid 2020 to 2040 and a leaf for `localhost` valid 2025 to 2027.
fn chain() -> TestChain {
    let ca_key = KeyPair::generate().unwrap();
    let mut ca_params = CertificateParams::new(Vec::<String>::new()).unwrap();
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca_params
        .distinguished_name
        .push(DnType::CommonName, "cert_time test CA");
    ca_params.not_before = date_time_ymd(2020, 1, 1);
    ca_params.not_after = date_time_ymd(2040, 1, 1);
    let ca = ca_params.self_signed(&ca_key).unwrap();
    let key = KeyPair::generate().unwrap();
    let mut params = CertificateParams::new(vec!["localhost".to_owned()]).unwrap();
    params.not_before = date_time_ymd(2025, 1, 1);
    params.not_after = date_time_ymd(2027, 1, 1);
    let leaf = params.signed_by(&key, &ca, &ca_key).unwrap();
    let mut roots = rustls::RootCertStore::empty();
    roots.add(ca.der().clone()).unwrap();
    TestChain {
        roots: Arc::new(roots),
        leaf: leaf.der().clone(),
    }
}

fn check(chain: &TestChain, time: CertTime) -> Result<ServerCertVerified, rustls::Error> {
    let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
    let verifier =
        FixedTimeVerifier::new(chain.roots.clone(), provider, time.check_times().unwrap())?;
    let name = ServerName::try_from("localhost").unwrap();
    // The year 2000: a clock this far off would fail every check below.
    let wrong_now = UnixTime::since_unix_epoch(secs(946_684_800));
    verifier.verify_server_cert(&chain.leaf, &[], &name, &[], wrong_now)
}

#[test]
fn a_time_years_off_fails_on_validity() {
    let chain = chain();
    let ten_years_on = LEAF_NOT_AFTER + 3650 * DAY;
    let err = check(&chain, CertTime::At(ten_years_on)).expect_err("expired");
    assert!(is_validity_error(&err), "{err}");
    assert!(err.to_string().contains("expired"), "{err}");
    let err = check(&chain, CertTime::At(LEAF_NOT_BEFORE - 3650 * DAY)).expect_err("early");
    assert!(is_validity_error(&err), "{err}");
}

#[test]
fn an_instant_or_interval_inside_the_validity_passes() {
    let chain = chain();
    check(&chain, CertTime::At(LEAF_NOT_BEFORE + DAY)).unwrap();
    let earliest = LEAF_NOT_BEFORE + 100 * DAY;
    check(
        &chain,
        CertTime::Interval {
            earliest,
            latest: earliest + 20,
        },
    )
    .unwrap();
    // A one-point interval is one instant.
    check(
        &chain,
        CertTime::Interval {
            earliest,
            latest: earliest,
        },
    )
    .unwrap();
}

#[test]
fn an_interval_straddling_not_after_or_not_before_fails() {
    let chain = chain();
    let err = check(
        &chain,
        CertTime::Interval {
            earliest: LEAF_NOT_AFTER - 10,
            latest: LEAF_NOT_AFTER + 10,
        },
    )
    .expect_err("straddles notAfter");
    assert!(is_validity_error(&err), "{err}");
    let err = check(
        &chain,
        CertTime::Interval {
            earliest: LEAF_NOT_BEFORE - 10,
            latest: LEAF_NOT_BEFORE + 10,
        },
    )
    .expect_err("straddles notBefore");
    assert!(is_validity_error(&err), "{err}");
}

#[test]
fn untrusted_chains_still_fail_whatever_the_time() {
    let chain = chain();
    let other = self::chain();
    let mixed = TestChain {
        roots: other.roots,
        leaf: chain.leaf,
    };
    let err = check(&mixed, CertTime::At(LEAF_NOT_BEFORE + DAY)).expect_err("unknown issuer");
    assert!(!is_validity_error(&err), "{err}");
}

#[test]
fn empty_intervals_and_the_system_clock() {
    assert_eq!(
        CertTime::Interval {
            earliest: 5,
            latest: 4
        }
        .check_times(),
        Err(CertTimeError::EmptyInterval {
            earliest: 5,
            latest: 4
        })
    );
    assert_eq!(CertTime::SystemClock.check_times(), Ok(Vec::new()));
    assert!(
        crate::tls_config::client_config_at(
            None,
            CertTime::Interval {
                earliest: 9,
                latest: 1
            }
        )
        .is_err()
    );
    assert!(crate::tls_config::client_config_at(None, CertTime::At(LEAF_NOT_BEFORE)).is_ok());
}
