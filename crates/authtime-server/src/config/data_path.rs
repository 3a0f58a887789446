//! The `[ntp]` keys that tune the data path: interleaved mode, how stale a
//! request may be, the receive buffer, and how often the server measures the
//! error of the time it serves.

use std::time::Duration;

use super::{NtpSection, Problem};

/// Default `interleaved-table-size`: transmit times held for interleaved
/// clients (24 bytes each: 1.5 MiB).
pub const DEFAULT_INTERLEAVED_TABLE: usize = 65_536;
/// Largest `interleaved-table-size` (384 MiB).
pub const MAX_INTERLEAVED_TABLE: usize = 1 << 24;
/// Default `max-request-age`, seconds.
pub const DEFAULT_MAX_REQUEST_AGE: f64 = 0.1;
/// Default `receive-buffer`, bytes as the kernel counts them.
pub const DEFAULT_RECEIVE_BUFFER: usize = 256 * 1024;
/// Default `accuracy-sample`: one basic reply in 100.
pub const DEFAULT_ACCURACY_SAMPLE: f64 = 0.01;
/// Default `transmit-timestamp`.
pub const DEFAULT_TRANSMIT_TIMESTAMP: &str = "measured";

/// The data path, validated.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DataPathSettings {
    /// Entries of the interleaved-mode table; `None` when interleaved mode
    /// is off.
    pub interleaved_table: Option<usize>,
    /// Requests that waited longer are dropped; `None`: no bound.
    pub max_request_age: Option<Duration>,
    /// Receive buffer of each NTP socket, bytes.
    pub receive_buffer: usize,
    /// Every this many basic replies, one's transmit error is measured (0:
    /// never).
    pub sample_every: u32,
    /// Basic transmit timestamps get the measured send-path delay added.
    pub compensate: bool,
}

impl Default for DataPathSettings {
    fn default() -> Self {
        Self {
            interleaved_table: Some(DEFAULT_INTERLEAVED_TABLE),
            max_request_age: Some(Duration::from_secs_f64(DEFAULT_MAX_REQUEST_AGE)),
            receive_buffer: DEFAULT_RECEIVE_BUFFER,
            sample_every: sample_every(DEFAULT_ACCURACY_SAMPLE),
            compensate: DEFAULT_TRANSMIT_TIMESTAMP == "measured",
        }
    }
}

fn sample_every(fraction: f64) -> u32 {
    if fraction <= 0.0 {
        0
    } else {
        (1.0 / fraction).round().clamp(1.0, f64::from(u32::MAX)) as u32
    }
}

/// Checks the data-path keys of `[ntp]`.
pub(crate) fn validate(ntp: &NtpSection, problems: &mut Vec<Problem>) -> DataPathSettings {
    let mut settings = DataPathSettings::default();
    if !(4..=MAX_INTERLEAVED_TABLE).contains(&ntp.interleaved_table_size) {
        problems.push(Problem::new(
            "ntp.interleaved-table-size",
            format!(
                "{} entries must be 4 to {MAX_INTERLEAVED_TABLE}",
                ntp.interleaved_table_size
            ),
        ));
    }
    settings.interleaved_table = ntp.interleaved.then_some(ntp.interleaved_table_size);
    let age = ntp.max_request_age;
    if !(age.is_finite() && (0.0..=60.0).contains(&age)) {
        problems.push(Problem::new(
            "ntp.max-request-age",
            format!("{age} s must be 0 (no bound) to 60"),
        ));
    } else {
        settings.max_request_age = (age > 0.0).then(|| Duration::from_secs_f64(age));
    }
    if !(4096..=(256 << 20)).contains(&ntp.receive_buffer) {
        problems.push(Problem::new(
            "ntp.receive-buffer",
            format!("{} bytes must be 4096 to 268435456", ntp.receive_buffer),
        ));
    }
    settings.receive_buffer = ntp.receive_buffer;
    let fraction = ntp.accuracy_sample;
    if !(fraction.is_finite() && (0.0..=1.0).contains(&fraction)) {
        problems.push(Problem::new(
            "ntp.accuracy-sample",
            format!("{fraction} must be 0 (never) to 1 (every basic reply)"),
        ));
    } else {
        settings.sample_every = sample_every(fraction);
    }
    match ntp.transmit_timestamp.as_str() {
        "clock" => settings.compensate = false,
        "measured" if settings.sample_every == 0 => problems.push(Problem::new(
            "ntp.transmit-timestamp",
            "\"measured\" learns the send-path delay from sampled replies: it needs \
             accuracy-sample above 0 (or transmit-timestamp = \"clock\")",
        )),
        "measured" => settings.compensate = true,
        other => problems.push(Problem::new(
            "ntp.transmit-timestamp",
            format!("unknown `{other}` (clock or measured)"),
        )),
    }
    settings
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fractions_become_strides() {
        assert_eq!(sample_every(0.0), 0);
        assert_eq!(sample_every(1.0), 1);
        assert_eq!(sample_every(0.01), 100);
        assert_eq!(sample_every(0.3), 3);
        assert_eq!(sample_every(1e-12), u32::MAX);
    }

    #[test]
    fn bad_values_are_problems_at_their_keys() {
        let ntp = NtpSection {
            interleaved_table_size: 2,
            max_request_age: -1.0,
            receive_buffer: 10,
            accuracy_sample: f64::NAN,
            transmit_timestamp: "late".into(),
            ..NtpSection::default()
        };
        let mut problems = Vec::new();
        let _ = validate(&ntp, &mut problems);
        let paths: Vec<&str> = problems.iter().map(|p| p.path.as_str()).collect();
        assert_eq!(
            paths,
            [
                "ntp.interleaved-table-size",
                "ntp.max-request-age",
                "ntp.receive-buffer",
                "ntp.accuracy-sample",
                "ntp.transmit-timestamp"
            ]
        );
        let mut problems = Vec::new();
        let off = NtpSection {
            interleaved: false,
            max_request_age: 0.0,
            transmit_timestamp: "clock".into(),
            ..NtpSection::default()
        };
        let s = validate(&off, &mut problems);
        assert!(problems.is_empty());
        assert_eq!(
            (s.interleaved_table, s.max_request_age, s.compensate),
            (None, None, false)
        );
        // Learning the delay needs samples.
        let unsampled = NtpSection {
            accuracy_sample: 0.0,
            ..NtpSection::default()
        };
        let _ = validate(&unsampled, &mut problems);
        assert_eq!(problems.len(), 1);
        assert_eq!(problems[0].path, "ntp.transmit-timestamp");
        problems.clear();
        assert_eq!(
            validate(&NtpSection::default(), &mut problems),
            DataPathSettings::default()
        );
    }
}
