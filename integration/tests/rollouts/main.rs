//! Rollout and LLM-routing features end to end, the real `ferry` binary between real clients
//! and real upstreams on 127.0.0.1: consistent hashing with bounded load (`lb: {policy: hash}`)
//! against this crate's own upstreams, `prompt_prefix` affinity also against two real LiteLLM
//! proxies with mock models (`litellm`, the pinned peer `peers/install-litellm.sh` installs),
//! fault injection (`routes[].fault`) and mirrored traffic whose answers are compared
//! (`routes[].mirror`).

mod faults;
mod hashing;
mod litellm;
mod mirror;
mod mirror_compare;
mod oip_model;
mod support;
