//! Rollout and LLM-routing features end to end, the real `ferry` binary between real clients
//! and this crate's own upstreams on 127.0.0.1: consistent hashing with bounded load
//! (`lb: {policy: hash}`), fault injection (`routes[].fault`) and mirrored traffic whose
//! answers are compared (`routes[].mirror`).
//!
//! `prompt_prefix` affinity runs against the crate's own HTTP upstreams, not LiteLLM: its
//! dependency tree (750 MB) is too heavy for the test set-up (as `global_limits` decided), and
//! affinity is about which replica gets the request, which an echo upstream reports exactly.

mod faults;
mod hashing;
mod mirror;
mod mirror_compare;
mod oip_model;
mod support;
