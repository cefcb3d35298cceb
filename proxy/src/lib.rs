//! ferry-proxy: everything that touches sockets. `main.rs` is a thin CLI over this library.

pub mod demo;
