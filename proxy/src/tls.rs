//! Mutual TLS between sidecars: the workload identity and its rotation ([`material`],
//! [`store`]), SPIFFE-ID verification ([`verify`]), inbound termination per listener mode
//! ([`accept`]) and outbound origination per cluster ([`connect`]).
//!
//! The identity is one [`IdentityStore`] for the process, outside the per-reload table:
//! listeners and clusters read it at each handshake, so a rotation (new files on disk) swaps
//! what new handshakes use without rebuilding anything, and open connections keep theirs.

pub mod accept;
pub mod connect;
pub mod material;
pub mod reason;
pub mod san;
pub mod store;
pub mod verify;

pub use self::accept::{Accepted, Terminator};
pub use self::connect::{Originator, UpstreamIo};
pub use self::material::{Material, TlsFiles};
pub use self::reason::Reason;
pub use self::store::IdentityStore;

use ferry_config::IdentityMatcher;
use ferry_filters::authorization::{IdentityMatch, SpiffeIdError};

/// The filters' matcher for a config matcher (validated already, so errors are unexpected).
pub fn identity_match(m: &IdentityMatcher) -> Result<IdentityMatch, SpiffeIdError> {
    match m {
        IdentityMatcher::Exact(id) => IdentityMatch::exact(id),
        IdentityMatcher::Prefix(p) => IdentityMatch::prefix(p),
        IdentityMatcher::TrustDomain(td) => IdentityMatch::trust_domain(td),
    }
}

#[cfg(test)]
mod tests;
