//! The external registry client (`ExternalRegistry`) against our own REST
//! API: round trips that must equal the embedded registry's answers, auth,
//! TLS and mutual TLS, retries, and servers with fewer features (Karapace-
//! like, and one that enforces no compatibility at all, like Apicurio
//! without rules) under the Schema reconcile.

mod support;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use axum::Router;
use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{Method, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use http_body_util::BodyExt as _;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::api::ObjectMeta;
use schemaops::compat::{Checker, Format, Limits, Mode};
use schemaops::controller::schema::reconcile;
use schemaops::controller::view::{ObjectKey, SubjectView};
use schemaops::crd::{DeletionPolicy, Schema, SchemaSpec, SchemaType};
use schemaops::registry::api::{ApiState, router};
use schemaops::registry::embedded::EmbeddedRegistry;
use schemaops::registry::embedded::sqlite::SqliteStore;
use schemaops::registry::external::{ExternalAuth, ExternalConfig, ExternalRegistry};
use schemaops::registry::{
    CompatibilityResult, Error, NewSchema, RegisterOptions, Registered, Registry, RegistryMode, SchemaContent,
    SchemaId, SchemaReference, SubjectFilter, SubjectName, SubjectVersion, Version, VersionFilter, VersionSelector,
    VersionedSchema,
};
use support::registry::RegistryProcess;

// ---------------------------------------------------------------- fixtures

fn checker() -> Checker {
    Checker::new(Limits::default())
}

async fn embedded(dir: &std::path::Path) -> Arc<EmbeddedRegistry> {
    let store = SqliteStore::open(&dir.join("registry.db")).unwrap();
    Arc::new(EmbeddedRegistry::open(Arc::new(store), checker()).await.unwrap())
}

fn api(registry: Arc<dyn Registry>) -> Router {
    router(ApiState {
        registry,
        body_limit: 1024 * 1024,
        auth: None,
        policies: None,
        admission: None,
    })
}

/// Serves `app` on a free loopback port; returns `http://127.0.0.1:PORT`.
async fn serve(app: Router) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await });
    format!("http://{address}")
}

fn config(url: &str) -> ExternalConfig {
    let mut config = ExternalConfig::new(url.parse().unwrap());
    config.retry_backoff = Duration::from_millis(10);
    config.timeout = Duration::from_secs(10);
    config
}

fn client(config: &ExternalConfig) -> ExternalRegistry {
    ExternalRegistry::new(config, checker()).unwrap()
}

fn subject(name: &str) -> SubjectName {
    SubjectName::new(name).unwrap()
}

fn version(number: i64) -> Version {
    Version::new(number).unwrap()
}

fn avro(text: &str) -> NewSchema {
    NewSchema {
        contract: Default::default(),
        format: Format::Avro,
        text: text.to_owned(),
        references: Vec::new(),
    }
}

fn reference(name: &str, subject_name: &str, number: i64) -> SchemaReference {
    SchemaReference {
        name: name.to_owned(),
        subject: subject(subject_name),
        version: version(number),
    }
}

const MONEY: &str =
    r#"{"type":"record","name":"Money","namespace":"com.example","fields":[{"name":"units","type":"long"}]}"#;
const ORDER: &str = r#"{"type":"record","name":"Order","namespace":"com.example","fields":[{"name":"id","type":"long"},{"name":"total","type":"com.example.Money"}]}"#;
const ORDER_V2: &str = r#"{"type":"record","name":"Order","namespace":"com.example","fields":[{"name":"id","type":"long"},{"name":"total","type":"com.example.Money"},{"name":"note","type":"string","default":""}]}"#;
const ORDER_BREAKING: &str = r#"{"type":"record","name":"Order","namespace":"com.example","fields":[{"name":"id","type":"string"},{"name":"total","type":"com.example.Money"},{"name":"note","type":"string"}]}"#;
const JSON_V1: &str = r#"{"type":"object","properties":{"a":{"type":"string"}},"additionalProperties":false}"#;
const JSON_V2: &str =
    r#"{"type":"object","properties":{"a":{"type":"string"},"b":{"type":"number"}},"additionalProperties":false}"#;
const JSON_BREAKING: &str = r#"{"type":"object","properties":{"a":{"type":"number"}},"additionalProperties":false}"#;
const PROTO_MONEY: &str = "syntax = \"proto3\";\npackage common;\nmessage Money { int64 units = 1; }\n";
const PROTO_ORDER: &str = "syntax = \"proto3\";\npackage shop;\nimport \"common/money.proto\";\nmessage Order { int64 id = 1; common.Money total = 2; }\n";
const PROTO_BREAKING: &str = "syntax = \"proto3\";\npackage shop;\nimport \"common/money.proto\";\nmessage Order { string id = 1; common.Money total = 2; }\n";

/// A result as a line of the transcript: the value, or the error's code.
fn line<T: std::fmt::Debug>(step: &str, result: Result<T, Error>) -> String {
    match result {
        Ok(value) => format!("{step}: {value:?}"),
        Err(error) => format!("{step}: error {}", error.code()),
    }
}

/// A version as the REST API carries it, which is what the external client
/// reads: the answered text in `text` (the embedded registry keeps the
/// author's text beside it; issue 39 item 8).
fn as_answered(mut version: VersionedSchema) -> VersionedSchema {
    if let Some(answer) = version.answer_text.take() {
        version.text = answer;
    }
    version
}

/// [`as_answered`] for a schema by ID.
fn content_as_answered(content: Arc<SchemaContent>) -> SchemaContent {
    let mut content = content.as_ref().clone();
    if let Some(answer) = content.answer_text.take() {
        content.text = answer;
    }
    content
}

/// The same calls against any registry, as a transcript to compare.
async fn script(registry: &dyn Registry) -> Vec<String> {
    let mut out = Vec::new();
    let money = subject("refs/com.example.Money");
    let orders = subject("orders/value with space");
    let json = subject("json-value");
    let proto_common = subject("common/money.proto");
    let proto_orders = subject("proto-orders");
    let order = |text: &str| NewSchema {
        contract: Default::default(),
        format: Format::Avro,
        text: text.to_owned(),
        references: vec![reference("com.example.Money", money.as_str(), 1)],
    };
    let json_schema = |text: &str| NewSchema {
        contract: Default::default(),
        format: Format::Json,
        text: text.to_owned(),
        references: Vec::new(),
    };
    let proto = |text: &str, references: Vec<SchemaReference>| NewSchema {
        contract: Default::default(),
        format: Format::Protobuf,
        text: text.to_owned(),
        references,
    };
    let proto_order = |text: &str| proto(text, vec![reference("common/money.proto", proto_common.as_str(), 1)]);
    // The external client registers with `normalize=true` wherever the server
    // accepts it (identity is the normalized form), so the server stores the
    // normalized text; the in-process registry is asked for the same.
    let none = RegisterOptions {
        normalize: true,
        ..RegisterOptions::default()
    };

    // Registration, idempotent, with references in all three formats.
    out.push(line(
        "register money",
        registry.register(&money, &avro(MONEY), none).await,
    ));
    out.push(line(
        "register order",
        registry.register(&orders, &order(ORDER), none).await,
    ));
    out.push(line(
        "register order again",
        registry.register(&orders, &order(ORDER), none).await,
    ));
    out.push(line(
        "register order v2",
        registry.register(&orders, &order(ORDER_V2), none).await,
    ));
    out.push(line(
        "register json",
        registry.register(&json, &json_schema(JSON_V1), none).await,
    ));
    out.push(line(
        "register json v2",
        registry.register(&json, &json_schema(JSON_V2), none).await,
    ));
    out.push(line(
        "register proto common",
        registry
            .register(&proto_common, &proto(PROTO_MONEY, vec![]), none)
            .await,
    ));
    out.push(line(
        "register proto order",
        registry.register(&proto_orders, &proto_order(PROTO_ORDER), none).await,
    ));
    // Refusals: incompatible (registry-side), invalid.
    out.push(line(
        "register order breaking",
        registry.register(&orders, &order(ORDER_BREAKING), none).await,
    ));
    out.push(line(
        "register json breaking",
        registry.register(&json, &json_schema(JSON_BREAKING), none).await,
    ));
    out.push(line(
        "register proto breaking",
        registry
            .register(&proto_orders, &proto_order(PROTO_BREAKING), none)
            .await,
    ));
    out.push(line(
        "register invalid",
        registry.register(&money, &avro("{\"type\":\"nope\"}"), none).await,
    ));

    // Reads.
    for name in [&money, &orders, &json, &proto_common, &proto_orders] {
        out.push(line("versions", registry.versions(name, VersionFilter::Live).await));
        out.push(line(
            "latest",
            registry
                .version(name, VersionSelector::Latest, false)
                .await
                .map(as_answered),
        ));
    }
    out.push(line(
        "version 1",
        registry
            .version(&orders, VersionSelector::Exact(version(1)), false)
            .await
            .map(as_answered),
    ));
    out.push(line(
        "missing version",
        registry
            .version(&orders, VersionSelector::Exact(version(9)), false)
            .await,
    ));
    out.push(line(
        "missing subject",
        registry.versions(&subject("no/such"), VersionFilter::Live).await,
    ));
    out.push(line(
        "lookup order v2",
        registry.lookup(&orders, &order(ORDER_V2), false).await.map(as_answered),
    ));
    out.push(line(
        "lookup json v1",
        registry
            .lookup(&json, &json_schema(JSON_V1), false)
            .await
            .map(as_answered),
    ));
    out.push(line(
        "lookup unknown",
        registry
            .lookup(&json, &json_schema(JSON_BREAKING), false)
            .await
            .map(as_answered),
    ));
    out.push(line(
        "lookup proto",
        registry
            .lookup(&proto_orders, &proto_order(PROTO_ORDER), false)
            .await
            .map(as_answered),
    ));
    let id = SchemaId::new(1).unwrap();
    out.push(line(
        "schema 1",
        registry.schema_by_id(id).await.map(content_as_answered),
    ));
    out.push(line("versions of 1", registry.versions_of_id(id, false).await));
    out.push(line("subjects", registry.subjects(&SubjectFilter::default()).await));
    out.push(line(
        "referenced by money",
        registry.referenced_by(&money, VersionSelector::Exact(version(1))).await,
    ));
    out.push(line(
        "referenced by proto common",
        registry.referenced_by(&proto_common, VersionSelector::Latest).await,
    ));

    // Compatibility checks with our engine's full report.
    out.push(line(
        "check breaking",
        registry.check(&orders, &order(ORDER_BREAKING), None).await,
    ));
    out.push(line(
        "check breaking against 1",
        registry
            .check(
                &orders,
                &order(ORDER_BREAKING),
                Some(VersionSelector::Exact(version(1))),
            )
            .await,
    ));
    out.push(line(
        "check compatible",
        registry.check(&json, &json_schema(JSON_V2), None).await,
    ));
    out.push(line(
        "check proto breaking",
        registry.check(&proto_orders, &proto_order(PROTO_BREAKING), None).await,
    ));

    // Config and mode.
    out.push(line("global level", registry.compatibility(None, true).await));
    out.push(line(
        "own level missing",
        registry.compatibility(Some(&json), false).await,
    ));
    out.push(line(
        "own level fallback",
        registry.compatibility(Some(&json), true).await,
    ));
    out.push(line(
        "set level",
        registry.set_compatibility(Some(&json), Mode::FullTransitive).await,
    ));
    out.push(line("own level", registry.compatibility(Some(&json), false).await));
    out.push(line("delete level", registry.delete_compatibility(Some(&json)).await));
    out.push(line(
        "delete level again",
        registry.delete_compatibility(Some(&json)).await,
    ));
    out.push(line("global mode", registry.mode(None, false).await));
    out.push(line("own mode missing", registry.mode(Some(&json), false).await));
    out.push(line(
        "set mode",
        registry.set_mode(Some(&json), RegistryMode::ReadOnly, false).await,
    ));
    out.push(line("own mode", registry.mode(Some(&json), true).await));
    out.push(line(
        "register read-only",
        registry.register(&json, &json_schema(JSON_BREAKING), none).await,
    ));
    out.push(line("delete mode", registry.delete_mode(Some(&json)).await));

    // Deletion.
    out.push(line("delete referenced", registry.delete_subject(&money, false).await));
    out.push(line(
        "delete version",
        registry
            .delete_version(&orders, VersionSelector::Exact(version(1)), false)
            .await,
    ));
    out.push(line(
        "versions after",
        registry.versions(&orders, VersionFilter::All).await,
    ));
    out.push(line(
        "delete json permanent",
        registry.delete_subject(&json, true).await,
    ));
    out.push(line("delete json", registry.delete_subject(&json, false).await));
    out.push(line("delete json again", registry.delete_subject(&json, false).await));
    out.push(line(
        "delete json permanent",
        registry.delete_subject(&json, true).await,
    ));
    out.push(line("json after", registry.versions(&json, VersionFilter::All).await));
    out.push(line("types", Ok::<_, Error>(registry.schema_types())));
    out
}

// ---------------------------------------------------------------- round trips

#[tokio::test]
async fn the_client_against_schemaops_registry_answers_as_the_embedded_registry_does() {
    let served = tempfile::tempdir().unwrap();
    let direct = tempfile::tempdir().unwrap();
    let process = RegistryProcess::start(served.path()).await;
    let external = client(&config(&process.url));
    let through_http = script(&external).await;
    let embedded = embedded(direct.path()).await;
    let in_process = script(embedded.as_ref()).await;
    for (remote, local) in through_http.iter().zip(&in_process) {
        assert_eq!(remote, local);
    }
    assert_eq!(through_http.len(), in_process.len());

    // Not vacuous: the calls did what they should.
    let find = |step: &str| {
        through_http
            .iter()
            .find(|line| line.starts_with(&format!("{step}:")))
            .unwrap_or_else(|| panic!("{step} ran"))
            .clone()
    };
    assert!(
        find("register order").contains("created: true"),
        "{}",
        find("register order")
    );
    assert!(find("register order again").contains("created: false"));
    assert!(find("register order breaking").ends_with("error 409"));
    assert!(find("register invalid").ends_with("error 42201"));
    assert!(find("missing subject").ends_with("error 40401"));
    assert!(find("missing version").ends_with("error 40402"));
    assert!(find("own level missing").ends_with("error 40408"));
    assert!(find("register read-only").ends_with("error 42205"));
    assert!(find("delete referenced").ends_with("error 42206"));
    assert!(find("delete json permanent").ends_with("error 40405"));
    assert!(find("check breaking").contains("incompatibilities: [Incompatibility"));
    assert!(
        find("referenced by money").contains("[SchemaId(2)"),
        "{}",
        find("referenced by money")
    );
    assert_eq!(find("types"), "types: [Json, Protobuf, Avro]");

    let capabilities = external.capabilities().await.unwrap();
    assert!(capabilities.check_all_versions && capabilities.verbose && capabilities.mode && capabilities.normalize);
}

// ---------------------------------------------------------------- auth

#[tokio::test]
async fn correct_credentials_work_and_wrong_ones_are_unauthorized_without_retries() {
    let data = tempfile::tempdir().unwrap();
    let process = RegistryProcess::start_with(
        data.path(),
        &[
            "--read-credentials",
            "alice:right-password,token-right",
            "--write-credentials",
            "alice:right-password,token-right",
        ],
    )
    .await;
    let mut basic = config(&process.url);
    basic.auth = ExternalAuth::Basic {
        user: "alice".to_owned(),
        password: "right-password".to_owned(),
    };
    let registered = client(&basic)
        .register(&subject("auth"), &avro(MONEY), RegisterOptions::default())
        .await
        .unwrap();
    assert!(registered.created);

    let mut bearer = config(&process.url);
    bearer.auth = ExternalAuth::Bearer("token-right".to_owned());
    let found = client(&bearer)
        .lookup(&subject("auth"), &avro(MONEY), false)
        .await
        .unwrap();
    assert_eq!(found.version, registered.version);

    for auth in [
        ExternalAuth::Basic {
            user: "alice".to_owned(),
            password: "wrong-password".to_owned(),
        },
        ExternalAuth::Bearer("token-wrong".to_owned()),
        ExternalAuth::None,
    ] {
        let mut wrong = config(&process.url);
        wrong.auth = auth;
        // A retry would wait at least this long; the answer must come sooner.
        wrong.retry_backoff = Duration::from_secs(3);
        let started = Instant::now();
        let error = client(&wrong)
            .register(&subject("auth"), &avro(MONEY), RegisterOptions::default())
            .await
            .unwrap_err();
        assert!(started.elapsed() < Duration::from_secs(2), "no retry");
        assert!(matches!(error, Error::Unauthorized { .. }), "{error:?}");
        assert!(!error.is_transient());
        let shown = format!("{error} {error:?}");
        assert!(
            !shown.contains("wrong-password") && !shown.contains("token-wrong"),
            "{shown}"
        );
    }
}

// ---------------------------------------------------------------- TLS

struct Pki {
    dir: tempfile::TempDir,
    server: rustls::ServerConfig,
}

fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// A test CA, a server certificate for 127.0.0.1 and localhost, and a
/// client certificate, written as PEM files; the server's rustls config
/// requires a client certificate when `mutual`.
fn pki(mutual: bool) -> Pki {
    pki_naming(mutual, &["127.0.0.1", "localhost"])
}

/// As [`pki`], with a server certificate issued to `names`.
fn pki_naming(mutual: bool, names: &[&str]) -> Pki {
    use rcgen::{BasicConstraints, CertificateParams, IsCa, Issuer, KeyPair};
    let dir = tempfile::tempdir().unwrap();
    let ca_key = KeyPair::generate().unwrap();
    let mut ca_params = CertificateParams::new(Vec::<String>::new()).unwrap();
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca_params
        .distinguished_name
        .push(rcgen::DnType::CommonName, "schemaops test CA");
    let ca_cert = ca_params.self_signed(&ca_key).unwrap();
    let issuer = Issuer::new(ca_params, &ca_key);

    let server_key = KeyPair::generate().unwrap();
    let server_cert = CertificateParams::new(names.iter().map(|name| (*name).to_owned()).collect::<Vec<_>>())
        .unwrap()
        .signed_by(&server_key, &issuer)
        .unwrap();
    let client_key = KeyPair::generate().unwrap();
    let client_cert = CertificateParams::new(vec!["schemaops-operator".to_owned()])
        .unwrap()
        .signed_by(&client_key, &issuer)
        .unwrap();
    std::fs::write(dir.path().join("ca.pem"), ca_cert.pem()).unwrap();
    std::fs::write(dir.path().join("client.pem"), client_cert.pem()).unwrap();
    std::fs::write(dir.path().join("client.key"), client_key.serialize_pem()).unwrap();

    let chain = vec![server_cert.der().clone()];
    let key = rustls_pki_types::PrivateKeyDer::try_from(server_key.serialize_der()).unwrap();
    let builder = rustls::ServerConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .unwrap();
    let builder = if mutual {
        let mut roots = rustls::RootCertStore::empty();
        roots.add(ca_cert.der().clone()).unwrap();
        let verifier = rustls::server::WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider())
            .build()
            .unwrap();
        builder.with_client_cert_verifier(verifier)
    } else {
        builder.with_no_client_auth()
    };
    let server = builder.with_single_cert(chain, key).unwrap();
    Pki { dir, server }
}

/// Serves `app` over TLS on a free loopback port; returns `https://localhost:PORT`.
async fn serve_tls(app: Router, server: rustls::ServerConfig) -> String {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let port = listener.local_addr().unwrap().port();
    let tls = axum_server::tls_rustls::RustlsConfig::from_config(Arc::new(server));
    let server = axum_server::from_tcp_rustls(listener, tls).unwrap();
    tokio::spawn(async move { server.serve(app.into_make_service()).await });
    format!("https://localhost:{port}")
}

#[tokio::test]
async fn tls_is_trusted_only_with_the_ca_file() {
    let data = tempfile::tempdir().unwrap();
    let pki = pki(false);
    let url = serve_tls(api(embedded(data.path()).await), pki.server.clone()).await;

    let mut trusting = config(&url);
    trusting.ca_file = Some(pki.dir.path().join("ca.pem"));
    let registered = client(&trusting)
        .register(&subject("tls"), &avro(MONEY), RegisterOptions::default())
        .await
        .unwrap();
    assert_eq!(registered.version, version(1));

    let mut untrusting = config(&url);
    untrusting.max_retries = 0;
    let error = client(&untrusting)
        .subjects(&SubjectFilter::default())
        .await
        .unwrap_err();
    assert!(matches!(error, Error::Unavailable { .. }), "{error:?}");
    assert!(error.to_string().contains("certificate"), "{error}");
}

#[tokio::test]
async fn mutual_tls_requires_the_client_certificate() {
    let data = tempfile::tempdir().unwrap();
    let pki = pki(true);
    let url = serve_tls(api(embedded(data.path()).await), pki.server.clone()).await;

    let mut with_identity = config(&url);
    with_identity.ca_file = Some(pki.dir.path().join("ca.pem"));
    with_identity.client_cert_file = Some(pki.dir.path().join("client.pem"));
    with_identity.client_key_file = Some(pki.dir.path().join("client.key"));
    let subjects = client(&with_identity)
        .subjects(&SubjectFilter::default())
        .await
        .unwrap();
    assert!(subjects.is_empty());

    let mut without_identity = config(&url);
    without_identity.ca_file = Some(pki.dir.path().join("ca.pem"));
    without_identity.max_retries = 0;
    let error = client(&without_identity)
        .subjects(&SubjectFilter::default())
        .await
        .unwrap_err();
    assert!(matches!(error, Error::Unavailable { .. }), "{error:?}");

    let mut half = with_identity.clone();
    half.client_key_file = None;
    assert!(ExternalRegistry::new(&half, checker()).is_err());
}

/// A registry reached by an address its certificate does not name (a Service
/// name, an IP) is trusted with `server_name`, its certificate's name; any
/// other name, or none, is refused.
#[tokio::test]
async fn the_server_name_is_what_the_certificate_is_checked_against() {
    let data = tempfile::tempdir().unwrap();
    let pki = pki_naming(false, &["registry.internal"]);
    let url = serve_tls(api(embedded(data.path()).await), pki.server.clone()).await;
    let trusting = |server_name: Option<&str>| {
        let mut config = config(&url);
        config.ca_file = Some(pki.dir.path().join("ca.pem"));
        config.server_name = server_name.map(str::to_owned);
        config.max_retries = 0;
        config
    };

    let subjects = client(&trusting(Some("registry.internal")))
        .subjects(&SubjectFilter::default())
        .await
        .unwrap();
    assert!(subjects.is_empty());
    for wrong in [None, Some("other.internal")] {
        let error = client(&trusting(wrong))
            .subjects(&SubjectFilter::default())
            .await
            .unwrap_err();
        assert!(matches!(error, Error::Unavailable { .. }), "{wrong:?}: {error:?}");
        assert!(error.to_string().contains("certificate"), "{wrong:?}: {error}");
    }
    let error = ExternalRegistry::new(&trusting(Some("not a name")), checker()).unwrap_err();
    assert!(error.to_string().contains("not a name"), "{error}");
}

// ---------------------------------------------------------------- retries

#[derive(Clone, Default)]
struct Counter(Arc<AtomicUsize>);

impl Counter {
    fn next(&self) -> usize {
        self.0.fetch_add(1, Ordering::SeqCst) + 1
    }
    fn get(&self) -> usize {
        self.0.load(Ordering::SeqCst)
    }
}

fn confluent_error(status: StatusCode, code: u32, message: &str) -> Response {
    let body = serde_json::json!({ "error_code": code, "message": message });
    (status, axum::Json(body)).into_response()
}

#[tokio::test]
async fn server_errors_are_retried_until_an_answer_comes() {
    let counter = Counter::default();
    let app = Router::new()
        .route(
            "/subjects",
            axum::routing::get(|State(counter): State<Counter>| async move {
                if counter.next() <= 2 {
                    confluent_error(StatusCode::SERVICE_UNAVAILABLE, 50003, "leader election")
                } else {
                    axum::Json(serde_json::json!(["a"])).into_response()
                }
            }),
        )
        .with_state(counter.clone());
    let url = serve(app).await;
    let subjects = client(&config(&url)).subjects(&SubjectFilter::default()).await.unwrap();
    assert_eq!(subjects, vec![subject("a")]);
    assert_eq!(counter.get(), 3);
}

#[tokio::test]
async fn client_errors_are_not_retried() {
    let counter = Counter::default();
    let app = Router::new()
        .route(
            "/subjects/{subject}/versions",
            axum::routing::get(|State(counter): State<Counter>| async move {
                counter.next();
                confluent_error(StatusCode::UNPROCESSABLE_ENTITY, 42202, "bad version")
            }),
        )
        .with_state(counter.clone());
    let url = serve(app).await;
    let error = client(&config(&url))
        .versions(&subject("a/b"), VersionFilter::Live)
        .await
        .unwrap_err();
    assert!(matches!(error, Error::InvalidVersion { .. }), "{error:?}");
    assert_eq!(counter.get(), 1);
}

#[tokio::test]
async fn refused_connections_are_unavailable_and_transient_after_every_attempt() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let address = listener.local_addr().unwrap();
    drop(listener);
    let mut refused = config(&format!("http://{address}"));
    refused.max_retries = 2;
    let error = client(&refused).subjects(&SubjectFilter::default()).await.unwrap_err();
    assert!(matches!(error, Error::Unavailable { .. }), "{error:?}");
    assert!(error.is_transient());
    assert!(error.to_string().contains("after 3 attempts"), "{error}");
}

#[tokio::test]
async fn subjects_with_slashes_reach_the_server_as_one_segment() {
    let app = Router::new().route(
        "/subjects/{subject}/versions",
        axum::routing::get(|axum::extract::Path(name): axum::extract::Path<String>| async move {
            assert_eq!(name, "team/orders?x=1 %");
            axum::Json(serde_json::json!([1]))
        }),
    );
    let url = serve(app).await;
    let versions = client(&config(&url))
        .versions(&subject("team/orders?x=1 %"), VersionFilter::Live)
        .await
        .unwrap();
    assert_eq!(versions, vec![version(1)]);
}

// ---------------------------------------------------------------- limited servers

/// Karapace-like: no all-versions compatibility endpoint, no `verbose`
/// messages, `GET /mode` only.
async fn karapace_like(request: Request, next: Next) -> Response {
    let path = request.uri().path().to_owned();
    let segments: Vec<&str> = path.trim_start_matches('/').split('/').collect();
    let all_versions = segments.len() == 4 && segments[0] == "compatibility" && segments[3] == "versions";
    if all_versions || (segments.first() == Some(&"mode") && (segments.len() > 1 || request.method() != Method::GET)) {
        return confluent_error(StatusCode::NOT_FOUND, 404, "HTTP 404 Not Found");
    }
    let response = next.run(request).await;
    if segments.first() != Some(&"compatibility") || !response.status().is_success() {
        return response;
    }
    let (parts, body) = response.into_parts();
    let bytes = body.collect().await.unwrap().to_bytes();
    let mut value: serde_json::Value = serde_json::from_slice(&bytes).unwrap();
    if let Some(object) = value.as_object_mut() {
        object.remove("messages");
    }
    Response::from_parts(parts, Body::from(serde_json::to_vec(&value).unwrap()))
}

/// Like Apicurio without rules: stores anything, enforces no compatibility.
/// Levels are remembered and shown, never applied.
struct AcceptsEverything {
    inner: Arc<EmbeddedRegistry>,
    levels: std::sync::Mutex<BTreeMap<Option<SubjectName>, Mode>>,
}

impl AcceptsEverything {
    async fn new(inner: Arc<EmbeddedRegistry>) -> Self {
        inner.set_compatibility(None, Mode::None).await.unwrap();
        Self {
            inner,
            levels: std::sync::Mutex::new(BTreeMap::new()),
        }
    }
}

#[async_trait]
impl Registry for AcceptsEverything {
    async fn schema_by_id(&self, id: SchemaId) -> Result<Arc<SchemaContent>, Error> {
        self.inner.schema_by_id(id).await
    }
    async fn schema_by_guid(&self, guid: schemaops::registry::Guid) -> Result<(SchemaId, Arc<SchemaContent>), Error> {
        self.inner.schema_by_guid(guid).await
    }
    async fn contract_config(
        &self,
        subject: Option<&SubjectName>,
    ) -> Result<schemaops::registry::contract::ContractConfig, Error> {
        self.inner.contract_config(subject).await
    }
    async fn update_contract_config(
        &self,
        subject: Option<&SubjectName>,
        patch: &schemaops::registry::contract::ConfigPatch,
    ) -> Result<schemaops::registry::contract::ContractConfig, Error> {
        self.inner.update_contract_config(subject, patch).await
    }
    async fn serialized_by_id(&self, id: SchemaId) -> Result<String, Error> {
        self.inner.serialized_by_id(id).await
    }
    async fn versions_of_id(&self, id: SchemaId, deleted: bool) -> Result<Vec<SubjectVersion>, Error> {
        self.inner.versions_of_id(id, deleted).await
    }
    async fn subjects(&self, filter: &SubjectFilter) -> Result<Vec<SubjectName>, Error> {
        self.inner.subjects(filter).await
    }
    async fn versions(&self, subject: &SubjectName, filter: VersionFilter) -> Result<Vec<Version>, Error> {
        self.inner.versions(subject, filter).await
    }
    async fn version(&self, s: &SubjectName, v: VersionSelector, deleted: bool) -> Result<VersionedSchema, Error> {
        self.inner.version(s, v, deleted).await
    }
    async fn lookup(&self, s: &SubjectName, schema: &NewSchema, deleted: bool) -> Result<VersionedSchema, Error> {
        self.inner.lookup(s, schema, deleted).await
    }
    async fn register(&self, s: &SubjectName, schema: &NewSchema, o: RegisterOptions) -> Result<Registered, Error> {
        self.inner.register(s, schema, o).await
    }
    async fn check(
        &self,
        s: &SubjectName,
        schema: &NewSchema,
        against: Option<VersionSelector>,
    ) -> Result<CompatibilityResult, Error> {
        self.inner.check(s, schema, against).await
    }
    async fn compatibility(&self, subject: Option<&SubjectName>, fallback: bool) -> Result<Mode, Error> {
        let levels = self.levels.lock().unwrap();
        let global = levels.get(&None).copied().unwrap_or(Mode::Backward);
        match subject {
            None => Ok(global),
            Some(s) => match levels.get(&Some(s.clone())) {
                Some(level) => Ok(*level),
                None if fallback => Ok(global),
                None => Err(Error::SubjectCompatibilityNotConfigured { subject: s.clone() }),
            },
        }
    }
    async fn set_compatibility(&self, subject: Option<&SubjectName>, level: Mode) -> Result<Mode, Error> {
        self.levels.lock().unwrap().insert(subject.cloned(), level);
        Ok(level)
    }
    async fn delete_compatibility(&self, subject: Option<&SubjectName>) -> Result<Mode, Error> {
        let old = self.compatibility(subject, false).await?;
        self.levels.lock().unwrap().remove(&subject.cloned());
        Ok(old)
    }
    async fn mode(&self, s: Option<&SubjectName>, fallback: bool) -> Result<RegistryMode, Error> {
        self.inner.mode(s, fallback).await
    }
    async fn set_mode(&self, s: Option<&SubjectName>, m: RegistryMode, force: bool) -> Result<RegistryMode, Error> {
        self.inner.set_mode(s, m, force).await
    }
    async fn delete_mode(&self, s: Option<&SubjectName>) -> Result<RegistryMode, Error> {
        self.inner.delete_mode(s).await
    }
    async fn delete_version(&self, s: &SubjectName, v: VersionSelector, permanent: bool) -> Result<Version, Error> {
        self.inner.delete_version(s, v, permanent).await
    }
    async fn delete_subject(&self, s: &SubjectName, permanent: bool) -> Result<Vec<Version>, Error> {
        self.inner.delete_subject(s, permanent).await
    }
    async fn referenced_by(&self, s: &SubjectName, v: VersionSelector) -> Result<Vec<SchemaId>, Error> {
        self.inner.referenced_by(s, v).await
    }
    fn schema_types(&self) -> Vec<Format> {
        self.inner.schema_types()
    }
}

const SUBJECT: &str = "payments/value";

fn schema_object(generation: i64, text: &str, status: Option<schemaops::crd::SchemaStatus>) -> Schema {
    let mut schema = Schema::new(
        "payments",
        SchemaSpec {
            metadata: None,
            rule_set: None,
            subject: SUBJECT.to_owned(),
            registry_ref: None,
            schema_type: SchemaType::Avro,
            schema: Some(text.to_owned()),
            schema_from: None,
            references: Vec::new(),
            deletion_policy: DeletionPolicy::default(),
            management_policy: Default::default(),
        },
    );
    schema.metadata = ObjectMeta {
        name: Some("payments".to_owned()),
        namespace: Some("shop".to_owned()),
        generation: Some(generation),
        ..ObjectMeta::default()
    };
    schema.status = status;
    schema
}

const PAYMENT_V1: &str = r#"{"type":"record","name":"Payment","fields":[{"name":"id","type":"long"}]}"#;
const PAYMENT_V2: &str = r#"{"type":"record","name":"Payment","fields":[{"name":"id","type":"long"},{"name":"currency","type":"string","default":"EUR"}]}"#;
const PAYMENT_BREAKING: &str =
    r#"{"type":"record","name":"Payment","fields":[{"name":"id","type":"string"},{"name":"amount","type":"double"}]}"#;

/// Reconciles v1, a compatible v2, then an incompatible edit; returns each
/// status as JSON without condition times.
async fn reconcile_sequence(registry: &dyn Registry) -> Vec<serde_json::Value> {
    let view = SubjectView {
        schema_owner: Some(ObjectKey {
            namespace: "shop".to_owned(),
            name: "payments".to_owned(),
        }),
        ..SubjectView::default()
    };
    let now = Time(k8s_openapi::jiff::Timestamp::from_second(1_800_000_000).unwrap());
    let mut status = None;
    let mut out = Vec::new();
    for (generation, text) in [(1, PAYMENT_V1), (2, PAYMENT_V2), (3, PAYMENT_BREAKING)] {
        let schema = schema_object(generation, text, status.clone());
        let reconciled = reconcile(&schema, &view, None, registry, &checker(), &Default::default(), &now).await;
        assert!(reconciled.retry.is_none(), "{:?}", reconciled.retry);
        let mut json = serde_json::to_value(&reconciled.status).unwrap();
        for condition in json["conditions"].as_array_mut().unwrap() {
            condition.as_object_mut().unwrap().remove("lastTransitionTime");
        }
        out.push(json);
        status = Some(reconciled.status);
    }
    out
}

#[tokio::test]
async fn a_karapace_like_server_gives_the_same_statuses_as_the_embedded_registry() {
    let served = tempfile::tempdir().unwrap();
    let direct = tempfile::tempdir().unwrap();
    let app = api(embedded(served.path()).await).layer(axum::middleware::from_fn(karapace_like));
    let url = serve(app).await;
    let limited = client(&config(&url));

    let capabilities = limited.capabilities().await.unwrap();
    assert!(!capabilities.check_all_versions, "{capabilities:?}");
    assert!(!capabilities.verbose, "{capabilities:?}");
    assert!(capabilities.mode && capabilities.normalize, "{capabilities:?}");

    let through_limited = reconcile_sequence(&limited).await;
    let local = embedded(direct.path()).await;
    let in_process = reconcile_sequence(local.as_ref()).await;
    assert_eq!(through_limited, in_process);
    let last = through_limited.last().unwrap();
    assert!(last["compatibility"]["total"].as_i64().unwrap() > 0, "{last}");
    assert_eq!(last["version"], 2, "{last}");

    // check() without the all-versions endpoint: our engine over fetched versions.
    let payments = subject(SUBJECT);
    let breaking = avro(PAYMENT_BREAKING);
    let from_limited = limited.check(&payments, &breaking, None).await.unwrap();
    let from_embedded = local.check(&payments, &breaking, None).await.unwrap();
    assert_eq!(from_limited, from_embedded);
    assert!(!from_limited.report.is_compatible());
    // Subject-level mode without /mode/{subject}: the global mode applies.
    assert_eq!(
        limited.mode(Some(&payments), true).await.unwrap(),
        RegistryMode::ReadWrite
    );
    let own = limited.mode(Some(&payments), false).await.unwrap_err();
    assert!(matches!(own, Error::SubjectModeNotConfigured { .. }), "{own:?}");
}

#[tokio::test]
async fn a_server_that_accepts_everything_still_gets_no_incompatible_schema() {
    let served = tempfile::tempdir().unwrap();
    let inner = embedded(served.path()).await;
    let permissive: Arc<dyn Registry> = Arc::new(AcceptsEverything::new(Arc::clone(&inner)).await);
    let url = serve(api(permissive)).await;
    let external = client(&config(&url));

    // The server itself would store the breaking schema under a fresh subject pair.
    let statuses = reconcile_sequence(&external).await;
    let rejected = statuses.last().unwrap();
    let ready = rejected["conditions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|condition| condition["type"] == "Ready")
        .unwrap();
    assert_eq!(ready["status"], "False", "{rejected}");
    assert!(rejected["compatibility"]["total"].as_i64().unwrap() > 0, "{rejected}");
    let payments = subject(SUBJECT);
    assert_eq!(
        inner.versions(&payments, VersionFilter::All).await.unwrap(),
        vec![version(1), version(2)],
        "nothing registered for the incompatible edit"
    );
    assert!(inner.lookup(&payments, &avro(PAYMENT_BREAKING), true).await.is_err());
    // And the server really accepts anything when asked directly.
    let registered = external
        .register(&subject("elsewhere"), &avro(PAYMENT_V1), RegisterOptions::default())
        .await
        .unwrap();
    let forced = external
        .register(
            &subject("elsewhere"),
            &avro(PAYMENT_BREAKING),
            RegisterOptions::default(),
        )
        .await
        .unwrap();
    assert!(registered.created && forced.created);
}

/// A registry with a rule of its own: every compatibility check fails.
async fn refuses_every_check(request: Request, next: Next) -> Response {
    if request.uri().path().starts_with("/compatibility/") {
        let body =
            serde_json::json!({ "is_compatible": false, "messages": ["registry rule: no new fields on Fridays"] });
        return axum::Json(body).into_response();
    }
    next.run(request).await
}

#[tokio::test]
async fn a_registry_verdict_stricter_than_ours_is_reported_with_its_message() {
    let served = tempfile::tempdir().unwrap();
    let registry = embedded(served.path()).await;
    let payments = subject(SUBJECT);
    registry
        .register(&payments, &avro(PAYMENT_V1), RegisterOptions::default())
        .await
        .unwrap();
    let url = serve(api(registry).layer(axum::middleware::from_fn(refuses_every_check))).await;
    let error = client(&config(&url))
        .check(&payments, &avro(PAYMENT_V2), None)
        .await
        .unwrap_err();
    assert!(
        matches!(&error, Error::Rejected { message } if message.contains("no new fields on Fridays")),
        "{error:?}"
    );
}
