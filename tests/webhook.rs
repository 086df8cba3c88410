//! The validating admission webhook (issue 7): reviews judged through the
//! router with no socket, the HTTPS server with a generated and a file
//! certificate, the manifests, and the operator binary serving it.

#[path = "support/apiserver/mod.rs"]
mod apiserver;
mod support;

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use axum::body::Body;
use axum::http::{Request, StatusCode};
use http_body_util::BodyExt as _;
use k8s_openapi::api::admissionregistration::v1::ValidatingWebhookConfiguration;
use k8s_openapi::api::core::v1::Service;
use rustls_pki_types::CertificateDer;
use rustls_pki_types::pem::PemObject as _;
use schemaops::compat::{Checker, Format, Mode};
use schemaops::crd::Schema;
use schemaops::http_server::ServerLimits;
use schemaops::registry::{self, NewSchema, RegisterOptions, Registry, SubjectName};
use schemaops::webhook::review::REGISTRY_UNREACHABLE;
use schemaops::webhook::tls::Identity;
use schemaops::webhook::{Admission, FixedConfigMaps, FixedView, server};
use serde_json::{Value, json};
use tower::ServiceExt as _;

const SUBJECT: &str = "orders-value";

fn avro(fields: &str) -> String {
    format!(r#"{{"type":"record","name":"Order","namespace":"com.example","fields":[{fields}]}}"#)
}

fn v1() -> String {
    avro(r#"{"name":"id","type":"string"}"#)
}

/// Adds `amount` and `currency` without defaults: new readers cannot read version 1's data.
fn incompatible() -> String {
    avro(r#"{"name":"id","type":"string"},{"name":"amount","type":"long"},{"name":"currency","type":"string"}"#)
}

fn compatible() -> String {
    avro(r#"{"name":"id","type":"string"},{"name":"amount","type":"long","default":0}"#)
}

fn schema_object(name: &str, subject: &str, text: &str) -> Value {
    json!({
        "apiVersion": "schemaops.dev/v1alpha1",
        "kind": "Schema",
        "metadata": {"name": name, "namespace": "default", "creationTimestamp": "2026-01-01T00:00:00Z"},
        "spec": {"subject": subject, "schemaType": "AVRO", "schema": text}
    })
}

fn review_body(operation: &str, object: Option<Value>, old_object: Option<Value>) -> Value {
    let name = object
        .as_ref()
        .or(old_object.as_ref())
        .and_then(|o| o["metadata"]["name"].as_str())
        .unwrap_or("orders")
        .to_owned();
    json!({
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": {
            "uid": "705ab4f5-6393-11e8-b7cc-42010a800002",
            "kind": {"group": "schemaops.dev", "version": "v1alpha1", "kind": "Schema"},
            "resource": {"group": "schemaops.dev", "version": "v1alpha1", "resource": "schemas"},
            "name": name,
            "namespace": "default",
            "operation": operation,
            "userInfo": {"username": "admin"},
            "object": object,
            "oldObject": old_object,
            "dryRun": false
        }
    })
}

/// An embedded registry on a temporary SQLite file, with `orders-value`
/// version 1 registered under the default BACKWARD level.
async fn registry_with_v1(folder: &Path) -> Arc<dyn Registry> {
    let registry = schemaops::commands::registry::open_registry(&folder.join("registry.db"), None, Checker::default())
        .await
        .unwrap();
    registry
        .register(
            &SubjectName::new(SUBJECT).unwrap(),
            &NewSchema {
                contract: Default::default(),
                format: Format::Avro,
                text: v1(),
                references: Vec::new(),
            },
            RegisterOptions::default(),
        )
        .await
        .unwrap();
    assert_eq!(registry.compatibility(None, true).await.unwrap(), Mode::Backward);
    Arc::new(registry)
}

fn admission(registry: Arc<dyn Registry>, view: FixedView) -> Arc<Admission> {
    Arc::new(Admission {
        registry,
        connections: None,
        checker: Checker::default(),
        view: Arc::new(view),
        config_maps: Arc::new(FixedConfigMaps::default()),
        namespace: None,
        policies: Default::default(),
    })
}

/// Posts `body` to the router with no socket; the status and the JSON reply (or text).
async fn post(admission: Arc<Admission>, body: String) -> (StatusCode, Value) {
    let response = server::router(admission)
        .oneshot(
            Request::post(server::VALIDATE_SCHEMAS_PATH)
                .header("content-type", "application/json")
                .body(Body::from(body))
                .unwrap(),
        )
        .await
        .unwrap();
    let status = response.status();
    let bytes = response.into_body().collect().await.unwrap().to_bytes();
    let value =
        serde_json::from_slice(&bytes).unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&bytes).into()));
    (status, value)
}

fn schema(value: &Value) -> Schema {
    serde_json::from_value(value.clone()).unwrap()
}

/// A registry whose every call fails as an unreachable one does.
struct Unreachable;

fn down<T>() -> Result<T, registry::Error> {
    Err(registry::Error::Store {
        action: "reach the registry",
        source: "connection refused".into(),
    })
}

#[async_trait]
impl Registry for Unreachable {
    async fn schema_by_id(&self, _: registry::SchemaId) -> Result<Arc<registry::SchemaContent>, registry::Error> {
        down()
    }
    async fn schema_by_guid(
        &self,
        _: registry::Guid,
    ) -> Result<(registry::SchemaId, Arc<registry::SchemaContent>), registry::Error> {
        down()
    }
    async fn contract_config(
        &self,
        _: Option<&SubjectName>,
    ) -> Result<registry::contract::ContractConfig, registry::Error> {
        down()
    }
    async fn update_contract_config(
        &self,
        _: Option<&SubjectName>,
        _: &registry::contract::ConfigPatch,
    ) -> Result<registry::contract::ContractConfig, registry::Error> {
        down()
    }
    async fn serialized_by_id(&self, _: registry::SchemaId) -> Result<String, registry::Error> {
        down()
    }
    async fn versions_of_id(
        &self,
        _: registry::SchemaId,
        _: bool,
    ) -> Result<Vec<registry::SubjectVersion>, registry::Error> {
        down()
    }
    async fn subjects(&self, _: &registry::SubjectFilter) -> Result<Vec<SubjectName>, registry::Error> {
        down()
    }
    async fn versions(
        &self,
        _: &SubjectName,
        _: registry::VersionFilter,
    ) -> Result<Vec<registry::Version>, registry::Error> {
        down()
    }
    async fn version(
        &self,
        _: &SubjectName,
        _: registry::VersionSelector,
        _: bool,
    ) -> Result<registry::VersionedSchema, registry::Error> {
        down()
    }
    async fn lookup(
        &self,
        _: &SubjectName,
        _: &NewSchema,
        _: bool,
    ) -> Result<registry::VersionedSchema, registry::Error> {
        down()
    }
    async fn register(
        &self,
        _: &SubjectName,
        _: &NewSchema,
        _: RegisterOptions,
    ) -> Result<registry::Registered, registry::Error> {
        down()
    }
    async fn check(
        &self,
        _: &SubjectName,
        _: &NewSchema,
        _: Option<registry::VersionSelector>,
    ) -> Result<registry::CompatibilityResult, registry::Error> {
        down()
    }
    async fn compatibility(&self, _: Option<&SubjectName>, _: bool) -> Result<Mode, registry::Error> {
        down()
    }
    async fn set_compatibility(&self, _: Option<&SubjectName>, _: Mode) -> Result<Mode, registry::Error> {
        down()
    }
    async fn delete_compatibility(&self, _: Option<&SubjectName>) -> Result<Mode, registry::Error> {
        down()
    }
    async fn mode(&self, _: Option<&SubjectName>, _: bool) -> Result<registry::RegistryMode, registry::Error> {
        down()
    }
    async fn set_mode(
        &self,
        _: Option<&SubjectName>,
        _: registry::RegistryMode,
        _: bool,
    ) -> Result<registry::RegistryMode, registry::Error> {
        down()
    }
    async fn delete_mode(&self, _: Option<&SubjectName>) -> Result<registry::RegistryMode, registry::Error> {
        down()
    }
    async fn delete_version(
        &self,
        _: &SubjectName,
        _: registry::VersionSelector,
        _: bool,
    ) -> Result<registry::Version, registry::Error> {
        down()
    }
    async fn delete_subject(&self, _: &SubjectName, _: bool) -> Result<Vec<registry::Version>, registry::Error> {
        down()
    }
    async fn referenced_by(
        &self,
        _: &SubjectName,
        _: registry::VersionSelector,
    ) -> Result<Vec<registry::SchemaId>, registry::Error> {
        down()
    }
    fn schema_types(&self) -> Vec<Format> {
        vec![Format::Avro]
    }
}

fn assert_echoes(reply: &Value) {
    assert_eq!(reply["apiVersion"], "admission.k8s.io/v1", "{reply:#}");
    assert_eq!(reply["kind"], "AdmissionReview");
    assert_eq!(reply["response"]["uid"], "705ab4f5-6393-11e8-b7cc-42010a800002");
}

#[tokio::test]
async fn a_compatible_create_is_allowed() {
    let folder = tempfile::tempdir().unwrap();
    let admission = admission(registry_with_v1(folder.path()).await, FixedView::default());
    let body = review_body("CREATE", Some(schema_object("orders", SUBJECT, &compatible())), None);
    let (status, reply) = post(admission, body.to_string()).await;
    assert_eq!(status, StatusCode::OK);
    assert_echoes(&reply);
    assert_eq!(reply["response"]["allowed"], true, "{reply:#}");
    assert!(reply["response"]["warnings"].is_null());
}

#[tokio::test]
async fn an_incompatible_update_is_denied_with_every_incompatibility_named() {
    let folder = tempfile::tempdir().unwrap();
    let mut old = schema_object("orders", SUBJECT, &v1());
    old["status"] = json!({"subject": SUBJECT, "version": 1});
    let mut new = schema_object("orders", SUBJECT, &incompatible());
    new["status"] = old["status"].clone();
    let view = FixedView {
        schemas: vec![schema(&old)],
        subject_configs: Vec::new(),
    };
    let admission = admission(registry_with_v1(folder.path()).await, view);
    let (status, reply) = post(admission, review_body("UPDATE", Some(new), Some(old)).to_string()).await;
    assert_eq!(status, StatusCode::OK);
    assert_echoes(&reply);
    let response = &reply["response"];
    assert_eq!(response["allowed"], false, "{reply:#}");
    assert_eq!(response["status"]["code"], 422);
    assert_eq!(response["status"]["reason"], "Invalid");
    let message = response["status"]["message"].as_str().unwrap();
    assert!(message.contains("BACKWARD"), "{message}");
    assert!(message.contains("version 1"), "{message}");
    assert!(message.contains("2 problems"), "{message}");
    for path in ["/fields/1", "/fields/2"] {
        let line = message
            .lines()
            .find(|line| line.contains(path))
            .unwrap_or_else(|| panic!("{path} is listed in {message}"));
        assert!(
            line.starts_with("- version 1, READER_FIELD_MISSING_DEFAULT_VALUE at "),
            "{line}"
        );
    }
}

#[tokio::test]
async fn an_unparseable_schema_is_denied_with_the_parsers_position() {
    let folder = tempfile::tempdir().unwrap();
    let admission = admission(registry_with_v1(folder.path()).await, FixedView::default());
    let other = tempfile::tempdir().unwrap();
    let broken = r#"{"type":"record","name":"Order","fields":[{"name":"id","type":"strin"}]}"#;
    let body = review_body("CREATE", Some(schema_object("orders", SUBJECT, broken)), None);
    let (_, reply) = post(admission, body.to_string()).await;
    let response = &reply["response"];
    assert_eq!(response["allowed"], false, "{reply:#}");
    assert_eq!(response["status"]["code"], 422);
    let message = response["status"]["message"].as_str().unwrap();
    assert!(message.contains("at /fields/0/type: unknown type `strin`"), "{message}");

    // A syntax error names its line and column.
    let fresh = crate::admission(registry_with_v1(other.path()).await, FixedView::default());
    let truncated = r#"{"type":"record","#;
    let body = review_body("CREATE", Some(schema_object("orders", SUBJECT, truncated)), None);
    let (_, reply) = post(fresh, body.to_string()).await;
    let message = reply["response"]["status"]["message"].as_str().unwrap();
    assert_eq!(reply["response"]["allowed"], false);
    assert!(message.contains("at line 1, column 17"), "{message}");
}

#[tokio::test]
async fn a_second_schema_for_a_managed_subject_is_denied_naming_the_owner() {
    let folder = tempfile::tempdir().unwrap();
    let mut owner = schema_object("orders", SUBJECT, &v1());
    owner["status"] = json!({"subject": SUBJECT, "version": 1});
    let view = FixedView {
        schemas: vec![schema(&owner)],
        subject_configs: Vec::new(),
    };
    let admission = admission(registry_with_v1(folder.path()).await, view);
    let body = review_body("CREATE", Some(schema_object("orders-copy", SUBJECT, &v1())), None);
    let (_, reply) = post(admission, body.to_string()).await;
    let response = &reply["response"];
    assert_eq!(response["allowed"], false, "{reply:#}");
    assert_eq!(response["status"]["code"], 403);
    assert_eq!(response["status"]["reason"], "Forbidden");
    assert!(
        response["status"]["message"]
            .as_str()
            .unwrap()
            .contains("Schema default/orders")
    );
}

#[tokio::test]
async fn delete_is_allowed_without_reading_anything() {
    let admission = admission(Arc::new(Unreachable), FixedView::default());
    let body = review_body("DELETE", None, Some(schema_object("orders", SUBJECT, &incompatible())));
    let (status, reply) = post(admission, body.to_string()).await;
    assert_eq!(status, StatusCode::OK);
    assert_echoes(&reply);
    assert_eq!(reply["response"]["allowed"], true);
    assert!(reply["response"]["warnings"].is_null());
}

#[tokio::test]
async fn a_malformed_body_or_a_review_without_request_is_a_bad_request() {
    let admission = admission(Arc::new(Unreachable), FixedView::default());
    let (status, reply) = post(Arc::clone(&admission), "{not json".to_owned()).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert!(
        reply
            .as_str()
            .unwrap()
            .contains("not an admission.k8s.io/v1 AdmissionReview"),
        "{reply}"
    );
    let empty = json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview"});
    let (status, reply) = post(admission, empty.to_string()).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert!(reply.as_str().unwrap().contains("no `request`"), "{reply}");
}

#[tokio::test]
async fn an_object_that_is_not_a_schema_is_denied_with_the_serde_message() {
    let admission = admission(Arc::new(Unreachable), FixedView::default());
    let mut object = schema_object("orders", SUBJECT, &v1());
    object["spec"]["schemaType"] = json!("XML");
    let (_, reply) = post(admission, review_body("CREATE", Some(object), None).to_string()).await;
    let response = &reply["response"];
    assert_eq!(response["allowed"], false, "{reply:#}");
    assert!(
        response["status"]["message"].as_str().unwrap().contains("XML"),
        "{reply:#}"
    );
}

/// Runs the schemaops binary with `args` in `folder`.
fn schemaops_cli(folder: &Path, args: &[&str]) -> std::process::Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_schemaops"))
        .args(args)
        .current_dir(folder)
        .env_remove("SCHEMAOPS_DATA")
        .env_remove("SCHEMAOPS_POLICY")
        .output()
        .unwrap()
}

/// Issue 36: the webhook holds an object to its CRD's schema as `check` and
/// `apply` hold the same object in a manifest: one verdict, one message.
#[tokio::test]
async fn fields_outside_the_crd_schema_get_the_verdict_and_message_check_and_apply_give() {
    let folder = tempfile::tempdir().unwrap();
    let admission = admission(registry_with_v1(folder.path()).await, FixedView::default());
    let with = |edit: &dyn Fn(&mut Value)| {
        let mut object = schema_object("orders", SUBJECT, &v1());
        edit(&mut object);
        object
    };
    let config = json!({
        "apiVersion": "schemaops.dev/v1alpha1", "kind": "SubjectConfig",
        "metadata": {"name": "orders", "namespace": "default"},
        "spec": {"subject": SUBJECT, "compatibilty": "FULL"}
    });
    let cases = [
        ("unknown", with(&|o| o["spec"]["schemaTyp"] = json!("PROTOBUF")), false),
        (
            "deep",
            with(&|o| o["spec"]["metadata"] = json!({"propertys": {"owner": "a"}})),
            false,
        ),
        ("enum", with(&|o| o["spec"]["deletionPolicy"] = json!("Retian")), false),
        (
            "type",
            with(&|o| o["spec"]["references"] = json!([{"name": "a", "subject": "b", "version": "1"}])),
            false,
        ),
        ("config", config, false),
        (
            "valid",
            with(&|o| {
                o["metadata"]["labels"] = json!({"team": "a"});
                o["metadata"]["generation"] = json!(1);
                o["spec"]["deletionPolicy"] = json!("Retain");
            }),
            true,
        ),
    ];
    for (name, object, allowed) in cases {
        let mut body = review_body("CREATE", Some(object.clone()), None);
        if object["kind"] == "SubjectConfig" {
            body["request"]["kind"]["kind"] = json!("SubjectConfig");
            body["request"]["resource"]["resource"] = json!("subjectconfigs");
        }
        let (_, reply) = post(admission.clone(), body.to_string()).await;
        let response = &reply["response"];
        assert_eq!(response["allowed"], allowed, "{name}: {reply:#}");

        let file = folder.path().join(format!("{name}.json"));
        std::fs::write(&file, serde_json::to_string_pretty(&object).unwrap()).unwrap();
        let data = folder.path().join(format!("{name}-data"));
        for args in [
            vec!["check", file.to_str().unwrap()],
            vec!["apply", "--data", data.to_str().unwrap(), file.to_str().unwrap()],
        ] {
            let output = schemaops_cli(folder.path(), &args);
            let stderr = String::from_utf8_lossy(&output.stderr);
            if allowed {
                assert_eq!(output.status.code(), Some(0), "{name}, {args:?}: {stderr}");
                continue;
            }
            assert_eq!(output.status.code(), Some(2), "{name}, {args:?}: {stderr}");
            let message = response["status"]["message"].as_str().unwrap();
            assert_eq!(response["status"]["code"], 422, "{name}");
            assert!(
                stderr.contains(&format!("{}.json (document 1), line ", name))
                    && stderr.ends_with(&format!(": {message}\n")),
                "{name}, {args:?}: the webhook said\n  {message}\nand the command\n  {stderr}"
            );
        }
    }
}

#[tokio::test]
async fn an_unreachable_registry_allows_with_a_warning() {
    let admission = admission(Arc::new(Unreachable), FixedView::default());
    let body = review_body("CREATE", Some(schema_object("orders", SUBJECT, &incompatible())), None);
    let (_, reply) = post(admission, body.to_string()).await;
    assert_eq!(reply["response"]["allowed"], true, "{reply:#}");
    assert_eq!(reply["response"]["warnings"], json!([REGISTRY_UNREACHABLE]));
}

#[tokio::test]
async fn an_update_that_keeps_the_spec_is_allowed_without_registry_calls() {
    // Any registry call would fail and show as a warning.
    let admission = admission(Arc::new(Unreachable), FixedView::default());
    let old = schema_object("orders", SUBJECT, &incompatible());
    let mut new = old.clone();
    new["metadata"]["finalizers"] = json!(["schemaops.dev/cleanup"]);
    new["metadata"]["labels"] = json!({"team": "orders"});
    let (_, reply) = post(admission, review_body("UPDATE", Some(new), Some(old)).to_string()).await;
    assert_eq!(reply["response"]["allowed"], true, "{reply:#}");
    assert!(reply["response"]["warnings"].is_null(), "{reply:#}");
}

#[tokio::test]
async fn a_missing_config_map_allows_with_a_warning() {
    let folder = tempfile::tempdir().unwrap();
    let admission = admission(registry_with_v1(folder.path()).await, FixedView::default());
    let mut object = schema_object("orders", SUBJECT, "");
    object["spec"] =
        json!({"subject": SUBJECT, "schemaFrom": {"configMapKeyRef": {"name": "orders", "key": "schema.avsc"}}});
    let (_, reply) = post(admission, review_body("CREATE", Some(object), None).to_string()).await;
    assert_eq!(reply["response"]["allowed"], true, "{reply:#}");
    let warning = reply["response"]["warnings"][0].as_str().unwrap();
    assert!(warning.contains("ConfigMap `orders` does not exist"), "{warning}");
}

#[tokio::test]
async fn a_config_maps_text_is_judged_like_an_inline_one() {
    let folder = tempfile::tempdir().unwrap();
    let mut config_maps = BTreeMap::new();
    config_maps.insert(
        ("default".to_owned(), "orders".to_owned()),
        BTreeMap::from([("schema.avsc".to_owned(), incompatible())]),
    );
    let admission = Arc::new(Admission {
        registry: registry_with_v1(folder.path()).await,
        connections: None,
        checker: Checker::default(),
        view: Arc::new(FixedView::default()),
        config_maps: Arc::new(FixedConfigMaps(config_maps)),
        namespace: Some("default".to_owned()),
        policies: Default::default(),
    });
    let mut object = schema_object("orders", SUBJECT, "");
    object["spec"] =
        json!({"subject": SUBJECT, "schemaFrom": {"configMapKeyRef": {"name": "orders", "key": "schema.avsc"}}});
    let (_, reply) = post(admission, review_body("CREATE", Some(object), None).to_string()).await;
    assert_eq!(reply["response"]["allowed"], false, "{reply:#}");
    assert_eq!(reply["response"]["status"]["code"], 422);
}

// ---- TLS ----

fn client_trusting(ca_pem: Option<&str>) -> reqwest::Client {
    let mut roots = rustls::RootCertStore::empty();
    if let Some(pem) = ca_pem {
        for certificate in CertificateDer::pem_slice_iter(pem.as_bytes()) {
            roots.add(certificate.unwrap()).unwrap();
        }
    }
    support::http_client_trusting(roots)
}

/// Serves the webhook (every registry call fails) with `identity` on a free
/// loopback port; the base URL and the server's stop signal.
fn serve(identity: &Identity) -> (String, tokio::sync::oneshot::Sender<()>) {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let address = listener.local_addr().unwrap();
    let router = server::router(admission(Arc::new(Unreachable), FixedView::default()));
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let tls = identity.server_config().unwrap();
    tokio::spawn(server::serve(
        listener,
        tls,
        router,
        ServerLimits::DEFAULT,
        async move {
            let _ = stopped.await;
        },
    ));
    (format!("https://localhost:{}", address.port()), stop)
}

async fn post_delete_review(client: &reqwest::Client, base: &str) -> Result<Value, reqwest::Error> {
    let body = review_body("DELETE", None, Some(schema_object("orders", SUBJECT, &v1())));
    client
        .post(format!("{base}{}", server::VALIDATE_SCHEMAS_PATH))
        .json(&body)
        .send()
        .await?
        .error_for_status()?
        .json()
        .await
}

#[tokio::test]
async fn the_generated_certificate_serves_https_to_a_client_trusting_its_ca_bundle() {
    let identity = Identity::generate(&["localhost".to_owned(), "127.0.0.1".to_owned()]).unwrap();
    assert_eq!(identity.fingerprint().len(), 32 * 3 - 1);
    // The bundle as an installer reads it: base64 of the CA's PEM.
    use base64::Engine as _;
    let bundle = base64::engine::general_purpose::STANDARD
        .decode(identity.ca_bundle())
        .unwrap();
    let ca_pem = String::from_utf8(bundle).unwrap();
    assert!(ca_pem.starts_with("-----BEGIN CERTIFICATE-----"));
    let (base, _stop) = serve(&identity);
    let reply = post_delete_review(&client_trusting(Some(&ca_pem)), &base)
        .await
        .unwrap();
    assert_eq!(reply["response"]["allowed"], true);

    let untrusting = post_delete_review(&client_trusting(None), &base).await;
    assert!(
        untrusting.is_err(),
        "a client that does not trust the CA completes no request"
    );
    let other_ca = Identity::generate(&["localhost".to_owned()]).unwrap().ca_pem;
    let other = post_delete_review(&client_trusting(Some(&other_ca)), &base).await;
    assert!(other.is_err(), "another CA's client fails the handshake");
}

#[tokio::test]
async fn a_certificate_and_key_from_files_serve_https() {
    // Files as cert-manager mounts them: tls.crt and tls.key, signed by a CA.
    let generated = Identity::generate(&["localhost".to_owned()]).unwrap();
    let folder = tempfile::tempdir().unwrap();
    let certificate = folder.path().join("tls.crt");
    let key = folder.path().join("tls.key");
    let pem = |label: &str, der: &[u8]| {
        use base64::Engine as _;
        let body = base64::engine::general_purpose::STANDARD.encode(der);
        let lines: Vec<&str> = body
            .as_bytes()
            .chunks(64)
            .map(|chunk| std::str::from_utf8(chunk).unwrap())
            .collect();
        format!("-----BEGIN {label}-----\n{}\n-----END {label}-----\n", lines.join("\n"))
    };
    std::fs::write(&certificate, pem("CERTIFICATE", generated.chain[0].as_ref())).unwrap();
    std::fs::write(&key, pem("PRIVATE KEY", generated.key.secret_der())).unwrap();
    let identity = Identity::from_files(&certificate, &key).unwrap();
    assert_eq!(identity.fingerprint(), generated.fingerprint());
    let (base, _stop) = serve(&identity);
    let reply = post_delete_review(&client_trusting(Some(&generated.ca_pem)), &base)
        .await
        .unwrap();
    assert_eq!(reply["response"]["allowed"], true);
}

#[test]
fn a_missing_key_file_is_named_in_the_error() {
    let folder = tempfile::tempdir().unwrap();
    let error = Identity::from_files(&folder.path().join("tls.crt"), &folder.path().join("tls.key")).unwrap_err();
    assert!(error.to_string().contains("tls.crt"), "{error}");
}

// ---- Manifests ----

#[test]
fn the_webhook_manifests_deserialize_into_kubernetes_types() {
    let folder = Path::new(env!("CARGO_MANIFEST_DIR")).join("deploy/webhook");
    let text = std::fs::read_to_string(folder.join("validating-webhook.yaml")).unwrap();
    let configuration: ValidatingWebhookConfiguration = serde_saphyr::from_str(&text).unwrap();
    let webhooks = configuration.webhooks.unwrap();
    assert_eq!(webhooks.len(), 1);
    let webhook = &webhooks[0];
    assert_eq!(webhook.side_effects, "None");
    assert_eq!(webhook.admission_review_versions, vec!["v1".to_owned()]);
    assert!(webhook.timeout_seconds.is_some());
    let rules = webhook.rules.as_ref().unwrap();
    assert_eq!(rules[0].api_groups.as_deref(), Some(&["schemaops.dev".to_owned()][..]));
    assert_eq!(
        rules[0].resources.as_deref(),
        Some(&["schemas".to_owned(), "subjectconfigs".to_owned()][..])
    );
    let mut operations = rules[0].operations.clone().unwrap();
    operations.sort();
    assert_eq!(operations, vec!["CREATE".to_owned(), "UPDATE".to_owned()]);
    let service_reference = webhook.client_config.service.as_ref().unwrap();
    assert_eq!(service_reference.path.as_deref(), Some(server::VALIDATE_SCHEMAS_PATH));

    let text = std::fs::read_to_string(folder.join("service.yaml")).unwrap();
    let service: Service = serde_saphyr::from_str(&text).unwrap();
    assert_eq!(service.metadata.name.as_deref(), Some(service_reference.name.as_str()));
    assert_eq!(service.metadata.namespace, Some(service_reference.namespace.clone()));
    let port = &service.spec.unwrap().ports.unwrap()[0];
    assert_eq!(Some(port.port), service_reference.port);
}

// ---- The operator binary ----

/// The test API server with the CRDs applied; `None` (the test skips)
/// without kubectl, unless every test must run.
fn api_server_with_crds() -> Option<apiserver::TestApiServer> {
    if !Path::new("/usr/bin/kubectl").exists() {
        assert!(!support::require_all(), "kubectl is required (SCHEMAOPS_REQUIRE_ALL=1)");
        eprintln!("skipping: kubectl is not installed");
        return None;
    }
    let server = apiserver::TestApiServer::start();
    let crds = Path::new(env!("CARGO_MANIFEST_DIR")).join("crds");
    kubectl(&server, &["apply", "-f", crds.to_str().unwrap()]);
    Some(server)
}

/// Runs kubectl against `server`, which must succeed; its stdout.
fn kubectl(server: &apiserver::TestApiServer, args: &[&str]) -> Vec<u8> {
    let output = server.kubectl().args(args).output().unwrap();
    assert!(
        output.status.success(),
        "kubectl {args:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    output.stdout
}

/// Applies the Schema `orders` (v1 of [`SUBJECT`]) and waits until it is Ready.
fn apply_orders(server: &apiserver::TestApiServer, folder: &Path) {
    let manifest = folder.join("orders.yaml");
    let schema_yaml = serde_json::to_string(&schema_object("orders", SUBJECT, &v1())).unwrap();
    std::fs::write(&manifest, schema_yaml).unwrap();
    kubectl(server, &["apply", "-f", manifest.to_str().unwrap()]);
    kubectl(
        server,
        &[
            "wait",
            "--for=condition=Ready",
            "schema/orders",
            "-n",
            "default",
            "--timeout=60s",
        ],
    );
}

/// A client trusting the CA an operator wrote with `--webhook-ca-bundle-out bundle`.
fn client_trusting_bundle(bundle: &Path) -> reqwest::Client {
    use base64::Engine as _;
    let ca_pem = String::from_utf8(
        base64::engine::general_purpose::STANDARD
            .decode(std::fs::read_to_string(bundle).unwrap().trim())
            .unwrap(),
    )
    .unwrap();
    client_trusting(Some(&ca_pem))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_operator_serves_the_webhook_on_its_caches_and_registry() {
    let Some(server) = api_server_with_crds() else {
        return;
    };
    let data = tempfile::tempdir().unwrap();
    let bundle = data.path().join("ca-bundle");
    let operator = support::operator::OperatorProcess::start(
        server.kubeconfig(),
        data.path(),
        &[
            "--namespace",
            "default",
            "--webhook-listen",
            "127.0.0.1:0",
            "--webhook-ca-bundle-out",
            bundle.to_str().unwrap(),
        ],
    );
    operator.wait_ready(Duration::from_secs(60)).await;
    let webhook_url = operator
        .webhook_url
        .clone()
        .expect("the operator prints its webhook address");

    apply_orders(&server, data.path());
    let client = client_trusting_bundle(&bundle);
    let base = webhook_url.replace("127.0.0.1", "localhost");
    let send = |body: Value| {
        let client = client.clone();
        let url = format!("{base}{}", server::VALIDATE_SCHEMAS_PATH);
        async move {
            let reply: Value = client.post(url).json(&body).send().await.unwrap().json().await.unwrap();
            reply
        }
    };
    // The stored Schema holds the subject: the operator's registry judges the edit.
    let stored = server
        .kubectl()
        .args(["get", "schema/orders", "-n", "default", "-o", "json"])
        .output()
        .unwrap();
    let stored: Value = serde_json::from_slice(&stored.stdout).unwrap();
    let mut edited = stored.clone();
    edited["spec"]["schema"] = json!(incompatible());
    let reply = send(review_body("UPDATE", Some(edited), Some(stored))).await;
    assert_eq!(reply["response"]["allowed"], false, "{reply:#}");
    assert!(
        reply["response"]["status"]["message"]
            .as_str()
            .unwrap()
            .contains("READER_FIELD_MISSING_DEFAULT_VALUE")
    );
    // Its cache knows the owner.
    let reply = send(review_body(
        "CREATE",
        Some(schema_object("orders-copy", SUBJECT, &v1())),
        None,
    ))
    .await;
    assert_eq!(reply["response"]["status"]["code"], 403, "{reply:#}");
    let reply = send(review_body(
        "CREATE",
        Some(schema_object("payments", "payments-value", &v1())),
        None,
    ))
    .await;
    assert_eq!(reply["response"]["allowed"], true, "{reply:#}");
    drop(operator);
}

/// Under leader election every replica serves the webhook, but only the
/// leader runs the controllers: a follower keeps caches of its own, so it
/// still knows which Schema manages a subject (a follower whose caches were
/// the idle controllers' would allow the copy).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_follower_replica_judges_with_caches_of_its_own() {
    let Some(server) = api_server_with_crds() else {
        return;
    };
    let kubectl = |args: &[&str]| kubectl(&server, args);
    // Both replicas share one registry, as they would in a cluster.
    let registry_data = tempfile::tempdir().unwrap();
    let registry = support::registry::RegistryProcess::start(registry_data.path()).await;
    let replica = |data: &Path, bundle: &Path| {
        support::operator::OperatorProcess::start(
            server.kubeconfig(),
            data,
            &[
                "--namespace",
                "default",
                "--registry-url",
                registry.url.as_str(),
                "--leader-election",
                "--webhook-listen",
                "127.0.0.1:0",
                "--webhook-ca-bundle-out",
                bundle.to_str().unwrap(),
            ],
        )
    };
    let leader_data = tempfile::tempdir().unwrap();
    let leader = replica(leader_data.path(), &leader_data.path().join("ca-bundle"));
    leader.wait_ready(Duration::from_secs(60)).await;
    apply_orders(&server, leader_data.path());

    let follower_data = tempfile::tempdir().unwrap();
    let bundle = follower_data.path().join("ca-bundle");
    let follower = replica(follower_data.path(), &bundle);
    follower.wait_ready(Duration::from_secs(60)).await;
    let lease: Value = serde_json::from_slice(&kubectl(&[
        "get",
        "lease",
        "schemaops-leader",
        "-n",
        "default",
        "-o",
        "json",
    ]))
    .unwrap();
    let holder = lease["spec"]["holderIdentity"].as_str().unwrap_or_default();
    assert!(
        holder.ends_with(&format!("-{}", leader.pid())),
        "the first replica leads: {holder}"
    );

    let client = client_trusting_bundle(&bundle);
    let url = format!(
        "{}{}",
        follower
            .webhook_url
            .clone()
            .expect("the follower prints its webhook address")
            .replace("127.0.0.1", "localhost"),
        server::VALIDATE_SCHEMAS_PATH
    );
    let copy = review_body("CREATE", Some(schema_object("orders-copy", SUBJECT, &v1())), None);
    // The follower's caches fill within moments of its start.
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    let reply = loop {
        let reply: Value = client
            .post(&url)
            .json(&copy)
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        if reply["response"]["allowed"] == false || std::time::Instant::now() > deadline {
            break reply;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert_eq!(reply["response"]["status"]["code"], 403, "{reply:#}");
    assert!(
        reply["response"]["status"]["message"]
            .as_str()
            .unwrap_or_default()
            .contains("default/orders"),
        "{reply:#}"
    );
    // And it judges an edit against the shared registry.
    let stored: Value =
        serde_json::from_slice(&kubectl(&["get", "schema/orders", "-n", "default", "-o", "json"])).unwrap();
    let mut edited = stored.clone();
    edited["spec"]["schema"] = json!(incompatible());
    let reply: Value = client
        .post(&url)
        .json(&review_body("UPDATE", Some(edited), Some(stored)))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(reply["response"]["allowed"], false, "{reply:#}");
}
