//! The Python interpreter with the official Confluent client (`confluent-kafka`
//! with its Avro, JSON Schema and Protobuf extras). `.ci/run` installs it into a
//! venv and names the interpreter in `SCHEMAOPS_PYTHON`.

use std::process::Command;

/// `SCHEMAOPS_PYTHON`, else `python3`.
pub fn interpreter() -> String {
    std::env::var("SCHEMAOPS_PYTHON").unwrap_or_else(|_| "python3".to_owned())
}

/// The interpreter to use, or why there is none.
pub fn confluent_python() -> Result<String, String> {
    let candidate = interpreter();
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

/// The interpreter, or `None` after printing why the test is skipped;
/// under [`super::require_all`] a missing client fails the test instead.
pub fn confluent_python_or_skip() -> Option<String> {
    match confluent_python() {
        Ok(python) => Some(python),
        Err(reason) if !super::require_all() => {
            println!("skipped: {reason} (install with: pip install 'confluent-kafka[avro,json,protobuf]==2.16.1')");
            None
        }
        Err(reason) => panic!("SCHEMAOPS_REQUIRE_ALL=1 but {reason}"),
    }
}
