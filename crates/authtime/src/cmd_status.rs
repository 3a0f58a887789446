//! `authtime status`: what `authtime serve` with the same configuration
//! announces about its clock right now, and why.
//!
//! It resolves and reads the `[clock]` source exactly as the server does
//! (the same code), then prints the reading and the header fields that
//! follow from it.

use std::path::PathBuf;

use anyhow::anyhow;
use authtime_clock::{Announcement, Snapshot, SourceReading, announce};
use authtime_server::Settings;
use authtime_server::clock::source::SourceReader;
use authtime_server::roughtime::worker::radius;
use authtime_wire::LeapIndicator;
use clap::Args;
use serde_json::json;

use crate::{Outcome, Streams};

mod clients;
mod served_time;

/// Arguments of `authtime status`.
#[derive(Debug, Args)]
pub struct StatusArgs {
    /// The configuration file of `authtime serve` (default: its embedded
    /// defaults, as `./run.sh` starts it).
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Also ask the running server at HOST[:PORT] (plain NTP, port 123 by
    /// default) what it announces, and show it beside the reading; with a
    /// [metrics] endpoint in the configuration, also what its metrics say
    /// about the time it served (modes, timestamp sources, transmit error)
    /// and about its clients (counts, rates, top talkers).
    #[arg(long, value_name = "HOST[:PORT]")]
    pub server: Option<String>,
    /// Print a JSON object instead of text.
    #[arg(long)]
    pub json: bool,
}

/// The help text after the options.
pub const STATUS_HELP: &str = "Reads the clock-state source of the configuration ([clock] source: \
     chrony, ntp, kernel, static, or auto = chronyd if it answers, else the kernel) once, the way \
     `authtime serve` does every second, and prints what the server announces: leap indicator, \
     stratum, reference id, reference time, root delay and root dispersion, or UNSYNCHRONIZED with \
     the reason.\n\nExit codes: 0 synchronized, 3 unsynchronized (or the source cannot be read, or the server \
     asked with --server gave no usable answer), \
     2 bad usage or configuration. With a [roughtime] section, the radius the Roughtime server \
     signs with this reading is shown too (none while unsynchronized). With --server, the running server is asked too (one plain \
     query) and what it announces is printed beside the reading; with a [metrics] endpoint in \
     the configuration, what the server measured about the time it served is read from it: \
     replies by mode (basic, interleaved), timestamps by source (daemon, kernel, hardware), \
     the error of its basic transmit timestamps, stale and dropped requests, and who its \
     clients are (distinct clients by protocol, limited and refused ones, request rates, \
     the top talkers from its /clients page; docs/clients.md). The exit code \
     follows the reading, and is 3 as well when the server gives no usable answer, so that \
     `authtime status --server` serves as a health check (the container image's).\n\nExamples:\n  authtime status\n  authtime status --config \
     /etc/authtime/authtime.toml --server 127.0.0.1 --json";

fn leap_text(leap: LeapIndicator) -> &'static str {
    match leap {
        LeapIndicator::NoWarning => "no warning",
        LeapIndicator::InsertSecond => "a second is inserted at the end of today (UTC)",
        LeapIndicator::DeleteSecond => "a second is deleted at the end of today (UTC)",
        LeapIndicator::Unsynchronized => "unsynchronized",
    }
}

/// Prints the source, its reading and the announcement.
///
/// # Errors
/// An unreadable or invalid configuration, or a source that cannot be set up.
pub fn status(args: &StatusArgs, streams: &mut Streams<'_>) -> anyhow::Result<Outcome> {
    let settings = match &args.config {
        None => Settings::default(),
        Some(path) => crate::cmd_config::read_settings(path)?
            .map_err(|problems| anyhow!("{}", problems.lines.join("\n")))?,
    };
    let (reader, warnings) =
        SourceReader::resolve(&settings.clock.source).map_err(|e| anyhow!("clock source: {e}"))?;
    for warning in &warnings {
        writeln!(streams.stderr, "warning: {warning}")?;
    }
    let now = authtime_server::clock::now_unix();
    let unread = Snapshot::unread(reader.kind(), now);
    let (snapshot, error) = match reader.read(now) {
        Ok(reading) => (unread.with_reading(reading, now), None),
        Err(e) => (unread.with_failure(now), Some(e)),
    };
    let a = announce(&snapshot, now, &settings.clock.policy);
    let live = args.server.as_deref().map(ask_server).transpose()?;
    let served = match (&args.server, settings.metrics) {
        (None, _) => None,
        (Some(_), None) => Some(Err(
            "no [metrics] endpoint in the configuration: what the server measured is not shown"
                .to_owned(),
        )),
        (Some(_), Some(addr)) => Some(
            served_time::scrape(addr)
                .map(|page| {
                    // The top talkers: a server without them answers 404.
                    let top = served_time::fetch(addr, "/clients")
                        .ok()
                        .and_then(|body| serde_json::from_str(&body).ok());
                    (
                        served_time::summarize(&page),
                        clients::summarize(&page, top.as_ref()),
                    )
                })
                .map_err(|e| format!("{e:#}")),
        ),
    };
    if args.json {
        let mut out = status_json(
            &reader,
            &snapshot,
            error.as_deref(),
            &a,
            live.as_ref(),
            settings.roughtime.as_ref().map(|rt| rt.max_radius),
        );
        out["served_time"] = match &served {
            None => serde_json::Value::Null,
            Some(Ok((s, _))) => s.json.clone(),
            Some(Err(e)) => json!({ "unavailable": e }),
        };
        out["clients"] = match &served {
            None => serde_json::Value::Null,
            Some(Ok((_, c))) => c.json.clone(),
            Some(Err(e)) => json!({ "unavailable": e }),
        };
        writeln!(streams.stdout, "{}", serde_json::to_string_pretty(&out)?)?;
    } else {
        print_text(streams, &reader, &snapshot, error.as_deref(), &a)?;
        if let Some(rt) = &settings.roughtime {
            writeln!(
                streams.stdout,
                "roughtime: {}",
                roughtime_text(&a, rt.max_radius)
            )?;
        }
        if let Some(live) = &live {
            writeln!(streams.stdout, "server:    {}: {}", live.target, live.text)?;
        }
        match &served {
            None => {}
            Some(Ok((s, c))) => {
                for line in s.text.iter().chain(&c.text) {
                    writeln!(streams.stdout, "{line}")?;
                }
            }
            Some(Err(e)) => writeln!(streams.stdout, "served:    {e}")?,
        }
    }
    // A server that gave no usable answer fails the check even when the
    // clock reads well: a container's health check is this command.
    if let Some(live) = live.as_ref().filter(|l| l.json["answered"] != true) {
        return Ok(Outcome::NoAnswer(format!(
            "the server at {} gave no usable answer",
            live.target
        )));
    }
    Ok(match a.unsynchronized {
        None => Outcome::Success,
        Some(cause) => {
            Outcome::NoAnswer(format!("the clock is announced as unsynchronized: {cause}"))
        }
    })
}

/// What the running server answered.
struct Live {
    target: std::net::SocketAddr,
    text: String,
    json: serde_json::Value,
}

fn ask_server(server: &str) -> anyhow::Result<Live> {
    use crate::cmd_query::{Failure, exchange, leap_name, resolve};
    let target = resolve(server)?;
    let local: std::net::SocketAddr = if target.is_ipv4() {
        ([0u8; 4], 0).into()
    } else {
        ([0u16; 8], 0).into()
    };
    let socket = std::net::UdpSocket::bind(local)?;
    socket.connect(target)?;
    let (text, json) = match exchange(&socket, None, std::time::Duration::from_secs(2)) {
        Ok(s) => (
            format!(
                "announces leap {} ({}), stratum {}, reference id {}, root delay {:.6} s, root dispersion {:.6} s \
                 (offset {:+.6} s from this host)",
                s.leap.to_bits(),
                leap_name(s.leap),
                s.stratum,
                s.reference_id.at_stratum(s.stratum),
                s.root_delay,
                s.root_dispersion,
                s.offset
            ),
            json!({
                "answered": true, "synchronized": true, "leap": s.leap.to_bits(), "stratum": s.stratum,
                "reference_id": s.reference_id.at_stratum(s.stratum).to_string(), "root_delay": s.root_delay,
                "root_dispersion": s.root_dispersion, "offset": s.offset,
            }),
        ),
        Err(Failure::Unsynchronized { leap, stratum, .. }) => (
            format!(
                "announces UNSYNCHRONIZED (leap {}, stratum {stratum})",
                leap.to_bits()
            ),
            json!({ "answered": true, "synchronized": false, "leap": leap.to_bits(), "stratum": stratum }),
        ),
        Err(Failure::Unfit {
            root_delay,
            root_dispersion,
            root_distance,
            ..
        }) => (
            format!(
                "announces root delay {root_delay:.6} s, root dispersion {root_dispersion:.6} s: \
                 root distance {root_distance:.3} s, UNFIT for clients (over 1.5 s)"
            ),
            json!({
                "answered": true, "synchronized": true, "fit": false, "root_delay": root_delay,
                "root_dispersion": root_dispersion, "root_distance": root_distance,
            }),
        ),
        Err(f) => (
            format!("no usable answer: {}", f.reason()),
            json!({ "answered": false, "reason": f.reason() }),
        ),
    };
    Ok(Live { target, text, json })
}

fn reading_text(snapshot: &Snapshot, error: Option<&str>) -> String {
    match (snapshot.reading, error) {
        (_, Some(e)) => format!("cannot be read: {e}"),
        (Some(SourceReading::Synchronized(r)), None) => format!(
            "synchronized, stratum {}, reference id {}, root delay {:.6} s, root dispersion {:.6} s{}",
            r.stratum,
            r.reference_id.at_stratum(r.stratum),
            r.root_delay,
            r.root_dispersion,
            match r.leap {
                authtime_clock::LeapWarning::None => String::new(),
                leap => format!(", leap second announced ({leap:?})"),
            }
        ),
        (Some(SourceReading::Unsynchronized(cause)), None) => format!("unsynchronized: {cause}"),
        (None, None) => "not read".into(),
    }
}

fn print_text(
    streams: &mut Streams<'_>,
    reader: &SourceReader,
    snapshot: &Snapshot,
    error: Option<&str>,
    a: &Announcement,
) -> anyhow::Result<()> {
    writeln!(streams.stdout, "source:    {} ({reader})", reader.kind())?;
    writeln!(
        streams.stdout,
        "reading:   {}",
        reading_text(snapshot, error)
    )?;
    match a.unsynchronized {
        Some(cause) => writeln!(
            streams.stdout,
            "announced: UNSYNCHRONIZED: leap 3, stratum 0, reference id 0, reference time 0, root delay \
             and dispersion 1 s (as chrony)\nbecause:   {cause}"
        )?,
        None => writeln!(
            streams.stdout,
            "announced: synchronized: leap {} ({}), stratum {}, reference id {} (0x{:08x}), reference time \
             {}, root delay {:.6} s, root dispersion {:.6} s",
            a.leap.to_bits(),
            leap_text(a.leap),
            a.stratum,
            a.reference_id.at_stratum(a.stratum),
            a.reference_id.to_u32(),
            reference_time_text(a),
            a.root_delay.as_seconds_f64(),
            a.root_dispersion.as_seconds_f64()
        )?,
    }
    Ok(())
}

/// What the `[roughtime]` server answers with this announcement: the radius
/// it signs (the same computation as the server's), or why it stays silent.
fn roughtime_text(a: &Announcement, max_radius: u32) -> String {
    match radius(a) {
        None => "no answers while the clock is unsynchronized".into(),
        Some(r) if r > max_radius => {
            format!("no answers: the radius would be {r} s, over max-radius {max_radius} s")
        }
        Some(r) => format!("answers with a radius of {r} s (max-radius {max_radius} s)"),
    }
}

fn reference_time_text(a: &Announcement) -> String {
    let now = authtime_server::clock::now_unix();
    let t = a.reference_ts.to_unix_near(now.secs);
    format!("{} s ago", now.secs.saturating_sub(t.secs))
}

fn status_json(
    reader: &SourceReader,
    snapshot: &Snapshot,
    error: Option<&str>,
    a: &Announcement,
    live: Option<&Live>,
    roughtime_max_radius: Option<u32>,
) -> serde_json::Value {
    let now = authtime_server::clock::now_unix();
    let roughtime = roughtime_max_radius.map(|max| {
        let radius = radius(a);
        json!({
            "answers": radius.is_some_and(|r| r <= max),
            "radius": radius,
            "max_radius": max,
        })
    });
    json!({
        "source": reader.kind().name(),
        "source_detail": reader.to_string(),
        "reading": reading_text(snapshot, error),
        "read_error": error,
        "synchronized": a.is_synchronized(),
        "unsynchronized_because": a.unsynchronized.map(|c| c.to_string()),
        "announced": {
            "leap": a.leap.to_bits(),
            "stratum": a.stratum,
            "reference_id": a.reference_id.at_stratum(a.stratum).to_string(),
            "reference_id_hex": format!("{:08x}", a.reference_id.to_u32()),
            "reference_time_unix": (!a.reference_ts.is_zero()).then(|| a.reference_ts.to_unix_near(now.secs).secs),
            "root_delay": a.root_delay.as_seconds_f64(),
            "root_dispersion": a.root_dispersion.as_seconds_f64(),
        },
        "server": live.map(|l| json!({ "address": l.target.to_string(), "reply": l.json })),
        "roughtime": roughtime,
    })
}
