//! Descriptor loading: the shipped example with a descriptor built by protox from the committed
//! proto, and the faults reported at the `descriptor_set` field.

use std::path::Path;

use super::Descriptors;

fn workspace() -> &'static Path {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/.."))
}

/// `proto/testing/library.proto` as `protoc --include_imports --descriptor_set_out` writes it.
fn library_pb() -> Vec<u8> {
    let mut compiler = protox::Compiler::new([workspace().join("proto/testing")]).unwrap();
    compiler.include_imports(true);
    compiler.open_files(["library.proto"]).unwrap();
    compiler.encode_file_descriptor_set()
}

/// examples/transcode.yaml copied into a scratch dir (its descriptor path is relative to it).
fn example_in(dir: &Path) -> ferry_config::Config {
    let yaml = std::fs::read_to_string(workspace().join("examples/transcode.yaml")).unwrap();
    let path = dir.join("transcode.yaml");
    std::fs::write(&path, yaml).unwrap();
    ferry_config::load(&path).unwrap()
}

#[test]
fn the_example_loads_with_its_descriptor_and_dumps_file_hash_and_bindings() {
    let dir = tempfile::tempdir().unwrap();
    let config = example_in(dir.path());
    let pb = library_pb();
    std::fs::write(dir.path().join("library.pb"), &pb).unwrap();
    let d = Descriptors::load(&config).unwrap();
    let t = d.transcoder("rest-in", "library").unwrap();
    assert_eq!(t.bindings(), 12);
    assert!(d.transcoder("rest-in", "other").is_none());
    assert_eq!(d.dirs(), [dir.path().to_path_buf()]);
    let dump = d.dump();
    assert_eq!(dump[0]["route"], "library");
    assert_eq!(dump[0]["bindings"], 12);
    assert_eq!(
        dump[0]["descriptor_set"],
        dir.path().join("library.pb").display().to_string()
    );
    let sha = dump[0]["sha256"].as_str().unwrap().to_owned();
    assert_eq!(sha.len(), 64);
    assert_eq!(d.fingerprint(), sha);
}

#[test]
fn file_faults_are_reported_at_the_descriptor_set_field() {
    let dir = tempfile::tempdir().unwrap();
    let config = example_in(dir.path());
    let yaml = dir.path().join("transcode.yaml").display().to_string();
    let pb = dir.path().join("library.pb");
    let err = Descriptors::load(&config).unwrap_err().to_string();
    let at = format!("{yaml}:24:27: listeners[0].routes[0].translate.descriptor_set: ");
    assert!(
        err.starts_with(&format!("{at}cannot read descriptor set {}", pb.display())),
        "{err}"
    );
    std::fs::write(&pb, b"\x0a\x02zz").unwrap();
    let err = Descriptors::load(&config).unwrap_err().to_string();
    assert!(
        err.starts_with(&format!(
            "{at}{}: not a valid FileDescriptorSet",
            pb.display()
        )),
        "{err}"
    );
}
