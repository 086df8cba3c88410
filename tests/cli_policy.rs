//! SchemaPolicies in `schemaops apply` and `check` without a cluster (issue
//! 17): the two-team example, `--policy` files, invalid policies, Warn
//! policies, and a policy added after a Schema was registered.

use std::path::Path;
use std::process::{Command, Output};

use serde_json::Value;

mod support;

fn schemaops(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_schemaops"))
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .env_remove("SCHEMAOPS_DATA")
        .env_remove("SCHEMAOPS_POLICY")
        .output()
        .expect("the binary runs")
}

fn apply(data: &Path, args: &[&str]) -> Output {
    let data = data.to_str().unwrap();
    schemaops(&[&["apply", "--data", data], args].concat())
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// The table row of the object `namespace/name` of `kind`, split on whitespace.
fn row(table: &str, kind: &str, namespace: &str, name: &str) -> Vec<String> {
    table
        .lines()
        .map(|line| line.split_whitespace().map(str::to_owned).collect::<Vec<_>>())
        .find(|cells| cells.len() > 3 && cells[0] == kind && cells[1] == namespace && cells[2] == name)
        .unwrap_or_else(|| panic!("no row for {kind} {namespace}/{name}:\n{table}"))
}

/// GET `path` on the registry as JSON.
async fn served(url: &str, path: &str) -> Value {
    let answer = support::http_client()
        .get(format!("{url}{path}"))
        .send()
        .await
        .unwrap_or_else(|error| panic!("GET {path}: {error}"));
    assert!(answer.status().is_success(), "GET {path}: {}", answer.status());
    answer.json().await.unwrap()
}

const NAMESPACE_A: &str = "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: team-a\n  labels:\n    env: prod\n";

fn schema(name: &str, subject: &str, extra: &str) -> String {
    format!(
        "apiVersion: schemaops.dev/v1alpha1\nkind: Schema\nmetadata:\n  name: {name}\n  namespace: team-a\nspec:\n  \
         subject: {subject}\n{extra}  schema: '{{\"type\":\"record\",\"name\":\"R\",\"fields\":[{{\"name\":\"a\",\"type\":\"int\"}}]}}'\n"
    )
}

fn policy(name: &str, actions: &str, rules: &str) -> String {
    format!(
        "apiVersion: schemaops.dev/v1alpha1\nkind: SchemaPolicy\nmetadata:\n  name: {name}\nspec:\n  match:\n    \
         namespaceSelector:\n      matchLabels:\n        env: prod\n  rules:\n{rules}  validationActions: [{actions}]\n"
    )
}

const NO_HARD_DELETE: &str = "    deletionPolicies: [Retain, SoftDelete]\n";

#[tokio::test]
async fn the_example_registers_team_a_and_refuses_team_b_three_times_naming_the_policy() {
    let data = tempfile::tempdir().unwrap();
    let output = apply(data.path(), &["examples/policy/"]);
    assert_eq!(output.status.code(), Some(1), "{}", text(&output.stderr));
    let table = text(&output.stdout);
    // KIND NAMESPACE NAME SUBJECT VERSION ID READY REASON
    assert_eq!(
        row(&table, "SubjectConfig", "team-a", "orders")[6..],
        ["True", "Configured"]
    );
    assert_eq!(
        row(&table, "Schema", "team-a", "orders")[4..],
        ["1", "1", "True", "Registered"]
    );
    assert_eq!(
        row(&table, "Schema", "team-b", "orders-takeover")[4..],
        ["-", "-", "False", "SubjectNotAllowed"]
    );
    assert_eq!(
        row(&table, "SubjectConfig", "team-b", "payments")[6..],
        ["False", "PolicyViolation"]
    );
    assert_eq!(
        row(&table, "Schema", "team-b", "refunds")[4..],
        ["-", "-", "False", "PolicyViolation"]
    );
    for explanation in [
        "SchemaPolicy prod rule subjects.allowed at spec.subject: namespace team-b may not manage subject \
         `team-a.orders-value`",
        "SchemaPolicy prod rule compatibility at spec.compatibility: the level set is NONE",
        "SchemaPolicy prod rule deletionPolicies at spec.deletionPolicy: deletionPolicy HardDelete is not allowed",
    ] {
        assert!(table.contains(explanation), "{explanation}\n{table}");
    }

    // Nothing of team B reached the registry.
    let registry = support::registry::RegistryProcess::start(data.path()).await;
    let subjects = served(&registry.url, "/subjects").await;
    assert_eq!(subjects, serde_json::json!(["team-a.orders-value"]));
    let versions = served(&registry.url, "/subjects/team-a.orders-value/versions").await;
    assert_eq!(versions, serde_json::json!([1]));
    let latest = served(&registry.url, "/subjects/team-a.orders-value/versions/latest").await;
    assert!(
        latest["schema"].as_str().unwrap().contains("teama"),
        "team A's schema: {latest}"
    );
    let level = served(&registry.url, "/config/team-a.orders-value").await;
    assert_eq!(level["compatibilityLevel"], "BACKWARD_TRANSITIVE");
}

#[test]
fn check_annotates_each_refusal_at_its_manifest_line() {
    let output = schemaops(&["check", "examples/policy/", "-o", "github"]);
    assert_eq!(output.status.code(), Some(1), "{}", text(&output.stderr));
    let annotations = text(&output.stdout);
    let errors: Vec<&str> = annotations.lines().filter(|line| line.starts_with("::error")).collect();
    let team_b = std::fs::read_to_string("examples/policy/20-team-b.yaml").unwrap();
    let line_of = |needle: &str| {
        // The document starts at its apiVersion line, just above `kind:` before `needle`.
        let at = team_b.find(needle).unwrap();
        team_b[..at]
            .rfind("apiVersion")
            .map(|start| team_b[..start].lines().count() + 1)
            .unwrap()
    };
    let expected = [
        (
            "SubjectConfig team-b/payments",
            "PolicyViolation",
            line_of("name: payments"),
        ),
        (
            "Schema team-b/orders-takeover",
            "SubjectNotAllowed",
            line_of("name: orders-takeover"),
        ),
        ("Schema team-b/refunds", "PolicyViolation", line_of("name: refunds")),
    ];
    assert_eq!(errors.len(), expected.len(), "{annotations}");
    for (object, reason, line) in expected {
        let prefix = format!(
            "::error file=examples/policy/20-team-b.yaml,line={line},title={object} would be rejected ({reason})::"
        );
        let annotation = errors
            .iter()
            .find(|error| error.starts_with(&prefix))
            .unwrap_or_else(|| panic!("{prefix}\n{annotations}"));
        assert!(annotation.contains("SchemaPolicy prod rule"), "{annotation}");
    }
}

#[test]
fn a_policy_file_judges_without_being_stored() {
    let folder = tempfile::tempdir().unwrap();
    let manifests = folder.path().join("manifests.yaml");
    std::fs::write(
        &manifests,
        format!(
            "{NAMESPACE_A}---\n{}",
            schema("orders", "team-a.orders-value", "  deletionPolicy: HardDelete\n")
        ),
    )
    .unwrap();
    let policies = folder.path().join("policies");
    std::fs::create_dir(&policies).unwrap();
    std::fs::write(policies.join("prod.yaml"), policy("prod", "Deny", NO_HARD_DELETE)).unwrap();
    let (manifests, policies) = (manifests.to_str().unwrap(), policies.to_str().unwrap());

    let checked = schemaops(&["check", "--policy", policies, manifests, "-o", "json"]);
    assert_eq!(checked.status.code(), Some(1), "{}", text(&checked.stderr));
    let report: Value = serde_json::from_slice(&checked.stdout).unwrap();
    assert_eq!(report["objects"][0]["outcome"], "rejected");
    assert_eq!(report["objects"][0]["reason"], "PolicyViolation");
    assert!(
        report["objects"][0]["message"]
            .as_str()
            .unwrap()
            .contains("SchemaPolicy prod rule deletionPolicies"),
        "{report}"
    );
    // Without the policy the same manifests pass.
    assert_eq!(schemaops(&["check", manifests]).status.code(), Some(0));

    let data = folder.path().join("data");
    let applied = apply(&data, &["--policy", policies, manifests]);
    assert_eq!(applied.status.code(), Some(1), "{}", text(&applied.stdout));
    let stored = std::fs::read_to_string(data.join("objects.json")).unwrap();
    assert!(
        !stored.contains("schemaPolicies"),
        "a --policy file is not stored: {stored}"
    );
}

#[test]
fn a_policy_file_holding_another_kind_is_an_error_naming_file_and_document() {
    let folder = tempfile::tempdir().unwrap();
    let policies = folder.path().join("policies.yaml");
    std::fs::write(
        &policies,
        format!(
            "{}---\n{}",
            policy("prod", "Deny", NO_HARD_DELETE),
            schema("a", "team-a.orders", "")
        ),
    )
    .unwrap();
    let output = schemaops(&[
        "check",
        "--policy",
        policies.to_str().unwrap(),
        "examples/policy/10-team-a.yaml",
    ]);
    assert_eq!(output.status.code(), Some(2));
    let error = text(&output.stderr);
    assert!(
        error.contains(
            "policies.yaml (document 2): a --policy file holds SchemaPolicy and Namespace documents only, not Schema"
        ),
        "{error}"
    );
}

#[test]
fn an_invalid_policy_fails_the_run_naming_every_problem_and_nothing_is_applied() {
    let data = tempfile::tempdir().unwrap();
    let folder = tempfile::tempdir().unwrap();
    let manifests = folder.path().join("manifests.yaml");
    let invalid = policy("broken", "Deny, Warn", "    subjects:\n      allowed: [\"\"]\n");
    std::fs::write(
        &manifests,
        format!("{invalid}---\n{}", schema("orders", "team-a.orders-value", "")),
    )
    .unwrap();
    let output = apply(data.path(), &[manifests.to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(2), "{}", text(&output.stdout));
    let error = text(&output.stderr);
    assert!(error.contains("SchemaPolicy broken is invalid: "), "{error}");
    assert!(error.contains("spec.rules.subjects.allowed[0]"), "{error}");
    assert!(error.contains("Deny and Warn cannot be combined"), "{error}");
    assert!(!data.path().join("objects.json").exists(), "nothing is stored");
}

#[test]
fn a_warn_policy_lets_the_change_through_and_reports_a_warning() {
    let data = tempfile::tempdir().unwrap();
    let folder = tempfile::tempdir().unwrap();
    let manifests = folder.path().join("manifests.yaml");
    std::fs::write(
        &manifests,
        format!(
            "{NAMESPACE_A}---\n{}---\n{}",
            policy("advice", "Warn", NO_HARD_DELETE),
            schema("orders", "team-a.orders-value", "  deletionPolicy: HardDelete\n")
        ),
    )
    .unwrap();
    let manifests = manifests.to_str().unwrap();
    let checked = schemaops(&["check", manifests, "-o", "github"]);
    assert_eq!(checked.status.code(), Some(0), "{}", text(&checked.stdout));
    let annotations = text(&checked.stdout);
    assert!(
        annotations.contains("::warning file=") && annotations.contains("has a policy warning::SchemaPolicy advice"),
        "{annotations}"
    );
    let applied = apply(data.path(), &[manifests]);
    assert_eq!(applied.status.code(), Some(0), "{}", text(&applied.stdout));
    let table = text(&applied.stdout);
    assert_eq!(
        row(&table, "Schema", "team-a", "orders")[4..],
        ["1", "1", "True", "Registered"]
    );
    assert!(
        table.contains("Schema team-a/orders has a policy warning:\n  SchemaPolicy advice"),
        "{table}"
    );
}

#[tokio::test]
async fn a_policy_added_later_marks_a_registered_schema_without_removing_its_versions() {
    let data = tempfile::tempdir().unwrap();
    let folder = tempfile::tempdir().unwrap();
    let first = folder.path().join("first.yaml");
    std::fs::write(
        &first,
        format!(
            "{NAMESPACE_A}---\n{}",
            schema("orders", "team-a.orders-value", "  deletionPolicy: HardDelete\n")
        ),
    )
    .unwrap();
    let output = apply(data.path(), &[first.to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stdout));

    let later = folder.path().join("later.yaml");
    std::fs::write(&later, policy("prod", "Deny", NO_HARD_DELETE)).unwrap();
    let output = apply(data.path(), &[first.to_str().unwrap(), later.to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(1), "{}", text(&output.stdout));
    let table = text(&output.stdout);
    assert_eq!(
        row(&table, "Schema", "team-a", "orders")[4..],
        ["1", "1", "False", "PolicyViolation"],
        "the status keeps the version it holds"
    );
    // The stored policy stays in force in a run that names only the Schema.
    let output = apply(data.path(), &[first.to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(1), "{}", text(&output.stdout));
    let stored: Value =
        serde_json::from_str(&std::fs::read_to_string(data.path().join("objects.json")).unwrap()).unwrap();
    assert_eq!(stored["schemaPolicies"][0]["metadata"]["name"], "prod");
    let registry = support::registry::RegistryProcess::start(data.path()).await;
    let versions = served(&registry.url, "/subjects/team-a.orders-value/versions").await;
    assert_eq!(versions, serde_json::json!([1]), "what is registered stays");
}

/// Issue 36 item 3: a tenant repository carries no Namespace manifests, so the example policy
/// (it selects `env: prod` namespaces) matched nothing and team-b's three violations exited 0.
/// Now `check` warns loudly that the labels are unknown (also as a GitHub annotation),
/// `--require-namespace-labels` makes that an error, and the labels can be given with
/// `--namespace-labels` or Namespace documents in a `--policy` file.
#[test]
fn a_tenant_repository_without_namespace_manifests_is_told_and_can_give_the_labels() {
    let tenant = ["examples/policy/20-team-b.yaml"];
    let policy_file = "examples/policy/01-policy.yaml";
    let silent = schemaops(&[&["check", "-o", "github", "--policy", policy_file], &tenant[..]].concat());
    assert_eq!(silent.status.code(), Some(0), "{}", text(&silent.stdout));
    let warning = text(&silent.stderr);
    assert!(
        warning.contains("SchemaPolicy prod selects namespaces by label")
            && warning.contains("namespace team-b are unknown"),
        "{warning}"
    );
    assert!(
        text(&silent.stdout).contains("::warning title=schemaops check: namespace labels unknown::"),
        "{}",
        text(&silent.stdout)
    );

    let strict = schemaops(
        &[
            &["check", "--require-namespace-labels", "--policy", policy_file],
            &tenant[..],
        ]
        .concat(),
    );
    assert_eq!(strict.status.code(), Some(2), "{}", text(&strict.stdout));
    assert!(
        text(&strict.stderr).contains("namespace team-b are unknown"),
        "{}",
        text(&strict.stderr)
    );

    let labelled = schemaops(
        &[
            &[
                "check",
                "--require-namespace-labels",
                "--policy",
                policy_file,
                "--namespace-labels",
                "team-b:env=prod",
            ],
            &tenant[..],
        ]
        .concat(),
    );
    assert_eq!(labelled.status.code(), Some(1), "{}", text(&labelled.stdout));
    let table = text(&labelled.stdout);
    // The table's rows (two spaces before the result), not the explanations under it.
    assert_eq!(table.matches("  would be rejected (").count(), 3, "{table}");

    // The same labels from a file of Namespace documents, as `kubectl get namespaces -o yaml` saves them.
    let from_file = schemaops(
        &[
            &[
                "check",
                "--policy",
                policy_file,
                "--policy",
                "examples/policy/00-namespaces.yaml",
            ],
            &tenant[..],
        ]
        .concat(),
    );
    assert_eq!(from_file.status.code(), Some(1), "{}", text(&from_file.stdout));
    assert!(
        !text(&from_file.stderr).contains("unknown"),
        "{}",
        text(&from_file.stderr)
    );
}

/// An Avro Schema in `namespace` for `subject`.
fn schema_in(namespace: &str, name: &str, subject: &str, text: &str) -> String {
    format!(
        "apiVersion: schemaops.dev/v1alpha1\nkind: Schema\nmetadata:\n  name: {name}\n  namespace: {namespace}\nspec:\n  \
         subject: {subject}\n  schema: '{text}'\n"
    )
}

/// Issue 39 item 9: a policy that matches only Protobuf Schemas refused the only (Avro) claimant
/// of a subject as `SubjectConflict` (its claim was judged without a type, so the Protobuf
/// subject rule applied), and a later claim from another namespace won the subject.
#[test]
fn a_policy_for_protobuf_only_does_not_take_a_subject_from_an_avro_schema() {
    let data = tempfile::tempdir().unwrap();
    let folder = tempfile::tempdir().unwrap();
    let policy = "apiVersion: schemaops.dev/v1alpha1\nkind: SchemaPolicy\nmetadata:\n  name: proto\nspec:\n  \
                  match:\n    namespaces: [analytics]\n    schemaTypes: [PROTOBUF]\n  rules:\n    subjects:\n      \
                  allowed: [\"{namespace}.proto.*\"]\n";
    let record = r#"{"type":"record","name":"Click","fields":[{"name":"a","type":"int"}]}"#;
    let first = folder.path().join("first.yaml");
    std::fs::write(
        &first,
        format!(
            "{policy}---\n{}",
            schema_in("analytics", "clicks", "analytics.avro-value", record)
        ),
    )
    .unwrap();
    let output = apply(data.path(), &[first.to_str().unwrap()]);
    let table = text(&output.stdout);
    assert_eq!(output.status.code(), Some(0), "{table}");
    assert_eq!(
        row(&table, "Schema", "analytics", "clicks")[4..],
        ["1", "1", "True", "Registered"]
    );

    // A later claim from another namespace finds the subject held.
    let later = folder.path().join("later.yaml");
    std::fs::write(&later, schema_in("ads", "clicks", "analytics.avro-value", record)).unwrap();
    let output = apply(data.path(), &[first.to_str().unwrap(), later.to_str().unwrap()]);
    let table = text(&output.stdout);
    assert_eq!(output.status.code(), Some(1), "{table}");
    assert_eq!(
        row(&table, "Schema", "analytics", "clicks")[4..],
        ["1", "1", "True", "Registered"]
    );
    assert_eq!(
        row(&table, "Schema", "ads", "clicks")[6..],
        ["False", "SubjectConflict"]
    );
}

/// Applies `manifests` (one file) with `policy_rules` in a Deny policy for every namespace,
/// and returns the run's table and exit status.
fn apply_under(rules: &str, manifests: &str) -> (String, Option<i32>) {
    let data = tempfile::tempdir().unwrap();
    let folder = tempfile::tempdir().unwrap();
    let file = folder.path().join("manifests.yaml");
    let policy = format!(
        "apiVersion: schemaops.dev/v1alpha1\nkind: SchemaPolicy\nmetadata:\n  name: rules\nspec:\n  rules:\n{rules}"
    );
    std::fs::write(&file, format!("{policy}---\n{manifests}")).unwrap();
    let output = apply(data.path(), &[file.to_str().unwrap()]);
    (text(&output.stdout), output.status.code())
}

/// Issue 39 item 10: with `naming.avroNamespace`, a plain `"string"` key schema (no named
/// type to judge) and a `[record, "null"]` union whose record is in the right namespace failed
/// with "the Avro namespace is ``". The rule judges the named types at the top, so both pass,
/// and a union whose record is elsewhere is refused naming the record.
#[test]
fn the_avro_namespace_rule_passes_a_string_key_and_judges_the_record_in_a_union() {
    let rules = "    naming:\n      avroNamespace: \"com.acme.*\"\n";
    let record = |namespace: &str| {
        format!(
            r#"{{"type":"record","name":"Order","namespace":"{namespace}","fields":[{{"name":"a","type":"int"}}]}}"#
        )
    };
    let manifests = [
        schema_in("team-a", "key", "orders-key", r#""string""#),
        schema_in(
            "team-a",
            "value",
            "orders-value",
            &format!(r#"[{}, "null"]"#, record("com.acme.sales")),
        ),
        schema_in(
            "team-a",
            "other",
            "other-value",
            &format!(r#"["null", {}]"#, record("org.other")),
        ),
    ]
    .join("---\n");
    let (table, status) = apply_under(rules, &manifests);
    assert_eq!(status, Some(1), "{table}");
    assert_eq!(row(&table, "Schema", "team-a", "key")[6..], ["True", "Registered"]);
    assert_eq!(row(&table, "Schema", "team-a", "value")[6..], ["True", "Registered"]);
    assert_eq!(
        row(&table, "Schema", "team-a", "other")[6..],
        ["False", "PolicyViolation"]
    );
    assert!(
        table.contains(
            "naming.avroNamespace at spec.schema: the Avro namespace of `org.other.Order` in the top-level union is \
             `org.other`; it must match `com.acme.*`"
        ),
        "{table}"
    );
}

/// Issue 39 item 11: the CRD documents `schema.type` for CEL, and the summary lacked it
/// ("No such key: type").
#[test]
fn cel_sees_the_schema_type_in_the_summary() {
    let rules = "    validations:\n      - expression: \"schema == null || schema.type == 'AVRO'\"\n        message: \
                 only Avro\n";
    let record = r#"{"type":"record","name":"Order","fields":[{"name":"a","type":"int"}]}"#;
    let json = r#"{"type":"object","properties":{"a":{"type":"integer"}}}"#;
    let manifests = [
        schema_in("team-a", "avro", "avro-value", record),
        schema_in("team-a", "json", "json-value", json).replace("spec:\n", "spec:\n  schemaType: JSON\n"),
    ]
    .join("---\n");
    let (table, status) = apply_under(rules, &manifests);
    assert_eq!(status, Some(1), "{table}");
    assert_eq!(row(&table, "Schema", "team-a", "avro")[6..], ["True", "Registered"]);
    assert_eq!(
        row(&table, "Schema", "team-a", "json")[6..],
        ["False", "PolicyViolation"]
    );
    assert!(table.contains("rule validations[0] at metadata: only Avro"), "{table}");
    assert!(!table.contains("No such key"), "{table}");
}

/// Issue 39 item 13: `{namespace}` is the namespace as it is, and an Avro namespace cannot hold
/// `-`, so `com.acme.{namespace}*` never admitted a Schema from `team-a`. `{namespace_}` is the
/// namespace with every `-` as `_`.
#[test]
fn the_underscored_namespace_placeholder_admits_avro_namespaces_from_hyphenated_namespaces() {
    let rules = "    naming:\n      avroNamespace: \"com.acme.{namespace_}*\"\n";
    let record = |namespace: &str| {
        format!(
            r#"{{"type":"record","name":"Order","namespace":"{namespace}","fields":[{{"name":"a","type":"int"}}]}}"#
        )
    };
    let manifests = [
        schema_in("team-a", "orders", "orders-value", &record("com.acme.team_a.sales")),
        schema_in("team-a", "stolen", "stolen-value", &record("com.acme.team_b.sales")),
    ]
    .join("---\n");
    let (table, status) = apply_under(rules, &manifests);
    assert_eq!(status, Some(1), "{table}");
    assert_eq!(row(&table, "Schema", "team-a", "orders")[6..], ["True", "Registered"]);
    assert_eq!(
        row(&table, "Schema", "team-a", "stolen")[6..],
        ["False", "PolicyViolation"]
    );
    assert!(table.contains("it must match `com.acme.team_a*`"), "{table}");
}
