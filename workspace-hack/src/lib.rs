//! Nothing to call: this crate only turns dependency features on (see its `Cargo.toml`), so
//! that building `callstream` alone compiles shared dependencies exactly as the workspace's
//! test build does, and the two share one build.
