//! AF_XDP sockets: the UMEM, the four rings, and the socket that ties them
//! to one queue of one interface.

mod frame;
mod ring;
mod setup;
mod socket;
mod umem;

pub use frame::{RxBatch, RxFrame, RxStamp, StampSource};
pub use socket::{BindMode, TxCompletion, Xsk, XskConfig, XskStats};
