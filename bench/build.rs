//! Compiles `proto/inference_http.proto` (the ModelInfer rpc with its `google.api.http`
//! binding) into a FileDescriptorSet with protox, a pure-Rust protobuf compiler, so Envoy's
//! grpc_json_transcoder gets its descriptor without protoc. The driver writes the bytes into
//! the run's work directory.

use std::path::PathBuf;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let manifest_dir = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR")?);
    let proto_dir = manifest_dir.join("proto");
    // google/api/{annotations,http}.proto: the one copy the transcoding tests use too.
    let google_api_dir = manifest_dir.join("..").join("proto").join("testing");
    println!("cargo:rerun-if-changed={}", proto_dir.display());
    println!(
        "cargo:rerun-if-changed={}",
        google_api_dir.join("google").display()
    );
    // include_imports: Envoy resolves annotations.proto and descriptor.proto from the set.
    // Encoded by protox itself: prost_types' MethodOptions would drop the `(google.api.http)`
    // extension as an unknown field, leaving Envoy nothing to route by.
    let set = protox::Compiler::new([&proto_dir, &google_api_dir])?
        .include_imports(true)
        .open_file(proto_dir.join("inference_http.proto"))?
        .encode_file_descriptor_set();
    let out = PathBuf::from(std::env::var("OUT_DIR")?).join("inference_http.pb");
    std::fs::write(out, set)?;
    Ok(())
}
