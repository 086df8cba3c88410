//! Issue 40, item 6: `apply` and `check` without a cluster, with two
//! registry connections in one folder. Two real `schemaops registry`
//! processes take writes only with their own password; a SchemaRegistry of
//! namespace team-a points at one, a ClusterSchemaRegistry allowed to team-b
//! at the other, and an `embedded: {}` ClusterSchemaRegistry means the data
//! folder's registry. The passwords come from a `--registry-credentials`
//! file, never from the Secrets the manifests name. Schemas of the same
//! subject in both namespaces land in their own registries without a claim
//! conflict; `check` judges each against its own registry; `export
//! --registry-ref` writes objects bound to a connection; a ref that
//! cannot be followed, a namespace a connection does not allow, and missing
//! or wrong credentials are refused by name with nothing written.

use std::path::Path;
use std::process::{Command, Output};

use serde_json::Value;

mod support;

use support::registry::RegistryProcess;

const ORDER_V1: &str = r#"{"type":"record","name":"Order","fields":[{"name":"id","type":"string"}]}"#;
/// Drops `id`, adds a field without a default: not BACKWARD compatible with v1.
const ORDER_BROKEN: &str = r#"{"type":"record","name":"Order","fields":[{"name":"total","type":"long"}]}"#;
const PAYMENT_V1: &str = r#"{"type":"record","name":"Payment","fields":[{"name":"amount","type":"long"}]}"#;
const PLAIN_V1: &str = r#"{"type":"record","name":"Plain","fields":[{"name":"a","type":"int"}]}"#;

fn schemaops(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_schemaops"))
        .args(args)
        .env("RUST_LOG", "error")
        .env_remove("SCHEMAOPS_DATA")
        .env_remove("SCHEMAOPS_POLICY")
        .env_remove("SCHEMAOPS_REGISTRY_URL")
        .env_remove("SCHEMAOPS_REGISTRY_CREDENTIALS")
        .output()
        .expect("the schemaops binary runs")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn path(path: &Path) -> &str {
    path.to_str().unwrap()
}

/// The registry's live versions of `subject` at `url` (empty when it has none).
async fn versions(url: &str, subject: &str) -> Vec<i64> {
    let response = support::http_client()
        .get(format!("{url}/subjects/{subject}/versions"))
        .send()
        .await
        .unwrap();
    if response.status() == 404 {
        return Vec::new();
    }
    response.json().await.unwrap()
}

/// The schema text of `subject`'s latest version at `url`.
async fn latest(url: &str, subject: &str) -> String {
    let body: Value = support::http_client()
        .get(format!("{url}/subjects/{subject}/versions/latest"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    body["schema"].as_str().unwrap_or_default().to_owned()
}

fn schema(namespace: &str, name: &str, subject: &str, text: &str, registry_ref: Option<(&str, &str)>) -> String {
    let reference = registry_ref
        .map(|(kind, name)| format!("  registryRef: {{kind: {kind}, name: {name}}}\n"))
        .unwrap_or_default();
    format!(
        "---\napiVersion: schemaops.dev/v1alpha1\nkind: Schema\nmetadata:\n  name: {name}\n  namespace: {namespace}\n\
         spec:\n  subject: {subject}\n  schema: '{text}'\n{reference}"
    )
}

/// Nothing listens there: connecting is refused at once.
const DEAD_URL: &str = "http://127.0.0.1:1";

/// The two external connections (team-registry's first URL is dead: it fails over to `alpha`)
/// and the embedded one.
fn connections(alpha: &str, beta: &str) -> String {
    format!(
        "---\napiVersion: schemaops.dev/v1alpha1\nkind: SchemaRegistry\nmetadata:\n  name: team-registry\n  \
         namespace: team-a\nspec:\n  external:\n    urls: [\"{DEAD_URL}\", \"{alpha}\"]\n    auth:\n      basic:\n        \
         username: ci\n        passwordSecretRef: {{name: alpha-credentials, key: password}}\n\
         ---\napiVersion: schemaops.dev/v1alpha1\nkind: ClusterSchemaRegistry\nmetadata:\n  name: shared\nspec:\n  \
         external:\n    urls: [\"{beta}\"]\n    auth:\n      basic:\n        username: ci\n        \
         passwordSecretRef: {{name: beta-credentials, key: password, namespace: platform}}\n  allowedNamespaces:\n    \
         names: [team-b]\n\
         ---\napiVersion: schemaops.dev/v1alpha1\nkind: ClusterSchemaRegistry\nmetadata:\n  name: local\nspec:\n  \
         embedded: {{}}\n  allowedNamespaces:\n    selector: {{matchLabels: {{tier: local}}}}\n\
         ---\napiVersion: v1\nkind: Namespace\nmetadata:\n  name: team-a\n  labels: {{tier: local}}\n"
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_connections_in_one_folder_are_checked_and_applied_each_against_its_own_registry() {
    let alpha_data = tempfile::tempdir().unwrap();
    let alpha = RegistryProcess::start_with(alpha_data.path(), &["--write-credentials", "ci:alpha-pw"]).await;
    let beta_data = tempfile::tempdir().unwrap();
    let beta = RegistryProcess::start_with(beta_data.path(), &["--write-credentials", "ci:beta-pw"]).await;

    let work = tempfile::tempdir().unwrap();
    let manifests = work.path().join("manifests");
    std::fs::create_dir(&manifests).unwrap();
    std::fs::write(manifests.join("connections.yaml"), connections(&alpha.url, &beta.url)).unwrap();
    // One subject in both namespaces: each lives in its own registry, so neither claims the other's.
    let schemas = [
        schema(
            "team-a",
            "orders",
            "orders-value",
            ORDER_V1,
            Some(("SchemaRegistry", "team-registry")),
        ),
        schema(
            "team-b",
            "orders",
            "orders-value",
            PAYMENT_V1,
            Some(("ClusterSchemaRegistry", "shared")),
        ),
        schema(
            "team-a",
            "local",
            "local-value",
            PLAIN_V1,
            Some(("ClusterSchemaRegistry", "local")),
        ),
        schema("default", "plain", "plain-value", PLAIN_V1, None),
    ];
    std::fs::write(manifests.join("schemas.yaml"), schemas.concat()).unwrap();
    let credentials = work.path().join("credentials.yaml");
    // The Secrets the manifests name do not exist here: only this file is read.
    std::fs::write(
        &credentials,
        "SchemaRegistry/team-a/team-registry:\n  password: alpha-pw\nClusterSchemaRegistry/shared:\n  password: beta-pw\n",
    )
    .unwrap();
    let data = work.path().join("data");

    // check: each Schema would become version 1 of its own registry's subject; nothing is written.
    let output = schemaops(&[
        "check",
        "--registry-credentials",
        path(&credentials),
        "-o",
        "json",
        path(&manifests),
    ]);
    let stdout = text(&output.stdout);
    assert_eq!(output.status.code(), Some(0), "{stdout}{}", text(&output.stderr));
    let report: Value = serde_json::from_str(&stdout).unwrap();
    let outcomes: Vec<(String, String)> = report["objects"]
        .as_array()
        .unwrap_or_else(|| panic!("objects listed: {report:#}"))
        .iter()
        .map(|object| {
            (
                format!(
                    "{}/{}",
                    object["namespace"].as_str().unwrap(),
                    object["name"].as_str().unwrap()
                ),
                object["outcome"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    assert_eq!(outcomes.len(), 4, "{report:#}");
    assert!(outcomes.iter().all(|(_, outcome)| outcome == "register"), "{report:#}");
    let against = report["against"].as_str().unwrap_or_default();
    assert!(
        against.contains(&format!(
            "SchemaRegistry/team-a/team-registry: the registry at {DEAD_URL}, then {}",
            alpha.url
        )) && against.contains(&format!("ClusterSchemaRegistry/shared: the registry at {}", beta.url)),
        "{report:#}"
    );
    assert!(
        versions(&alpha.url, "orders-value").await.is_empty(),
        "check writes nothing"
    );
    assert!(
        versions(&beta.url, "orders-value").await.is_empty(),
        "check writes nothing"
    );

    // A policy that lets team-a use only the local connection: its Schema bound to team-registry
    // is rejected by check, the others pass.
    let policy = work.path().join("policy.yaml");
    std::fs::write(
        &policy,
        "apiVersion: schemaops.dev/v1alpha1\nkind: SchemaPolicy\nmetadata:\n  name: team-a-registries\nspec:\n  \
         match:\n    namespaces: [team-a]\n  rules:\n    registries:\n      allowed: [{kind: ClusterSchemaRegistry, \
         name: local}]\n",
    )
    .unwrap();
    let output = schemaops(&[
        "check",
        "--registry-credentials",
        path(&credentials),
        "--policy",
        path(&policy),
        "-o",
        "json",
        path(&manifests),
    ]);
    let stdout = text(&output.stdout);
    assert_eq!(output.status.code(), Some(1), "{stdout}{}", text(&output.stderr));
    let report: Value = serde_json::from_str(&stdout).unwrap();
    let rejected: Vec<&Value> = report["objects"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|object| object["outcome"] == "rejected")
        .collect();
    assert_eq!(rejected.len(), 1, "{report:#}");
    assert_eq!(
        (rejected[0]["namespace"].as_str(), rejected[0]["name"].as_str()),
        (Some("team-a"), Some("orders"))
    );
    assert!(
        rejected[0]["message"]
            .as_str()
            .unwrap_or_default()
            .contains("namespace team-a may not use SchemaRegistry/team-registry"),
        "{report:#}"
    );

    // apply: each Schema lands in its own registry.
    let output = schemaops(&[
        "apply",
        "--data",
        path(&data),
        "--registry-credentials",
        path(&credentials),
        path(&manifests),
    ]);
    let stdout = text(&output.stdout);
    assert_eq!(output.status.code(), Some(0), "{stdout}{}", text(&output.stderr));
    assert_eq!(versions(&alpha.url, "orders-value").await, [1]);
    assert_eq!(latest(&alpha.url, "orders-value").await, ORDER_V1);
    assert_eq!(versions(&beta.url, "orders-value").await, [1]);
    assert_eq!(latest(&beta.url, "orders-value").await, PAYMENT_V1);
    for url in [&alpha.url, &beta.url] {
        assert!(
            versions(url, "plain-value").await.is_empty(),
            "the unbound Schema stays local"
        );
        assert!(
            versions(url, "local-value").await.is_empty(),
            "the embedded one stays local"
        );
    }

    // export --registry-ref writes objects bound to the connection; checked with it, beta's
    // subject is unchanged (the round trip holds), and the objects name their connection.
    let exported = work.path().join("exported");
    let output = schemaops(&[
        "export",
        "--registry-url",
        &beta.url,
        "--namespace",
        "team-b",
        "--registry-ref",
        "ClusterSchemaRegistry/shared",
        "--out",
        path(&exported),
    ]);
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    let written = std::fs::read_to_string(exported.join("orders-value.yaml")).unwrap();
    assert_eq!(
        written.matches("registryRef:").count(),
        1,
        "the Schema is bound to the connection: {written}"
    );
    assert!(
        written.contains("kind: ClusterSchemaRegistry") && written.contains("name: shared"),
        "{written}"
    );
    let output = schemaops(&[
        "check",
        "--registry-credentials",
        path(&credentials),
        path(&manifests.join("connections.yaml")),
        path(&exported),
    ]);
    let stdout = text(&output.stdout);
    assert_eq!(output.status.code(), Some(0), "{stdout}{}", text(&output.stderr));
    assert!(stdout.contains("unchanged (version 1)"), "{stdout}");
    let output = schemaops(&[
        "export",
        "--registry-url",
        &beta.url,
        "--registry-ref",
        "Shared",
        "--out",
        path(&work.path().join("refused")),
    ]);
    assert_eq!(output.status.code(), Some(2), "{}", text(&output.stderr));
    assert!(
        text(&output.stderr)
            .contains("--registry-ref `Shared` is not SchemaRegistry/NAME or ClusterSchemaRegistry/NAME"),
        "{}",
        text(&output.stderr)
    );

    // check again with an incompatible edit of team-a's Schema: judged against alpha, which holds
    // version 1, it is rejected; the same text was never in beta, so team-b is unaffected.
    let edited = manifests.join("schemas.yaml");
    std::fs::write(&edited, schemas.concat().replacen(ORDER_V1, ORDER_BROKEN, 1)).unwrap();
    let output = schemaops(&[
        "check",
        "--data",
        path(&data),
        "--registry-credentials",
        path(&credentials),
        "-o",
        "json",
        path(&manifests),
    ]);
    let stdout = text(&output.stdout);
    assert_eq!(output.status.code(), Some(1), "{stdout}{}", text(&output.stderr));
    let report: Value = serde_json::from_str(&stdout).unwrap();
    let outcome_of = |namespace: &str, name: &str| {
        report["objects"]
            .as_array()
            .unwrap()
            .iter()
            .find(|object| object["namespace"] == namespace && object["name"] == name)
            .map(|object| object["outcome"].as_str().unwrap().to_owned())
            .unwrap_or_else(|| panic!("{namespace}/{name} listed: {report:#}"))
    };
    assert_eq!(outcome_of("team-a", "orders"), "rejected", "{report:#}");
    assert_eq!(outcome_of("team-b", "orders"), "unchanged", "{report:#}");
    assert_eq!(outcome_of("team-a", "local"), "unchanged", "{report:#}");
    assert_eq!(versions(&alpha.url, "orders-value").await, [1], "check writes nothing");

    // Moving a subject between registries is not an edit: the ref is immutable, as in a cluster.
    std::fs::write(
        &edited,
        schemas.concat().replacen(
            "{kind: SchemaRegistry, name: team-registry}",
            "{kind: ClusterSchemaRegistry, name: local}",
            1,
        ),
    )
    .unwrap();
    let output = schemaops(&[
        "apply",
        "--data",
        path(&data),
        "--registry-credentials",
        path(&credentials),
        path(&manifests),
    ]);
    let stderr = text(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("spec.registryRef is immutable: Schema orders is bound to SchemaRegistry/team-registry"),
        "{stderr}"
    );

    // The embedded connection and the unbound Schema live in the data folder's registry.
    let local = RegistryProcess::start(&data).await;
    assert_eq!(versions(&local.url, "local-value").await, [1]);
    assert_eq!(versions(&local.url, "plain-value").await, [1]);
    assert!(versions(&local.url, "orders-value").await.is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refs_that_cannot_be_followed_are_refused_by_name_with_nothing_written() {
    let alpha_data = tempfile::tempdir().unwrap();
    let alpha = RegistryProcess::start_with(alpha_data.path(), &["--write-credentials", "ci:alpha-pw"]).await;
    let work = tempfile::tempdir().unwrap();
    let connections = connections(&alpha.url, "http://127.0.0.1:9");
    let credentials = work.path().join("credentials.yaml");
    let data = work.path().join("data");
    let refused = |manifest: &str, credentials_text: Option<&str>, expected: &[&str]| {
        let file = work.path().join("manifests.yaml");
        std::fs::write(&file, format!("{connections}{manifest}")).unwrap();
        let mut flags = Vec::new();
        if let Some(credentials_text) = credentials_text {
            std::fs::write(&credentials, credentials_text).unwrap();
            flags = vec!["--registry-credentials", path(&credentials)];
        }
        for command in ["check", "apply"] {
            let mut args = vec![command];
            if command == "apply" {
                args.extend(["--data", path(&data)]);
            }
            args.extend(&flags);
            args.push(path(&file));
            let output = schemaops(&args);
            let stderr = text(&output.stderr);
            assert_eq!(
                output.status.code(),
                Some(2),
                "{args:?}: {stderr}{}",
                text(&output.stdout)
            );
            for expected in expected {
                assert!(
                    stderr.contains(expected),
                    "{args:?} should say\n  {expected}\nbut said\n{stderr}"
                );
            }
            assert!(!stderr.contains("alpha-pw") && !stderr.contains("wrong-pw"), "{stderr}");
            assert!(!data.join("objects.json").exists(), "{args:?} stored nothing");
        }
    };
    let bound_to = |namespace: &str, kind: &str, name: &str| {
        schema(namespace, "orders", "orders-value", ORDER_V1, Some((kind, name)))
    };

    // A SchemaRegistry of another namespace is not found from this one.
    refused(
        &bound_to("team-b", "SchemaRegistry", "team-registry"),
        Some("SchemaRegistry/team-a/team-registry:\n  password: alpha-pw\n"),
        &[
            "Schema team-b/orders names spec.registryRef SchemaRegistry/team-registry: no such connection among \
           the manifests (nor stored by an earlier apply): add a SchemaRegistry team-registry in namespace team-b",
        ],
    );
    // A cluster connection that does not allow the namespace, by name or by labels.
    refused(
        &bound_to("team-c", "ClusterSchemaRegistry", "shared"),
        None,
        &[
            "Schema team-c/orders names spec.registryRef ClusterSchemaRegistry/shared: ClusterSchemaRegistry/shared \
           does not allow namespace team-c",
        ],
    );
    refused(
        &bound_to("team-b", "ClusterSchemaRegistry", "local"),
        None,
        &["ClusterSchemaRegistry/local does not allow namespace team-b"],
    );
    // No credentials for the connection: the flag and the key to use are named.
    refused(
        &bound_to("team-a", "SchemaRegistry", "team-registry"),
        None,
        &[
            "Schema team-a/orders names spec.registryRef SchemaRegistry/team-registry: its password (basic auth) is \
             not given: put it under `SchemaRegistry/team-a/team-registry` in a file named by --registry-credentials",
        ],
    );
    // A wrong password: the registry refuses the write (check only reads, so only apply fails).
    let file = work.path().join("manifests.yaml");
    std::fs::write(
        &file,
        format!("{connections}{}", bound_to("team-a", "SchemaRegistry", "team-registry")),
    )
    .unwrap();
    std::fs::write(
        &credentials,
        "SchemaRegistry/team-a/team-registry:\n  password: wrong-pw\n",
    )
    .unwrap();
    let output = schemaops(&[
        "apply",
        "--data",
        path(&data),
        "--registry-credentials",
        path(&credentials),
        path(&file),
    ]);
    let stderr = text(&output.stderr);
    assert_ne!(output.status.code(), Some(0), "{stderr}");
    assert!(
        !stderr.contains("wrong-pw") && !text(&output.stdout).contains("wrong-pw"),
        "{stderr}"
    );
    assert!(versions(&alpha.url, "orders-value").await.is_empty(), "{stderr}");
}
