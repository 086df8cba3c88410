//! `schemaops registry --store postgres://…` as real processes (issue 8,
//! item 3): two processes sharing one database under concurrent writes, and
//! durability across SIGKILL. Then the store over TLS, against a server
//! whose pg_hba.conf rejects plain TCP: with `sslmode=require` and the CA
//! file it works (which proves TLS), and each way of getting it wrong ends
//! the process with an error that says what to fix and never the password.

mod support;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Duration;

use schemaops::compat::{Checker, Format};
use schemaops::registry::embedded::EmbeddedRegistry;
use schemaops::registry::embedded::postgres::PostgresStore;
use schemaops::registry::{NewSchema, RegisterOptions, Registry, SubjectName, VersionFilter};
use serde_json::{Value, json};
use support::durability::{self, schema};
use support::registry::RegistryProcess;

const SUBJECTS: usize = 3;

async fn get(client: &reqwest::Client, url: String) -> Value {
    let response = client.get(&url).send().await.unwrap();
    assert!(response.status().is_success(), "GET {url}: {}", response.status());
    response.json().await.unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_processes_on_one_database_allocate_without_duplicates_and_see_each_other() {
    let Some(server) = support::postgres::shared() else {
        return;
    };
    let dsn = server.database().await;
    let data = tempfile::tempdir().unwrap();
    let first = RegistryProcess::start_with(data.path(), &["--store", &dsn]).await;
    let second = RegistryProcess::start_with(data.path(), &["--store", &dsn]).await;
    let client = support::http_client();

    // 2 x 32 concurrent registrations of distinct schemas into a few shared subjects.
    let mut writers = Vec::new();
    for index in 0..64 {
        let client = client.clone();
        let url = if index % 2 == 0 {
            first.url.clone()
        } else {
            second.url.clone()
        };
        writers.push(tokio::spawn(async move {
            let subject = format!("shared-{}", index % SUBJECTS);
            let response = client
                .post(format!("{url}/subjects/{subject}/versions"))
                .json(&json!({ "schema": schema(index) }))
                .send()
                .await
                .unwrap();
            let status = response.status();
            let body: Value = response.json().await.unwrap();
            assert!(status.is_success(), "registration {index} failed: {status} {body}");
            (index, subject, body["id"].as_u64().expect("the reply has an ID"))
        }));
    }
    let mut registered = Vec::new();
    for writer in writers {
        registered.push(writer.await.unwrap());
    }

    let ids: BTreeSet<u64> = registered.iter().map(|(_, _, id)| *id).collect();
    assert_eq!(ids.len(), 64, "every distinct schema got its own ID");

    let mut per_subject: BTreeMap<String, usize> = BTreeMap::new();
    for (_, subject, _) in &registered {
        *per_subject.entry(subject.clone()).or_default() += 1;
    }
    for url in [&first.url, &second.url] {
        let subjects = get(&client, format!("{url}/subjects")).await;
        let expected: Vec<Value> = per_subject.keys().map(|s| json!(s)).collect();
        assert_eq!(subjects, json!(expected), "{url} lists every subject");
        for (subject, count) in &per_subject {
            let versions = get(&client, format!("{url}/subjects/{subject}/versions")).await;
            let expected: Vec<usize> = (1..=*count).collect();
            assert_eq!(
                versions,
                json!(expected),
                "{url}: versions of {subject} are exactly 1..{count}"
            );
        }
    }
    // Each schema reads back with the same ID and text through either process,
    // and the version that holds it is the same.
    for (index, subject, id) in &registered {
        for url in [&first.url, &second.url] {
            let found = get(&client, format!("{url}/schemas/ids/{id}")).await;
            assert_eq!(found["schema"], json!(schema(*index)), "{url}: schema {id}");
            let response = client
                .post(format!("{url}/subjects/{subject}"))
                .json(&json!({ "schema": schema(*index) }))
                .send()
                .await
                .unwrap();
            let found: Value = response.json().await.unwrap();
            assert_eq!(found["id"].as_u64(), Some(*id), "{url}: schema {index} has ID {id}");
        }
    }
    // A setting written through one process is seen by the other.
    let response = client
        .put(format!("{}/config/shared-0", first.url))
        .json(&json!({ "compatibility": "NONE" }))
        .send()
        .await
        .unwrap();
    assert!(response.status().is_success());
    let config = get(&client, format!("{}/config/shared-0", second.url)).await;
    assert_eq!(config["compatibilityLevel"], "NONE");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn every_acknowledged_registration_survives_sigkill() {
    let Some(server) = support::postgres::shared() else {
        return;
    };
    let dsn = server.database().await;
    let data = tempfile::tempdir().unwrap();
    let mut registry = RegistryProcess::start_with(data.path(), &["--store", &dsn]).await;
    let acknowledged = durability::register_until_killed(&mut registry, 8, Duration::from_millis(700)).await;
    assert!(
        acknowledged.len() > 5,
        "the kill came after some registrations ({})",
        acknowledged.len()
    );
    // An empty --data folder: everything comes from PostgreSQL.
    let other_data = tempfile::tempdir().unwrap();
    let registry = RegistryProcess::start_with(other_data.path(), &["--store", &dsn]).await;
    durability::assert_all_kept(&registry.url, &acknowledged).await;
}

/// A password the DSNs carry (trust authentication ignores it); no error may show it.
const PASSWORD: &str = "hunter2-never-shown";

/// The DSN of a new database on `server` with the password and `sslmode`.
async fn dsn_with(server: &support::postgres::PostgresServer, sslmode: &str) -> String {
    let dsn = server.database().await;
    let dsn = dsn.replacen("postgres://schemaops@", &format!("postgres://schemaops:{PASSWORD}@"), 1);
    assert!(dsn.contains(PASSWORD), "{dsn}");
    format!("{dsn}?sslmode={sslmode}")
}

/// Runs `schemaops registry` with `extra`, which must fail to start: its
/// stderr, which must not hold the password.
fn registry_refusing_to_start(extra: &[&str]) -> String {
    let stderr = support::registry::refusing_to_start(extra, &[], Duration::from_secs(30));
    assert!(!stderr.contains(PASSWORD), "the password leaked: {stderr}");
    eprintln!("{stderr}");
    stderr
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn over_tls_with_the_ca_file_schemas_register_and_read_back_through_a_restart() {
    let Some(server) = support::postgres::shared_tls() else {
        return;
    };
    let ca = server.ca_file().unwrap().to_str().unwrap().to_owned();
    let dsn = dsn_with(server, "require").await;
    let args = ["--store", dsn.as_str(), "--store-ca-file", ca.as_str()];
    let data = tempfile::tempdir().unwrap();
    let client = support::http_client();
    let mut ids = Vec::new();
    {
        let registry = RegistryProcess::start_with(data.path(), &args).await;
        for index in 0..3 {
            let response = client
                .post(format!("{}/subjects/tls-value/versions", registry.url))
                .json(&json!({ "schema": schema(index) }))
                .send()
                .await
                .unwrap();
            assert!(
                response.status().is_success(),
                "registration {index}: {}",
                response.status()
            );
            let body: Value = response.json().await.unwrap();
            ids.push(body["id"].as_u64().expect("the reply has an ID"));
        }
    }
    // A new process, with an empty --data folder, reads everything back over TLS.
    let other_data = tempfile::tempdir().unwrap();
    let registry = RegistryProcess::start_with(other_data.path(), &args).await;
    assert_eq!(
        get(&client, format!("{}/subjects/tls-value/versions", registry.url)).await,
        json!([1, 2, 3])
    );
    for (index, id) in ids.iter().enumerate() {
        let found = get(&client, format!("{}/schemas/ids/{id}", registry.url)).await;
        assert_eq!(found["schema"], json!(schema(index)), "schema {id}");
    }
}

/// A server that authenticates its users by certificate (`cert` in
/// pg_hba.conf): the registry logs in with `--store-client-cert` and
/// `--store-client-key`, and without them the server's refusal is shown.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_user_authenticated_by_client_certificate_logs_in_with_it_and_is_refused_without() {
    let Some(server) = support::postgres::shared_tls() else {
        return;
    };
    let ca = server.ca_file().unwrap().to_str().unwrap().to_owned();
    let (cert, key) = server.client_identity().unwrap();
    let (cert, key) = (cert.to_str().unwrap().to_owned(), key.to_str().unwrap().to_owned());
    let dsn = dsn_with(server, "require").await.replacen(
        "postgres://schemaops:",
        &format!("postgres://{}:", support::postgres::CERTIFIED_USER),
        1,
    );
    let with_identity = [
        "--store",
        dsn.as_str(),
        "--store-ca-file",
        ca.as_str(),
        "--store-client-cert",
        cert.as_str(),
        "--store-client-key",
        key.as_str(),
    ];
    let data = tempfile::tempdir().unwrap();
    let registry = RegistryProcess::start_with(data.path(), &with_identity).await;
    let response = support::http_client()
        .post(format!("{}/subjects/certified-value/versions", registry.url))
        .json(&json!({ "schema": schema(1) }))
        .send()
        .await
        .unwrap();
    assert!(response.status().is_success(), "{}", response.status());
    drop(registry);

    let stderr = registry_refusing_to_start(&with_identity[..4]);
    assert!(
        stderr.contains(&format!("cannot connect to PostgreSQL at 127.0.0.1:{}", server.port)),
        "{stderr}"
    );
    assert!(
        stderr.contains("certificate"),
        "the server's refusal names the certificate: {stderr}"
    );
}

#[tokio::test]
async fn over_tls_without_the_ca_file_the_registry_exits_naming_the_unknown_issuer() {
    let Some(server) = support::postgres::shared_tls() else {
        return;
    };
    let dsn = dsn_with(server, "require").await;
    let stderr = registry_refusing_to_start(&["--store", &dsn]);
    for expected in [
        &format!("cannot connect to PostgreSQL at 127.0.0.1:{}", server.port),
        "the TLS handshake failed: the server's certificate is issued by an unknown CA",
        "--store-ca-file",
    ] {
        assert!(stderr.contains(expected), "{expected:?} in {stderr}");
    }
}

#[tokio::test]
async fn without_tls_a_server_that_requires_it_refuses_and_the_registry_says_to_add_sslmode_require() {
    let Some(server) = support::postgres::shared_tls() else {
        return;
    };
    let dsn = dsn_with(server, "disable").await;
    let stderr = registry_refusing_to_start(&["--store", &dsn]);
    for expected in [
        &format!("cannot connect to PostgreSQL at 127.0.0.1:{}", server.port),
        // The server's own words (pg_hba.conf's hostnossl … reject).
        "pg_hba.conf rejects connection",
        "no encryption",
        "add sslmode=require",
    ] {
        assert!(stderr.contains(expected), "{expected:?} in {stderr}");
    }
}

#[tokio::test]
async fn sslmode_require_against_a_server_without_tls_fails_instead_of_falling_back() {
    let Some(server) = support::postgres::shared() else {
        return;
    };
    let dsn = dsn_with(server, "require").await;
    let stderr = registry_refusing_to_start(&["--store", &dsn]);
    assert!(
        stderr.contains("sslmode=require, but the server does not offer TLS"),
        "{stderr}"
    );
}

#[test]
fn a_ca_file_that_is_not_pem_is_named_in_the_error() {
    let file = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(file.path(), "not a certificate\n").unwrap();
    let path = file.path().to_str().unwrap();
    // No server is needed: the file is read before connecting (port 1 refuses anyway).
    let dsn = format!("postgres://schemaops:{PASSWORD}@127.0.0.1:1/db?sslmode=require");
    let stderr = registry_refusing_to_start(&["--store", &dsn, "--store-ca-file", path]);
    assert!(
        stderr.contains(&format!("failed to read CA certificates from {path}")),
        "{stderr}"
    );
}

#[tokio::test]
async fn over_tls_a_host_name_the_certificate_does_not_list_is_refused_even_with_the_ca_file() {
    let Some(server) = support::postgres::shared_tls() else {
        return;
    };
    let ca = server.ca_file().unwrap().to_str().unwrap().to_owned();
    // Connect to 127.0.0.1 (hostaddr) but verify the certificate against the DSN's host.
    let dsn = dsn_with(server, "require")
        .await
        .replacen("@127.0.0.1:", "@db.invalid:", 1)
        + "&hostaddr=127.0.0.1";
    let stderr = registry_refusing_to_start(&["--store", &dsn, "--store-ca-file", &ca]);
    for expected in [
        &format!("cannot connect to PostgreSQL at db.invalid:{}", server.port),
        "the server's certificate is not valid for the host the DSN names",
    ] {
        assert!(stderr.contains(expected), "{expected:?} in {stderr}");
    }
}

/// The `changes` log is compacted as writers go, and a process that slept
/// through the compaction loads everything again instead of missing writes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_process_behind_a_compacted_log_loads_everything_again() {
    let Some(server) = support::postgres::shared() else {
        return;
    };
    let dsn = server.database().await;
    let open = |retention: u64| {
        let dsn = dsn.clone();
        async move {
            let store = PostgresStore::connect(&dsn)
                .await
                .unwrap()
                .with_log_retention(retention);
            EmbeddedRegistry::open(Arc::new(store), Checker::default())
                .await
                .unwrap()
        }
    };
    let writer = open(4).await;
    let sleeper = open(4).await;
    let avro = |index: usize| NewSchema {
        contract: Default::default(),
        format: Format::Avro,
        text: schema(index),
        references: Vec::new(),
    };
    let subject = |index: usize| SubjectName::new(format!("subject-{}", index % SUBJECTS)).unwrap();
    let mut ids = BTreeSet::new();
    for index in 0..30 {
        let registered = writer
            .register(&subject(index), &avro(index), RegisterOptions::default())
            .await
            .unwrap();
        ids.insert(registered.id);
    }

    // The log kept only the newest entries and says how far it was compacted.
    let (client, connection) = tokio_postgres::connect(&dsn, tokio_postgres::NoTls).await.unwrap();
    tokio::spawn(connection);
    let entries: i64 = client
        .query_one("SELECT count(*) FROM changes", &[])
        .await
        .unwrap()
        .get(0);
    assert!(
        entries <= 8,
        "the log holds {entries} entries, at most twice the retention of 4"
    );
    let compacted: String = client
        .query_one("SELECT value FROM settings WHERE key = 'log_compacted_through'", &[])
        .await
        .unwrap()
        .get(0);
    assert!(compacted.parse::<u64>().unwrap() >= 20, "compacted through {compacted}");

    // The sleeper last saw revision 0: it cannot replay, so it reloads and sees every write.
    for index in 0..SUBJECTS {
        let versions = sleeper.versions(&subject(index), VersionFilter::Live).await.unwrap();
        assert_eq!(versions.len(), 10, "subject-{index}: {versions:?}");
    }
    // And it writes on top of them: a new version after the ten, a new ID after the thirty.
    let registered = sleeper
        .register(&subject(0), &avro(1000), RegisterOptions::default())
        .await
        .unwrap();
    assert_eq!(registered.version.to_string(), "11");
    assert!(!ids.contains(&registered.id), "the new ID {} is fresh", registered.id);
    // The writer, for its part, catches up by replaying the log.
    let versions = writer.versions(&subject(0), VersionFilter::Live).await.unwrap();
    assert_eq!(versions.len(), 11);
}
