//! authtime's lab: reruns the experiments of the seed documents on this machine,
//! side by side with real peers measured in the same run (OpenSSL's
//! `openssl speed` and its per-packet EVP API), and writes a report
//! (`index.md` with tables next to the seeds' original figures, PNG and SVG
//! plots, JSON and CSV data).
//!
//! Rates are items per CPU-second of the measuring thread, medians over several
//! runs; cycles come from a clock estimate that is printed only when two
//! independent measures of it agree (see [`clock_estimate`]).
//! This crate measures; it does not assert speed targets (benchmarks are not tests).

use std::{path::PathBuf, time::Instant};

pub mod clock_estimate;
pub mod cpu_time;
pub mod cycle_counter;
pub mod load_ntp;
pub mod load_ntp_accuracy;
pub mod load_ntp_schedule;
pub mod load_nts;
pub mod load_nts_stats;
pub mod load_roughtime;
pub mod load_roughtime_paced;
pub mod machine;
pub mod netns;
pub mod openssl_evp;
pub mod openssl_speed;
pub mod plot;
pub mod rate;
pub mod report;
pub mod roughtime_lab_server;
pub mod scheduling;
pub mod section_accuracy;
pub mod section_accuracy_report;
pub mod section_mac;
pub mod section_ntp;
pub mod section_nts;
pub mod section_nts_flood;
pub mod section_nts_groups;
pub mod section_nts_report;
pub mod section_nts_server;
pub mod section_partial;
pub mod section_rfc1810;
pub mod section_roughtime;
pub mod section_roughtime_report;
pub mod section_soak;
pub mod section_stack;
pub mod section_stack_xdp;
pub mod section_tesla;
mod section_tesla_measure;
pub mod section_xdp;
pub mod section_xdp_report;
mod section_xdp_servers;
mod soak_processes;
pub mod soak_verdict;
pub mod stats;

/// The sections of the lab.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SectionId {
    /// Seed 000: MACs on NTP packets.
    Mac,
    /// Seed 001: RFC 1810, MD5 and K-way MD5.
    Rfc1810,
    /// Seed 004: partial MACs.
    Partial,
    /// Seed 004: the network stack's cost against the MAC's.
    Stack,
    /// Issue 4: NTP request rate, authtime vs chronyd.
    Ntp,
    /// Seed 002 and issue 6: NTS performance and scalability, authtime vs chronyd.
    Nts,
    /// Seed 003 and issue 8: TESLA in DTLS, bootstrap signatures, receiver speed.
    Tesla,
    /// Issue 21: Roughtime cost by batch size, responses per second vs roughenough.
    Roughtime,
    /// Issue 26: how early served transmit timestamps are, authtime vs chronyd.
    Accuracy,
    /// Issue 31: CPU per request and T3 accuracy, chronyd vs authtime on
    /// sockets vs authtime on AF_XDP.
    Xdp,
    /// Issue 29: soak and faults (only with `--only soak`: it is long).
    Soak,
}

impl SectionId {
    /// All sections, in report order.
    pub const ALL: [SectionId; 10] = [
        Self::Mac,
        Self::Rfc1810,
        Self::Partial,
        Self::Stack,
        Self::Ntp,
        Self::Nts,
        Self::Tesla,
        Self::Roughtime,
        Self::Accuracy,
        Self::Xdp,
    ];

    /// The name `--only` takes.
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Self::Mac => "mac",
            Self::Rfc1810 => "rfc1810",
            Self::Partial => "partial",
            Self::Stack => "stack",
            Self::Ntp => "ntp",
            Self::Tesla => "tesla",
            Self::Nts => "nts",
            Self::Roughtime => "roughtime",
            Self::Accuracy => "accuracy",
            Self::Xdp => "xdp",
            Self::Soak => "soak",
        }
    }

    /// Parses a section name.
    ///
    /// # Errors
    /// A message listing the valid names.
    pub fn parse(name: &str) -> Result<Self, String> {
        Self::ALL
            .into_iter()
            .chain([Self::Soak])
            .find(|s| s.name() == name)
            .ok_or_else(|| {
                format!(
                    "unknown lab section `{name}` (sections: mac, rfc1810, partial, stack, ntp, nts, tesla, roughtime, accuracy, xdp, soak)"
                )
            })
    }
}

/// Reports progress of long runs (to standard error, in the command line).
pub struct Progress<'a> {
    sink: Box<dyn FnMut(&str) + 'a>,
    started: Instant,
}

impl<'a> Progress<'a> {
    /// Progress sent to `sink` as one line per step.
    pub fn new(sink: impl FnMut(&str) + 'a) -> Self {
        Self {
            sink: Box::new(sink),
            started: Instant::now(),
        }
    }

    /// Progress that goes nowhere.
    #[must_use]
    pub fn silent() -> Self {
        Self::new(|_| {})
    }

    /// Announces step `done + 1` of `total`.
    pub fn step(&mut self, what: &str, done: usize, total: usize) {
        let line = format!(
            "[{:>5.1}s] {what} ({}/{total})",
            self.started.elapsed().as_secs_f64(),
            done + 1
        );
        (self.sink)(&line);
    }
}

/// What `authtime-lab run` runs.
#[derive(Debug, Clone)]
pub struct LabOptions {
    /// Short runs (the whole lab in about four minutes on a 2-CPU machine).
    pub quick: bool,
    /// Only this section.
    pub only: Option<SectionId>,
    /// Where the report goes.
    pub out: PathBuf,
    /// Length of the soak section's run (default: one hour, or 150 s with `quick`).
    pub duration: Option<std::time::Duration>,
    /// The protocols the xdp section measures (default: all).
    pub xdp_protocols: Option<Vec<section_xdp::Protocol>>,
}

/// Runs the selected sections and writes the report into `opts.out`.
///
/// # Errors
/// A one-line reason when a measurement or the report cannot be made.
pub fn run(opts: &LabOptions, progress: &mut Progress<'_>) -> Result<Vec<report::Section>, String> {
    progress.step("calibrating the clock", 0, 1);
    let machine = machine::Machine::describe();
    let mut sections = Vec::new();
    // The soak section runs only when asked for by name.
    let ids = if opts.only == Some(SectionId::Soak) {
        vec![SectionId::Soak]
    } else {
        SectionId::ALL.to_vec()
    };
    for id in ids {
        if opts.only.is_some_and(|only| only != id) {
            continue;
        }
        let section = match id {
            SectionId::Mac => {
                let mac_opts = section_mac::MacOptions::new(opts.quick);
                let mut rows = section_mac::measure_rows(&mac_opts, progress)?;
                let soft_sizes: &[usize] = if opts.quick {
                    &[48]
                } else {
                    &section_mac::SIZES
                };
                let soft_note = match section_mac::soft_binary() {
                    Some(bin) => {
                        progress.step("mac: software build (no AES-NI/SHA-NI)", 0, 1);
                        section_mac::add_soft_rows(&mut rows, &bin, soft_sizes, opts.quick).err()
                    }
                    None => Some(
                        "no software build found: run scripts/build-soft.sh for the no-NI column"
                            .to_owned(),
                    ),
                };
                let mut section = section_mac::section(&rows, machine.ghz, opts.quick);
                if let Some(note) = soft_note {
                    section
                        .findings
                        .push(format!("No-NI column missing: {note}."));
                }
                section
            }
            SectionId::Rfc1810 => section_rfc1810::run(opts.quick, machine.ghz, progress)?,
            SectionId::Partial => section_partial::run(opts.quick, machine.ghz, progress)?,
            SectionId::Stack => section_stack::run(opts.quick, machine.ghz, progress)?,
            SectionId::Ntp => section_ntp::run(opts.quick, progress)?,
            SectionId::Tesla => section_tesla::run(opts.quick, progress)?,
            SectionId::Nts => section_nts::run(opts.quick, progress)?,
            SectionId::Roughtime => section_roughtime::run(opts.quick, progress)?,
            SectionId::Accuracy => section_accuracy::run(opts.quick, progress)?,
            SectionId::Xdp => {
                section_xdp::run(opts.quick, opts.xdp_protocols.as_deref(), progress)?
            }
            SectionId::Soak => section_soak::run(
                &section_soak::SoakOptions::new(opts.quick, opts.duration),
                progress,
            )?,
        };
        sections.push(section);
    }
    report::write(&opts.out, &machine, &sections, opts.quick)?;
    Ok(sections)
}
