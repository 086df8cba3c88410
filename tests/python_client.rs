//! The official Confluent Python client (`confluent-kafka`) against
//! `schemaops registry`: the registry API, and serializer round trips for
//! every schema type (issue 5). `.ci/run` installs the client into a venv
//! and names its interpreter in `SCHEMAOPS_PYTHON`.

mod support;

use std::process::Command;

use support::registry::RegistryProcess;

#[tokio::test]
async fn the_confluent_python_client_works_against_the_registry() {
    let Some(python) = support::python::confluent_python_or_skip() else {
        return;
    };
    let data = tempfile::tempdir().unwrap();
    let server = RegistryProcess::start(data.path()).await;
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/python/registry_client.py");
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
