//! Protocol upgrades (e.g. WebSocket): after a `101 Switching Protocols`, both connections are
//! handed over and bytes are copied both ways until either side closes.

use hyper::upgrade::OnUpgrade;
use hyper_util::rt::TokioIo;

use crate::body::ProxyBody;

/// Spawns the byte pump once both sides have upgraded.
pub(super) fn spawn(downstream: Option<OnUpgrade>, resp: &mut http::Response<ProxyBody>) {
    let upstream = resp.extensions_mut().remove::<OnUpgrade>();
    let (Some(downstream), Some(upstream)) = (downstream, upstream) else {
        tracing::debug!("101 without an upgradable connection on both sides");
        return;
    };
    tokio::spawn(async move {
        let (down, up) = match tokio::try_join!(downstream, upstream) {
            Ok(pair) => pair,
            Err(error) => {
                tracing::debug!(%error, "upgrade failed");
                return;
            }
        };
        let mut down = TokioIo::new(down);
        let mut up = TokioIo::new(up);
        if let Err(error) = tokio::io::copy_bidirectional(&mut down, &mut up).await {
            tracing::debug!(%error, "upgraded connection ended with an error");
        }
    });
}
