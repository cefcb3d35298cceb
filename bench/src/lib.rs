//! ferry-bench.
