//! The process-wide cache of compiled Protobuf schemas: a text compiled once
//! is answered from the cache with the same result, failures are compiled
//! again, and the bound counts each entry by its size.

use std::fmt::Write as _;
use std::sync::Mutex;

use schemaops::compat::protobuf::{ProtobufSchema, cache};
use schemaops::compat::{Format, Mode, Reference, SchemaText, check};

/// The tests share the process-wide cache: one at a time.
static SERIAL: Mutex<()> = Mutex::new(());

/// A message of `fields` fields of every kind (nested messages, enums,
/// oneofs, maps, repeated, an imported well-known type), as the compat bench makes.
fn message(fields: usize) -> String {
    let mut text = String::from(
        "syntax = \"proto3\";\npackage cache.test;\nimport \"google/protobuf/timestamp.proto\";\nmessage M {\n",
    );
    for index in 0..fields {
        let number = index + 1;
        let _ = match index % 6 {
            0 => writeln!(text, "  int64 f{index} = {number};"),
            1 => writeln!(
                text,
                "  message N{index} {{ string s = 1; map<string, double> m = 2; }}\n  N{index} f{index} = {number};"
            ),
            2 => writeln!(
                text,
                "  enum E{index} {{ A{index} = 0; B{index} = 1; }}\n  E{index} f{index} = {number};"
            ),
            3 => writeln!(text, "  oneof o{index} {{ string f{index} = {number}; }}"),
            4 => writeln!(text, "  repeated string f{index} = {number};"),
            _ => writeln!(text, "  google.protobuf.Timestamp f{index} = {number};"),
        };
    }
    text.push_str("}\n");
    text
}

#[test]
fn a_text_compiled_once_is_answered_from_the_cache_with_the_same_result() {
    let _serial = SERIAL.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    let text = SchemaText::new(message(40));
    let before = cache::stats();
    let first = ProtobufSchema::parse(&text).unwrap();
    let second = ProtobufSchema::parse(&text).unwrap();
    let after = cache::stats();
    assert_eq!(after.misses - before.misses, 1);
    assert_eq!(after.hits - before.hits, 1);
    assert_eq!(first.canonical(), second.canonical());

    // The same check, once compiling and once from the cache, says the same.
    let mut candidate = text.clone();
    candidate.text = candidate.text.replace("int64 f0 = 1;", "string f0 = 1;");
    let previous = [text.clone(), text];
    let compiled = check(Format::Protobuf, Mode::FullTransitive, &candidate, &previous).unwrap();
    cache::clear();
    let again = check(Format::Protobuf, Mode::FullTransitive, &candidate, &previous).unwrap();
    let cached = check(Format::Protobuf, Mode::FullTransitive, &candidate, &previous).unwrap();
    assert!(!compiled.is_compatible());
    assert_eq!(format!("{compiled:?}"), format!("{again:?}"));
    assert_eq!(format!("{compiled:?}"), format!("{cached:?}"));
}

#[test]
fn a_changed_reference_is_compiled_again_and_a_failure_is_never_kept() {
    let _serial = SERIAL.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    let with = |field: &str| SchemaText {
        text: "syntax = \"proto3\";\nimport \"dep.proto\";\nmessage Top { Dep dep = 1; }\n".to_owned(),
        references: vec![Reference {
            name: "dep.proto".to_owned(),
            text: format!("syntax = \"proto3\";\nmessage Dep {{ {field} }}\n"),
        }],
    };
    // Were the two taken for one, the check would find nothing.
    let report = check(
        Format::Protobuf,
        Mode::Backward,
        &with("string a = 1;"),
        &[with("int32 a = 1;")],
    )
    .unwrap();
    assert!(!report.is_compatible(), "{report:?}");

    let broken = SchemaText::new("syntax = \"proto3\";\nmessage Bad { Missing m = 1; }\n");
    let before = cache::stats();
    let first = ProtobufSchema::parse(&broken).unwrap_err();
    let second = ProtobufSchema::parse(&broken).unwrap_err();
    assert_eq!(cache::stats().misses - before.misses, 2);
    assert_eq!(first, second);
}

#[test]
fn the_bound_counts_each_entry_by_its_size() {
    let _serial = SERIAL.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    let mut held = Vec::new();
    for fields in [200, 2_000] {
        let text = SchemaText::new(message(fields));
        cache::clear();
        ProtobufSchema::parse(&text).unwrap();
        let stats = cache::stats();
        assert_eq!(stats.entries, 1);
        assert!(
            stats.bytes > text.text.len(),
            "{fields} fields: {} bytes counted",
            stats.bytes
        );
        held.push(stats.bytes);
    }
    assert!(held[1] > 5 * held[0], "{held:?}");
    assert!(held[1] <= cache::MAX_CACHED_BYTES / 8, "{held:?}");
}
