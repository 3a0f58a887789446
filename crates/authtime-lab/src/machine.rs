//! What machine a report was measured on.

use authtime_mac::Isa;

use crate::clock_estimate::ClockEstimate;

/// The machine description every report section carries.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Machine {
    /// CPU model name from /proc/cpuinfo.
    pub cpu: String,
    /// Logical CPUs online.
    pub cpus: usize,
    /// CPU features the kernels may use.
    pub isa: String,
    /// The core clock in GHz that turns CPU time into cycles, when it can be
    /// trusted (see [`crate::clock_estimate`]); `None` prints no cycles.
    pub ghz: Option<f64>,
    /// The clock estimate with its cross-check, or why it is not trusted.
    pub clock: ClockEstimate,
    /// Kernel release.
    pub kernel: String,
    /// `openssl version`.
    pub openssl: Option<String>,
    /// When the run started (seconds since the Unix epoch).
    pub unix_time: u64,
}

impl Machine {
    /// Reads the description and calibrates the clock.
    #[must_use]
    pub fn describe() -> Self {
        let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
        let cpu = cpuinfo
            .lines()
            .find_map(|l| {
                l.strip_prefix("model name")
                    .and_then(|r| r.split_once(':'))
                    .map(|(_, v)| v.trim().to_owned())
            })
            .unwrap_or_else(|| "unknown".into());
        let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease")
            .unwrap_or_default()
            .trim()
            .to_owned();
        let clock = ClockEstimate::measure(21);
        Self {
            cpu,
            cpus: std::thread::available_parallelism().map_or(1, usize::from),
            isa: Isa::current().describe(),
            ghz: clock.ghz,
            clock,
            kernel,
            openssl: crate::openssl_speed::version(),
            unix_time: std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_secs()),
        }
    }

    /// One line for the report.
    #[must_use]
    pub fn summary(&self) -> String {
        format!(
            "{} ({} CPUs, features: {}, clock: {}, Linux {}, {})",
            self.cpu,
            self.cpus,
            self.isa,
            self.clock.describe(),
            self.kernel,
            self.openssl.as_deref().unwrap_or("openssl not found"),
        )
    }
}
