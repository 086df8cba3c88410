//! Compressed record batches (issue 43): a store topic written by the
//! official Confluent Python client with `compression.type` gzip, snappy,
//! lz4 and zstd into a real broker (Tansu) is read whole by
//! `schemaops import --from-kafka`, and a registry serving the copy answers
//! with the topic's IDs and versions.

mod support;

use std::process::Command;

use serde_json::{Value, json};
use support::broker::Broker;
use support::registry::RegistryProcess;

async fn get(client: &reqwest::Client, url: String) -> Value {
    let response = client.get(&url).send().await.unwrap();
    assert!(response.status().is_success(), "GET {url}: {}", response.status());
    response.json().await.unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn topics_in_gzip_snappy_lz4_and_zstd_batches_are_read_whole() {
    let Some(broker) = Broker::start_or_skip() else {
        return;
    };
    let Some(python) = support::python::confluent_python_or_skip() else {
        return;
    };
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/python/kafka_compressed_topic.py");
    for codec in ["gzip", "snappy", "lz4", "zstd"] {
        let topic = format!("schemas-{codec}");
        let output = Command::new(&python)
            .arg(script)
            .args([&broker.address, &topic, codec])
            .output()
            .unwrap();
        assert!(
            output.status.success(),
            "{codec}: {}",
            String::from_utf8_lossy(&output.stderr)
        );

        let work = tempfile::tempdir().unwrap();
        let output = Command::new(env!("CARGO_BIN_EXE_schemaops"))
            .args([
                "import",
                "--from-kafka",
                &format!("kafka://{}/{topic}", broker.address),
                "--data",
            ])
            .arg(work.path())
            .env("RUST_LOG", "warn")
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&output.stdout);
        assert!(
            output.status.success(),
            "{codec}: {stdout}\n{}",
            String::from_utf8_lossy(&output.stderr)
        );
        assert!(
            stdout.contains("3 schemas, 1 subjects and 3 versions")
                || stdout.contains("3 schemas, 1 subject and 3 versions"),
            "{codec}: {stdout}"
        );

        let registry = RegistryProcess::start(work.path()).await;
        let client = support::http_client();
        let base = &registry.url;
        assert_eq!(
            get(&client, format!("{base}/subjects/orders-value/versions")).await,
            json!([1, 2, 3]),
            "{codec}"
        );
        assert_eq!(
            get(&client, format!("{base}/subjects/orders-value/versions/3")).await["id"],
            13,
            "{codec}"
        );
        assert_eq!(
            get(&client, format!("{base}/config")).await["compatibilityLevel"],
            "FULL",
            "{codec}"
        );
    }
}
