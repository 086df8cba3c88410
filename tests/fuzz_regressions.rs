//! Replays every input in `fuzz/regressions/<target>/` through the same
//! checks the fuzz targets run (`fuzz/targets.rs`), on a 2 MiB stack like a
//! tokio worker's: an input a fuzzer once crashed on, or a hand-written
//! hostile one, must never crash again or get a 500.

use std::path::Path;

use schemaops::compat::Format;

#[path = "../fuzz/targets.rs"]
mod targets;

/// Every input of `target`, in name order.
fn inputs(target: &str) -> Vec<(String, Vec<u8>)> {
    let folder = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fuzz/regressions")
        .join(target);
    let mut inputs: Vec<(String, Vec<u8>)> = std::fs::read_dir(&folder)
        .unwrap_or_else(|error| panic!("{}: {error}", folder.display()))
        .map(|entry| {
            let path = entry.unwrap().path();
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            (name, std::fs::read(&path).unwrap())
        })
        .collect();
    inputs.sort();
    assert!(!inputs.is_empty(), "{} holds no inputs", folder.display());
    inputs
}

fn replay(target: &str, run: fn(&[u8])) {
    for (name, data) in inputs(target) {
        let outcome = std::thread::Builder::new()
            .stack_size(2 * 1024 * 1024)
            .spawn(move || run(&data))
            .unwrap()
            .join();
        assert!(outcome.is_ok(), "fuzz/regressions/{target}/{name} fails again");
    }
}

#[test]
fn avro_check_inputs_pass() {
    replay("avro_check", |data| targets::compat(Format::Avro, data));
}

#[test]
fn json_schema_check_inputs_pass() {
    replay("json_schema_check", |data| targets::compat(Format::Json, data));
}

#[test]
fn protobuf_check_inputs_pass() {
    replay("protobuf_check", |data| targets::compat(Format::Protobuf, data));
}

#[test]
fn canonical_inputs_pass() {
    replay("canonical", targets::canonical);
}

#[test]
fn manifests_inputs_pass() {
    replay("manifests", targets::manifests);
}

#[test]
fn rest_request_inputs_pass() {
    replay("rest_request", targets::rest_request);
}
