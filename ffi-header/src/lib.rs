//! Test-only package: see `tests/header.rs`.
