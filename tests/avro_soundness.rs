//! Avro verdicts proven on data (issue 9, Avro part): for generated schema
//! pairs the engine calls compatible, records written with the writer schema
//! decode with the reader schema through `apache-avro`'s schema resolution,
//! in every direction the mode promises. For pairs it calls incompatible,
//! the rate at which generated records actually fail is printed per kind.
//!
//! The generated pairs carry no field aliases: apache-avro's datum reader
//! (0.22) ignores a reader field's aliases, which the Avro specification and
//! Java Avro honour, so a rename by alias would fail to decode there while
//! being compatible. Alias renames are covered by the conformance corpus and
//! the scenario tests instead. Generated `bytes` values are UTF-8 text:
//! Avro, Java and Confluent call `bytes` to `string` a compatible promotion,
//! but a decoder that checks UTF-8 (apache-avro does) rejects other bytes,
//! so that promotion is sound only for data that is text. The seed is fixed,
//! so every run checks the same cases.

mod support;

use std::collections::BTreeMap;

use apache_avro::Schema;
use apache_avro::reader::datum::GenericDatumReader;
use apache_avro::types::Value as AvroValue;
use apache_avro::writer::datum::GenericDatumWriter;
use proptest::prelude::*;
use proptest::strategy::ValueTree;
use proptest::test_runner::{Config, TestRunner};
use schemaops::compat::{Format, Mode, Report, SchemaText, check};
use support::avro_gen::{FieldShape, Shape, root_shape, root_text, value};

/// Whether every value written with `writer` reads back with `reader`; the first failure otherwise.
fn decodes(writer: &str, reader: &str, values: &[AvroValue]) -> Result<(), String> {
    let writer_schema = Schema::parse_str(writer).map_err(|e| format!("apache-avro rejects the writer: {e}"))?;
    let reader_schema = Schema::parse_str(reader).map_err(|e| format!("apache-avro rejects the reader: {e}"))?;
    let encoder = GenericDatumWriter::builder(&writer_schema)
        .build()
        .map_err(|e| e.to_string())?;
    let decoder = GenericDatumReader::builder(&writer_schema)
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

fn backward(reader: &str, writer: &str) -> Report {
    check(
        Format::Avro,
        Mode::Backward,
        &SchemaText::new(reader),
        &[SchemaText::new(writer)],
    )
    .expect("generated schemas are valid")
}

/// The same shape with every field alias removed.
fn without_aliases(shape: Shape) -> Shape {
    match shape {
        Shape::Record(fields) => Shape::Record(
            fields
                .into_iter()
                .map(|field| FieldShape {
                    alias: None,
                    shape: without_aliases(field.shape),
                    ..field
                })
                .collect(),
        ),
        Shape::Array(items) => Shape::Array(Box::new(without_aliases(*items))),
        Shape::Map(values) => Shape::Map(Box::new(without_aliases(*values))),
        Shape::Union(branches) => Shape::Union(branches.into_iter().map(without_aliases).collect()),
        other => other,
    }
}

/// A reader shape, a writer shape, and values of the writer.
fn case() -> impl Strategy<Value = (Shape, Shape, Vec<AvroValue>)> {
    (
        root_shape().prop_map(without_aliases),
        root_shape().prop_map(without_aliases),
    )
        .prop_flat_map(|(reader, writer)| {
            let values = proptest::collection::vec(value(&writer), 1..4);
            (Just(reader), Just(writer), values)
        })
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 2000,
        rng_seed: proptest::test_runner::RngSeed::Fixed(9),
        ..ProptestConfig::default()
    })]

    /// BACKWARD(new, old) promises that the new schema reads what the old one
    /// wrote; FORWARD is the same check with the roles swapped, and FULL is
    /// both, so this one property covers every mode.
    #[test]
    fn records_written_by_the_old_schema_decode_with_a_compatible_new_one(
        (reader, writer, values) in case()
    ) {
        let (reader_text, writer_text) = (root_text(&reader), root_text(&writer));
        if backward(&reader_text, &writer_text).is_compatible() {
            let outcome = decodes(&writer_text, &reader_text, &values);
            prop_assert!(outcome.is_ok(), "{:?}\nwriter: {writer_text}\nreader: {reader_text}", outcome);
        }
    }
}

#[test]
fn incompatible_verdicts_are_mostly_borne_out_by_data() {
    let mut runner = TestRunner::new(Config {
        rng_seed: proptest::test_runner::RngSeed::Fixed(2026),
        ..Config::default()
    });
    // kind -> (pairs, pairs where some generated record failed to decode)
    let mut rates: BTreeMap<String, (usize, usize)> = BTreeMap::new();
    let (mut compatible, mut incompatible) = (0, 0);
    for _ in 0..2000 {
        let (reader, writer, values) = case().new_tree(&mut runner).expect("a case").current();
        let (reader_text, writer_text) = (root_text(&reader), root_text(&writer));
        let report = backward(&reader_text, &writer_text);
        if report.is_compatible() {
            compatible += 1;
            continue;
        }
        incompatible += 1;
        let failed = decodes(&writer_text, &reader_text, &values).is_err();
        let mut kinds: Vec<String> = report.incompatibilities.iter().map(|i| i.kind.to_string()).collect();
        kinds.sort();
        kinds.dedup();
        for kind in kinds {
            let entry = rates.entry(kind).or_default();
            entry.0 += 1;
            entry.1 += usize::from(failed);
        }
    }
    println!("avro precision over 2000 generated pairs ({compatible} compatible, {incompatible} incompatible):");
    for (kind, (pairs, failing)) in &rates {
        println!(
            "  {kind:<36} {failing:>4} of {pairs:>4} pairs had a record that failed ({:.0} %)",
            100.0 * *failing as f64 / *pairs as f64
        );
    }
    assert!(
        compatible >= 100 && incompatible >= 100,
        "the generator yields both verdicts"
    );
}
