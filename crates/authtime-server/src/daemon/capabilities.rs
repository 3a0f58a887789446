//! Giving up the capabilities only the AF_XDP set-up needs, once it is done.
//!
//! Attaching the XDP program and opening the AF_XDP sockets needs
//! `CAP_BPF` and `CAP_NET_ADMIN` (or `CAP_SYS_ADMIN`), `CAP_NET_RAW` and
//! `CAP_IPC_LOCK` (docs/xdp.md). Started as root, the daemon loses them with
//! every other privilege when it switches user ([`super::privileges`]).
//! Started as an unprivileged user that was given them (systemd's
//! `AmbientCapabilities=`, `capsh --addamb`), it would keep them for life:
//! so right after the set-up, before any thread starts (a thread takes its
//! capability sets from the one that creates it), the starting thread
//! removes them from its effective, permitted, inheritable and ambient
//! sets, and checks in `/proc/self/task/*/status` that no thread holds one.
//! Other capabilities (`CAP_NET_BIND_SERVICE`, needed to bind NTS-KE or
//! Roughtime below port 1024 later in the start) are left as they were.

use std::io;

/// The capabilities dropped, with their numbers (linux/capability.h).
const XDP_SETUP: [(u32, &str); 5] = [
    (12, "CAP_NET_ADMIN"),
    (13, "CAP_NET_RAW"),
    (14, "CAP_IPC_LOCK"),
    (21, "CAP_SYS_ADMIN"),
    (39, "CAP_BPF"),
];

/// `_LINUX_CAPABILITY_VERSION_3`: two 32-bit words per set.
const VERSION_3: u32 = 0x2008_0522;

#[repr(C)]
struct Header {
    version: u32,
    pid: libc::c_int,
}

#[repr(C)]
#[derive(Clone, Copy, Default)]
struct Data {
    effective: u32,
    permitted: u32,
    inheritable: u32,
}

/// The 64-bit mask of the capabilities dropped.
fn mask() -> u64 {
    XDP_SETUP.iter().fold(0, |m, (bit, _)| m | 1 << bit)
}

/// Removes [`XDP_SETUP`] from the calling thread's sets, then checks every
/// thread of the process. Returns the names of those it held.
///
/// # Errors
/// capget or capset failed, or a thread still holds one (a thread started
/// before the set-up finished: a bug).
pub(crate) fn drop_xdp_setup() -> Result<Vec<&'static str>, String> {
    let mut header = Header {
        version: VERSION_3,
        pid: 0,
    };
    let mut data = [Data::default(); 2];
    // SAFETY: capget writes two Data structs (version 3) and reads the
    // header; both are live and of those sizes.
    let r = unsafe { libc::syscall(libc::SYS_capget, &raw mut header, data.as_mut_ptr()) };
    if r != 0 {
        return Err(format!("capget: {}", io::Error::last_os_error()));
    }
    let held = |d: &[Data; 2]| {
        let word = |f: fn(&Data) -> u32| u64::from(f(&d[0])) | u64::from(f(&d[1])) << 32;
        word(|x| x.effective) | word(|x| x.permitted) | word(|x| x.inheritable)
    };
    let before = held(&data);
    let names: Vec<&'static str> = XDP_SETUP
        .iter()
        .filter(|(bit, _)| before & 1 << bit != 0)
        .map(|(_, name)| *name)
        .collect();
    for (bit, _) in XDP_SETUP {
        // The ambient set first: a capability must leave it before it can
        // leave the inheritable set. EINVAL: a kernel without ambient sets.
        // SAFETY: prctl with integer arguments.
        unsafe {
            libc::prctl(
                libc::PR_CAP_AMBIENT,
                libc::PR_CAP_AMBIENT_LOWER as libc::c_ulong,
                libc::c_ulong::from(bit),
                0 as libc::c_ulong,
                0 as libc::c_ulong,
            );
        }
    }
    if before & mask() != 0 {
        let keep = !mask();
        for (i, d) in data.iter_mut().enumerate() {
            let word = (keep >> (32 * i)) as u32;
            d.effective &= word;
            d.permitted &= word;
            d.inheritable &= word;
        }
        header.version = VERSION_3;
        header.pid = 0;
        // SAFETY: capset reads the header and two Data structs, all live.
        let r = unsafe { libc::syscall(libc::SYS_capset, &raw mut header, data.as_ptr()) };
        if r != 0 {
            return Err(format!("capset: {}", io::Error::last_os_error()));
        }
    }
    let left = threads_holding(mask())?;
    if !left.is_empty() {
        return Err(format!(
            "capabilities of the AF_XDP set-up still held after dropping them: {}",
            left.join(", ")
        ));
    }
    Ok(names)
}

/// Every thread of the process whose permitted, effective or ambient set
/// has a capability of `mask`, as `task TID: CapEff ...`.
fn threads_holding(mask: u64) -> Result<Vec<String>, String> {
    super::privileges::threads_showing(|status| {
        sets_holding(status, mask)
            .into_iter()
            .map(|(key, value)| format!("{key} {value}"))
            .collect()
    })
}

/// The capability sets of a `/proc/*/status` text that have a bit of
/// `mask`.
fn sets_holding(status: &str, mask: u64) -> Vec<(&str, &str)> {
    status
        .lines()
        .filter_map(|line| line.split_once(':'))
        .map(|(key, value)| (key, value.trim()))
        .filter(|(key, value)| {
            matches!(*key, "CapPrm" | "CapEff" | "CapAmb")
                && u64::from_str_radix(value, 16).is_ok_and(|v| v & mask != 0)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_mask_has_the_five_bits() {
        assert_eq!(mask(), 1 << 12 | 1 << 13 | 1 << 14 | 1 << 21 | 1 << 39);
    }

    #[test]
    fn only_the_masked_bits_of_the_three_sets_count() {
        let status = "Name:\tauthtimed\nCapInh:\t0000008000000000\n\
                      CapPrm:\t0000008000003400\nCapEff:\t0000000000000400\n\
                      CapBnd:\t000001ffffffffff\nCapAmb:\t0000008000000000\n";
        assert_eq!(
            sets_holding(status, mask()),
            [
                ("CapPrm", "0000008000003400"),
                ("CapAmb", "0000008000000000")
            ]
        );
        // CAP_NET_BIND_SERVICE (10) alone is not ours to drop.
        let bind = "CapPrm:\t0000000000000400\nCapEff:\t0000000000000400\n";
        assert!(sets_holding(bind, mask()).is_empty());
        assert!(sets_holding("CapEff:\tnot hex\n", mask()).is_empty());
    }
}
