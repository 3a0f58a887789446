//! Fixture crate: never compiled.
