//! ferry-bench: whole-process benchmarks of ferry side by side with Envoy, HAProxy and nginx,
//! plus criterion micro-benches (in `benches/`).
//!
//! The driver ([`driver::run`]) installs the peers it needs, starts the bench [`upstream`] and
//! each proxy pinned to one core, drives load with its own generator ([`loadgen`]: closed loop
//! and corrected open loop, HTTP/1.1 and h2c), reads CPU and memory from /proc ([`procfs`]) and
//! writes results, a markdown table and charts ([`report`], [`charts`]). See bench/README.md.

pub mod charts;
pub mod configs;
pub mod driver;
pub mod error;
pub mod faults;
pub mod load_report;
pub mod loadgen;
pub mod machine;
pub mod mirror;
pub mod mtls;
pub mod otlp_sink;
pub mod peers;
pub mod ports;
pub mod procfs;
pub mod redis;
pub mod relay;
pub mod report;
pub mod scenarios;
pub mod soak;
pub mod spread;
pub mod targets;
pub mod upstream;

pub use error::{BenchError, Result};
