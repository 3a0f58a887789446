//! The NTP data path: sockets, the worker threads, and everything a reply to
//! a plain, MAC or NTS request goes through on its way out.

pub(crate) mod batch_io;
pub(crate) mod compensation;
pub(crate) mod key_store;
pub(crate) mod nts_reply;
pub(crate) mod reply;
pub(crate) mod sockets;
pub(crate) mod timestamps;
pub(crate) mod tx_stamps;
pub(crate) mod worker;
pub(crate) mod xdp_worker;
