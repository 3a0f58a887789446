//! How the lab's threads and the servers it starts are scheduled: CPU
//! affinity (`sched_setaffinity`), so that a server and its load generator
//! each have a core, and timer slack (`prctl(PR_SET_TIMERSLACK)`), so that a
//! pacing thread wakes when it asked to rather than up to 50 µs later (the
//! kernel's default slack), which would turn evenly spaced requests into
//! small bursts.

#![allow(unsafe_code, reason = "sched_setaffinity and prctl FFI")]

/// Pins thread (or process) `tid` (0 = the calling thread) to `cpu`.
#[must_use]
pub fn pin(tid: libc::pid_t, cpu: usize) -> bool {
    // SAFETY: an all-zero cpu_set_t is a valid empty set; CPU_SET writes inside
    // it (cpu is checked against its size); sched_setaffinity only reads it.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        if cpu >= 8 * std::mem::size_of::<libc::cpu_set_t>() {
            return false;
        }
        libc::CPU_SET(cpu, &mut set);
        libc::sched_setaffinity(tid, std::mem::size_of::<libc::cpu_set_t>(), &raw const set) == 0
    }
}

/// Pins every thread of process `pid` to `cpu`.
#[must_use]
pub fn pin_process(pid: u32, cpu: usize) -> bool {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return false;
    };
    let mut all = true;
    let mut any = false;
    for task in tasks.flatten() {
        let Some(tid) = task.file_name().to_str().and_then(|t| t.parse().ok()) else {
            continue;
        };
        any = true;
        all &= pin(tid, cpu);
    }
    any && all
}

/// Sets the calling thread's timer slack to `ns` nanoseconds (at least 1):
/// its sleeps then end within about that much of when they were asked to.
/// Returns whether the kernel took it.
pub fn set_timer_slack(ns: u64) -> bool {
    let ns = libc::c_ulong::try_from(ns.max(1)).unwrap_or(libc::c_ulong::MAX);
    // SAFETY: PR_SET_TIMERSLACK takes an integer and touches no memory of ours.
    unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, ns, 0, 0, 0) == 0 }
}

/// The number of CPUs this process may run on.
#[must_use]
pub fn cpus_allowed() -> usize {
    std::thread::available_parallelism().map_or(1, std::num::NonZero::get)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_thread_can_sharpen_its_sleeps() {
        std::thread::spawn(|| {
            assert!(set_timer_slack(1_000));
            let started = std::time::Instant::now();
            std::thread::sleep(std::time::Duration::from_micros(50));
            assert!(started.elapsed() >= std::time::Duration::from_micros(50));
        })
        .join()
        .expect("thread");
    }
}
