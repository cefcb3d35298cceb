//! The model server over real sockets on 127.0.0.1, driven by the demo's own hyper clients.

use std::net::SocketAddr;
use std::time::Duration;

use bytes::Bytes;
use http::{Method, StatusCode};
use serde_json::{Value, json};
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

use crate::client::{GrpcClient, GrpcReply, RestClient, add_sub_request};
use crate::grpc_frame;
use crate::inference::*;

mod grpc;
mod rest;

/// A running server and the means to stop it.
struct Running {
    addr: SocketAddr,
    stop: Option<oneshot::Sender<()>>,
    task: JoinHandle<()>,
}

impl Running {
    async fn start() -> Running {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let (stop, stopped) = oneshot::channel::<()>();
        let task = tokio::spawn(super::serve(listener, async {
            let _ = stopped.await;
        }));
        Running {
            addr,
            stop: Some(stop),
            task,
        }
    }

    async fn rest(&self) -> RestClient {
        RestClient::connect(self.addr).await.unwrap()
    }

    async fn grpc(&self) -> GrpcClient {
        GrpcClient::connect(self.addr).await.unwrap()
    }

    async fn stop(mut self) {
        if let Some(stop) = self.stop.take() {
            stop.send(()).unwrap();
        }
        tokio::time::timeout(Duration::from_secs(10), &mut self.task)
            .await
            .expect("server stops after the shutdown signal")
            .unwrap();
    }
}

fn json_body(value: &Value) -> Option<Bytes> {
    Some(Bytes::from(value.to_string()))
}

fn parse(body: &[u8]) -> Value {
    serde_json::from_slice(body).unwrap()
}

#[tokio::test]
async fn stops_on_shutdown_and_closes_the_port() {
    let server = Running::start().await;
    let addr = server.addr;
    let mut client = server.rest().await;
    let reply = client
        .send(Method::GET, "/v2/health/live", None)
        .await
        .unwrap();
    assert_eq!(reply.status, StatusCode::OK);
    drop(client);
    server.stop().await;
    assert!(tokio::net::TcpStream::connect(addr).await.is_err());
}
