//! ferry-inject: automatic sidecar injection.
//!
//! One code path ([`inject_object`]) adds the ferry sidecar to pod templates; two front ends use
//! it: `ferry inject` ([`run_inject`]) rewrites manifests, and `ferry injector`
//! ([`run_injector`]) is a Kubernetes mutating admission webhook answering with a JSONPatch.
//! The contract, what pods say with `ferry.dev/*` annotations, is in [`annotations`]; what they
//! get is in [`sidecar`]; `docs/injection.md` explains the ordering choices.

pub mod annotations;
mod cli;
pub mod document;
mod error;
mod injector;
mod object;
mod pod;
pub mod redirect;
pub mod settings;
pub mod sidecar;
mod wait;
pub mod webhook;

pub use cli::{InjectArgs, TextResult, inject_str, inject_text, run_inject};
pub use error::{InjectError, ObjectError};
pub use injector::{BoundInjector, InjectorArgs, run_injector};
pub use object::{ObjectReport, inject_object};
pub use pod::{PodOutcome, Selection, SkipReason, inject_pod};
pub use redirect::{RedirectMode, RedirectRules};
pub use settings::{SidecarArgs, WorkloadCerts};
pub use wait::{WaitReadyArgs, run_wait_ready};
