//! Confluent Schema Registry's record format for its `_schemas` topic: the
//! JSON keys and values it writes, in its field order and byte form.
//!
//! Facts from `confluentinc/schema-registry`, package
//! `io.confluent.kafka.schemaregistry.storage`:
//!
//! * Keys (`SchemaRegistryKey` and subclasses, serialized by
//!   `SchemaRegistrySerializer` with Jackson): `SchemaKey`
//!   `{"keytype":"SCHEMA","subject":S,"version":V,"magic":1}`; `ConfigKey`,
//!   `ModeKey`, `DeleteSubjectKey` and `ClearSubjectKey`
//!   `{"keytype":T,"subject":S,"magic":0}`; `NoopKey`
//!   `{"keytype":"NOOP","magic":0}`; `ContextKey`
//!   `{"keytype":"CONTEXT","tenant":…,"context":…,"magic":0}`. Every class is
//!   `@JsonInclude(NON_EMPTY)`, so the global config and mode keys (subject
//!   `null`) leave `subject` out.
//! * Values: `SchemaValue` in its `@JsonCreator` order `subject, version, id,
//!   md5, schemaType, references, metadata, ruleSet, schema, deleted`;
//!   `ConfigValue` (`subject`, …, `compatibilityLevel`, …); `ModeValue`
//!   (`subject`, `mode`); `DeleteSubjectValue` (`subject`, `version`);
//!   `ClearSubjectValue` (`subject`); `ContextValue` (`tenant`, `context`).
//!   Empty strings, empty lists and nulls are left out (`NON_EMPTY`);
//!   `deleted` is always written.
//! * A soft delete rewrites a version's value with `deleted: true`; a hard
//!   delete of a version, and the removal of a config or mode, is a
//!   tombstone (`KafkaSchemaRegistry.deleteSubject`, `deleteConfig`,
//!   `deleteMode`). `DELETE_SUBJECT` soft-deletes every version up to its
//!   `version` and `CLEAR_SUBJECT` drops a subject's soft-deleted versions
//!   (`KafkaStoreMessageHandler.handleDeleteSubject`, `handleClearSubject`);
//!   tombstones of other key types change nothing there.
//!
//! What is accepted, beyond what Confluent writes, follows Karapace's
//! `schema_reader.py` (non-strict mode): a missing `schemaType` is AVRO, a
//! missing `deleted` is false, `"subject": null` in a key is the same as no
//! subject (Karapace writes its global config key that way), an empty value
//! or a JSON `null` is a tombstone. A key type this module does not know
//! (Confluent's `ASSOC`, anything newer) decodes to [`Decoded::Skipped`]; the
//! reader logs it and goes on.
//!
//! Byte form: the encoder writes compact JSON in the field orders above and
//! escapes strings as Jackson does (`\"`, `\\`, `\b \t \n \f \r`, and
//! `\u00XX` with upper-case hex for the other control characters), so a key
//! written here equals the key Confluent writes for the same record and log
//! compaction sees one key.

use serde::Deserialize;
use serde_json::value::RawValue;

/// The `keytype` of each record kind, as Confluent's `SchemaRegistryKeyType`
/// spells it.
mod keytype {
    pub const SCHEMA: &str = "SCHEMA";
    pub const CONFIG: &str = "CONFIG";
    pub const MODE: &str = "MODE";
    pub const NOOP: &str = "NOOP";
    pub const DELETE_SUBJECT: &str = "DELETE_SUBJECT";
    pub const CLEAR_SUBJECT: &str = "CLEAR_SUBJECT";
    pub const CONTEXT: &str = "CONTEXT";
}

/// The magic number a `SCHEMA` key carries (`SchemaKey.MAGIC_BYTE`).
const SCHEMA_KEY_MAGIC: i64 = 1;
/// The magic number every other key carries.
const OTHER_KEY_MAGIC: i64 = 0;

/// The schema type a value without `schemaType` has.
pub const DEFAULT_SCHEMA_TYPE: &str = "AVRO";

/// One record of the topic, decoded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Record {
    /// A version of a subject; `None` is a hard delete (tombstone).
    Schema {
        /// The subject, qualified with its context (`:.ctx:name`) outside the default one.
        subject: String,
        /// The version.
        version: i32,
        /// The version's content and state.
        value: Option<Box<SchemaValue>>,
    },
    /// A compatibility level and data-contract settings, of one subject or
    /// (without a subject) global; `None` removes them.
    Config {
        /// The subject, or none for the global setting.
        subject: Option<String>,
        /// The settings.
        value: Option<Box<ConfigValue>>,
    },
    /// A mode, of one subject or (without a subject) global; `None` removes it.
    Mode {
        /// The subject, or none for the global mode.
        subject: Option<String>,
        /// The mode (`READWRITE`, `READONLY`, `READONLY_OVERRIDE`, `IMPORT`);
        /// none for a tombstone.
        mode: Option<String>,
    },
    /// A record that changes nothing: Confluent writes one, with no value,
    /// to find the end of the log (`KafkaStore.getLatestOffset`).
    Noop,
    /// Soft-deletes every version of `subject` up to `version`.
    DeleteSubject {
        /// The subject.
        subject: String,
        /// The newest version deleted.
        version: i32,
    },
    /// Drops the soft-deleted versions of a subject.
    ClearSubject {
        /// The subject.
        subject: String,
    },
    /// Says a context exists.
    Context {
        /// The tenant (Confluent writes `default`).
        tenant: Option<String>,
        /// The context's name.
        context: Option<String>,
    },
}

/// The value of a `SCHEMA` record (Confluent's `SchemaValue`).
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SchemaValue {
    /// The subject, as in the key.
    pub subject: String,
    /// The version, as in the key.
    pub version: i32,
    /// The schema's global ID.
    pub id: i32,
    /// Base64 of the schema's MD5 digest, when the writer recorded one.
    #[serde(default)]
    pub md5: Option<String>,
    /// `AVRO`, `JSON` or `PROTOBUF`.
    #[serde(default = "default_schema_type", deserialize_with = "null_is_avro")]
    pub schema_type: String,
    /// The schemas it refers to.
    #[serde(default, deserialize_with = "null_is_empty")]
    pub references: Vec<ReferenceValue>,
    /// Data-contract metadata, as written.
    #[serde(default)]
    pub metadata: Option<Box<RawValue>>,
    /// Data-contract rules, as written.
    #[serde(default)]
    pub rule_set: Option<Box<RawValue>>,
    /// The schema text.
    pub schema: String,
    /// Whether the version is soft-deleted.
    #[serde(default)]
    pub deleted: bool,
}

/// A reference inside a [`SchemaValue`] (Confluent's `SchemaReference`).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct ReferenceValue {
    /// The name the referring schema uses.
    pub name: String,
    /// The referenced subject.
    pub subject: String,
    /// The referenced version.
    pub version: i32,
}

/// The value of a `CONFIG` record (Confluent's `ConfigValue`), every field
/// optional as there.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ConfigValue {
    /// The subject, as in the key (older writers leave it out).
    #[serde(default)]
    pub subject: Option<String>,
    /// Another subject whose settings this one uses.
    #[serde(default)]
    pub alias: Option<String>,
    /// Another subject whose encryption keys this one uses.
    #[serde(default)]
    pub alias_for_deks: Option<String>,
    /// Whether schemas are normalized before lookup and registration.
    #[serde(default)]
    pub normalize: Option<bool>,
    /// Whether field names are validated.
    #[serde(default)]
    pub validate_fields: Option<bool>,
    /// Whether new schemas are validated.
    #[serde(default)]
    pub validate_new_schemas: Option<bool>,
    /// Whether rules are validated.
    #[serde(default)]
    pub validate_rules: Option<bool>,
    /// The compatibility level (`BACKWARD`, …, `NONE`).
    #[serde(default)]
    pub compatibility_level: Option<String>,
    /// The compatibility policy.
    #[serde(default)]
    pub compatibility_policy: Option<String>,
    /// The metadata property that groups versions for compatibility checks.
    #[serde(default)]
    pub compatibility_group: Option<String>,
    /// Metadata new versions get by default, as written.
    #[serde(default)]
    pub default_metadata: Option<Box<RawValue>>,
    /// Metadata new versions always get, as written.
    #[serde(default)]
    pub override_metadata: Option<Box<RawValue>>,
    /// Rules new versions get by default, as written.
    #[serde(default)]
    pub default_rule_set: Option<Box<RawValue>>,
    /// Rules new versions always get, as written.
    #[serde(default)]
    pub override_rule_set: Option<Box<RawValue>>,
}

/// Raw JSON compares by its text: the same bytes are the same value.
fn same_raw(left: &Option<Box<RawValue>>, right: &Option<Box<RawValue>>) -> bool {
    left.as_ref().map(|raw| raw.get()) == right.as_ref().map(|raw| raw.get())
}

impl PartialEq for SchemaValue {
    fn eq(&self, other: &Self) -> bool {
        self.subject == other.subject
            && self.version == other.version
            && self.id == other.id
            && self.md5 == other.md5
            && self.schema_type == other.schema_type
            && self.references == other.references
            && same_raw(&self.metadata, &other.metadata)
            && same_raw(&self.rule_set, &other.rule_set)
            && self.schema == other.schema
            && self.deleted == other.deleted
    }
}

impl Eq for SchemaValue {}

impl PartialEq for ConfigValue {
    fn eq(&self, other: &Self) -> bool {
        self.subject == other.subject
            && self.alias == other.alias
            && self.alias_for_deks == other.alias_for_deks
            && self.normalize == other.normalize
            && self.validate_fields == other.validate_fields
            && self.validate_new_schemas == other.validate_new_schemas
            && self.validate_rules == other.validate_rules
            && self.compatibility_level == other.compatibility_level
            && self.compatibility_policy == other.compatibility_policy
            && self.compatibility_group == other.compatibility_group
            && same_raw(&self.default_metadata, &other.default_metadata)
            && same_raw(&self.override_metadata, &other.override_metadata)
            && same_raw(&self.default_rule_set, &other.default_rule_set)
            && same_raw(&self.override_rule_set, &other.override_rule_set)
    }
}

impl Eq for ConfigValue {}

fn default_schema_type() -> String {
    DEFAULT_SCHEMA_TYPE.to_owned()
}

fn null_is_avro<'de, D: serde::Deserializer<'de>>(deserializer: D) -> Result<String, D::Error> {
    Ok(Option::<String>::deserialize(deserializer)?.unwrap_or_else(default_schema_type))
}

fn null_is_empty<'de, D: serde::Deserializer<'de>>(deserializer: D) -> Result<Vec<ReferenceValue>, D::Error> {
    Ok(Option::<Vec<ReferenceValue>>::deserialize(deserializer)?.unwrap_or_default())
}

/// What a record of the topic decodes to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decoded {
    /// A record this registry understands.
    Record(Record),
    /// A record whose key type it does not know; the reader skips it.
    Skipped {
        /// The key type.
        keytype: String,
    },
}

/// Why a record does not decode.
#[derive(Debug, thiserror::Error)]
pub enum DecodeError {
    /// The key is absent or empty.
    #[error("the record has no key")]
    NoKey,
    /// The key is not a JSON object with a string `keytype`.
    #[error("the key is not a JSON object with a keytype")]
    InvalidKey(#[source] serde_json::Error),
    /// A key lacks a field its type needs, or has one of the wrong kind.
    #[error("the {keytype} key {problem}")]
    KeyField {
        /// The key type.
        keytype: &'static str,
        /// What is wrong.
        problem: &'static str,
    },
    /// A `SCHEMA` key carries another magic number than 1 (Confluent's
    /// `SchemaRegistrySerializer.validateMagicByte` refuses it too).
    #[error("the SCHEMA key has magic {magic}, not 1")]
    SchemaKeyMagic {
        /// The magic number found.
        magic: i64,
    },
    /// The value does not read as its key type's value.
    #[error("the value of the {keytype} record does not read")]
    InvalidValue {
        /// The key type.
        keytype: &'static str,
        /// Why.
        #[source]
        source: serde_json::Error,
    },
    /// A record that must carry a value has none.
    #[error("the {keytype} record has no value")]
    MissingValue {
        /// The key type.
        keytype: &'static str,
    },
}

/// A key's fields, before its type is known.
#[derive(Deserialize)]
struct KeyFields {
    keytype: String,
    #[serde(default)]
    subject: Option<String>,
    #[serde(default)]
    version: Option<i64>,
    #[serde(default)]
    magic: Option<i64>,
    #[serde(default)]
    tenant: Option<String>,
    #[serde(default)]
    context: Option<String>,
}

#[derive(Deserialize)]
struct ModeFields {
    #[serde(default)]
    mode: Option<String>,
}

#[derive(Deserialize)]
struct DeleteSubjectFields {
    #[serde(default)]
    subject: Option<String>,
    version: i32,
}

/// Decodes one record from its key and value bytes (`None` or empty: a
/// tombstone).
///
/// # Errors
/// [`DecodeError`] when the key or the value does not read; the reader
/// logs it and skips the record, as Karapace's non-strict reader does.
pub fn decode(key: Option<&[u8]>, value: Option<&[u8]>) -> Result<Decoded, DecodeError> {
    let key = key.filter(|bytes| !bytes.is_empty()).ok_or(DecodeError::NoKey)?;
    let fields: KeyFields = serde_json::from_slice(key).map_err(DecodeError::InvalidKey)?;
    let value = value.filter(|bytes| !is_null_value(bytes));
    let record = match fields.keytype.as_str() {
        keytype::SCHEMA => {
            let magic = fields.magic.unwrap_or(SCHEMA_KEY_MAGIC);
            if magic != SCHEMA_KEY_MAGIC {
                return Err(DecodeError::SchemaKeyMagic { magic });
            }
            let subject = required_subject(keytype::SCHEMA, fields.subject)?;
            let version = fields
                .version
                .and_then(|version| i32::try_from(version).ok())
                .filter(|version| *version >= 1)
                .ok_or(DecodeError::KeyField {
                    keytype: keytype::SCHEMA,
                    problem: "has no version of at least 1",
                })?;
            let value = value
                .map(|bytes| read_value::<SchemaValue>(keytype::SCHEMA, bytes).map(Box::new))
                .transpose()?;
            Record::Schema {
                subject,
                version,
                value,
            }
        }
        keytype::CONFIG => Record::Config {
            subject: fields.subject,
            value: value
                .map(|bytes| read_value::<ConfigValue>(keytype::CONFIG, bytes).map(Box::new))
                .transpose()?,
        },
        keytype::MODE => Record::Mode {
            subject: fields.subject,
            mode: match value {
                Some(bytes) => Some(
                    read_value::<ModeFields>(keytype::MODE, bytes)?
                        .mode
                        .ok_or(DecodeError::MissingValue { keytype: keytype::MODE })?,
                ),
                None => None,
            },
        },
        keytype::NOOP => Record::Noop,
        keytype::DELETE_SUBJECT => {
            let subject = required_subject(keytype::DELETE_SUBJECT, fields.subject)?;
            let bytes = value.ok_or(DecodeError::MissingValue {
                keytype: keytype::DELETE_SUBJECT,
            })?;
            let delete: DeleteSubjectFields = read_value(keytype::DELETE_SUBJECT, bytes)?;
            // The key names the subject; the value repeats it.
            let _ = delete.subject;
            Record::DeleteSubject {
                subject,
                version: delete.version,
            }
        }
        keytype::CLEAR_SUBJECT => Record::ClearSubject {
            subject: required_subject(keytype::CLEAR_SUBJECT, fields.subject)?,
        },
        keytype::CONTEXT => Record::Context {
            tenant: fields.tenant,
            context: fields.context,
        },
        _ => {
            return Ok(Decoded::Skipped {
                keytype: fields.keytype,
            });
        }
    };
    Ok(Decoded::Record(record))
}

/// Whether value bytes mean "no value": empty, or JSON `null` (Karapace
/// reads both as a tombstone).
fn is_null_value(bytes: &[u8]) -> bool {
    let trimmed = bytes.trim_ascii();
    trimmed.is_empty() || trimmed == b"null"
}

fn required_subject(keytype: &'static str, subject: Option<String>) -> Result<String, DecodeError> {
    subject.ok_or(DecodeError::KeyField {
        keytype,
        problem: "has no subject",
    })
}

fn read_value<'de, T: Deserialize<'de>>(keytype: &'static str, bytes: &'de [u8]) -> Result<T, DecodeError> {
    serde_json::from_slice(bytes).map_err(|source| DecodeError::InvalidValue { keytype, source })
}

/// A record's bytes as Confluent writes them: the key, and the value or
/// `None` for a tombstone.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Encoded {
    /// The key.
    pub key: Vec<u8>,
    /// The value; `None` is a tombstone.
    pub value: Option<Vec<u8>>,
}

/// Encodes a record in Confluent's byte form.
pub fn encode(record: &Record) -> Encoded {
    match record {
        Record::Schema {
            subject,
            version,
            value,
        } => {
            let mut key = JsonObject::new();
            key.string("keytype", keytype::SCHEMA);
            key.string("subject", subject);
            key.number("version", i64::from(*version));
            key.number("magic", SCHEMA_KEY_MAGIC);
            Encoded {
                key: key.finish(),
                value: value.as_deref().map(encode_schema_value),
            }
        }
        Record::Config { subject, value } => Encoded {
            key: subject_key(keytype::CONFIG, subject.as_deref()),
            value: value.as_deref().map(encode_config_value),
        },
        Record::Mode { subject, mode } => Encoded {
            key: subject_key(keytype::MODE, subject.as_deref()),
            value: mode.as_deref().map(|mode| {
                let mut value = JsonObject::new();
                value.optional_string("subject", subject.as_deref());
                value.string("mode", mode);
                value.finish()
            }),
        },
        Record::Noop => {
            let mut key = JsonObject::new();
            key.string("keytype", keytype::NOOP);
            key.number("magic", OTHER_KEY_MAGIC);
            // `KafkaStore.getLatestOffset` writes the noop key with a null value.
            Encoded {
                key: key.finish(),
                value: None,
            }
        }
        Record::DeleteSubject { subject, version } => {
            let mut value = JsonObject::new();
            value.string("subject", subject);
            value.number("version", i64::from(*version));
            Encoded {
                key: subject_key(keytype::DELETE_SUBJECT, Some(subject)),
                value: Some(value.finish()),
            }
        }
        Record::ClearSubject { subject } => {
            let mut value = JsonObject::new();
            value.string("subject", subject);
            Encoded {
                key: subject_key(keytype::CLEAR_SUBJECT, Some(subject)),
                value: Some(value.finish()),
            }
        }
        Record::Context { tenant, context } => {
            let mut key = JsonObject::new();
            key.string("keytype", keytype::CONTEXT);
            key.optional_string("tenant", tenant.as_deref());
            key.optional_string("context", context.as_deref());
            key.number("magic", OTHER_KEY_MAGIC);
            let mut value = JsonObject::new();
            value.optional_string("tenant", tenant.as_deref());
            value.optional_string("context", context.as_deref());
            Encoded {
                key: key.finish(),
                value: Some(value.finish()),
            }
        }
    }
}

/// `{"keytype":T,"subject":S,"magic":0}`, without `subject` when there is none.
fn subject_key(keytype: &str, subject: Option<&str>) -> Vec<u8> {
    let mut key = JsonObject::new();
    key.string("keytype", keytype);
    key.optional_string("subject", subject);
    key.number("magic", OTHER_KEY_MAGIC);
    key.finish()
}

fn encode_schema_value(value: &SchemaValue) -> Vec<u8> {
    let mut object = JsonObject::new();
    object.string("subject", &value.subject);
    object.number("version", i64::from(value.version));
    object.number("id", i64::from(value.id));
    object.optional_string("md5", value.md5.as_deref());
    object.string("schemaType", &value.schema_type);
    if !value.references.is_empty() {
        object.field("references");
        object.out.push(b'[');
        for (index, reference) in value.references.iter().enumerate() {
            if index > 0 {
                object.out.push(b',');
            }
            let mut item = JsonObject::new();
            item.string("name", &reference.name);
            item.string("subject", &reference.subject);
            item.number("version", i64::from(reference.version));
            object.out.extend_from_slice(&item.finish());
        }
        object.out.push(b']');
    }
    object.optional_raw("metadata", value.metadata.as_deref());
    object.optional_raw("ruleSet", value.rule_set.as_deref());
    object.string("schema", &value.schema);
    object.boolean("deleted", value.deleted);
    object.finish()
}

fn encode_config_value(value: &ConfigValue) -> Vec<u8> {
    let mut object = JsonObject::new();
    object.optional_string("subject", value.subject.as_deref());
    object.optional_string("alias", value.alias.as_deref());
    object.optional_string("aliasForDeks", value.alias_for_deks.as_deref());
    object.optional_boolean("normalize", value.normalize);
    object.optional_boolean("validateFields", value.validate_fields);
    object.optional_boolean("validateNewSchemas", value.validate_new_schemas);
    object.optional_boolean("validateRules", value.validate_rules);
    object.optional_string("compatibilityLevel", value.compatibility_level.as_deref());
    object.optional_string("compatibilityPolicy", value.compatibility_policy.as_deref());
    object.optional_string("compatibilityGroup", value.compatibility_group.as_deref());
    object.optional_raw("defaultMetadata", value.default_metadata.as_deref());
    object.optional_raw("overrideMetadata", value.override_metadata.as_deref());
    object.optional_raw("defaultRuleSet", value.default_rule_set.as_deref());
    object.optional_raw("overrideRuleSet", value.override_rule_set.as_deref());
    object.finish()
}

/// A compact JSON object written field by field, in the order given, with
/// Jackson's `NON_EMPTY` rule for optional fields (none and empty strings
/// are left out).
struct JsonObject {
    out: Vec<u8>,
    empty: bool,
}

impl JsonObject {
    fn new() -> Self {
        Self {
            out: vec![b'{'],
            empty: true,
        }
    }

    fn field(&mut self, name: &str) {
        if !self.empty {
            self.out.push(b',');
        }
        self.empty = false;
        write_string(&mut self.out, name);
        self.out.push(b':');
    }

    fn string(&mut self, name: &str, value: &str) {
        self.field(name);
        write_string(&mut self.out, value);
    }

    fn optional_string(&mut self, name: &str, value: Option<&str>) {
        if let Some(value) = value.filter(|value| !value.is_empty()) {
            self.string(name, value);
        }
    }

    fn number(&mut self, name: &str, value: i64) {
        self.field(name);
        self.out.extend_from_slice(value.to_string().as_bytes());
    }

    fn boolean(&mut self, name: &str, value: bool) {
        self.field(name);
        self.out.extend_from_slice(if value { b"true" } else { b"false" });
    }

    fn optional_boolean(&mut self, name: &str, value: Option<bool>) {
        if let Some(value) = value {
            self.boolean(name, value);
        }
    }

    fn optional_raw(&mut self, name: &str, value: Option<&RawValue>) {
        if let Some(value) = value {
            self.field(name);
            self.out.extend_from_slice(value.get().as_bytes());
        }
    }

    fn finish(mut self) -> Vec<u8> {
        self.out.push(b'}');
        self.out
    }
}

/// Writes a JSON string as Jackson's generator does: `"` and `\` escaped
/// with a backslash, the five control characters with short escapes as
/// such, the other control characters as `\u00XX` in upper-case hex, and
/// everything else as UTF-8.
fn write_string(out: &mut Vec<u8>, text: &str) {
    const HEX: &[u8; 16] = b"0123456789ABCDEF";
    out.push(b'"');
    for byte in text.bytes() {
        match byte {
            b'"' => out.extend_from_slice(b"\\\""),
            b'\\' => out.extend_from_slice(b"\\\\"),
            0x08 => out.extend_from_slice(b"\\b"),
            b'\t' => out.extend_from_slice(b"\\t"),
            b'\n' => out.extend_from_slice(b"\\n"),
            0x0C => out.extend_from_slice(b"\\f"),
            b'\r' => out.extend_from_slice(b"\\r"),
            0x00..=0x1F => {
                out.extend_from_slice(b"\\u00");
                out.push(HEX[usize::from(byte >> 4)]);
                out.push(HEX[usize::from(byte & 0x0F)]);
            }
            _ => out.push(byte),
        }
    }
    out.push(b'"');
}
