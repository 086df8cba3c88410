//! The official Confluent Python client (`confluent-kafka`) against
//! `schemaops registry`: the registry API, and serializer round trips for
//! every schema type (issue 5), data contracts with header GUIDs (issue
//! 19), and JSON Schema references across subjects (issue 39). `.ci/run` installs the client into a venv and names its interpreter
//! in `SCHEMAOPS_PYTHON`.

mod support;

use std::process::Command;

use support::registry::RegistryProcess;

/// Runs `tests/python/{script}` with the client against a fresh registry;
/// the script fails (and so this does) on any broken expectation.
async fn run_client_script(script: &str) {
    let Some(python) = support::python::confluent_python_or_skip() else {
        return;
    };
    let data = tempfile::tempdir().unwrap();
    let server = RegistryProcess::start(data.path()).await;
    let script = format!("{}/tests/python/{script}", env!("CARGO_MANIFEST_DIR"));
    let output = tokio::task::spawn_blocking({
        let url = server.url.clone();
        move || Command::new(python).arg(script).arg(url).output()
    })
    .await
    .unwrap()
    .expect("the client script runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    println!("{stdout}");
    assert!(
        output.status.success(),
        "the Python client failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
}

#[tokio::test]
async fn the_confluent_python_client_works_against_the_registry() {
    run_client_script("registry_client.py").await;
}

/// Data contracts through the same client (issue 19): metadata and rule sets
/// registered and read back, a compatibility group, `get_latest_with_metadata`,
/// and a record whose schema travels as a GUID in a header.
#[tokio::test]
async fn the_python_client_registers_and_reads_data_contracts_and_header_guids() {
    run_client_script("contracts_client.py").await;
}

/// JSON Schema references across subjects (issue 39, item 1): the client
/// registers a schema whose `$ref` names a reference, reads it back,
/// serializes and deserializes a record whose validation follows the
/// reference, and sees a change inside the referenced schema in a
/// compatibility check.
#[tokio::test]
async fn the_python_client_registers_and_serializes_with_a_json_schema_reference() {
    run_client_script("json_references_client.py").await;
}
