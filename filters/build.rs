//! Compiles the shared `proto/inference.proto` (Open Inference Protocol gRPC API) with protox,
//! a pure-Rust protobuf compiler, so the build needs only cargo.

use std::path::PathBuf;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let manifest_dir = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR")?);
    let proto_dir = manifest_dir.join("..").join("proto");
    let proto_file = proto_dir.join("inference.proto");
    println!("cargo:rerun-if-changed={}", proto_file.display());

    let descriptors = protox::compile([&proto_file], [&proto_dir])?;
    prost_build::Config::new()
        // `bytes` fields decode as slices of the received buffer: raw tensors can be megabytes
        // and must reach the other side without a copy.
        .bytes(["."])
        .compile_fds(descriptors)?;
    Ok(())
}
