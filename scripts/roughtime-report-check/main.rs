//! An independent check of a Roughtime malfeasance report (RFC 10049 §8.4),
//! built on roughenough 2.2's client library rather than on authtime's code.
//!
//! Built once per machine outside the work tree by
//! scripts/ensure-report-check.sh. Usage: `roughtime-report-check REPORT.json`.
//!
//! For the report's entries, in order:
//! - the request and response decode with roughenough-protocol;
//! - roughenough's `ResponseValidator` validates the response against the
//!   entry's public key (DELE and SREP signatures, MIDP within MINT..MAXT,
//!   the Merkle proof of the request, the version offered);
//! - every nonce after the first equals roughenough's
//!   `calculate_chained_nonce(previous response, rand)`;
//! then roughenough's `validate_causality` must find a pair whose intervals
//! do not overlap in causal order.
//!
//! Exit 0: the report proves malfeasance (the violating pairs are printed);
//! 1: it is valid but proves none; 2: it is unreadable or does not verify.

use std::net::SocketAddr;
use std::process::ExitCode;

use data_encoding::BASE64;
use roughenough_client::measurement::Measurement;
use roughenough_client::{MalfeasanceReport, ResponseValidator};
use roughenough_common::crypto::calculate_chained_nonce;
use roughenough_protocol::cursor::ParseCursor;
use roughenough_protocol::request::Request;
use roughenough_protocol::response::Response;
use roughenough_protocol::tags::PublicKey;
use roughenough_protocol::wire::FromFrame;

fn main() -> ExitCode {
    let Some(path) = std::env::args().nth(1) else {
        eprintln!("usage: roughtime-report-check REPORT.json");
        return ExitCode::from(2);
    };
    match check(&path) {
        Ok(0) => {
            println!("no causality violation: the report proves no malfeasance");
            ExitCode::from(1)
        }
        Ok(_) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("report does not verify: {e}");
            ExitCode::from(2)
        }
    }
}

fn check(path: &str) -> Result<usize, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{path}: {e}"))?;
    let report: MalfeasanceReport =
        serde_json::from_str(&text).map_err(|e| format!("{path}: not a report: {e}"))?;
    let unknown: SocketAddr = ([0, 0, 0, 0], 0).into();
    let mut measurements = Vec::new();
    let mut previous: Option<Vec<u8>> = None;
    for (i, entry) in report.responses().iter().enumerate() {
        let decode = |field: &str, value: &str| {
            BASE64
                .decode(value.as_bytes())
                .map_err(|e| format!("entry {i}: {field} is not base64: {e}"))
        };
        let request_bytes = decode("request", entry.request())?;
        let response_bytes = decode("response", entry.response())?;
        let key_bytes = decode("publicKey", entry.public_key())?;
        if key_bytes.len() != 32 {
            return Err(format!("entry {i}: publicKey is {} bytes", key_bytes.len()));
        }
        let public_key = PublicKey::from(key_bytes.as_slice());

        let mut buf = request_bytes.clone();
        let request = Request::from_frame(&mut ParseCursor::new(&mut buf))
            .map_err(|e| format!("entry {i}: request: {e:?}"))?;
        let mut buf = response_bytes.clone();
        let response = Response::from_frame(&mut ParseCursor::new(&mut buf))
            .map_err(|e| format!("entry {i}: response: {e:?}"))?;

        ResponseValidator::new_with_key(public_key)
            .validate(&request_bytes, &response_bytes, &response)
            .map_err(|e| format!("entry {i}: {e}"))?;

        let rand = match (entry.rand(), &previous) {
            (None, None) => None,
            (Some(r), Some(prior)) => {
                let rand = decode("rand", r)?;
                if calculate_chained_nonce(prior, &rand) != *request.nonc() {
                    return Err(format!(
                        "entry {i}: nonce is not H(previous response || rand)"
                    ));
                }
                Some(
                    <[u8; 32]>::try_from(rand.as_slice())
                        .map_err(|_| format!("entry {i}: rand is not 32 bytes"))?,
                )
            }
            (Some(_), None) => return Err("entry 0 has a rand".into()),
            (None, Some(_)) => return Err(format!("entry {i} has no rand")),
        };
        println!(
            "entry {i}: verified, midpoint {} radius {} s",
            response.srep().midp(),
            response.srep().radi()
        );
        measurements.push(
            Measurement::builder()
                .server(unknown)
                .public_key(Some(public_key))
                .request(request)
                .response(response)
                .response_bytes(response_bytes.clone())
                .rand_value(rand)
                .build()
                .map_err(|e| format!("entry {i}: {e}"))?,
        );
        previous = Some(response_bytes);
    }
    if measurements.is_empty() {
        return Err("the report has no responses".into());
    }
    let violations = ResponseValidator::validate_causality(&measurements);
    for v in &violations {
        println!(
            "malfeasance: entry {} is not before entry {} (lower bound {} > upper bound {})",
            v.index_i(),
            v.index_j(),
            v.lower_bound_i(),
            v.upper_bound_j()
        );
    }
    Ok(violations.len())
}
