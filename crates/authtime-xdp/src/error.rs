//! Why attaching the program or opening an AF_XDP socket failed, one variant
//! per cause, each message naming what is missing and, where there is one,
//! the fix.

use std::fmt;
use std::io;

/// Everything that can go wrong on the kernel side of the AF_XDP path.
#[derive(Debug)]
#[non_exhaustive]
pub enum Error {
    /// No network interface of this name in the caller's network namespace.
    NoSuchInterface {
        /// The name asked for.
        ifname: String,
    },
    /// The interface has fewer receive queues than the index asked for.
    QueueOutOfRange {
        /// The interface.
        ifname: String,
        /// The queue asked for.
        queue: u32,
        /// How many receive queues it has.
        queues: u32,
    },
    /// The kernel has no AF_XDP sockets (`socket(AF_XDP)` gave
    /// `EAFNOSUPPORT`: built without `CONFIG_XDP_SOCKETS`).
    NoAfXdp,
    /// The kernel refused an operation for want of a capability (`EPERM`).
    MissingCapability {
        /// What was refused.
        operation: &'static str,
        /// The capabilities that operation needs.
        needs: &'static str,
    },
    /// Native (driver) XDP was asked for and the driver has none
    /// (`EOPNOTSUPP`); generic (skb) mode works on every interface.
    NoNativeXdp {
        /// The interface.
        ifname: String,
    },
    /// Zero-copy AF_XDP was asked for and the driver has no zero-copy
    /// support for this queue; copy mode works on every interface.
    NoZeroCopy {
        /// The interface.
        ifname: String,
        /// What the kernel said.
        source: io::Error,
    },
    /// Another XDP program is attached to the interface already (`EBUSY`
    /// or `EEXIST`).
    AlreadyAttached {
        /// The interface.
        ifname: String,
    },
    /// Another AF_XDP socket is bound to this interface and queue (`EBUSY`).
    QueueBusy {
        /// The interface.
        ifname: String,
        /// The queue.
        queue: u32,
    },
    /// The UMEM is larger than the process may lock: without
    /// `CAP_IPC_LOCK`, its pages count against `RLIMIT_MEMLOCK` (`ENOBUFS`
    /// from `XDP_UMEM_REG`).
    MemlockLimit {
        /// The UMEM's size.
        umem_bytes: u64,
    },
    /// The verifier rejected the program.
    ProgramRejected {
        /// What `BPF_PROG_LOAD` returned.
        source: io::Error,
        /// The verifier's log (the instruction it stopped at comes last).
        log: String,
    },
    /// The served ports or addresses cannot make a program.
    InvalidProgram(&'static str),
    /// The socket configuration is impossible (sizes, counts).
    InvalidConfig(String),
    /// Any other system call failure.
    Sys {
        /// The call and what it was for.
        call: &'static str,
        /// What it returned.
        source: io::Error,
    },
}

impl Error {
    /// The error for a failed system call `call`: `EPERM` becomes
    /// [`Error::MissingCapability`] naming `needs`, anything else
    /// [`Error::Sys`].
    pub(crate) fn from_sys(call: &'static str, needs: &'static str, source: io::Error) -> Self {
        if source.raw_os_error() == Some(libc::EPERM) {
            Self::MissingCapability {
                operation: call,
                needs,
            }
        } else {
            Self::Sys { call, source }
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::NoSuchInterface { ifname } => write!(
                f,
                "no network interface named {ifname:?} in this network namespace"
            ),
            Self::QueueOutOfRange {
                ifname,
                queue,
                queues,
            } => write!(
                f,
                "{ifname} has {queues} receive queue(s); queue {queue} is out of range"
            ),
            Self::NoAfXdp => write!(
                f,
                "this kernel has no AF_XDP sockets (socket(AF_XDP) failed with EAFNOSUPPORT; it needs CONFIG_XDP_SOCKETS=y)"
            ),
            Self::MissingCapability { operation, needs } => write!(
                f,
                "{operation} was refused (EPERM): it needs {needs} (run as root or grant them, e.g. with setcap or systemd's AmbientCapabilities)"
            ),
            Self::NoNativeXdp { ifname } => write!(
                f,
                "the driver of {ifname} has no native XDP; attach in generic (skb) mode instead"
            ),
            Self::NoZeroCopy { ifname, source } => write!(
                f,
                "the driver of {ifname} cannot do zero-copy AF_XDP on this queue ({source}); bind in copy mode instead"
            ),
            Self::AlreadyAttached { ifname } => write!(
                f,
                "another XDP program is already attached to {ifname}; if it was attached with netlink (ip link, xdp-loader) remove it with `ip link set dev {ifname} xdp off`, if it is held by a bpf_link, stop the process that holds it or remove its pin (`bpftool link` lists links)"
            ),
            Self::QueueBusy { ifname, queue } => write!(
                f,
                "another AF_XDP socket is bound to {ifname} queue {queue} (a socket closed a moment ago frees its queue asynchronously, within milliseconds: retry)"
            ),
            Self::ProgramRejected { source, log } => {
                write!(
                    f,
                    "the kernel's verifier rejected the XDP program ({source})"
                )?;
                if log.trim().is_empty() {
                    Ok(())
                } else {
                    write!(f, "; verifier log:\n{}", log.trim_end())
                }
            }
            Self::MemlockLimit { umem_bytes } => write!(
                f,
                "the UMEM ({umem_bytes} bytes) is over this process's locked-memory limit (RLIMIT_MEMLOCK, which AF_XDP sockets of one user share): grant CAP_IPC_LOCK, raise the limit (ulimit -l, systemd's LimitMEMLOCK=), or use fewer or smaller frames"
            ),
            Self::InvalidProgram(why) => write!(f, "cannot build the XDP program: {why}"),
            Self::InvalidConfig(why) => write!(f, "invalid AF_XDP socket configuration: {why}"),
            Self::Sys { call, source } => write!(f, "{call} failed: {source}"),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::NoZeroCopy { source, .. }
            | Self::ProgramRejected { source, .. }
            | Self::Sys { source, .. } => Some(source),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn eperm_names_the_capabilities() {
        let e = Error::from_sys(
            "BPF_PROG_LOAD",
            "CAP_BPF and CAP_NET_ADMIN",
            io::Error::from_raw_os_error(libc::EPERM),
        );
        let text = e.to_string();
        assert!(text.contains("CAP_BPF and CAP_NET_ADMIN"), "{text}");
        let e = Error::from_sys("bind", "x", io::Error::from_raw_os_error(libc::EINVAL));
        assert!(matches!(e, Error::Sys { .. }));
    }

    #[test]
    fn already_attached_says_how_to_remove_it() {
        let text = Error::AlreadyAttached {
            ifname: "eth0".into(),
        }
        .to_string();
        assert!(text.contains("ip link set dev eth0 xdp off"), "{text}");
    }
}
