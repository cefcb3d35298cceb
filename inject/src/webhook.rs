//! The mutating admission webhook: AdmissionReview in, JSONPatch out.
//!
//! Never blocks the cluster: any review it cannot understand, and any pod it cannot inject, is
//! answered `allowed: true` with a warning, so `failurePolicy` only matters when the injector
//! is down.

pub mod http;
pub mod metrics;
pub mod review;
pub mod tls;
