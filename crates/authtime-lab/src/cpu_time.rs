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
        if cfg!(target_os = "linux") {
            assert!(steal_seconds().is_some());
        }
    }
}
