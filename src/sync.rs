//! The atomics the lock-free parts use: `std`'s normally, loom's under `--cfg loom`, so the loom
//! models in `loom-tests/` check the real ring and registry code rather than a copy.

#[cfg(loom)]
pub(crate) use loom::sync::atomic::{AtomicU64, AtomicU8, Ordering};
#[cfg(loom)]
pub(crate) use loom::sync::Arc;

#[cfg(not(loom))]
pub(crate) use std::sync::atomic::{AtomicU64, AtomicU8, Ordering};
#[cfg(not(loom))]
pub(crate) use std::sync::Arc;
