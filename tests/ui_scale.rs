//! The pages at scale (issue 37, item 2): `GET /ui/` and a long subject's
//! pages (history, diff, matrix) on a real `schemaops registry` holding
//! many versions answer in bounded time and size (the diff's version picker
//! listed every version twice: 340 KB at 5,000 versions), and a
//! registration sent while pages load is not held up by them.
//!
//! The store is built in-process first (compatibility NONE, one subject's
//! versions after another), then served. `SCHEMAOPS_UI_SCALE_VERSIONS` sets
//! the number of versions: 10,000 by default, 50,000 for the issue's
//! measurement (best in release: `cargo test --release --test ui_scale`).

mod support;

use std::sync::Arc;
use std::time::{Duration, Instant};

use schemaops::compat::{Checker, Format, Mode};
use schemaops::registry::embedded::EmbeddedRegistry;
use schemaops::registry::embedded::sqlite::SqliteStore;
use schemaops::registry::{NewSchema, RegisterOptions, Registry, SubjectName};
use serde_json::json;
use support::registry::RegistryProcess;

/// Versions per subject, after the long subject: the list shows at most
/// 500 subjects, so the list page shows most of them.
const VERSIONS_PER_SUBJECT: usize = 100;

/// The subject that holds half of all versions: one long history.
const LONG: &str = "subject-long-value";

fn record(subject: usize, version: usize) -> String {
    format!(
        r#"{{"type":"record","name":"R{subject}","doc":"v{version}","fields":[{{"name":"f{version}","type":"long"}}]}}"#
    )
}

/// A folder holding a store with `versions` versions: half of them in
/// [`LONG`], the rest in subjects of [`VERSIONS_PER_SUBJECT`].
async fn build_store(versions: usize) -> tempfile::TempDir {
    // On tmpfs when there is one: each registration is a synchronous commit.
    let folder = tempfile::Builder::new()
        .tempdir_in(if std::path::Path::new("/dev/shm").is_dir() {
            "/dev/shm"
        } else {
            "/tmp"
        })
        .unwrap();
    let store = SqliteStore::open(&folder.path().join("registry.db")).unwrap();
    let registry = EmbeddedRegistry::open(Arc::new(store), Checker::default())
        .await
        .unwrap();
    registry.set_compatibility(None, Mode::None).await.unwrap();
    let long = versions / 2;
    for index in 0..versions {
        let (name, subject, version) = if index < long {
            (LONG.to_owned(), 99_999, index)
        } else {
            let (subject, version) = (
                (index - long) / VERSIONS_PER_SUBJECT,
                (index - long) % VERSIONS_PER_SUBJECT,
            );
            (format!("subject-{subject:04}-value"), subject, version)
        };
        let schema = NewSchema {
            contract: Default::default(),
            format: Format::Avro,
            text: record(subject, version),
            references: Vec::new(),
        };
        registry
            .register(&SubjectName::new(name).unwrap(), &schema, RegisterOptions::default())
            .await
            .unwrap();
    }
    folder
}

fn versions() -> usize {
    std::env::var("SCHEMAOPS_UI_SCALE_VERSIONS")
        .ok()
        .and_then(|count| count.parse().ok())
        .unwrap_or(10_000)
}

async fn timed_get(url: &str) -> (Duration, String) {
    let started = Instant::now();
    let response = support::http_client()
        .get(url)
        .timeout(Duration::from_secs(120))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200, "{url}");
    let body = response.text().await.unwrap();
    (started.elapsed(), body)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn pages_stay_fast_and_never_hold_up_a_registration() {
    let versions = versions();
    let built = Instant::now();
    let folder = build_store(versions).await;
    eprintln!("{versions} versions built in {:?}", built.elapsed());
    let server = RegistryProcess::start(folder.path()).await;

    // The pages alone, loaded one after another.
    let mut page_times = Vec::new();
    for _ in 0..3 {
        let (elapsed, body) = timed_get(&format!("{}/ui/", server.url)).await;
        assert!(body.contains("subject-0000-value"), "the list shows the subjects");
        page_times.push(elapsed);
    }
    let list_page = *page_times.iter().min().unwrap();
    // The long subject's own pages: each bounded, whatever its history.
    let mut long_pages = Vec::new();
    for page in ["", "/diff", "/matrix"] {
        let (elapsed, body) = timed_get(&format!("{}/ui/subjects/{LONG}{page}", server.url)).await;
        long_pages.push((page, elapsed, body.len()));
    }
    eprintln!("GET /ui/ {page_times:?}; {LONG}'s pages (path, time, bytes): {long_pages:?}");

    // Registrations while pages load: each is timed.
    let url = server.url.clone();
    let loading = tokio::spawn(async move {
        for _ in 0..3 {
            timed_get(&format!("{url}/ui/")).await;
        }
    });
    let client = support::http_client();
    let mut latencies = Vec::new();
    let mut index = 0;
    while !loading.is_finished() {
        let started = Instant::now();
        let response = client
            .post(format!("{}/subjects/during-pages-value/versions", server.url))
            .json(&json!({ "schema": record(999_999, index) }))
            .send()
            .await
            .unwrap();
        assert!(response.status().is_success(), "{}", response.status());
        latencies.push(started.elapsed());
        index += 1;
    }
    loading.await.unwrap();
    let slowest = latencies.iter().max().copied().unwrap_or_default();
    eprintln!(
        "{} registrations during 3 page loads; slowest {slowest:?}",
        latencies.len()
    );
    assert!(
        list_page < Duration::from_secs(5),
        "GET /ui/ took {list_page:?} with {versions} versions"
    );
    for (page, elapsed, bytes) in long_pages {
        assert!(elapsed < Duration::from_secs(5), "{LONG}{page} took {elapsed:?}");
        assert!(bytes < 256 * 1024, "{LONG}{page} is {bytes} bytes");
    }
    assert!(
        slowest < Duration::from_millis(500).max(list_page / 4),
        "a registration waited {slowest:?} while pages took {list_page:?} each"
    );
}
