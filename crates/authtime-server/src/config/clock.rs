//! `[clock]`: where the server learns the state of the clock it serves, and
//! what it does while that clock is unsynchronized.
//!
//! | source | reads | stratum and reference id |
//! |---|---|---|
//! | `auto` (default) | chronyd's command socket when it answers at start, else the kernel | as below |
//! | `chrony` | chronyd's `tracking` report (Unix socket, or UDP port 323 on loopback) | chronyd's |
//! | `ntp` | mode-3 queries to the NTP daemon that disciplines this host | the daemon's |
//! | `kernel` | `adjtimex` read-only: `STA_UNSYNC`, `maxerror`, `STA_INS`/`STA_DEL` | from this section |
//! | `static` | nothing: a declaration (a lab, a stratum-1 host), optional leap-seconds list | from this section, required |

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};
use std::time::Duration;

use authtime_clock::AnnouncePolicy;
use authtime_clock::kernel_timex::Declared;
use authtime_clock::refid;
use authtime_wire::ReferenceId;
use serde::Deserialize;

use crate::clock::chrony_client::ChronyEndpoint;
use crate::config::{Problem, parse_socket_addr};

/// chronyd's command socket where Debian and Fedora put it.
pub const DEFAULT_CHRONY_SOCKET: &str = "/run/chrony/chronyd.sock";

/// chronyd's UDP command port on loopback (monitoring commands such as
/// `tracking` are open there to local users).
pub const DEFAULT_CHRONY_ADDRESS: SocketAddr =
    SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), 323);

/// The kernel source's default reference id: 127.127.1.1, what chronyd
/// announces for its local reference, since the kernel does not know the
/// upstream (set `reference-id` to the upstream's address when you know it).
pub const DEFAULT_KERNEL_REFERENCE_ID: &str = "127.127.1.1";

/// `[clock]` as written.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields, default)]
pub struct ClockSection {
    /// `auto`, `chrony`, `ntp`, `kernel` or `static`.
    pub source: String,
    /// chronyd's command socket (`chrony` and `auto`).
    pub chrony_socket: PathBuf,
    /// chronyd's UDP command address instead of the socket (`chrony`).
    pub chrony_address: Option<String>,
    /// The NTP daemon to follow (`ntp`), `IP:PORT`.
    pub ntp_server: Option<String>,
    /// Stratum announced while synchronized (`kernel`, `static`).
    pub stratum: Option<u8>,
    /// Reference id announced (`kernel`, `static`): the upstream's IP address,
    /// or a name of up to 4 characters at stratum 1.
    pub reference_id: Option<String>,
    /// Root delay in seconds (`static`).
    pub root_delay: f64,
    /// Root dispersion in seconds (`static`).
    pub root_dispersion: f64,
    /// A `leap-seconds.list` file whose leap seconds are announced (`static`).
    pub leap_seconds_list: Option<PathBuf>,
    /// While unsynchronized: `answer` (as chrony, with leap 3) or `drop`.
    pub unsynchronized: String,
    /// Seconds the source may fail before the clock is announced unsynchronized.
    pub max_unreadable: f64,
    /// Seconds between two readings of the source (at most 1).
    pub poll_interval: f64,
}

impl Default for ClockSection {
    fn default() -> Self {
        Self {
            source: "auto".into(),
            chrony_socket: PathBuf::from(DEFAULT_CHRONY_SOCKET),
            chrony_address: None,
            ntp_server: None,
            stratum: None,
            reference_id: None,
            root_delay: 0.0,
            root_dispersion: 0.0,
            leap_seconds_list: None,
            unsynchronized: "answer".into(),
            max_unreadable: AnnouncePolicy::default().max_unreadable,
            poll_interval: 1.0,
        }
    }
}

/// The `static` source's declaration.
#[derive(Debug, Clone, PartialEq)]
pub struct StaticClock {
    /// Stratum and reference id.
    pub declared: Declared,
    /// Root delay in seconds.
    pub root_delay: f64,
    /// Root dispersion in seconds.
    pub root_dispersion: f64,
    /// The leap-seconds list, if any.
    pub leap_seconds_list: Option<PathBuf>,
}

/// A validated clock source.
#[derive(Debug, Clone, PartialEq)]
pub enum ClockSource {
    /// chronyd if one of `chrony` answers at start, else the kernel.
    Auto {
        /// chronyd's endpoints, tried in order.
        chrony: Vec<ChronyEndpoint>,
        /// The kernel source's declaration.
        kernel: Declared,
    },
    /// chronyd.
    Chrony(ChronyEndpoint),
    /// An NTP daemon.
    Ntp(SocketAddr),
    /// The kernel.
    Kernel(Declared),
    /// A declaration.
    Static(StaticClock),
}

/// What to do with requests while the clock is unsynchronized.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UnsyncPolicy {
    /// Answer with leap 3 and stratum 0 (chrony, NTPsec and ntpd-rs answer).
    Answer,
    /// Drop the requests, and count them.
    Drop,
}

/// Validated `[clock]` settings.
#[derive(Debug, Clone, PartialEq)]
pub struct ClockSettings {
    /// The source.
    pub source: ClockSource,
    /// How a failing source is treated.
    pub policy: AnnouncePolicy,
    /// What to do while unsynchronized.
    pub unsynchronized: UnsyncPolicy,
    /// Time between two readings.
    pub poll_interval: Duration,
}

impl Default for ClockSettings {
    fn default() -> Self {
        ClockSection::default()
            .validate(None, &[], &mut Vec::new())
            .unwrap_or_else(|| unreachable!("the default [clock] section is valid"))
    }
}

impl ClockSection {
    /// Checks the section; `listen` are the NTP addresses served (an `ntp`
    /// source may not be one of them).
    pub(crate) fn validate(
        &self,
        config_dir: Option<&Path>,
        listen: &[SocketAddr],
        problems: &mut Vec<Problem>,
    ) -> Option<ClockSettings> {
        let before = problems.len();
        let source = match self.source.as_str() {
            "auto" => self
                .no_declaration("auto", problems)
                .map(|()| ClockSource::Auto {
                    chrony: self.chrony_endpoints(problems),
                    kernel: self.declared("auto", Some(2), problems),
                }),
            "chrony" => self
                .no_declaration("chrony", problems)
                .map(|()| ClockSource::Chrony(self.chrony_endpoints(problems).remove(0))),
            "ntp" => self
                .no_declaration("ntp", problems)
                .and_then(|()| self.ntp_server(listen, problems))
                .map(ClockSource::Ntp),
            "kernel" => Some(ClockSource::Kernel(self.declared(
                "kernel",
                Some(2),
                problems,
            ))),
            "static" => Some(ClockSource::Static(StaticClock {
                declared: self.declared("static", None, problems),
                root_delay: self.seconds("clock.root-delay", self.root_delay, problems),
                root_dispersion: self.seconds(
                    "clock.root-dispersion",
                    self.root_dispersion,
                    problems,
                ),
                leap_seconds_list: self.leap_seconds_list.as_ref().map(|p| match config_dir {
                    Some(dir) if p.is_relative() => dir.join(p),
                    _ => p.clone(),
                }),
            })),
            other => {
                problems.push(Problem::new(
                    "clock.source",
                    format!("unknown source `{other}` (auto, chrony, ntp, kernel or static)"),
                ));
                None
            }
        };
        if self.source != "static" && self.leap_seconds_list.is_some() {
            problems.push(Problem::new(
                "clock.leap-seconds-list",
                "a leap-seconds list is read only by source = \"static\"; the other sources say \
                 themselves when a leap second comes",
            ));
        }
        let unsynchronized = match self.unsynchronized.as_str() {
            "answer" => UnsyncPolicy::Answer,
            "drop" => UnsyncPolicy::Drop,
            other => {
                problems.push(Problem::new(
                    "clock.unsynchronized",
                    format!("unknown policy `{other}` (answer or drop)"),
                ));
                UnsyncPolicy::Answer
            }
        };
        if !(self.max_unreadable > 0.0 && self.max_unreadable <= 86_400.0) {
            problems.push(Problem::new(
                "clock.max-unreadable",
                format!("{} s is not in (0, 86400]", self.max_unreadable),
            ));
        }
        if !(self.poll_interval >= 0.01 && self.poll_interval <= 1.0) {
            problems.push(Problem::new(
                "clock.poll-interval",
                format!(
                    "{} s is not in [0.01, 1]: the clock state is read at least once a second",
                    self.poll_interval
                ),
            ));
        }
        if problems.len() > before {
            return None;
        }
        Some(ClockSettings {
            source: source?,
            policy: AnnouncePolicy {
                max_unreadable: self.max_unreadable,
            },
            unsynchronized,
            poll_interval: Duration::from_secs_f64(self.poll_interval),
        })
    }

    /// `stratum`, `reference-id`, `root-*` belong to `kernel` and `static` only.
    fn no_declaration(&self, source: &str, problems: &mut Vec<Problem>) -> Option<()> {
        let mut ok = true;
        let only = |key: &str| {
            Problem::new(
                format!("clock.{key}"),
                format!(
                    "`{key}` is for source = \"kernel\" or \"static\"; source \"{source}\" takes it from \
                     the {}",
                    if source == "auto" {
                        "source it finds"
                    } else {
                        "source"
                    }
                ),
            )
        };
        if self.source == "auto" {
            // `auto` may fall back to the kernel, which takes stratum and reference id.
            for (key, set) in [
                ("root-delay", self.root_delay != 0.0),
                ("root-dispersion", self.root_dispersion != 0.0),
            ] {
                if set {
                    problems.push(only(key));
                    ok = false;
                }
            }
            return ok.then_some(());
        }
        for (key, set) in [
            ("stratum", self.stratum.is_some()),
            ("reference-id", self.reference_id.is_some()),
            ("root-delay", self.root_delay != 0.0),
            ("root-dispersion", self.root_dispersion != 0.0),
        ] {
            if set {
                problems.push(only(key));
                ok = false;
            }
        }
        ok.then_some(())
    }

    fn chrony_endpoints(&self, problems: &mut Vec<Problem>) -> Vec<ChronyEndpoint> {
        let unix = ChronyEndpoint::Unix {
            client_dir: self
                .chrony_socket
                .parent()
                .map_or_else(|| PathBuf::from("/run/chrony"), Path::to_path_buf),
            socket: self.chrony_socket.clone(),
        };
        match self.chrony_address.as_deref() {
            Some(text) => match parse_socket_addr(text) {
                Ok(addr) => vec![ChronyEndpoint::Udp(addr)],
                Err(message) => {
                    problems.push(Problem::new("clock.chrony-address", message));
                    vec![unix]
                }
            },
            None if self.source == "auto" => {
                vec![unix, ChronyEndpoint::Udp(DEFAULT_CHRONY_ADDRESS)]
            }
            None => vec![unix],
        }
    }

    fn ntp_server(&self, listen: &[SocketAddr], problems: &mut Vec<Problem>) -> Option<SocketAddr> {
        let Some(text) = self.ntp_server.as_deref() else {
            problems.push(Problem::new(
                "clock.ntp-server",
                "source = \"ntp\" needs `ntp-server = \"IP:PORT\"`: the NTP daemon that disciplines \
                 this host's clock",
            ));
            return None;
        };
        let addr = parse_socket_addr(text)
            .or_else(|_| {
                text.parse::<IpAddr>()
                    .map(|ip| SocketAddr::new(ip, 123))
                    .map_err(|_| ())
            })
            .map_err(|()| {
                problems.push(Problem::new(
                    "clock.ntp-server",
                    format!("`{text}` is not an IP address with an optional port"),
                ));
            })
            .ok()?;
        let ours = listen
            .iter()
            .any(|l| l.port() == addr.port() && (l.ip() == addr.ip() || l.ip().is_unspecified()));
        if ours {
            problems.push(Problem::new(
                "clock.ntp-server",
                format!(
                    "{addr} is served by this server itself: it would follow its own announcements"
                ),
            ));
            return None;
        }
        Some(addr)
    }

    /// Stratum and reference id; `default_stratum` is `None` when both are required.
    fn declared(
        &self,
        source: &str,
        default_stratum: Option<u8>,
        problems: &mut Vec<Problem>,
    ) -> Declared {
        let fallback = Declared {
            stratum: 2,
            reference_id: ReferenceId([127, 127, 1, 1]),
        };
        let stratum = match (self.stratum, default_stratum) {
            (Some(s), _) if (1..=15).contains(&s) => s,
            (Some(s), _) => {
                problems.push(Problem::new(
                    "clock.stratum",
                    format!(
                        "stratum {s} is outside 1..=15 (an unsynchronized clock is announced by the source, \
                         not by the stratum)"
                    ),
                ));
                return fallback;
            }
            (None, Some(d)) => d,
            (None, None) => {
                problems.push(Problem::new(
                    "clock.stratum",
                    format!("source = \"{source}\" needs `stratum`, 1 to 15"),
                ));
                return fallback;
            }
        };
        let text = match (&self.reference_id, default_stratum) {
            (Some(text), _) => text.as_str(),
            (None, Some(_)) => DEFAULT_KERNEL_REFERENCE_ID,
            (None, None) => {
                problems.push(Problem::new(
                    "clock.reference-id",
                    format!(
                        "source = \"{source}\" needs `reference-id`: a name such as \"GPS\" at stratum 1, \
                         the upstream's IP address above"
                    ),
                ));
                return fallback;
            }
        };
        let reference_id = refid::parse(text)
            .map_err(|e| e.to_string())
            .and_then(|parsed| {
                refid::check_for_stratum(&parsed, stratum).map_err(|e| e.to_string())
            });
        match reference_id {
            Ok(reference_id) => Declared {
                stratum,
                reference_id,
            },
            Err(message) => {
                problems.push(Problem::new("clock.reference-id", message));
                fallback
            }
        }
    }

    fn seconds(&self, path: &str, value: f64, problems: &mut Vec<Problem>) -> f64 {
        if (0.0..16.0).contains(&value) {
            value
        } else {
            problems.push(Problem::new(path, format!("{value} s is not in [0, 16)")));
            0.0
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<ClockSettings, Vec<Problem>> {
        let section: ClockSection =
            toml::from_str(text).map_err(|e| vec![Problem::new("toml", e.to_string())])?;
        let mut problems = Vec::new();
        let listen = ["127.0.0.1:11123".parse().expect("addr")];
        section
            .validate(Some(Path::new("/etc/authtime")), &listen, &mut problems)
            .ok_or(problems)
    }

    fn paths(problems: &[Problem]) -> Vec<&str> {
        problems.iter().map(|p| p.path.as_str()).collect()
    }

    #[test]
    fn the_default_is_auto_with_chrony_first_then_the_kernel() {
        let s = parse("").expect("valid");
        let ClockSource::Auto { chrony, kernel } = &s.source else {
            panic!("{s:?}");
        };
        assert_eq!(chrony.len(), 2);
        assert!(
            matches!(&chrony[0], ChronyEndpoint::Unix { socket, .. } if socket == Path::new(DEFAULT_CHRONY_SOCKET))
        );
        assert_eq!(chrony[1], ChronyEndpoint::Udp(DEFAULT_CHRONY_ADDRESS));
        assert_eq!(kernel.stratum, 2);
        assert_eq!(kernel.reference_id, ReferenceId([127, 127, 1, 1]));
        assert_eq!(s.unsynchronized, UnsyncPolicy::Answer);
        assert_eq!(s.poll_interval, Duration::from_secs(1));
        assert_eq!(ClockSettings::default(), s);
    }

    #[test]
    fn static_needs_its_declaration() {
        let e = parse("source = \"static\"").expect_err("no stratum");
        assert_eq!(paths(&e), ["clock.stratum"]);
        let e = parse("source = \"static\"\nstratum = 1").expect_err("no refid");
        assert_eq!(paths(&e), ["clock.reference-id"]);
        let s = parse(
            "source = \"static\"\nstratum = 1\nreference-id = \"GPS\"\nroot-dispersion = 0.001\n\
             leap-seconds-list = \"leap-seconds.list\"",
        )
        .expect("valid");
        let ClockSource::Static(c) = s.source else {
            panic!("static");
        };
        assert_eq!(c.declared.reference_id, ReferenceId(*b"GPS\0"));
        assert_eq!(
            c.leap_seconds_list.as_deref(),
            Some(Path::new("/etc/authtime/leap-seconds.list"))
        );
    }

    #[test]
    fn a_name_above_stratum_one_is_refused() {
        let e =
            parse("source = \"static\"\nstratum = 2\nreference-id = \"LOCL\"").expect_err("LOCL");
        assert_eq!(paths(&e), ["clock.reference-id"]);
        assert!(e[0].message.contains("stratum 2"), "{}", e[0].message);
        let s = parse("source = \"kernel\"\nstratum = 3\nreference-id = \"2001:db8::1\"")
            .expect("valid");
        let ClockSource::Kernel(d) = s.source else {
            panic!("kernel");
        };
        assert_eq!(d.reference_id.to_u32(), 0x39ab_9b37);
    }

    #[test]
    fn declarations_belong_to_kernel_and_static() {
        let e = parse("source = \"chrony\"\nstratum = 3").expect_err("stratum for chrony");
        assert_eq!(paths(&e), ["clock.stratum"]);
        let e = parse("source = \"ntp\"\nntp-server = \"127.0.0.1:11124\"\nroot-delay = 1.0")
            .expect_err("delay");
        assert_eq!(paths(&e), ["clock.root-delay"]);
        let e = parse("source = \"kernel\"\nleap-seconds-list = \"x\"").expect_err("list");
        assert_eq!(paths(&e), ["clock.leap-seconds-list"]);
    }

    #[test]
    fn the_ntp_source_needs_a_daemon_other_than_itself() {
        let e = parse("source = \"ntp\"").expect_err("no server");
        assert_eq!(paths(&e), ["clock.ntp-server"]);
        let e = parse("source = \"ntp\"\nntp-server = \"127.0.0.1:11123\"").expect_err("itself");
        assert!(e[0].message.contains("itself"), "{}", e[0].message);
        let s = parse("source = \"ntp\"\nntp-server = \"127.0.0.1\"").expect("port 123");
        assert_eq!(
            s.source,
            ClockSource::Ntp("127.0.0.1:123".parse().expect("addr"))
        );
    }

    #[test]
    fn bad_values_are_named() {
        let e = parse(
            "source = \"gps\"\nunsynchronized = \"lie\"\nmax-unreadable = -1\npoll-interval = 5",
        )
        .expect_err("all bad");
        assert_eq!(
            paths(&e),
            [
                "clock.source",
                "clock.unsynchronized",
                "clock.max-unreadable",
                "clock.poll-interval"
            ]
        );
        let e = parse("source = \"kernel\"\nstratum = 16").expect_err("16");
        assert_eq!(paths(&e), ["clock.stratum"]);
        let e = parse("source = \"chrony\"\nchrony-address = \"nowhere\"").expect_err("address");
        assert_eq!(paths(&e), ["clock.chrony-address"]);
        let s = parse(
            "source = \"chrony\"\nchrony-address = \"127.0.0.1:323\"\nunsynchronized = \"drop\"",
        )
        .expect("valid");
        assert_eq!(
            s.source,
            ClockSource::Chrony(ChronyEndpoint::Udp(DEFAULT_CHRONY_ADDRESS))
        );
        assert_eq!(s.unsynchronized, UnsyncPolicy::Drop);
    }
}
