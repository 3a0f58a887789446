//! The bpf(2) system call, for the few commands this crate uses. Each
//! command's part of `union bpf_attr` (include/uapi/linux/bpf.h) is its own
//! `#[repr(C)]` struct, passed with its own size: the kernel zero-fills the
//! fields a shorter attribute leaves out.

use std::io;
use std::mem::size_of;
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd as _, OwnedFd};

use crate::insn::Insn;

const BPF_MAP_CREATE: libc::c_long = 0;
const BPF_MAP_UPDATE_ELEM: libc::c_long = 2;
const BPF_PROG_LOAD: libc::c_long = 5;
const BPF_OBJ_PIN: libc::c_long = 6;
const BPF_PROG_TEST_RUN: libc::c_long = 10;
const BPF_LINK_CREATE: libc::c_long = 28;

const BPF_MAP_TYPE_XSKMAP: u32 = 17;
const BPF_PROG_TYPE_XDP: u32 = 6;
/// `enum bpf_attach_type`: the XDP hook of a network device.
const BPF_XDP: u32 = 37;

/// `XDP_FLAGS_*` of include/uapi/linux/if_link.h.
pub(crate) const XDP_FLAGS_SKB_MODE: u32 = 1 << 1;
pub(crate) const XDP_FLAGS_DRV_MODE: u32 = 1 << 2;

#[repr(C)]
#[derive(Default)]
struct MapCreateAttr {
    map_type: u32,
    key_size: u32,
    value_size: u32,
    max_entries: u32,
    map_flags: u32,
    inner_map_fd: u32,
    numa_node: u32,
    map_name: [u8; 16],
}

#[repr(C)]
#[derive(Default)]
struct MapElemAttr {
    map_fd: u32,
    _pad: u32,
    key: u64,
    value: u64,
    flags: u64,
}

#[repr(C)]
#[derive(Default)]
struct ProgLoadAttr {
    prog_type: u32,
    insn_cnt: u32,
    insns: u64,
    license: u64,
    log_level: u32,
    log_size: u32,
    log_buf: u64,
    kern_version: u32,
    prog_flags: u32,
    prog_name: [u8; 16],
    prog_ifindex: u32,
    expected_attach_type: u32,
}

#[repr(C)]
#[derive(Default)]
struct ObjPinAttr {
    pathname: u64,
    bpf_fd: u32,
    file_flags: u32,
}

#[repr(C)]
#[derive(Default)]
struct TestRunAttr {
    prog_fd: u32,
    retval: u32,
    data_size_in: u32,
    data_size_out: u32,
    data_in: u64,
    data_out: u64,
    repeat: u32,
    duration: u32,
    ctx_size_in: u32,
    ctx_size_out: u32,
    ctx_in: u64,
    ctx_out: u64,
    flags: u32,
    cpu: u32,
    batch_size: u32,
    _pad: u32,
}

#[repr(C)]
#[derive(Default)]
struct LinkCreateAttr {
    prog_fd: u32,
    target_ifindex: u32,
    attach_type: u32,
    flags: u32,
}

/// Calls bpf(`cmd`, `attr`, sizeof `attr`).
///
/// # Safety
/// Every pointer (`u64`) field of `attr` must be null or point at memory
/// the command may read or write for the length the attribute gives.
unsafe fn sys_bpf<T>(cmd: libc::c_long, attr: &mut T) -> io::Result<libc::c_long> {
    // SAFETY: `attr` is a live, exclusively borrowed attribute of the size
    // passed; the pointers inside it are the caller's promise.
    let r = unsafe { libc::syscall(libc::SYS_bpf, cmd, std::ptr::from_mut(attr), size_of::<T>()) };
    if r < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(r)
    }
}

/// Wraps a file descriptor bpf(2) returned.
fn owned(fd: libc::c_long) -> io::Result<OwnedFd> {
    let fd = i32::try_from(fd).map_err(|_| io::Error::other("bpf(2) returned no descriptor"))?;
    // SAFETY: bpf(2) returned a new descriptor that nothing else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

fn name16(name: &str) -> [u8; 16] {
    let mut out = [0u8; 16];
    for (o, b) in out.iter_mut().zip(name.bytes().take(15)) {
        *o = b;
    }
    out
}

/// A new XSKMAP of `max_entries` slots (u32 queue index to socket).
pub(crate) fn create_xskmap(max_entries: u32) -> io::Result<OwnedFd> {
    let mut attr = MapCreateAttr {
        map_type: BPF_MAP_TYPE_XSKMAP,
        key_size: 4,
        value_size: 4,
        max_entries,
        map_name: name16("authtime_xsks"),
        ..Default::default()
    };
    // SAFETY: no pointer fields.
    owned(unsafe { sys_bpf(BPF_MAP_CREATE, &mut attr) }?)
}

/// Sets slot `key` of `map` to `value` (for an XSKMAP, a socket's fd).
pub(crate) fn update_u32(map: BorrowedFd<'_>, key: u32, value: u32) -> io::Result<()> {
    let mut attr = MapElemAttr {
        map_fd: map.as_raw_fd() as u32,
        key: std::ptr::from_ref(&key) as u64,
        value: std::ptr::from_ref(&value) as u64,
        ..Default::default()
    };
    // SAFETY: key and value point at live u32s, the sizes the map has.
    unsafe { sys_bpf(BPF_MAP_UPDATE_ELEM, &mut attr) }.map(drop)
}

/// Loads an XDP program. With `log`, the verifier writes its log there
/// (NUL-terminated), which is what to show when the load fails.
pub(crate) fn load_xdp(insns: &[Insn], log: Option<&mut [u8]>) -> io::Result<OwnedFd> {
    let code: Vec<u8> = insns.iter().flat_map(|i| i.encode()).collect();
    let (log_level, log_size, log_buf) = match log {
        Some(buf) => (1, buf.len() as u32, buf.as_mut_ptr() as u64),
        None => (0, 0, 0),
    };
    let mut attr = ProgLoadAttr {
        prog_type: BPF_PROG_TYPE_XDP,
        insn_cnt: u32::try_from(insns.len()).map_err(|_| io::Error::other("program too long"))?,
        insns: code.as_ptr() as u64,
        license: crate::program::LICENSE.as_ptr() as u64,
        log_level,
        log_size,
        log_buf,
        prog_name: name16("authtime_xdp"),
        expected_attach_type: BPF_XDP,
        ..Default::default()
    };
    // SAFETY: `code` holds insn_cnt 8-byte instructions, the license is a
    // NUL-terminated static string, and the log buffer (if any) is live,
    // writable and of the size given.
    owned(unsafe { sys_bpf(BPF_PROG_LOAD, &mut attr) }?)
}

/// Attaches `prog` to the XDP hook of interface `ifindex` through a new
/// bpf_link: the program stays attached until the link's last descriptor
/// is closed (or the process holding it dies).
pub(crate) fn link_xdp(prog: BorrowedFd<'_>, ifindex: u32, flags: u32) -> io::Result<OwnedFd> {
    let mut attr = LinkCreateAttr {
        prog_fd: prog.as_raw_fd() as u32,
        target_ifindex: ifindex,
        attach_type: BPF_XDP,
        flags,
    };
    // SAFETY: no pointer fields.
    owned(unsafe { sys_bpf(BPF_LINK_CREATE, &mut attr) }?)
}

/// Pins a BPF object (program, map, link) at `path` in a bpffs mount, so
/// that it outlives its descriptors (and `ip link ... xdp pinned` can use
/// it).
pub(crate) fn pin(fd: BorrowedFd<'_>, path: &std::ffi::CStr) -> io::Result<()> {
    let mut attr = ObjPinAttr {
        pathname: path.as_ptr() as u64,
        bpf_fd: fd.as_raw_fd() as u32,
        file_flags: 0,
    };
    // SAFETY: the path is NUL-terminated and alive for the call.
    unsafe { sys_bpf(BPF_OBJ_PIN, &mut attr) }.map(drop)
}

/// What one [`test_run`] of an XDP program did.
pub(crate) struct TestRun {
    pub(crate) action: u32,
    /// Bytes of `out` written: the metadata, then the frame.
    pub(crate) out_len: usize,
}

/// Runs `prog` once on `frame` in the kernel (BPF_PROG_TEST_RUN), writing
/// the metadata and frame it leaves into `out`.
pub(crate) fn test_run(prog: BorrowedFd<'_>, frame: &[u8], out: &mut [u8]) -> io::Result<TestRun> {
    let mut attr = TestRunAttr {
        prog_fd: prog.as_raw_fd() as u32,
        data_size_in: frame.len() as u32,
        data_size_out: out.len() as u32,
        data_in: frame.as_ptr() as u64,
        data_out: out.as_mut_ptr() as u64,
        repeat: 1,
        ..Default::default()
    };
    // SAFETY: data_in and data_out point at live buffers of the sizes
    // given; the kernel reads the first and writes the second.
    unsafe { sys_bpf(BPF_PROG_TEST_RUN, &mut attr) }?;
    Ok(TestRun {
        action: attr.retval,
        out_len: attr.data_size_out as usize,
    })
}
