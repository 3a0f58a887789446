//! Who gets an answer: access lists and the per-client rate limiter, shared
//! by the NTP and Roughtime workers.

pub mod access;
pub mod client_limiter;
