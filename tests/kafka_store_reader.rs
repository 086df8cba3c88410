//! The Kafka store's reader against a real broker (issue 43): Tansu, a topic
//! written by the official Confluent Python client with the golden records
//! (`tests/fixtures/kafka-store/confluent-topic.records`), half of them
//! outside transactions and half in a committed one, plus an aborted and a
//! fenced transaction (`tests/python/kafka_store_topic.py`).

mod support;

use std::process::Command;
use std::time::{Duration, Instant};

use schemaops::registry::embedded::kafka::format::{Decoded, Record, decode};
use schemaops::registry::embedded::kafka::reader::TopicReader;
use support::broker::Broker;

const TIMEOUT: Duration = Duration::from_secs(20);

const GOLDEN: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/fixtures/kafka-store/confluent-topic.records"
);

/// The golden records, decoded, in file order.
fn golden_records() -> Vec<Decoded> {
    let text = std::fs::read_to_string(GOLDEN).unwrap();
    let lines: Vec<&str> = text
        .lines()
        .filter(|line| !line.is_empty() && !line.starts_with('#'))
        .collect();
    lines
        .chunks(2)
        .map(|pair| {
            let key = pair[0].strip_prefix("key ").unwrap();
            let value = pair[1].strip_prefix("value ");
            decode(Some(key.as_bytes()), value.map(str::as_bytes)).unwrap()
        })
        .collect()
}

/// Writes the topic with the Python client; `None` when the test is skipped.
fn write_topic(broker: &Broker, topic: &str) -> Option<()> {
    let python = support::python::confluent_python_or_skip()?;
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/python/kafka_store_topic.py");
    let output = Command::new(python)
        .args([script, &broker.address, topic, GOLDEN])
        .output()
        .expect("the script runs");
    assert!(
        output.status.success() && String::from_utf8_lossy(&output.stdout).trim() == "ok",
        "{}\n{}\nthe broker's log: {}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr),
        broker.log.display()
    );
    Some(())
}

#[tokio::test]
async fn the_reader_yields_committed_records_in_order_and_drops_aborted_and_fenced_ones() {
    let Some(broker) = Broker::start_or_skip() else {
        return;
    };
    let topic = "_schemas";
    if write_topic(&broker, topic).is_none() {
        return;
    }
    let started = Instant::now();
    let mut reader = TopicReader::open(&broker.address, topic, 0, TIMEOUT).await.unwrap();
    let entries = reader.read_to_end().await.unwrap();
    println!(
        "read {} records to offset {} in {} ms",
        entries.len(),
        reader.position(),
        started.elapsed().as_millis()
    );

    let mut expected = golden_records();
    // The second producer's noop, committed after it fenced the first.
    expected.push(Decoded::Record(Record::Noop));
    let read: Vec<Decoded> = entries.iter().map(|entry| entry.decoded.clone()).collect();
    assert_eq!(read, expected);
    assert!(
        entries.windows(2).all(|pair| pair[0].offset < pair[1].offset),
        "offsets rise: {:?}",
        entries.iter().map(|entry| entry.offset).collect::<Vec<_>>()
    );

    // Nothing new: a second read returns nothing and stays where it is.
    let position = reader.position();
    assert!(reader.read_to_end().await.unwrap().is_empty());
    assert_eq!(reader.position(), position);

    // A reader that starts at the offset of the last record reads only it.
    let last = entries.last().unwrap();
    let mut tail = TopicReader::open(&broker.address, topic, last.offset, TIMEOUT)
        .await
        .unwrap();
    let tail_entries = tail.read_to_end().await.unwrap();
    assert_eq!(tail_entries, vec![last.clone()]);
}

#[tokio::test]
async fn a_missing_topic_is_an_error_naming_it() {
    let Some(broker) = Broker::start_or_skip() else {
        return;
    };
    let error = TopicReader::open(&broker.address, "no-such-topic", 0, TIMEOUT)
        .await
        .err()
        .expect("no reader for a missing topic");
    assert!(error.to_string().contains("no-such-topic"), "{error}");
}
