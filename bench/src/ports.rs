//! Loopback ports for the peers' config files.

use std::net::TcpListener;

use crate::error::{BenchError, IoContext, Result};

/// A free loopback port (bound to port 0, then released for a peer's config file), never one
/// this process handed out before: the kernel may offer a just-released port again, and two
/// of one config's addresses then collide (a CI smoke run failed so: admin and listener on
/// one port).
pub fn free_port() -> Result<u16> {
    static GIVEN: std::sync::Mutex<Vec<u16>> = std::sync::Mutex::new(Vec::new());
    for _ in 0..64 {
        let l = TcpListener::bind("127.0.0.1:0").ctx(|| "binding 127.0.0.1:0".into())?;
        let port = l.local_addr().ctx(|| "local_addr".into())?.port();
        let mut given = GIVEN.lock().unwrap_or_else(|p| p.into_inner());
        if !given.contains(&port) {
            given.push(port);
            return Ok(port);
        }
    }
    Err(BenchError::Process(
        "no loopback port that was not handed out already".into(),
    ))
}
