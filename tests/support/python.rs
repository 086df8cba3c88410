//! The Python interpreter with the official Confluent client (`confluent-kafka`
//! with its Avro, JSON Schema and Protobuf extras) and schemathesis. `.ci/run`
//! installs both into a venv and names the interpreter in `SCHEMAOPS_PYTHON`.

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

/// The schemathesis version `.ci/run` installs; the contract test runs only
/// this one, so a CI run can be repeated.
pub const SCHEMATHESIS_VERSION: &str = "4.32.5";

/// The interpreter with schemathesis [`SCHEMATHESIS_VERSION`], or why there is none.
pub fn schemathesis_python() -> Result<String, String> {
    let candidate = interpreter();
    let probe = Command::new(&candidate)
        .args([
            "-c",
            "import importlib.metadata, schemathesis.cli; print(importlib.metadata.version('schemathesis'))",
        ])
        .output();
    match probe {
        Ok(output) if output.status.success() => {
            let version = String::from_utf8_lossy(&output.stdout).trim().to_owned();
            if version == SCHEMATHESIS_VERSION {
                Ok(candidate)
            } else {
                Err(format!(
                    "{candidate} has schemathesis {version}, not the pinned {SCHEMATHESIS_VERSION}"
                ))
            }
        }
        Ok(output) => Err(format!(
            "{candidate} cannot import schemathesis: {}",
            String::from_utf8_lossy(&output.stderr)
                .lines()
                .last()
                .unwrap_or_default()
        )),
        Err(error) => Err(format!("{candidate} cannot be run: {error}")),
    }
}

/// The interpreter with schemathesis, or `None` after printing why the test
/// is skipped; under [`super::require_all`] a missing schemathesis fails the test.
pub fn schemathesis_python_or_skip() -> Option<String> {
    match schemathesis_python() {
        Ok(python) => Some(python),
        Err(reason) if !super::require_all() => {
            println!("skipped: {reason} (install with: pip install 'schemathesis=={SCHEMATHESIS_VERSION}')");
            None
        }
        Err(reason) => panic!("SCHEMAOPS_REQUIRE_ALL=1 but {reason}"),
    }
}
