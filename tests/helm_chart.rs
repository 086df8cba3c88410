//! The Helm chart `charts/schemaops` (issues 8 and 35). `tests/python/render_chart.py` renders it
//! with helm-python-sdk, which embeds Helm's own engine (no helm binary on these machines), for a
//! few sets of values, and validates every rendered manifest against Kubernetes' own OpenAPI
//! schemas with kubernetes-validate (offline, strict); this file checks what came out: lint, the
//! schema validation, RBAC, the pod's security settings and probes, the registry API's lockdown,
//! how Secrets reach the pod, leader election, PodDisruptionBudget and topology spread, the
//! NetworkPolicy, the webhook's certificate, that `values.schema.json` and the templates refuse bad
//! values, and that the chart README's values table matches `values.yaml`. Then real kubectl
//! applies the rendered manifests to the in-memory test API server. `.ci/run` installs both Python
//! packages into the venv `SCHEMAOPS_PYTHON` names.

mod support;

#[path = "support/apiserver/mod.rs"]
mod apiserver;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;

use serde_json::{Value, json};

fn chart_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("charts/schemaops")
}

/// The interpreter to use, or why there is none.
fn python() -> Result<String, String> {
    let candidate = std::env::var("SCHEMAOPS_PYTHON").unwrap_or_else(|_| "python3".to_owned());
    match Command::new(&candidate)
        .args(["-c", "import helm_python, kubernetes_validate"])
        .output()
    {
        Ok(output) if output.status.success() => Ok(candidate),
        Ok(output) => Err(format!(
            "{candidate} cannot import helm_python and kubernetes_validate: {}",
            String::from_utf8_lossy(&output.stderr)
                .lines()
                .last()
                .unwrap_or_default()
        )),
        Err(error) => Err(format!("{candidate} cannot be run: {error}")),
    }
}

/// The sets of values rendered: (scenario, values). Each renders as release `<scenario>` in
/// namespace `ns-<scenario>`, so all of them can be applied to one API server.
fn scenarios() -> Vec<(&'static str, Value)> {
    vec![
        ("default", json!({})),
        (
            "external",
            json!({"registry": {"external": {
                "url": "https://registry.example.com:8081",
                "auth": "basic",
                "credentialsSecret": "registry-credentials",
                "caKey": "ca.crt",
            }}}),
        ),
        (
            "token",
            json!({"registry": {"external": {
                "url": "https://registry.example.com",
                "auth": "bearer",
                "credentialsSecret": "registry-token",
            }}}),
        ),
        (
            "postgres",
            json!({"replicas": 2, "store": {"type": "postgres", "postgres": {"dsnSecret": {"name": "schemaops-postgres"}}}}),
        ),
        (
            "postgres-tls",
            json!({"replicas": 2, "store": {"type": "postgres", "postgres": {
                "dsnSecret": {"name": "schemaops-postgres"},
                "caSecret": {"name": "postgres-ca", "key": "root.pem"},
                "clientSecret": {"name": "postgres-client"},
            }}}),
        ),
        (
            "kafka",
            json!({"store": {"type": "kafka", "kafka": {
                "url": "kafka://kafka-0.kafka:9092,kafka-1.kafka:9092/_schemas",
                "replicationFactor": 2,
            }}}),
        ),
        (
            "kafka-sasl",
            json!({"store": {"type": "kafka", "kafka": {
                "url": "kafka://kafka:9092/_schemas",
                "sasl": {"mechanism": "SCRAM-SHA-512", "credentialsSecret": "registry-kafka-user"},
            }}}),
        ),
        ("webhook", json!({"webhook": {"enabled": true}})),
        (
            "certmanager",
            json!({"webhook": {"enabled": true, "certManager": {"enabled": true}}, "serviceMonitor": {"enabled": true}}),
        ),
        ("namespaced", json!({"watchNamespace": "team-a"})),
        (
            "connection-secrets",
            json!({"connectionSecretNamespaces": ["team-a", "ns-connection-secrets"]}),
        ),
        (
            "postgres-ha",
            json!({"replicas": 3, "store": {"type": "postgres", "postgres": {"dsnSecret": {"name": "schemaops-postgres"}}}}),
        ),
        (
            "network-policy",
            json!({"webhook": {"enabled": true}, "networkPolicy": {
                "enabled": true,
                "registryFrom": [
                    {"namespaceSelector": {"matchLabels": {"schemaops.dev/registry-client": "true"}}},
                    {"podSelector": {"matchLabels": {"app": "orders-service"}}},
                ],
                "metricsFrom": [{"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "monitoring"}}}],
            }}),
        ),
        ("openshift", json!({"openshift": true})),
        (
            "open-writes",
            json!({"registryApi": {"writes": "open", "auth": {
                "existingSecret": "registry-api",
                "adminKey": "admins",
                "writeKey": "writers",
                "readKey": "readers",
            }}}),
        ),
        (
            "extras",
            json!({
                "extraArgs": ["--max-body-bytes=1048576"],
                "extraEnv": [{"name": "RUST_BACKTRACE", "value": "1"}],
                "priorityClassName": "schemaops-critical",
                "nodeSelector": {"kubernetes.io/os": "linux"},
                "tolerations": [{"key": "dedicated", "operator": "Equal", "value": "platform", "effect": "NoSchedule"}],
                "podAnnotations": {"example.com/team": "platform"},
            }),
        ),
    ]
}

/// The Kubernetes versions whose schemas every manifest is validated against: the oldest and the
/// newest that k8s-openapi (the operator's client) supports.
const KUBERNETES_VERSIONS: [&str; 2] = ["1.33", "1.37"];

/// Kinds defined by CRDs (ours, cert-manager's, Prometheus Operator's): Kubernetes' schemas do not
/// know them, so kubernetes-validate skips them.
const CUSTOM_KINDS: [&str; 6] = [
    "Schema",
    "SubjectConfig",
    "SchemaPolicy",
    "Certificate",
    "Issuer",
    "ServiceMonitor",
];

/// Values `values.schema.json` (or the chart's own checks) must refuse, and what the error names.
fn invalid_values() -> Vec<(&'static str, Value, &'static str)> {
    vec![
        ("no-replicas", json!({"replicas": 0}), "/replicas"),
        (
            "secret-namespace-not-a-name",
            json!({"connectionSecretNamespaces": ["Team_A"]}),
            "/connectionSecretNamespaces/0",
        ),
        ("two-replicas-on-sqlite", json!({"replicas": 2}), "/store/type"),
        ("unknown-store", json!({"store": {"type": "mysql"}}), "/store/type"),
        (
            "postgres-without-dsn-secret",
            json!({"store": {"type": "postgres"}}),
            "/store/postgres/dsnSecret/name",
        ),
        (
            "postgres-ca-secret-without-a-key",
            json!({"store": {"type": "postgres", "postgres": {
                "dsnSecret": {"name": "schemaops-postgres"},
                "caSecret": {"name": "postgres-ca", "key": ""},
            }}}),
            "/store/postgres/caSecret/key",
        ),
        (
            "registry-url-not-a-url",
            json!({"registry": {"external": {"url": "registry.example.com"}}}),
            "/registry/external/url",
        ),
        (
            "basic-auth-without-a-secret",
            json!({"registry": {"external": {"url": "https://r.example.com", "auth": "basic"}}}),
            "/registry/external/credentialsSecret",
        ),
        ("unknown-log-format", json!({"logFormat": "xml"}), "/logFormat"),
        (
            "kafka-without-url",
            json!({"store": {"type": "kafka"}}),
            "/store/kafka/url",
        ),
        (
            "kafka-url-without-topic",
            json!({"store": {"type": "kafka", "kafka": {"url": "kafka://kafka:9092"}}}),
            "/store/kafka/url",
        ),
        (
            "two-replicas-on-kafka",
            json!({"replicas": 2, "store": {"type": "kafka", "kafka": {"url": "kafka://kafka:9092/_schemas"}}}),
            "/store/type",
        ),
        (
            "open-writes-without-a-secret",
            json!({"registryApi": {"writes": "open"}}),
            "/registryApi/auth/existingSecret",
        ),
        (
            "open-writes-without-a-write-key",
            json!({"registryApi": {"writes": "open", "auth": {"existingSecret": "registry-api"}}}),
            "/registryApi/auth/writeKey",
        ),
        (
            "read-key-without-a-secret",
            json!({"registryApi": {"auth": {"readKey": "readers"}}}),
            "/registryApi/auth/existingSecret",
        ),
        (
            "unknown-writes-mode",
            json!({"registryApi": {"writes": "anyone"}}),
            "/registryApi/writes",
        ),
        (
            "poll-seconds-zero",
            json!({"configMapPollSeconds": 0}),
            "/configMapPollSeconds",
        ),
        (
            "spread-without-when-unsatisfiable",
            json!({"topologySpreadConstraints": [{"maxSkew": 1, "topologyKey": "zone"}]}),
            "/topologySpreadConstraints/0",
        ),
        ("extra-args-not-strings", json!({"extraArgs": [1]}), "/extraArgs/0"),
        (
            "extra-env-without-a-name",
            json!({"extraEnv": [{"value": "1"}]}),
            "/extraEnv/0",
        ),
        ("openshift-not-a-boolean", json!({"openshift": "yes"}), "/openshift"),
        (
            "network-policy-peer-not-an-object",
            json!({"networkPolicy": {"registryFrom": ["team-a"]}}),
            "/networkPolicy/registryFrom/0",
        ),
    ]
}

/// Values the templates' own checks must refuse when `values.schema.json` is skipped (`helm
/// install --skip-schema-validation`), and what the message names.
fn unchecked_values() -> Vec<(&'static str, Value, &'static str)> {
    vec![
        (
            "open-writes-without-credentials",
            json!({"registryApi": {"writes": "open"}}),
            "registryApi.writes=open needs registryApi.auth.existingSecret and registryApi.auth.writeKey",
        ),
        (
            "open-writes-without-a-write-key",
            json!({"registryApi": {"writes": "open", "auth": {"existingSecret": "registry-api"}}}),
            "registryApi.auth.writeKey",
        ),
        (
            "read-key-without-a-secret",
            json!({"registryApi": {"auth": {"readKey": "readers"}}}),
            "set registryApi.auth.existingSecret",
        ),
    ]
}

/// A manifest Kubernetes' schemas must refuse (a misspelt field): proves the validation is strict
/// and really runs.
const MISSPELT_MANIFEST: &str = "apiVersion: v1\nkind: Service\nmetadata:\n  name: misspelt\nspec:\n  prots: []\n";

/// What the script answered, rendered once for every test; `None` when skipped.
fn answer() -> Option<&'static Value> {
    static ANSWER: OnceLock<Option<Value>> = OnceLock::new();
    ANSWER
        .get_or_init(|| {
            let python = match python() {
                Ok(python) => python,
                Err(reason) if !support::require_all() => {
                    println!(
                        "skipped: {reason} (install with: pip install helm-python-sdk==0.2.2 kubernetes-validate==1.37.0)"
                    );
                    return None;
                }
                Err(reason) => panic!("SCHEMAOPS_REQUIRE_ALL=1 but {reason}"),
            };
            let render: serde_json::Map<String, Value> = scenarios()
                .into_iter()
                .map(|(name, values)| {
                    let job = json!({"values": values, "release": name, "namespace": format!("ns-{name}")});
                    (name.to_owned(), job)
                })
                .collect();
            let invalid: serde_json::Map<String, Value> = invalid_values()
                .into_iter()
                .map(|(name, values, _)| (name.to_owned(), values))
                .collect();
            let unchecked: serde_json::Map<String, Value> = unchecked_values()
                .into_iter()
                .map(|(name, values, _)| (name.to_owned(), values))
                .collect();
            let request = json!({
                "render": render,
                "invalid": invalid,
                "unchecked": unchecked,
                "kubernetes": KUBERNETES_VERSIONS,
                "custom_kinds": CUSTOM_KINDS,
                "canary": MISSPELT_MANIFEST,
            });
            let mut child = Command::new(python)
                .arg(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/python/render_chart.py"))
                .arg(chart_dir())
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .expect("the render script starts");
            std::io::Write::write_all(&mut child.stdin.take().unwrap(), request.to_string().as_bytes()).unwrap();
            let output = child.wait_with_output().unwrap();
            assert!(
                output.status.success(),
                "render_chart.py failed:\n{}",
                String::from_utf8_lossy(&output.stderr)
            );
            Some(serde_json::from_slice(&output.stdout).expect("the script answers JSON"))
        })
        .as_ref()
}

/// Every manifest a scenario renders, parsed, in template order.
fn manifests(answer: &Value, scenario: &str) -> Vec<Value> {
    let templates = answer["rendered"][scenario].as_object().expect("the scenario rendered");
    let mut documents = Vec::new();
    for (template, text) in templates {
        if template.ends_with("NOTES.txt") {
            continue;
        }
        for document in text.as_str().unwrap().split("\n---") {
            let meaningful = document
                .lines()
                .any(|line| !line.trim().is_empty() && !line.trim_start().starts_with('#'));
            if meaningful {
                let value: Value = serde_saphyr::from_str(document)
                    .unwrap_or_else(|error| panic!("{scenario}: {template} does not parse: {error}\n{document}"));
                documents.push(value);
            }
        }
    }
    documents
}

fn find<'a>(manifests: &'a [Value], kind: &str) -> Vec<&'a Value> {
    manifests.iter().filter(|manifest| manifest["kind"] == kind).collect()
}

/// The Secret with this name suffix (the release's full name comes before it).
fn secret<'a>(manifests: &'a [Value], suffix: &str) -> Option<&'a Value> {
    let found: Vec<&Value> = find(manifests, "Secret")
        .into_iter()
        .filter(|secret| secret["metadata"]["name"].as_str().unwrap().ends_with(suffix))
        .collect();
    assert!(found.len() <= 1, "{found:?}");
    found.first().copied()
}

/// The webhook's certificate, when Helm generated it.
fn webhook_secret(manifests: &[Value]) -> Option<&Value> {
    secret(manifests, "-webhook-tls")
}

/// The registry API's admin token, when the chart generated it.
fn api_credentials_secret(manifests: &[Value]) -> Option<&Value> {
    secret(manifests, "-api-credentials")
}

fn only<'a>(manifests: &'a [Value], kind: &str) -> &'a Value {
    let found = find(manifests, kind);
    assert_eq!(found.len(), 1, "expected one {kind}");
    found[0]
}

fn container(manifests: &[Value]) -> &Value {
    &only(manifests, "Deployment")["spec"]["template"]["spec"]["containers"][0]
}

fn args(manifests: &[Value]) -> Vec<String> {
    container(manifests)["args"]
        .as_array()
        .unwrap()
        .iter()
        .map(|arg| arg.as_str().unwrap().to_owned())
        .collect()
}

fn env<'a>(manifests: &'a [Value], name: &str) -> Option<&'a Value> {
    container(manifests)["env"]
        .as_array()
        .unwrap()
        .iter()
        .find(|variable| variable["name"] == name)
}

/// `(group, resource, verb)` for every rule of a Role or ClusterRole.
fn grants(role: &Value) -> BTreeSet<(String, String, String)> {
    let mut grants = BTreeSet::new();
    for rule in role["rules"].as_array().unwrap() {
        assert!(rule.get("resourceNames").is_none(), "{rule}");
        let strings = |key: &str| -> Vec<String> {
            rule[key]
                .as_array()
                .unwrap()
                .iter()
                .map(|item| item.as_str().unwrap().to_owned())
                .collect()
        };
        for group in strings("apiGroups") {
            for resource in strings("resources") {
                for verb in strings("verbs") {
                    grants.insert((group.clone(), resource.clone(), verb));
                }
            }
        }
    }
    grants
}

fn expand(entries: &[(&[&str], &[&str], &[&str])]) -> BTreeSet<(String, String, String)> {
    let mut grants = BTreeSet::new();
    for (groups, resources, verbs) in entries {
        for group in *groups {
            for resource in *resources {
                for verb in *verbs {
                    grants.insert((group.to_string(), resource.to_string(), verb.to_string()));
                }
            }
        }
    }
    grants
}

#[test]
fn the_chart_lints_clean_in_strict_mode() {
    let Some(answer) = answer() else { return };
    let lint = &answer["lint"];
    assert_eq!(lint["errors"], json!([]), "{lint}");
    // Helm's severities: 1 info, 2 warning, 3 error.
    let serious: Vec<&Value> = lint["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|message| message["severity"].as_i64().unwrap_or(3) >= 2)
        .collect();
    assert!(serious.is_empty(), "{serious:?}");
}

#[test]
fn the_chart_ships_the_same_crds_as_the_crds_folder() {
    let Some(answer) = answer() else { return };
    let crds = answer["crds"].as_object().unwrap();
    let shipped: BTreeSet<&str> = crds
        .keys()
        .map(|name| Path::new(name).file_name().unwrap().to_str().unwrap())
        .collect();
    let generated: BTreeSet<&str> = schemaops::crd::render::definitions()
        .into_iter()
        .map(|(file, _)| file)
        .collect();
    assert_eq!(shipped, generated);
    assert!(shipped.contains("schemapolicy.yaml"), "{shipped:?}");
    for (name, text) in crds {
        let file = Path::new(name).file_name().unwrap();
        let expected = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("crds").join(file)).unwrap();
        assert_eq!(text.as_str().unwrap(), expected, "{name}");
    }
}

/// Secrets: `get` only, never `list` or `watch`, and only in the namespaces listed in
/// `connectionSecretNamespaces` (and `watchNamespace`): one Role `<fullname>-connection-secrets`
/// in each, never a cluster-wide grant. The operator reads the Secrets a registry connection
/// names, by name, so it cannot enumerate them. The install's own Secrets (default registry
/// credentials, PostgreSQL DSN, webhook certificate) still reach the pod through its spec.
/// SchemaPolicies, ClusterSchemaRegistries and Namespaces are cluster-scoped: a ClusterRole
/// `<fullname>-policy` grants what they need in every scenario, even when one namespace is watched.
#[test]
fn rbac_grants_exactly_what_the_operator_needs_and_secrets_only_in_listed_namespaces() {
    let Some(answer) = answer() else { return };
    let operator = expand(&[
        (
            &["schemaops.dev"],
            &["schemas", "subjectconfigs", "schemaregistries"],
            &["get", "list", "watch", "patch", "update"],
        ),
        (
            &["schemaops.dev"],
            &["schemas/status", "subjectconfigs/status", "schemaregistries/status"],
            &["get", "patch", "update"],
        ),
        (
            &["schemaops.dev"],
            &[
                "schemas/finalizers",
                "subjectconfigs/finalizers",
                "schemaregistries/finalizers",
            ],
            &["update"],
        ),
        // Only the ConfigMaps a Schema names, by name: no list, no watch.
        (&[""], &["configmaps"], &["get"]),
        (&["", "events.k8s.io"], &["events"], &["create", "patch"]),
    ]);
    // Only the Secrets a registry connection names, by name: no list, no watch.
    let secrets = expand(&[(&[""], &["secrets"], &["get"])]);
    let leases = expand(&[(&["coordination.k8s.io"], &["leases"], &["get", "create", "update"])]);
    let policy = expand(&[
        (&["schemaops.dev"], &["schemapolicies"], &["get", "list", "watch"]),
        (&["schemaops.dev"], &["schemapolicies/status"], &["patch", "update"]),
        (
            &["schemaops.dev"],
            &["clusterschemaregistries"],
            &["get", "list", "watch", "patch", "update"],
        ),
        (
            &["schemaops.dev"],
            &["clusterschemaregistries/status"],
            &["get", "patch", "update"],
        ),
        (&["schemaops.dev"], &["clusterschemaregistries/finalizers"], &["update"]),
        (&[""], &["namespaces"], &["get", "list", "watch"]),
    ]);
    for (scenario, _) in scenarios() {
        let manifests = manifests(answer, scenario);
        let namespace = format!("ns-{scenario}");
        let secrets_name = format!("{scenario}-schemaops-connection-secrets");
        let (secret_roles, roles): (Vec<&Value>, Vec<&Value>) = find(&manifests, "Role")
            .into_iter()
            .partition(|role| role["metadata"]["name"] == secrets_name.as_str());
        let secret_namespaces: BTreeSet<&str> = secret_roles
            .iter()
            .map(|role| role["metadata"]["namespace"].as_str().unwrap())
            .collect();
        let expected_namespaces: BTreeSet<&str> = match scenario {
            "namespaced" => ["team-a"].into(),
            "connection-secrets" => ["team-a", "ns-connection-secrets"].into(),
            _ => BTreeSet::new(),
        };
        assert_eq!(secret_namespaces, expected_namespaces, "{scenario}");
        assert_eq!(
            secret_roles.len(),
            expected_namespaces.len(),
            "{scenario}: one Role each"
        );
        for role in &secret_roles {
            assert_eq!(grants(role), secrets, "{scenario}");
            let role_namespace = &role["metadata"]["namespace"];
            let binding = find(&manifests, "RoleBinding")
                .into_iter()
                .find(|binding| {
                    binding["metadata"]["name"] == secrets_name.as_str()
                        && binding["metadata"]["namespace"] == *role_namespace
                })
                .unwrap_or_else(|| panic!("{scenario}: a RoleBinding for the Secrets Role in {role_namespace}"));
            assert_eq!(
                binding["roleRef"],
                json!({"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": secrets_name}),
                "{scenario}"
            );
        }
        let policy_name = format!("{scenario}-schemaops-policy");
        let (policy_roles, cluster_roles): (Vec<&Value>, Vec<&Value>) = find(&manifests, "ClusterRole")
            .into_iter()
            .partition(|role| role["metadata"]["name"] == policy_name.as_str());
        assert_eq!(policy_roles.len(), 1, "{scenario}");
        assert_eq!(grants(policy_roles[0]), policy, "{scenario}");
        let policy_binding = find(&manifests, "ClusterRoleBinding")
            .into_iter()
            .find(|binding| binding["metadata"]["name"] == policy_name.as_str())
            .expect("a ClusterRoleBinding for the policy ClusterRole");
        assert_eq!(
            policy_binding["roleRef"],
            json!({"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": policy_name}),
            "{scenario}"
        );
        let (operator_role, lease_role) = if scenario == "namespaced" {
            assert!(cluster_roles.is_empty(), "{scenario}");
            assert_eq!(roles.len(), 2, "{scenario}");
            let operator_role = roles
                .iter()
                .find(|role| role["metadata"]["namespace"] == "team-a")
                .unwrap();
            let lease_role = roles
                .iter()
                .find(|role| role["metadata"]["namespace"] == namespace.as_str())
                .unwrap();
            let binding = find(&manifests, "RoleBinding")
                .into_iter()
                .find(|binding| {
                    binding["metadata"]["namespace"] == "team-a" && binding["metadata"]["name"] != secrets_name.as_str()
                })
                .expect("a RoleBinding in the watched namespace");
            assert_eq!(binding["roleRef"]["kind"], "Role");
            (*operator_role, *lease_role)
        } else {
            assert_eq!(cluster_roles.len(), 1, "{scenario}");
            assert_eq!(roles.len(), 1, "{scenario}");
            assert_eq!(roles[0]["metadata"]["namespace"], namespace.as_str(), "{scenario}");
            (cluster_roles[0], roles[0])
        };
        assert_eq!(grants(operator_role), operator, "{scenario}");
        assert_eq!(grants(lease_role), leases, "{scenario}");
        // No other role names Secrets: there is no cluster-wide grant on them.
        for role in roles.iter().chain(&cluster_roles).chain(&policy_roles) {
            for rule in role["rules"].as_array().unwrap() {
                let resources = rule["resources"].as_array().unwrap();
                assert!(!resources.iter().any(|r| r == "secrets"), "{scenario}: {rule}");
            }
        }
        // Every binding names the chart's ServiceAccount in the release namespace.
        let account = only(&manifests, "ServiceAccount");
        for kind in ["RoleBinding", "ClusterRoleBinding"] {
            for binding in find(&manifests, kind) {
                assert_eq!(
                    binding["subjects"][0]["name"], account["metadata"]["name"],
                    "{scenario}"
                );
                assert_eq!(binding["subjects"][0]["namespace"], namespace.as_str(), "{scenario}");
            }
        }
    }
}

#[test]
fn the_pod_runs_locked_down_with_health_probes() {
    let Some(answer) = answer() else { return };
    for (scenario, _) in scenarios() {
        let manifests = manifests(answer, scenario);
        let pod = &only(&manifests, "Deployment")["spec"]["template"]["spec"];
        assert_eq!(pod["securityContext"]["runAsNonRoot"], true, "{scenario}");
        // OpenShift assigns the IDs itself (the_openshift_switch_drops_the_fixed_ids).
        if scenario != "openshift" {
            assert_eq!(pod["securityContext"]["runAsUser"], 65532, "{scenario}");
        }
        assert_eq!(
            pod["securityContext"]["seccompProfile"]["type"], "RuntimeDefault",
            "{scenario}"
        );
        let container = container(&manifests);
        let security = &container["securityContext"];
        assert_eq!(security["readOnlyRootFilesystem"], true, "{scenario}");
        assert_eq!(security["allowPrivilegeEscalation"], false, "{scenario}");
        assert_eq!(security["runAsNonRoot"], true, "{scenario}");
        assert_eq!(security["capabilities"]["drop"], json!(["ALL"]), "{scenario}");
        assert_eq!(security["seccompProfile"]["type"], "RuntimeDefault", "{scenario}");
        for kind in ["requests", "limits"] {
            assert!(container["resources"][kind]["memory"].is_string(), "{scenario}: {kind}");
        }
        assert!(container["resources"]["requests"]["cpu"].is_string(), "{scenario}");
        let ports: BTreeMap<&str, i64> = container["ports"]
            .as_array()
            .unwrap()
            .iter()
            .map(|port| (port["name"].as_str().unwrap(), port["containerPort"].as_i64().unwrap()))
            .collect();
        assert_eq!(ports["registry"], 8081, "{scenario}");
        assert_eq!(ports["metrics"], 8080, "{scenario}");
        assert_eq!(
            container["livenessProbe"]["httpGet"],
            json!({"path": "/healthz", "port": "metrics"})
        );
        assert_eq!(
            container["readinessProbe"]["httpGet"],
            json!({"path": "/readyz", "port": "metrics"})
        );
        let args = args(&manifests);
        assert_eq!(args[0], "operator", "{scenario}");
        assert!(
            args.contains(&"--health-listen=0.0.0.0:8080".to_owned()),
            "{scenario}: {args:?}"
        );
        assert!(
            args.contains(&"--registry-listen=0.0.0.0:8081".to_owned()),
            "{scenario}: {args:?}"
        );
        assert!(
            args.contains(&"--config-map-poll-seconds=30".to_owned()),
            "{scenario}: {args:?}"
        );
        for (variable, field) in [("POD_NAME", "metadata.name"), ("POD_NAMESPACE", "metadata.namespace")] {
            assert_eq!(
                env(&manifests, variable).unwrap()["valueFrom"]["fieldRef"]["fieldPath"],
                field,
                "{scenario}"
            );
        }
        // The root filesystem is read-only: --data and /tmp are volumes.
        let mounts: BTreeSet<&str> = container["volumeMounts"]
            .as_array()
            .unwrap()
            .iter()
            .map(|mount| mount["mountPath"].as_str().unwrap())
            .collect();
        assert!(
            mounts.contains("/data") && mounts.contains("/tmp"),
            "{scenario}: {mounts:?}"
        );
        assert!(args.contains(&"--data=/data".to_owned()), "{scenario}: {args:?}");
        // The Service exposes the registry API and metrics to the pod's named ports.
        let service = find(&manifests, "Service")
            .into_iter()
            .find(|service| service["metadata"]["name"] == only(&manifests, "Deployment")["metadata"]["name"])
            .unwrap();
        let ports: BTreeMap<&str, i64> = service["spec"]["ports"]
            .as_array()
            .unwrap()
            .iter()
            .map(|port| (port["name"].as_str().unwrap(), port["port"].as_i64().unwrap()))
            .collect();
        assert_eq!(
            ports,
            BTreeMap::from([("metrics", 8080), ("registry", 8081)]),
            "{scenario}"
        );
    }
}

#[test]
fn leader_election_and_postgres_only_with_several_replicas() {
    let Some(answer) = answer() else { return };
    let sqlite = manifests(answer, "default");
    let deployment = only(&sqlite, "Deployment");
    assert_eq!(deployment["spec"]["replicas"], 1);
    assert_eq!(deployment["spec"]["strategy"]["type"], "Recreate");
    assert!(!args(&sqlite).iter().any(|arg| arg == "--leader-election"));
    assert!(env(&sqlite, "SCHEMAOPS_STORE").is_none());
    let claim = only(&sqlite, "PersistentVolumeClaim");
    let volumes = deployment["spec"]["template"]["spec"]["volumes"].as_array().unwrap();
    let data = volumes.iter().find(|volume| volume["name"] == "data").unwrap();
    assert_eq!(data["persistentVolumeClaim"]["claimName"], claim["metadata"]["name"]);

    let postgres = manifests(answer, "postgres");
    assert_eq!(only(&postgres, "Deployment")["spec"]["replicas"], 2);
    assert!(args(&postgres).iter().any(|arg| arg == "--leader-election"));
    assert!(find(&postgres, "PersistentVolumeClaim").is_empty());
    assert_eq!(
        env(&postgres, "SCHEMAOPS_STORE").unwrap()["valueFrom"]["secretKeyRef"],
        json!({"name": "schemaops-postgres", "key": "dsn"})
    );
    assert!(
        !args(&postgres)
            .iter()
            .any(|arg| arg.starts_with("--store-ca-file") || arg.starts_with("--store-client")),
        "no CA or client Secret, no files"
    );
}

#[test]
fn a_kafka_store_is_passed_as_flags_with_one_replica_and_no_volume_claim() {
    let Some(answer) = answer() else { return };
    let kafka = manifests(answer, "kafka");
    assert_eq!(only(&kafka, "Deployment")["spec"]["replicas"], 1);
    assert!(find(&kafka, "PersistentVolumeClaim").is_empty());
    assert!(env(&kafka, "SCHEMAOPS_STORE").is_none());
    let args = args(&kafka);
    assert!(
        args.contains(&"--store=kafka://kafka-0.kafka:9092,kafka-1.kafka:9092/_schemas".to_owned()),
        "{args:?}"
    );
    assert!(
        args.contains(&"--store-topic-replication-factor=2".to_owned()),
        "{args:?}"
    );
    assert!(
        !args.iter().any(|arg| arg.starts_with("--store-transactional-id")),
        "{args:?}"
    );
}

#[test]
fn kafka_sasl_credentials_come_from_a_secret_and_never_from_the_arguments() {
    let Some(answer) = answer() else { return };
    let sasl = manifests(answer, "kafka-sasl");
    let sasl_args = args(&sasl);
    assert!(
        sasl_args.contains(&"--store-sasl-mechanism=SCRAM-SHA-512".to_owned()),
        "{sasl_args:?}"
    );
    assert!(!sasl_args.iter().any(|arg| arg.contains("password")), "{sasl_args:?}");
    for (name, key) in [
        ("SCHEMAOPS_STORE_SASL_USERNAME", "username"),
        ("SCHEMAOPS_STORE_SASL_PASSWORD", "password"),
    ] {
        let variable = env(&sasl, name).unwrap_or_else(|| panic!("{name} is not set"));
        let reference = &variable["valueFrom"]["secretKeyRef"];
        assert_eq!(reference["name"], "registry-kafka-user", "{variable}");
        assert_eq!(reference["key"], key, "{variable}");
    }
    let plain = manifests(answer, "kafka");
    assert!(!args(&plain).iter().any(|arg| arg.starts_with("--store-sasl")));
    assert!(env(&plain, "SCHEMAOPS_STORE_SASL_PASSWORD").is_none());
}

#[test]
fn the_postgres_ca_secret_is_mounted_and_passed_as_the_store_ca_file() {
    let Some(answer) = answer() else { return };
    let manifests = manifests(answer, "postgres-tls");
    assert!(
        args(&manifests).contains(&"--store-ca-file=/etc/schemaops/postgres/ca.crt".to_owned()),
        "{:?}",
        args(&manifests)
    );
    let pod = &only(&manifests, "Deployment")["spec"]["template"]["spec"];
    let volume = pod["volumes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|volume| volume["name"] == "postgres-ca")
        .expect("a postgres-ca volume");
    assert_eq!(volume["secret"]["secretName"], "postgres-ca");
    assert_eq!(
        volume["secret"]["items"],
        json!([{"key": "root.pem", "path": "ca.crt"}])
    );
    // The template writes `defaultMode: 0440`, octal to Kubernetes' YAML 1.1 reader; the YAML 1.2
    // reader here sees the digits as decimal 440.
    assert_eq!(volume["secret"]["defaultMode"].as_f64(), Some(440.0));
    let mount = pod["containers"][0]["volumeMounts"]
        .as_array()
        .unwrap()
        .iter()
        .find(|mount| mount["name"] == "postgres-ca")
        .expect("a postgres-ca mount");
    assert_eq!(mount["mountPath"], "/etc/schemaops/postgres");
    assert_eq!(mount["readOnly"], true);
    // The client certificate and key, from a kubernetes.io/tls Secret.
    for expected in [
        "--store-client-cert=/etc/schemaops/postgres-client/tls.crt",
        "--store-client-key=/etc/schemaops/postgres-client/tls.key",
    ] {
        assert!(args(&manifests).contains(&expected.to_owned()), "{expected}");
    }
    let client = pod["volumes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|volume| volume["name"] == "postgres-client")
        .expect("a postgres-client volume");
    assert_eq!(client["secret"]["secretName"], "postgres-client");
    assert!(
        pod["containers"][0]["volumeMounts"]
            .as_array()
            .unwrap()
            .iter()
            .any(|mount| mount["name"] == "postgres-client" && mount["mountPath"] == "/etc/schemaops/postgres-client")
    );
    // The CA is a file; the DSN (and its sslmode) still comes from its own Secret.
    assert_eq!(
        env(&manifests, "SCHEMAOPS_STORE").unwrap()["valueFrom"]["secretKeyRef"],
        json!({"name": "schemaops-postgres", "key": "dsn"})
    );
}

#[test]
fn registry_credentials_reach_the_pod_as_files_and_a_secret_key_ref() {
    let Some(answer) = answer() else { return };
    let default = manifests(answer, "default");
    assert!(!args(&default).iter().any(|arg| arg.starts_with("--registry-url")));

    let basic = manifests(answer, "external");
    let args = args(&basic);
    for expected in [
        "--registry-url=https://registry.example.com:8081",
        "--registry-password-file=/etc/schemaops/registry/password",
        "--registry-ca-file=/etc/schemaops/registry/ca.crt",
    ] {
        assert!(args.contains(&expected.to_owned()), "{expected} in {args:?}");
    }
    assert_eq!(
        env(&basic, "SCHEMAOPS_REGISTRY_USERNAME").unwrap()["valueFrom"]["secretKeyRef"],
        json!({"name": "registry-credentials", "key": "username"})
    );
    let pod = &only(&basic, "Deployment")["spec"]["template"]["spec"];
    let volume = pod["volumes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|volume| volume["name"] == "registry-credentials");
    assert_eq!(
        volume.unwrap()["secret"]["items"],
        json!([{"key": "password", "path": "password"}, {"key": "ca.crt", "path": "ca.crt"}])
    );
    assert_eq!(volume.unwrap()["secret"]["secretName"], "registry-credentials");
    let mount = pod["containers"][0]["volumeMounts"]
        .as_array()
        .unwrap()
        .iter()
        .find(|mount| mount["name"] == "registry-credentials")
        .unwrap();
    assert_eq!(mount["mountPath"], "/etc/schemaops/registry");
    assert_eq!(mount["readOnly"], true);

    let token = manifests(answer, "token");
    let args = self::args(&token);
    assert!(
        args.contains(&"--registry-token-file=/etc/schemaops/registry/token".to_owned()),
        "{args:?}"
    );
    assert!(
        !args.iter().any(|arg| arg.starts_with("--registry-password-file")),
        "{args:?}"
    );
    assert!(env(&token, "SCHEMAOPS_REGISTRY_USERNAME").is_none());
}

#[test]
fn the_webhook_ca_bundle_matches_its_certificate() {
    let Some(answer) = answer() else { return };
    assert!(find(&manifests(answer, "default"), "ValidatingWebhookConfiguration").is_empty());

    // Helm-generated: the Secret holds the CA and the serving pair; caBundle is the same CA.
    let generated = manifests(answer, "webhook");
    let configuration = only(&generated, "ValidatingWebhookConfiguration");
    let hook = &configuration["webhooks"][0];
    assert_eq!(hook["clientConfig"]["service"]["path"], "/validate/schemas");
    // Schemas and SubjectConfigs go to the one endpoint, as in deploy/webhook/.
    assert_eq!(
        hook["rules"],
        json!([
            {
                "apiGroups": ["schemaops.dev"],
                "apiVersions": ["v1alpha1"],
                "operations": ["CREATE", "UPDATE"],
                "resources": ["schemas", "subjectconfigs"],
                "scope": "Namespaced",
            },
            // Issue 39 item 12: the level a deleted SubjectConfig's subject falls back to is judged.
            {
                "apiGroups": ["schemaops.dev"],
                "apiVersions": ["v1alpha1"],
                "operations": ["DELETE"],
                "resources": ["subjectconfigs"],
                "scope": "Namespaced",
            },
        ])
    );
    let deployed: Value = serde_saphyr::from_str(
        &std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("deploy/webhook/validating-webhook.yaml"))
            .unwrap(),
    )
    .unwrap();
    assert_eq!(deployed["webhooks"][0]["rules"], hook["rules"]);
    assert_eq!(hook["clientConfig"]["service"]["port"], 443);
    assert_eq!(hook["failurePolicy"], "Ignore");
    let secret = webhook_secret(&generated).expect("the webhook's TLS Secret");
    assert_eq!(secret["type"], "kubernetes.io/tls");
    assert_eq!(hook["clientConfig"]["caBundle"], secret["data"]["ca.crt"]);
    for key in ["ca.crt", "tls.crt", "tls.key"] {
        assert!(
            secret["data"][key].as_str().is_some_and(|value| value.len() > 100),
            "{key}"
        );
    }
    let service = find(&generated, "Service")
        .into_iter()
        .find(|service| service["metadata"]["name"] == hook["clientConfig"]["service"]["name"])
        .expect("the webhook's Service");
    assert_eq!(service["spec"]["ports"][0]["port"], 443);
    assert_eq!(service["spec"]["ports"][0]["targetPort"], "webhook");
    let args = args(&generated);
    assert!(args.contains(&"--webhook-listen=0.0.0.0:8443".to_owned()), "{args:?}");
    assert!(
        args.contains(&"--webhook-cert-file=/etc/schemaops/webhook/tls.crt".to_owned()),
        "{args:?}"
    );
    let pod = &only(&generated, "Deployment")["spec"]["template"]["spec"];
    let volume = pod["volumes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|volume| volume["name"] == "webhook-tls");
    assert_eq!(volume.unwrap()["secret"]["secretName"], secret["metadata"]["name"]);

    // cert-manager: a Certificate writes the same Secret; cainjector fills caBundle.
    let managed = manifests(answer, "certmanager");
    let configuration = only(&managed, "ValidatingWebhookConfiguration");
    let certificate = only(&managed, "Certificate");
    assert!(configuration["webhooks"][0]["clientConfig"].get("caBundle").is_none());
    assert_eq!(
        configuration["metadata"]["annotations"]["cert-manager.io/inject-ca-from"],
        format!("ns-certmanager/{}", certificate["metadata"]["name"].as_str().unwrap()).as_str()
    );
    assert_eq!(certificate["spec"]["issuerRef"]["kind"], "Issuer");
    assert_eq!(only(&managed, "Issuer")["spec"], json!({"selfSigned": {}}));
    assert!(webhook_secret(&managed).is_none(), "cert-manager writes it");
    let pod = &only(&managed, "Deployment")["spec"]["template"]["spec"];
    let volume = pod["volumes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|volume| volume["name"] == "webhook-tls");
    assert_eq!(
        volume.unwrap()["secret"]["secretName"],
        certificate["spec"]["secretName"]
    );
    let monitor = only(&managed, "ServiceMonitor");
    assert_eq!(monitor["spec"]["endpoints"][0]["port"], "metrics");
    assert_eq!(monitor["spec"]["endpoints"][0]["path"], "/metrics");
}

#[test]
fn the_notes_tell_how_to_check_the_install() {
    let Some(answer) = answer() else { return };
    let notes = answer["rendered"]["default"]["schemaops/templates/NOTES.txt"]
        .as_str()
        .unwrap();
    for expected in [
        "kubectl -n ns-default get pods",
        "kind: Schema",
        "kubectl -n default wait --for=condition=Ready",
    ] {
        assert!(notes.contains(expected), "{expected} in\n{notes}");
    }
}

#[test]
fn the_values_schema_refuses_bad_values() {
    let Some(answer) = answer() else { return };
    for (case, _, pointer) in invalid_values() {
        let error = answer["invalid"][case].as_str();
        assert!(
            error.is_some_and(|error| error.contains(pointer)),
            "{case}: expected an error at {pointer}, got {:?}",
            answer["invalid"][case]
        );
    }
}

#[test]
fn the_templates_refuse_unauthenticated_writes_even_without_the_values_schema() {
    let Some(answer) = answer() else { return };
    for (case, _, message) in unchecked_values() {
        let error = answer["unchecked"][case].as_str();
        assert!(
            error.is_some_and(|error| error.contains(message)),
            "{case}: expected an error naming {message:?}, got {:?}",
            answer["unchecked"][case]
        );
    }
}

/// Every manifest of every scenario, and the CRDs, against Kubernetes' schemas for each of
/// `KUBERNETES_VERSIONS`, strict (an unknown field is an error). Only `CUSTOM_KINDS` are skipped.
#[test]
fn every_rendered_manifest_validates_against_kubernetes_schemas() {
    let Some(answer) = answer() else { return };
    let validated = &answer["validated"];
    // The misspelt canary is refused, so the validation is strict and really runs.
    let canary = validated["canary"]["errors"].as_array().unwrap();
    assert_eq!(canary.len(), KUBERNETES_VERSIONS.len(), "{canary:?}");
    assert!(canary[0].as_str().unwrap().contains("prots"), "{canary:?}");

    let names = |report: &Value, list: &str| -> Vec<String> {
        report[list]
            .as_array()
            .unwrap()
            .iter()
            .map(|name| name.as_str().unwrap().to_owned())
            .collect()
    };
    let crds = &validated["crds"];
    assert_eq!(crds["errors"], json!([]), "the CRDs: {crds}");
    assert_eq!(names(crds, "checked").len(), 5, "{crds}");
    for (scenario, _) in scenarios() {
        let report = &validated[scenario];
        assert_eq!(report["errors"], json!([]), "{scenario}: {report}");
        let checked = names(report, "checked");
        let deployment = format!("Deployment/{scenario}-schemaops");
        assert!(checked.contains(&deployment), "{scenario}: {checked:?}");
        // Everything rendered was either checked or is a custom kind that was skipped.
        let rendered = manifests(answer, scenario).len();
        let skipped = names(report, "skipped");
        assert_eq!(checked.len() + skipped.len(), rendered, "{scenario}");
        for name in &skipped {
            let kind = name.split('/').next().unwrap();
            assert!(CUSTOM_KINDS.contains(&kind), "{scenario}: skipped {name}");
        }
    }
    for (scenario, kind) in [
        ("postgres-ha", "PodDisruptionBudget"),
        ("network-policy", "NetworkPolicy"),
        ("webhook", "ValidatingWebhookConfiguration"),
        ("default", "Secret"),
    ] {
        let checked = names(&validated[scenario], "checked");
        assert!(
            checked.iter().any(|name| name.starts_with(&format!("{kind}/"))),
            "{scenario}: {kind} in {checked:?}"
        );
    }
    assert!(
        names(&validated["certmanager"], "skipped").contains(&"Certificate/certmanager-schemaops-webhook".to_owned())
    );
}

fn volume<'a>(manifests: &'a [Value], name: &str) -> Option<&'a Value> {
    only(manifests, "Deployment")["spec"]["template"]["spec"]["volumes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|volume| volume["name"] == name)
}

fn mount<'a>(manifests: &'a [Value], name: &str) -> Option<&'a Value> {
    container(manifests)["volumeMounts"]
        .as_array()
        .unwrap()
        .iter()
        .find(|mount| mount["name"] == name)
}

/// With defaults, REST writes are GitOps-only and the one credential that may write is an admin
/// token the chart generates into its own Secret, mounted as `--admin-credentials-file`.
#[test]
fn the_registry_api_is_gitops_only_with_a_generated_admin_token_by_default() {
    use base64::Engine;

    let Some(answer) = answer() else { return };
    let manifests = manifests(answer, "default");
    let args = args(&manifests);
    for expected in [
        "--rest-writes=gitops-only",
        "--admin-credentials-file=/etc/schemaops/api/admin",
    ] {
        assert!(args.contains(&expected.to_owned()), "{expected} in {args:?}");
    }
    assert!(
        !args
            .iter()
            .any(|arg| arg.starts_with("--write-credentials-file") || arg.starts_with("--read-credentials-file")),
        "{args:?}"
    );
    let secret = api_credentials_secret(&manifests).expect("the generated credentials");
    assert_eq!(secret["metadata"]["name"], "default-schemaops-api-credentials");
    assert_eq!(secret["metadata"]["annotations"]["helm.sh/resource-policy"], "keep");
    let token = base64::engine::general_purpose::STANDARD
        .decode(secret["data"]["admin"].as_str().unwrap())
        .unwrap();
    assert_eq!(token.len(), 40);
    assert!(token.iter().all(u8::is_ascii_alphanumeric), "a bearer token, no colon");
    let volume = volume(&manifests, "api-credentials").expect("an api-credentials volume");
    assert_eq!(volume["secret"]["secretName"], "default-schemaops-api-credentials");
    assert_eq!(volume["secret"]["items"], json!([{"key": "admin", "path": "admin"}]));
    let mount = mount(&manifests, "api-credentials").expect("an api-credentials mount");
    assert_eq!(mount["mountPath"], "/etc/schemaops/api");
    assert_eq!(mount["readOnly"], true);
    // The notes tell how to read the token.
    let notes = answer["rendered"]["default"]["schemaops/templates/NOTES.txt"]
        .as_str()
        .unwrap();
    assert!(
        notes.contains("get secret default-schemaops-api-credentials -o jsonpath='{.data.admin}' | base64 -d"),
        "{notes}"
    );
    assert!(notes.contains("GitOps-only"), "{notes}");
}

#[test]
fn open_writes_take_every_credential_file_from_the_given_secret() {
    let Some(answer) = answer() else { return };
    let manifests = manifests(answer, "open-writes");
    let args = args(&manifests);
    for expected in [
        "--rest-writes=open",
        "--admin-credentials-file=/etc/schemaops/api/admin",
        "--write-credentials-file=/etc/schemaops/api/write",
        "--read-credentials-file=/etc/schemaops/api/read",
    ] {
        assert!(args.contains(&expected.to_owned()), "{expected} in {args:?}");
    }
    assert!(api_credentials_secret(&manifests).is_none(), "no generated Secret");
    let volume = volume(&manifests, "api-credentials").expect("an api-credentials volume");
    assert_eq!(volume["secret"]["secretName"], "registry-api");
    assert_eq!(
        volume["secret"]["items"],
        json!([
            {"key": "admins", "path": "admin"},
            {"key": "readers", "path": "read"},
            {"key": "writers", "path": "write"},
        ])
    );
}

/// With an external registry the operator serves no REST API: no lockdown flags, no credentials.
#[test]
fn an_external_registry_gets_no_registry_api_credentials() {
    let Some(answer) = answer() else { return };
    for scenario in ["external", "token"] {
        let manifests = manifests(answer, scenario);
        let args = args(&manifests);
        assert!(
            !args
                .iter()
                .any(|arg| arg.starts_with("--rest-writes") || arg.contains("-credentials-file")),
            "{scenario}: {args:?}"
        );
        assert!(volume(&manifests, "api-credentials").is_none(), "{scenario}");
        assert!(api_credentials_secret(&manifests).is_none(), "{scenario}");
    }
}

#[test]
fn disruption_budget_and_topology_spread_only_with_several_replicas() {
    let Some(answer) = answer() else { return };
    for scenario in ["default", "webhook", "openshift"] {
        let manifests = manifests(answer, scenario);
        assert!(find(&manifests, "PodDisruptionBudget").is_empty(), "{scenario}");
        let pod = &only(&manifests, "Deployment")["spec"]["template"]["spec"];
        assert!(pod.get("topologySpreadConstraints").is_none(), "{scenario}");
    }
    let manifests = manifests(answer, "postgres-ha");
    let deployment = only(&manifests, "Deployment");
    assert_eq!(deployment["spec"]["replicas"], 3);
    let selector = &deployment["spec"]["selector"]["matchLabels"];
    let budget = only(&manifests, "PodDisruptionBudget");
    assert_eq!(budget["apiVersion"], "policy/v1");
    assert_eq!(budget["spec"]["maxUnavailable"], 1);
    assert!(budget["spec"].get("minAvailable").is_none());
    assert_eq!(&budget["spec"]["selector"]["matchLabels"], selector);
    assert_eq!(
        deployment["spec"]["template"]["spec"]["topologySpreadConstraints"],
        json!([{
            "maxSkew": 1,
            "topologyKey": "kubernetes.io/hostname",
            "whenUnsatisfiable": "ScheduleAnyway",
            "labelSelector": {"matchLabels": selector},
        }])
    );
}

#[test]
fn the_openshift_switch_drops_the_fixed_ids() {
    let Some(answer) = answer() else { return };
    let manifests = manifests(answer, "openshift");
    let pod = &only(&manifests, "Deployment")["spec"]["template"]["spec"]["securityContext"];
    assert_eq!(
        pod,
        &json!({"runAsNonRoot": true, "seccompProfile": {"type": "RuntimeDefault"}})
    );
    let container = &container(&manifests)["securityContext"];
    assert_eq!(
        container,
        &json!({
            "allowPrivilegeEscalation": false,
            "readOnlyRootFilesystem": true,
            "runAsNonRoot": true,
            "capabilities": {"drop": ["ALL"]},
            "seccompProfile": {"type": "RuntimeDefault"},
        })
    );
    // values-openshift.yaml is the documented way to set it.
    let file = std::fs::read_to_string(chart_dir().join("values-openshift.yaml")).unwrap();
    let values: Value = serde_saphyr::from_str(&file).unwrap();
    assert_eq!(values, json!({"openshift": true}));
    // Without the switch, the fixed IDs stay.
    let default = self::manifests(answer, "default");
    let default = &only(&default, "Deployment")["spec"]["template"]["spec"]["securityContext"];
    for key in ["runAsUser", "runAsGroup", "fsGroup"] {
        assert_eq!(default[key], 65532, "{key}");
    }
}

#[test]
fn extra_args_env_priority_and_scheduling_reach_the_pod() {
    let Some(answer) = answer() else { return };
    let manifests = manifests(answer, "extras");
    let args = args(&manifests);
    assert_eq!(
        args.last().unwrap(),
        "--max-body-bytes=1048576",
        "appended last: {args:?}"
    );
    assert_eq!(env(&manifests, "RUST_BACKTRACE").unwrap()["value"], "1");
    assert!(env(&manifests, "POD_NAME").is_some(), "the chart's own variables stay");
    let deployment = only(&manifests, "Deployment");
    let pod = &deployment["spec"]["template"]["spec"];
    assert_eq!(pod["priorityClassName"], "schemaops-critical");
    assert_eq!(pod["nodeSelector"], json!({"kubernetes.io/os": "linux"}));
    assert_eq!(pod["tolerations"][0]["key"], "dedicated");
    assert_eq!(
        deployment["spec"]["template"]["metadata"]["annotations"]["example.com/team"],
        "platform"
    );
    let default = self::manifests(answer, "default");
    assert!(
        only(&default, "Deployment")["spec"]["template"]["spec"]
            .get("priorityClassName")
            .is_none()
    );
}

#[test]
fn the_network_policy_admits_each_port_from_its_peers_only() {
    let Some(answer) = answer() else { return };
    assert!(
        find(&manifests(answer, "default"), "NetworkPolicy").is_empty(),
        "opt-in"
    );
    let manifests = manifests(answer, "network-policy");
    let policy = only(&manifests, "NetworkPolicy");
    let selector = &only(&manifests, "Deployment")["spec"]["selector"]["matchLabels"];
    assert_eq!(&policy["spec"]["podSelector"]["matchLabels"], selector);
    // Ingress only: egress must reach the API server, PostgreSQL and external registries.
    assert_eq!(policy["spec"]["policyTypes"], json!(["Ingress"]));
    assert!(policy["spec"].get("egress").is_none());
    let rules: BTreeMap<String, &Value> = policy["spec"]["ingress"]
        .as_array()
        .unwrap()
        .iter()
        .map(|rule| {
            assert_eq!(rule["ports"].as_array().unwrap().len(), 1, "{rule}");
            assert_eq!(rule["ports"][0]["protocol"], "TCP");
            (rule["ports"][0]["port"].as_str().unwrap().to_owned(), &rule["from"])
        })
        .collect();
    assert_eq!(
        rules.keys().map(String::as_str).collect::<Vec<_>>(),
        ["metrics", "registry", "webhook"]
    );
    assert_eq!(
        rules["registry"],
        &json!([
            {"namespaceSelector": {"matchLabels": {"schemaops.dev/registry-client": "true"}}},
            {"podSelector": {"matchLabels": {"app": "orders-service"}}},
        ])
    );
    assert_eq!(
        rules["metrics"],
        &json!([{"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "monitoring"}}}])
    );
    assert_eq!(
        rules["webhook"],
        &json!([{"ipBlock": {"cidr": "0.0.0.0/0"}}, {"ipBlock": {"cidr": "::/0"}}])
    );
    // The named ports exist on the container.
    let ports: BTreeSet<&str> = container(&manifests)["ports"]
        .as_array()
        .unwrap()
        .iter()
        .map(|port| port["name"].as_str().unwrap())
        .collect();
    assert_eq!(ports, BTreeSet::from(["metrics", "registry", "webhook"]));
}

/// Every leaf of `values.yaml` (a scalar, a list, or an empty map), as `(dotted key, value)`.
fn leaves(prefix: &str, value: &Value, into: &mut BTreeMap<String, Value>) {
    match value {
        Value::Object(map) if !map.is_empty() => {
            for (key, child) in map {
                let dotted = if prefix.is_empty() {
                    key.clone()
                } else {
                    format!("{prefix}.{key}")
                };
                leaves(&dotted, child, into);
            }
        }
        _ => {
            into.insert(prefix.to_owned(), value.clone());
        }
    }
}

/// The chart README's values table lists every leaf of `values.yaml` once, with its default (as
/// JSON), a type and a description, and nothing else.
#[test]
fn the_chart_readme_values_table_matches_values_yaml() {
    let values: Value =
        serde_saphyr::from_str(&std::fs::read_to_string(chart_dir().join("values.yaml")).unwrap()).unwrap();
    let mut expected = BTreeMap::new();
    leaves("", &values, &mut expected);
    assert!(expected.len() > 50, "{expected:?}");

    let readme = std::fs::read_to_string(chart_dir().join("README.md")).unwrap();
    let mut table = BTreeMap::new();
    for row in readme.lines().filter(|line| line.starts_with("| `")) {
        let cells: Vec<&str> = row.trim_matches('|').split(" | ").map(str::trim).collect();
        assert_eq!(cells.len(), 4, "key, type, default, description: {row}");
        let key = cells[0].trim_matches('`').to_owned();
        let default: Value = serde_json::from_str(cells[2].trim_matches('`'))
            .unwrap_or_else(|error| panic!("{key}: the default is not JSON ({error}): {row}"));
        assert!(!cells[1].is_empty() && !cells[3].is_empty(), "{row}");
        assert!(table.insert(key.clone(), default).is_none(), "{key} has two rows");
    }
    let missing: Vec<&String> = expected.keys().filter(|key| !table.contains_key(*key)).collect();
    let extra: Vec<&String> = table.keys().filter(|key| !expected.contains_key(*key)).collect();
    assert!(
        missing.is_empty(),
        "values without a row in charts/schemaops/README.md: {missing:?}"
    );
    assert!(
        extra.is_empty(),
        "rows for values that values.yaml does not have: {extra:?}"
    );
    for (key, default) in &expected {
        assert_eq!(&table[key], default, "the README's default of {key}");
    }
}

/// Whether the test API server serves this kind (cert-manager and Prometheus operator kinds come
/// from CRDs that are not installed there).
fn served(manifest: &Value) -> bool {
    !matches!(
        manifest["kind"].as_str(),
        Some("Certificate" | "Issuer" | "ServiceMonitor")
    )
}

#[test]
fn kubectl_applies_the_rendered_manifests_crds_first() {
    let Some(answer) = answer() else { return };
    let server = apiserver::TestApiServer::start();
    let run = |args: &[&str]| {
        let output = server.kubectl().args(args).output().expect("kubectl runs");
        assert!(
            output.status.success(),
            "kubectl {args:?} failed:\n{}{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
        String::from_utf8_lossy(&output.stdout).into_owned()
    };
    let crds = tempfile::tempdir().unwrap();
    for (name, text) in answer["crds"].as_object().unwrap() {
        let file = Path::new(name).file_name().unwrap();
        std::fs::write(crds.path().join(file), text.as_str().unwrap()).unwrap();
    }
    run(&["apply", "-f", crds.path().to_str().unwrap()]);
    run(&["create", "namespace", "team-a"]);
    for (scenario, _) in scenarios() {
        let namespace = format!("ns-{scenario}");
        run(&["create", "namespace", &namespace]);
        let folder = tempfile::tempdir().unwrap();
        let manifests: Vec<Value> = manifests(answer, scenario).into_iter().filter(served).collect();
        for (index, manifest) in manifests.iter().enumerate() {
            let path = folder.path().join(format!("{index:02}.json"));
            std::fs::write(path, serde_json::to_vec_pretty(manifest).unwrap()).unwrap();
        }
        run(&["apply", "-f", folder.path().to_str().unwrap()]);
        let deployment = format!("deployment/{scenario}-schemaops");
        let applied = run(&["-n", &namespace, "get", &deployment, "-o", "json"]);
        let applied: Value = serde_json::from_str(&applied).unwrap();
        assert_eq!(
            applied["spec"]["template"]["spec"]["serviceAccountName"],
            format!("{scenario}-schemaops").as_str()
        );
        let listed = run(&[
            "-n",
            &namespace,
            "get",
            "serviceaccounts,services,roles,rolebindings",
            "-o",
            "name",
        ]);
        assert!(
            listed.contains(&format!("serviceaccount/{scenario}-schemaops")),
            "{listed}"
        );
    }
    let cluster = run(&["get", "clusterroles,clusterrolebindings", "-o", "name"]);
    for expected in [
        "clusterrole.rbac.authorization.k8s.io/default-schemaops",
        "clusterrole.rbac.authorization.k8s.io/namespaced-schemaops-policy",
        "clusterrolebinding.rbac.authorization.k8s.io/default-schemaops-policy",
    ] {
        assert!(cluster.contains(expected), "{expected} in {cluster}");
    }
    let budgets = run(&["-n", "ns-postgres-ha", "get", "poddisruptionbudgets", "-o", "name"]);
    assert!(
        budgets.contains("poddisruptionbudget.policy/postgres-ha-schemaops"),
        "{budgets}"
    );
    let policies = run(&["-n", "ns-network-policy", "get", "networkpolicies", "-o", "name"]);
    assert!(
        policies.contains("networkpolicy.networking.k8s.io/network-policy-schemaops"),
        "{policies}"
    );
    let hooks = run(&["get", "validatingwebhookconfigurations", "-o", "name"]);
    assert!(hooks.contains("webhook-schemaops-webhook"), "{hooks}");
    // A first Schema after the install, as NOTES.txt says.
    let schema = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(
        schema.path(),
        "apiVersion: schemaops.dev/v1alpha1\nkind: Schema\nmetadata:\n  name: orders-value\n  namespace: default\nspec:\n  subject: orders-value\n  schema: '{\"type\": \"string\"}'\n",
    )
    .unwrap();
    run(&["apply", "-f", schema.path().to_str().unwrap()]);
    // A cluster-scoped SchemaPolicy, listed by its short name and with the other kinds.
    let policy = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(
        policy.path(),
        "apiVersion: schemaops.dev/v1alpha1\nkind: SchemaPolicy\nmetadata:\n  name: prod\nspec:\n  rules:\n    deletionPolicies: [Retain]\n",
    )
    .unwrap();
    run(&["apply", "-f", policy.path().to_str().unwrap()]);
    let policies = run(&["get", "schpol"]);
    let header = policies.lines().next().unwrap_or_default();
    for column in ["NAME", "ACTIONS", "MATCHED", "VIOLATIONS", "READY", "AGE"] {
        assert!(header.contains(column), "{policies}");
    }
    assert!(policies.contains("prod"), "{policies}");
    let all = run(&["get", "schemaops", "--all-namespaces", "-o", "name"]);
    for expected in ["schema.schemaops.dev/orders-value", "schemapolicy.schemaops.dev/prod"] {
        assert!(all.contains(expected), "{expected} in {all}");
    }
}

/// The Helm-generated webhook certificate, loaded as the operator loads `--webhook-cert-file`,
/// completes a TLS handshake (in memory) with a client that trusts only `caBundle`, under the
/// Service's in-cluster name, as the API server calls it.
#[test]
fn the_generated_webhook_certificate_is_trusted_through_the_ca_bundle() {
    use base64::Engine;
    use rustls_pki_types::CertificateDer;
    use rustls_pki_types::pem::PemObject;

    let Some(answer) = answer() else { return };
    let manifests = manifests(answer, "webhook");
    let secret = webhook_secret(&manifests).unwrap();
    let hook = &only(&manifests, "ValidatingWebhookConfiguration")["webhooks"][0]["clientConfig"];
    let decode = |value: &Value| {
        base64::engine::general_purpose::STANDARD
            .decode(value.as_str().unwrap())
            .unwrap()
    };
    let folder = tempfile::tempdir().unwrap();
    let (certificate, key) = (folder.path().join("tls.crt"), folder.path().join("tls.key"));
    std::fs::write(&certificate, decode(&secret["data"]["tls.crt"])).unwrap();
    std::fs::write(&key, decode(&secret["data"]["tls.key"])).unwrap();
    let identity = schemaops::webhook::tls::Identity::from_files(&certificate, &key).unwrap();
    let server_config = identity.server_config().unwrap();

    let mut roots = rustls::RootCertStore::empty();
    for certificate in CertificateDer::pem_slice_iter(&decode(&hook["caBundle"])) {
        roots.add(certificate.unwrap()).unwrap();
    }
    let client_config =
        rustls::ClientConfig::builder_with_provider(std::sync::Arc::new(rustls::crypto::ring::default_provider()))
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_root_certificates(roots)
            .with_no_client_auth();
    let name = format!("{}.ns-webhook.svc", hook["service"]["name"].as_str().unwrap());
    let mut client =
        rustls::ClientConnection::new(std::sync::Arc::new(client_config), name.clone().try_into().unwrap()).unwrap();
    let mut server = rustls::ServerConnection::new(server_config).unwrap();
    for _ in 0..10 {
        if !client.is_handshaking() && !server.is_handshaking() {
            return;
        }
        let mut bytes = Vec::new();
        client.write_tls(&mut bytes).unwrap();
        server.read_tls(&mut bytes.as_slice()).unwrap();
        server.process_new_packets().unwrap();
        bytes.clear();
        server.write_tls(&mut bytes).unwrap();
        client.read_tls(&mut bytes.as_slice()).unwrap();
        client
            .process_new_packets()
            .unwrap_or_else(|error| panic!("the client refuses the certificate for {name}: {error}"));
    }
    panic!("the TLS handshake for {name} did not finish");
}
