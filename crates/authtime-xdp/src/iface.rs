//! A network interface's index and number of receive queues, in the calling
//! thread's network namespace.
//!
//! The queue count comes from the ethtool channels ioctl, which asks the
//! driver through a socket of the caller's namespace. `/sys/class/net` is
//! the fallback for drivers without it; it shows the namespace sysfs was
//! mounted in, which a thread that entered another namespace with setns
//! does not change, so it is trusted only when the interface's `ifindex`
//! there is the one the ioctl side found.

use std::ffi::CString;
use std::io;
use std::os::fd::{AsRawFd as _, FromRawFd as _, OwnedFd};

use crate::Error;

/// An interface: its name and index.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Interface {
    /// The name (`eth0`).
    pub name: String,
    /// The kernel's index.
    pub index: u32,
}

impl Interface {
    /// The interface called `name` in this thread's network namespace.
    ///
    /// # Errors
    /// [`Error::NoSuchInterface`].
    pub fn by_name(name: &str) -> Result<Self, Error> {
        let missing = || Error::NoSuchInterface {
            ifname: name.to_owned(),
        };
        let c = CString::new(name).map_err(|_| missing())?;
        // SAFETY: `c` is a NUL-terminated string alive for the call.
        let index = unsafe { libc::if_nametoindex(c.as_ptr()) };
        if index == 0 {
            return Err(missing());
        }
        Ok(Self {
            name: name.to_owned(),
            index,
        })
    }

    /// How many receive queues the interface has (AF_XDP binds to one).
    ///
    /// # Errors
    /// [`Error::Sys`] when neither the driver nor sysfs says.
    pub fn rx_queues(&self) -> Result<u32, Error> {
        match ethtool_rx_queues(&self.name) {
            Ok(n) if n > 0 => return Ok(n),
            Ok(_) | Err(_) => {}
        }
        sysfs_rx_queues(&self.name, self.index).ok_or_else(|| Error::Sys {
            call: "ETHTOOL_GCHANNELS (and /sys/class/net/IF/queues)",
            source: io::Error::other(format!(
                "cannot tell how many receive queues {} has",
                self.name
            )),
        })
    }
}

const SIOCETHTOOL: libc::c_ulong = 0x8946;
const ETHTOOL_GCHANNELS: u32 = 0x3c;

/// `struct ethtool_channels` of include/uapi/linux/ethtool.h.
#[repr(C)]
#[derive(Default)]
struct EthtoolChannels {
    cmd: u32,
    max_rx: u32,
    max_tx: u32,
    max_other: u32,
    max_combined: u32,
    rx_count: u32,
    tx_count: u32,
    other_count: u32,
    combined_count: u32,
}

/// `struct ifreq` with the `ifr_data` member.
#[repr(C)]
struct IfreqData {
    name: [libc::c_char; libc::IFNAMSIZ],
    data: *mut libc::c_void,
    _pad: [u8; 16],
}

fn ethtool_rx_queues(name: &str) -> io::Result<u32> {
    if name.len() >= libc::IFNAMSIZ {
        return Err(io::Error::from_raw_os_error(libc::ENODEV));
    }
    // SAFETY: plain socket(2); the descriptor is checked and owned below.
    let fd = unsafe { libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: a new descriptor nothing else owns.
    let sock = unsafe { OwnedFd::from_raw_fd(fd) };
    let mut channels = EthtoolChannels {
        cmd: ETHTOOL_GCHANNELS,
        ..Default::default()
    };
    let mut req = IfreqData {
        name: [0; libc::IFNAMSIZ],
        data: (&raw mut channels).cast(),
        _pad: [0; 16],
    };
    for (d, s) in req.name.iter_mut().zip(name.bytes()) {
        *d = s as libc::c_char;
    }
    // SAFETY: `req` is an ifreq whose name is NUL-terminated and whose data
    // points at a live ethtool_channels the kernel fills.
    let r = unsafe { libc::ioctl(sock.as_raw_fd(), SIOCETHTOOL as _, &raw mut req) };
    if r < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(channels.rx_count + channels.combined_count)
}

fn sysfs_rx_queues(name: &str, index: u32) -> Option<u32> {
    let base = format!("/sys/class/net/{name}");
    let seen: u32 = std::fs::read_to_string(format!("{base}/ifindex"))
        .ok()?
        .trim()
        .parse()
        .ok()?;
    if seen != index {
        return None;
    }
    let n = std::fs::read_dir(format!("{base}/queues"))
        .ok()?
        .filter_map(Result::ok)
        .filter(|e| e.file_name().to_string_lossy().starts_with("rx-"))
        .count();
    u32::try_from(n).ok().filter(|&n| n > 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_exists_and_has_a_queue() {
        let lo = Interface::by_name("lo").expect("lo");
        assert_eq!(lo.index, 1);
        assert!(lo.rx_queues().expect("queues") >= 1);
    }

    #[test]
    fn a_missing_interface_is_named() {
        let e = Interface::by_name("nonexistent0").expect_err("missing");
        assert!(e.to_string().contains("nonexistent0"), "{e}");
    }
}
