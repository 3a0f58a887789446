//! Loading the program with its XSKMAP and attaching it to an interface
//! through a bpf_link.
//!
//! A bpf_link that is not pinned lives as long as a descriptor to it is
//! open: when the [`Attachment`] is dropped, or the process exits in any
//! way (SIGKILL included), the kernel closes the descriptor and detaches
//! the program. A crashed server therefore never leaves a program behind
//! that redirects its port into a socket nobody reads. (A program attached
//! with netlink, as `ip link set dev X xdp obj ...` does, stays until
//! someone removes it.)

use std::io;
use std::os::fd::{AsFd as _, OwnedFd};

use crate::Error;
use crate::bpf_sys::{self, XDP_FLAGS_DRV_MODE, XDP_FLAGS_SKB_MODE};
use crate::iface::Interface;
use crate::program::ProgramSpec;
use crate::xsk::Xsk;

/// Capabilities the loader's calls need (the kernel checks CAP_BPF for
/// loading and CAP_NET_ADMIN for networking programs, XSKMAPs and XDP
/// links; CAP_SYS_ADMIN covers both).
pub(crate) const LOADER_CAPS: &str = "CAP_BPF and CAP_NET_ADMIN";

/// Where in the receive path the program runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AttachMode {
    /// In the driver, before an skb exists (`XDP_FLAGS_DRV_MODE`). Needs a
    /// driver with XDP support (veth, virtio-net, mlx5, i40e, ice, ...).
    Native,
    /// After the skb is built (`XDP_FLAGS_SKB_MODE`): every interface, no
    /// speed gain, for tests and drivers without XDP.
    Generic,
}

/// A loaded program and its XSKMAP, not attached anywhere.
#[derive(Debug)]
pub struct LoadedProgram {
    prog: OwnedFd,
    map: OwnedFd,
    queues: u32,
}

/// The verifier log is asked for only after a failed load (as libbpf
/// does): logging slows loading, and a good program has nothing to say.
const LOG_SIZE: usize = 1 << 16;

impl LoadedProgram {
    /// Builds the program for `spec`, creates its XSKMAP with `queues`
    /// slots (one per receive queue) and loads both into the kernel.
    ///
    /// # Errors
    /// [`Error::InvalidProgram`], [`Error::MissingCapability`],
    /// [`Error::ProgramRejected`] with the verifier's log.
    pub fn load(spec: &ProgramSpec, queues: u32) -> Result<Self, Error> {
        if queues == 0 {
            return Err(Error::InvalidConfig(
                "an XSKMAP needs at least one slot".into(),
            ));
        }
        let map = bpf_sys::create_xskmap(queues)
            .map_err(|e| Error::from_sys("BPF_MAP_CREATE (XSKMAP)", LOADER_CAPS, e))?;
        let insns = spec.instructions(raw(&map))?;
        let prog = load_insns(&insns)?;
        Ok(Self { prog, map, queues })
    }

    /// Runs the program once on `frame` in the kernel (`BPF_PROG_TEST_RUN`,
    /// no interface involved) and reports its verdict and the metadata it
    /// left. An empty XSKMAP slot makes a matched frame `XDP_PASS` too, so
    /// the metadata is what tells matched from passed.
    ///
    /// # Errors
    /// [`Error::Sys`] when the kernel refuses the run.
    pub fn test_run(&self, frame: &[u8]) -> Result<TestVerdict, Error> {
        let mut out = vec![0u8; frame.len() + 256];
        let run = bpf_sys::test_run(self.prog.as_fd(), frame, &mut out)
            .map_err(|e| Error::from_sys("BPF_PROG_TEST_RUN", LOADER_CAPS, e))?;
        // The output is the metadata, then the frame, which the program
        // never resizes. (Asking for the xdp_md back would need one passed
        // in, with data_end set, or the kernel runs on an empty frame.)
        let meta_len = run.out_len.saturating_sub(frame.len());
        Ok(TestVerdict {
            action: run.action,
            meta: out[..meta_len].to_vec(),
            frame: out[meta_len..run.out_len].to_vec(),
        })
    }

    /// Pins the program at `path` on a bpffs mount (for `ip link set dev X
    /// xdp pinned PATH`, which attaches it with netlink: tests use that to
    /// play a foreign program).
    ///
    /// # Errors
    /// [`Error::Sys`].
    pub fn pin(&self, path: &std::path::Path) -> Result<(), Error> {
        use std::os::unix::ffi::OsStrExt as _;
        let c = std::ffi::CString::new(path.as_os_str().as_bytes()).map_err(|_| Error::Sys {
            call: "BPF_OBJ_PIN",
            source: io::Error::from_raw_os_error(libc::EINVAL),
        })?;
        bpf_sys::pin(self.prog.as_fd(), &c)
            .map_err(|e| Error::from_sys("BPF_OBJ_PIN", LOADER_CAPS, e))
    }
}

/// Loads `insns` as an XDP program; on failure, loads again with the
/// verifier's log on and returns it.
fn load_insns(insns: &[crate::insn::Insn]) -> Result<OwnedFd, Error> {
    match bpf_sys::load_xdp(insns, None) {
        Ok(prog) => Ok(prog),
        Err(e) if e.raw_os_error() == Some(libc::EPERM) => {
            Err(Error::from_sys("BPF_PROG_LOAD (XDP)", LOADER_CAPS, e))
        }
        Err(_) => {
            let mut log = vec![0u8; LOG_SIZE];
            // Loaded the second time: the first failure was transient.
            bpf_sys::load_xdp(insns, Some(&mut log)).map_err(|source| {
                let end = log.iter().position(|&b| b == 0).unwrap_or(log.len());
                Error::ProgramRejected {
                    source,
                    log: String::from_utf8_lossy(&log[..end]).into_owned(),
                }
            })
        }
    }
}

/// What [`LoadedProgram::test_run`] saw.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TestVerdict {
    /// The `enum xdp_action` returned (2 is `XDP_PASS`, 4 `XDP_REDIRECT`).
    pub action: u32,
    /// The metadata in front of the frame (empty when the program left
    /// none).
    pub meta: Vec<u8>,
    /// The frame after the program.
    pub frame: Vec<u8>,
}

fn raw(fd: &OwnedFd) -> i32 {
    use std::os::fd::AsRawFd as _;
    fd.as_raw_fd()
}

/// The program attached to an interface; detached when dropped.
#[derive(Debug)]
pub struct Attachment {
    // Fields drop in order: the link (detach) before the program and map.
    link: OwnedFd,
    interface: Interface,
    mode: AttachMode,
    program: LoadedProgram,
}

impl Attachment {
    /// Loads the program for `spec` with one XSKMAP slot per receive queue
    /// of `ifname` and attaches it in `mode`.
    ///
    /// # Errors
    /// [`Error::NoSuchInterface`], [`Error::MissingCapability`],
    /// [`Error::ProgramRejected`], [`Error::NoNativeXdp`],
    /// [`Error::AlreadyAttached`] when another program holds the hook.
    pub fn attach(ifname: &str, spec: &ProgramSpec, mode: AttachMode) -> Result<Self, Error> {
        let interface = Interface::by_name(ifname)?;
        let queues = interface.rx_queues()?;
        let program = LoadedProgram::load(spec, queues)?;
        let flags = match mode {
            AttachMode::Native => XDP_FLAGS_DRV_MODE,
            AttachMode::Generic => XDP_FLAGS_SKB_MODE,
        };
        let link =
            bpf_sys::link_xdp(program.prog.as_fd(), interface.index, flags).map_err(|e| match e
                .raw_os_error()
            {
                Some(libc::EBUSY | libc::EEXIST) => Error::AlreadyAttached {
                    ifname: ifname.to_owned(),
                },
                Some(libc::EOPNOTSUPP) if mode == AttachMode::Native => Error::NoNativeXdp {
                    ifname: ifname.to_owned(),
                },
                Some(libc::ENODEV) => Error::NoSuchInterface {
                    ifname: ifname.to_owned(),
                },
                _ => Error::from_sys("BPF_LINK_CREATE (XDP)", LOADER_CAPS, e),
            })?;
        Ok(Self {
            interface,
            mode,
            program,
            link,
        })
    }

    /// Puts `xsk` in the XSKMAP slot of its queue: from now on the frames
    /// the program matches on that queue go to it. The kernel empties the
    /// slot when the socket closes.
    ///
    /// # Errors
    /// [`Error::QueueOutOfRange`] for a socket bound to another interface's
    /// queue beyond this map, [`Error::Sys`].
    pub fn register(&self, xsk: &Xsk) -> Result<(), Error> {
        if xsk.queue() >= self.program.queues {
            return Err(Error::QueueOutOfRange {
                ifname: self.interface.name.clone(),
                queue: xsk.queue(),
                queues: self.program.queues,
            });
        }
        bpf_sys::update_u32(self.program.map.as_fd(), xsk.queue(), xsk.raw_fd())
            .map_err(|e| Error::from_sys("BPF_MAP_UPDATE_ELEM (XSKMAP)", LOADER_CAPS, e))
    }

    /// The interface the program is attached to.
    #[must_use]
    pub fn interface(&self) -> &Interface {
        &self.interface
    }

    /// The mode it was attached in.
    #[must_use]
    pub fn mode(&self) -> AttachMode {
        self.mode
    }

    /// Slots in the XSKMAP: the interface's receive queues.
    #[must_use]
    pub fn queues(&self) -> u32 {
        self.program.queues
    }

    /// Detaches now (dropping does the same).
    pub fn detach(self) {
        drop(self.link);
    }
}

#[cfg(test)]
#[allow(unsafe_code, reason = "geteuid, to skip without root")]
mod tests {
    use super::*;
    use crate::insn;

    /// Needs root (bpf(2)); skipped otherwise.
    #[test]
    fn a_rejected_program_comes_back_with_the_verifier_log() {
        // SAFETY: geteuid has no preconditions.
        if unsafe { libc::geteuid() } != 0 {
            eprintln!("skipped: needs root for bpf(2)");
            return;
        }
        // `exit` with R0 never written: the verifier refuses it.
        let e = load_insns(&[insn::exit()]).expect_err("rejected");
        let Error::ProgramRejected { log, .. } = &e else {
            panic!("{e}");
        };
        assert!(log.contains("R0 !read_ok"), "{log}");
        assert!(e.to_string().contains("verifier log"), "{e}");
    }
}
