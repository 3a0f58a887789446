//! Reading the configured clock-state source: chronyd's command socket, an
//! NTP daemon over UDP, the kernel's `adjtimex`, or a static declaration. The
//! readings are turned into [`SourceReading`]s by `authtime-clock`; this
//! module only does the IO.

use std::fmt;
use std::net::{SocketAddr, UdpSocket};
use std::path::Path;
use std::time::Duration;

use authtime_clock::kernel_timex::{self, Declared, KernelStatus};
use authtime_clock::leap_list::{self, HashCheck, LeapList};
use authtime_clock::{
    LeapScope, LeapWarning, SourceKind, SourceReading, SyncedReading, ntp_upstream,
};
use authtime_wire::{Header, Mode, NtpTimestamp, UnixTime, Writer};

use crate::clock::chrony_client::{ChronyEndpoint, query_tracking};
use crate::config::clock::{ClockSource, StaticClock};

/// How long one reading may wait for chronyd or the NTP daemon.
pub const READ_TIMEOUT: Duration = Duration::from_millis(400);

/// A source ready to be read.
#[derive(Debug)]
pub enum SourceReader {
    /// chronyd.
    Chrony(ChronyEndpoint),
    /// An NTP daemon.
    Ntp(SocketAddr),
    /// The kernel.
    Kernel(Declared),
    /// A declaration, with its leap-seconds list.
    Static {
        /// The declaration.
        clock: StaticClock,
        /// The list, when one is configured and readable.
        leap_list: Option<LeapList>,
    },
}

/// Something an operator should know at start.
pub type StartWarning = String;

impl SourceReader {
    /// The reader for `source`: `auto` asks chronyd's endpoints once, in
    /// order, and takes the first that answers, else the kernel. Returns the
    /// warnings to log at start.
    ///
    /// # Errors
    /// A leap-seconds list that cannot be read or parsed.
    pub fn resolve(source: &ClockSource) -> Result<(Self, Vec<StartWarning>), String> {
        let mut warnings = Vec::new();
        let reader = match source {
            ClockSource::Auto { chrony, kernel } => {
                match chrony
                    .iter()
                    .find(|e| query_tracking(e, READ_TIMEOUT).is_ok())
                {
                    Some(endpoint) => Self::Chrony(endpoint.clone()),
                    None => Self::Kernel(*kernel),
                }
            }
            ClockSource::Chrony(endpoint) => Self::Chrony(endpoint.clone()),
            ClockSource::Ntp(addr) => Self::Ntp(*addr),
            ClockSource::Kernel(declared) => Self::Kernel(*declared),
            ClockSource::Static(clock) => {
                let leap_list = match &clock.leap_seconds_list {
                    Some(path) => Some(load_leap_list(path, &mut warnings)?),
                    None => None,
                };
                Self::Static {
                    clock: clock.clone(),
                    leap_list,
                }
            }
        };
        match &reader {
            Self::Kernel(_) => {
                if let Ok(status) = read_kernel()
                    && let Some(w) = kernel_timex::rtcsync_pitfall(&status, chronyd_running())
                {
                    warnings.push(w.to_owned());
                }
            }
            Self::Static { .. } => {
                if let Ok(status) = read_kernel()
                    && matches!(
                        kernel_timex::reading(
                            &status,
                            &Declared {
                                stratum: 1,
                                reference_id: authtime_wire::ReferenceId([0; 4])
                            }
                        ),
                        SourceReading::Unsynchronized(_)
                    )
                {
                    warnings.push(
                        "source = \"static\" announces a synchronized clock, but the kernel says this clock is \
                         unsynchronized (STA_UNSYNC): clients will trust a clock nothing disciplines"
                            .to_owned(),
                    );
                }
            }
            Self::Chrony(_) | Self::Ntp(_) => {}
        }
        Ok((reader, warnings))
    }

    /// The kind of source.
    #[must_use]
    pub fn kind(&self) -> SourceKind {
        match self {
            Self::Chrony(_) => SourceKind::Chrony,
            Self::Ntp(_) => SourceKind::Ntp,
            Self::Kernel(_) => SourceKind::Kernel,
            Self::Static { .. } => SourceKind::Static,
        }
    }

    /// Reads the source once, at `now`.
    ///
    /// # Errors
    /// The source did not answer, or answered something unusable.
    pub fn read(&self, now: UnixTime) -> Result<SourceReading, String> {
        match self {
            Self::Chrony(endpoint) => query_tracking(endpoint, READ_TIMEOUT)
                .map(|t| t.to_reading())
                .map_err(|e| e.to_string()),
            Self::Ntp(addr) => query_ntp(*addr, now).map_err(|e| format!("NTP daemon {addr}: {e}")),
            Self::Kernel(declared) => read_kernel()
                .map(|status| kernel_timex::reading(&status, declared))
                .map_err(|e| format!("adjtimex: {e}")),
            Self::Static { clock, leap_list } => Ok(static_reading(clock, leap_list.as_ref(), now)),
        }
    }
}

impl fmt::Display for SourceReader {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Chrony(endpoint) => write!(f, "{endpoint}"),
            Self::Ntp(addr) => write!(f, "NTP daemon at {addr}"),
            Self::Kernel(d) => write!(
                f,
                "kernel clock status (adjtimex), declared stratum {} reference id {}",
                d.stratum, d.reference_id
            ),
            Self::Static { clock, leap_list } => write!(
                f,
                "static declaration, stratum {} reference id {}{}",
                clock.declared.stratum,
                clock.declared.reference_id,
                if leap_list.is_some() {
                    ", leap-seconds list"
                } else {
                    ""
                }
            ),
        }
    }
}

fn load_leap_list(path: &Path, warnings: &mut Vec<StartWarning>) -> Result<LeapList, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("leap-seconds list {}: {e}", path.display()))?;
    let list = leap_list::parse(&text).map_err(|e| format!("{}: {e}", path.display()))?;
    if list.hash() == HashCheck::Invalid {
        warnings.push(format!(
            "leap-seconds list {}: its #h hash does not match its contents (damaged or edited)",
            path.display()
        ));
    }
    if list.is_expired(crate::clock::now_unix()) {
        warnings.push(format!(
            "leap-seconds list {} has expired: a leap second announced after it would be missed; \
             install a current one (Debian: tzdata)",
            path.display()
        ));
    }
    Ok(list)
}

fn static_reading(
    clock: &StaticClock,
    leap_list: Option<&LeapList>,
    now: UnixTime,
) -> SourceReading {
    SourceReading::Synchronized(SyncedReading {
        stratum: clock.declared.stratum,
        reference_id: clock.declared.reference_id,
        reference_time: None,
        root_delay: clock.root_delay,
        root_dispersion: clock.root_dispersion,
        leap: leap_list.map_or(LeapWarning::None, |l| l.warning_for(now)),
        leap_scope: LeapScope::EndOfToday,
        leap_in_progress: false,
    })
}

/// The kernel's clock status, read-only (`modes = 0` needs no capability).
///
/// # Errors
/// The call failed (a seccomp filter or systemd's `ProtectClock=yes` refuse it).
pub fn read_kernel() -> std::io::Result<KernelStatus> {
    // SAFETY: an all-zero timex is valid (modes = 0: read only); adjtimex
    // writes only into the struct it is given.
    let mut tx: libc::timex = unsafe { std::mem::zeroed() };
    // SAFETY: `tx` is a valid, writable timex.
    let state = unsafe { libc::adjtimex(&raw mut tx) };
    if state < 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(KernelStatus {
        state,
        status: tx.status,
        maxerror_us: tx.maxerror,
        esterror_us: tx.esterror,
    })
}

/// Whether a chronyd process runs on this host (for the `rtcsync` warning).
#[must_use]
pub fn chronyd_running() -> bool {
    std::fs::read_dir("/proc").is_ok_and(|dir| {
        dir.flatten().any(|entry| {
            std::fs::read_to_string(entry.path().join("comm"))
                .is_ok_and(|comm| comm.trim() == "chronyd")
        })
    })
}

/// One mode-3 query to the NTP daemon at `addr`.
fn query_ntp(addr: SocketAddr, now: UnixTime) -> std::io::Result<SourceReading> {
    let bind: SocketAddr = if addr.is_ipv4() {
        ([0, 0, 0, 0], 0).into()
    } else {
        ([0u16; 8], 0).into()
    };
    let socket = UdpSocket::bind(bind)?;
    socket.connect(addr)?;
    socket.set_read_timeout(Some(READ_TIMEOUT))?;
    // A random transmit timestamp: the reply must echo it as its origin, and
    // nothing about this host's clock goes on the wire.
    let mut random = [0u8; 8];
    getrandom::fill(&mut random).map_err(std::io::Error::other)?;
    let sent = NtpTimestamp::from_bits(u64::from_be_bytes(random));
    let mut request = Header::new(Mode::Client);
    request.transmit_ts = sent;
    let mut buf = [0u8; 48];
    request
        .encode(&mut Writer::new(&mut buf))
        .map_err(|e| std::io::Error::other(format!("{e:?}")))?;
    socket.send(&buf)?;
    let mut reply = [0u8; 1024];
    let deadline = std::time::Instant::now() + READ_TIMEOUT;
    loop {
        let n = socket.recv(&mut reply)?;
        match ntp_upstream::parse_reply(&reply[..n], sent, now) {
            Ok(reading) => return Ok(reading),
            Err(ntp_upstream::UpstreamReplyError::WrongOrigin)
                if std::time::Instant::now() < deadline => {}
            Err(e) => return Err(std::io::Error::other(e.to_string())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_kernel_can_be_read_without_privilege() {
        let status = read_kernel().expect("adjtimex modes=0");
        assert!((0..=5).contains(&status.state), "{status:?}");
        assert!(status.maxerror_us >= 0, "{status:?}");
    }

    #[test]
    fn a_silent_ntp_daemon_is_an_error_in_bounded_time() {
        // A bound socket that never answers.
        let silent = UdpSocket::bind("127.0.0.1:0").expect("bind");
        let addr = silent.local_addr().expect("addr");
        let started = std::time::Instant::now();
        let err = SourceReader::Ntp(addr)
            .read(crate::clock::now_unix())
            .expect_err("silent");
        assert!(err.contains(&addr.to_string()), "{err}");
        assert!(started.elapsed() < Duration::from_secs(5));
    }
}
