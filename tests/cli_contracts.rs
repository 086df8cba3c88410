//! Data contracts in `schemaops apply` and `check` without a cluster (issue
//! 19): `examples/contracts/` applied and checked, with the compatibility
//! group's lineages deciding which versions each change is checked against.

use std::process::{Command, Output};

use serde_json::Value;

fn schemaops(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_schemaops"))
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .env_remove("SCHEMAOPS_DATA")
        .env_remove("SCHEMAOPS_REGISTRY_URL")
        .output()
        .expect("the binary runs")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// The table row of `kind` `name`, split on whitespace.
fn row(table: &str, kind: &str, name: &str) -> Vec<String> {
    table
        .lines()
        .map(|line| line.split_whitespace().map(str::to_owned).collect::<Vec<_>>())
        .find(|cells| cells.len() > 3 && cells[0] == kind && cells[2] == name)
        .unwrap_or_else(|| panic!("no row for {kind} {name}:\n{table}"))
}

#[test]
fn apply_registers_lineage_3_beside_lineage_2_and_refuses_a_break_inside_lineage_2() {
    let data = tempfile::tempdir().unwrap();
    let data = data.path().to_str().unwrap();
    let output = schemaops(&["apply", "--data", data, "examples/contracts/"]);
    let stdout = text(&output.stdout);
    assert_eq!(output.status.code(), Some(1), "{stdout}{}", text(&output.stderr));
    assert_eq!(row(&stdout, "SubjectConfig", "orders")[6..], ["True", "Configured"]);
    assert_eq!(
        row(&stdout, "Schema", "customers")[3..],
        ["customers-value", "1", "1", "True", "Registered"]
    );
    // Version 2 is lineage 3's first version; the last edit, a break inside
    // lineage 2, was checked against version 1 alone.
    let orders = row(&stdout, "Schema", "orders");
    assert_eq!(orders[3..5], ["orders-value", "2"]);
    assert_eq!(orders[6..], ["False", "IncompatibleSchema"]);
    assert!(
        stdout.contains("under BACKWARD (checked version 1): 1 problem"),
        "{stdout}"
    );
    assert!(stdout.contains("TYPE_MISMATCH at /fields/1/type"), "{stdout}");

    // The objects' statuses show each version's GUID and merged metadata,
    // and the registry on disk serves them.
    let listed = schemaops(&[
        "apply",
        "--data",
        data,
        "-o",
        "json",
        "examples/contracts/00-customers-pii.yaml",
    ]);
    let objects: Value = serde_json::from_slice(&listed.stdout)
        .unwrap_or_else(|error| panic!("{error}: {}{}", text(&listed.stdout), text(&listed.stderr)));
    let customers = objects["items"]
        .as_array()
        .and_then(|list| list.iter().find(|object| object["metadata"]["name"] == "customers"))
        .unwrap_or_else(|| panic!("no customers object: {objects:#}"));
    assert_eq!(customers["status"]["metadata"]["tags"]["Customer.ssn"][0], "PII");
    let guid = customers["status"]["guid"].as_str().unwrap_or_default();
    assert!(guid.parse::<schemaops::registry::Guid>().is_ok(), "{customers:#}");
}

#[test]
fn check_predicts_the_same_outcome_without_writing() {
    let output = schemaops(&["check", "examples/contracts/"]);
    let stdout = text(&output.stdout);
    assert_eq!(output.status.code(), Some(1), "{stdout}{}", text(&output.stderr));
    assert!(
        stdout.contains("would be rejected (IncompatibleSchema) after registering versions 1, 2"),
        "{stdout}"
    );
    assert!(stdout.contains("(checked version 1)"), "{stdout}");
    assert!(
        stdout.contains("customers-value") && stdout.contains("would register as version 1"),
        "{stdout}"
    );
}
