//! Compiles `proto/inference.proto` (the Open Inference Protocol gRPC API) with protox, a
//! pure-Rust protobuf compiler, so building ferry needs only cargo and no system `protoc`.

use std::path::PathBuf;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let manifest_dir = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR")?);
    let proto_dir = manifest_dir.join("..").join("proto");
    let proto_file = proto_dir.join("inference.proto");
    println!("cargo:rerun-if-changed={}", proto_file.display());

    let descriptors = protox::compile([&proto_file], [&proto_dir])?;
    prost_build::Config::new()
        // `bytes` fields decode as slices of the request buffer instead of fresh Vec copies:
        // tensors can be megabytes.
        .bytes(["."])
        .compile_fds(descriptors)?;
    Ok(())
}
