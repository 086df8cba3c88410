//! The Kafka store behind the `Store` trait (issue 43), two instances on
//! one topic of a real broker (Tansu): what one writes the other loads and
//! catches up with; a write on a stale revision is refused; the instance
//! whose producer another one fenced writes no more.

mod support;

use std::sync::Arc;
use std::time::Duration;

use schemaops::compat::{Format, Mode, Reference};
use schemaops::registry::contract::Contract;
use schemaops::registry::embedded::kafka::client::Connection;
use schemaops::registry::embedded::kafka::election::{Leadership, Role};
use schemaops::registry::embedded::kafka::producer::ProducerError;
use schemaops::registry::embedded::kafka::topic_store::{KafkaOptions, KafkaStore};
use schemaops::registry::embedded::store::{
    Applied, CatchUp, Change, NoLeader, SchemaRow, Store, StoreError, SubjectRow, VersionRow,
};
use schemaops::registry::{RegistryMode, SchemaId, SchemaReference, SubjectName, Version};
use support::broker::Broker;

const TIMEOUT: Duration = Duration::from_secs(20);

fn fingerprint(
    format: Format,
    text: &str,
    _: &[SchemaReference],
    _: Option<&[Reference]>,
    _: &Contract,
) -> Result<String, StoreError> {
    Ok(format!("{}:{text}", format.as_str()))
}

async fn open(broker: &Broker) -> KafkaStore {
    let options = KafkaOptions {
        transactional_id: "schemaops-store".to_owned(),
        timeout: TIMEOUT,
        ..KafkaOptions::new(broker.address.clone(), "_schemas")
    };
    KafkaStore::open(options, Arc::new(fingerprint)).await.unwrap()
}

fn registration(subject: &str, version: i64, id: i64, text: &str) -> Vec<Change> {
    let subject = SubjectName::new(subject).unwrap();
    let version = Version::new(version).unwrap();
    let id = SchemaId::new(id).unwrap();
    vec![
        Change::PutSchema(SchemaRow {
            id,
            format: Format::Avro,
            text: text.to_owned(),
            fingerprint: format!("AVRO:{text}"),
            references: Vec::new(),
            contract: Contract::default(),
        }),
        Change::PutSubject(SubjectRow {
            subject: subject.clone(),
            next_version: Version::new(i64::from(version.get()) + 1).unwrap(),
            compatibility: None,
            mode: None,
            config: Default::default(),
        }),
        Change::PutVersion(VersionRow {
            subject,
            version,
            id,
            deleted: false,
        }),
    ]
}

#[tokio::test]
async fn two_instances_share_one_topic_through_the_store_trait() {
    let Some(broker) = Broker::start_or_skip() else {
        return;
    };
    let mut connection = Connection::connect(&broker.address, TIMEOUT).await.unwrap();
    connection
        .create_topic("_schemas", 1, &[("cleanup.policy", "compact")])
        .await
        .unwrap();

    let first = open(&broker).await;
    let empty = first.load().await.unwrap();
    assert_eq!(empty.revision, 0);
    let Applied::Committed { revision } = first
        .apply_after(0, registration("orders-value", 1, 1, r#""string""#))
        .await
        .unwrap()
    else {
        panic!("an up-to-date write is behind");
    };
    assert!(revision > 0);

    // A second instance loads what the first wrote.
    let second = open(&broker).await;
    let loaded = second.load().await.unwrap();
    assert_eq!(loaded.revision, revision);
    assert_eq!(loaded.versions.len(), 1);
    assert_eq!(loaded.schemas[0].text, r#""string""#);

    // A write on the revision before that is refused, and nothing is written.
    assert_eq!(
        second
            .apply_after(0, registration("orders-value", 2, 2, r#""int""#))
            .await
            .unwrap(),
        Applied::Behind
    );
    // On the current revision it is written; the second instance now holds
    // the transactional ID, and the first instance sees the write.
    let Applied::Committed { revision: newer } = second
        .apply_after(
            revision,
            vec![
                Change::SetGlobalCompatibility(Some(Mode::Full)),
                Change::SetGlobalMode(Some(RegistryMode::ReadWrite)),
            ],
        )
        .await
        .unwrap()
    else {
        panic!("an up-to-date write is behind");
    };
    let CatchUp::Batches(batches) = first.changes_since(revision).await.unwrap() else {
        panic!("the first instance kept every batch");
    };
    let changes: Vec<Change> = batches.into_iter().flat_map(|batch| batch.changes).collect();
    assert!(
        changes.contains(&Change::SetGlobalCompatibility(Some(Mode::Full))),
        "{changes:?}"
    );
    assert!(
        changes.contains(&Change::SetGlobalMode(Some(RegistryMode::ReadWrite))),
        "{changes:?}"
    );
    assert_eq!(first.load().await.unwrap().revision, newer);

    // The first instance's producer was fenced by the second's: it writes no more.
    let fenced = first
        .apply_after(newer, registration("payments-value", 1, 3, r#""long""#))
        .await;
    assert!(fenced.is_err(), "a fenced instance wrote: {fenced:?}");
    let after = second.load().await.unwrap();
    assert!(
        after
            .versions
            .iter()
            .all(|row| row.subject.as_str() != "payments-value"),
        "the fenced write was applied"
    );
}

#[tokio::test]
async fn an_elected_store_writes_only_while_it_leads_and_steps_down_when_fenced() {
    let Some(broker) = Broker::start_or_skip() else {
        return;
    };
    let (first_role, second_role) = (Leadership::new(), Leadership::new());
    let first = open(&broker).await.led_by(Arc::clone(&first_role));
    let second = open(&broker).await.led_by(Arc::clone(&second_role));
    first_role.set(Role::Leader { generation: 1 });
    second_role.set(Role::Follower {
        leader_url: "http://first".to_owned(),
    });
    first.apply(registration("a", 1, 1, "\"int\"")).await.unwrap();
    let refused = second.apply(registration("b", 1, 2, "\"long\"")).await.unwrap_err();
    assert!(refused.is::<NoLeader>(), "{refused}");

    // The second is elected (the first does not know yet): its producer fences the first's.
    second_role.set(Role::Leader { generation: 2 });
    second.apply(registration("b", 1, 2, "\"long\"")).await.unwrap();
    let fenced = first.apply(registration("c", 1, 3, "\"float\"")).await.unwrap_err();
    assert!(
        matches!(
            fenced.downcast_ref::<ProducerError>(),
            Some(ProducerError::Fenced { .. })
        ),
        "{fenced}"
    );
    // It stepped down: no leader known until the group elects again.
    assert_eq!(first_role.role(), Role::Unknown);
    let refused = first.apply(registration("c", 1, 3, "\"float\"")).await.unwrap_err();
    assert!(refused.is::<NoLeader>(), "{refused}");

    // Elected again later, it writes again (with a new producer): not fenced for good.
    second_role.set(Role::Unknown);
    first_role.set(Role::Leader { generation: 3 });
    first.apply(registration("d", 1, 4, "\"double\"")).await.unwrap();

    let snapshot = open(&broker).await.load().await.unwrap();
    let mut subjects: Vec<String> = snapshot
        .subjects
        .iter()
        .map(|subject| subject.subject.as_str().to_owned())
        .collect();
    subjects.sort();
    assert_eq!(subjects, ["a", "b", "d"], "the fenced write was never appended");
}
