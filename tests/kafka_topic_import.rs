//! `schemaops import --from-kafka kafka://…/TOPIC` (issue 43, item 5): a
//! topic written in Confluent's record format by the official Confluent
//! Python client into a real broker (Tansu), half of it in transactions and
//! with an aborted and a fenced one beside, is copied into SQLite; a
//! registry serving the copy answers with the topic's exact IDs, versions,
//! soft deletes and settings, and never reuses a hard-deleted version's
//! number. A second copy into the same store is refused.

mod support;

use std::process::Command;

use serde_json::{Value, json};
use support::broker::Broker;
use support::registry::RegistryProcess;

/// A schema value as Confluent writes it (without the optional digest).
fn schema_record(subject: &str, version: u32, id: u32, schema: &str, deleted: bool) -> String {
    let key = format!(r#"{{"keytype":"SCHEMA","subject":"{subject}","version":{version},"magic":1}}"#);
    let value = json!({
        "subject": subject, "version": version, "id": id, "schemaType": "AVRO",
        "schema": schema, "deleted": deleted,
    });
    // serde_json orders keys alphabetically; Confluent's order does not matter to a reader.
    format!("key {key}\nvalue {value}\n")
}

fn order(fields: &[&str]) -> String {
    let fields: Vec<Value> = fields
        .iter()
        .map(|field| json!({"name": field, "type": "string", "default": ""}))
        .collect();
    json!({"type": "record", "name": "Order", "fields": fields}).to_string()
}

/// The topic: IDs out of order with gaps, a soft delete, a hard delete,
/// a subject level and a global level.
fn records() -> String {
    let mut text = String::from("key {\"keytype\":\"CONFIG\",\"magic\":0}\nvalue {\"compatibilityLevel\":\"FULL\"}\n");
    text += &schema_record("orders-value", 1, 7, &order(&["id"]), false);
    text += &schema_record("orders-value", 2, 12, &order(&["id", "note"]), false);
    text += &schema_record("orders-value", 3, 13, &order(&["id", "note", "extra"]), false);
    text += &schema_record("payments-value", 1, 3, r#"{"type":"string"}"#, false);
    text += &schema_record("orders-value", 1, 7, &order(&["id"]), true);
    text += &schema_record("orders-value", 3, 13, &order(&["id", "note", "extra"]), true);
    text += "key {\"keytype\":\"SCHEMA\",\"subject\":\"orders-value\",\"version\":3,\"magic\":1}\ntombstone\n";
    text += "key {\"keytype\":\"CONFIG\",\"subject\":\"orders-value\",\"magic\":0}\n\
             value {\"subject\":\"orders-value\",\"compatibilityLevel\":\"NONE\"}\n";
    text
}

fn import(data: &std::path::Path, url: &str) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_schemaops"))
        .args(["import", "--from-kafka", url, "--data"])
        .arg(data)
        .env("RUST_LOG", "warn")
        .output()
        .expect("schemaops runs")
}

async fn get(client: &reqwest::Client, url: String) -> Value {
    let response = client.get(&url).send().await.unwrap();
    assert!(response.status().is_success(), "GET {url}: {}", response.status());
    response.json().await.unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_topic_is_copied_into_sqlite_with_its_exact_ids_versions_and_deletes() {
    let Some(broker) = Broker::start_or_skip() else {
        return;
    };
    let Some(python) = support::python::confluent_python_or_skip() else {
        return;
    };
    let work = tempfile::tempdir().unwrap();
    let records_file = work.path().join("topic.records");
    std::fs::write(&records_file, records()).unwrap();
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/python/kafka_store_topic.py");
    let output = Command::new(python)
        .arg(script)
        .args([&broker.address, "old-schemas"])
        .arg(&records_file)
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));

    let data = work.path().join("data");
    let url = format!("kafka://{}/old-schemas", broker.address);
    let output = import(&data, &url);
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(
        stdout.contains(
            "4 schemas, 2 subjects and 3 versions (1 soft-deleted) copied from topic old-schemas; 1 hard-deleted"
        ),
        "{stdout}"
    );

    let registry = RegistryProcess::start(&data).await;
    let client = support::http_client();
    let base = &registry.url;
    assert_eq!(
        get(&client, format!("{base}/subjects")).await,
        json!(["orders-value", "payments-value"])
    );
    assert_eq!(
        get(&client, format!("{base}/subjects/orders-value/versions")).await,
        json!([2])
    );
    assert_eq!(
        get(&client, format!("{base}/subjects/orders-value/versions?deleted=true")).await,
        json!([1, 2])
    );
    assert_eq!(
        get(&client, format!("{base}/subjects/orders-value/versions/2")).await["id"],
        12
    );
    assert_eq!(
        get(&client, format!("{base}/subjects/orders-value/versions/1?deleted=true")).await["id"],
        7
    );
    assert_eq!(
        get(&client, format!("{base}/subjects/payments-value/versions/1")).await["id"],
        3
    );
    // Answered as Avro's `Schema.toString()` writes it: the same JSON.
    let answered = get(&client, format!("{base}/schemas/ids/12")).await;
    let answered: Value = serde_json::from_str(answered["schema"].as_str().unwrap()).unwrap();
    assert_eq!(
        answered,
        serde_json::from_str::<Value>(&order(&["id", "note"])).unwrap()
    );
    assert_eq!(
        get(&client, format!("{base}/config")).await["compatibilityLevel"],
        "FULL"
    );
    assert_eq!(
        get(&client, format!("{base}/config/orders-value")).await["compatibilityLevel"],
        "NONE"
    );
    // The aborted and fenced transactions' subject is not there.
    let response = client
        .get(format!("{base}/subjects/must-not-appear/versions"))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 404);

    // The next registration gets the next ID after the highest, and version
    // 4: the hard-deleted version 3 is never given again.
    let registered: Value = client
        .post(format!("{base}/subjects/orders-value/versions"))
        .json(&json!({"schema": order(&["id", "other"])}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(registered["id"], 14, "{registered}");
    assert_eq!(
        get(&client, format!("{base}/subjects/orders-value/versions/latest")).await["version"],
        4
    );
    drop(registry);

    // A second copy into a store that holds something is refused.
    let output = import(&data, &url);
    assert_eq!(output.status.code(), Some(2), "{output:?}");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("copies into an empty store only"), "{stderr}");
}
