//! Upload sink: reads a streamed request body frame by frame, counting bytes without keeping
//! them, and answers `{"bytes": N, "frames": M}`. Used to push 1 GiB through ferry.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use http::StatusCode;
use http_body_util::BodyExt as _;

use super::{Protocols, ServerHandle, json, serve::serve};

/// A running upload sink.
#[derive(Debug)]
pub struct UploadSink {
    received: Arc<AtomicU64>,
    server: ServerHandle,
}

// === impl UploadSink ===

impl UploadSink {
    /// Starts the sink.
    pub async fn start() -> anyhow::Result<UploadSink> {
        let received = Arc::new(AtomicU64::new(0));
        let counter = received.clone();
        let server = serve(Protocols::Auto, move |req| {
            let counter = counter.clone();
            async move {
                let mut body = req.into_body();
                let (mut bytes, mut frames) = (0u64, 0u64);
                while let Some(frame) = body.frame().await {
                    match frame {
                        Ok(frame) => {
                            if let Some(data) = frame.data_ref() {
                                bytes += data.len() as u64;
                                frames += 1;
                                counter.fetch_add(data.len() as u64, Ordering::Relaxed);
                            }
                        }
                        Err(e) => {
                            let msg = format!("body error after {bytes} bytes: {e}");
                            return json(
                                StatusCode::BAD_REQUEST,
                                &serde_json::json!({ "error": msg }),
                            );
                        }
                    }
                }
                json(
                    StatusCode::OK,
                    &serde_json::json!({ "bytes": bytes, "frames": frames }),
                )
            }
        })
        .await?;
        Ok(UploadSink { received, server })
    }

    /// The bound address.
    pub fn addr(&self) -> std::net::SocketAddr {
        self.server.addr()
    }

    /// Bytes received so far across all requests (live, while an upload is running).
    pub fn received(&self) -> u64 {
        self.received.load(Ordering::Relaxed)
    }
}
