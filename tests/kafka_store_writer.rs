//! The Kafka store's writer against a real broker (issue 43): one
//! transactional producer per transactional ID, fenced at the broker when
//! another starts with the same ID (Tansu).

mod support;

use std::time::Duration;

use schemaops::registry::embedded::kafka::client::Connection;
use schemaops::registry::embedded::kafka::format::{Decoded, Encoded, Record, encode};
use schemaops::registry::embedded::kafka::producer::{ProducerError, TransactionalProducer};
use schemaops::registry::embedded::kafka::reader::TopicReader;
use support::broker::Broker;

const TIMEOUT: Duration = Duration::from_secs(20);
const TOPIC: &str = "_schemas";
const WRITER_ID: &str = "schemaops-writer";

/// A record that names the write it belongs to: the mode of a subject.
fn record(subject: &str) -> Record {
    Record::Mode {
        subject: Some(subject.to_owned()),
        mode: Some("READONLY".to_owned()),
    }
}

fn encoded(subjects: &[&str]) -> Vec<Encoded> {
    subjects.iter().map(|subject| encode(&record(subject))).collect()
}

async fn broker_with_topic() -> Option<Broker> {
    let broker = Broker::start_or_skip()?;
    let mut connection = Connection::connect(&broker.address, TIMEOUT).await.unwrap();
    assert!(
        connection
            .create_topic(TOPIC, 1, &[("cleanup.policy", "compact")])
            .await
            .unwrap()
    );
    assert!(
        !connection
            .create_topic(TOPIC, 1, &[("cleanup.policy", "compact")])
            .await
            .unwrap(),
        "it exists now"
    );
    Some(broker)
}

async fn committed(broker: &Broker) -> Vec<Decoded> {
    let mut reader = TopicReader::open(&broker.address, TOPIC, 0, TIMEOUT).await.unwrap();
    reader
        .read_to_end()
        .await
        .unwrap()
        .into_iter()
        .map(|entry| entry.decoded)
        .collect()
}

#[tokio::test]
async fn a_write_is_one_transaction_that_readers_see_whole() {
    let Some(broker) = broker_with_topic().await else {
        return;
    };
    let mut writer = TransactionalProducer::start(&broker.address, TOPIC, WRITER_ID, TIMEOUT)
        .await
        .unwrap();
    let first = writer.write(&encoded(&["a", "b", "c"])).await.unwrap();
    let second = writer.write(&encoded(&["d"])).await.unwrap();
    assert_eq!(first, 0);
    // Three records and the first transaction's COMMIT marker come before it.
    assert_eq!(second, 4);
    let expected: Vec<Decoded> = ["a", "b", "c", "d"]
        .map(|subject| Decoded::Record(record(subject)))
        .into();
    assert_eq!(committed(&broker).await, expected);
}

#[tokio::test]
async fn a_second_writer_with_the_same_id_fences_the_first() {
    let Some(broker) = broker_with_topic().await else {
        return;
    };
    let mut first = TransactionalProducer::start(&broker.address, TOPIC, WRITER_ID, TIMEOUT)
        .await
        .unwrap();
    first.write(&encoded(&["before"])).await.unwrap();
    // A write under way when the second writer starts: sent, not committed.
    first.send(&encoded(&["pending"])).await.unwrap();

    let mut second = TransactionalProducer::start(&broker.address, TOPIC, WRITER_ID, TIMEOUT)
        .await
        .unwrap();
    // Kafka answers PRODUCER_FENCED; Tansu 0.6.0 closes the connection
    // instead. Either way the write is not acknowledged, and the broker
    // aborted it.
    let pending = first.commit().await;
    assert!(pending.is_err(), "the pending write was acknowledged");
    let after = first.write(&encoded(&["after"])).await;
    assert!(matches!(after, Err(ProducerError::Fenced { .. })), "{after:?}");
    second.write(&encoded(&["successor"])).await.unwrap();

    let expected: Vec<Decoded> = ["before", "successor"]
        .map(|subject| Decoded::Record(record(subject)))
        .into();
    assert_eq!(
        committed(&broker).await,
        expected,
        "the broker's log: {}",
        broker.log.display()
    );
}
