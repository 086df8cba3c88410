//! The Kafka store's replay (issue 43): the golden Confluent topic
//! (`tests/fixtures/kafka-store/confluent-topic.records`), record by record,
//! turned into the store's changes and snapshot.

use schemaops::compat::{Format, Mode, Reference};
use schemaops::registry::contract::{CompatibilityPolicy, Contract, ContractConfig};
use schemaops::registry::embedded::kafka::format::decode;
use schemaops::registry::embedded::kafka::reader::Entry;
use schemaops::registry::embedded::kafka::replay::{Replay, ReplayError};
use schemaops::registry::embedded::store::{Change, SchemaRow, Snapshot, StoreError, SubjectRow, VersionRow};
use schemaops::registry::{RegistryMode, SchemaId, SchemaReference, SubjectName, Version};

/// The golden topic as the reader yields it: offsets 0, 1, 2, …
fn golden_entries() -> Vec<Entry> {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/kafka-store/confluent-topic.records"
    );
    let text = std::fs::read_to_string(path).unwrap();
    let lines: Vec<&str> = text
        .lines()
        .filter(|line| !line.is_empty() && !line.starts_with('#'))
        .collect();
    lines
        .chunks(2)
        .zip(0..)
        .map(|(pair, offset)| Entry {
            offset,
            decoded: decode(
                Some(pair[0].strip_prefix("key ").unwrap().as_bytes()),
                pair[1].strip_prefix("value ").map(str::as_bytes),
            )
            .unwrap(),
        })
        .collect()
}

/// A stand-in for the registry's fingerprint: the format and the text.
fn fingerprint(
    format: Format,
    text: &str,
    _: &[SchemaReference],
    _: Option<&[Reference]>,
    _: &Contract,
) -> Result<String, StoreError> {
    Ok(format!("{}:{text}", format.as_str()))
}

fn subject(name: &str) -> SubjectName {
    SubjectName::new(name).unwrap()
}

fn version(number: i64) -> Version {
    Version::new(number).unwrap()
}

fn id(number: i64) -> SchemaId {
    SchemaId::new(number).unwrap()
}

/// Whether an entry is in a context other than the default one.
fn in_team_context(entry: &Entry) -> bool {
    format!("{:?}", entry.decoded).contains(":.team-a:")
}

#[test]
fn a_topic_with_subjects_outside_the_default_context_is_refused() {
    let mut replay = Replay::default();
    let error = golden_entries()
        .iter()
        .find_map(|entry| replay.apply(entry, &fingerprint).err())
        .expect("the team-a records are refused");
    assert!(
        matches!(&error, ReplayError::Context { context, .. } if context == ".team-a"),
        "{error}"
    );
}

#[test]
fn the_default_context_of_the_golden_topic_replays_to_its_snapshot() {
    let entries: Vec<Entry> = golden_entries()
        .into_iter()
        .filter(|entry| !in_team_context(entry))
        .collect();
    let mut replay = Replay::default();
    let mut changes = Vec::new();
    for entry in &entries {
        changes.push(replay.apply(entry, &fingerprint).unwrap());
        if entry.offset == 5 {
            // After the subject's level and mode were set, before the deletes.
            let snapshot = replay.snapshot();
            assert_eq!(
                snapshot
                    .versions
                    .iter()
                    .map(|row| (row.subject.as_str(), row.deleted))
                    .collect::<Vec<_>>(),
                [("orders-value", false), ("payments-value", false)]
            );
            let orders = &snapshot.subjects[0];
            assert_eq!(
                (orders.compatibility, orders.mode),
                (Some(Mode::Full), Some(RegistryMode::ReadOnly))
            );
        }
    }

    let order_text = r#"{"type":"record","name":"Order","fields":[{"name":"id","type":"long"}]}"#;
    let payment_text = "syntax = \"proto3\";\nimport \"order.proto\";\nmessage Payment {\n\tstring id = 1;\n}\n";
    let order = SchemaRow {
        id: id(1),
        format: Format::Avro,
        text: order_text.into(),
        fingerprint: format!("AVRO:{order_text}"),
        references: Vec::new(),
        contract: Contract::default(),
    };
    let payment = SchemaRow {
        id: id(2),
        format: Format::Protobuf,
        text: payment_text.into(),
        fingerprint: format!("PROTOBUF:{payment_text}"),
        references: vec![SchemaReference {
            name: "order.proto".into(),
            subject: subject("orders-value"),
            version: version(1),
        }],
        contract: Contract::default(),
    };
    let subject_row = |name: &str| SubjectRow {
        subject: subject(name),
        next_version: version(2),
        compatibility: None,
        mode: None,
        config: Default::default(),
    };
    assert_eq!(
        replay.snapshot(),
        Snapshot {
            schemas: vec![order.clone(), payment],
            subjects: vec![subject_row("orders-value"), subject_row("payments-value")],
            versions: Vec::new(),
            retired: vec![
                (subject("orders-value"), version(1)),
                (subject("payments-value"), version(1))
            ],
            compatibility: Some(Mode::BackwardTransitive),
            mode: Some(RegistryMode::Import),
            config: every_config_setting(),
            revision: 17,
        }
    );

    // What single records change, in the store's terms.
    let orders_v1 = VersionRow {
        subject: subject("orders-value"),
        version: version(1),
        id: id(1),
        deleted: false,
    };
    assert_eq!(changes[0], []);
    assert_eq!(
        changes[2],
        [
            Change::PutSchema(order),
            Change::PutSubject(subject_row("orders-value")),
            Change::PutVersion(orders_v1),
        ]
    );
    assert_eq!(
        changes[6],
        [Change::SoftDeleteVersion {
            subject: subject("orders-value"),
            version: version(1),
        }]
    );
    assert_eq!(
        changes[7],
        [Change::SoftDeleteVersion {
            subject: subject("payments-value"),
            version: version(1),
        }]
    );
    assert_eq!(
        changes[8],
        [Change::RemoveVersion {
            subject: subject("payments-value"),
            version: version(1),
        }]
    );
    // The clear removes the soft-deleted version 1 of orders-value.
    let clear = entries.iter().position(|entry| entry.offset == 14).unwrap();
    assert_eq!(
        changes[clear],
        [Change::RemoveVersion {
            subject: subject("orders-value"),
            version: version(1),
        }]
    );
}

/// The settings of the golden topic's last global config (offset 16).
fn every_config_setting() -> ContractConfig {
    ContractConfig {
        alias_for_deks: Some("shared-keys".to_owned()),
        normalize: Some(true),
        validate_fields: Some(true),
        validate_new_schemas: Some(false),
        validate_rules: Some(true),
        compatibility_policy: Some(CompatibilityPolicy::Lenient),
        compatibility_group: Some("major".to_owned()),
        ..ContractConfig::default()
    }
}

#[test]
fn a_schema_id_given_to_another_schema_is_refused() {
    let entries = golden_entries();
    let mut replay = Replay::default();
    replay.apply(&entries[2], &fingerprint).unwrap();
    let mut clash = entries[3].clone();
    clash.decoded = decode(
        Some(br#"{"keytype":"SCHEMA","subject":"other-value","version":1,"magic":1}"#),
        Some(br#"{"subject":"other-value","version":1,"id":1,"schemaType":"AVRO","schema":"\"int\"","deleted":false}"#),
    )
    .unwrap();
    assert!(matches!(
        replay.apply(&clash, &fingerprint),
        Err(ReplayError::IdClash { id: clashing, .. }) if clashing == id(1)
    ));
    // Nothing of the refused record is applied.
    assert!(
        replay
            .snapshot()
            .subjects
            .iter()
            .all(|row| row.subject.as_str() != "other-value")
    );
}

#[test]
fn changes_encode_to_the_records_confluent_writes_for_them() {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/kafka-store/confluent-topic.records"
    );
    let text = std::fs::read_to_string(path).unwrap();
    let lines: Vec<&str> = text
        .lines()
        .filter(|line| !line.is_empty() && !line.starts_with('#'))
        .collect();
    // The golden record at `offset`, as text.
    let golden = |offset: usize| {
        let value = lines[offset * 2 + 1];
        (
            lines[offset * 2].strip_prefix("key ").unwrap().to_owned(),
            value.strip_prefix("value ").map(str::to_owned),
        )
    };
    let as_text = |records: Vec<schemaops::registry::embedded::kafka::format::Encoded>| {
        records
            .into_iter()
            .map(|record| {
                (
                    String::from_utf8(record.key).unwrap(),
                    record.value.map(|value| String::from_utf8(value).unwrap()),
                )
            })
            .collect::<Vec<_>>()
    };
    let entries = golden_entries();
    let mut replay = Replay::default();
    for entry in &entries[..4] {
        replay.apply(entry, &fingerprint).unwrap();
    }
    let subject_row = |compatibility| SubjectRow {
        subject: subject("orders-value"),
        next_version: version(2),
        compatibility,
        mode: None,
        config: Default::default(),
    };
    // A subject's level (offset 4).
    let set_level = [Change::PutSubject(subject_row(Some(Mode::Full)))];
    assert_eq!(as_text(replay.encode_changes(&set_level).unwrap()), [golden(4)]);
    // A soft delete rewrites the value with its digest kept (offset 6).
    let soft_delete = [Change::SoftDeleteVersion {
        subject: subject("orders-value"),
        version: version(1),
    }];
    assert_eq!(as_text(replay.encode_changes(&soft_delete).unwrap()), [golden(6)]);
    // A hard delete is a tombstone (offset 8).
    let remove = [Change::RemoveVersion {
        subject: subject("payments-value"),
        version: version(1),
    }];
    assert_eq!(as_text(replay.encode_changes(&remove).unwrap()), [golden(8)]);
    // The global mode (offset 15), and nothing for a subject row that changes nothing.
    let mode = [
        Change::SetGlobalMode(Some(RegistryMode::Import)),
        Change::PutSubject(subject_row(None)),
    ];
    assert_eq!(as_text(replay.encode_changes(&mode).unwrap()), [golden(15)]);
    // The global level with every other config setting (offset 16).
    let settings = [
        Change::SetGlobalCompatibility(Some(Mode::BackwardTransitive)),
        Change::SetGlobalConfig(every_config_setting()),
    ];
    assert_eq!(as_text(replay.encode_changes(&settings).unwrap()), [golden(16)]);
}
