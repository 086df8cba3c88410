//! Named Avro scenarios: the seed stories (the Karapace compatibility table
//! and the RSVP example, issue 2) and the resolution rules one by one.

use schemaops::compat::{Direction, Format, Mode, Report, SchemaText, check};

fn record(fields: &str) -> String {
    format!(r#"{{"type":"record","name":"Rsvp","namespace":"example","fields":[{fields}]}}"#)
}

fn run(mode: Mode, previous: &[&str], candidate: &str) -> Report {
    let previous: Vec<SchemaText> = previous.iter().map(|text| SchemaText::new(*text)).collect();
    check(Format::Avro, mode, &SchemaText::new(candidate), &previous).expect("both schemas are valid")
}

fn compatible(mode: Mode, previous: &str, candidate: &str) -> bool {
    run(mode, &[previous], candidate).is_compatible()
}

/// (kind, path, version) of each incompatibility, in report order.
fn findings(report: &Report) -> Vec<(String, String, usize)> {
    report
        .incompatibilities
        .iter()
        .map(|i| (i.kind.to_string(), i.path.to_string(), i.version))
        .collect()
}

fn owned(items: &[(&str, &str, usize)]) -> Vec<(String, String, usize)> {
    items
        .iter()
        .map(|(k, p, v)| (k.to_string(), p.to_string(), *v))
        .collect()
}

const BASE: &str = r#"{"name":"rsvp_id","type":"long"},{"name":"member_id","type":"long"}"#;

#[test]
fn adding_a_field_without_a_default_is_not_backward_compatible() {
    let candidate = record(&format!(r#"{BASE},{{"name":"response","type":"string"}}"#));
    let report = run(Mode::Backward, &[&record(BASE)], &candidate);
    assert_eq!(
        findings(&report),
        owned(&[("READER_FIELD_MISSING_DEFAULT_VALUE", "/fields/2", 1)])
    );
    let message = &report.incompatibilities[0].message;
    assert!(
        message.contains("`response`") && message.contains("without a default"),
        "{message}"
    );
    assert!(
        message.contains("cannot read records written with version 1"),
        "{message}"
    );
}

#[test]
fn adding_a_field_with_a_default_is_backward_compatible() {
    let candidate = record(&format!(
        r#"{BASE},{{"name":"response","type":"string","default":"No response"}}"#
    ));
    assert!(compatible(Mode::Backward, &record(BASE), &candidate));
}

#[test]
fn adding_an_optional_field_with_a_null_default_is_backward_and_forward_compatible() {
    let candidate = record(&format!(
        r#"{BASE},{{"name":"note","type":["null","string"],"default":null}}"#
    ));
    assert!(compatible(Mode::Full, &record(BASE), &candidate));
}

#[test]
fn deleting_a_field_is_backward_compatible() {
    let candidate = record(r#"{"name":"rsvp_id","type":"long"}"#);
    assert!(compatible(Mode::Backward, &record(BASE), &candidate));
}

#[test]
fn removing_member_id_is_backward_but_not_forward_compatible() {
    let candidate = record(r#"{"name":"rsvp_id","type":"long"}"#);
    assert!(compatible(Mode::Backward, &record(BASE), &candidate));
    let report = run(Mode::Forward, &[&record(BASE)], &candidate);
    assert_eq!(
        findings(&report),
        owned(&[("READER_FIELD_MISSING_DEFAULT_VALUE", "/fields/1", 1)])
    );
    let message = &report.incompatibilities[0].message;
    assert!(
        message.contains("`member_id`") && message.contains("removed"),
        "{message}"
    );
    assert!(message.contains("consumers still using version 1"), "{message}");
}

#[test]
fn adding_a_union_branch_is_backward_compatible_and_removing_one_is_not() {
    let two = record(r#"{"name":"value","type":["null","string"]}"#);
    let three = record(r#"{"name":"value","type":["null","string","long"]}"#);
    assert!(compatible(Mode::Backward, &two, &three));
    let report = run(Mode::Backward, &[&three], &two);
    assert_eq!(
        findings(&report),
        owned(&[("MISSING_UNION_BRANCH", "/fields/0/type/2", 1)])
    );
}

#[test]
fn renaming_a_field_without_an_alias_is_not_compatible_and_with_one_it_is() {
    let previous = record(r#"{"name":"member","type":"long"}"#);
    let renamed = record(r#"{"name":"member_id","type":"long"}"#);
    let aliased = record(r#"{"name":"member_id","type":"long","aliases":["member"]}"#);
    assert!(!compatible(Mode::Backward, &previous, &renamed));
    assert!(compatible(Mode::Backward, &previous, &aliased));
}

#[test]
fn retyping_a_field_is_not_compatible() {
    let previous = record(r#"{"name":"count","type":"long"}"#);
    let candidate = record(r#"{"name":"count","type":"boolean"}"#);
    let report = run(Mode::Backward, &[&previous], &candidate);
    assert_eq!(findings(&report), owned(&[("TYPE_MISMATCH", "/fields/0/type", 1)]));
    let message = &report.incompatibilities[0].message;
    assert!(message.contains("from `long` to `boolean`"), "{message}");
}

#[test]
fn primitive_promotions_follow_avro_and_only_widen() {
    let widen = [
        ("int", "long"),
        ("int", "float"),
        ("int", "double"),
        ("long", "float"),
        ("long", "double"),
        ("float", "double"),
        ("string", "bytes"),
        ("bytes", "string"),
    ];
    for (old, new) in widen {
        let previous = record(&format!(r#"{{"name":"x","type":"{old}"}}"#));
        let candidate = record(&format!(r#"{{"name":"x","type":"{new}"}}"#));
        assert!(
            compatible(Mode::Backward, &previous, &candidate),
            "{old} -> {new} reads old data"
        );
        let back = old == "string" || old == "bytes";
        assert_eq!(
            compatible(Mode::Forward, &previous, &candidate),
            back,
            "{new} readable as {old}"
        );
    }
}

#[test]
fn every_problem_is_reported_not_only_the_first() {
    let previous = record(r#"{"name":"a","type":"int"},{"name":"b","type":"string"},{"name":"c","type":"long"}"#);
    let candidate = record(
        r#"{"name":"a","type":"boolean"},{"name":"b","type":"int"},{"name":"c","type":"long"},{"name":"d","type":"int"}"#,
    );
    let report = run(Mode::Backward, &[&previous], &candidate);
    assert_eq!(
        findings(&report),
        owned(&[
            ("TYPE_MISMATCH", "/fields/0/type", 1),
            ("TYPE_MISMATCH", "/fields/1/type", 1),
            ("READER_FIELD_MISSING_DEFAULT_VALUE", "/fields/3", 1),
        ])
    );
}

#[test]
fn a_transitive_mode_reports_every_version_it_breaks() {
    let v1 = record(r#"{"name":"a","type":"int"}"#);
    let v2 = record(r#"{"name":"a","type":"int"},{"name":"b","type":"string","default":""}"#);
    let v3 = record(r#"{"name":"a","type":"int"},{"name":"b","type":"string","default":""}"#);
    let candidate = record(r#"{"name":"a","type":"int"},{"name":"b","type":"string"}"#);
    let latest_only = run(Mode::Backward, &[&v1, &v2, &v3], &candidate);
    assert!(latest_only.is_compatible(), "v3 has b, so the latest check passes");
    assert_eq!(latest_only.checked_versions, vec![3]);
    let transitive = run(Mode::BackwardTransitive, &[&v1, &v2, &v3], &candidate);
    assert_eq!(transitive.checked_versions, vec![3, 2, 1]);
    assert_eq!(
        findings(&transitive),
        owned(&[("READER_FIELD_MISSING_DEFAULT_VALUE", "/fields/1", 1)])
    );
}

#[test]
fn full_reports_both_directions() {
    let previous = record(r#"{"name":"a","type":"int"}"#);
    let candidate = record(r#"{"name":"b","type":"int"}"#);
    let report = run(Mode::Full, &[&previous], &candidate);
    let messages: Vec<&str> = report.incompatibilities.iter().map(|i| i.message.as_str()).collect();
    assert_eq!(messages.len(), 2, "{messages:#?}");
    assert!(
        messages.iter().any(|m| m.contains("`b`") && m.contains("added")),
        "{messages:#?}"
    );
    assert!(
        messages.iter().any(|m| m.contains("`a`") && m.contains("removed")),
        "{messages:#?}"
    );
}

#[test]
fn a_removed_enum_symbol_breaks_unless_the_reader_has_a_default_symbol() {
    let enumeration = |symbols: &str, default: &str| {
        record(&format!(
            r#"{{"name":"answer","type":{{"type":"enum","name":"Answer","symbols":[{symbols}]{default}}}}}"#
        ))
    };
    let previous = enumeration(r#""YES","NO","MAYBE""#, "");
    let report = run(Mode::Backward, &[&previous], &enumeration(r#""YES","NO""#, ""));
    assert_eq!(
        findings(&report),
        owned(&[("MISSING_ENUM_SYMBOLS", "/fields/0/type/symbols", 1)])
    );
    assert!(report.incompatibilities[0].message.contains("`MAYBE`"));
    assert!(compatible(
        Mode::Backward,
        &previous,
        &enumeration(r#""YES","NO""#, r#","default":"NO""#)
    ));
}

#[test]
fn appending_enum_symbols_reads_old_data_and_reordering_them_is_not_a_loss() {
    let enumeration = |symbols: &str| {
        record(&format!(
            r#"{{"name":"answer","type":{{"type":"enum","name":"Answer","symbols":[{symbols}]}}}}"#
        ))
    };
    let previous = enumeration(r#""YES","NO""#);
    assert!(compatible(
        Mode::Backward,
        &previous,
        &enumeration(r#""YES","NO","MAYBE""#)
    ));
    assert!(compatible(
        Mode::Backward,
        &previous,
        &enumeration(r#""NO","MAYBE","YES""#)
    ));
    // In a union the enum is only probed, through the same comparison.
    let in_union = |symbols: &str| {
        record(&format!(
            r#"{{"name":"answer","type":["null",{{"type":"enum","name":"Answer","symbols":[{symbols}]}}]}}"#
        ))
    };
    let previous = in_union(r#""YES","NO","MAYBE""#);
    assert!(compatible(
        Mode::Backward,
        &previous,
        &in_union(r#""YES","NO","MAYBE","LATER""#)
    ));
    assert!(!compatible(Mode::Backward, &previous, &in_union(r#""YES","NO""#)));
    assert!(!compatible(Mode::Backward, &previous, &in_union(r#""MAYBE","NO""#)));
}

#[test]
fn renaming_a_record_needs_an_alias_of_the_old_full_name() {
    let previous = r#"{"type":"record","name":"User","namespace":"ex","fields":[{"name":"id","type":"long"}]}"#;
    let renamed = r#"{"type":"record","name":"Person","namespace":"ex","fields":[{"name":"id","type":"long"}]}"#;
    let aliased = r#"{"type":"record","name":"Person","namespace":"ex","aliases":["User"],"fields":[{"name":"id","type":"long"}]}"#;
    let report = run(Mode::Backward, &[previous], renamed);
    assert_eq!(findings(&report), owned(&[("NAME_MISMATCH", "/name", 1)]));
    assert!(
        report.incompatibilities[0]
            .message
            .contains(r#""aliases": ["ex.User"]"#)
    );
    assert!(compatible(Mode::Backward, previous, aliased));
}

#[test]
fn moving_a_record_to_another_namespace_is_compatible_as_in_java() {
    let previous = r#"{"type":"record","name":"User","namespace":"a","fields":[{"name":"id","type":"long"}]}"#;
    let candidate = r#"{"type":"record","name":"User","namespace":"b","fields":[{"name":"id","type":"long"}]}"#;
    assert!(compatible(Mode::Full, previous, candidate));
}

#[test]
fn fixed_size_changes_break_both_ways() {
    let fixed = |size: u32| {
        record(&format!(
            r#"{{"name":"h","type":{{"type":"fixed","name":"Hash","size":{size}}}}}"#
        ))
    };
    let report = run(Mode::Full, &[&fixed(16)], &fixed(32));
    // Listed once, with both directions and both kinds of consumer named.
    assert_eq!(
        findings(&report),
        owned(&[("FIXED_SIZE_MISMATCH", "/fields/0/type/size", 1)]),
        "each direction breaks at the same place"
    );
    let only = &report.incompatibilities[0];
    assert_eq!(only.directions, [Direction::Backward, Direction::Forward]);
    assert!(only.message.contains("from 16 to 32 bytes"), "{}", only.message);
    assert!(
        only.message.contains("consumers using the new schema")
            && only.message.contains("consumers still using version 1"),
        "the message names both readers: {}",
        only.message
    );
}

#[test]
fn arrays_and_maps_are_checked_element_by_element() {
    let previous = record(r#"{"name":"tags","type":{"type":"map","values":{"type":"array","items":"int"}}}"#);
    let widened = record(r#"{"name":"tags","type":{"type":"map","values":{"type":"array","items":"long"}}}"#);
    let broken = record(r#"{"name":"tags","type":{"type":"map","values":{"type":"array","items":"string"}}}"#);
    assert!(compatible(Mode::Backward, &previous, &widened));
    let report = run(Mode::Backward, &[&previous], &broken);
    assert_eq!(
        findings(&report),
        owned(&[("TYPE_MISMATCH", "/fields/0/type/values/items", 1)])
    );
}

#[test]
fn recursive_records_are_checked_and_terminate() {
    let list = |extra: &str| {
        format!(
            r#"{{"type":"record","name":"Node","fields":[{{"name":"value","type":"int"}},
               {{"name":"next","type":["null","Node"],"default":null}}{extra}]}}"#
        )
    };
    let previous = list("");
    assert!(compatible(
        Mode::FullTransitive,
        &previous,
        &list(r#",{"name":"label","type":"string","default":""}"#)
    ));
    let report = run(
        Mode::Backward,
        &[&previous],
        &list(r#",{"name":"label","type":"string"}"#),
    );
    assert_eq!(
        findings(&report),
        owned(&[("READER_FIELD_MISSING_DEFAULT_VALUE", "/fields/2", 1)])
    );
}

#[test]
fn a_missing_union_branch_explains_why_the_closest_branch_fails() {
    let previous = record(
        r#"{"name":"v","type":["null",{"type":"record","name":"Venue","fields":[{"name":"city","type":"string"}]}]}"#,
    );
    let candidate = record(
        r#"{"name":"v","type":["null",{"type":"record","name":"Venue","fields":[{"name":"city","type":"string"},{"name":"zip","type":"string"}]}]}"#,
    );
    let report = run(Mode::Backward, &[&previous], &candidate);
    assert_eq!(
        findings(&report),
        owned(&[("MISSING_UNION_BRANCH", "/fields/0/type/1", 1)])
    );
    let message = &report.incompatibilities[0].message;
    assert!(
        message.contains("in field `v` of record `example.Rsvp` (at /fields/0/type/1)")
            && message.contains(
                "field `zip` of record `example.Venue` (at /fields/0/type/1/fields/1) was added without a default"
            ),
        "{message}"
    );
}

#[test]
fn logical_types_follow_their_underlying_type_as_in_java() {
    let millis = record(r#"{"name":"at","type":{"type":"long","logicalType":"timestamp-millis"}}"#);
    let micros = record(r#"{"name":"at","type":{"type":"long","logicalType":"timestamp-micros"}}"#);
    let date = record(r#"{"name":"at","type":{"type":"int","logicalType":"date"}}"#);
    assert!(compatible(Mode::Full, &millis, &micros));
    assert!(compatible(Mode::Backward, &date, &millis), "int -> long is a promotion");
    assert!(!compatible(Mode::Forward, &date, &millis));
}

#[test]
fn mode_none_checks_nothing_but_still_validates_the_candidate() {
    let previous = record(r#"{"name":"a","type":"int"}"#);
    let report = run(Mode::None, &[&previous], &record(r#"{"name":"a","type":"string"}"#));
    assert!(report.is_compatible());
    assert!(report.checked_versions.is_empty());
    let invalid = SchemaText::new(record(r#"{"name":"a","type":"integer"}"#));
    assert!(check(Format::Avro, Mode::None, &invalid, &[SchemaText::new(previous)]).is_err());
}

#[test]
fn the_first_version_of_a_subject_is_always_compatible() {
    let report = run(Mode::FullTransitive, &[], &record(BASE));
    assert!(report.is_compatible());
    assert!(report.checked_versions.is_empty());
}

#[test]
fn named_types_from_references_resolve_by_full_name() {
    let address =
        r#"{"type":"record","name":"Address","namespace":"shared","fields":[{"name":"city","type":"string"}]}"#;
    let with_reference = |text: &str| SchemaText {
        text: text.to_owned(),
        references: vec![schemaops::compat::Reference {
            name: "shared-address".to_owned(),
            text: address.to_owned(),
        }],
    };
    let user = r#"{"type":"record","name":"User","fields":[{"name":"home","type":"shared.Address"}]}"#;
    let report = check(Format::Avro, Mode::Full, &with_reference(user), &[with_reference(user)]).unwrap();
    assert!(report.is_compatible());
    assert!(
        check(Format::Avro, Mode::Full, &SchemaText::new(user), &[]).is_err(),
        "without the reference"
    );
}

#[test]
fn a_field_matches_by_name_before_its_aliases() {
    // Found by the self-compatibility property: `a` aliased to its sibling `b`
    // once made a schema incompatible with itself.
    let schema = record(r#"{"name":"a","type":"null","aliases":["b"]},{"name":"b","type":"int"}"#);
    assert!(compatible(Mode::FullTransitive, &schema, &schema));
}

#[test]
fn a_field_whose_aliases_match_two_writer_fields_is_ambiguous() {
    let previous = record(r#"{"name":"x","type":"int"},{"name":"y","type":"int"}"#);
    let candidate = record(r#"{"name":"z","type":"int","aliases":["x","y"]}"#);
    let report = run(Mode::Backward, &[&previous], &candidate);
    assert_eq!(findings(&report), owned(&[("NAME_MISMATCH", "/fields/0", 1)]));
    assert!(
        report.incompatibilities[0].message.contains("`x`, `y`"),
        "{}",
        report.incompatibilities[0].message
    );
}
