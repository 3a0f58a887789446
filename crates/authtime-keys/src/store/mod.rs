//! Where NTS cookie master keys live: one opaque, versioned blob (the
//! serialized key ring, whose format belongs to `authtime-nts`) shared by
//! every server of a fleet.
//!
//! The store knows nothing about keys: it keeps bytes and offers an atomic
//! compare-and-swap, so that when two servers rotate at the same moment one
//! wins and the other adopts the winner's ring. Backends:
//! - [`EmbeddedStore`]: a file on local disk (the default), written through a
//!   temporary file, fsync and rename, mode 0600, so a crash at any point
//!   leaves the old or the new ring, never a torn one;
//! - [`RedisStore`]: one key in a Redis server (the `redis` crate's
//!   synchronous client, TCP or TLS, ACL users, a master found through
//!   Sentinel; compare-and-swap as a Lua script, which Redis runs atomically);
//! - [`MemcachedStore`]: one item in memcached (text protocol, `gets`/`cas`).
//!
//! [`SealedStore`] wraps any of them so that the blob is sealed under the
//! fleet's key-encryption key ([`KeyEncryptionKey`], a local 0600 file)
//! before it leaves the server.

mod embedded;
mod error;
mod kek;
mod memcached;
mod redis;
pub(crate) mod redis_url;
mod sealed;
mod tcp;
mod url;

pub use embedded::EmbeddedStore;
pub use error::StoreError;
pub use kek::{
    KEK_FILE_HEADER, KEK_LEN, KekFileError, KekId, KeyEncryptionKey, create_kek_file, read_kek_file,
};
pub use memcached::MemcachedStore;
pub use redis::RedisStore;
pub use sealed::{
    SealError, SealedHeader, SealedStore, is_sealed_blob, open_blob, seal_blob, sealed_header,
    store_key_name,
};
pub use url::{DEFAULT_KEY_NAME, open_store};

/// A shared blob with atomic replacement.
///
/// Implementations are blocking and bounded in time (connect and I/O
/// timeouts); callers run them off the packet path.
pub trait MasterKeyStore: Send + Sync + std::fmt::Debug {
    /// The stored blob, or `None` when nothing was stored yet.
    ///
    /// # Errors
    /// The backend is unreachable or answered something unexpected.
    fn load(&self) -> Result<Option<Vec<u8>>, StoreError>;

    /// Replaces the blob with `new` only if it still equals `expected`
    /// (`None`: only if nothing is stored). Returns `false`, changing
    /// nothing, when another writer got there first.
    ///
    /// # Errors
    /// The backend is unreachable or answered something unexpected.
    fn compare_and_swap(&self, expected: Option<&[u8]>, new: &[u8]) -> Result<bool, StoreError>;

    /// A short description for logs and metrics labels (`embedded:/path`,
    /// `redis://host:port/key`), never containing a password.
    fn describe(&self) -> String;
}
