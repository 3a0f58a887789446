//! Hand-written SIMD kernels: one-packet fast paths and multi-lane batch paths.
//!
//! Each kernel file owns its `unsafe` (CPU intrinsics behind `#[target_feature]`),
//! is entered only after [`crate::Isa`] says the features are present, and is
//! tested against the portable path on random inputs.

#![allow(
    unsafe_code,
    reason = "SIMD intrinsics; each unsafe block has a SAFETY line"
)]

pub(crate) mod chacha_scalar;
pub(crate) mod chacha_x86;
pub(crate) mod cmac_lanes;
pub(crate) mod cmac_x86;
#[cfg(target_arch = "x86_64")]
mod gmac_lanes;
pub(crate) mod gmac_x86;
#[cfg(target_arch = "x86_64")]
mod gmac_ymm_one;
pub(crate) mod md5_lanes;
pub(crate) mod md5_scalar;
pub(crate) mod poly1305_avx2;
pub(crate) mod poly1305_scalar;
#[cfg(target_arch = "x86_64")]
mod sha1_x86;
pub(crate) mod sha256_wide;
#[cfg(target_arch = "x86_64")]
mod sha256_x16;
#[cfg(target_arch = "x86_64")]
mod sha256_x86;
pub(crate) mod sha512_lanes;
#[cfg(target_arch = "x86_64")]
mod sha_pad_x86;
pub(crate) mod sha_x86;
#[cfg(target_arch = "x86_64")]
pub(crate) mod siv_many_x86;
#[cfg(target_arch = "x86_64")]
pub(crate) mod siv_x86;
