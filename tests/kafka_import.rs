//! The proof on a real broker (issue 18 item 4): records written with the
//! official Confluent serializers against a source `schemaops registry`
//! (non-contiguous IDs, a soft-deleted version, an Avro reference) are read,
//! after `schemaops import`, with the Confluent deserializers against a
//! registry serving the imported folder, through Tansu, for Avro, JSON
//! Schema and Protobuf (`tests/python/import_proof.py`).

mod support;

use std::process::Command;

use support::broker::Broker;
use support::registry::RegistryProcess;

const SCRIPT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/python/import_proof.py");

/// Runs one phase of the script; its stdout, asserting it passed.
fn phase(python: &str, name: &str, broker: &str, url: &str, work: &std::path::Path) -> String {
    let output = Command::new(python)
        .args([SCRIPT, name, broker, url])
        .arg(work)
        .output()
        .expect("the script runs");
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    println!("{stdout}");
    assert!(
        output.status.success(),
        "{name} failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    stdout
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn records_written_through_the_source_are_read_through_schemaops_after_import() {
    let Some(python) = support::python::confluent_python_or_skip() else {
        return;
    };
    let Some(broker) = Broker::start_or_skip() else {
        return;
    };
    let work = tempfile::tempdir().unwrap();
    let source_data = tempfile::tempdir().unwrap();
    let target_data = tempfile::tempdir().unwrap();
    let source = RegistryProcess::start(source_data.path()).await;
    let written = phase(&python, "produce", &broker.address, &source.url, work.path());
    assert_eq!(
        written.lines().filter(|line| line.starts_with("ok ")).count(),
        3,
        "{written}"
    );

    let import = Command::new(env!("CARGO_BIN_EXE_schemaops"))
        .args(["import", "--from", &source.url, "--data"])
        .arg(target_data.path())
        .output()
        .unwrap();
    assert!(
        import.status.success(),
        "import failed: {}{}",
        String::from_utf8_lossy(&import.stdout),
        String::from_utf8_lossy(&import.stderr)
    );
    drop(source);

    let target = RegistryProcess::start(target_data.path()).await;
    let read = phase(&python, "consume", &broker.address, &target.url, work.path());
    assert_eq!(read.lines().filter(|line| line.starts_with("ok ")).count(), 9, "{read}");
}
