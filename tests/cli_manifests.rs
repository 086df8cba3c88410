//! Issue 36, items 1 and 2: `check` and `apply` read manifests as the API
//! server judges them (a misspelled field is an error naming its file,
//! document, line and path, with the field meant; `--lenient` makes it a
//! warning), and read what a GitOps repository holds: other kinds,
//! kustomizations and Helm charts are skipped and counted, and `-` reads a
//! rendered stream from standard input. Bad streams (CRLF, a BOM, empty
//! documents, 10,000 documents, duplicates across files) give a precise
//! message or a skip note, and `check` writes nothing.

use std::io::Write as _;
use std::path::Path;
use std::process::{Command, Output, Stdio};

fn schemaops(current_dir: &Path, args: &[&str], stdin: Option<&[u8]>) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_schemaops"))
        .args(args)
        .current_dir(current_dir)
        .env_remove("SCHEMAOPS_DATA")
        .env_remove("SCHEMAOPS_POLICY")
        .stdin(if stdin.is_some() { Stdio::piped() } else { Stdio::null() })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the binary runs");
    if let Some(bytes) = stdin {
        // Written from a thread: a large stream must not wait on a full stdout pipe.
        let mut pipe = child.stdin.take().unwrap();
        let bytes = bytes.to_vec();
        std::thread::spawn(move || pipe.write_all(&bytes));
    }
    child.wait_with_output().unwrap()
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn schema(name: &str, subject: &str) -> String {
    format!(
        "apiVersion: schemaops.dev/v1alpha1\nkind: Schema\nmetadata:\n  name: {name}\nspec:\n  subject: {subject}\n  \
         schema: '{{\"type\":\"record\",\"name\":\"R\",\"fields\":[{{\"name\":\"a\",\"type\":\"int\"}}]}}'\n"
    )
}

fn deployment(name: &str) -> String {
    format!(
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: {name}\nspec:\n  replicas: 1\n  template:\n    \
         spec:\n      containers:\n      - name: app\n        image: nginx\n"
    )
}

/// The 1-based line of the first line of `text` holding `needle`.
fn line_of(text: &str, needle: &str) -> usize {
    text.lines().position(|line| line.contains(needle)).unwrap() + 1
}

/// Every file under `folder`, recursively.
fn files_under(folder: &Path) -> Vec<std::path::PathBuf> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir(folder).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            found.extend(files_under(&path));
        } else {
            found.push(path);
        }
    }
    found.sort();
    found
}

/// `check` and `apply` both refuse `file` (exit 2) with `expected` on standard error, and neither writes.
fn assert_refused_by_check_and_apply(file: &Path, expected: &str) {
    let cwd = tempfile::tempdir().unwrap();
    let data = cwd.path().join("data");
    let path = file.to_str().unwrap();
    for args in [
        vec!["check", path],
        vec!["apply", "--data", data.to_str().unwrap(), path],
    ] {
        let output = schemaops(cwd.path(), &args, None);
        assert_eq!(output.status.code(), Some(2), "{args:?}: {}", text(&output.stderr));
        assert!(
            text(&output.stderr).contains(expected),
            "{args:?} should say\n  {expected}\nbut said\n{}",
            text(&output.stderr)
        );
        assert!(output.stdout.is_empty(), "{}", text(&output.stdout));
    }
    assert!(
        !data.join("objects.json").exists(),
        "apply stored nothing: {:?}",
        files_under(cwd.path())
    );
    assert!(
        files_under(cwd.path()).iter().all(|path| path.starts_with(&data)),
        "check wrote nothing: {:?}",
        files_under(cwd.path())
    );
}

#[test]
fn a_misspelled_field_in_each_kind_is_refused_with_its_path_line_and_the_field_meant() {
    let folder = tempfile::tempdir().unwrap();
    let cases = [
        (
            "schema.yaml",
            "apiVersion: schemaops.dev/v1alpha1\nkind: Schema\nmetadata:\n  name: orders\nspec:\n  subject: orders-value\n  \
             schemaTyp: PROTOBUF\n  schema: 'syntax = \"proto3\"; message M {}'\n",
            "schema.yaml (document 1), line 7: spec.schemaTyp: unknown field (did you mean schemaType?)",
        ),
        (
            "config.yaml",
            "# the level of orders\n---\napiVersion: schemaops.dev/v1alpha1\nkind: SubjectConfig\nmetadata:\n  name: \
             orders\nspec:\n  subject: orders-value\n  compatibilty: FULL\n",
            "config.yaml (document 1), line 9: spec.compatibilty: unknown field (did you mean compatibility?)",
        ),
        (
            "policy.yaml",
            "apiVersion: schemaops.dev/v1alpha1\nkind: SchemaPolicy\nmetadata:\n  name: naming\nspec:\n  rules:\n    \
             naming:\n      avroNamespce: com.acme.*\n",
            "policy.yaml (document 1), line 8: spec.rules.naming.avroNamespce: unknown field (did you mean \
             avroNamespace?)",
        ),
        (
            "metadata.yaml",
            &format!(
                "{}---\n{}",
                schema("fine", "fine-value"),
                schema("orders", "orders-value").replace("  name: orders\n", "  name: orders\n  lables:\n    a: b\n")
            ),
            "metadata.yaml (document 2), line 13: metadata.lables: unknown field (did you mean labels?)",
        ),
        (
            "enum.yaml",
            &schema("orders", "orders-value").replace("spec:\n", "spec:\n  schemaType: PROTOBUFF\n"),
            "enum.yaml (document 1), line 6: spec.schemaType: unsupported value \"PROTOBUFF\"; supported values: \
             \"AVRO\", \"JSON\", \"PROTOBUF\" (did you mean \"PROTOBUF\"?)",
        ),
        (
            "type.yaml",
            &schema("orders", "orders-value").replace(
                "spec:\n",
                "spec:\n  references:\n  - name: a.B\n    subject: b\n    version: latest\n",
            ),
            "type.yaml (document 1), line 9: spec.references[0].version: must be of type integer, not string",
        ),
    ];
    for (name, body, expected) in cases {
        let file = folder.path().join(name);
        std::fs::write(&file, body).unwrap();
        assert_refused_by_check_and_apply(&file, expected);
    }
    // A SchemaPolicy given with --policy is held to the same schema.
    let manifests = folder.path().join("ok.yaml");
    std::fs::write(&manifests, schema("orders", "orders-value")).unwrap();
    let policy = folder.path().join("policy.yaml");
    let output = schemaops(
        folder.path(),
        &[
            "check",
            "--policy",
            policy.to_str().unwrap(),
            manifests.to_str().unwrap(),
        ],
        None,
    );
    assert_eq!(output.status.code(), Some(2), "{}", text(&output.stderr));
    assert!(
        text(&output.stderr).contains("spec.rules.naming.avroNamespce: unknown field"),
        "{}",
        text(&output.stderr)
    );
}

#[test]
fn every_misspelled_field_of_every_document_is_named_at_once() {
    let folder = tempfile::tempdir().unwrap();
    let file = folder.path().join("two.yaml");
    let first = schema("a", "a-value").replace("spec:\n", "spec:\n  deletionPolicy: Retian\n");
    let second = schema("b", "b-value").replace("spec:\n", "spec:\n  managmentPolicy: Observe\n");
    std::fs::write(&file, format!("{first}---\n{second}")).unwrap();
    let output = schemaops(folder.path(), &["check", file.to_str().unwrap()], None);
    assert_eq!(output.status.code(), Some(2));
    let stderr = text(&output.stderr);
    assert!(
        stderr.contains("two.yaml (document 1), line 6: spec.deletionPolicy: unsupported value \"Retian\"")
            && stderr.contains("(did you mean \"Retain\"?)"),
        "{stderr}"
    );
    assert!(
        stderr.contains(
            "two.yaml (document 2), line 15: spec.managmentPolicy: unknown field (did you mean managementPolicy?)"
        ),
        "{stderr}"
    );
}

#[test]
fn lenient_turns_unknown_fields_into_warnings_but_not_wrong_values() {
    let cwd = tempfile::tempdir().unwrap();
    let file = cwd.path().join("orders.yaml");
    let config = "apiVersion: schemaops.dev/v1alpha1\nkind: SubjectConfig\nmetadata:\n  name: orders\nspec:\n  subject: \
                  orders-value\n  compatibilty: FULL\n";
    std::fs::write(&file, format!("{}---\n{config}", schema("orders", "orders-value"))).unwrap();
    let path = file.to_str().unwrap();
    let warning = "schemaops: warning: ";
    let located = "orders.yaml (document 2), line 15: spec.compatibilty: unknown field (did you mean compatibility?); \
                   ignored under --lenient";

    let output = schemaops(cwd.path(), &["check", "--lenient", path], None);
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    let stderr = text(&output.stderr);
    assert!(stderr.contains(warning) && stderr.contains(located), "{stderr}");
    assert!(
        text(&output.stdout).contains("would register as version 1"),
        "{}",
        text(&output.stdout)
    );

    let data = cwd.path().join("data");
    let output = schemaops(
        cwd.path(),
        &["apply", "--lenient", "--data", data.to_str().unwrap(), path],
        None,
    );
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    assert!(text(&output.stderr).contains(located), "{}", text(&output.stderr));

    // A value the enum lacks stays an error.
    std::fs::write(&file, config.replace("compatibilty: FULL", "compatibility: FULLY")).unwrap();
    let output = schemaops(cwd.path(), &["check", "--lenient", path], None);
    assert_eq!(output.status.code(), Some(2));
    assert!(
        text(&output.stderr).contains("spec.compatibility: unsupported value \"FULLY\""),
        "{}",
        text(&output.stderr)
    );
}

/// A GitOps folder: an app with a Deployment and a kustomization that is not
/// even valid YAML, a Helm chart whose templates are not YAML until rendered,
/// a CI workflow, a README, and the Schemas.
fn gitops_repository() -> tempfile::TempDir {
    let repository = tempfile::tempdir().unwrap();
    let root = repository.path();
    for folder in ["apps/orders", "charts/web/templates", "schemas", ".github/workflows"] {
        std::fs::create_dir_all(root.join(folder)).unwrap();
    }
    std::fs::write(root.join("apps/orders/deployment.yaml"), deployment("orders")).unwrap();
    std::fs::write(
        root.join("apps/orders/kustomization.yaml"),
        "resources:\n- deployment.yaml\n  patches: [\n",
    )
    .unwrap();
    std::fs::write(root.join("apps/orders/schema.yaml"), schema("orders", "orders-value")).unwrap();
    std::fs::write(
        root.join("charts/web/Chart.yaml"),
        "apiVersion: v2\nname: web\nversion: 0.1.0\n",
    )
    .unwrap();
    std::fs::write(
        root.join("charts/web/templates/schema.yaml"),
        "apiVersion: schemaops.dev/v1alpha1\nkind: Schema\nmetadata:\n  name: {{ .Release.Name }}\n{{- if .Values.x }}\n",
    )
    .unwrap();
    std::fs::write(root.join("charts/web/values.yaml"), "x: true\n").unwrap();
    std::fs::write(
        root.join(".github/workflows/ci.yml"),
        "on: push\njobs:\n  check:\n    runs-on: ubuntu-latest\n",
    )
    .unwrap();
    std::fs::write(root.join("README.md"), "# manifests\n").unwrap();
    std::fs::write(
        root.join("schemas/payments.yaml"),
        format!(
            "{}---\n{}",
            schema("payments", "payments-value"),
            deployment("payments")
        ),
    )
    .unwrap();
    repository
}

#[test]
fn a_gitops_folder_is_checked_with_other_kinds_kustomizations_and_charts_skipped_and_counted() {
    let repository = gitops_repository();
    let before = files_under(repository.path());
    let output = schemaops(repository.path(), &["check", "."], None);
    let (stdout, stderr) = (text(&output.stdout), text(&output.stderr));
    assert_eq!(output.status.code(), Some(0), "{stdout}{stderr}");
    assert!(stdout.contains("2 would register"), "{stdout}");
    assert!(
        stdout.contains(
            "skipped 2 documents of kinds schemaops does not manage (2 apps/v1 Deployment), 1 document that is no \
             Kubernetes object, 1 kustomization, 1 Helm chart"
        ),
        "{stdout}"
    );
    assert!(
        stderr.contains(
            "schemaops: note: ./apps/orders/kustomization.yaml: a kustomization, skipped; to check what it renders: \
             kustomize build ./apps/orders | schemaops check -"
        ),
        "{stderr}"
    );
    assert!(
        stderr.contains(
            "schemaops: note: ./charts/web: a Helm chart, skipped with its templates; to check what it renders: helm \
             template ./charts/web | schemaops check -"
        ),
        "{stderr}"
    );
    assert_eq!(files_under(repository.path()), before, "check writes nothing");

    // Machine output stays machine output: the count goes to standard error.
    let output = schemaops(repository.path(), &["check", "-o", "json", "."], None);
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    let report: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(report["objects"].as_array().unwrap().len(), 2);
    assert!(text(&output.stderr).contains("schemaops: note: skipped 2 documents"));

    let data = repository.path().join(".schemaops");
    let output = schemaops(repository.path(), &["apply", "."], None);
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    assert!(text(&output.stdout).contains("1 kustomization, 1 Helm chart"));
    assert!(data.join("objects.json").exists());
}

#[test]
fn a_folder_with_nothing_schemaops_reads_is_an_error_that_says_what_was_skipped() {
    let folder = tempfile::tempdir().unwrap();
    std::fs::write(folder.path().join("deployment.yaml"), deployment("web")).unwrap();
    std::fs::write(
        folder.path().join("kustomization.yaml"),
        "resources: [deployment.yaml]\n",
    )
    .unwrap();
    let output = schemaops(folder.path(), &["check", "."], None);
    assert_eq!(output.status.code(), Some(2));
    let stderr = text(&output.stderr);
    assert!(
        stderr.contains(
            "no manifests found in . (skipped 1 document of kinds schemaops does not manage (1 apps/v1 Deployment), \
             1 kustomization)"
        ),
        "{stderr}"
    );
    assert!(stderr.contains("kustomize build . | schemaops check -"), "{stderr}");
}

/// What `kustomize build overlays/prod` prints: a Namespace, a ConfigMap, a
/// Service, a Deployment, the Schemas and a SubjectConfig, all namespaced.
fn rendered_stream() -> String {
    let namespaced = |document: String| document.replace("metadata:\n", "metadata:\n  namespace: prod\n");
    [
        "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: prod\n".to_owned(),
        namespaced("apiVersion: v1\nkind: Service\nmetadata:\n  name: web\nspec:\n  ports:\n  - port: 80\n".to_owned()),
        namespaced(deployment("web")),
        namespaced(schema("orders", "orders-value")),
        namespaced(
            "apiVersion: schemaops.dev/v1alpha1\nkind: SubjectConfig\nmetadata:\n  name: orders\nspec:\n  subject: \
             orders-value\n  compatibility: FULL\n"
                .to_owned(),
        ),
        namespaced(schema("payments", "payments-value")),
    ]
    .join("---\n")
}

#[test]
fn a_rendered_stream_on_standard_input_is_checked_and_named_stdin() {
    let cwd = tempfile::tempdir().unwrap();
    let stream = rendered_stream();
    let output = schemaops(cwd.path(), &["check", "-"], Some(stream.as_bytes()));
    let stdout = text(&output.stdout);
    assert_eq!(output.status.code(), Some(0), "{stdout}{}", text(&output.stderr));
    for (name, line) in [
        ("orders", line_of(&stream, "name: orders")),
        ("payments", line_of(&stream, "name: payments")),
    ] {
        // The row points at the document's first line, the one above `metadata:`'s `name:`.
        let source = format!("<stdin>:{}", line - 4);
        assert!(
            stdout
                .lines()
                .any(|row| row.starts_with("Schema") && row.contains(name) && row.contains(&source)),
            "{source}: {stdout}"
        );
    }
    assert!(
        stdout.contains("skipped 2 documents of kinds schemaops does not manage (1 v1 Service, 1 apps/v1 Deployment)"),
        "{stdout}"
    );
    assert!(files_under(cwd.path()).is_empty(), "check writes nothing");

    // A misspelling is named by the stream's document and line.
    let typo = stream.replace("  compatibility: FULL", "  compatibilty: FULL");
    let output = schemaops(cwd.path(), &["check", "-"], Some(typo.as_bytes()));
    assert_eq!(output.status.code(), Some(2));
    let line = line_of(&typo, "compatibilty");
    assert!(
        text(&output.stderr).contains(&format!(
            "<stdin> (document 5), line {line}: spec.compatibilty: unknown field (did you mean compatibility?)"
        )),
        "{}",
        text(&output.stderr)
    );

    // `apply -` reads the same stream; `-` given twice is read once.
    let data = cwd.path().join("data");
    let output = schemaops(
        cwd.path(),
        &["apply", "--data", data.to_str().unwrap(), "-o", "json", "-", "-"],
        Some(stream.as_bytes()),
    );
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    let list: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(list["items"].as_array().unwrap().len(), 3);
}

#[test]
fn windows_line_endings_a_bom_and_empty_documents_keep_lines_and_documents_exact() {
    let cwd = tempfile::tempdir().unwrap();
    let stream = format!(
        "\u{feff}---\n---\n# nothing here\n---\n{}---\n\n---\n{}",
        schema("orders", "orders-value"),
        schema("payments", "payments-value").replace("spec:\n", "spec:\n  schemaTyp: AVRO\n")
    )
    .replace('\n', "\r\n");
    let output = schemaops(cwd.path(), &["check", "-"], Some(stream.as_bytes()));
    assert_eq!(output.status.code(), Some(2), "{}", text(&output.stdout));
    assert!(
        text(&output.stderr).contains("<stdin> (document 5), line 20: spec.schemaTyp: unknown field"),
        "{}",
        text(&output.stderr)
    );
    let fixed = stream.replace("  schemaTyp: AVRO\r\n", "");
    let output = schemaops(cwd.path(), &["check", "-"], Some(fixed.as_bytes()));
    let stdout = text(&output.stdout);
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    assert!(
        stdout.contains("<stdin>:5") && stdout.contains("<stdin>:15"),
        "{stdout}"
    );
    assert!(!stdout.contains('\r'), "{stdout:?}");

    for empty in ["", "\u{feff}", "---\r\n---\r\n", "# only comments\n"] {
        let output = schemaops(cwd.path(), &["check", "-"], Some(empty.as_bytes()));
        assert_eq!(output.status.code(), Some(2), "{empty:?}");
        assert!(
            text(&output.stderr).contains("no manifests found in <stdin>"),
            "{empty:?}: {}",
            text(&output.stderr)
        );
    }
    assert!(files_under(cwd.path()).is_empty(), "check writes nothing");
}

#[test]
fn ten_thousand_documents_are_read_whole() {
    let cwd = tempfile::tempdir().unwrap();
    let mut documents: Vec<String> = (0..10_000)
        .map(|index| match index % 1000 {
            0 => schema(&format!("s{index}"), &format!("s{index}-value")),
            _ => deployment(&format!("d{index}")),
        })
        .collect();
    let stream = documents.join("---\n");
    let output = schemaops(cwd.path(), &["check", "-"], Some(stream.as_bytes()));
    let stdout = text(&output.stdout);
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    assert!(stdout.contains("10 would register"), "{stdout}");
    assert!(
        stdout.contains("skipped 9990 documents of kinds schemaops does not manage (9990 apps/v1 Deployment)"),
        "{stdout}"
    );

    // Every document a Schema, the last one misspelled: all are validated, none registered.
    documents = (0..10_000)
        .map(|index| schema(&format!("s{index}"), &format!("s{index}-value")))
        .collect();
    let last = documents.last_mut().unwrap();
    *last = last.replace("spec:\n", "spec:\n  schemaTyp: AVRO\n");
    let stream = documents.join("---\n");
    let output = schemaops(cwd.path(), &["check", "-"], Some(stream.as_bytes()));
    assert_eq!(output.status.code(), Some(2));
    let line = 9_999 * 8 + 6;
    assert!(
        text(&output.stderr).contains(&format!("<stdin> (document 10000), line {line}: spec.schemaTyp")),
        "{}",
        text(&output.stderr)
    );
}

#[test]
fn a_later_document_for_the_same_object_is_an_edit_of_it_across_files() {
    let folder = tempfile::tempdir().unwrap();
    std::fs::write(folder.path().join("a.yaml"), schema("orders", "orders-value")).unwrap();
    let edited = schema("orders", "orders-value").replace(
        r#"{"name":"a","type":"int"}"#,
        r#"{"name":"a","type":"int"},{"name":"b","type":"int","default":0}"#,
    );
    std::fs::write(folder.path().join("b.yaml"), edited).unwrap();
    let output = schemaops(folder.path(), &["check", "."], None);
    let stdout = text(&output.stdout);
    assert_eq!(output.status.code(), Some(0), "{stdout}{}", text(&output.stderr));
    let rows: Vec<&str> = stdout.lines().filter(|line| line.starts_with("Schema ")).collect();
    assert_eq!(rows.len(), 1, "one object: {stdout}");
    assert!(
        rows[0].contains("./b.yaml:1") && rows[0].contains("would register as version 2"),
        "{stdout}"
    );
}

/// Issue 40: a Schema or SubjectConfig whose `spec.registryRef` names a connection that is
/// not among the manifests is refused by name, with its ref, never judged against or written
/// to this command's registry; a plain Schema beside it is not written either.
#[test]
fn an_object_bound_to_a_connection_not_among_the_manifests_is_refused() {
    let folder = tempfile::tempdir().unwrap();
    let bound = format!(
        "{}  registryRef:\n    kind: SchemaRegistry\n    name: team-registry\n",
        schema("orders", "orders-value")
    );
    let config = "apiVersion: schemaops.dev/v1alpha1\nkind: SubjectConfig\nmetadata:\n  name: payments\n  \
                  namespace: team-b\nspec:\n  subject: payments-value\n  compatibility: FULL\n  registryRef:\n    \
                  kind: ClusterSchemaRegistry\n    name: shared\n";
    let file = folder.path().join("bound.yaml");
    std::fs::write(
        &file,
        format!("{}---\n{bound}---\n{config}", schema("plain", "plain-value")),
    )
    .unwrap();
    let name = file.display().to_string();
    assert_refused_by_check_and_apply(
        &file,
        &format!(
            "{name} (document 2): Schema default/orders names spec.registryRef SchemaRegistry/team-registry: no \
             such connection among the manifests (nor stored by an earlier apply): add a SchemaRegistry \
             team-registry in namespace default to the files"
        ),
    );
    assert_refused_by_check_and_apply(
        &file,
        &format!(
            "{name} (document 3): SubjectConfig team-b/payments names spec.registryRef ClusterSchemaRegistry/shared: \
             no such connection among the manifests (nor stored by an earlier apply): add a ClusterSchemaRegistry \
             shared to the files"
        ),
    );
}
