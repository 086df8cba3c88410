//! What each fuzz target does with one input, kept in one place: the
//! libFuzzer targets in `fuzz_targets/` and `tests/fuzz_regressions.rs`
//! (which replays `fuzz/regressions/`) both include this file. Each
//! function panics only on a defect: a crash, or a 500 from the REST API.

#![allow(dead_code)]

use std::path::PathBuf;
use std::sync::{Arc, OnceLock};

use axum::body::Body;
use axum::http::{Request, StatusCode};
use schemaops::compat::{Checker, Format, Mode, SchemaRole, SchemaText, check};
use schemaops::registry::api::{ApiState, router};
use schemaops::registry::embedded::EmbeddedRegistry;
use schemaops::registry::embedded::sqlite::SqliteStore;
use tower::ServiceExt as _;

/// The input as two schema texts: before and after the first NUL byte (the
/// whole input twice when there is none). `None` when it is not UTF-8.
fn two_texts(data: &[u8]) -> Option<(String, String)> {
    let text = std::str::from_utf8(data).ok()?;
    let (candidate, earlier) = text.split_once('\0').unwrap_or((text, text));
    Some((candidate.to_owned(), earlier.to_owned()))
}

/// Parses both texts and checks the first against the second, FULL_TRANSITIVE.
pub fn compat(format: Format, data: &[u8]) {
    let Some((candidate, earlier)) = two_texts(data) else {
        return;
    };
    let _ = check(
        format,
        Mode::FullTransitive,
        &SchemaText::new(candidate),
        &[SchemaText::new(earlier)],
    );
}

/// Parses the input in every format and renders each canonical form.
pub fn canonical(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let checker = Checker::default();
    for format in [Format::Avro, Format::Json, Format::Protobuf] {
        if let Ok(parsed) = checker.parse(format, SchemaRole::Candidate, &SchemaText::new(text)) {
            let _ = parsed.canonical();
        }
    }
}

/// Reads the input as a manifest file.
pub fn manifests(data: &[u8]) {
    static FOLDER: OnceLock<tempfile::TempDir> = OnceLock::new();
    let folder = FOLDER.get_or_init(|| tempfile::tempdir().expect("a temporary folder"));
    let path: PathBuf = folder.path().join("input.yaml");
    std::fs::write(&path, data).expect("the input is written");
    let _ = schemaops::local::manifests::load(&[path]);
}

/// Sends the input as the body of the registry's POST requests (register,
/// look up, both compatibility tests) to an embedded registry in memory;
/// any 500 is a defect.
pub fn rest_request(data: &[u8]) {
    static API: OnceLock<(tokio::runtime::Runtime, axum::Router, tempfile::TempDir)> = OnceLock::new();
    let (runtime, api, _folder) = API.get_or_init(|| {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("a tokio runtime");
        let folder = tempfile::tempdir().expect("a temporary folder");
        let store = SqliteStore::open(&folder.path().join("registry.db")).expect("the store opens");
        let registry = runtime
            .block_on(EmbeddedRegistry::open(Arc::new(store), Checker::default()))
            .expect("the registry opens");
        let api = router(ApiState {
            registry: Arc::new(registry),
            body_limit: 1024 * 1024,
            auth: None,
            policies: None,
            admission: None,
        });
        (runtime, api, folder)
    });
    for uri in [
        "/subjects/fuzz/versions",
        "/subjects/fuzz",
        "/compatibility/subjects/fuzz/versions/latest",
        "/compatibility/subjects/fuzz/versions?verbose=true",
    ] {
        let request = Request::post(uri)
            .header("content-type", "application/vnd.schemaregistry.v1+json")
            .body(Body::from(data.to_vec()))
            .expect("a request");
        let response = runtime
            .block_on(api.clone().oneshot(request))
            .expect("the router answers");
        assert_ne!(
            response.status(),
            StatusCode::INTERNAL_SERVER_ERROR,
            "POST {uri} answered 500"
        );
    }
}
