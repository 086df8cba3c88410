//! Confluent's `_schemas` record format (issue 43): golden records written
//! by hand from the documented format (`tests/fixtures/kafka-store/`) decode
//! to the right records, and what schemaops encodes equals Confluent's
//! bytes.

use schemaops::registry::embedded::kafka::format::{
    ConfigValue, DecodeError, Decoded, Record, ReferenceValue, SchemaValue, decode, encode,
};
use serde_json::value::RawValue;

/// One record of a golden file: its key and value bytes as written there.
struct Golden {
    line: usize,
    key: String,
    value: Option<String>,
}

/// Reads a `.records` file (format in `tests/fixtures/kafka-store/README.md`).
fn goldens(name: &str) -> Vec<Golden> {
    let path = format!("{}/tests/fixtures/kafka-store/{name}", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|error| panic!("{path}: {error}"));
    let mut lines = text
        .lines()
        .enumerate()
        .filter(|(_, line)| !line.is_empty() && !line.starts_with('#'));
    let mut records = Vec::new();
    while let Some((index, line)) = lines.next() {
        let key = line
            .strip_prefix("key ")
            .unwrap_or_else(|| panic!("{name}:{}: expected a key line", index + 1));
        let (_, next) = lines
            .next()
            .unwrap_or_else(|| panic!("{name}:{}: a key without a value line", index + 1));
        let value = if next == "tombstone" {
            None
        } else {
            Some(
                next.strip_prefix("value ")
                    .unwrap_or_else(|| panic!("{name}:{}: expected a value line", index + 2))
                    .to_owned(),
            )
        };
        records.push(Golden {
            line: index + 1,
            key: key.to_owned(),
            value,
        });
    }
    records
}

fn decoded(golden: &Golden) -> Decoded {
    decode(Some(golden.key.as_bytes()), golden.value.as_deref().map(str::as_bytes))
        .unwrap_or_else(|error| panic!("line {}: {error}", golden.line))
}

fn raw(json: &str) -> Option<Box<RawValue>> {
    Some(RawValue::from_string(json.to_owned()).unwrap())
}

const ORDER_AVRO: &str = r#"{"type":"record","name":"Order","fields":[{"name":"id","type":"long"}]}"#;
const ORDER_MD5: &str = "sEDbS/2uI+pKB5XzlzuYyA==";

fn order_v1(deleted: bool) -> Record {
    Record::Schema {
        subject: "orders-value".into(),
        version: 1,
        value: Some(Box::new(SchemaValue {
            subject: "orders-value".into(),
            version: 1,
            id: 1,
            md5: Some(ORDER_MD5.into()),
            schema_type: "AVRO".into(),
            references: Vec::new(),
            metadata: None,
            rule_set: None,
            schema: ORDER_AVRO.into(),
            deleted,
        })),
    }
}

/// What `confluent-topic.records` holds, record by record.
fn confluent_topic() -> Vec<Record> {
    vec![
        Record::Noop,
        Record::Config {
            subject: None,
            value: Some(Box::new(ConfigValue {
                compatibility_level: Some("BACKWARD".into()),
                ..ConfigValue::default()
            })),
        },
        order_v1(false),
        Record::Schema {
            subject: "payments-value".into(),
            version: 1,
            value: Some(Box::new(SchemaValue {
                subject: "payments-value".into(),
                version: 1,
                id: 2,
                md5: None,
                schema_type: "PROTOBUF".into(),
                references: vec![ReferenceValue {
                    name: "order.proto".into(),
                    subject: "orders-value".into(),
                    version: 1,
                }],
                metadata: None,
                rule_set: None,
                schema: "syntax = \"proto3\";\nimport \"order.proto\";\nmessage Payment {\n\tstring id = 1;\n}\n"
                    .into(),
                deleted: false,
            })),
        },
        Record::Config {
            subject: Some("orders-value".into()),
            value: Some(Box::new(ConfigValue {
                subject: Some("orders-value".into()),
                compatibility_level: Some("FULL".into()),
                ..ConfigValue::default()
            })),
        },
        Record::Mode {
            subject: Some("orders-value".into()),
            mode: Some("READONLY".into()),
        },
        order_v1(true),
        Record::DeleteSubject {
            subject: "payments-value".into(),
            version: 1,
        },
        Record::Schema {
            subject: "payments-value".into(),
            version: 1,
            value: None,
        },
        Record::Config {
            subject: Some("orders-value".into()),
            value: None,
        },
        Record::Mode {
            subject: Some("orders-value".into()),
            mode: None,
        },
        Record::Context {
            tenant: Some("default".into()),
            context: Some(".team-a".into()),
        },
        Record::Schema {
            subject: ":.team-a:users-value".into(),
            version: 1,
            value: Some(Box::new(SchemaValue {
                subject: ":.team-a:users-value".into(),
                version: 1,
                id: 1,
                md5: None,
                schema_type: "JSON".into(),
                references: Vec::new(),
                metadata: raw(r#"{"properties":{"owner":"team-a"}}"#),
                rule_set: raw(
                    r#"{"domainRules":[{"name":"checkEmail","kind":"CONDITION","mode":"WRITE","type":"CEL","expr":"message.email != ''"}]}"#,
                ),
                schema: r#"{"type":"object","properties":{"email":{"type":"string","description":"Zürich\u0001"}}}"#
                    .into(),
                deleted: false,
            })),
        },
        Record::Config {
            subject: Some(":.team-a:".into()),
            value: Some(Box::new(ConfigValue {
                subject: Some(":.team-a:".into()),
                normalize: Some(true),
                validate_fields: Some(false),
                compatibility_level: Some("FULL_TRANSITIVE".into()),
                compatibility_group: Some("major".into()),
                default_metadata: raw(r#"{"properties":{"owner":"team-a"}}"#),
                ..ConfigValue::default()
            })),
        },
        Record::ClearSubject {
            subject: "orders-value".into(),
        },
        Record::Mode {
            subject: None,
            mode: Some("IMPORT".into()),
        },
        Record::Config {
            subject: None,
            value: Some(Box::new(ConfigValue {
                alias_for_deks: Some("shared-keys".into()),
                normalize: Some(true),
                validate_fields: Some(true),
                validate_new_schemas: Some(false),
                validate_rules: Some(true),
                compatibility_level: Some("BACKWARD_TRANSITIVE".into()),
                compatibility_policy: Some("LENIENT".into()),
                compatibility_group: Some("major".into()),
                ..ConfigValue::default()
            })),
        },
    ]
}

#[test]
fn confluent_records_decode_to_the_records_they_document() {
    let goldens = goldens("confluent-topic.records");
    let expected = confluent_topic();
    assert_eq!(goldens.len(), expected.len(), "one expected record per golden record");
    for (golden, expected) in goldens.iter().zip(expected) {
        assert_eq!(decoded(golden), Decoded::Record(expected), "line {}", golden.line);
    }
}

#[test]
fn what_schemaops_encodes_equals_confluents_bytes() {
    let goldens = goldens("confluent-topic.records");
    let expected = confluent_topic();
    assert_eq!(goldens.len(), expected.len(), "one expected record per golden record");
    for (golden, record) in goldens.iter().zip(&expected) {
        let encoded = encode(record);
        assert_eq!(
            String::from_utf8(encoded.key).unwrap(),
            golden.key,
            "key of line {}",
            golden.line
        );
        assert_eq!(
            encoded.value.map(|value| String::from_utf8(value).unwrap()),
            golden.value,
            "value of line {}",
            golden.line
        );
    }
}

#[test]
fn forms_karapace_and_older_confluent_versions_wrote_are_read_and_written_canonically() {
    let goldens = goldens("accepted.records");
    let expected = [
        (
            Decoded::Record(Record::Config {
                subject: None,
                value: Some(Box::new(ConfigValue {
                    compatibility_level: Some("FULL".into()),
                    ..ConfigValue::default()
                })),
            }),
            Some((
                r#"{"keytype":"CONFIG","magic":0}"#,
                Some(r#"{"compatibilityLevel":"FULL"}"#),
            )),
        ),
        (
            Decoded::Record(legacy("legacy-value", 3, 7, "\"string\"")),
            Some((
                r#"{"keytype":"SCHEMA","subject":"legacy-value","version":3,"magic":1}"#,
                Some(
                    r#"{"subject":"legacy-value","version":3,"id":7,"schemaType":"AVRO","schema":"\"string\"","deleted":false}"#,
                ),
            )),
        ),
        (
            Decoded::Record(legacy("legacy-value", 4, 8, "\"long\"")),
            Some((
                r#"{"keytype":"SCHEMA","subject":"legacy-value","version":4,"magic":1}"#,
                Some(
                    r#"{"subject":"legacy-value","version":4,"id":8,"schemaType":"AVRO","schema":"\"long\"","deleted":false}"#,
                ),
            )),
        ),
        (
            Decoded::Record(Record::Mode {
                subject: Some("legacy-value".into()),
                mode: None,
            }),
            Some((r#"{"keytype":"MODE","subject":"legacy-value","magic":0}"#, None)),
        ),
        (
            Decoded::Skipped {
                keytype: "ASSOC".into(),
            },
            None,
        ),
        (
            Decoded::Skipped {
                keytype: "FUTURE_KIND".into(),
            },
            None,
        ),
    ];
    assert_eq!(goldens.len(), expected.len(), "one expectation per golden record");
    for (golden, (decoded_as, canonical)) in goldens.iter().zip(expected) {
        let decoded = decoded(golden);
        assert_eq!(decoded, decoded_as, "line {}", golden.line);
        if let (Decoded::Record(record), Some((key, value))) = (decoded, canonical) {
            let encoded = encode(&record);
            assert_eq!(String::from_utf8(encoded.key).unwrap(), key, "line {}", golden.line);
            assert_eq!(
                encoded.value.map(|value| String::from_utf8(value).unwrap()).as_deref(),
                value,
                "line {}",
                golden.line
            );
        }
    }
}

fn legacy(subject: &str, version: i32, id: i32, schema: &str) -> Record {
    Record::Schema {
        subject: subject.into(),
        version,
        value: Some(Box::new(SchemaValue {
            subject: subject.into(),
            version,
            id,
            md5: None,
            schema_type: "AVRO".into(),
            references: Vec::new(),
            metadata: None,
            rule_set: None,
            schema: schema.into(),
            deleted: false,
        })),
    }
}

#[test]
fn control_characters_are_escaped_with_upper_case_hex_as_jackson_does() {
    let record = Record::ClearSubject {
        subject: "a\u{1}b\u{1f}\t\"\\/é".into(),
    };
    assert_eq!(
        String::from_utf8(encode(&record).key).unwrap(),
        r#"{"keytype":"CLEAR_SUBJECT","subject":"a\u0001b\u001F\t\"\\/é","magic":0}"#
    );
}

#[test]
fn a_schema_key_with_another_magic_is_refused() {
    let key = br#"{"keytype":"SCHEMA","subject":"s","version":1,"magic":0}"#;
    assert!(matches!(
        decode(Some(key), None),
        Err(DecodeError::SchemaKeyMagic { magic: 0 })
    ));
}

#[test]
fn a_delete_subject_record_without_a_value_is_refused() {
    let key = br#"{"keytype":"DELETE_SUBJECT","subject":"s","magic":0}"#;
    assert!(matches!(
        decode(Some(key), None),
        Err(DecodeError::MissingValue {
            keytype: "DELETE_SUBJECT"
        })
    ));
}

#[test]
fn keys_that_are_missing_or_not_json_are_refused() {
    assert!(matches!(decode(Some(b"oops"), None), Err(DecodeError::InvalidKey(_))));
    assert!(matches!(decode(None, Some(b"{}")), Err(DecodeError::NoKey)));
    assert!(matches!(
        decode(Some(br#"{"keytype":"SCHEMA","subject":"s","magic":1}"#), None),
        Err(DecodeError::KeyField { keytype: "SCHEMA", .. })
    ));
}
