//! What every bad-input test expects: the candidate is refused as invalid
//! (never judged), with one line that names the problem.

use schemaops::compat::{Format, Mode, SchemaText, check, error_chain};

/// Checks that `schema` is refused as an invalid candidate and that the error
/// names every part of `expected`; returns the error as one line.
pub fn assert_refused(format: Format, schema: &SchemaText, expected: &[&str]) -> String {
    let error = check(format, Mode::Backward, schema, &[]).expect_err("the schema must be refused");
    assert_eq!(error.reason(), "InvalidSchema", "{error:?}");
    let message = error_chain(&error);
    let language = match format {
        Format::Avro => "Avro schema",
        Format::Json => "JSON Schema",
        Format::Protobuf => "Protobuf schema",
    };
    assert!(
        message.starts_with(&format!("the candidate schema is not a valid {language}")),
        "{message}"
    );
    for part in expected {
        assert!(message.contains(part), "expected {part:?} in: {message}");
    }
    message
}
