//! TESLA broadcast authentication (RFC 4082, RFC 5776) for authtime: one-way key
//! chains with logarithmic storage, a sender, a receiver, and a signed
//! bootstrap with fragmentation.
//!
//! Sans-IO: every call takes the current time as a [`Time`] (nanoseconds) and
//! randomness as bytes (the sender's master secret, the receiver's nonce);
//! nothing here reads a clock, opens a socket or draws random numbers.
//!
//! # Keys
//!
//! `F(k) = HMAC-SHA-256(k, 0x00)` and `F'(k) = HMAC-SHA-256(k, 0x01)` (RFC 5776
//! section 3.1, see [`owf`]); keys are 32 bytes. Chain `c` has keys
//! `K_0 .. K_N` with `K_j = F(K_{j+1})`; `K_j` serves interval `c*N + j - 1`,
//! its MAC key is `F'(K_j)` (truncated to the MAC's key length when that is
//! shorter), and it is disclosed `d` intervals later. Intervals are `u32`
//! (RFC 5776): interval `i` runs from `T_0 + i*T_int` on the sender's clock.
//!
//! # Packet layout
//!
//! Every datagram starts with one header byte: version 1 in the high nibble,
//! the kind in the low three bits (1 data, 2 key disclosure, 3 sync request,
//! 4 sync response fragment), bit 3 set when the packet carries the next
//! chain's commitment. A data packet of interval `i`, big-endian:
//!
//! ```text
//! | header (1) | payload | i (4) | [K^{c+1}_0 (32)] | K_{i-d} (32) | MAC (t) |
//! ```
//!
//! The MAC, keyed with `F'(K_i)` and truncated to `t` bytes (`t >= 10`, see
//! [`MIN_TAG_LEN`]), covers every byte before it. The overhead is
//! `1 + 4 + 32 + t` bytes: 53 with the default `t = 16`, 69 with a full
//! HMAC-SHA-256 tag (the "4 + 32 + MAC" trailer plus the header byte), and 32
//! more in the last `rollover_lead` intervals of a chain. While `i < d` the key
//! field is zero (nothing to disclose yet). A key-disclosure packet is a data
//! packet with an empty payload, sent when no data flows. A sync request is
//! the header and a 16 to 64 byte nonce; a sync response fragment is the
//! header, the nonce's first 8 bytes, its index, the fragment count and a
//! chunk of the signed response ([`SyncResponse`] documents its fields).
//!
//! # Safety condition
//!
//! At bootstrap the receiver learns an upper bound on the sender's clock,
//! `sender_time <= local_time + delta (+ drift)`: with direct synchronisation
//! `delta = t_s - t_r`, the sender's signed time minus the local time the
//! request left, i.e. the whole round trip is uncertainty ([`ClockBound`]).
//! A packet of interval `i` received at local time `t` is safe iff
//!
//! ```text
//! x = floor((t + delta + drift - T_0) / T_int)  <  i + d
//! ```
//!
//! because `K_i` is disclosed from interval `i + d` on ([`is_safe`]). Unsafe
//! packets are dropped; safe ones wait in a bounded buffer until `K_i` is
//! disclosed, verified against the newest authenticated key with at most
//! `max_key_steps` applications of `F`. A genuine key that arrives before the
//! bound says it could have been disclosed proves the bound wrong, and the
//! receiver refuses everything until a new bootstrap.
//!
//! # Chain traversal storage
//!
//! The sender walks its chains backwards with [`traversal::Traversal`], a
//! binary pebbling in the family of Jakobsson's fractal traversal, written here
//! (no crate does it): for a chain of `2^k` keys it stores at most `2k - 1`
//! keys and applies `F` at most `k - 1` times per interval (`k/2 - 1` on
//! average): 39 keys and 19 hashes for `2^20`, 63 keys and 31 hashes for
//! `2^32`, as [`traversal::measure_traversal`] measures. Two traversals per chain
//! (current interval and `d` behind) keep a sender at `O(log N)` keys.
//!
//! # Chains of chains
//!
//! The last `rollover_lead` intervals of chain `c` carry `K^{c+1}_0` in their
//! MAC'd bytes; a receiver that authenticates one of them verifies chain `c+1`
//! keys against it and moves on without a new bootstrap. The sender builds
//! chain `c+1` in small steps while chain `c` runs. After the switch the
//! receiver keeps the newest key of chain `c`, so chain-`c` keys reordered
//! behind the first chain-`c+1` keys still release their packets. Loss
//! tolerance is weakest at the end of a chain: `K^c_N` (the key of the
//! chain's last interval) is disclosed only in interval `(c+1)N + d - 1`, and
//! no later key leads back to it; senders that care send key disclosures
//! more than once around chain ends.
//!
//! # Stream drivers
//!
//! Everything above is sans-IO. The stream drivers are the exception, kept
//! in modules of their own: [`stream_frame`] (the payload framing and the
//! in-order [`StreamWriter`], no IO of its own), [`multicast`] (IPv4
//! multicast sockets and the wall clock), [`stream_sender`] (the sender:
//! paced data, key disclosures, sync responses signed on a thread of their
//! own, end markers) and [`stream_bootstrap`] with [`stream_receiver`] (the
//! receiver: direct-sync bootstrap over UDP, then the group's datagrams
//! written in stream order). They report through return values and events
//! and print nothing.
//!
//! # Not here
//!
//! The command line (`authtime tesla send/recv`), DTLS transport
//! (`authtime-tesla-dtls`), and the signature schemes: callers adapt theirs
//! to [`BootstrapSigner`] and [`BootstrapVerifier`].

mod bootstrap;
mod codec;
pub mod multicast;
pub mod owf;
mod params;
mod receiver;
mod sender;
pub mod stream_bootstrap;
pub mod stream_frame;
pub mod stream_receiver;
pub mod stream_sender;
mod stream_sign;
mod time;
pub mod traversal;
mod wire;

#[cfg(test)]
mod testkit;

#[doc(hidden)]
pub mod fuzz_harness;

pub use bootstrap::{
    BootstrapError, BootstrapSigner, BootstrapVerifier, DEFAULT_MAX_DATAGRAM, MAX_SIGNATURE_LEN,
    MIN_DATAGRAM, Reassembler, ReassemblyStats, SIGNING_CONTEXT, SignError, SyncClient,
    SyncResponse, fragment, fragment_tag, signed_message,
};
pub use codec::WireError;
pub use owf::{ChainKey, KEY_LEN};
pub use params::{
    MAX_DELAY, MAX_INTERVAL_NS, MIN_INTERVAL_NS, MIN_TAG_LEN, ParamError, Params, mac_by_name,
};
pub use receiver::{
    Delivered, EARLY_KEY_MAX_STEPS, Failure, Own, Receiver, ReceiverConfig, Stats, Status,
};
pub use sender::{Sender, SenderError};
pub use stream_bootstrap::{Bootstrapped, StreamBootstrapError, bootstrap_stream};
pub use stream_frame::{FRAME_HEADER_LEN, Frame, StreamWriter};
pub use stream_receiver::{RecvEnd, RecvError, RecvReport, StreamReceiver};
pub use stream_sender::{
    SendError, SendEvent, SendStats, StreamParamsError, StreamSender, StreamSenderConfig,
    spawn_reader, stream_params,
};
pub use time::{ClockBound, Schedule, Time, is_safe, latest_sender_interval};
pub use wire::{
    DataPacket, FRAGMENT_HEADER_LEN, FRAGMENT_TAG_LEN, Fragment, HEADER_LEN, Kind, MAX_NONCE_LEN,
    MIN_NONCE_LEN, SyncRequest, VERSION, peek_kind, trailer_len,
};
