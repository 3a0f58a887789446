//! Why a sender or receiver flow ([`crate::sender_flow`],
//! [`crate::receiver_flow`]) stopped early.

use std::fmt;
use std::io;

use crate::DtlsError;

/// Why a DTLS flow stopped early.
#[non_exhaustive]
#[derive(Debug)]
pub enum DtlsFlowError {
    /// The sender's key chains are used up.
    ScheduleEnded,
    /// The DTLS server or the TESLA sender failed.
    Dtls(DtlsError),
    /// The input could not be read.
    Input(io::Error),
    /// The output could not be written.
    Output(io::Error),
    /// The event handler failed.
    Report(io::Error),
}

impl fmt::Display for DtlsFlowError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::ScheduleEnded => f.write_str("the sender's schedule ended"),
            Self::Dtls(e) => write!(f, "{e}"),
            Self::Input(e) => write!(f, "reading the input: {e}"),
            Self::Output(e) => write!(f, "writing the stream: {e}"),
            Self::Report(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for DtlsFlowError {}
