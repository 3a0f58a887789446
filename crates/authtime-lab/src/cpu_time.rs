//! CPU-time clocks and steal time.
//!
//! The machine is shared, so rates are measured per CPU-second of the measuring
//! thread (`CLOCK_THREAD_CPUTIME_ID`), the way `openssl speed` divides by user
//! time: a thread that was descheduled does not look slow. The clock that
//! turns these times into cycles is [`crate::clock_estimate`]'s.

#![allow(unsafe_code, reason = "clock_gettime FFI")]

use std::time::Duration;

fn clock(id: libc::clockid_t) -> Duration {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec; clock_gettime only writes it.
    let rc = unsafe { libc::clock_gettime(id, &raw mut ts) };
    if rc != 0 {
        return Duration::ZERO;
    }
    Duration::new(
        u64::try_from(ts.tv_sec).unwrap_or(0),
        u32::try_from(ts.tv_nsec).unwrap_or(0),
    )
}

/// CPU time consumed by the calling thread.
#[must_use]
pub fn thread_cpu_time() -> Duration {
    clock(libc::CLOCK_THREAD_CPUTIME_ID)
}

/// CPU time (user + system) consumed by the whole process, all threads.
#[must_use]
pub fn process_cpu_time() -> Duration {
    clock(libc::CLOCK_PROCESS_CPUTIME_ID)
}

/// Steal time of all CPUs together, in seconds (`/proc/stat`, the `cpu`
/// line's eighth field, in USER_HZ ticks of 1/100 s): time the hypervisor
/// gave this virtual machine's CPUs to someone else. `None` off Linux.
#[must_use]
pub fn steal_seconds() -> Option<f64> {
    let stat = std::fs::read_to_string("/proc/stat").ok()?;
    parse_steal(&stat)
}

fn parse_steal(stat: &str) -> Option<f64> {
    let line = stat.lines().find(|l| l.starts_with("cpu "))?;
    let ticks: u64 = line.split_whitespace().nth(8)?.parse().ok()?;
    Some(ticks as f64 / 100.0)
}

/// The whole machine's CPU time so far, all CPUs together, in seconds
/// (`/proc/stat`, the `cpu` line, USER_HZ ticks of 1/100 s).
///
/// Busy time is best taken as what is not idle ([`MachineCpu::busy_since`]):
/// with a tickless idle (`NO_HZ_IDLE`) the kernel measures idle time exactly,
/// while user, system, irq and softirq are sampled by a tick that stops in
/// idle and misses short bursts between sleeps. A server woken 10,000 times
/// a second for 30 µs each showed as almost nothing in the sampled fields.
#[derive(Debug, Clone, Copy, Default, PartialEq, serde::Serialize)]
pub struct MachineCpu {
    /// The sampled busy fields: user, nice, system, irq and softirq (guest
    /// time is inside user).
    pub sampled_busy_s: f64,
    /// Of `sampled_busy_s`, interrupts and softirqs.
    pub irq_s: f64,
    /// Idle and iowait (exact under `NO_HZ_IDLE`).
    pub idle_s: f64,
    /// Steal: time the hypervisor gave these CPUs to someone else.
    pub steal_s: f64,
    /// CPUs counted (`cpuN` lines).
    pub cpus: usize,
}

impl MachineCpu {
    /// Now; `None` off Linux.
    #[must_use]
    pub fn now() -> Option<Self> {
        parse_machine(&std::fs::read_to_string("/proc/stat").ok()?)
    }

    /// What was spent from `earlier` to `self` (`cpus` stays `self`'s).
    #[must_use]
    pub fn since(&self, earlier: &Self) -> Self {
        Self {
            sampled_busy_s: self.sampled_busy_s - earlier.sampled_busy_s,
            irq_s: self.irq_s - earlier.irq_s,
            idle_s: self.idle_s - earlier.idle_s,
            steal_s: self.steal_s - earlier.steal_s,
            cpus: self.cpus,
        }
    }

    /// Busy CPU seconds of all CPUs from `earlier` to `self`, `wall` seconds
    /// apart: all the CPU time there was, less idle, iowait and steal.
    #[must_use]
    pub fn busy_since(&self, earlier: &Self, wall: f64) -> f64 {
        let d = self.since(earlier);
        (wall * self.cpus as f64 - d.idle_s - d.steal_s).max(0.0)
    }
}

fn parse_machine(stat: &str) -> Option<MachineCpu> {
    let line = stat.lines().find(|l| l.starts_with("cpu "))?;
    let ticks: Vec<u64> = line
        .split_whitespace()
        .skip(1)
        .map(str::parse)
        .collect::<Result<_, _>>()
        .ok()?;
    let field = |i: usize| ticks.get(i).map(|&t| t as f64 / 100.0);
    let (user, nice, system, idle, iowait) =
        (field(0)?, field(1)?, field(2)?, field(3)?, field(4)?);
    let (irq, softirq, steal) = (field(5)?, field(6)?, field(7)?);
    let cpus = stat
        .lines()
        .filter(|l| l.starts_with("cpu") && l.as_bytes().get(3).is_some_and(u8::is_ascii_digit))
        .count();
    Some(MachineCpu {
        sampled_busy_s: user + nice + system + irq + softirq,
        irq_s: irq + softirq,
        idle_s: idle + iowait,
        steal_s: steal,
        cpus,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thread_clock_advances_with_work() {
        let start = thread_cpu_time();
        let mut x = 0u64;
        for i in 0..5_000_000u64 {
            x = std::hint::black_box(x.wrapping_add(i));
        }
        assert!(thread_cpu_time() > start, "{x}");
        assert!(process_cpu_time() >= thread_cpu_time());
    }
}

#[cfg(test)]
mod steal_tests {
    use super::*;

    #[test]
    fn steal_is_the_cpu_lines_eighth_field() {
        let stat = "cpu  4132719 19013 399407 1088665 6657 0 21333 37861 0 0\n\
                    cpu0 2059755 11929 189513 563550 1635 0 8398 18703 0 0\n";
        assert_eq!(parse_steal(stat), Some(378.61));
        assert_eq!(parse_steal("cpu0 1 2 3\n"), None);
        assert_eq!(parse_steal("cpu  1 2 3\n"), None);
        let m = parse_machine(stat).expect("a cpu line");
        assert!((m.sampled_busy_s - (41327.19 + 190.13 + 3994.07 + 0.0 + 213.33)).abs() < 1e-6);
        assert_eq!(m.cpus, 1);
        assert!((m.irq_s - 213.33).abs() < 1e-6);
        assert!((m.idle_s - (10886.65 + 66.57)).abs() < 1e-6);
        assert!((m.steal_s - 378.61).abs() < 1e-6);
        assert_eq!(parse_machine("cpu  1 2 3\n"), None);
        if cfg!(target_os = "linux") {
            let a = MachineCpu::now().expect("linux");
            std::thread::sleep(std::time::Duration::from_millis(50));
            let b = MachineCpu::now().expect("linux");
            assert!(b.cpus >= 1);
            let busy = b.busy_since(&a, 0.05);
            assert!((0.0..=0.05 * b.cpus as f64).contains(&busy), "{busy}");
        }
        if cfg!(target_os = "linux") {
            assert!(steal_seconds().is_some());
        }
    }
}
