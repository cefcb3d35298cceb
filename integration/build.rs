//! Compiles the test protos with protox (pure Rust), so building needs only cargo.

fn main() -> anyhow::Result<()> {
    let protos = ["proto/echo.proto", "proto/inference.proto"];
    for p in protos {
        println!("cargo:rerun-if-changed={p}");
    }
    let fds = protox::compile(protos, ["proto"])?;
    tonic_prost_build::configure()
        .build_server(true)
        .build_client(true)
        .compile_fds(fds)?;
    Ok(())
}
