//! ferry-integration.
