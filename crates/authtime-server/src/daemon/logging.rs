//! Log lines on standard error, one event a line, in the format that suits
//! where they go:
//!
//! - `text`: a timestamp, the level and the message with its fields, for a
//!   terminal or a file;
//! - `journald`: no timestamp (the journal stamps each line) and the level as
//!   an `sd-daemon(3)` prefix (`<3>` error ... `<7>` debug), which journald
//!   turns into the entry's priority;
//! - `json`: one JSON object a line (`timestamp`, `level`, `fields`), for log
//!   shippers;
//! - `auto`: `journald` when standard error is the journal's stream (systemd
//!   sets `JOURNAL_STREAM` to its device and inode), else `text`.
//!
//! A message or field that holds a line break is written with `\n` escaped,
//! so that one event is always one line.

use std::fmt;
use std::str::FromStr;

use tracing::{Event, Level, Subscriber};
use tracing_subscriber::fmt::format::{self, FormatEvent, FormatFields, Writer};
use tracing_subscriber::fmt::{FmtContext, time::SystemTime};
use tracing_subscriber::registry::LookupSpan;

/// How log lines are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum LogFormat {
    /// `journald` under systemd's journal, `text` elsewhere.
    #[default]
    Auto,
    /// Timestamp, level, message and fields.
    Text,
    /// Level as a `<N>` prefix, no timestamp.
    Journald,
    /// One JSON object a line.
    Json,
}

impl FromStr for LogFormat {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        match text {
            "auto" => Ok(Self::Auto),
            "text" => Ok(Self::Text),
            "journald" => Ok(Self::Journald),
            "json" => Ok(Self::Json),
            other => Err(format!(
                "unknown log format `{other}` (auto, text, journald or json)"
            )),
        }
    }
}

impl LogFormat {
    /// `Auto` resolved against the environment: `Journald` when standard
    /// error is the stream named by `JOURNAL_STREAM`.
    #[must_use]
    pub fn resolve(self) -> Self {
        match self {
            Self::Auto if stderr_is_journal() => Self::Journald,
            Self::Auto => Self::Text,
            other => other,
        }
    }
}

/// Whether standard error is the journal's stream: `JOURNAL_STREAM` is
/// `DEVICE:INODE` of it (systemd.exec(5)), and a process that redirected its
/// standard error must not take the variable it inherited for its own.
fn stderr_is_journal() -> bool {
    let Some(value) = std::env::var_os("JOURNAL_STREAM") else {
        return false;
    };
    let Ok(meta) = std::fs::metadata("/proc/self/fd/2") else {
        return false;
    };
    use std::os::unix::fs::MetadataExt as _;
    journal_stream_matches(&value.to_string_lossy(), meta.dev(), meta.ino())
}

/// `JOURNAL_STREAM`'s `DEVICE:INODE` against a file's device and inode.
fn journal_stream_matches(value: &str, dev: u64, ino: u64) -> bool {
    value
        .split_once(':')
        .and_then(|(d, i)| Some((d.parse::<u64>().ok()?, i.parse::<u64>().ok()?)))
        == Some((dev, ino))
}

/// Logs to standard error at `level` and below, in `format` (resolved), one
/// event a line, without colour. A subscriber already set (commands run
/// in-process by tests) is kept.
pub fn init_logging(level: Level, format: LogFormat) {
    let builder = tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_max_level(level)
        .with_target(false)
        .with_ansi(false);
    let _ = match format.resolve() {
        LogFormat::Json => builder
            .json()
            .flatten_event(false)
            .with_current_span(false)
            .with_span_list(false)
            .try_init(),
        LogFormat::Journald => builder
            .event_format(OneLine {
                prefix_priority: true,
                inner: format::format()
                    .without_time()
                    .with_level(false)
                    .with_target(false),
            })
            .try_init(),
        LogFormat::Text | LogFormat::Auto => builder
            .event_format(OneLine {
                prefix_priority: false,
                inner: format::format().with_timer(SystemTime).with_target(false),
            })
            .try_init(),
    };
}

/// The `sd-daemon(3)` priority of a level: err, warning, info, debug.
#[must_use]
pub fn syslog_priority(level: Level) -> u8 {
    match level {
        Level::ERROR => 3,
        Level::WARN => 4,
        Level::INFO => 6,
        Level::DEBUG | Level::TRACE => 7,
    }
}

/// Wraps a formatter: the event is formatted whole, its line breaks escaped,
/// and optionally prefixed with its priority.
struct OneLine<F> {
    prefix_priority: bool,
    inner: F,
}

impl<S, N, F> FormatEvent<S, N> for OneLine<F>
where
    S: Subscriber + for<'a> LookupSpan<'a>,
    N: for<'a> FormatFields<'a> + 'static,
    F: FormatEvent<S, N>,
{
    fn format_event(
        &self,
        ctx: &FmtContext<'_, S, N>,
        mut writer: Writer<'_>,
        event: &Event<'_>,
    ) -> fmt::Result {
        let mut line = String::new();
        self.inner
            .format_event(ctx, Writer::new(&mut line), event)?;
        if self.prefix_priority {
            write!(writer, "<{}>", syslog_priority(*event.metadata().level()))?;
        }
        writeln!(writer, "{}", one_line(line.trim_end_matches('\n')))
    }
}

/// `text` with carriage returns and line feeds escaped.
fn one_line(text: &str) -> std::borrow::Cow<'_, str> {
    if text.contains(['\n', '\r']) {
        text.replace('\r', "\\r").replace('\n', "\\n").into()
    } else {
        text.into()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_parse_and_unknown_ones_are_named() {
        assert_eq!("json".parse(), Ok(LogFormat::Json));
        assert_eq!("journald".parse(), Ok(LogFormat::Journald));
        assert_eq!("text".parse(), Ok(LogFormat::Text));
        assert_eq!("auto".parse(), Ok(LogFormat::Auto));
        let err = "syslog".parse::<LogFormat>().expect_err("unknown");
        assert!(
            err.contains("`syslog`") && err.contains("journald"),
            "{err}"
        );
    }

    #[test]
    fn the_journal_stream_must_be_our_own_stderr() {
        assert!(journal_stream_matches("8:12345", 8, 12345));
        assert!(!journal_stream_matches("8:12345", 8, 12346));
        assert!(!journal_stream_matches("8:12345", 9, 12345));
        assert!(!journal_stream_matches("", 8, 12345));
        assert!(!journal_stream_matches("8", 8, 12345));
        assert!(!journal_stream_matches("x:y", 8, 12345));
    }

    #[test]
    fn levels_map_to_syslog_priorities() {
        assert_eq!(syslog_priority(Level::ERROR), 3);
        assert_eq!(syslog_priority(Level::WARN), 4);
        assert_eq!(syslog_priority(Level::INFO), 6);
        assert_eq!(syslog_priority(Level::DEBUG), 7);
        assert_eq!(syslog_priority(Level::TRACE), 7);
    }

    #[test]
    fn line_breaks_are_escaped() {
        assert_eq!(one_line("a\nb\r\nc"), "a\\nb\\r\\nc");
        assert_eq!(one_line("plain"), "plain");
    }
}
