//! The Roughtime server: UDP workers, TCP, online keys and their files,
//! metrics.

pub mod key_files;
pub mod keys;
pub mod metrics;
pub(crate) mod service;
pub(crate) mod tcp;
pub mod worker;
