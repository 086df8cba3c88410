//! `schemaops registry --store kafka://…/TOPIC` as real processes against a
//! real broker (Tansu, issue 43): the topic is created when missing;
//! registrations, soft deletes and settings go through HTTP, survive a
//! restart with their IDs and versions, and reach a second, read-only
//! instance, which answers writes as a Confluent follower without a leader
//! does (500, 50004). A topic that cannot hold the log is refused at start.
//! The official Confluent Python client's suite passes against a registry
//! on a topic.

mod support;

use std::process::Command;
use std::time::Duration;

use schemaops::registry::embedded::kafka::client::Connection;
use serde_json::{Value, json};
use support::broker::Broker;
use support::registry::RegistryProcess;

const TIMEOUT: Duration = Duration::from_secs(20);

fn avro_record(name: &str, fields: &[&str]) -> String {
    let fields: Vec<Value> = fields
        .iter()
        .map(|field| json!({"name": field, "type": "string", "default": ""}))
        .collect();
    json!({"type": "record", "name": name, "fields": fields}).to_string()
}

async fn send(client: &reqwest::Client, method: reqwest::Method, url: String, body: Option<Value>) -> (u16, Value) {
    let mut request = client.request(method, &url);
    if let Some(body) = body {
        request = request.json(&body);
    }
    let response = request.send().await.unwrap();
    let status = response.status().as_u16();
    let text = response.text().await.unwrap();
    let value = serde_json::from_str(&text).unwrap_or_else(|_| panic!("{url} answered {status} with {text}"));
    (status, value)
}

async fn get(client: &reqwest::Client, url: String) -> Value {
    let (status, body) = send(client, reqwest::Method::GET, url.clone(), None).await;
    assert_eq!(status, 200, "GET {url}: {body}");
    body
}

async fn register(client: &reqwest::Client, base: &str, subject: &str, schema: &str) -> (u16, Value) {
    send(
        client,
        reqwest::Method::POST,
        format!("{base}/subjects/{subject}/versions"),
        Some(json!({ "schema": schema })),
    )
    .await
}

/// What a client can read of the registry: every subject's versions with
/// their IDs (soft-deleted ones included, marked), and the subjects' levels.
async fn everything(client: &reqwest::Client, base: &str) -> Value {
    let subjects = get(client, format!("{base}/subjects?deleted=true")).await;
    let mut out = serde_json::Map::new();
    for subject in subjects.as_array().unwrap() {
        let subject = subject.as_str().unwrap();
        // A subject whose versions are all soft-deleted is not found.
        let (_, live) = send(
            client,
            reqwest::Method::GET,
            format!("{base}/subjects/{subject}/versions"),
            None,
        )
        .await;
        let live = if live.is_array() { live } else { json!([]) };
        let all = get(client, format!("{base}/subjects/{subject}/versions?deleted=true")).await;
        let mut versions = Vec::new();
        for version in all.as_array().unwrap() {
            let body = get(
                client,
                format!("{base}/subjects/{subject}/versions/{version}?deleted=true"),
            )
            .await;
            versions.push(json!({
                "version": version,
                "id": body["id"],
                "schema": body["schema"],
                "deleted": !live.as_array().unwrap().contains(version),
            }));
        }
        let (_, level) = send(client, reqwest::Method::GET, format!("{base}/config/{subject}"), None).await;
        out.insert(
            subject.to_owned(),
            json!({"versions": versions, "level": level.get("compatibilityLevel")}),
        );
    }
    Value::Object(out)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_topic_store_serves_the_rest_api_through_a_restart_and_to_a_read_only_follower() {
    let Some(broker) = Broker::start_or_skip() else {
        return;
    };
    let url = format!("kafka://{}/_schemas", broker.address);
    let data = tempfile::tempdir().unwrap();
    let client = support::http_client();

    // The topic does not exist: the first instance creates it as Confluent does.
    let mut writer = RegistryProcess::start_with(data.path(), &["--store", &url]).await;
    let mut connection = Connection::connect(&broker.address, TIMEOUT).await.unwrap();
    let layout = connection
        .topic_layout("_schemas")
        .await
        .unwrap()
        .expect("the topic was created");
    assert_eq!(layout.partitions, 1);
    let configs = connection.topic_configs("_schemas", &["cleanup.policy"]).await.unwrap();
    assert_eq!(configs, vec![Some("compact".to_owned())]);

    let first = avro_record("Order", &["id"]);
    let second = avro_record("Order", &["id", "note"]);
    let payment = avro_record("Payment", &["id"]);
    let (status, one) = register(&client, &writer.url, "orders-value", &first).await;
    assert_eq!(status, 200, "{one}");
    let (_, two) = register(&client, &writer.url, "orders-value", &second).await;
    let (_, three) = register(&client, &writer.url, "payments-value", &payment).await;
    // The same schema under another subject keeps its ID.
    let (_, again) = register(&client, &writer.url, "orders-copy", &first).await;
    assert_eq!(again["id"], one["id"]);
    // A schema with a reference to another subject's version.
    let customer = avro_record("Customer", &["name"]);
    let (status, body) = register(&client, &writer.url, "customers-value", &customer).await;
    assert_eq!(status, 200, "{body}");
    let invoice =
        json!({"type": "record", "name": "Invoice", "fields": [{"name": "to", "type": "Customer"}]}).to_string();
    let invoice_body = json!({
        "schema": invoice,
        "references": [{"name": "Customer", "subject": "customers-value", "version": 1}],
    });
    let (status, invoice_id) = send(
        &client,
        reqwest::Method::POST,
        format!("{}/subjects/invoices-value/versions", writer.url),
        Some(invoice_body.clone()),
    )
    .await;
    assert_eq!(status, 200, "{invoice_id}");
    let ids = [&one["id"], &two["id"], &three["id"]];
    assert!(ids.iter().all(|id| id.as_i64().is_some()), "{ids:?}");

    let (status, body) = send(
        &client,
        reqwest::Method::PUT,
        format!("{}/config/orders-value", writer.url),
        Some(json!({"compatibility": "FULL"})),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    let (status, body) = send(
        &client,
        reqwest::Method::DELETE,
        format!("{}/subjects/orders-copy/versions/1", writer.url),
        None,
    )
    .await;
    assert_eq!((status, body), (200, json!(1)));

    // Bad input gets Confluent's error JSON, and writes nothing.
    let (status, body) = register(&client, &writer.url, "orders-value", "{not json").await;
    assert_eq!(status, 422, "{body}");
    assert_eq!(body["error_code"], 42201, "{body}");
    let (status, body) = send(
        &client,
        reqwest::Method::GET,
        format!("{}/subjects/nobody/versions", writer.url),
        None,
    )
    .await;
    assert_eq!((status, body["error_code"].clone()), (404, json!(40401)));

    let before = everything(&client, &writer.url).await;
    assert_eq!(before["orders-copy"]["versions"][0]["deleted"], true, "{before}");
    assert_eq!(before["orders-value"]["level"], "FULL", "{before}");

    let by_id = get(&client, format!("{}/schemas/ids/{}", writer.url, two["id"])).await;

    // A restart reads everything back from the topic.
    assert_eq!(writer.terminate(Duration::from_secs(20)), Some(0));
    let writer = RegistryProcess::start_with(data.path(), &["--store", &url]).await;
    assert_eq!(everything(&client, &writer.url).await, before);
    assert_eq!(
        get(&client, format!("{}/schemas/ids/{}", writer.url, two["id"])).await,
        by_id
    );
    // The schemas read back are recognised: registering one again finds it.
    let (status, same) = register(&client, &writer.url, "orders-value", &second).await;
    assert_eq!((status, &same["id"]), (200, &two["id"]), "{same}");
    assert_eq!(
        get(&client, format!("{}/subjects/orders-value/versions", writer.url)).await,
        json!([1, 2])
    );
    // So is one with a reference, read back with the text it refers to.
    let (status, same) = send(
        &client,
        reqwest::Method::POST,
        format!("{}/subjects/invoices-value/versions", writer.url),
        Some(invoice_body),
    )
    .await;
    assert_eq!((status, &same["id"]), (200, &invoice_id["id"]), "{same}");
    assert_eq!(
        get(&client, format!("{}/subjects/invoices-value/versions", writer.url)).await,
        json!([1])
    );

    // A read-only follower sees the same, and refuses writes as Confluent
    // does without a leader to forward to.
    let follower_data = tempfile::tempdir().unwrap();
    let follower = RegistryProcess::start_with(follower_data.path(), &["--store", &url, "--store-read-only"]).await;
    assert_eq!(everything(&client, &follower.url).await, before);
    let (status, body) = register(&client, &follower.url, "orders-value", &avro_record("Order", &["x"])).await;
    assert_eq!(status, 500, "{body}");
    assert_eq!(body["error_code"], 50004, "{body}");
    assert!(body["message"].as_str().unwrap().contains("read-only"), "{body}");

    // It follows what the writer writes after it started.
    let (status, four) = register(&client, &writer.url, "late-value", &avro_record("Late", &["id"])).await;
    assert_eq!(status, 200, "{four}");
    let seen = get(&client, format!("{}/subjects/late-value/versions/1", follower.url)).await;
    assert_eq!(seen["id"], four["id"]);
    // After a restart the writer allocates past every ID it read.
    assert!(four["id"].as_i64() > three["id"].as_i64(), "{four} after {three}");
}

/// Runs `schemaops registry` with `extra`, which must fail to start: its stderr.
fn registry_refusing_to_start(extra: &[&str]) -> String {
    support::registry::refusing_to_start(extra, &[], Duration::from_secs(30))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn topics_that_cannot_hold_the_log_are_refused_naming_the_topic_and_the_problem() {
    let Some(broker) = Broker::start_or_skip() else {
        return;
    };
    let mut connection = Connection::connect(&broker.address, TIMEOUT).await.unwrap();
    let two_partitions = kafka_protocol_topic(&mut connection, "split-schemas", 2, "compact").await;
    assert!(two_partitions);
    let stderr = registry_refusing_to_start(&["--store", &format!("kafka://{}/split-schemas", broker.address)]);
    assert!(stderr.contains("split-schemas"), "{stderr}");
    assert!(stderr.contains("has 2 partitions"), "{stderr}");

    connection
        .create_topic("deleting-schemas", 1, &[("cleanup.policy", "delete")])
        .await
        .unwrap();
    let url = format!("kafka://{}/deleting-schemas", broker.address);
    let stderr = registry_refusing_to_start(&["--store", &url]);
    assert!(stderr.contains("deleting-schemas"), "{stderr}");
    assert!(stderr.contains("cleanup.policy=delete"), "{stderr}");
    // The documented override starts it anyway.
    let data = tempfile::tempdir().unwrap();
    let started = RegistryProcess::start_with(data.path(), &["--store", &url, "--store-skip-topic-validation"]).await;
    let client = support::http_client();
    assert_eq!(get(&client, format!("{}/subjects", started.url)).await, json!([]));

    // A missing topic is not created when that is not allowed.
    let stderr = registry_refusing_to_start(&[
        "--store",
        &format!("kafka://{}/missing-schemas", broker.address),
        "--store-no-create-topic",
    ]);
    assert!(
        stderr.contains("missing-schemas") && stderr.contains("does not exist"),
        "{stderr}"
    );
}

/// Creates `topic` with `partitions` partitions (the store's own
/// `create_topic` makes one only).
async fn kafka_protocol_topic(connection: &mut Connection, topic: &str, partitions: i32, policy: &str) -> bool {
    connection
        .create_topic_with_partitions(topic, partitions, 1, &[("cleanup.policy", policy)])
        .await
        .unwrap()
}

/// The official Confluent Python client's suite (`tests/python/registry_client.py`: the API and
/// serializer round trips for Avro, JSON Schema and Protobuf) against a registry on a topic.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_confluent_python_client_works_against_a_registry_on_a_topic() {
    let Some(broker) = Broker::start_or_skip() else {
        return;
    };
    let Some(python) = support::python::confluent_python_or_skip() else {
        return;
    };
    let data = tempfile::tempdir().unwrap();
    let url = format!("kafka://{}/_schemas", broker.address);
    let server = RegistryProcess::start_with(data.path(), &["--store", &url]).await;
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/python/registry_client.py");
    let output = tokio::task::spawn_blocking({
        let url = server.url.clone();
        move || Command::new(python).arg(script).arg(url).output()
    })
    .await
    .unwrap()
    .expect("the client script runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    println!("{stdout}");
    assert!(
        output.status.success() && stdout.contains(" passed, 0 failed"),
        "the Python client failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
}
