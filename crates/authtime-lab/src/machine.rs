//! What machine a report was measured on.

use authtime_mac::Isa;

/// The machine description every report section carries.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Machine {
    /// CPU model name from /proc/cpuinfo.
    pub cpu: String,
    /// Logical CPUs online.
    pub cpus: usize,
    /// CPU features the kernels may use.
    pub isa: String,
    /// Estimated core clock in GHz (dependent-add chain), if measured.
    pub ghz: Option<f64>,
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
        Self {
            cpu,
            cpus: std::thread::available_parallelism().map_or(1, usize::from),
            isa: Isa::current().describe(),
            ghz: crate::cpu_time::estimate_ghz(21),
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
            "{} ({} CPUs, features: {}, clock ≈ {}, Linux {}, {})",
            self.cpu,
            self.cpus,
            self.isa,
            self.ghz
                .map_or_else(|| "unknown".into(), |g| format!("{g:.2} GHz")),
            self.kernel,
            self.openssl.as_deref().unwrap_or("openssl not found"),
        )
    }
}
