//! Loom models of the recorder's lock-free parts; run with RUSTFLAGS="--cfg loom".
