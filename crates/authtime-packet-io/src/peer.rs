//! Socket addresses in the kernel's form, to send to without converting back
//! and forth for every datagram.

use std::mem::size_of;
use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr, SocketAddrV4, SocketAddrV6};
use std::ptr;

/// A peer's address as the kernel reported it (or as [`PeerName::from`] a
/// [`SocketAddr`] built it), ready to send to.
#[derive(Clone, Copy)]
pub struct PeerName {
    pub(crate) storage: libc::sockaddr_storage,
    pub(crate) len: libc::socklen_t,
}

impl std::fmt::Debug for PeerName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "PeerName({:?})", self.socket_addr())
    }
}

impl PeerName {
    /// An empty name, to be filled by the kernel.
    pub(crate) fn empty() -> Self {
        Self {
            // SAFETY: sockaddr_storage is a plain C struct for which all zero
            // bytes is valid (family AF_UNSPEC).
            storage: unsafe { std::mem::zeroed() },
            len: size_of::<libc::sockaddr_storage>() as libc::socklen_t,
        }
    }

    /// The address, for IPv4 and IPv6; `None` for another family.
    #[must_use]
    pub fn socket_addr(&self) -> Option<SocketAddr> {
        let len = self.len as usize;
        match libc::c_int::from(self.storage.ss_family) {
            libc::AF_INET if len >= size_of::<libc::sockaddr_in>() => {
                // SAFETY: the family says the storage holds a sockaddr_in,
                // which sockaddr_storage is large and aligned enough for.
                let a = unsafe { &*ptr::from_ref(&self.storage).cast::<libc::sockaddr_in>() };
                Some(SocketAddr::V4(SocketAddrV4::new(
                    Ipv4Addr::from(u32::from_be(a.sin_addr.s_addr)),
                    u16::from_be(a.sin_port),
                )))
            }
            libc::AF_INET6 if len >= size_of::<libc::sockaddr_in6>() => {
                // SAFETY: as above, for sockaddr_in6.
                let a = unsafe { &*ptr::from_ref(&self.storage).cast::<libc::sockaddr_in6>() };
                Some(SocketAddr::V6(SocketAddrV6::new(
                    Ipv6Addr::from(a.sin6_addr.s6_addr),
                    u16::from_be(a.sin6_port),
                    a.sin6_flowinfo,
                    a.sin6_scope_id,
                )))
            }
            _ => None,
        }
    }
}

impl From<SocketAddr> for PeerName {
    fn from(addr: SocketAddr) -> Self {
        let mut name = Self::empty();
        match addr {
            SocketAddr::V4(a) => {
                let sin = libc::sockaddr_in {
                    sin_family: libc::AF_INET as libc::sa_family_t,
                    sin_port: a.port().to_be(),
                    sin_addr: libc::in_addr {
                        s_addr: u32::from(*a.ip()).to_be(),
                    },
                    sin_zero: [0; 8],
                };
                // SAFETY: sockaddr_storage is large and aligned enough for a
                // sockaddr_in.
                unsafe { ptr::write(ptr::from_mut(&mut name.storage).cast(), sin) };
                name.len = size_of::<libc::sockaddr_in>() as libc::socklen_t;
            }
            SocketAddr::V6(a) => {
                let sin6 = libc::sockaddr_in6 {
                    sin6_family: libc::AF_INET6 as libc::sa_family_t,
                    sin6_port: a.port().to_be(),
                    sin6_flowinfo: a.flowinfo(),
                    sin6_addr: libc::in6_addr {
                        s6_addr: a.ip().octets(),
                    },
                    sin6_scope_id: a.scope_id(),
                };
                // SAFETY: as above, for a sockaddr_in6.
                unsafe { ptr::write(ptr::from_mut(&mut name.storage).cast(), sin6) };
                name.len = size_of::<libc::sockaddr_in6>() as libc::socklen_t;
            }
        }
        name
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_survive_the_kernel_form() {
        for text in ["192.0.2.7:123", "[2001:db8::1]:4460", "[fe80::1%3]:9"] {
            let addr: SocketAddr = text.parse().expect("addr");
            assert_eq!(PeerName::from(addr).socket_addr(), Some(addr), "{text}");
        }
        assert_eq!(PeerName::empty().socket_addr(), None);
    }
}
