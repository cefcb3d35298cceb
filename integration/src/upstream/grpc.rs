//! tonic gRPC upstream: `ferry.test.v1.Echo` (unary, client-, server- and bidi-streaming) and
//! the OIP `inference.GRPCInferenceService/ModelInfer`, which records the model it was asked
//! for so model-routing tests can see which upstream got which model.
//!
//! Request metadata steers the answer: `x-test-delay-ms` delays it, `x-test-grpc-status: 14`
//! fails the call with that code.

use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures_util::{Stream, StreamExt as _};
use http_body_util::BodyExt as _;
use tonic::codegen::Service as _;
use tonic::{Request, Response, Status, Streaming};

use super::{BoxError, Protocols, ServerHandle, serve::serve};
use crate::pb::echo::echo_server::{Echo, EchoServer};
use crate::pb::echo::{EchoReply, EchoRequest};
use crate::pb::inference::grpc_inference_service_server::{
    GrpcInferenceService, GrpcInferenceServiceServer,
};
use crate::pb::inference::{ModelInferRequest, ModelInferResponse};

/// Metadata key that delays the answer by this many milliseconds.
pub const DELAY_KEY: &str = "x-test-delay-ms";
/// Metadata key that makes the call fail with this numeric gRPC code.
pub const STATUS_KEY: &str = "x-test-grpc-status";
/// Metadata key: `ServerStream` sends its replies, then ends with this gRPC status in the
/// trailers (a failure after the response headers said nothing was wrong).
pub const TRAILER_STATUS_KEY: &str = "x-test-trailer-grpc-status";

/// A running gRPC upstream.
#[derive(Debug)]
pub struct GrpcUpstream {
    calls: Arc<AtomicU64>,
    models: Arc<Mutex<Vec<(String, String)>>>,
    server: ServerHandle,
}

#[derive(Clone, Debug)]
struct EchoSvc {
    instance: String,
    calls: Arc<AtomicU64>,
}

#[derive(Clone, Debug)]
struct InferSvc {
    calls: Arc<AtomicU64>,
    models: Arc<Mutex<Vec<(String, String)>>>,
}

type ReplyStream = Pin<Box<dyn Stream<Item = Result<EchoReply, Status>> + Send + 'static>>;

// === impl GrpcUpstream ===

impl GrpcUpstream {
    /// Starts a gRPC upstream named `name` (reported in every `EchoReply.instance`).
    pub async fn start(name: &str) -> anyhow::Result<GrpcUpstream> {
        let calls = Arc::new(AtomicU64::new(0));
        let models = Arc::new(Mutex::new(Vec::new()));
        let echo = EchoServer::new(EchoSvc {
            instance: name.to_owned(),
            calls: calls.clone(),
        });
        let infer = GrpcInferenceServiceServer::new(InferSvc {
            calls: calls.clone(),
            models: models.clone(),
        });
        let server = serve(Protocols::Auto, move |req| {
            let (mut echo, mut infer) = (echo.clone(), infer.clone());
            async move {
                // Both generated servers are always ready and never fail; each answers
                // UNIMPLEMENTED for paths outside its own service.
                let resp = if req.uri().path().starts_with("/inference.") {
                    infer.call(req).await
                } else {
                    echo.call(req).await
                };
                match resp {
                    Ok(resp) => resp.map(|b| b.map_err(|s| Box::new(s) as BoxError).boxed_unsync()),
                    Err(never) => match never {},
                }
            }
        })
        .await?;
        Ok(GrpcUpstream {
            calls,
            models,
            server,
        })
    }

    /// The bound address.
    pub fn addr(&self) -> std::net::SocketAddr {
        self.server.addr()
    }

    /// Calls started on this instance (all methods).
    pub fn calls(&self) -> u64 {
        self.calls.load(Ordering::SeqCst)
    }

    /// `(model_name, model_version)` of every ModelInfer call seen, in order.
    pub fn models_seen(&self) -> Vec<(String, String)> {
        self.models.lock().map(|m| m.clone()).unwrap_or_default()
    }

    /// Kills the server.
    pub async fn kill(&mut self) {
        self.server.kill().await;
    }
}

/// Applies the steering metadata of a request: delay first, then the forced status.
async fn steer<T>(req: &Request<T>) -> Result<(), Status> {
    let md = req.metadata();
    if let Some(ms) = md
        .get(DELAY_KEY)
        .and_then(|v| v.to_str().ok()?.parse::<u64>().ok())
    {
        tokio::time::sleep(Duration::from_millis(ms)).await;
    }
    if let Some(code) = md
        .get(STATUS_KEY)
        .and_then(|v| v.to_str().ok()?.parse::<i32>().ok())
    {
        return Err(Status::new(
            tonic::Code::from_i32(code),
            "status requested by the test",
        ));
    }
    Ok(())
}

// === impl EchoSvc ===

impl EchoSvc {
    fn reply(&self, message: String, count: u64) -> EchoReply {
        EchoReply {
            message,
            instance: self.instance.clone(),
            count,
        }
    }
}

#[tonic::async_trait]
impl Echo for EchoSvc {
    async fn unary(&self, req: Request<EchoRequest>) -> Result<Response<EchoReply>, Status> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        steer(&req).await?;
        Ok(Response::new(self.reply(req.into_inner().message, 1)))
    }

    async fn client_stream(
        &self,
        req: Request<Streaming<EchoRequest>>,
    ) -> Result<Response<EchoReply>, Status> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        steer(&req).await?;
        let mut stream = req.into_inner();
        let (mut last, mut count) = (String::new(), 0u64);
        while let Some(msg) = stream.message().await? {
            last = msg.message;
            count += 1;
        }
        Ok(Response::new(self.reply(last, count)))
    }

    type ServerStreamStream = ReplyStream;

    async fn server_stream(
        &self,
        req: Request<EchoRequest>,
    ) -> Result<Response<Self::ServerStreamStream>, Status> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        steer(&req).await?;
        let last = req
            .metadata()
            .get(TRAILER_STATUS_KEY)
            .and_then(|v| v.to_str().ok()?.parse::<i32>().ok())
            .map(|code| {
                Err(Status::new(
                    tonic::Code::from_i32(code),
                    "trailer status requested by the test",
                ))
            });
        let msg = req.into_inner();
        let this = self.clone();
        let replies = (1..=u64::from(msg.repeat))
            .map(move |i| Ok(this.reply(format!("{}#{i}", msg.message), i)))
            .chain(last);
        Ok(Response::new(Box::pin(futures_util::stream::iter(replies))))
    }

    type BidiStream = ReplyStream;

    async fn bidi(
        &self,
        req: Request<Streaming<EchoRequest>>,
    ) -> Result<Response<Self::BidiStream>, Status> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        steer(&req).await?;
        let this = self.clone();
        // One reply per request message, sent as soon as it arrives: ping-pong works, which is
        // how tests prove a long-lived stream keeps flowing through ferry.
        let replies = req
            .into_inner()
            .enumerate()
            .map(move |(i, msg)| msg.map(|m| this.reply(m.message, i as u64 + 1)));
        Ok(Response::new(Box::pin(replies)))
    }
}

// === impl InferSvc ===

#[tonic::async_trait]
impl GrpcInferenceService for InferSvc {
    async fn model_infer(
        &self,
        req: Request<ModelInferRequest>,
    ) -> Result<Response<ModelInferResponse>, Status> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        steer(&req).await?;
        let req = req.into_inner();
        if let Ok(mut models) = self.models.lock() {
            models.push((req.model_name.clone(), req.model_version.clone()));
        }
        Ok(Response::new(ModelInferResponse {
            model_name: req.model_name,
            model_version: req.model_version,
            id: req.id,
        }))
    }
}
