//! NTS (RFC 8915) beside the NTP data path: the NTS-KE server and the
//! master keys kept in step with the key store.

pub(crate) mod ke;
pub(crate) mod ke_balancer;
pub mod keys;
