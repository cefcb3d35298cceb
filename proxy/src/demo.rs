//! `ferry demo`: a built-in Open Inference Protocol model server behind an in-process ferry,
//! a few REST and gRPC requests through it, and a report of what ferry did with each.

pub mod client;
pub mod grpc_frame;
pub mod inference;
pub mod model_server;
