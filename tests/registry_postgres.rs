//! `schemaops registry --store postgres://…` as real processes (issue 8,
//! item 3): two processes sharing one database under concurrent writes, and
//! durability across SIGKILL.

mod support;

use std::collections::{BTreeMap, BTreeSet};

use std::time::Duration;

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
