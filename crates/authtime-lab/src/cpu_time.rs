//! CPU-time clocks and the core-clock estimate.
//!
//! The machine is shared, so rates are measured per CPU-second of the measuring
//! thread (`CLOCK_THREAD_CPUTIME_ID`), the way `openssl speed` divides by user
//! time: a thread that was descheduled does not look slow. Cycles are
//! estimated from a calibrated chain of dependent `add` instructions (one cycle
//! each on every x86-64 core since the Pentium Pro), because virtual machines
//! usually have no performance counters.

#![allow(
    unsafe_code,
    reason = "clock_gettime/getrusage FFI and the calibration loop in asm"
)]

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

/// Runs `iterations` × 64 dependent adds (64 cycles per iteration at one add per cycle).
#[cfg(target_arch = "x86_64")]
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

fn add_chain(iterations: u64) -> u64 {
    let mut x: u64 = 0;
    let mut n = iterations;
    // SAFETY: pure register arithmetic on two named registers, no memory access.
    unsafe {
        core::arch::asm!(
            "2:",
            ".rept 64",
            "add {x}, 1",
            ".endr",
            "dec {n}",
            "jnz 2b",
            x = inout(reg) x,
            n = inout(reg) n,
            options(nomem, nostack),
        );
    }
    x + n
}

/// Estimates the core clock in GHz: the median of `probes` timings of a
/// dependent-add chain in thread CPU time. `None` off x86-64.
#[must_use]
pub fn estimate_ghz(probes: usize) -> Option<f64> {
    #[cfg(target_arch = "x86_64")]
    {
        const ITERS: u64 = 200_000; // 12.8 M cycles, a few ms
        let mut samples = Vec::with_capacity(probes);
        for _ in 0..probes.max(1) {
            let start = thread_cpu_time();
            std::hint::black_box(add_chain(std::hint::black_box(ITERS)));
            let secs = (thread_cpu_time() - start).as_secs_f64();
            if secs > 0.0 {
                samples.push((ITERS * 64) as f64 / secs / 1e9);
            }
        }
        crate::stats::median(&mut samples)
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let _ = probes;
        None
    }
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

    #[test]
    fn clock_estimate_is_plausible() {
        let ghz = estimate_ghz(5).expect("x86-64");
        assert!((0.5..8.0).contains(&ghz), "{ghz} GHz");
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
