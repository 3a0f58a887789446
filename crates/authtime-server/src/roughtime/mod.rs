//! The Roughtime server: UDP workers, TCP, the AF_XDP path's part, online
//! keys and their files, metrics.

pub mod key_files;
pub mod keys;
pub mod metrics;
pub(crate) mod service;
pub(crate) mod tcp;
pub mod worker;
pub(crate) mod xdp;
