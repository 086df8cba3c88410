//! `schemaops registry` as a real process on a loopback port: durability
//! across SIGKILL, and concurrent registrations (issue 5).

mod support;

use std::collections::BTreeSet;
use std::time::Duration;

use serde_json::{Value, json};
use support::durability::{self, schema};
use support::registry::RegistryProcess;

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn every_acknowledged_registration_survives_sigkill() {
    let data = tempfile::tempdir().unwrap();
    let mut server = RegistryProcess::start(data.path()).await;
    // Many writers register distinct schemas under a few subjects while the server is killed mid-stream.
    let acknowledged = durability::register_until_killed(&mut server, 16, Duration::from_millis(700)).await;
    assert!(
        acknowledged.len() > 20,
        "the kill came after some registrations ({})",
        acknowledged.len()
    );
    println!("{} registrations were acknowledged before SIGKILL", acknowledged.len());
    let server = RegistryProcess::start(data.path()).await;
    durability::assert_all_kept(&server.url, &acknowledged).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_registrations_of_one_schema_make_one_version_and_of_many_make_gapless_versions() {
    let data = tempfile::tempdir().unwrap();
    let server = RegistryProcess::start(data.path()).await;
    let client = support::http_client();
    let same = (0..32).map(|_| {
        let client = client.clone();
        let url = server.url.clone();
        tokio::spawn(async move { register_id(&client, &format!("{url}/subjects/same/versions"), 0).await })
    });
    let ids: BTreeSet<Option<u64>> = futures_join(same).await.into_iter().collect();
    assert_eq!(ids, BTreeSet::from([Some(1)]));
    let versions: Value = get_json(&client, &format!("{}/subjects/same/versions", server.url)).await;
    assert_eq!(versions, json!([1]));

    let many = (1..=48).map(|index| {
        let client = client.clone();
        let url = server.url.clone();
        tokio::spawn(async move { register_id(&client, &format!("{url}/subjects/many/versions"), index).await })
    });
    let ids: Vec<Option<u64>> = futures_join(many).await;
    let distinct: BTreeSet<Option<u64>> = ids.iter().copied().collect();
    assert_eq!(distinct.len(), 48, "every distinct schema got its own ID");
    assert!(!distinct.contains(&None));
    let versions: Vec<u64> = get_json(&client, &format!("{}/subjects/many/versions", server.url)).await;
    assert_eq!(versions, (1..=48).collect::<Vec<u64>>());
}

/// Registers `schema(index)` at `url` and returns the ID the registry answered with.
async fn register_id(client: &reqwest::Client, url: &str, index: usize) -> Option<u64> {
    let response = client
        .post(url)
        .json(&json!({ "schema": schema(index) }))
        .send()
        .await
        .unwrap();
    response.json::<Value>().await.unwrap()["id"].as_u64()
}

/// GETs `url` and reads the JSON reply.
async fn get_json<T: serde::de::DeserializeOwned>(client: &reqwest::Client, url: &str) -> T {
    client.get(url).send().await.unwrap().json().await.unwrap()
}

async fn futures_join<T>(handles: impl Iterator<Item = tokio::task::JoinHandle<T>>) -> Vec<T> {
    let mut results = Vec::new();
    for handle in handles {
        results.push(handle.await.unwrap());
    }
    results
}

#[tokio::test]
async fn sigterm_stops_the_registry_cleanly_and_the_store_reopens() {
    let data = tempfile::tempdir().unwrap();
    let mut server = RegistryProcess::start(data.path()).await;
    let client = support::http_client();
    let reply = client
        .post(format!("{}/subjects/s/versions", server.url))
        .json(&json!({ "schema": schema(1) }))
        .send()
        .await
        .unwrap();
    assert!(reply.status().is_success());
    assert_eq!(
        server.terminate(std::time::Duration::from_secs(15)),
        Some(0),
        "exit status 0 on SIGTERM"
    );
    let server = RegistryProcess::start(data.path()).await;
    let versions: Value = get_json(&client, &format!("{}/subjects/s/versions", server.url)).await;
    assert_eq!(versions, json!([1]));
}

#[tokio::test]
async fn metrics_count_requests_by_route_template_and_show_the_store_size() {
    let data = tempfile::tempdir().unwrap();
    let server = RegistryProcess::start(data.path()).await;
    let client = support::http_client();
    for (subject, index) in [("a", 1), ("a", 2), ("b", 3)] {
        let reply = client
            .post(format!("{}/subjects/{subject}/versions", server.url))
            .json(&json!({ "schema": schema(index) }))
            .send()
            .await
            .unwrap();
        assert!(reply.status().is_success());
    }
    for subject in ["a", "b", "missing"] {
        client
            .get(format!("{}/subjects/{subject}/versions", server.url))
            .send()
            .await
            .unwrap();
    }
    client
        .get(format!("{}/no/such/route", server.url))
        .send()
        .await
        .unwrap();

    let reply = client.get(format!("{}/metrics", server.url)).send().await.unwrap();
    assert_eq!(reply.status(), 200);
    let scrape = reply.text().await.unwrap();
    let value = |series: &str| support::metric(&scrape, series).unwrap_or_else(|| panic!("no {series} in\n{scrape}"));
    let versions = "/subjects/{subject}/versions";
    let requests = |method: &str, status: u16| {
        value(&format!(
            r#"schemaops_registry_requests_total{{endpoint="{versions}",method="{method}",status="{status}"}}"#
        ))
    };
    assert_eq!(requests("POST", 200), 3.0);
    assert_eq!(requests("GET", 200), 2.0);
    assert_eq!(requests("GET", 404), 1.0);
    assert_eq!(
        value(r#"schemaops_registry_requests_total{endpoint="unmatched",method="GET",status="404"}"#),
        1.0
    );
    assert_eq!(
        value(&format!(
            r#"schemaops_registry_request_duration_seconds_count{{endpoint="{versions}"}}"#
        )),
        6.0
    );
    assert_eq!(value("schemaops_registry_schemas"), 3.0);
    assert_eq!(value("schemaops_registry_subjects"), 2.0);
    assert_eq!(value("schemaops_registry_versions"), 3.0);
    for raw in ["/subjects/a/", "/subjects/missing", "/no/such/route"] {
        assert!(!scrape.contains(raw), "a raw path became a label: {raw}\n{scrape}");
    }
}

#[tokio::test]
async fn a_schema_nested_a_thousand_deep_is_refused_and_the_registry_keeps_serving() {
    let data = tempfile::tempdir().unwrap();
    let server = RegistryProcess::start(data.path()).await;
    let client = support::http_client();
    let deep = format!(
        "syntax = \"proto2\";\nimport \"google/protobuf/descriptor.proto\";\n\
         message O {{ optional O o = 1; optional int32 v = 2; }}\n\
         extend google.protobuf.MessageOptions {{ optional O opt = 50000; }}\n\
         message M {{ option (opt) = {{ {}v: 1{} }}; }}\n",
        "o { ".repeat(1_000),
        "} ".repeat(1_000)
    );
    let response = client
        .post(format!("{}/subjects/hostile-value/versions", server.url))
        .json(&json!({ "schema": deep, "schemaType": "PROTOBUF" }))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), reqwest::StatusCode::UNPROCESSABLE_ENTITY);
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["error_code"], json!(42201), "{body}");
    assert!(body["message"].as_str().unwrap().contains("nests more than"), "{body}");
    let subjects: Value = get_json(&client, &format!("{}/subjects", server.url)).await;
    assert_eq!(subjects, json!([]));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_long_compatibility_check_does_not_hold_up_registrations_elsewhere() {
    let data = tempfile::tempdir().unwrap();
    let server = RegistryProcess::start(data.path()).await;
    let client = support::http_client();
    // Thousands of messages: parsing and comparing them takes a while.
    let heavy = |extra: &str| {
        let mut text = format!("syntax = \"proto3\";\nmessage M0 {{ string a = 1; {extra} }}\n");
        for index in 1..6_000 {
            text.push_str(&format!(
                "message M{index} {{ string a = 1; int64 b = 2; M{} next = 3; }}\n",
                index - 1
            ));
        }
        json!({ "schema": text, "schemaType": "PROTOBUF" })
    };
    let post = |subject: &str, body: Value| {
        let client = client.clone();
        let url = format!("{}/subjects/{subject}/versions", server.url);
        async move {
            let response = client.post(url).json(&body).send().await.unwrap();
            assert!(response.status().is_success(), "{}", response.status());
            std::time::Instant::now()
        }
    };
    post("heavy", heavy("")).await;
    let slow = tokio::spawn(post("heavy", heavy("int32 c = 2;")));
    tokio::time::sleep(Duration::from_millis(300)).await;
    let quick = post("light", json!({ "schema": schema(1) })).await;
    let slow = slow.await.unwrap();
    assert!(
        quick < slow,
        "the light registration finished {:?} after the heavy one: it waited for its check",
        quick - slow
    );
}
