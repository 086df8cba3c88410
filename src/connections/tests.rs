use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use async_trait::async_trait;
use kube::api::ObjectMeta;
use serde_json::json;

use super::rules::{Source, SourceKind};
use super::*;
use crate::crd::{ClusterSchemaRegistrySpec, ConnectionSpec, SchemaRegistrySpec};
use crate::registry::external::ExternalAuth;

/// Fixed cluster contents; counts the Secret and ConfigMap reads.
#[derive(Default)]
struct Fixed {
    namespaced: Vec<SchemaRegistry>,
    cluster: Vec<ClusterSchemaRegistry>,
    labels: BTreeMap<String, BTreeMap<String, String>>,
    sources: Mutex<BTreeMap<Source, Fetched>>,
    source_reads: AtomicUsize,
}

#[async_trait]
impl ClusterReads for Fixed {
    async fn schema_registry(&self, namespace: &str, name: &str) -> Result<Option<SchemaRegistry>, ResolveError> {
        Ok(self
            .namespaced
            .iter()
            .find(|object| {
                object.metadata.namespace.as_deref() == Some(namespace) && object.metadata.name.as_deref() == Some(name)
            })
            .cloned())
    }

    async fn cluster_schema_registry(&self, name: &str) -> Result<Option<ClusterSchemaRegistry>, ResolveError> {
        Ok(self
            .cluster
            .iter()
            .find(|object| object.metadata.name.as_deref() == Some(name))
            .cloned())
    }

    async fn namespace_labels(&self, name: &str) -> Result<BTreeMap<String, String>, ResolveError> {
        Ok(self.labels.get(name).cloned().unwrap_or_default())
    }

    async fn source(&self, source: &Source) -> Result<Option<Fetched>, ResolveError> {
        self.source_reads.fetch_add(1, Ordering::Relaxed);
        Ok(self.sources.lock().unwrap().get(source).cloned())
    }
}

fn meta(namespace: Option<&str>, name: &str) -> ObjectMeta {
    ObjectMeta {
        name: Some(name.to_owned()),
        namespace: namespace.map(str::to_owned),
        uid: Some(format!("uid-{name}")),
        generation: Some(1),
        ..ObjectMeta::default()
    }
}

fn spec(value: serde_json::Value) -> ConnectionSpec {
    serde_json::from_value(value).unwrap()
}

fn basic(namespace: Option<&str>) -> ConnectionSpec {
    let mut reference = json!({"name": "registry-credentials", "key": "password"});
    if let Some(namespace) = namespace {
        reference["namespace"] = json!(namespace);
    }
    spec(json!({"external": {
        "urls": ["http://registry-a.example:8081"],
        "auth": {"basic": {"username": "alice", "passwordSecretRef": reference}},
    }}))
}

fn namespaced(namespace: &str, name: &str, connection: ConnectionSpec) -> SchemaRegistry {
    SchemaRegistry {
        metadata: meta(Some(namespace), name),
        spec: SchemaRegistrySpec { connection },
        status: Some(ready_status(1)),
    }
}

/// The status the connection controller writes for a Ready connection of `generation`.
fn ready_status(generation: i64) -> crate::crd::ConnectionStatus {
    let check = status::Check::Ready {
        endpoint: "embedded".to_owned(),
        capabilities: crate::crd::RegistryCapabilities::default(),
    };
    let now = k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(k8s_openapi::jiff::Timestamp::UNIX_EPOCH);
    status::render_status(&check, Some(generation), 0, None, &now)
}

fn cluster(name: &str, connection: ConnectionSpec, allowed: serde_json::Value) -> ClusterSchemaRegistry {
    ClusterSchemaRegistry {
        metadata: meta(None, name),
        spec: ClusterSchemaRegistrySpec {
            connection,
            allowed_namespaces: serde_json::from_value(allowed).unwrap(),
        },
        status: Some(ready_status(1)),
    }
}

fn secret(namespace: &str, name: &str, version: &str, data: &[(&str, &str)]) -> (Source, Fetched) {
    (
        Source {
            kind: SourceKind::Secret,
            namespace: namespace.to_owned(),
            name: name.to_owned(),
        },
        Fetched {
            resource_version: version.to_owned(),
            data: data
                .iter()
                .map(|(key, value)| ((*key).to_owned(), value.as_bytes().to_vec()))
                .collect(),
        },
    )
}

fn reference(kind: RegistryKind, name: &str) -> RegistryRef {
    RegistryRef {
        kind,
        name: name.to_owned(),
    }
}

async fn embedded(folder: &std::path::Path) -> Arc<dyn Registry> {
    Arc::new(
        crate::commands::registry::open_registry(&folder.join("registry.db"), None, Checker::default())
            .await
            .unwrap(),
    )
}

struct World {
    _folder: tempfile::TempDir,
    default: Arc<dyn Registry>,
    reads: Arc<Fixed>,
    connections: Connections,
}

async fn world(fixed: Fixed, with_embedded: bool) -> World {
    let folder = tempfile::tempdir().unwrap();
    let default = embedded(folder.path()).await;
    let reads = Arc::new(fixed);
    let connections = Connections::new(
        Arc::clone(&default),
        with_embedded.then(|| Arc::clone(&default)),
        Arc::clone(&reads) as Arc<dyn ClusterReads>,
        Checker::default(),
    );
    World {
        _folder: folder,
        default,
        reads,
        connections,
    }
}

fn team_a_fixed() -> Fixed {
    Fixed {
        namespaced: vec![namespaced("team-a", "orders", basic(None))],
        sources: Mutex::new(BTreeMap::from([secret(
            "team-a",
            "registry-credentials",
            "7",
            &[("password", "s3cret\n")],
        )])),
        ..Fixed::default()
    }
}

#[tokio::test]
async fn an_object_without_a_ref_uses_the_default_registry() {
    let world = world(Fixed::default(), false).await;
    let resolved = world.connections.resolve("team-a", None).await.unwrap();
    assert!(Arc::ptr_eq(&resolved.registry, &world.default));
    assert_eq!(resolved.connection, None);
    assert!(!resolved.read_only);
}

#[tokio::test]
async fn a_schema_registry_is_found_only_from_its_own_namespace() {
    let world = world(team_a_fixed(), false).await;
    let orders = reference(RegistryKind::SchemaRegistry, "orders");
    let resolved = world.connections.resolve("team-a", Some(&orders)).await.unwrap();
    assert!(!Arc::ptr_eq(&resolved.registry, &world.default));
    assert_eq!(resolved.connection, Some(orders.clone()));
    let error = world.connections.resolve("team-b", Some(&orders)).await.unwrap_err();
    assert_eq!(error.reason(), "RegistryNotFound");
    assert_eq!(
        error.to_string(),
        "SchemaRegistry/orders does not exist in namespace team-b"
    );
    let missing = reference(RegistryKind::ClusterSchemaRegistry, "orders");
    let error = world.connections.resolve("team-a", Some(&missing)).await.unwrap_err();
    assert_eq!(error.reason(), "RegistryNotFound");
    assert_eq!(error.to_string(), "ClusterSchemaRegistry/orders does not exist");
}

#[tokio::test]
async fn a_cluster_registry_serves_only_the_namespaces_it_allows() {
    let embedded_spec = || spec(json!({"embedded": {}}));
    let fixed = Fixed {
        cluster: vec![
            cluster("by-name", embedded_spec(), json!({"names": ["team-a"]})),
            cluster(
                "by-label",
                embedded_spec(),
                json!({"selector": {"matchLabels": {"tier": "prod"}}}),
            ),
            cluster("everyone", embedded_spec(), json!({"selector": {}})),
            cluster("nobody", embedded_spec(), json!(null)),
        ],
        labels: BTreeMap::from([
            ("team-a".to_owned(), BTreeMap::new()),
            (
                "team-b".to_owned(),
                BTreeMap::from([("tier".to_owned(), "prod".to_owned())]),
            ),
        ]),
        ..Fixed::default()
    };
    let world = world(fixed, true).await;
    for (name, namespace, allowed) in [
        ("by-name", "team-a", true),
        ("by-name", "team-b", false),
        ("by-label", "team-b", true),
        ("by-label", "team-a", false),
        ("everyone", "team-c", true),
        ("nobody", "team-a", false),
    ] {
        let reference = reference(RegistryKind::ClusterSchemaRegistry, name);
        let outcome = world.connections.resolve(namespace, Some(&reference)).await;
        match (outcome, allowed) {
            (Ok(resolved), true) => assert!(Arc::ptr_eq(&resolved.registry, &world.default), "{name}"),
            (Err(error), false) => {
                assert_eq!(error.reason(), "RegistryNotAllowed", "{name} from {namespace}");
                assert!(error.to_string().contains(namespace), "{error}");
            }
            (outcome, _) => panic!("{name} from {namespace}: {outcome:?}"),
        }
    }
}

#[tokio::test]
async fn an_embedded_connection_needs_an_operator_that_runs_the_embedded_registry() {
    let fixed = Fixed {
        namespaced: vec![namespaced(
            "team-a",
            "local",
            spec(json!({"embedded": {}, "readOnly": true})),
        )],
        ..Fixed::default()
    };
    let without = world(fixed, false).await;
    let local = reference(RegistryKind::SchemaRegistry, "local");
    let error = without.connections.resolve("team-a", Some(&local)).await.unwrap_err();
    assert_eq!(error.reason(), "EmbeddedRegistryUnavailable");
    let fixed = Fixed {
        namespaced: vec![namespaced(
            "team-a",
            "local",
            spec(json!({"embedded": {}, "readOnly": true})),
        )],
        ..Fixed::default()
    };
    let with = world(fixed, true).await;
    let resolved = with.connections.resolve("team-a", Some(&local)).await.unwrap();
    assert!(resolved.read_only);
}

#[tokio::test]
async fn a_missing_secret_or_key_is_named_in_its_own_reason() {
    let world = world(
        Fixed {
            namespaced: vec![namespaced("team-a", "orders", basic(None))],
            ..Fixed::default()
        },
        false,
    )
    .await;
    let orders = reference(RegistryKind::SchemaRegistry, "orders");
    let error = world.connections.resolve("team-a", Some(&orders)).await.unwrap_err();
    assert_eq!(error.reason(), "SecretNotFound");
    assert!(error.is_credentials());
    assert!(
        error.to_string().contains("Secret team-a/registry-credentials"),
        "{error}"
    );
    let (source, fetched) = secret("team-a", "registry-credentials", "1", &[("user", "alice")]);
    world.reads.sources.lock().unwrap().insert(source, fetched);
    let error = world.connections.resolve("team-a", Some(&orders)).await.unwrap_err();
    assert_eq!(error.reason(), "SecretKeyMissing");
    assert!(error.to_string().ends_with("has no usable key password"), "{error}");
}

#[tokio::test]
async fn a_client_is_reused_until_its_secret_or_generation_changes() {
    let mut fixed = team_a_fixed();
    let mut changed = namespaced("team-a", "orders", basic(None));
    changed.metadata.name = Some("orders-v2".to_owned());
    changed.metadata.generation = Some(2);
    fixed.namespaced.push(changed);
    let world = world(fixed, false).await;
    let orders = reference(RegistryKind::SchemaRegistry, "orders");
    let first = world.connections.resolve("team-a", Some(&orders)).await.unwrap();
    let second = world.connections.resolve("team-a", Some(&orders)).await.unwrap();
    assert!(Arc::ptr_eq(&first.registry, &second.registry), "same key, same client");
    assert_eq!(
        world.reads.source_reads.load(Ordering::Relaxed),
        2,
        "each resolve reads the Secret by name"
    );
    // A rotated password: the Secret's resourceVersion moves on.
    let (source, fetched) = secret("team-a", "registry-credentials", "8", &[("password", "rotated")]);
    world.reads.sources.lock().unwrap().insert(source, fetched);
    let rotated = world.connections.resolve("team-a", Some(&orders)).await.unwrap();
    assert!(
        !Arc::ptr_eq(&first.registry, &rotated.registry),
        "a rotated Secret rebuilds the client"
    );
    let again = world.connections.resolve("team-a", Some(&orders)).await.unwrap();
    assert!(Arc::ptr_eq(&rotated.registry, &again.registry));
    // A new generation of the connection rebuilds it too.
    let connection = world.connections.connection("team-a", &orders).await.unwrap();
    let key = world.connections.client(&connection).await.unwrap().key;
    let newer = Connection {
        generation: key.generation + 1,
        ..connection
    };
    let rebuilt = world.connections.client(&newer).await.unwrap();
    assert_ne!(key, rebuilt.key);
    assert!(!Arc::ptr_eq(&rebuilt.registry, &again.registry));
}

#[tokio::test]
async fn secrets_come_from_the_connections_own_namespace_or_the_one_a_cluster_connection_names() {
    let fixed = Fixed {
        namespaced: vec![namespaced("team-a", "elsewhere", basic(Some("platform")))],
        cluster: vec![
            cluster("no-namespace", basic(None), json!({"names": ["team-a"]})),
            cluster("platform", basic(Some("platform")), json!({"names": ["team-a"]})),
        ],
        sources: Mutex::new(BTreeMap::from([secret(
            "platform",
            "registry-credentials",
            "3",
            &[("password", "p")],
        )])),
        ..Fixed::default()
    };
    let world = world(fixed, false).await;
    for (kind, name, expected) in [
        (
            RegistryKind::SchemaRegistry,
            "elsewhere",
            Some("reads only its own namespace team-a"),
        ),
        (
            RegistryKind::ClusterSchemaRegistry,
            "no-namespace",
            Some("must name the namespace"),
        ),
        (RegistryKind::ClusterSchemaRegistry, "platform", None),
    ] {
        let outcome = world.connections.resolve("team-a", Some(&reference(kind, name))).await;
        match (outcome, expected) {
            (Ok(_), None) => {}
            (Err(error), Some(expected)) => {
                assert_eq!(error.reason(), "InvalidRegistryConnection", "{name}");
                assert!(error.to_string().contains(expected), "{error}");
            }
            (outcome, _) => panic!("{name}: {outcome:?}"),
        }
    }
}

#[tokio::test]
async fn a_connection_being_deleted_takes_no_objects() {
    let mut object = namespaced("team-a", "orders", spec(json!({"embedded": {}})));
    object.metadata.deletion_timestamp = Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(
        k8s_openapi::jiff::Timestamp::from_second(1).unwrap(),
    ));
    let world = world(
        Fixed {
            namespaced: vec![object],
            ..Fixed::default()
        },
        true,
    )
    .await;
    let error = world
        .connections
        .resolve("team-a", Some(&reference(RegistryKind::SchemaRegistry, "orders")))
        .await
        .unwrap_err();
    assert_eq!(error.reason(), "RegistryDeleting");
    // The objects already bound clean up through it: its finalizer waits for them.
    let cleanup = world
        .connections
        .resolve_for_cleanup("team-a", Some(&reference(RegistryKind::SchemaRegistry, "orders")))
        .await
        .unwrap();
    assert!(cleanup.connection.is_some());
}

#[tokio::test]
async fn objects_wait_for_a_connection_that_is_not_ready_for_its_generation() {
    let mut unchecked = namespaced("team-a", "unchecked", spec(json!({"embedded": {}})));
    unchecked.status = None;
    let mut stale = namespaced("team-a", "stale", spec(json!({"embedded": {}})));
    stale.metadata.generation = Some(2);
    let mut down = namespaced("team-a", "down", spec(json!({"embedded": {}})));
    let check = status::Check::Unreachable {
        endpoint: "http://registry:8081".to_owned(),
        message: "connection refused".to_owned(),
    };
    let now = k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(k8s_openapi::jiff::Timestamp::UNIX_EPOCH);
    down.status = Some(status::render_status(&check, Some(1), 0, None, &now));
    let world = world(
        Fixed {
            namespaced: vec![unchecked, stale, down],
            ..Fixed::default()
        },
        true,
    )
    .await;
    for (name, reason, says) in [
        ("unchecked", "NotChecked", "has not been checked yet"),
        ("stale", "NotChecked", "its current generation"),
        ("down", "RegistryUnavailable", "connection refused"),
    ] {
        let reference = reference(RegistryKind::SchemaRegistry, name);
        let error = world.connections.resolve("team-a", Some(&reference)).await.unwrap_err();
        assert_eq!(error.reason(), "RegistryNotReady", "{name}");
        let message = error.to_string();
        assert!(message.contains(reason) && message.contains(says), "{name}: {message}");
        assert!(
            world
                .connections
                .resolve_for_cleanup("team-a", Some(&reference))
                .await
                .is_ok()
        );
    }
}

#[test]
fn claims_are_per_registry_and_a_schema_registry_is_its_namespaces() {
    let named = |kind, name| Some(reference(kind, name));
    let default = RegistryScope::of("team-a", None);
    let a = RegistryScope::of("team-a", named(RegistryKind::SchemaRegistry, "orders").as_ref());
    let b = RegistryScope::of("team-b", named(RegistryKind::SchemaRegistry, "orders").as_ref());
    let shared_a = RegistryScope::of("team-a", named(RegistryKind::ClusterSchemaRegistry, "shared").as_ref());
    let shared_b = RegistryScope::of("team-b", named(RegistryKind::ClusterSchemaRegistry, "shared").as_ref());
    assert_eq!(default, RegistryScope::of("team-b", None));
    assert_ne!(a, b);
    assert_ne!(a, default);
    assert_eq!(shared_a, shared_b);
}

#[tokio::test]
async fn unusable_ca_text_is_invalid_tls_material() {
    let connection = spec(json!({"external": {
        "urls": ["https://registry.example"],
        "tls": {"ca": {"secretKeyRef": {"name": "ca", "key": "ca.crt"}}},
    }}));
    let world = world(
        Fixed {
            namespaced: vec![namespaced("team-a", "orders", connection)],
            sources: Mutex::new(BTreeMap::from([secret(
                "team-a",
                "ca",
                "1",
                &[("ca.crt", "not a certificate")],
            )])),
            ..Fixed::default()
        },
        false,
    )
    .await;
    let error = world
        .connections
        .resolve("team-a", Some(&reference(RegistryKind::SchemaRegistry, "orders")))
        .await
        .unwrap_err();
    assert_eq!(error.reason(), "InvalidTlsMaterial");
}

#[test]
fn the_external_config_carries_the_secrets_values_context_and_timeouts() {
    let object = namespaced(
        "team-a",
        "orders",
        spec(json!({"external": {
            "urls": ["https://registry.example/base/"],
            "context": "orders",
            "auth": {"bearer": {"tokenSecretRef": {"name": "token", "key": "jwt"}}},
            "timeouts": {"attemptSeconds": 30, "deadlineSeconds": 5},
        }})),
    );
    let connection = Connection::from_namespaced(&object);
    let rules::Target::External(external) = rules::target(&connection).unwrap() else {
        panic!("external")
    };
    let fetched = BTreeMap::from([secret("team-a", "token", "1", &[("jwt", "tok-1\n")])]);
    let config = credentials::external_config(&connection, external, &external.urls[0], &fetched).unwrap();
    assert_eq!(config.auth, ExternalAuth::Bearer("tok-1".to_owned()));
    assert_eq!(config.display_url(), "https://registry.example/base/contexts/.orders");
    assert_eq!(config.timeout, std::time::Duration::from_secs(30));
    assert_eq!(
        config.deadline,
        std::time::Duration::from_secs(30),
        "a call allows at least one attempt"
    );
    assert!(!format!("{config:?}").contains("tok-1"));
    assert_eq!(
        rules::sources(&connection).unwrap(),
        [Source {
            kind: SourceKind::Secret,
            namespace: "team-a".to_owned(),
            name: "token".to_owned(),
        }]
    );
}

#[test]
fn neither_or_both_registries_is_an_invalid_connection() {
    for value in [json!({}), json!({"embedded": {}, "external": {"urls": ["http://r"]}})] {
        let connection = Connection::from_namespaced(&namespaced("team-a", "x", spec(value.clone())));
        let error = rules::target(&connection).unwrap_err();
        assert_eq!(error.reason(), "InvalidRegistryConnection", "{value}");
    }
    let connection = Connection::from_namespaced(&namespaced(
        "team-a",
        "x",
        spec(json!({"external": {"urls": ["ftp://r"]}})),
    ));
    assert_eq!(
        rules::target(&connection).unwrap_err().reason(),
        "InvalidRegistryConnection"
    );
}

#[test]
fn settings_a_ready_registry_lacks_are_refused_and_nothing_else() {
    use rules::{SettingsAsked, unsupported_settings};
    // Ready for its generation, with nothing but the defaults: no subject modes, contracts unknown.
    let mut connection = Connection::from_namespaced(&namespaced("team-k", "karapace", basic(None)));
    let mode = SettingsAsked {
        manage: true,
        subject_mode: true,
        contract_settings: false,
    };
    let refused = unsupported_settings(&connection, mode).unwrap();
    assert!(
        refused.starts_with("spec.mode: ") && refused.contains("SchemaRegistry/karapace"),
        "{refused}"
    );
    let contracts = SettingsAsked {
        manage: true,
        subject_mode: false,
        contract_settings: true,
    };
    assert_eq!(
        unsupported_settings(&connection, contracts),
        None,
        "not probed: not known"
    );
    connection.capabilities.as_mut().unwrap().contracts = Some(false);
    assert!(
        unsupported_settings(&connection, contracts)
            .unwrap()
            .contains("data-contract settings")
    );

    // Observed, through a read-only connection, or not checked for this generation: nothing is known to fail.
    let observed = SettingsAsked { manage: false, ..mode };
    assert_eq!(unsupported_settings(&connection, observed), None);
    let mut read_only = connection.clone();
    read_only.spec.read_only = true;
    assert_eq!(unsupported_settings(&read_only, mode), None);
    let unchecked = Connection {
        generation: connection.generation + 1,
        ..connection.clone()
    };
    assert_eq!(unsupported_settings(&unchecked, mode), None);
    connection.capabilities.as_mut().unwrap().subject_mode = true;
    assert_eq!(unsupported_settings(&connection, mode), None);
}
