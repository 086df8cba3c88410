//! Avro verdicts proven on data (issue 9, Avro part). Histories are made by
//! evolution edits (tests/support/avro_evolution.rs). Whenever the engine
//! calls the newest version compatible under a mode, records written with
//! each version the mode promises about decode through `apache-avro`'s
//! schema resolution: BACKWARD, an earlier version writes and the newest
//! reads; FORWARD, the newest writes and an earlier one reads; FULL, both;
//! the transitive forms, against every earlier version. For verdicts of
//! incompatible, the rate at which generated records actually fail is
//! printed per kind.
//!
//! Two gaps in the decoder are bridged, not hidden:
//! - apache-avro (0.22) ignores a reader's aliases (of fields and of named
//!   types), which the Avro specification and Java Avro honour. Java's
//!   decoder first rewrites the writer schema with the reader's aliases;
//!   [`with_readers_aliases`] does the same here, so renames by alias are
//!   tested on data too.
//! - Generated `bytes` values are UTF-8 text: Avro, Java and Confluent call
//!   `bytes` to `string` a compatible promotion, but a decoder that checks
//!   UTF-8 (apache-avro does) rejects other bytes, so that promotion is sound
//!   only for data that is text. This is a known divergence of the reference
//!   semantics, shown by its own test below.
//!
//! The seeds are fixed, so every run checks the same cases; a failure is
//! shrunk and saved in `tests/avro_soundness.proptest-regressions`.

mod support;

use std::collections::{BTreeMap, HashMap, HashSet};

use apache_avro::Schema;
use apache_avro::reader::datum::GenericDatumReader;
use apache_avro::types::Value as AvroValue;
use apache_avro::writer::datum::GenericDatumWriter;
use proptest::prelude::*;
use proptest::strategy::ValueTree;
use proptest::test_runner::{Config, FileFailurePersistence, RngSeed, TestRunner};
use schemaops::compat::{Direction, Format, Mode, Report, SchemaText, check};
use serde_json::Value;
use support::avro_evolution::{Version, history};
use support::avro_gen::value;
use support::precision::Precision;

/// Where the reference semantics promise more than data bears out: what, and why.
const KNOWN_DIVERGENCES: &[(&str, &str)] = &[(
    "bytes read as string",
    "Avro's specification, Java Avro and Confluent promote bytes to string, but bytes that are not UTF-8 \
     cannot be read as a string; the verdict holds only for byte values that are text",
)];

/// A history and, for each version, records written with it.
type Case = (Vec<Version>, Vec<Vec<AvroValue>>);

fn case(records: std::ops::Range<usize>) -> impl Strategy<Value = Case> {
    history().prop_flat_map(move |versions| {
        let values: Vec<_> = versions
            .iter()
            .map(|version| proptest::collection::vec(value(&version.shape), records.clone()))
            .collect();
        (Just(versions), values)
    })
}

/// The writer schema as Java's decoder sees it: each named type and each
/// field the reader knows by an alias renamed to the reader's name, unless
/// the writer already uses that name (a name matches before an alias does).
fn with_readers_aliases(writer: &Value, reader: &Value) -> Value {
    let mut aliases = ReaderAliases::default();
    aliases.collect(reader);
    let mut writer = writer.clone();
    aliases.apply(&mut writer);
    writer
}

/// What the reader's aliases say.
#[derive(Default)]
struct ReaderAliases {
    /// The names of the reader's named types.
    type_names: HashSet<String>,
    /// An old name of a named type -> its name in the reader.
    types: HashMap<String, String>,
    /// A record's name in the reader -> (an old field name -> the field's name).
    fields: HashMap<String, HashMap<String, String>>,
}

fn name_of(value: &Value) -> String {
    value["name"].as_str().unwrap_or_default().to_owned()
}

impl ReaderAliases {
    fn collect(&mut self, schema: &Value) {
        match schema {
            Value::Array(branches) => branches.iter().for_each(|branch| self.collect(branch)),
            Value::Object(object) => {
                if object.contains_key("name") {
                    let name = name_of(schema);
                    for alias in object.get("aliases").and_then(Value::as_array).into_iter().flatten() {
                        self.types
                            .insert(alias.as_str().unwrap_or_default().to_owned(), name.clone());
                    }
                    self.type_names.insert(name);
                }
                if let Some(Value::Array(fields)) = object.get("fields") {
                    let renames = self.fields.entry(name_of(schema)).or_default();
                    for field in fields {
                        for alias in field["aliases"].as_array().into_iter().flatten() {
                            renames.insert(alias.as_str().unwrap_or_default().to_owned(), name_of(field));
                        }
                    }
                    for field in fields {
                        self.collect(&field["type"]);
                    }
                }
                for key in ["items", "values"] {
                    if let Some(inner) = object.get(key) {
                        self.collect(inner);
                    }
                }
            }
            _ => {}
        }
    }

    fn apply(&self, schema: &mut Value) {
        match schema {
            Value::Array(branches) => branches.iter_mut().for_each(|branch| self.apply(branch)),
            Value::Object(object) => {
                // A writer's own aliases play no part in reading, and could
                // clash with a new name.
                object.remove("aliases");
                if let Some(Value::String(name)) = object.get_mut("name")
                    && !self.type_names.contains(name.as_str())
                    && let Some(renamed) = self.types.get(name.as_str())
                {
                    *name = renamed.clone();
                }
                let record_renames = object
                    .get("name")
                    .and_then(Value::as_str)
                    .and_then(|name| self.fields.get(name))
                    .cloned()
                    .unwrap_or_default();
                if let Some(Value::Array(fields)) = object.get_mut("fields") {
                    let names: Vec<String> = fields.iter().map(name_of).collect();
                    for field in fields.iter_mut() {
                        // A writer's defaults play no part in reading either,
                        // and they name fields by their old names.
                        if let Some(field) = field.as_object_mut() {
                            field.remove("default");
                            field.remove("aliases");
                        }
                        if let Some(new_name) = record_renames.get(&name_of(field))
                            && !names.contains(new_name)
                        {
                            field["name"] = Value::String(new_name.clone());
                        }
                        self.apply(&mut field["type"]);
                    }
                }
                for key in ["items", "values"] {
                    if let Some(inner) = object.get_mut(key) {
                        self.apply(inner);
                    }
                }
            }
            _ => {}
        }
    }
}

/// Whether every value written with `writer` reads back with `reader`; the first failure otherwise.
fn decodes(writer: &str, reader: &str, values: &[AvroValue]) -> Result<(), String> {
    let writer_json: Value = serde_json::from_str(writer).map_err(|e| e.to_string())?;
    let reader_json: Value = serde_json::from_str(reader).map_err(|e| e.to_string())?;
    let writer_schema = Schema::parse_str(writer).map_err(|e| format!("apache-avro rejects the writer: {e}"))?;
    let resolved_writer = Schema::parse(&with_readers_aliases(&writer_json, &reader_json))
        .map_err(|e| format!("apache-avro rejects the writer with the reader's aliases: {e}"))?;
    let reader_schema = Schema::parse(&reader_json).map_err(|e| format!("apache-avro rejects the reader: {e}"))?;
    let encoder = GenericDatumWriter::builder(&writer_schema)
        .build()
        .map_err(|e| e.to_string())?;
    let decoder = GenericDatumReader::builder(&resolved_writer)
        .reader_schema(&reader_schema)
        .build()
        .map_err(|e| format!("apache-avro cannot resolve the pair: {e}"))?;
    for written in values {
        let bytes = encoder
            .write_value_to_vec(written.clone())
            .map_err(|e| format!("cannot encode {written:?}: {e}"))?;
        decoder
            .read_value(&mut bytes.as_slice())
            .map_err(|e| format!("{written:?} does not decode: {e}"))?;
    }
    Ok(())
}

fn judge(mode: Mode, texts: &[String]) -> Report {
    let (newest, earlier) = texts.split_last().expect("a history has versions");
    let earlier: Vec<SchemaText> = earlier.iter().map(SchemaText::new).collect();
    check(Format::Avro, mode, &SchemaText::new(newest), &earlier).expect("generated schemas are valid")
}

/// Checks every promise `mode` makes about the history, when the engine
/// calls its newest version compatible. Returns whether it did.
fn promises_hold(mode: Mode, texts: &[String], values: &[Vec<AvroValue>]) -> Result<bool, TestCaseError> {
    if !judge(mode, texts).is_compatible() {
        return Ok(false);
    }
    let newest = texts.len() - 1;
    for version in mode.versions_to_check(newest) {
        let earlier = version - 1;
        for direction in mode.directions() {
            let (writer, reader) = match direction {
                Direction::Backward => (earlier, newest),
                Direction::Forward => (newest, earlier),
            };
            let outcome = decodes(&texts[writer], &texts[reader], &values[writer]);
            prop_assert!(
                outcome.is_ok(),
                "{mode} called v{} compatible, but records of v{} do not decode with v{}: {:?}\nwriter: {}\nreader: {}",
                newest + 1,
                writer + 1,
                reader + 1,
                outcome,
                texts[writer],
                texts[reader],
            );
        }
    }
    Ok(true)
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 2000,
        rng_seed: RngSeed::Fixed(9),
        // Shrunk failures are saved beside this file, and replayed first on every run.
        failure_persistence: Some(Box::new(FileFailurePersistence::WithSource("proptest-regressions"))),
        ..ProptestConfig::default()
    })]

    /// Every mode's promise, on every generated history.
    #[test]
    fn records_decode_in_every_direction_a_compatible_verdict_promises((versions, values) in case(1..4)) {
        let texts: Vec<String> = versions.iter().map(Version::text).collect();
        for mode in Mode::ALL {
            promises_hold(mode, &texts, &values)?;
        }
    }
}

/// The property above must not pass because nothing was compatible: over
/// the same kind of histories, every mode calls a good share compatible.
#[test]
fn the_histories_yield_compatible_verdicts_under_every_mode() {
    let mut runner = TestRunner::new(Config {
        rng_seed: RngSeed::Fixed(9),
        ..Config::default()
    });
    let mut compatible: BTreeMap<&str, usize> = BTreeMap::new();
    for _ in 0..500 {
        let (versions, _) = case(1..2).new_tree(&mut runner).expect("a case").current();
        let texts: Vec<String> = versions.iter().map(Version::text).collect();
        for mode in Mode::ALL {
            *compatible.entry(mode.as_str()).or_default() += usize::from(judge(mode, &texts).is_compatible());
        }
    }
    println!("avro histories called compatible, of 500: {compatible:?}");
    for (mode, count) in compatible {
        assert!(count >= 100, "{mode} called only {count} of 500 histories compatible");
    }
}

#[test]
fn incompatible_verdicts_are_mostly_borne_out_by_data() {
    let mut runner = TestRunner::new(Config {
        rng_seed: RngSeed::Fixed(2026),
        ..Config::default()
    });
    let mut precision = Precision::default();
    for _ in 0..2000 {
        let (versions, values) = case(4..8).new_tree(&mut runner).expect("a case").current();
        let texts: Vec<String> = versions.iter().map(Version::text).collect();
        let pair = &texts[texts.len() - 2..];
        for (mode, writer) in [(Mode::Backward, 0), (Mode::Forward, 1)] {
            let report = judge(mode, pair);
            if report.is_compatible() {
                precision.count_compatible();
                continue;
            }
            let written = &values[versions.len() - 2 + writer];
            let failed = decodes(&pair[writer], &pair[1 - writer], written).is_err();
            precision.count_incompatible(&report, failed);
        }
    }
    precision.print("avro precision over 2000 histories, latest pair in both directions");
    assert!(
        precision.compatible >= 400 && precision.incompatible >= 400,
        "the generator yields both verdicts"
    );
}

/// The divergence listed in [`KNOWN_DIVERGENCES`] still exists: the engine
/// calls bytes-to-string compatible, and bytes that are not text fail.
#[test]
fn bytes_read_as_string_hold_only_for_text() {
    assert_eq!(KNOWN_DIVERGENCES.len(), 1);
    let writer = r#"{"type":"record","name":"R","fields":[{"name":"a","type":"bytes"}]}"#.to_owned();
    let reader = r#"{"type":"record","name":"R","fields":[{"name":"a","type":"string"}]}"#.to_owned();
    assert!(judge(Mode::Backward, &[writer.clone(), reader.clone()]).is_compatible());
    let record = |bytes: &[u8]| AvroValue::Record(vec![("a".to_owned(), AvroValue::Bytes(bytes.to_vec()))]);
    assert!(decodes(&writer, &reader, &[record(b"text")]).is_ok());
    assert!(decodes(&writer, &reader, &[record(&[0xff, 0xfe])]).is_err());
}

/// Renames by alias are part of the histories, so the bridge for
/// apache-avro's missing alias support must itself be right.
#[test]
fn a_rename_by_alias_decodes_once_the_readers_aliases_are_applied() {
    let writer = r#"{"type":"record","name":"R","fields":[{"name":"a","type":"int"}]}"#.to_owned();
    let reader = r#"{"type":"record","name":"R","fields":[{"name":"b","type":"long","aliases":["a"]}]}"#.to_owned();
    assert!(judge(Mode::Backward, &[writer.clone(), reader.clone()]).is_compatible());
    let record = AvroValue::Record(vec![("a".to_owned(), AvroValue::Int(5))]);
    decodes(&writer, &reader, &[record]).expect("the renamed field reads the old one's value");
}

/// Named types are renamed in the histories too, with or without an alias.
#[test]
fn a_named_type_renamed_with_an_alias_decodes_and_without_one_is_refused() {
    let record = |name: &str, aliases: &str| {
        format!(
            r#"{{"type":"record","name":"R","fields":[{{"name":"a","type":
                {{"type":"record","name":"{name}"{aliases},"fields":[{{"name":"x","type":"int"}}]}}}}]}}"#
        )
    };
    let writer = record("In", "");
    let with_alias = record("Inner", r#","aliases":["In"]"#);
    let without_alias = record("Inner", "");
    assert!(judge(Mode::Backward, &[writer.clone(), with_alias.clone()]).is_compatible());
    let report = judge(Mode::Backward, &[writer.clone(), without_alias]);
    let kinds: Vec<String> = report.incompatibilities.iter().map(|i| i.kind.to_string()).collect();
    assert_eq!(kinds, ["NAME_MISMATCH"]);
    let value = AvroValue::Record(vec![(
        "a".to_owned(),
        AvroValue::Record(vec![("x".to_owned(), AvroValue::Int(3))]),
    )]);
    decodes(&writer, &with_alias, &[value]).expect("the renamed type reads the old one's records");
}
