//! The official Confluent Python client (`confluent-kafka`) against
//! `schemaops registry`: the registry API, and serializer round trips for
//! every schema type (issue 5). `.ci/run` installs the client into a venv
//! and names its interpreter in `SCHEMAOPS_PYTHON`.

mod support;

use std::process::Command;

use support::registry::RegistryProcess;

/// The interpreter to use, or why there is none.
fn python() -> Result<String, String> {
    let candidate = std::env::var("SCHEMAOPS_PYTHON").unwrap_or_else(|_| "python3".to_owned());
    let probe = Command::new(&candidate)
        .args([
            "-c",
            "import confluent_kafka.schema_registry.protobuf, confluent_kafka.schema_registry.avro",
        ])
        .output();
    match probe {
        Ok(output) if output.status.success() => Ok(candidate),
        Ok(output) => Err(format!(
            "{candidate} cannot import confluent_kafka with its extras: {}",
            String::from_utf8_lossy(&output.stderr)
                .lines()
                .last()
                .unwrap_or_default()
        )),
        Err(error) => Err(format!("{candidate} cannot be run: {error}")),
    }
}

#[tokio::test]
async fn the_confluent_python_client_works_against_the_registry() {
    let python = match python() {
        Ok(python) => python,
        Err(reason) if !support::require_all() => {
            println!("skipped: {reason} (install with: pip install 'confluent-kafka[avro,json,protobuf]')");
            return;
        }
        Err(reason) => panic!("SCHEMAOPS_REQUIRE_ALL=1 but {reason}"),
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
