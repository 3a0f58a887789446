//! Scheduling priority of the calling thread.
//!
//! The NTS-KE threads run at a lower priority than the NTP workers: a TLS
//! handshake costs a few hundred microseconds of CPU, an NTS-protected reply a
//! few, so under a burst of key exchanges the time requests sharing the core
//! must not wait behind the handshakes.

use std::io;

/// Nice value of the NTS-KE threads (the NTP workers keep the process's, 0 by default).
pub(crate) const NTS_KE_NICE: i32 = 10;

/// Sets the nice value of the calling thread (Linux keeps one per thread);
/// raising it needs no privilege.
///
/// # Errors
/// The kernel refused.
pub(crate) fn set_current_thread_nice(nice: i32) -> io::Result<()> {
    // SAFETY: gettid and setpriority take plain integers and touch no memory
    // of ours; on Linux PRIO_PROCESS with a thread id addresses that thread.
    let r = unsafe {
        let tid = libc::gettid();
        libc::setpriority(libc::PRIO_PROCESS, tid as libc::id_t, nice)
    };
    if r == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_thread_lowers_its_own_priority_only() {
        let nice_of = |tid: libc::pid_t| {
            std::fs::read_to_string(format!("/proc/self/task/{tid}/stat"))
                .ok()
                .and_then(|s| {
                    let rest = s.get(s.rfind(')')? + 2..)?.to_owned();
                    rest.split_whitespace().nth(16)?.parse::<i32>().ok()
                })
        };
        // SAFETY: gettid takes no arguments.
        let main_tid = unsafe { libc::gettid() };
        let before = nice_of(main_tid).expect("main nice");
        // 19 is the lowest priority there is: a test run under `nice 19`
        // (or 15 and up) can only lower the thread as far as that.
        let target = (before + 5).min(19);
        let worker = std::thread::spawn(move || {
            set_current_thread_nice(target).expect("setpriority");
            // SAFETY: as above.
            nice_of(unsafe { libc::gettid() })
        });
        assert_eq!(worker.join().expect("thread"), Some(target));
        assert_eq!(nice_of(main_tid), Some(before));
    }
}
