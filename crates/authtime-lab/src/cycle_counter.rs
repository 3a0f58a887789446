//! The hardware cycle counter of the calling thread, through Linux's
//! `perf_event_open`, where the kernel and the hypervisor offer one.
//!
//! Many virtual machines expose no performance-monitoring unit (no
//! `/sys/bus/event_source/devices/cpu`), and `perf_event_paranoid` may forbid
//! the call: [`CycleCounter::open`] then returns `None` and the clock estimate
//! falls back to instruction chains. The counter counts user-mode cycles of the
//! calling thread only (`pid = 0`, `cpu = -1`, kernel and hypervisor excluded),
//! the same thread whose CPU time the rates divide by.

#![allow(unsafe_code, reason = "the perf_event_open system call and read(2)")]

use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

/// `struct perf_event_attr` up to `config1`: `PERF_ATTR_SIZE_VER0`, 64 bytes,
/// which every kernel since 2.6.31 accepts (linux/perf_event.h).
#[repr(C)]
#[derive(Default)]
struct PerfEventAttrVer0 {
    type_: u32,
    size: u32,
    config: u64,
    sample_period: u64,
    sample_type: u64,
    read_format: u64,
    /// The bit fields: disabled (0), inherit (1), pinned (2), exclusive (3),
    /// exclude_user (4), exclude_kernel (5), exclude_hv (6), ...
    flags: u64,
    wakeup_events: u32,
    bp_type: u32,
    config1: u64,
}

const PERF_TYPE_HARDWARE: u32 = 0;
const PERF_COUNT_HW_CPU_CYCLES: u64 = 0;
const EXCLUDE_KERNEL: u64 = 1 << 5;
const EXCLUDE_HV: u64 = 1 << 6;
const PERF_FORMAT_TOTAL_TIME_ENABLED: u64 = 1;
const PERF_FORMAT_TOTAL_TIME_RUNNING: u64 = 2;
const PERF_FLAG_FD_CLOEXEC: libc::c_ulong = 8;

/// An open cycle counter for the calling thread.
#[derive(Debug)]
pub struct CycleCounter {
    fd: OwnedFd,
}

impl CycleCounter {
    /// Opens the calling thread's user-mode cycle counter, or `None` when the
    /// kernel or the hypervisor offers none (or forbids it). A counter that
    /// opens but does not move over a short busy loop is also `None`: some
    /// hypervisors accept the event and never count.
    #[must_use]
    pub fn open() -> Option<Self> {
        let attr = PerfEventAttrVer0 {
            type_: PERF_TYPE_HARDWARE,
            size: u32::try_from(std::mem::size_of::<PerfEventAttrVer0>()).ok()?,
            config: PERF_COUNT_HW_CPU_CYCLES,
            read_format: PERF_FORMAT_TOTAL_TIME_ENABLED | PERF_FORMAT_TOTAL_TIME_RUNNING,
            flags: EXCLUDE_KERNEL | EXCLUDE_HV,
            ..PerfEventAttrVer0::default()
        };
        // SAFETY: `attr` is a valid, initialised perf_event_attr of the size it
        // states; the kernel only reads it. pid 0 / cpu -1 = this thread, any CPU.
        let fd = unsafe {
            libc::syscall(
                libc::SYS_perf_event_open,
                &raw const attr,
                0 as libc::pid_t,
                -1 as libc::c_int,
                -1 as libc::c_int,
                PERF_FLAG_FD_CLOEXEC,
            )
        };
        let fd = i32::try_from(fd).ok().filter(|&fd| fd >= 0)?;
        // SAFETY: the kernel returned a new file descriptor that nothing else owns.
        let counter = Self {
            fd: unsafe { OwnedFd::from_raw_fd(fd) },
        };
        let before = counter.read()?;
        let mut x = 0u64;
        for i in 0..100_000u64 {
            x = std::hint::black_box(x.wrapping_add(i));
        }
        std::hint::black_box(x);
        (counter.read()?.cycles > before.cycles).then_some(counter)
    }

    /// The counter now, or `None` when the read fails.
    #[must_use]
    pub fn read(&self) -> Option<CounterReading> {
        let mut values = [0u64; 3];
        // SAFETY: reads at most 24 bytes into a valid, writable [u64; 3].
        let n = unsafe {
            libc::read(
                self.fd.as_raw_fd(),
                values.as_mut_ptr().cast::<libc::c_void>(),
                std::mem::size_of_val(&values),
            )
        };
        (n == 24).then_some(CounterReading {
            cycles: values[0],
            enabled_ns: values[1],
            running_ns: values[2],
        })
    }
}

/// One read of the counter (`PERF_FORMAT_TOTAL_TIME_ENABLED | _RUNNING`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CounterReading {
    /// Cycles counted while the counter was on the PMU.
    pub cycles: u64,
    /// Nanoseconds the event was enabled.
    pub enabled_ns: u64,
    /// Nanoseconds it was really counting: less than `enabled_ns` when the
    /// kernel multiplexed it with other events.
    pub running_ns: u64,
}

impl CounterReading {
    /// Cycles from `self` to `later`, or `None` when the counter was not on
    /// the PMU for the whole interval (a multiplexed count would be short).
    #[must_use]
    pub fn cycles_until(self, later: Self) -> Option<u64> {
        let enabled = later.enabled_ns.checked_sub(self.enabled_ns)?;
        let running = later.running_ns.checked_sub(self.running_ns)?;
        (running == enabled).then(|| later.cycles.saturating_sub(self.cycles))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn attr_is_the_kernels_version_0_layout() {
        assert_eq!(std::mem::size_of::<PerfEventAttrVer0>(), 64);
    }

    #[test]
    fn counter_moves_with_work_where_the_kernel_offers_one() {
        let Some(counter) = CycleCounter::open() else {
            eprintln!("no hardware cycle counter here (no PMU in this VM, or perf_event_paranoid)");
            return;
        };
        let a = counter.read().expect("read");
        let mut x = 0u64;
        for i in 0..1_000_000u64 {
            x = std::hint::black_box(x.wrapping_add(i));
        }
        let b = counter.read().expect("read");
        let cycles = b.cycles - a.cycles;
        assert!(
            cycles >= 1_000_000,
            "{cycles} cycles for 10^6 loop iterations ({x})"
        );
    }

    #[test]
    fn a_multiplexed_interval_gives_no_count() {
        let r = |cycles, enabled_ns, running_ns| CounterReading {
            cycles,
            enabled_ns,
            running_ns,
        };
        assert_eq!(r(100, 10, 10).cycles_until(r(600, 30, 30)), Some(500));
        assert_eq!(r(100, 10, 10).cycles_until(r(600, 30, 25)), None);
    }
}
